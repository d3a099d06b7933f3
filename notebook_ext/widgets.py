"""Live widgets: a hosted server with its task table, a remote task, a card, a chat with a peer.

Each widget follows the library (the bus for hosted servers, the A2A client for peers) from a
task on the kernel's loop and redraws at most ten times a second, so a busy server does not flood
the browser. The state lives in traits (``rows``, ``state``, ``log``), the HTML is drawn from it.
"""

from __future__ import annotations

import asyncio
import html
from typing import Any

import ipywidgets as w
import traitlets

from toolnexus import A2AClient, TaskEvent, fetch_card, validate_card
from toolnexus.a2a.model import Task, TaskState
from toolnexus.display import badge, card_html, task_html
from toolnexus.events import EventBus, ServerEvent
from toolnexus.monitor import TaskBook, TaskView, duration

__all__ = ["ServerWidget", "RemoteTaskWidget", "CardWidget", "ChatWidget"]

REDRAW_EVERY = 0.1
"""Seconds between redraws at most (ten a second)."""


def _schedule(coro: Any) -> asyncio.Task[Any]:
    from .session import NotebookSession

    return NotebookSession.get().schedule(coro)


class ServerWidget(w.VBox):
    """A hosted server: URL and card link, profiles, stop button, and its live task table.

    Selecting a task shows its timeline, messages, artifacts and telemetry below the table.
    """

    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    status = traitlets.Unicode("starting").tag(sync=True)

    def __init__(self, name: str, events: EventBus, info: Any, stop: Any) -> None:
        self.name = name
        self.book = TaskBook()
        self._info = info  # () -> (state, url, profiles, error)
        self._stop = stop
        self.header = w.HTML()
        self.table = w.HTML()
        self.pick = w.Dropdown(options=[("(select a task)", "")], value="", description="task",
                               layout=w.Layout(width="60%"))
        self.detail = w.HTML()
        self.stop_button = w.Button(description="stop", button_style="warning", layout=w.Layout(width="80px"))
        self.stop_button.on_click(lambda _: self.stop())
        super().__init__([w.HBox([self.header, self.stop_button]), self.table, self.pick, self.detail])
        self.add_class("toolnexus-server")
        self.pick.observe(lambda change: self._draw_detail(), names="value")
        self._dirty = False
        self._redraw_pending = False
        self._pump = _schedule(self._follow(events))
        self._draw()

    def stop(self) -> None:
        self._stop()

    async def _follow(self, events: EventBus) -> None:
        async for ev in events.subscribe(replay=True, accept=lambda e: getattr(e, "server", None) == self.name):
            if isinstance(ev, TaskEvent):
                self.book.apply(ev)
            elif isinstance(ev, ServerEvent):
                self.status = ev.state
            self._dirty = True
            if not self._redraw_pending:
                self._redraw_pending = True
                asyncio.get_running_loop().call_later(REDRAW_EVERY, self._draw)

    def refresh(self) -> None:
        self._draw()

    def _draw(self) -> None:
        self._redraw_pending = False
        state, url, profiles, error = self._info()
        self.status = state
        dot = {"running": "●", "failed": "✘", "starting": "◌"}.get(state, "○")
        link = (f"<a href='{html.escape(url)}/.well-known/agent-card.json' target='_blank'>{html.escape(url)}</a>"
                f" (<a href='{html.escape(url)}/.well-known/agent-card.json' target='_blank'>card</a>)") if url else ""
        flags = " ".join(f"{p} ✓" for p in profiles)
        text = f"<b>{dot} {html.escape(self.name)}</b> {link} {flags} <i>{html.escape(state)}</i>"
        if error:
            text += f"<br><span style='color:#d33'>✘ {html.escape(error)}</span>"
        self.header.value = text
        views = list(self.book.tasks.values())
        self.rows = [_row(v) for v in views]
        body = "".join(
            f"<tr data-task='{html.escape(r['id'])}'><td>{badge(r['state'])}</td><td><code>{html.escape(r['id'][:8])}…"
            f"</code></td><td>{html.escape(r['skill'] or '—')}</td><td><code>{html.escape(r['context'][:8])}…</code>"
            f"</td><td>{r['took']}</td><td>{r['tokens']}</td><td>{r['tools']}</td></tr>" for r in self.rows)
        self.table.value = ("<table class='toolnexus-live-tasks'><tr><th>state</th><th>task</th><th>skill</th>"
                            "<th>context</th><th>took</th><th>tokens</th><th>tools</th></tr>" + body + "</table>")
        options = [("(select a task)", "")] + [(f"{v.state.value} {v.id[:8]} {v.task.request[:40]}", v.id)
                                                for v in views]
        if [o[1] for o in self.pick.options] != [o[1] for o in options]:
            current = self.pick.value
            self.pick.options = options
            self.pick.value = current if current in {o[1] for o in options} else ""
        self._draw_detail()

    def _draw_detail(self) -> None:
        view = self.book.tasks.get(self.pick.value or "")
        if view is None:
            self.detail.value = ""
            return
        timeline = "".join(f"<tr><td>{at}</td><td>{badge(state)}</td><td>{spent}</td></tr>"
                           for at, state, spent in view.timeline_rows())
        telemetry = ""
        if view.result is not None:
            telemetry = view.result._repr_html_()
        self.detail.value = (f"<table><tr><th>time</th><th>state</th><th>after</th></tr>{timeline}</table>"
                             + task_html(view.task) + telemetry)


