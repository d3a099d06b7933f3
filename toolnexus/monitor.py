"""What the front ends show, folded from the bus: the one view-model the TUI and the notebook share.

The TaskBook keeps, for every task seen on the bus (hosted or watched), its latest snapshot, the
timeline of its transitions and the run's telemetry; the counts by server and state; the
inbound MCP calls; and the remote calls hosted tasks made (``trace_tree`` nests them). No UI package here, so it tests plainly.
"""

from __future__ import annotations

import collections
import heapq
import json
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from . import _json
from .events import RemoteCallEvent, TaskEvent, TextEvent, ToolCallEvent, TrafficEvent
from .protocol.dialects import Dialect, render_task
from .protocol.model import Task, TaskState

__all__ = [
    "TaskView",
    "TaskBook",
    "STATE_STYLE",
    "ARROW",
    "parse_time",
    "short",
    "duration",
    "task_wire",
    "trace_tree",
    "outcome",
]

STATE_STYLE: dict[TaskState, tuple[str, str]] = {
    TaskState.SUBMITTED: ("·", "grey62"),
    TaskState.WORKING: ("⟳", "yellow"),
    TaskState.INPUT_REQUIRED: ("?", "magenta"),
    TaskState.AUTH_REQUIRED: ("?", "magenta"),
    TaskState.COMPLETED: ("✔", "green"),
    TaskState.FAILED: ("✘", "red"),
    TaskState.CANCELED: ("⊘", "grey50"),
    TaskState.REJECTED: ("✘", "red"),
    TaskState.UNKNOWN: ("·", "grey50"),
}

ARROW = {"out": "→", "in": "←"}
"""An exchange's direction as every front end draws it: ``→`` a request this side sent to a peer,
``←`` a request a peer sent to a hosted server (the TUI's Wire, a task's Wire tab, the notebook)."""


GRPC_STATUS = (
    "OK",
    "CANCELLED",
    "UNKNOWN",
    "INVALID_ARGUMENT",
    "DEADLINE_EXCEEDED",
    "NOT_FOUND",
    "ALREADY_EXISTS",
    "PERMISSION_DENIED",
    "RESOURCE_EXHAUSTED",
    "FAILED_PRECONDITION",
    "ABORTED",
    "OUT_OF_RANGE",
    "UNIMPLEMENTED",
    "INTERNAL",
    "UNAVAILABLE",
    "DATA_LOSS",
    "UNAUTHENTICATED",
)
"""gRPC's status names by their number (the ``grpc-status`` trailer), as its spec lists them."""


def outcome(ev: TrafficEvent) -> tuple[str, str]:
    """How an exchange ended, in its binding's own words, and how it went (``ok``, ``error``, or
    ``cut``: answered, then ended early): a JSON-RPC error's code (``-32601``, also inside a
    stream's frames), a gRPC status (``NOT_FOUND``), else the HTTP status (a JSON-RPC error
    comes with a 200, which says nothing of it)."""
    if ev.method == "STDIO":
        return ("err", "error") if ev.error else ("ok" if ev.response_body else "·", "ok")
    grpc = ev.response_headers.get("grpc-status")
    if grpc is not None:
        number = int(grpc) if grpc.isdigit() else -1
        name = GRPC_STATUS[number] if 0 <= number < len(GRPC_STATUS) else grpc
        return name, "ok" if number == 0 else "error"
    for body in (ev.response_body, *ev.frames[-1:]) if ev.rpc_method else ():
        code = _rpc_error(body)
        if code is not None:
            return code, "error"
    if ev.status is None:
        return ("err", "error") if ev.error else ("—", "ok")
    if ev.status >= 400:
        return str(ev.status), "error"
    return str(ev.status), "cut" if ev.error else "ok"


def _rpc_error(body: str) -> str | None:
    """The code of the JSON-RPC error ``body`` is, if it is one (parsed only when it may be)."""
    if '"error"' not in body[:4096]:
        return None
    data = _json.loads_or_none(body)
    error = data.get("error") if _json.is_object(data) else None
    if not _json.is_object(error):
        return None
    code = error.get("code")
    return str(code) if isinstance(code, int) and not isinstance(code, bool) else "error"


