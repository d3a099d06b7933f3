"""Live widgets: a hosted server with its task table, a remote task, a card, a chat with a peer.

Each widget follows the library (the bus for hosted servers, the A2A client for peers) from a
task on the kernel's loop and redraws at most ten times a second (the chart once a second), so a
busy server does not flood the browser. The state lives in traits (``rows``, ``state``, ``log``),
the HTML is drawn from it, coloured with JupyterLab's theme variables (light and dark).
"""

from __future__ import annotations

import asyncio
import contextlib
import csv
import html
import io
import json
import math
from collections.abc import AsyncIterator, Callable
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

import ipywidgets as w
import traitlets

from toolnexus import A2AClient, TaskEvent, fetch_card, validate_card
from toolnexus._fs import write_whole
from toolnexus.client.conversation import Conversation, Turn, TurnState
from toolnexus.client.webhook import WebhookReceiver
from toolnexus.debug.cassette import save
from toolnexus.debug.client_doctor import start_client_doctor
from toolnexus.debug.cost import card_cost
from toolnexus.debug.diagram import Diagram
from toolnexus.debug.doctor import counted, doctor
from toolnexus.debug.report import DoctorReport
from toolnexus.display import badge, error_html, to_dataframe
from toolnexus.errors import ConfigError, PeerError, ToolnexusError
from toolnexus.events import EventBus, RemoteCallEvent, ServerEvent, TextEvent, TrafficEvent
from toolnexus.monitor import (
    ARROW,
    TaskBook,
    TaskView,
    duration,
    parse_time,
    task_wire,
    trace_tree,
)
from toolnexus.protocol.card import card_html
from toolnexus.protocol.model import Task, task_html

from .session import NotebookSession

__all__ = ["ServerWidget", "RemoteTaskWidget", "CardWidget", "ChatWidget", "STYLE"]

REDRAW_EVERY = 0.1
"""Seconds between redraws at most (ten a second)."""
CHART_EVERY = 1.0
"""Seconds between chart redraws at most (a chart is a picture drawn off the loop)."""
BODY_SHOWN = 2000
"""Characters of a wire body shown in a task's detail (the export keeps what was recorded)."""

STYLE = """<style>
.toolnexus-w table { border-collapse: collapse; margin: 4px 0; }
.toolnexus-w th, .toolnexus-w td { padding: 3px 8px; border: 1px solid var(--jp-border-color2, #ccc);
  text-align: left; vertical-align: top; }
.toolnexus-w .toolnexus-live-tasks td, .toolnexus-w .toolnexus-live-tasks th { white-space: nowrap; }
.toolnexus-w .toolnexus-live-tasks td.toolnexus-request { white-space: normal; min-width: 10em; }
.toolnexus-w .widget-html-content { overflow-x: auto; max-width: 100%; }
.toolnexus-w th { background: var(--jp-layout-color2, #eee); color: var(--jp-ui-font-color1, #222);
  font-weight: 600; }
.toolnexus-w a { color: var(--jp-content-link-color, #1a73e8); text-decoration: underline; }
.toolnexus-w .toolnexus-muted { color: var(--jp-ui-font-color2, #777); }
.toolnexus-w pre { margin: 0; white-space: pre-wrap; word-break: break-word; }
.toolnexus-w .toolnexus-task > div { margin: 1px 0; }
.toolnexus-w table.toolnexus-doctor { width: 100%; line-height: 1.4; }
.toolnexus-w table.toolnexus-doctor td:last-child { overflow-wrap: anywhere; }
</style>"""
"""Table borders and padding, links that look like links: theme variables only."""


def _schedule(coro: Any) -> asyncio.Task[Any]:
    return NotebookSession.get().schedule(coro)


def _track(widget: Any) -> None:
    NotebookSession.get().widgets.add(widget)


def _hide(widget: Any, hidden: bool = True) -> None:
    widget.layout.display = "none" if hidden else None


def _failure(exc: BaseException) -> ToolnexusError:
    """Any failure of a send as a toolnexus error with a one-line reason."""
    return (
        exc
        if isinstance(exc, ToolnexusError)
        else PeerError(f"{type(exc).__name__}: {exc}".rstrip(": "))
    )


def _wire_html(rows: list[tuple[str, str, Any]]) -> str:
    """A task's states and wire exchanges on one timeline."""
    out = []
    for stamp, kind, item in rows:
        if kind == "state":
            out.append(
                f"<tr><td>{html.escape(stamp[11:23])}</td><td>{badge(item.value)}</td><td></td></tr>"
            )
            continue
        ev: TrafficEvent = item
        arrow = f"{ARROW[kind]} {kind}"
        what = f"{ev.method} {ev.rpc_method or ev.url}"
        status = ev.error or (str(ev.status) if ev.status is not None else "")
        bodies = "".join(
            f"<div class='toolnexus-muted'>{label}</div><pre>{html.escape(body[:BODY_SHOWN])}"
            f"{'…' if len(body) > BODY_SHOWN else ''}</pre>"
            for label, body in (
                ("request", ev.request_body),
                ("response", ev.response_body or "\n".join(ev.frames)),
            )
            if body
        )
        out.append(
            f"<tr><td>{html.escape(stamp[11:23])}</td><td>{arrow}</td><td><details><summary>"
            f"{html.escape(what)} <b>{html.escape(status)}</b> {ev.ms:.0f} ms</summary>{bodies}</details>"
            "</td></tr>"
        )
    return (
        "<table><tr><th>time (UTC)</th><th>what</th><th>exchange</th></tr>"
        + "".join(out)
        + "</table>"
    )


