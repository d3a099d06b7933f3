"""What every task store keeps to: the contract (``TaskStore``), what a store may declare it can
do beyond it (``Durable``, ``KeepsEnded``, ``Shared``, ``JoinsConversations``, ``Closable``), a
kind of store as a user names it (``StoreKind``), a page of a listing, who may see a task, and a
task as a stored record (the file and PostgreSQL stores write the same JSON)."""

from __future__ import annotations

import abc
import asyncio
import datetime
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, runtime_checkable

from ..errors import StoreUnavailableError
from ..protocol.dialects import Dialect, parse_task, render_task
from ..protocol.model import Artifact, Message, Part, Task, TaskState, TaskStatus, now_iso
from ..protocol.tracecontext import TraceContext
from .conversations import ConversationStore

__all__ = [
    "TaskQuery",
    "EVERY_TASK",
    "TaskPage",
    "TaskStore",
    "Durable",
    "KeepsEnded",
    "Shared",
    "Link",
    "JoinsConversations",
    "Closable",
    "StoreKind",
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


@dataclass(frozen=True, kw_only=True)
class TaskQuery:
    """What a listing asks a store for (:meth:`TaskStore.list`): a page of the tasks that match,
    newest first. The server builds one per listing; a store reads it."""

    context_id: str | None = None
    state: TaskState | None = None
    updated_after: str | None = None
    """Only tasks whose status changed at or after it (UTC, in ``now_iso`` form)."""
    owner: str | None = None
    """Only the tasks that owner may see (its own and unowned ones, :func:`visible`); None: all."""
    page_size: int = 50
    page_token: str = ""
    """Where the page starts: "" the first, else the ``next_token`` of the page before."""


EVERY_TASK = TaskQuery()
"""The first page of every task: what ``list()`` lists when given no query."""


class TaskPage:
    """One page of a task listing."""

    def __init__(self, tasks: list[Task], next_token: str, total: int) -> None:
        self.tasks = tasks
        self.next_token = next_token
        self.total = total


@runtime_checkable
class TaskStore(Protocol):
    """Where served tasks live. Every store keeps the same contract (tests/serve/test_stores.py).

    What a store can do beyond it, it declares by listing the capability among its bases
    (:class:`Durable`, :class:`KeepsEnded`, :class:`Shared`, :class:`JoinsConversations`; or
    ``Durable.register(cls)``), or, for :class:`Closable`, by having its method: the server asks
    the store (``isinstance(store, Durable)``), never its class, and the shared store tests run
    each store against every capability it declares.
    """

    async def get(self, id: str) -> Task | None: ...

    async def save(self, task: Task) -> None:
        """Keep ``task``: a value the runner made (``Task.moved``) and never changes after, so a
        store may hold it as it is."""
        ...

    async def list(self, query: TaskQuery = EVERY_TASK) -> TaskPage:
        """A page of the tasks ``query`` asks for, newest first; a ``page_token`` this store did
        not give out is a ``ValueError``."""
        ...


# -- capabilities: what a store may do beyond the contract -------------------------------------


class Durable(abc.ABC):  # noqa: B024  # a mark: listed among a store's bases, or register()ed
    """Its tasks outlive the process (a folder, a database). A server that starts on a durable
    store that is not :class:`Shared` fails the tasks its last run left running, "interrupted by
    restart" (``TaskRunner.recover``); on a shared one a lapsed lease does (:class:`Shared`). Its
    calls wait on a disk or a network, so a served agent's metrics time them (a store in memory
    answers from a dict: timing costs more than the call)."""


class KeepsEnded(abc.ABC):  # noqa: B024  # a mark, as Durable
    """A task that ended stays as it ended (no retention): the runner may answer a poll of one
    that ended lately from the value it ended with, without asking the store
    (``TaskRunner._known``). A store that drops finished tasks (the memory store's ``keep_tasks``)
    does not declare it."""


class JoinsConversations(abc.ABC):
    """It keeps conversations too, where it keeps tasks (:meth:`conversations`), and writes a
    run's conversation in the same write as its task's last state (one round trip, one
    transaction) when the model client keeps its conversations there (:meth:`joins`). A server on
    it keeps the model client's conversations there, unless the client was given a store of its
    own."""

    @abc.abstractmethod
    def conversations(self) -> ConversationStore:
        """The conversations kept where this store keeps tasks."""

    @abc.abstractmethod
    def joins(self, conversations: object) -> bool:
        """Whether ``conversations`` (a ``ConversationStore``) keeps them where this store keeps
        tasks: then :meth:`save` with ``conversation`` writes both."""

    @abc.abstractmethod
    async def save(
        self, task: Task, conversation: tuple[str, list[dict[str, Any]]] | None = None
    ) -> None:
        """Keep ``task`` and, when given, ``conversation`` (its id and messages), whether or not
        the task's write is refused."""


class Link(Protocol):
    """What a :class:`Shared` store runs beside a server: it hears the other workers, and carries
    a reply's words between the worker that runs a task and one whose stream follows it."""

    async def start(self) -> None: ...

    async def stop(self) -> None: ...

    def want(self, task_id: str) -> None:
        """Ask the worker running ``task_id`` for its reply's words."""
        ...

    def words(
        self, task_id: str, context_id: str, artifact_id: str, offset: int, piece: str, last: bool
    ) -> None:
        """Announce a piece of a reply's text, at ``offset`` in it."""
        ...


class Shared(abc.ABC):
    """Every worker serving the agent (``--workers N``, several hosts) keeps its tasks here, and any
    of them answers for any task. A save over a version another worker wrote since it was read
    is refused (``StaleTaskError``). A running task is its worker's on a lease (:attr:`lease`);
    a task whose worker died is failed once its lease lapses (what a restart's recovery is for
    a store one process owns). A suspended run is kept with its task so that any worker resumes
    it, and push-notification configs so that any worker delivers them. The conversations must be
    shared too: a shared store also keeps them (:class:`JoinsConversations`), or each worker's
    model client is given a shared conversation store."""

    lease: float
    """Seconds a running task stays its worker's without a heartbeat (``A2AConfig.lease``)."""

    push_changes: dict[str, int]
    """How many times each task's push configs changed, as its last save here read it."""

    @abc.abstractmethod
    def link(self, runner: Any) -> Link:
        """What makes this process one worker of many: it hands ``runner`` (a ``TaskRunner``) the
        other workers' changes, renews the leases of what runs here and fails what lapsed."""

    @abc.abstractmethod
    async def save_pending(self, id: str, data: dict[str, Any]) -> None:
        """Keep a suspended run with its task."""

    @abc.abstractmethod
    async def take_pending(self, id: str) -> dict[str, Any] | None:
        """The suspended run of a task, taken (one worker only gets it), or None."""

    @abc.abstractmethod
    async def save_push(self, task_id: str, config_id: str, config: dict[str, Any]) -> None: ...

    @abc.abstractmethod
    async def delete_push(self, task_id: str, config_id: str) -> None: ...

    @abc.abstractmethod
    async def load_push(self, task_id: str) -> tuple[int, list[dict[str, Any]]]:
        """``(changes, configs)`` of a task's push configs."""


@runtime_checkable
class Closable(Protocol):
    """It holds something to let go of (a database's connections): the server closes it when it
    stops. Any store with this method is closed."""

    async def aclose(self) -> None: ...


# -- kinds: a store as a user names it --------------------------------------------------------


@dataclass(frozen=True)
class StoreKind:
    """A kind of task store that a user names with a string (``--store``, ``A2AConfig.store``, the
    TUI's server form, the notebook's ``--store``). ``toolnexus.stores.KINDS`` lists them: the
    parser (``open_store``), its error, every help text and the store tests read it."""

    name: str
    """What the help texts call it: ``"file"``, ``"PostgreSQL"``."""
    form: str
    """How a user writes one, in help texts: ``"file:DIR"``."""
    pattern: re.Pattern[str]
    """What a string of this kind matches (whole); its first group, if any, is what :attr:`open`
    is given."""
    store: type[Any]
    """The class it opens: what it can do (:class:`Durable`, :class:`Shared`, ...) is asked of it."""
    open: Callable[[str, int | None, float | None], TaskStore]
    """The store, from the string's first group (``"DIR"``) and the memory store's retention
    (``max_tasks``, ``max_age``), which a store that keeps every task ignores."""
    extra: str = ""
    """The ``pip install 'toolnexus[EXTRA]'`` it needs, if any."""

    def location(self, spec: str) -> str | None:
        """What :attr:`open` is given for ``spec``, or None when ``spec`` is not of this kind."""
        found = self.pattern.fullmatch(spec)
        if found is None:
            return None
        return found.group(1) if self.pattern.groups else ""


def visible(task_owner: str | None, caller: str | None) -> bool:
    """Whether a caller may see a task: the server itself and callers not told apart (None) see
    every task, a caller its own tasks and unowned ones."""
    return caller is None or task_owner is None or task_owner == caller


def page_of(tasks: list[Task], query: TaskQuery) -> TaskPage:
    """The page of ``tasks`` that ``query`` asks for, newest first; the token is the offset into
    the filtered listing."""
    chosen = [
        t
        for t in tasks
        if (query.context_id is None or t.context_id == query.context_id)
        and visible(t.owner, query.owner)
        and (query.state is None or t.state is query.state)
        and (query.updated_after is None or (t.status.timestamp or "") >= query.updated_after)
    ]
    chosen.sort(key=lambda t: (t.created, t.id), reverse=True)
    start, end, next_token = window(len(chosen), query.page_size, query.page_token)
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
                a.get("extensions"),
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
        m.get("extensions"),
    )
