"""Mode 4, Chat: talk to any peer (hosted servers too); each reply's task state updates live and
an input-required question is answered by the next message, on the same task."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Header, Input, Select, Static

from toolnexus.errors import PeerError
from toolnexus.a2a.model import Task, TaskState
from toolnexus.monitor import STATE_STYLE

from ..widgets import ModeBar
from .export import Prompt
from ..widgets.safe import CELL_CAP, SafeStatic, safe
from .base import ModeScreen


@dataclass
class Conversation:
    """One chat: the peer, the context, the task waiting for an answer, and what was said."""

    peer: str = ""
    context_id: str | None = None
    waiting_task: str | None = None
    lines: list[dict[str, Any]] = field(default_factory=list)
    lost: dict[str, Any] | None = None  # the exchange a lost connection cut: what to retry (ctrl+r)


class ChatScreen(ModeScreen):
    BINDINGS = [
        Binding("ctrl+n", "new_conversation", "New conversation", id="chat-new"),
        Binding("escape", "leave_input", "Keys", show=False, id="chat-keys"),
        Binding("i", "focus_input", "Type", id="chat-type"),
        Binding("ctrl+r", "retry", "Retry", id="chat-retry", priority=True),
        Binding("ctrl+x", "cancel_task", "Cancel task", id="chat-cancel", priority=True),
        Binding("ctrl+g", "attach", "Attach to a task", id="chat-attach", priority=True),
    ]


    def compose(self) -> ComposeResult:
        yield Header()
        yield ModeBar("chat")
        with Horizontal(id="chat-top"):
            yield Select([], prompt="peer", id="chat-peer", compact=True)
            yield Select([], prompt="any skill", id="chat-skill", compact=True)
            yield SafeStatic("", id="chat-context")
        yield VerticalScroll(SafeStatic(id="chat-log"), id="chat-scroll")
        yield Input(placeholder="message (enter sends; an open question is answered on its task)", id="chat-input")
        yield Footer()

    def on_mount(self) -> None:
        self.tn.peers_changed.subscribe(self, lambda _: self._peers())
        self._peers()
        self._draw()
        self.query_one("#chat-input", Input).focus()

    def on_screen_resume(self) -> None:
        self._peers()
        self.query_one("#chat-input", Input).focus()  # every visit: typed text goes to the message

    @property
    def chat(self) -> Conversation:
        return self.tn.conversation

    def _peers(self) -> None:
        select = self.query_one("#chat-peer", Select)
        # reachable peers, and the one of this conversation whatever its state (its transcript stays)
        options = [(safe(_label(peer, url), CELL_CAP), url) for url, peer in self.tn.peer_book.peers.items()
                   if peer.state == "reachable" or url == self.chat.peer]
        if [o[1] for o in options] != [o[1] for o in getattr(select, "_options", [])[1:]]:
            select.set_options(options)
        wanted = self.tn.chat_peer or self.chat.peer
        if wanted and any(url == wanted for _, url in options) and select.value != wanted:
            select.value = wanted
        self.tn.chat_peer = None

    @on(Select.Changed, "#chat-peer")
    def _peer_chosen(self, event: Select.Changed) -> None:
        if not isinstance(event.value, str):  # the options changed under it: keep the conversation
            return
        url = event.value
        if url != self.chat.peer:  # one conversation per peer: switching back finds it as it was
            kept = self.tn.conversations
            if self.chat.peer:
                kept[self.chat.peer] = self.chat
            self.tn.conversation = kept.get(url) or Conversation(peer=url)
            self._draw()
        peer = self.tn.peer_book.peers.get(url)
        skills = []
        if peer is not None and peer.client is not None and peer.client.card is not None:
            skills = [(safe(str(s.get("name") or s.get("id")), CELL_CAP), str(s.get("id")))
                      for s in peer.client.card.skills]
        self.query_one("#chat-skill", Select).set_options(skills)

    def action_attach(self) -> None:
        """Follow any task of this peer by its id (one started elsewhere: a script, another client)."""
        if not self.chat.peer:
            self.notify("pick a peer first", severity="warning")
            return

        def chosen(task_id: str | None) -> None:
            if not task_id:
                return
            self.chat.lines.append({"role": "you", "text": f"(attached to task {task_id})"})
            reply: dict[str, Any] = {"role": "agent", "text": "…", "state": None}
            self.chat.lines.append(reply)
            self._draw()
            self.exchange(self.chat, "", None, reply, follow=task_id)

        self.app.push_screen(Prompt("Task id to follow on this peer"), chosen)

    def action_cancel_task(self) -> None:
        """Cancel the task of the last reply while it runs (or waits for an answer)."""
        reply = next((line for line in reversed(self.chat.lines) if line["role"] == "agent"), None)
        state = reply.get("state") if reply else None
        if reply is None or not reply.get("task") or (isinstance(state, TaskState) and state.terminal):
            self.notify("no running task to cancel", severity="information")
            return
        self._cancel(reply["task"])

    @work(group="chat-cancel")
    async def _cancel(self, task_id: str) -> None:
        peer = self.tn.peer_book.peers.get(self.chat.peer)
        if peer is None or peer.client is None:
            return
        try:
            task = await peer.client.cancel(task_id)
            self.notify(f"task {task_id[:8]} {task.state.value}")
        except Exception as exc:
            self.notify(f"cannot cancel: {exc}", severity="warning")
        finally:
            await peer.client.release()
        if self.chat.waiting_task == task_id:
            self.chat.waiting_task = None

    def action_retry(self) -> None:
        """After a lost connection: follow the cut task again, or send the message again."""
        lost = self.chat.lost
        if lost is None:
            self.notify("nothing to retry: no exchange was cut", severity="information")
            return
        reply = lost["reply"]
        reply.update(text="…", state=None)
        self._draw()
        self.exchange(self.chat, lost["text"], lost["skill"], reply, follow=lost["task"])

    def action_new_conversation(self) -> None:
        self.tn.conversations.pop(self.chat.peer, None)
        self.tn.conversation = Conversation(peer=self.chat.peer)
        self._draw()
        self.notify("new conversation")

    def action_focus_input(self) -> None:
        self.query_one("#chat-input", Input).focus()

    def action_leave_input(self) -> None:
        self.query_one("#chat-scroll", VerticalScroll).focus()

    @on(Input.Submitted, "#chat-input")
    def _submit(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        if not self.chat.peer:
            self.notify("pick a peer first (or add one in Peers, 3)", severity="warning")
            return
        event.input.value = ""
        self.chat.lines.append({"role": "you", "text": text})
        reply: dict[str, Any] = {"role": "agent", "text": "…", "state": None}
        self.chat.lines.append(reply)
        self._draw()
        skill = self.query_one("#chat-skill", Select).value
        self.exchange(self.chat, text, skill if isinstance(skill, str) else None, reply)

    @work(group="chat")
    async def exchange(self, chat: Conversation, text: str, skill: str | None, reply: dict[str, Any],
                       follow: str | None = None) -> None:
        """Send ``text`` (or, with ``follow``, follow that task again) and show the reply live."""
        peer = self.tn.peer_book.peers.get(chat.peer)
        if peer is None or peer.client is None:
            reply.update(text="the peer is not connected", state="failed")
            self._draw()
            return
        task: Task | None = None
        try:
            if follow is not None:
                task = await peer.client.get(follow)
            else:
                task = await peer.client.send(text, skill=skill, context_id=chat.context_id,
                                              task_id=chat.waiting_task, blocking=peer.blocking)
            self._show(reply, task)
            if not (task.state.terminal or task.state.interrupted):
                async for ev in peer.client.watch(task.id, poll_every=0.2, max_interval=1.0):
                    task = ev.task
                    self._show(reply, task)
        except PeerError as exc:  # the connection, not the peer's answer: say so, and look again
            chat.lost = {"text": text, "skill": skill, "task": task.id if task else follow, "reply": reply}
            reply.update(text=f"{exc}  (ctrl+r: {'follow the task again' if chat.lost['task'] else 'send again'})",
                         state="connection lost")
            self._draw()
            self.tn.connect_peer(peer)
            return
        except Exception as exc:
            reply.update(text=str(exc), state="failed")
            self._draw()
            return
        finally:
            await peer.client.release()
        chat.lost = None
        chat.context_id = task.context_id or chat.context_id
        chat.waiting_task = task.id if task.state.interrupted else None
        self._draw()

    def _show(self, reply: dict[str, Any], task: Task) -> None:
        if task.state.value == "completed":
            text = task.reply
        elif task.status.message is not None:
            text = task.status.message.text
        else:
            text = "…"
        reply.update(text=text, state=task.state, task=task.id)
        self._draw()

    def _draw(self) -> None:
        log = Text()
        for line in self.chat.lines:
            if line["role"] == "you":
                log.append("you  ", "bold cyan")
            else:
                log.append("agent", "bold green")
                state = line.get("state")
                if isinstance(state, TaskState):
                    symbol, style = STATE_STYLE[state]
                    log.append(f" {symbol} {state.value}", style)
                elif state == "connection lost":
                    log.append(" ⚡ connection lost", "yellow")
                elif state:
                    log.append(f" ✘ {state}", "red")
                log.append(" ")
            log.append(f" {line['text']}\n")
        self.query_one("#chat-log", Static).update(log or "Say something to the peer.")
        ctx = self.chat.context_id
        waiting = "   (answering its question)" if self.chat.waiting_task else ""
        self.query_one("#chat-context", Static).update(f"context {ctx}{waiting}" if ctx else "new conversation")
        self.query_one("#chat-scroll", VerticalScroll).scroll_end(animate=False)


def _label(peer: Any, url: str) -> str:
    """A picker entry that tells peers of one name apart: name, URL, dialect in use."""
    dialect = peer.client.dialect.value if peer.client is not None and peer.client.dialect else "?"
    return f"{peer.name}{' (hosted)' if peer.hosted else ''}  {url.removeprefix('http://')}  [{dialect}]"
