"""What every task store keeps to: the contract (``TaskStore``), a page of a listing, who may see
a task, and a task as a stored record (the file and PostgreSQL stores write the same JSON)."""

from __future__ import annotations

import asyncio
import datetime
import logging
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..errors import StoreUnavailableError
from ..protocol.dialects import Dialect, parse_task, render_task
from ..protocol.model import (
    Artifact,
    Message,
    Part,
    Task,
    TaskState,
    TaskStatus,
    now_iso,
)
from ..protocol.tracecontext import TraceContext

__all__ = [
    "TaskPage",
    "TaskStore",
    "visible",
    "task_record",
    "task_from_record",
    "RECORD_DEPTH",
    "STATES",
    "when_available",
    "SETTLE_FOR",
]

SETTLE_FOR = 120.0
"""Seconds a run's writes wait for an unavailable store (see :func:`when_available`)."""

_T = TypeVar("_T")


async def when_available(write: Callable[[], Awaitable[_T]], what: str) -> _T:
    """``write()``, tried again while the store is unavailable (a database restarting, failing
    over): what a run produced (its task's states, its conversation) is written once the store is
    back, never dropped, for up to :data:`SETTLE_FOR` seconds (pauses from 0.25 s, doubling to
    5 s); past that the error is raised, and ``what`` is logged as lost."""
    waited, pause = 0.0, 0.25
    while True:
        try:
            return await write()
        except StoreUnavailableError:
            if waited >= SETTLE_FOR:
                log.error("%s: the store stayed unavailable for %gs; it is lost", what, waited)
                raise
            await asyncio.sleep(pause)
            waited, pause = waited + pause, min(pause * 2, 5.0)


log = logging.getLogger("toolnexus.serve")


class TaskPage:
    """One page of a task listing."""

    def __init__(self, tasks: list[Task], next_token: str, total: int) -> None:
        self.tasks = tasks
        self.next_token = next_token
        self.total = total


@runtime_checkable
class TaskStore(Protocol):
    """Where served tasks live. Every store keeps the same contract (tests/serve/test_stores.py)."""

    async def get(self, id: str) -> Task | None: ...

    async def save(self, task: Task) -> None:
        """Keep ``task``: a value the runner made (``Task.moved``) and never changes after, so a
        store may hold it as it is."""
        ...

    async def list(
        self,
        *,
        context_id: str | None = None,
        state: TaskState | None = None,
        updated_after: str | None = None,
        page_size: int = 50,
        page_token: str = "",
        owner: str | None = None,
    ) -> TaskPage:
        """Newest first. ``updated_after``: only tasks whose status changed at or after it (UTC, in
        ``now_iso`` form). ``owner``: only the tasks that owner may see (its own and unowned ones)."""
        ...


def visible(task_owner: str | None, caller: str | None) -> bool:
    """Whether a caller may see a task: the server itself and callers not told apart (None) see
    every task, a caller its own tasks and unowned ones."""
    return caller is None or task_owner is None or task_owner == caller


def page_of(
    tasks: list[Task],
    context_id: str | None,
    state: TaskState | None,
    updated_after: str | None,
    page_size: int,
    page_token: str,
    owner: str | None = None,
) -> TaskPage:
    """Newest first; the token is the offset into the filtered listing."""
    chosen = [
        t
        for t in tasks
        if (context_id is None or t.context_id == context_id)
        and visible(t.owner, owner)
        and (state is None or t.state is state)
        and (updated_after is None or (t.status.timestamp or "") >= updated_after)
    ]
    chosen.sort(key=lambda t: (t.created, t.id), reverse=True)
    start, end, next_token = window(len(chosen), page_size, page_token)
    return TaskPage(chosen[start:end], next_token, len(chosen))


def window(total: int, page_size: int, page_token: str) -> tuple[int, int, str]:
    """The slice a page covers, and the token of the next page ("" at the end)."""
    try:
        start = int(page_token) if page_token else 0
    except ValueError:
        raise ValueError("pageToken is not one this server gave out") from None
    if start < 0 or start > total:
        raise ValueError("pageToken is not one this server gave out")
    end = min(start + page_size, total)
    return start, end, str(end) if end < total else ""


def epoch(stamp: str) -> float:
    try:
        return datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return 0.0


def readable(id: str, read: Callable[[], Task]) -> Task | None:
    """``read()``, or None (reported) when the record cannot be read: one bad record never breaks
    a listing or a lookup of any other task."""
    try:
        return read()
    except Exception as exc:
        log.error(
            "task %s: its stored record cannot be read (%s: %s); skipped",
            id,
            type(exc).__name__,
            exc,
        )
        return None


RECORD_DEPTH = 200
"""The deepest stored record read back (orjson writes at most 255 levels)."""


def task_record(task: Task) -> dict[str, Any]:
    """A task as the file store writes it: the v0.3 rendering plus what never crosses the wire."""
    record = render_task(task, Dialect.V03)
    record["toolnexus"] = {"skill": task.skill, "request": task.request, "created": task.created}
    if task.owner is not None:
        record["toolnexus"]["owner"] = task.owner
    if task.trace is not None:
        record["toolnexus"]["trace"] = task.trace.to_dict()
    return record


def task_from_record(record: dict[str, Any]) -> Task:
    """A task from :func:`task_record` (or any v0.3-shaped task, through the lenient parser)."""
    extra = record.get("toolnexus")
    if extra is None:
        return parse_task(record)
    status = record["status"]
    message = status.get("message")
    return Task(
        record["id"],
        record["contextId"],
        TaskStatus(
            STATES[status["state"]], _message(message) if message else None, status.get("timestamp")
        ),
        [_message(m) for m in record.get("history", ())],
        [
            Artifact(
                [_part(p) for p in a["parts"]],
                a["artifactId"],
                a.get("name"),
                a.get("description"),
                a.get("metadata"),
            )
            for a in record.get("artifacts", ())
        ],
        record.get("metadata"),
        extra.get("skill"),
        extra.get("request") or "",
        extra.get("created") or now_iso(),
        extra.get("owner"),
        TraceContext.from_dict(extra.get("trace")),
    )


STATES = {s.value: s for s in TaskState}
"""A task state by its value."""


def _part(p: dict[str, Any]) -> Part:
    kind = p["kind"]
    if kind == "text":
        return Part("text", text=p["text"], metadata=p.get("metadata"))
    if kind == "data":
        return Part("data", data=p["data"], metadata=p.get("metadata"))
    f = p["file"]
    return Part(
        "file",
        raw=f.get("bytes"),
        url=f.get("uri"),
        media_type=f.get("mimeType"),
        filename=f.get("name"),
        metadata=p.get("metadata"),
    )


def _message(m: dict[str, Any]) -> Message:
    return Message(
        m["role"],
        [_part(p) for p in m["parts"]],
        m["messageId"],
        m.get("contextId"),
        m.get("taskId"),
        m.get("metadata"),
        m.get("referenceTaskIds"),
    )