def parse_time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def short(ident: str, n: int = 8) -> str:
    return ident[:n] + "…" if len(ident) > n else ident


def duration(seconds: float | None) -> str:
    if seconds is None:
        return "—"
    if seconds < 1:
        return f"{seconds * 1000:.0f} ms"
    if seconds < 60:
        return f"{seconds:.1f} s"
    return f"{int(seconds // 60)}m{int(seconds % 60):02d}s"


@dataclass
class TaskView:
    """One task as the screens show it."""

    task: Task
    server: str
    timeline: list[tuple[TaskState, str]] = field(default_factory=list)
    result: Any = None
    ordinal: int = 0
    """Its place in the book (1, 2, ...): the order the book saw it in, but for a task a store
    kept, placed by its time among those seen before it (:meth:`TaskBook.keep`)."""
    known_skill: str | None = None
    """The skill any of its events named (a watched remote task's carry none)."""
    live: str = ""
    """While it works: its reply as the model says it (:class:`~toolnexus.events.TextEvent`),
    provisional; "" once it settles (its artifact is the answer)."""

    @property
    def id(self) -> str:
        return self.task.id

    @property
    def state(self) -> TaskState:
        return self.task.state

    @property
    def skill(self) -> str:
        return self.task.skill or self.known_skill or ""

    def started(self) -> datetime:
        return parse_time(self.timeline[0][1])

    def request(self) -> str:
        """What was asked: the text of the task's first user message, on one line."""
        first = next((m for m in self.task.history if m.role == "user"), None)
        return " ".join(first.text.split()) if first is not None else ""

    def took(self) -> float | None:
        """Seconds from submitted to the terminal (or interrupted) state; None while running."""
        if not (self.state.terminal or self.state.interrupted) or not self.timeline:
            return None
        return (parse_time(self.timeline[-1][1]) - self.started()).total_seconds()

    def tokens(self) -> int | None:
        return self.result.usage.total_tokens if self.result is not None else None

    def tool_calls(self) -> int | None:
        return self.result.tool_call_count if self.result is not None else None

    def timeline_rows(self) -> list[tuple[str, str, str]]:
        """``(time, state, time spent in the state before)`` per transition."""
        rows = []
        prev: datetime | None = None
        for state, stamp in self.timeline:
            at = parse_time(stamp)
            rows.append(
                (stamp[11:23], state.value, duration((at - prev).total_seconds()) if prev else "")
            )
            prev = at
        return rows

    def raw(self, dialect: Dialect) -> str:
        return json.dumps(render_task(self.task, dialect), indent=2, ensure_ascii=False)

    def export(self) -> dict[str, Any]:
        """Everything about the task, for a file."""
        out: dict[str, Any] = {
            "server": self.server,
            "timeline": [{"state": s.value, "time": t} for s, t in self.timeline],
            "task": {d.value: render_task(self.task, d) for d in Dialect},
        }
        if self.result is not None:
            out["telemetry"] = self.result.to_dict()
        return out


def trace_tree(book: TaskBook, task_id: str) -> list[tuple[int, str, Any]]:
    """The tree of a task's trace as rows ``(depth, kind, item)``, from its root task down: kind
    ``"task"`` (item: a TaskView of a hosted task) or ``"call"`` (item: the RemoteCallEvent of a
    remote call a task made). Under a call, the task it made when the book knows it (an agent the
    same front end hosts), and so on down every hop; a call to any other agent is a leaf."""
    view = book.tasks.get(task_id)
    if view is None:
        return []
    below: dict[str, list[TaskView]] = collections.defaultdict(
        list
    )  # call span -> the tasks it made
    for other in book.tasks.values():
        if other.task.trace is not None and other.task.trace.parent_id:
            below[other.task.trace.parent_id].append(other)
    calls: dict[str, list[RemoteCallEvent]] = collections.defaultdict(list)  # task -> its calls
    for call in book.remote_calls.values():
        calls[call.task_id].append(call)
    seen = {view.id}
    while (
        view.task.trace is not None and view.task.trace.parent_id in book.remote_calls
    ):  # up to the root
        parent = book.tasks.get(book.remote_calls[view.task.trace.parent_id].task_id)
        if parent is None or parent.id in seen:
            break
        seen.add(parent.id)
        view = parent
    rows: list[tuple[int, str, Any]] = []

    def walk(task: TaskView, depth: int, visited: set[str]) -> None:
        rows.append((depth, "task", task))
        for call in sorted(calls.get(task.id, ()), key=lambda c: c.started):
            rows.append((depth + 1, "call", call))
            for child in below.get(call.span_id, ()):
                if child.id not in visited and len(rows) < 1000:  # a loop or a huge tree stops here
                    walk(child, depth + 2, visited | {child.id})

    walk(view, 0, {view.id})
    return rows