def _trace_html(rows: list[tuple[int, str, Any]], selected: str) -> str:
    """A task's trace as a tree (nothing when it called no other agent): each task, each remote
    call (peer, skill, remote task, state, time) and the task it made when this notebook hosts it."""
    if len(rows) <= 1:
        return ""
    out = []
    for depth, kind, item in rows:
        pad = f"padding-left:{depth * 1.2:.1f}em"
        if kind == "task":
            mine = " <b>◀ this task</b>" if item.id == selected else ""
            out.append(
                f"<div style='{pad}'>{badge(item.state.value)} {html.escape(item.server)} task "
                f"<code>{html.escape(item.id[:8])}</code> {duration(item.took())}{mine}</div>"
            )
        else:
            state = badge(item.state) if item.state != "error" else "<b>error</b>"
            detail = (
                f" <span class='toolnexus-muted'>{html.escape(item.detail[:300])}</span>"
                if item.detail
                else ""
            )
            out.append(
                f"<div style='{pad}'>→ {html.escape(item.peer)} · {html.escape(item.skill or '?')} remote task "
                f"<code>{html.escape(item.remote_task_id[:8] or '—')}</code> {state} "
                f"{duration(item.ms / 1000)}{detail}</div>"
            )
    return (
        "<div class='toolnexus-trace'><div class='toolnexus-muted'>trace</div>"
        + "".join(out)
        + "</div>"
    )


RECORD_FIELDS = (
    "task",
    "context",
    "server",
    "skill",
    "request",
    "state",
    "created",
    "finished",
    "duration_s",
    "tokens",
    "tool_calls",
)


def _task_record(view: TaskView) -> dict[str, Any]:
    """One task as numbers and timestamps (for a DataFrame or a CSV)."""
    took = view.took()  # None while it runs
    created = view.started() if view.timeline else parse_time(view.task.created)
    return {
        "task": view.id,
        "context": view.task.context_id,
        "server": view.server,
        "skill": view.skill or None,
        "request": view.task.request,
        "state": view.state.value,
        "created": created,
        "finished": parse_time(view.timeline[-1][1]) if took is not None else None,
        "duration_s": took,
        "tokens": view.tokens(),
        "tool_calls": view.tool_calls(),
    }