def _row(view: TaskView) -> dict[str, Any]:
    tokens, tools = view.tokens(), view.tool_calls()
    return {"id": view.id, "state": view.state.value, "skill": view.skill, "context": view.task.context_id,
            "took": duration(view.took()), "tokens": "—" if tokens is None else tokens,
            "tools": "—" if tools is None else tools}


class RemoteTaskWidget(w.HTML):
    """One task sent to a peer, its state followed live; ``await widget.done()`` for the final Task."""

    state = traitlets.Unicode("sending").tag(sync=True)

    def __init__(self, url: str, text: str, *, skill: str | None = None, context_id: str | None = None,
                 task_id: str | None = None, headers: dict[str, str] | None = None) -> None:
        super().__init__(f"<i>sending to {html.escape(url)}…</i>")
        self.url = url
        self.task: Task | None = None
        self.error = ""
        self._run = _schedule(self._deliver(text, skill, context_id, task_id, headers))

    async def _deliver(self, text: str, skill: str | None, context_id: str | None, task_id: str | None,
                    headers: dict[str, str] | None) -> Task | None:
        try:
            async with A2AClient(self.url, headers=headers) as client:
                self._show(await client.send(text, skill=skill, context_id=context_id, task_id=task_id))
                assert self.task is not None
                if not (self.task.state.terminal or self.task.state.interrupted):
                    async for ev in client.watch(self.task.id, poll_every=0.1, max_interval=1.0):
                        self._show(ev.task)
        except Exception as exc:
            self.error = str(exc)
            self.state = "error"
            self.value = f"<span style='color:#d33'>✘ {html.escape(self.error)}</span>"
        return self.task

    def _show(self, task: Task) -> None:
        self.task = task
        self.state = task.state.value
        self.value = task_html(task)

    async def done(self) -> Task | None:
        """The task once it is terminal or waiting for input (None when the peer could not be reached)."""
        return await asyncio.shield(self._run)

    def _repr_html_(self) -> str:
        return self.value