def trace_traffic(book: TaskBook, task_id: str) -> list[tuple[TrafficEvent, str | None]]:
    """The exchanges of a task's trace (:func:`trace_tree`): those about each hosted task in it
    and each remote task its calls made, in the log's order, each with the URL of the hosted
    agent that made it when one did (an A2A tool's call; its URL as its own inbound exchanges
    show it), else None."""
    rows = trace_tree(book, task_id)
    hosted = {item.id for _, kind, item in rows if kind == "task"}
    made_by = {
        item.remote_task_id: item.server
        for _, kind, item in rows
        if kind == "call" and item.remote_task_id
    }
    where = {ev.server: ev.url for ev in book.traffic if ev.direction == "in" and ev.server}
    return [
        (ev, where.get(made_by[ev.task_id]) if ev.task_id in made_by else None)
        for ev in book.traffic
        if ev.task_id in hosted or ev.task_id in made_by
    ]


def task_wire(view: TaskView, traffic: Iterable[TrafficEvent]) -> list[tuple[str, str, Any]]:
    """A task's lifecycle and its wire on one timeline, oldest first: ``(time, kind, item)`` with
    kind ``"state"`` (item: the TaskState) or ``"in"`` / ``"out"`` (item: the TrafficEvent of an
    exchange about this task, received by a hosted server or sent to a peer)."""
    rows: list[tuple[str, str, Any]] = [(stamp, "state", state) for state, stamp in view.timeline]
    rows += [(ev.time, ev.direction, ev) for ev in traffic if ev.task_id == view.id]
    rows.sort(key=lambda row: row[0])
    return rows