class ServerWidget(w.VBox):
    """A hosted server: URL and card link, profiles, stop button, its live task table (filter box,
    chart), and below it the selected task's timeline, wire, messages and telemetry.

    The table holds the tasks of this server since this widget was made, and those its store
    kept from before (``kept``: on a file or PostgreSQL store, the newest 10,000, read once the
    server runs, as the TUI's Tasks): a server started again under the same name gets a new
    widget, which shows the old tasks only from such a store.
    """

    rows = traitlets.List(traitlets.Dict()).tag(sync=True)
    status = traitlets.Unicode("starting").tag(sync=True)

    def __init__(
        self,
        name: str,
        events: EventBus,
        info: Any,
        stop: Any,
        cancel: Callable[[str], Any] | None = None,
        kept: Callable[[], AsyncIterator[list[Task]]] | None = None,
    ) -> None:
        self.name = name
        self._kept = kept  # () -> the store's kept tasks, a page at a time, oldest first
        self.book = TaskBook()
        # this server's tasks, the traced tasks of the others and every remote call
        self.hops = TaskBook()
        # this server's events from now on, not an earlier one's of the same name
        self.since = events.seq
        self.disconnected = ""
        self._info = info  # () -> (state, url, profiles, error)
        self._stop = stop
        self._cancel = cancel
        self.header = w.HTML()
        self.filter = w.Text(
            placeholder="filter: state:failed skill:weather lisbon", layout=w.Layout(width="50%")
        )
        self.table = w.HTML()
        self.chart = w.Image(format="png", layout=w.Layout(max_width="620px"))
        _hide(self.chart)
        self.pick = w.Dropdown(
            options=[("(select a task)", "")],
            value="",
            description="task",
            layout=w.Layout(width="60%"),
        )
        self.cancel_button = w.Button(
            description="cancel task", icon="ban", disabled=True, layout=w.Layout(width="120px")
        )
        self.detail = w.HTML()
        self.stop_button = w.Button(
            description="stop", button_style="warning", layout=w.Layout(width="80px")
        )
        self.stop_button.on_click(lambda _: self.stop())
        self.cancel_button.on_click(
            lambda _: self.cancel(self.pick.value) if self.pick.value else None
        )
        super().__init__(
            [
                w.HBox([self.header, self.stop_button]),
                self.filter,
                self.table,
                self.chart,
                w.HBox([self.pick, self.cancel_button]),
                self.detail,
            ]
        )
        self.add_class("toolnexus-server")
        self.add_class("toolnexus-w")
        self.pick.observe(lambda change: self._draw_detail(), names="value")
        self.filter.observe(lambda change: self._draw(), names="value")
        self._redraw_pending = False
        self._chart_due = 0.0
        self._chart_task: asyncio.Task[Any] | None = None
        self._chart_drawn = -1
        since = self.since
        self._pump = _schedule(
            self._follow(
                events,
                lambda e: (
                    e.seq > since
                    and (
                        getattr(e, "server", None) == name
                        or isinstance(e, RemoteCallEvent)
                        or (isinstance(e, TaskEvent) and e.task.trace is not None)
                    )
                ),
            )
        )  # the others: for trace trees
        _track(self)
        self._draw()
        self._keep(already=True)

    def _keep(self, already: bool = False) -> None:
        """What the server's store kept from before into the table, once it runs (``already``:
        if it runs already, a ``--thread`` server, whose start no event will tell)."""
        if self._kept is not None and (not already or self._info()[0] == "running"):
            _schedule(self._show_kept(self._kept()))

    async def _show_kept(self, pages: AsyncIterator[list[Task]]) -> None:
        async for tasks in pages:
            self.book.keep(tasks, self.name)
            self.hops.keep(tasks, self.name)  # (the trace of a kept task: the task alone)
            self._redraw_soon()

    def _redraw_soon(self) -> None:
        if not self._redraw_pending:
            self._redraw_pending = True
            asyncio.get_running_loop().call_later(REDRAW_EVERY, self._draw)

    def stop(self) -> None:
        if not self.disconnected:
            self._stop()

    def cancel(self, task_id: str) -> Any:
        """Cancel one of this server's tasks (scheduled; the table shows it canceled)."""
        if self._cancel is None or self.disconnected:
            raise ConfigError(f"server {self.name!r} cannot cancel tasks from here")
        return self._cancel(task_id)

    def disconnect(self, reason: str) -> None:
        """The kernel is going away: say so, and leave no button that would do nothing."""
        self.disconnected = reason
        self.stop_button.disabled = self.cancel_button.disabled = True
        self._draw()

    async def _follow(self, events: EventBus, accept: Callable[[Any], bool]) -> None:
        async for ev in events.subscribe(replay=True, accept=accept):
            if isinstance(ev, TaskEvent):
                self.hops.apply(ev)
                if ev.server == self.name:
                    self.book.apply(ev)
            elif isinstance(ev, TextEvent):  # a reply as the model says it
                if self.book.words(ev) is None:
                    continue
            elif isinstance(ev, RemoteCallEvent):
                self.hops.remote(ev)
            elif isinstance(ev, TrafficEvent):
                self.book.traffic.append(ev)
            elif isinstance(ev, ServerEvent):
                url = self._info()[1]
                if (
                    ev.url and url and ev.url != url
                ):  # an earlier run of this name that stopped after this one began
                    continue
                self.status = ev.state
                if ev.state == "started":
                    self._keep()
                if ev.state in (
                    "stopped",
                    "failed",
                ):  # this run is over; a new one gets a new widget
                    self._draw()
                    return
            self._redraw_soon()

    def refresh(self) -> None:
        self._draw()

    # -- data ------------------------------------------------------------------------------------
    def records(self) -> list[dict[str, Any]]:
        """One dict per task: ids, skill, request, state, created/finished (UTC datetimes),
        duration in seconds, tokens and tool calls (None while unknown)."""
        return [_task_record(v) for v in self.book.tasks.values()]

    def to_dataframe(self) -> Any:
        """The tasks as a pandas DataFrame, one row per task, numbers as numbers."""
        df = to_dataframe(self.records())
        if len(df):
            for column in ("tokens", "tool_calls"):
                df[column] = df[column].astype("Int64")
            df["duration_s"] = df["duration_s"].astype("float64")
        return df

    def diagram(self) -> Diagram:
        """This server's wire (every exchange its callers had with it, and this notebook's own
        calls to it) as a Mermaid sequence diagram, as ``toolnexus replay --mermaid`` draws a
        cassette: shown at the end of a cell, JupyterLab draws it."""
        return Diagram.of_traffic(list(self.book.traffic))

    def export(self, path: str | Path | None = None) -> Path:
        """The session of this server (its tasks, and the wire with them) to ``.json``, its tasks
        to ``.csv`` (one row per task), or its wire to ``.jsonl``: a cassette that ``toolnexus
        replay`` serves as this server, or diffs against it later. Returns where it went."""
        path = Path(
            path or f"toolnexus-{self.name}-{datetime.now():%Y%m%d-%H%M%S}.json"
        ).expanduser()
        if path.suffix not in (".json", ".csv", ".jsonl"):
            raise ConfigError(f"export: {path.name!r} must end in .json, .csv or .jsonl")
        if path.suffix == ".jsonl":
            save(list(self.book.traffic), path)
        elif path.suffix == ".csv":
            buffer = io.StringIO()
            records = self.records()
            writer = csv.DictWriter(buffer, list[str](RECORD_FIELDS))
            writer.writeheader()
            for record in records:
                writer.writerow(
                    {
                        k: (v.isoformat() if isinstance(v, datetime) else v)
                        for k, v in record.items()
                    }
                )
            write_whole(path, buffer.getvalue())
        else:
            data = {
                "server": self.name,
                "tasks": [v.export() for v in self.book.tasks.values()],
                "wire": [asdict(ev) for ev in self.book.traffic],
            }
            write_whole(path, json.dumps(data, indent=2, default=str))
        return path

    # -- drawing ---------------------------------------------------------------------------------
    def _draw(self) -> None:
        self._redraw_pending = False
        state, url, profiles, error = self._info()
        if self.disconnected:
            state, error = "disconnected", self.disconnected
        self.status = state
        self.stop_button.disabled = bool(self.disconnected) or state not in ("running", "starting")
        dot = {"running": "●", "failed": "✘", "starting": "◌"}.get(state, "○")
        card = f"{url}/.well-known/agent-card.json"
        link = (
            (
                f"<a href='{html.escape(url)}' target='_blank'>{html.escape(url)}</a>"
                f" (<a href='{html.escape(card)}' target='_blank'>card</a>)"
            )
            if url and not self.disconnected
            else ""
        )
        flags = " ".join(f"{p} ✓" for p in profiles)
        text = f"{STYLE}<b>{dot} {html.escape(self.name)}</b> {link} {flags} <i>{html.escape(state)}</i>"
        if error:
            text += f"<br>{error_html(error)}"
        self.header.value = text
        views = (
            self.book.matching(self.filter.value)
            if self.filter.value.strip()
            else list(self.book.tasks.values())
        )
        self.rows = [_row(v) for v in views]
        body = "".join(
            f"<tr data-task='{html.escape(r['id'])}'><td>{badge(r['state'])}</td><td><code>{html.escape(r['id'][:8])}…"
            f"</code></td><td>{html.escape(r['skill'] or '—')}</td><td class='toolnexus-request'>{html.escape(r['request'])}</td>"
            f"<td>{r['started']}</td><td>{r['took']}</td><td>{r['tokens']}</td><td>{r['tools']}</td></tr>"
            for r in self.rows
        )
        if not self.rows:
            hint = (
                f"no task matches {html.escape(self.filter.value.strip())!r}"
                if self.book.tasks
                else "no tasks yet"
                + (f": try <code>%toolnexus send {html.escape(url)} hello</code>" if url else "")
            )
            body = f"<tr class='toolnexus-empty'><td colspan='8' class='toolnexus-muted'>{hint}</td></tr>"
        self.table.value = (
            "<table class='toolnexus-live-tasks'><tr><th>state</th><th>task</th><th>skill</th>"
            "<th>request</th><th>started (UTC)</th><th>took</th><th>tokens</th><th>tools</th></tr>"
            + body
            + "</table>"
        )
        all_views = list(self.book.tasks.values())
        options = [("(select a task)", "")] + [
            (f"{v.state.value} {v.id[:8]} {v.task.request[:40]}", v.id) for v in all_views
        ]
        if (
            list(self.pick.options) != options
        ):  # labels too: a canceled task must not still say working
            current = self.pick.value
            self.pick.options = options
            self.pick.value = current if current in {o[1] for o in options} else ""
        self._draw_detail()
        self._maybe_chart()

    def _draw_detail(self) -> None:
        view = self.book.tasks.get(self.pick.value or "")
        running = view is not None and not view.state.terminal
        self.cancel_button.disabled = not running or self._cancel is None or bool(self.disconnected)
        if view is None:
            self.detail.value = ""
            return
        telemetry = view.result._repr_html_() if view.result is not None else ""
        live = (  # the reply as the model says it, until the task's own artifact comes
            f"<div class='toolnexus-live'><b>reply, as it comes</b>"
            f"<pre style='white-space:pre-wrap'>{html.escape(view.live)}</pre></div>"
            if view.live
            else ""
        )
        self.detail.value = (
            _trace_html(trace_tree(self.hops, view.id), view.id)
            + _wire_html(task_wire(view, self.book.traffic))
            + task_html(view.task)
            + live
            + telemetry
        )

    def _maybe_chart(self) -> None:
        """The chart at most once a second, drawn in a thread (matplotlib, when installed)."""
        count = sum(len(v.timeline) for v in self.book.tasks.values())
        if count == self._chart_drawn or (
            self._chart_task is not None and not self._chart_task.done()
        ):
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # drawn from outside the kernel's loop: the next redraw on it charts
            return
        wait = max(0.0, self._chart_due - loop.time())
        self._chart_drawn = count
        self._chart_due = loop.time() + wait + CHART_EVERY
        self._chart_task = _schedule(self._chart(self.series(), wait))

    def series(self) -> list[tuple[str, list[tuple[str, datetime]], float | None]]:
        """What the chart draws: each task's state, its timeline and how long it took."""
        return [
            (v.state.value, [(s.value, parse_time(t)) for s, t in v.timeline], v.took())
            for v in self.book.tasks.values()
        ]

    async def _chart(self, series: list[Any], wait: float) -> None:
        if wait:
            await asyncio.sleep(wait)
        png = await asyncio.to_thread(chart_png, series)
        if png is not None:
            self.chart.value = png
            _hide(self.chart, False)