class CardWidget(w.VBox):
    """A peer's card with the validator's diagnostics and a button that opens a chat with it."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.url = url
        self.card: Any = None
        self.report: Any = None
        self.view = w.HTML(f"<i>fetching {html.escape(url)}…</i>")
        self.chat_button = w.Button(description="chat", icon="comments", disabled=True)
        self.chat_area = w.VBox()
        self.chat_button.on_click(lambda _: self._open_chat())
        super().__init__([self.view, self.chat_button, self.chat_area])
        self._run = _schedule(self._fetch(headers))

    async def _fetch(self, headers: dict[str, str] | None) -> Any:
        try:
            self.card = await fetch_card(self.url, headers)
        except Exception as exc:
            self.view.value = f"<span style='color:#d33'>✘ {html.escape(str(exc))}</span>"
            return None
        self.report = validate_card(self.card)
        self.view.value = card_html(self.card, self.report)
        self.chat_button.disabled = False
        return self.card

    async def done(self) -> Any:
        return await asyncio.shield(self._run)

    def _open_chat(self) -> None:
        self.chat_area.children = [ChatWidget(self.url)]


class ChatWidget(w.VBox):
    """A small chat with a peer: the messages, a text box, the skill, a new-conversation button. An
    ``input-required`` question is answered by the next message, on the same task."""

    messages = traitlets.List(traitlets.Dict()).tag(sync=True)

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.url = url
        self.headers = headers
        self.context_id: str | None = None
        self.waiting_task: str | None = None
        self.view = w.HTML("<i>say something</i>")
        self.text = w.Text(placeholder="message (enter sends)", layout=w.Layout(width="60%"))
        self.skill = w.Dropdown(options=[("any skill", "")], value="", description="skill")
        self.send_button = w.Button(description="send", button_style="primary")
        self.new_button = w.Button(description="new conversation")
        self.send_button.on_click(lambda _: self.say(self.text.value))
        self.new_button.on_click(lambda _: self.new_conversation())
        self.text.observe(self._on_enter, names="value")  # ipywidgets 8: continuous_update handles enter
        self.text.continuous_update = False
        super().__init__([self.view, w.HBox([self.text, self.send_button]), w.HBox([self.skill, self.new_button])])
        self._sending: asyncio.Task[Any] | None = None
        _schedule(self._load_skills())

    def _on_enter(self, change: dict[str, Any]) -> None:
        if change.get("new"):
            self.say(change["new"])

    async def _load_skills(self) -> None:
        try:
            card = await fetch_card(self.url, self.headers)
        except Exception as exc:
            self.view.value = f"<span style='color:#d33'>✘ {html.escape(str(exc))}</span>"
            return
        self.skill.options = [("any skill", "")] + [(str(s.get("name") or s.get("id")), str(s.get("id")))
                                                    for s in card.skills]

    def new_conversation(self) -> None:
        self.context_id, self.waiting_task = None, None
        self.messages = []
        self._draw()

    def say(self, text: str) -> asyncio.Task[Any] | None:
        text = (text or "").strip()
        if not text:
            return None
        self.text.value = ""
        self.messages = [*self.messages, {"role": "user", "text": text, "state": ""}]
        self._draw()
        self._sending = _schedule(self._exchange(text))
        return self._sending

    async def _exchange(self, text: str) -> None:
        entry = {"role": "agent", "text": "…", "state": "sending"}
        self.messages = [*self.messages, entry]
        try:
            async with A2AClient(self.url, headers=self.headers) as client:
                task = await client.send(text, skill=self.skill.value or None, context_id=self.context_id,
                                         task_id=self.waiting_task)
                self._update(entry, task)
                if not (task.state.terminal or task.state.interrupted):
                    async for ev in client.watch(task.id, poll_every=0.1, max_interval=1.0):
                        task = ev.task
                        self._update(entry, task)
        except Exception as exc:
            entry.update(text=str(exc), state="error")
            self.messages = list(self.messages)
            self._draw()
            return
        self.context_id = task.context_id or self.context_id
        self.waiting_task = task.id if task.state.interrupted else None

    def _update(self, entry: dict[str, Any], task: Task) -> None:
        if task.state is TaskState.COMPLETED:
            text = task.reply
        elif task.state.interrupted and task.status.message is not None:
            text = task.status.message.text
        elif task.status.message is not None:
            text = task.status.message.text
        else:
            text = "…"
        entry.update(text=text, state=task.state.value, task=task.id)
        self.messages = list(self.messages)
        self._draw()

    async def wait(self) -> None:
        if self._sending is not None:
            await asyncio.shield(self._sending)

    def _draw(self) -> None:
        lines = []
        for item in self.messages:
            who = "you" if item["role"] == "user" else "agent"
            state = f" {badge(item['state'])}" if item.get("state") and item["state"] not in ("sending",) else ""
            lines.append(f"<div><b>{who}</b>{state}: {html.escape(item['text'])}</div>")
        ctx = f"<small>context {html.escape(self.context_id)}</small>" if self.context_id else ""
        self.view.value = "".join(lines) + ctx
