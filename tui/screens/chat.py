"""Mode 4, Chat: talk to any peer (hosted servers too); each reply's task state updates live. An
input-required question shows above the message box with the choice it leaves: the next message
answers it, on the same task, or (ctrl+f) starts a new task while the question stays open."""

from __future__ import annotations

import json
import time
from typing import Any
from urllib.parse import urlsplit

from rich.cells import cell_len
from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.message import Message
from textual.notifications import SeverityLevel
from textual.widgets import Header, Input, Select, Static

from toolnexus.client.conversation import Conversation, Turn, TurnState
from toolnexus.display import printable
from toolnexus.monitor import STATE_STYLE
from toolnexus.protocol.files import MAX_FILE, safe_name
from toolnexus.protocol.model import Part, Task

from ..peers import spoken
from ..widgets import ModeBar
from ..widgets.footer import ModeFooter
from ..widgets.safe import CELL_CAP, SafeStatic, safe
from ..widgets.textbox import TextBox
from .base import ModeScreen
from .export import Prompt, default_export_dir


class PeerPicker(Select[str]):
    """Chat's peer picker, whose entries are made for its width (:func:`_label`): it says when
    that changes."""

    class Resized(Message):
        """The picker's width changed."""

    def on_resize(self, event: events.Resize) -> None:
        self.post_message(self.Resized())

    def room(self) -> int:
        """The columns an entry has, closed (its arrow and padding aside); a picker not laid
        out yet has every column."""
        return self.size.width - 3 if self.size.width else 1_000