def chart_png(series: list[tuple[str, list[tuple[str, datetime]], float | None]]) -> bytes | None:
    """:func:`chart_figure` as a PNG; None when there is nothing to draw or matplotlib is not
    installed."""
    fig = chart_figure(series)
    if fig is None:
        return None
    out = io.BytesIO()
    fig.savefig(out, format="png", transparent=True)
    return out.getvalue()


def chart_figure(series: list[tuple[str, list[tuple[str, datetime]], float | None]]) -> Any:
    """Task states over time (tasks in each state, stepwise) and a histogram of durations, for a
    620 px column (a matplotlib ``Figure``); None when there is nothing to draw or matplotlib is
    not installed. Both x axes start at 0 seconds (one task's duration alone gave matplotlib's
    default of its value ±0.5: an axis from -0.4 s)."""
    try:
        from matplotlib.figure import Figure  # noqa: PLC0415  # optional extra: notebook (matplotlib), when a chart is drawn
    except ImportError:
        return None
    changes = sorted(
        (at, i, state) for i, (_, timeline, _) in enumerate(series) for state, at in timeline
    )
    if not changes:
        return None
    colours = {
        "submitted": "#999999",
        "working": "#d4a017",
        "input-required": "#a855c7",
        "completed": "#2e9d3a",
        "failed": "#d33b3b",
        "canceled": "#8a8a8a",
        "rejected": "#d33b3b",
    }
    now: dict[int, str] = {}
    counts: dict[str, list[int]] = {s: [] for s in colours}
    times = []
    for at, i, state in changes:
        now[i] = state
        times.append(at)
        tally = {s: 0 for s in colours}
        for s in now.values():
            tally[s] = tally.get(s, 0) + 1
        for s in colours:
            counts[s].append(tally.get(s, 0))
    ink = "#888888"  # readable on the light and the dark theme; the background stays transparent
    fig = Figure(figsize=(6.2, 2.0), dpi=100)
    left, right = fig.subplots(1, 2, gridspec_kw={"width_ratios": [3, 2]})
    start = times[0]
    xs = [(t - start).total_seconds() for t in times]
    for state, ys in counts.items():
        if any(ys):
            left.step(xs, ys, where="post", color=colours[state], label=state, linewidth=1.5)
    left.set_title("tasks by state", color=ink, fontsize=9)
    left.set_xlabel("seconds", color=ink, fontsize=8)
    left.legend(fontsize=7, frameon=False, labelcolor=ink)
    took = [t for _, _, t in series if t is not None]
    if took:
        longest = max(took) or 1.0
        bins = min(20, max(1, int(math.sqrt(len(took))) + 1))
        right.hist(took, bins=bins, range=(0, longest), color="#4a90d9")
        right.set_xlim(0, longest * 1.05)
    left.set_xlim(left=0)
    right.set_title("duration (s)", color=ink, fontsize=9)
    for ax in (left, right):
        ax.tick_params(colors=ink, labelsize=7)
        ax.set_facecolor("none")
        for spine in ax.spines.values():
            spine.set_color(ink)
    fig.tight_layout()
    return fig


