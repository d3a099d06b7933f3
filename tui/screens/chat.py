"""Mode 4, Chat: talk to any peer (hosted servers too); each reply's task state updates live and
an input-required question is answered by the next message, on the same task."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import Footer, Header, Input, Select, Static

from toolnexus.errors import PeerError
from toolnexus.monitor import STATE_STYLE
from toolnexus.protocol.files import MAX_FILE, safe_name
from toolnexus.protocol.model import Message, Part, Task, TaskState

from ..peers import spoken
from ..widgets import ModeBar
from ..widgets.safe import CELL_CAP, SafeStatic, safe
from .base import ModeScreen
from .export import Prompt, default_export_dir


@dataclass
class Conversation:
    """One chat: the peer, the context, the task waiting for an answer, and what was said."""

    peer: str = ""
    context_id: str | None = None
    waiting_task: str | None = None
    lines: list[dict[str, Any]] = field(default_factory=list)
    lost: dict[str, Any] | None = None  # the exchange a lost connection cut: what to retry (ctrl+r)
    attachments: list[Part] = field(default_factory=list)  # file and data parts for the next message
    push: bool = False  # its tasks notify the app's webhook (ctrl+y)


class ChatScreen(ModeScreen):
    BINDINGS = [
        Binding("ctrl+n", "new_conversation", "New chat", id="chat-new"),
        Binding("escape", "leave_input", "Keys", show=False, id="chat-keys"),
        Binding("i", "focus_input", "Type", id="chat-type"),
        Binding("ctrl+r", "retry", "Retry", id="chat-retry", priority=True),
        Binding("ctrl+x", "cancel_task", "Cancel", id="chat-cancel", priority=True),
        Binding("ctrl+g", "attach", "Follow task", id="chat-attach", priority=True),
        Binding("ctrl+o", "attach_file", "+File", id="chat-file", priority=True),
        Binding("ctrl+t", "attach_data", "+JSON", id="chat-data", priority=True),
        Binding("ctrl+s", "save_artifacts", "Save", id="chat-save", priority=True),
        Binding("ctrl+y", "push", "Push", id="chat-push", priority=True),
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
        self.tn.traffic_changed.subscribe(self, lambda _: self._pushed())
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

    def action_attach_file(self) -> None:
        """Add a local file to the next message (sent inline, base64; at most 10 MiB)."""

        def chosen(path: str | None) -> None:
            if not path:
                return
            try:
                part = Part.of_file(path)
            except ValueError as exc:
                self.notify(str(exc), severity="error")
                return
            self.chat.attachments.append(part)
            self._draw()

        self.app.push_screen(Prompt(f"File to send with the next message (at most {MAX_FILE // 2**20} MiB)"), chosen)

    def action_attach_data(self) -> None:
        """Add structured data (one JSON value) to the next message as a data part."""

        def chosen(text: str | None) -> None:
            if not text:
                return
            try:
                value = json.loads(text)
            except ValueError as exc:
                self.notify(f"not JSON: {exc}", severity="error")
                return
            self.chat.attachments.append(Part.of_data(value))
            self._draw()

        self.app.push_screen(Prompt('JSON to send as a data part with the next message, e.g. {"city": "Oslo"}'), chosen)

    def action_save_artifacts(self) -> None:
        """Write the artifacts of the last reply's task to a folder (asked; a default offered)."""
        reply = next((line for line in reversed(self.chat.lines) if line.get("artifacts")), None)
        if reply is None:
            self.notify("no reply with artifacts to save yet", severity="information")
            return
        task: Task = reply["task_obj"]
        default = default_export_dir().parent / "artifacts" / safe_name(task.id)

        def chosen(text: str | None) -> None:
            if not text:
                return
            try:
                saved = task.save_artifacts(text)
            except OSError as exc:
                self.notify(f"cannot save into {text}: {exc.strerror or exc}", severity="error")
                return
            self.notify(f"saved {saved.summary()}", severity="warning" if saved.skipped else "information")

        self.app.push_screen(Prompt("Save the artifacts of the last reply into the folder", str(default)), chosen)

    def action_push(self) -> None:
        """Push notifications on or off for this conversation: the peer POSTs every change of its
        tasks (the running one now, later ones from their first state) to the app's webhook on
        127.0.0.1; each notification shows under its reply and on the Wire."""
        if not self.chat.peer:
            self.notify("pick a peer first", severity="warning")
            return
        if self.chat.push:
            self.chat.push = False
            self.notify("push notifications off for the next messages (a peer keeps what it was given)")
            self._draw()
            return
        reply = next((line for line in reversed(self.chat.lines) if line["role"] == "agent"), None)
        state = reply.get("state") if reply else None
        running = reply.get("task") if reply and isinstance(state, TaskState) and not state.terminal else None
        self._push_on(running)

    @work(group="chat-push")
    async def _push_on(self, task_id: str | None) -> None:
        peer = self.tn.peer_book.peers.get(self.chat.peer)
        if peer is None or peer.client is None:
            self.notify("the peer is not connected", severity="warning")
            return
        if peer.client.card is None or not peer.client.card.push_notifications:
            self.notify("this peer's card does not offer push notifications (capabilities.pushNotifications)",
                        severity="warning")
            return
        webhook = await self.tn.ensure_webhook()
        if task_id is not None:
            try:
                await peer.client.set_push(task_id, webhook.target(task_id))
            except Exception as exc:
                self.notify(f"the peer refused the webhook: {exc}", severity="error")
                return
            finally:
                await peer.client.release()
        self.chat.push = True
        self.notify(f"push notifications on: the peer notifies {webhook.url}")
        self._draw()

    def _pushed(self) -> None:
        """Redraw when a notification about one of this conversation's tasks arrived."""
        webhook = self.tn.webhook
        if webhook is None or not webhook.notifications:
            return
        latest = webhook.notifications[-1]
        if latest is not self._last_push and any(line.get("task") == latest.task_id for line in self.chat.lines):
            self._last_push = latest
            self._draw()

    _last_push: Any = None

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
        if not text and not self.chat.attachments:
            return
        if not self.chat.peer:
            self.notify("pick a peer first (or add one in Peers, 3)", severity="warning")
            return
        event.input.value = ""
        parts = ([Part.of_text(text)] if text else []) + self.chat.attachments
        self.chat.attachments = []
        self.chat.lines.append({"role": "you", "text": text, "parts": parts})
        reply: dict[str, Any] = {"role": "agent", "text": "…", "state": None}
        self.chat.lines.append(reply)
        self._draw()
        skill = self.query_one("#chat-skill", Select).value
        self.exchange(self.chat, Message("user", parts), skill if isinstance(skill, str) else None, reply)

    @work(group="chat")
    async def exchange(self, chat: Conversation, text: str | Message, skill: str | None, reply: dict[str, Any],
                       follow: str | None = None) -> None:
        """Send ``text`` (or, with ``follow``, follow that task again) and show the reply live."""
        if isinstance(text, Message):  # a retry sends the same parts again, under a new message id
            text = Message("user", list(text.parts))
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
                push = (await self.tn.ensure_webhook()).target() if chat.push else None
                task = await peer.client.send(text, skill=skill, context_id=chat.context_id,
                                              task_id=chat.waiting_task, blocking=peer.blocking, push=push)
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
        reply.update(text=text, state=task.state, task=task.id, task_obj=task,
                     artifacts=any(a.parts for a in task.artifacts))
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
            for part in line.get("parts") or []:  # what was sent besides the text
                if part.kind != "text":
                    log.append(f"       + {_describe(part)}\n", "grey62")
            pushes = self.tn.webhook.received(line["task"]) if self.tn.webhook and line.get("task") else []
            if pushes:
                seen = [n.state.value for n in pushes if n.state is not None]
                log.append(f"       🔔 {len(pushes)} push notification(s): {' → '.join(seen[-6:])}\n", "yellow")
            task = line.get("task_obj")
            if task is not None:  # what came back besides the text
                others = [p for a in task.artifacts for p in a.parts if p.kind != "text"]
                for part in others[:20]:
                    log.append(f"       + {_describe(part)}\n", "magenta")
                if others:
                    log.append(f"       ({len(others)} file/data part(s); ctrl+s saves the artifacts)\n", "grey62")
        if self.chat.attachments:
            log.append("next message carries: " + ", ".join(_describe(p) for p in self.chat.attachments) + "\n",
                       "bold magenta")
        self.query_one("#chat-log", Static).update(log or "Say something to the peer.")
        ctx = self.chat.context_id
        waiting = "   (answering its question)" if self.chat.waiting_task else ""
        push = "🔔 push on   " if self.chat.push else ""  # first: the context id is what gets cut
        self.query_one("#chat-context", Static).update(push + (f"context {ctx}{waiting}" if ctx else "new conversation"))
        self.query_one("#chat-scroll", VerticalScroll).scroll_end(animate=False)


def _describe(part: Part) -> str:
    """A file or data part in one short line: name, media type and size, or the data's JSON."""
    if part.kind == "data":
        text = json.dumps(part.data, ensure_ascii=False)
        return "data " + (text if len(text) <= 80 else text[:79] + "…")
    if part.raw is not None:
        size = len(part.raw) * 3 // 4 - part.raw[-2:].count("=")
        return f"file {part.filename or '(no name)'} ({part.media_type or '?'}, {_size(size)})"
    return f"file {part.filename or '(no name)'} linked at {part.url}"


def _size(n: int) -> str:
    return f"{n} B" if n < 1024 else f"{n / 1024:.1f} KiB" if n < 2**20 else f"{n / 2**20:.1f} MiB"


def _label(peer: Any, url: str) -> str:
    """A picker entry that tells peers of one name apart: name, URL, dialect in use."""
    dialect = spoken(peer.client).replace("—", "?")
    return f"{peer.name}{' (hosted)' if peer.hosted else ''}  {url.removeprefix('http://')}  [{dialect}]"