class TaskBook:
    """Every task and inbound MCP call seen on the bus."""

    def __init__(
        self, keep_calls: int = 1000, keep_traffic: int = 2000, keep_remote: int = 10_000
    ) -> None:
        self.tasks: dict[str, TaskView] = {}
        self.calls: collections.deque[ToolCallEvent] = collections.deque(maxlen=keep_calls)
        self.remote_calls: dict[str, RemoteCallEvent] = {}
        """The latest of each remote call hosted tasks made (by the call's span id), oldest first."""
        self._keep_remote = keep_remote
        self.traffic: collections.deque[TrafficEvent] = collections.deque(maxlen=keep_traffic)
        self._counts: dict[str, collections.Counter[TaskState]] = collections.defaultdict(
            collections.Counter
        )

    def apply(self, event: TaskEvent) -> TaskView:
        """One task event into its view. A task both hosted here and chatted with (the same id, from
        the server and from the client that watches it) is one view: counted under the server it
        was first seen on, and its skill, which only the server knows, stays known when the client's
        events (no skill on the wire) come after."""
        view = self.tasks.get(event.task_id)
        if view is None:
            view = self.tasks[event.task_id] = TaskView(
                event.task, event.server, ordinal=len(self.tasks) + 1
            )
        else:
            self._counts[view.server][view.state] -= 1
        self._counts[view.server][event.task.state] += 1
        view.task = event.task
        view.known_skill = event.task.skill or event.skill or view.known_skill
        if not view.timeline or view.timeline[-1][0] is not event.state:
            view.timeline.append((event.state, event.time))
        if event.result is not None:
            view.result = event.result
        if event.state.terminal or event.state.interrupted:
            view.live = ""
        return view

    def keep(self, tasks: Iterable[Task], server: str) -> list[str]:
        """Tasks ``server``'s store kept from before it started (a file or PostgreSQL store, a
        relaunch: ``Workspace.kept``, oldest first) into the book, counted under ``server``, each
        as it was stored (its submission and its last state on its timeline); a task the bus has
        told of already stays as the bus told it (newer). The book stays in the tasks' own order:
        a kept task goes before the tasks seen already that started after it (one the bus told of
        while the store was being read, at a launch), which then move down. Returns the ids
        added."""
        last = next(reversed(self.tasks.values()), None)
        added: list[TaskView] = []
        for task in tasks:
            if task.id in self.tasks:
                continue
            view = self.tasks[task.id] = TaskView(task, server, ordinal=len(self.tasks) + 1)
            view.timeline.append((TaskState.SUBMITTED, task.created))
            if task.state is not TaskState.SUBMITTED and task.status.timestamp:
                view.timeline.append((task.state, task.status.timestamp))
            self._counts[server][task.state] += 1
            added.append(view)
        if last is not None and added and added[0].started() < last.started():
            self._place(added)
        return [view.id for view in added]

    def _place(self, added: list[TaskView]) -> None:
        """Views just appended, in time order, moved in among the tasks before them that started
        later (the book's tail: the others stay, and so does the order of those moved), their
        ordinals renumbered. Only that tail is walked: a launch's few live tasks, not the book."""
        first, fresh = added[0].started(), {view.id for view in added}
        later: list[TaskView] = []
        for view in reversed(self.tasks.values()):
            if view.id in fresh:
                continue
            if view.started() <= first:
                break
            later.append(view)
        later.reverse()
        base = len(self.tasks) - len(later) - len(added)
        for view in [*later, *added]:
            del self.tasks[view.id]
        for ordinal, view in enumerate(heapq.merge(later, added, key=TaskView.started), base + 1):
            view.ordinal = ordinal
            self.tasks[view.id] = view

    def words(self, event: TextEvent) -> TaskView | None:
        """A working task's reply as it grows; None for a task the book has not seen working."""
        view = self.tasks.get(event.task_id)
        if view is None or view.state is not TaskState.WORKING:
            return None
        view.live = event.text
        return view

    def remote(self, event: RemoteCallEvent) -> None:
        """Keep the latest state of a remote call (at most ``keep_remote`` calls, oldest dropped)."""
        self.remote_calls.pop(event.span_id, None)
        self.remote_calls[event.span_id] = event
        if len(self.remote_calls) > self._keep_remote:
            del self.remote_calls[next(iter(self.remote_calls))]

    def counts(self, server: str) -> collections.Counter[TaskState]:
        """Tasks of a server by state (kept as events arrive, not counted on every redraw)."""
        return self._counts[server]

    def held(self, server: str) -> int:
        """How many tasks the book holds under ``server``: a deleted server's stay, counted under
        its name, so a server given that name again shows them."""
        counts = self._counts.get(server)
        return sum(counts.values()) if counts else 0

    def matching(self, text: str) -> list[TaskView]:
        """Tasks matching a filter such as ``state:failed server:demo ctx:81c0 greet`` (words AND)."""
        words = text.split()
        return [view for view in self.tasks.values() if all(_match(view, w) for w in words)]

    def matches(self, view: TaskView, text: str) -> bool:
        """Whether one task matches a filter (see :meth:`matching`)."""
        return all(_match(view, w) for w in text.split())


def _match(view: TaskView, word: str) -> bool:
    key, sep, value = word.partition(":")
    value = value.lower()
    if sep and key == "state":
        return view.state.value.startswith(value)
    if sep and key == "server":
        return value in view.server.lower()
    if sep and key in ("ctx", "context"):
        return view.task.context_id.lower().startswith(value)
    if sep and key == "skill":
        return value in view.skill.lower()
    needle = word.lower()
    return (
        needle in view.id.lower()
        or needle in view.skill.lower()
        or needle in view.task.request.lower()
        or needle in view.server.lower()
    )