def _row(view: TaskView) -> dict[str, Any]:
    tokens, tools = view.tokens(), view.tool_calls()
    started = view.timeline[0][1][11:19] if view.timeline else ""
    request = view.task.request
    return {
        "id": view.id,
        "state": view.state.value,
        "skill": view.skill,
        "context": view.task.context_id,
        "request": request[:60] + ("…" if len(request) > 60 else ""),
        "started": started,
        "took": duration(view.took()),
        "tokens": "—" if tokens is None else tokens,
        "tools": "—" if tools is None else tools,
    }


class RemoteTaskWidget(w.VBox):
    """One task sent to a peer, followed live: every frame of its stream, so the reply's words
    show as they come, however the peer says them (also while it waits for input, in case it is
    answered elsewhere), with a cancel button; ``await widget.done()`` for the Task. ``bus``
    hears its client's wire events."""

    state = traitlets.Unicode("sending").tag(sync=True)

    def __init__(
        self,
        url: str,
        text: str,
        *,
        skill: str | None = None,
        context_id: str | None = None,
        task_id: str | None = None,
        headers: dict[str, str] | None = None,
        bus: EventBus | None = None,
        push: bool = False,
    ) -> None:
        self.view = w.HTML(f"<i>sending to {html.escape(url)}…</i>")
        self.cancel_button = w.Button(
            description="cancel", icon="ban", disabled=True, layout=w.Layout(width="100px")
        )
        self.cancel_button.on_click(lambda _: self.cancel())
        self.wire = w.HTML()
        super().__init__([self.view, self.cancel_button, self.wire])
        self.add_class("toolnexus-w")
        self.url = url
        self.headers = headers
        self.task: Task | None = None
        self.error = ""
        self._exc: ToolnexusError | None = None
        self._bus = bus
        self._client: A2AClient | None = None
        self._push = push
        self.webhook: WebhookReceiver | None = None
        """With ``push``: the notebook's receiver, where the peer notifies this task's changes."""
        self._settled: asyncio.Future[Task] = asyncio.get_running_loop().create_future()
        self._run = _schedule(self._deliver(text, skill, context_id, task_id))
        _track(self)

    @property
    def value(self) -> str:
        return self.view.value

    async def _deliver(
        self, text: str, skill: str | None, context_id: str | None, task_id: str | None
    ) -> None:
        try:
            await NotebookSession.get().ready(self.url)  # a server of this notebook still starting
            async with A2AClient(self.url, headers=self.headers, bus=self._bus) as client:
                self._client = client
                target = None
                if self._push:
                    self.webhook = await NotebookSession.get().webhook()
                    target = self.webhook.target()
                self._show(
                    await client.send(
                        text, skill=skill, context_id=context_id, task_id=task_id, push=target
                    )
                )
                await self._follow(client)
        except Exception as exc:
            self._fail(exc)
        finally:
            self._client = None
            self.cancel_button.disabled = True
            self._settle()

    async def _follow(self, client: A2AClient) -> None:
        assert self.task is not None
        if not (self.task.state.terminal or self.task.state.interrupted):
            async with contextlib.aclosing(
                client.follow(self.task.id, poll_every=0.1, max_interval=1.0)
            ) as changes:
                async for task in changes:  # every frame: the reply's words as they come
                    self._show(task)
        if self.webhook is not None:  # the notification of the state just seen is on its way
            with contextlib.suppress(TimeoutError):
                await self.webhook.wait(self.task.id, state=self.task.state, timeout=2.0)
            self._show(self.task)
        self._settle()
        pause = 1.0
        try:
            while (
                self.task is not None and self.task.state.interrupted
            ):  # answered elsewhere, or canceled
                await asyncio.sleep(pause)
                pause = min(pause * 1.5, 5.0)
                fresh = await client.get(self.task.id)
                if (
                    fresh.state is not self.task.state
                    or fresh.status.timestamp != self.task.status.timestamp
                ):
                    self._show(fresh)
        except Exception as exc:  # the task itself is as last shown; say it is no longer followed
            self.view.value += f"<div class='toolnexus-muted'>no longer followed: {html.escape(str(_failure(exc)))}</div>"

    def _fail(self, exc: BaseException) -> None:
        self._exc = _failure(exc)
        self.error = str(self._exc)
        self.state = "error"
        self.view.value = error_html(self.error)

    def _settle(self) -> None:
        if self._settled.done():
            return
        if self.task is not None and (self.task.state.terminal or self.task.state.interrupted):
            self._settled.set_result(self.task)
        elif self._exc is not None:
            self._settled.set_exception(self._exc)
        elif self._run.done():
            self._settled.set_exception(PeerError(f"the send to {self.url} ended without a task"))

    def _show(self, task: Task) -> None:
        self.task = task
        self.state = task.state.value
        self.view.value = STYLE + task_html(task)
        self.cancel_button.disabled = task.state.terminal
        _hide(self.cancel_button, task.state.terminal)  # nothing left to cancel
        if self._client is not None:
            rows = [(ev.time, ev.direction, ev) for ev in self._client.traffic.events]
            if self.webhook is not None:  # its push notifications, as they arrived
                rows += [
                    (ev.time, "in", ev)
                    for ev in self.webhook.traffic.events
                    if ev.task_id == task.id
                ]
            self.wire.value = _wire_html(sorted(rows, key=lambda row: row[0]))

    async def done(self) -> Task:
        """The task once it is terminal or waiting for input.

        Raises:
            ToolnexusError: the send failed (the one-line reason: unreachable, refused, not A2A).
        """
        return await asyncio.shield(self._settled)

    def cancel(self) -> asyncio.Task[Task]:
        """Ask the peer to cancel the task; ``await`` the result for the canceled Task."""
        return _schedule(self._cancel())

    async def _cancel(self) -> Task:
        if self.task is None:
            raise ConfigError("nothing to cancel yet: the task has not been created")
        async with A2AClient(self.url, headers=self.headers, bus=self._bus) as client:
            task = await client.cancel(self.task.id)
        self._show(task)
        return task

    def disconnect(self, reason: str) -> None:
        self.cancel_button.disabled = True

    def _repr_html_(self) -> str:
        return self.view.value