class ChatScreen(ModeScreen):
    BINDINGS = [
        Binding("ctrl+l", "pick_peer", "Peer", id="chat-pick", priority=True),
        Binding("ctrl+n", "new_conversation", "New chat", id="chat-new"),
        Binding("escape", "leave_input", "Keys", show=False, id="chat-keys"),
        Binding("i", "focus_input", "Type", id="chat-type"),
        Binding("ctrl+r", "retry", "Retry", id="chat-retry", priority=True),
        Binding("ctrl+x", "cancel_task", "Cancel", id="chat-cancel", priority=True),
        # while a question is open (else ctrl+f is the text box's): what the next message does, shown by its label
        Binding("ctrl+f", "answering(False)", "New task", id="chat-new-task", priority=True),
        Binding("ctrl+f", "answering(True)", "Answer it", id="chat-answer", priority=True),
        # these five are left to ? (the footer fits 80 columns)
        Binding("ctrl+g", "attach", "Follow task", id="chat-attach", priority=True, show=False),
        Binding("ctrl+o", "attach_file", "+File", id="chat-file", priority=True, show=False),
        Binding("ctrl+t", "attach_data", "+JSON", id="chat-data", priority=True, show=False),
        Binding("ctrl+s", "save_artifacts", "Save", id="chat-save", priority=True, show=False),
        Binding("ctrl+y", "push", "Push", id="chat-push", priority=True, show=False),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield ModeBar("chat")
        with Horizontal(id="chat-top"):
            yield PeerPicker([], prompt="peer", id="chat-peer", compact=True)
            yield Select([], prompt="any skill", id="chat-skill", compact=True)
            yield SafeStatic("", id="chat-context")
        yield SafeStatic("", id="chat-saving")
        yield VerticalScroll(SafeStatic(id="chat-log"), id="chat-scroll")
        yield SafeStatic("", id="chat-question")
        yield TextBox(placeholder=_PLACEHOLDER, id="chat-input")
        yield ModeFooter(compact=True)

    def on_mount(self) -> None:
        self.watch(self.query_one("#chat-peer", Select), "expanded", self._picker, init=False)
        self.tn.peers_changed.subscribe(self, lambda _: self._peers())
        # whom a new chat takes waits on the hosted servers too (_first_choice): one may fail
        self.tn.servers_changed.subscribe(self, lambda _: self._peers())
        self.tn.traffic_changed.subscribe(self, lambda _: self._pushed())
        self._peers()
        self._draw()
        self.query_one("#chat-input", Input).focus()

    def on_screen_resume(self) -> None:
        if not self.is_current:  # built ahead, not shown yet
            return
        self._peers()
        self.query_one("#chat-input", Input).focus()  # every visit: typed text goes to the message

    @property
    def chat(self) -> Conversation:
        return self.tn.conversation

    def _peers(self) -> None:
        select = self.query_one("#chat-peer", Select)
        # reachable peers, and the one of this conversation whatever its state (its transcript stays)
        room = self.query_one(PeerPicker).room()
        options = [
            (safe(_label(peer, url, room), CELL_CAP), url)
            for url, peer in self.tn.peer_book.peers.items()
            if peer.state == "reachable" or url == self.chat.peer
        ]
        if options != getattr(select, "_options", [])[1:]:
            select.set_options(options)
        chosen = (
            select.value if isinstance(select.value, str) else None
        )  # picked, its Changed maybe not yet handled
        wanted = (
            self.tn.chat_peer
            or self.chat.peer
            or chosen
            or self._first_choice([url for _, url in options])
        )
        if wanted and any(url == wanted for _, url in options) and select.value != wanted:
            select.value = wanted
        if (
            self.is_current
        ):  # the peer named for Chat is taken when Chat shows (not while it is built ahead)
            self.tn.chat_peer = None

    def _first_choice(self, urls: list[str]) -> str | None:
        """Whom a new chat talks to when no one was named: the server this app hosts (what the
        Servers hint says to chat with), else the only reachable peer; no one while a hosted
        server is on its way (a saved peer answers before the demo has started, at launch)."""
        peers = self.tn.peer_book.peers
        hosted = [url for url in urls if url in peers and peers[url].hosted]
        if hosted:
            return hosted[0]
        coming = any(  # starting, or started and its peer not in the book yet, or not dialled
            s.spec.a2a
            and (s.state == "starting" or (s.state == "running" and s.url.rstrip("/") not in peers))
            for s in self.tn.workspace.servers.values()
        ) or any(p.hosted and p.state in ("new", "checking") for p in peers.values())
        return urls[0] if len(urls) == 1 and not coming else None

    @on(PeerPicker.Resized)
    def _refit(self) -> None:
        """The picker's entries made again for its width (a context id came beside it)."""
        self._peers()

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
            skills = [
                (safe(str(s.get("name") or s.get("id")), CELL_CAP), str(s.get("id")))
                for s in peer.client.card.skills
            ]
        picker = self.query_one("#chat-skill", Select)
        if skills != getattr(picker, "_options", [])[1:]:  # the same peer again (refit): kept
            picker.set_options(skills)

    def action_attach(self) -> None:
        """Follow any task of this peer by its id (one started elsewhere: a script, another client)."""
        if not self.chat.peer:
            self.notify("pick a peer first", severity="warning")
            return

        def chosen(task_id: str | None) -> None:
            if not task_id:
                return
            reply = self.chat.follow(task_id)
            self._draw()
            self.exchange(self.chat, reply)

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

        self.app.push_screen(
            Prompt(f"File to send with the next message (at most {MAX_FILE // 2**20} MiB)"), chosen
        )

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

        self.app.push_screen(
            Prompt('JSON to send as a data part with the next message, e.g. {"city": "Oslo"}'),
            chosen,
        )

    def action_save_artifacts(self) -> None:
        """Write the artifacts of the last reply's task to a folder (asked; a default offered), in a
        worker thread with its progress shown: thousands of parts never freeze the screen."""
        reply = next((turn for turn in reversed(self.chat.turns) if turn.has_artifacts), None)
        if reply is None or reply.task is None:
            self.notify("no reply with artifacts to save yet", severity="information")
            return
        if self.query_one("#chat-saving", SafeStatic).has_class("busy"):
            self.notify("still saving the last artifacts", severity="warning")
            return
        task: Task = reply.task
        default = default_export_dir().parent / "artifacts" / safe_name(task.id)

        def chosen(text: str | None) -> None:
            if text:
                line = self.query_one("#chat-saving", SafeStatic)
                line.add_class("busy")
                line.update(f"saving artifacts into {text} …")
                self._save(task, text, line)

        self.app.push_screen(
            Prompt("Save the artifacts of the last reply into the folder", str(default)), chosen
        )

    @work(thread=True, group="chat-save")
    def _save(self, task: Task, folder: str, line: SafeStatic) -> None:
        shown = [0.0]

        def progress(done: int, total: int) -> None:
            now = time.monotonic()
            if now - shown[0] >= 0.1 or done == total:  # a screen refresh, not one per part
                shown[0] = now
                self.app.call_from_thread(
                    line.update, f"saving artifacts into {folder}: {done:,} / {total:,} parts"
                )

        def finished(note: str, severity: SeverityLevel) -> None:
            line.remove_class("busy")
            self.notify(note, severity=severity)

        try:
            saved = task.save_artifacts(folder, progress)
        except Exception as exc:  # a front end never dies of what a peer sent
            reason = (
                exc.strerror
                if isinstance(exc, OSError) and exc.strerror
                else printable(str(exc), 200)
            )
            self.app.call_from_thread(finished, f"cannot save into {folder}: {reason}", "error")
            return
        self.app.call_from_thread(
            finished, f"saved {saved.summary()}", "warning" if saved.skipped else "information"
        )

    def action_push(self) -> None:
        """Push notifications on or off for this conversation: the peer POSTs every change of its
        tasks (the running one now, later ones from their first state) to the app's webhook on
        127.0.0.1; each notification shows under its reply and on the Wire."""
        if not self.chat.peer:
            self.notify("pick a peer first", severity="warning")
            return
        if self.chat.push:
            self.chat.push = False
            self.notify(
                "push notifications off for the next messages (a peer keeps what it was given)"
            )
            self._draw()
            return
        self._push_on(self.chat.running)

    @work(group="chat-push")
    async def _push_on(self, task_id: str | None) -> None:
        peer = self.tn.peer_book.peers.get(self.chat.peer)
        if peer is None or peer.client is None:
            self.notify("the peer is not connected", severity="warning")
            return
        if peer.client.card is None or not peer.client.card.push_notifications:
            self.notify(
                "this peer's card does not offer push notifications (capabilities.pushNotifications)",
                severity="warning",
            )
            return
        webhook = await self.tn.ensure_webhook()
        if task_id is not None:
            try:
                async with peer.use() as client:
                    await client.set_push(task_id, webhook.target(task_id, keys=_agent_keys(peer)))
            except Exception as exc:
                self.notify(f"the peer refused the webhook: {exc}", severity="error")
                return
        self.chat.push = True
        self.notify(f"push notifications on: the peer notifies {webhook.url}")
        self._draw()

    def _pushed(self) -> None:
        """Redraw when a notification about one of this conversation's tasks arrived."""
        webhook = self.tn.webhook
        if webhook is None or not webhook.notifications:
            return
        latest = webhook.notifications[-1]
        if latest is not self._last_push and latest.task_id and self.chat.turns_of(latest.task_id):
            self._last_push = latest
            self._draw()

    _last_push: Any = None

    def action_cancel_task(self) -> None:
        """Cancel the task of the last reply while it runs (or waits for an answer)."""
        running = self.chat.running
        if running is None:
            self.notify("no running task to cancel", severity="information")
            return
        self._cancel(running)

    @work(group="chat-cancel")
    async def _cancel(self, task_id: str) -> None:
        peer = self.tn.peer_book.peers.get(self.chat.peer)
        if peer is None or peer.client is None:
            return
        try:
            async with peer.use() as client:
                task = await self.chat.cancel(client, task_id)
            self.notify(f"task {task_id[:8]} {task.state.value}")
        except Exception as exc:
            self.notify(f"cannot cancel: {exc}", severity="warning")
        self._draw()

    def action_retry(self) -> None:
        """After a lost connection: follow the cut task again, or send the message again."""
        reply = self.chat.retry()
        if reply is None:
            self.notify("nothing to retry: no exchange was cut", severity="information")
            return
        self._draw()
        self.exchange(self.chat, reply)

    def action_pick_peer(self) -> None:
        """The peer picker, open, from anywhere in Chat (ctrl+l; also ctrl+p → "Chat with ...")."""
        select = self.query_one("#chat-peer", Select)
        select.focus()
        select.expanded = True

    def _picker(self, expanded: bool) -> None:
        """The picker closed (a peer picked, or Escape): the message box has the keys again, so
        what is typed next is the message (the picker kept them, and a space reopened it)."""
        if not expanded and self.is_current:
            self.call_after_refresh(self.query_one("#chat-input", Input).focus)

    def action_new_conversation(self) -> None:
        self.tn.conversations.pop(self.chat.peer, None)
        self.tn.conversation = Conversation(peer=self.chat.peer)
        self._draw()
        self.notify("new conversation")

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "answering":  # the one of the two that changes what the next message does
            return self.chat.waiting_task is not None and self.chat.answering != parameters[0]
        if action == "retry":  # shown when an exchange was cut
            return self.chat.lost is not None
        if action == "cancel_task":  # shown while the last reply's task runs or asks
            return self.chat.running is not None
        return True

    def action_answering(self, on: bool) -> None:
        """Whether the next message answers the open question (on its task) or starts a new task."""
        self.chat.answering = on
        self._draw()

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
        skill = self.query_one("#chat-skill", Select).value
        reply = self.chat.say(text, skill if isinstance(skill, str) else None)
        self._draw()
        self.exchange(self.chat, reply)

    @work(group="chat")
    async def exchange(self, chat: Conversation, reply: Turn) -> None:
        """Run the reply turn (send its message, or follow its task) and show it live."""
        peer = self.tn.peer_book.peers.get(chat.peer)
        if peer is None or peer.client is None:
            reply.text, reply.state = "the peer is not connected", TurnState.ERROR
            self._draw()
            return
        async with peer.use() as client:
            push = (
                (await self.tn.ensure_webhook()).target(keys=_agent_keys(peer))
                if chat.push
                else None
            )
            await chat.run(
                client,
                reply,
                on_change=lambda _: self._draw(),
                push=push,
                blocking=peer.blocking,
            )
        if peer.removed:  # meanwhile: this reply was let finish (its task is the peer's)
            reply.notes.append(
                f"the peer was removed {peer.removed} while this reply ran: it was let finish, "
                "and its connection is closed; add the peer again (3, n) to go on"
            )
            self._draw()
        elif reply.state is TurnState.LOST:  # the connection, not the peer's answer: look again
            self.tn.connect_peer(peer)

    def _draw(self) -> None:
        log = Text()
        for turn in self.chat.turns:
            text = turn.text
            if turn.role == "user":
                log.append("you  ", "bold cyan")
            else:
                log.append("agent", "bold green")
                if turn.state is TurnState.LOST:
                    log.append(" ⚡ connection lost", "yellow")
                    text += (
                        f"  (ctrl+r: {'follow the task again' if turn.task_id else 'send again'})"
                    )
                elif turn.state is TurnState.ERROR:
                    log.append(" ✘ failed", "red")
                elif turn.task_state is not None:
                    symbol, style = STATE_STYLE[turn.task_state]
                    log.append(f" {symbol} {turn.task_state.value}", style)
                log.append(" ")
            log.append(f" {text}\n")
            for part in turn.parts:  # what was sent besides the text
                if part.kind != "text":
                    log.append(f"       + {part.label}\n", "grey62")
            for note in turn.notes:  # parts not sent, a peer removed meanwhile
                log.append(f"       ⚠ {note}\n", "yellow")
            task_id = turn.task_id if turn.role == "agent" else None
            pushes = self.tn.webhook.received(task_id) if self.tn.webhook and task_id else []
            if pushes:
                seen = [n.state.value for n in pushes if n.state is not None]
                verdicts = sorted({n.verdict for n in pushes})
                log.append(
                    f"       🔔 {len(pushes)} push notification(s): {' → '.join(seen[-6:])}"
                    f" ({'; '.join(verdicts)})\n",
                    "yellow",
                )
            refused = self.tn.webhook.refused_for(task_id) if self.tn.webhook and task_id else []
            for refusal in refused[-3:]:
                log.append(f"       ✘ push notification refused: {refusal.why}\n", "red")
            task = turn.task
            if task is not None:  # what came back besides the text
                others = [p for a in task.artifacts for p in a.parts if p.kind != "text"]
                for part in others[:20]:
                    log.append(f"       + {part.label}\n", "magenta")
                if others:
                    log.append(
                        f"       ({len(others)} file/data part(s); ctrl+s saves the artifacts)\n",
                        "grey62",
                    )
        if self.chat.attachments:
            log.append(
                "next message carries: " + ", ".join(p.label for p in self.chat.attachments) + "\n",
                "bold magenta",
            )
        self.query_one("#chat-log", Static).update(log or self._empty())
        ctx = self.chat.context_id
        push = "🔔 push on   " if self.chat.push else ""  # first: the context id is what gets cut
        self.query_one("#chat-context", Static).update(
            push + (f"ctx {ctx}" if ctx else "new conversation")
        )
        self._question()
        self.query_one("#chat-scroll", VerticalScroll).scroll_end(animate=False)

    def _empty(self) -> str:
        """An empty conversation: what to say, and to the demo what shows it asking a question."""
        hosted = [s for s in self.tn.workspace.running() if s.url == self.chat.peer and s.hint]
        return _EMPTY + (f"\n{hosted[0].hint}" if hosted else "")

    def _question(self) -> None:
        """The open question above the message box, with what the next message will do about it."""
        line, box = (
            self.query_one("#chat-question", SafeStatic),
            self.query_one("#chat-input", Input),
        )
        question, task = self.chat.question, (self.chat.waiting_task or "")[:8]
        answering = question is not None and self.chat.answering
        line.set_class(question is not None, "open")
        box.set_class(answering, "answering")
        if question is None:
            line.update("")
            box.placeholder = _PLACEHOLDER
        else:
            asks = Text.assemble(
                ("? ", "bold yellow"),
                (f"task {task} asks: ", "yellow"),
                (" ".join(question.split())[:CELL_CAP] or "(no question text)", "bold"),
                "\n",
            )
            if answering:
                asks.append(
                    "   enter answers it, on that task · ctrl+f sends a new task instead", "grey62"
                )
                box.placeholder = f"your answer to task {task} (ctrl+f: a new task instead)"
            else:
                asks.append(
                    "   the next message starts a new task; the question stays open · ctrl+f answers it",
                    "grey62",
                )
                box.placeholder = "a new task (its question stays open; ctrl+f: answer it)"
            line.update(asks)
        shown = (
            question is not None,
            answering,
            self.chat.lost is not None,
            self.chat.running is not None,
        )
        if shown != self._keys_shown:  # the footer follows what the keys can do now (check_action)
            self._keys_shown = shown
            self.refresh_bindings()

    _keys_shown: tuple[bool, ...] = ()


_PLACEHOLDER = "message (enter sends; alt+1-6 or esc then 1-6: modes)"
_EMPTY = "Say something to the peer."


def _label(peer: Any, url: str, room: int = 1_000) -> str:
    """A picker entry that tells peers of one name apart (a hosted demo and a saved peer both
    named demo-desk): name, URL, dialect in use; where that does not fit in ``room`` columns
    (80 columns, a context id beside it), the name, cut, and what tells it apart whole: "hosted",
    else its host:port, or its :port where that does not fit either."""
    dialect = spoken(peer.client).replace("—", "?")
    where = url.removeprefix("http://")
    full = f"{peer.name}{' (hosted)' if peer.hosted else ''}  {where}  [{dialect}]"
    if cell_len(full) <= room:
        return full
    parts = urlsplit(url)
    tags = ["hosted"] if peer.hosted else [parts.netloc, f":{parts.port}" if parts.port else ""]
    tag = next((t for t in tags if cell_len(t) + 5 <= room), tags[-1])
    name = Text(peer.name)
    name.truncate(max(room - cell_len(tag) - 1, 1), overflow="ellipsis")
    return f"{name.plain} {tag}".strip()


def _agent_keys(peer: Any) -> Any:
    """The keys a peer's verified card was signed with: its push notifications must be signed
    with them too (None: its card is unsigned or unverified, and notifications are taken on their
    token alone)."""
    card = peer.client.card if peer.client is not None else None
    signatures = card.signatures if card is not None else None
    return signatures.keys if signatures is not None and signatures.valid else None