class CardWidget(w.VBox):
    """A peer's card with the validator's diagnostics and a button that opens a chat with it."""

    def __init__(
        self, url: str, headers: dict[str, str] | None = None, *, extended: bool = False
    ) -> None:
        self.url = url
        self.card: Any = None
        self.report: Any = None
        self.cost = ""
        """The card's size in model tokens, as ``toolnexus card --validate`` says it."""
        self.extended = extended
        """Show the extended card the headers' credentials get (GetExtendedAgentCard)."""
        self.view = w.HTML(f"<i>fetching {html.escape(url)}…</i>")
        self.chat_button = w.Button(description="chat", icon="comments", disabled=True)
        self.chat_area = w.VBox()
        self.chat_button.on_click(lambda _: self._open_chat())
        super().__init__([self.view, self.chat_button, self.chat_area])
        self.add_class("toolnexus-w")
        self._run = _schedule(self._fetch(headers))

    async def _fetch(self, headers: dict[str, str] | None) -> Any:
        try:
            if self.extended:
                async with A2AClient(
                    self.url, headers=headers, secret_headers=tuple(headers or ())
                ) as client:
                    self.card = await client.extended_card()
            else:
                self.card = await fetch_card(self.url, headers, verify=True)
        except Exception as exc:
            self.view.value = error_html(str(_failure(exc)))
            _hide(self.chat_button)  # nothing to chat with
            return None
        self.report = validate_card(self.card)
        self.view.value = STYLE + card_html(self.card, self.report)
        signatures = self.card.signatures
        if signatures is not None and signatures.state == "invalid":  # signed, and none verifies
            self.view.value += error_html(
                "its signature is not valid: no chat with a card that may be forged"
            )
            _hide(self.chat_button)
        else:
            self.chat_button.disabled = False
        card = self.card  # its size in tokens, as card --validate says it (counted on a thread)
        self.cost = (await counted("cost: card", lambda: card_cost(card.raw))).message
        self.view.value += f'<div class="toolnexus-muted">cost: {html.escape(self.cost)}</div>'
        return self.card

    async def done(self) -> Any:
        return await asyncio.shield(self._run)

    def _open_chat(self) -> None:
        self.chat_area.children = [ChatWidget(self.url)]


class _DoctorView:
    """What both doctor widgets do with their report: draw it as HTML in ``view`` as findings come,
    at most every :data:`REDRAW_EVERY` seconds however fast they come."""

    report: Any = None
    view: Any = None
    _redraw_pending = False

    def _found(self, report: DoctorReport) -> None:
        self.report = report
        if not self._redraw_pending:
            self._redraw_pending = True
            asyncio.get_running_loop().call_later(REDRAW_EVERY, self._draw)

    def _draw(self) -> None:
        self._redraw_pending = False
        if self.report is not None:
            self.view.value = STYLE + self.report.html()


class ClientDoctorWidget(_DoctorView, w.VBox):
    """``toolnexus doctor --client``: a strict local agent to point a client at (``url``), and the
    report on every request it sends, filling in as they come (every string escaped). Stop it with
    its button or ``await widget.stop()`` (what the client never tried is added; the report is
    returned)."""

    def __init__(self) -> None:
        self.url = ""
        self.report: Any = None
        self.doctor: Any = None
        self.head = w.HTML("<i>starting the client doctor…</i>")
        self.view = w.HTML("")
        self.stop_button = w.Button(description="stop", disabled=True)
        self.stop_button.on_click(lambda _: _schedule(self.stop()))
        super().__init__([w.HBox([self.head, self.stop_button]), self.view])
        self.add_class("toolnexus-w")
        self._run = _schedule(self._start())

    async def _start(self) -> Any:
        try:
            self.doctor = await start_client_doctor(on_finding=self._found)
        except Exception as exc:
            self.head.value = error_html(str(_failure(exc)))
            return None
        self.url = self.doctor.url
        self.report = self.doctor.report
        self.head.value = (
            f"point your A2A client at <code>{html.escape(self.url)}</code> "
            f"(card <code>{html.escape(self.doctor.card_url)}</code>)"
        )
        self.stop_button.disabled = False
        self._draw()
        return self.doctor

    async def stop(self) -> Any:
        """End it: the agent stops, the report is finished and returned."""
        doctor = await asyncio.shield(self._run)
        if doctor is None:
            return None
        self.stop_button.disabled = True
        self.report = await doctor.stop()
        self.head.value = f"stopped: it was at <code>{html.escape(self.url)}</code>"
        self._draw()
        return self.report


class DoctorWidget(_DoctorView, w.VBox):
    """``toolnexus doctor`` on a peer, as an HTML report (every peer string escaped) that fills in
    as the findings come; ``await widget.done()`` for the :class:`~toolnexus.debug.report.DoctorReport`."""

    def __init__(
        self, url: str, *, send: bool = False, headers: dict[str, str] | None = None
    ) -> None:
        self.url = url
        self.report: Any = None
        self.view = w.HTML(f"<i>probing {html.escape(url)}…</i>")
        super().__init__([self.view])
        self.add_class("toolnexus-w")
        self._run = _schedule(self._probe(send, headers))

    async def _probe(self, send: bool, headers: dict[str, str] | None) -> Any:
        try:
            self.report = await doctor(self.url, headers=headers, send=send, on_finding=self._found)
        except Exception as exc:
            # a redraw still pending must show the failure, not the findings before it
            self.report = None
            self.view.value = error_html(str(_failure(exc)))
            return None
        self._draw()
        return self.report

    async def done(self) -> Any:
        return await asyncio.shield(self._run)


class ChatWidget(w.VBox):
    """A small chat with a peer: the messages, a text box, the skill, a new-conversation button, a
    cancel button for the running task and a retry button after a lost connection. An
    ``input-required`` question shows under the messages with a box, ticked: the next message
    answers it, on the same task; untick it to start a new task while the question stays open. The
    chat itself is a :class:`~toolnexus.client.conversation.Conversation` (``conversation``), as in
    the TUI."""

    def __init__(self, url: str, headers: dict[str, str] | None = None) -> None:
        self.url = url
        self.headers = headers
        self.conversation = Conversation(peer=url)
        self.view = w.HTML("<i>say something</i>")
        self.text = w.Text(placeholder="message (enter sends)", layout=w.Layout(width="60%"))
        self.skill = w.Dropdown(options=[("any skill", "")], value="", description="skill")
        self.send_button = w.Button(description="send", button_style="primary")
        self.new_button = w.Button(description="new conversation")
        self.cancel_button = w.Button(description="cancel", icon="ban", disabled=True)
        self.retry_button = w.Button(description="retry", icon="redo", disabled=True)
        self.answer_box = w.Checkbox(
            value=True,
            description="the next message answers the question",
            indent=False,
            layout=w.Layout(display="none"),
        )
        self.answer_box.observe(self._on_answering, names="value")
        self.send_button.on_click(lambda _: self.say(self.text.value))
        self.new_button.on_click(lambda _: self.new_conversation())
        self.cancel_button.on_click(lambda _: self.cancel())
        self.retry_button.on_click(lambda _: self.retry())
        self.text.observe(
            self._on_enter, names="value"
        )  # ipywidgets 8: continuous_update handles enter
        self.text.continuous_update = False
        super().__init__(
            [
                self.view,
                self.answer_box,
                w.HBox([self.text, self.send_button]),
                w.HBox([self.skill, self.new_button, self.cancel_button, self.retry_button]),
            ]
        )
        self.add_class("toolnexus-w")
        self._sending: asyncio.Task[Any] | None = None
        _schedule(self._load_skills())

    @property
    def context_id(self) -> str | None:
        return self.conversation.context_id

    @property
    def waiting_task(self) -> str | None:
        return self.conversation.waiting_task

    @property
    def turns(self) -> list[Turn]:
        return self.conversation.turns

    def _on_answering(self, change: dict[str, Any]) -> None:
        self.conversation.answering = bool(change.get("new"))
        self._draw()

    def _on_enter(self, change: dict[str, Any]) -> None:
        if change.get("new"):
            self.say(change["new"])

    async def _load_skills(self) -> None:
        try:
            card = await fetch_card(self.url, self.headers)
        except Exception as exc:
            self.view.value = error_html(str(_failure(exc)))
            return
        self.skill.options = [("any skill", "")] + [
            (str(s.get("name") or s.get("id")), str(s.get("id"))) for s in card.skills
        ]

    def new_conversation(self) -> None:
        self.conversation = Conversation(peer=self.url)
        self._draw()

    def say(self, text: str) -> asyncio.Task[Any] | None:
        text = (text or "").strip()
        if not text:
            return None
        self.text.value = ""
        reply = self.conversation.say(text, self.skill.value or None)
        return self._run(reply)

    def retry(self) -> asyncio.Task[Any] | None:
        """After a lost connection: follow the cut task again, or send the message again."""
        reply = self.conversation.retry()
        return self._run(reply) if reply is not None else None

    def _run(self, reply: Turn) -> asyncio.Task[Any]:
        self._draw()
        self._sending = _schedule(self._exchange(self.conversation, reply))
        return self._sending

    def cancel(self) -> asyncio.Task[Any] | None:
        """Cancel the task the agent is working on (or waiting with)."""
        task_id = self.conversation.running
        if task_id is None:
            return None
        return _schedule(self._cancel(task_id))

    async def _cancel(self, task_id: str) -> None:
        try:
            async with A2AClient(self.url, headers=self.headers) as client:
                await self.conversation.cancel(client, task_id)
        except Exception as exc:
            self.conversation.turns.append(Turn("agent", str(_failure(exc)), state=TurnState.ERROR))
        self._draw()

    async def _exchange(self, conversation: Conversation, reply: Turn) -> None:
        client = A2AClient(
            self.url, headers=self.headers
        )  # it connects on the first call, inside run()
        try:
            await conversation.run(client, reply, on_change=lambda _: self._draw(), poll_every=0.1)
        finally:
            await client.aclose()

    async def wait(self) -> None:
        if self._sending is not None:
            await asyncio.shield(self._sending)

    def _draw(self) -> None:
        lines = []
        for turn in self.conversation.turns:
            who = "you" if turn.role == "user" else "agent"
            if turn.state in (TurnState.ERROR, TurnState.LOST):
                lost = (
                    " (connection lost: retry follows the task again)"
                    if turn.state is TurnState.LOST
                    else ""
                )
                lines.append(f"<div><b>{who}</b>: {error_html(turn.text + lost)}</div>")
                continue
            state = f" {badge(turn.task_state.value)}" if turn.task_state is not None else ""
            lines.append(
                f"<div><b>{who}</b>{state}: <span style='white-space:pre-wrap'>"
                f"{html.escape(turn.text.strip())}</span></div>"
            )
            sent = turn.parts if turn.role == "user" else turn.task.file_parts if turn.task else []
            lines += [  # named, never shown: the peer's bytes stay as sent
                f"<div style='color:#888'>+ {html.escape(p.label)}</div>"
                for p in sent[:20]
                if p.kind != "text"
            ]
            lines += [  # parts the card says the agent does not take: not sent
                f"<div style='color:#b58900'>⚠ {html.escape(note)}</div>" for note in turn.notes
            ]
        ctx, question = self.conversation.context_id, self.conversation.question
        if question is not None:
            task = html.escape((self.conversation.waiting_task or "")[:8])
            does = (
                "your next message answers it, on that task"
                if self.conversation.answering
                else "your next message starts a new task; the question stays open"
            )
            lines.append(
                f"<div><b>task {task} asks</b>: {html.escape(' '.join(question.split()))} "
                f"<small class='toolnexus-muted'>({does})</small></div>"
            )
        self.answer_box.layout.display = None if question is not None else "none"
        if self.answer_box.value != self.conversation.answering:
            self.answer_box.value = self.conversation.answering
        self.view.value = (
            STYLE
            + "".join(lines)
            + (f"<small class='toolnexus-muted'>context {html.escape(ctx)}</small>" if ctx else "")
        )
        self.cancel_button.disabled = self.conversation.running is None
        self.retry_button.disabled = self.conversation.lost is None
