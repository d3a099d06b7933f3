"""Events and the bus that carries them to the front ends and hooks.

Producers never block: :meth:`EventBus.publish` appends to each subscriber's bounded queue.
When a subscriber falls behind and its queue is full, a newer event of a task replaces the
older one still queued (coalescing: an event with a ``key`` replaces the one of the same key; an
event without one replaces none); when nothing can be coalesced the subscriber is dropped and its
iterator ends after a :class:`Dropped` notice.
"""

from __future__ import annotations

import asyncio
import collections
import inspect
import itertools
import logging
import threading
from collections.abc import AsyncGenerator, Callable, Collection, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .protocol.model import Task, TaskState, now_iso

if TYPE_CHECKING:
    from .llm.run import RunResult

__all__ = [
    "TaskEvent",
    "TextEvent",
    "ToolCallEvent",
    "TrafficEvent",
    "RemoteCallEvent",
    "ServerEvent",
    "Dropped",
    "EventBus",
    "Event",
    "Hook",
]

log = logging.getLogger("toolnexus.events")


@dataclass
class TaskEvent:
    """One transition of one task, hosted or watched.

    Attributes:
        seq: the bus's sequence number (set on publish).
        time: when it happened (ISO 8601, UTC).
        server: the hosted server's name, or the peer's URL for a watched remote task.
        previous: the state before (None for a new task).
        state: the state after.
        task: the task's value after the transition (shared with the store, never changed after).
        result: the run's RunResult on terminal and interrupted states.
        heard: another worker made this change (a shared store) and this one heard of it.
    """

    task_id: str
    context_id: str
    skill: str | None
    previous: TaskState | None
    state: TaskState
    task: Task
    server: str = ""
    result: RunResult | None = None
    time: str = field(default_factory=now_iso)
    seq: int = 0
    kind: str = "task"
    heard: bool = False

    @property
    def key(self) -> str:
        return self.task_id

    @property
    def size(self) -> int:
        """About the bytes this event holds (see :func:`size_of`): a settled task's texts and its
        run's result, counted once, on the event that ends the run; an earlier event shares them."""
        if not (self.state.terminal or self.state.interrupted):
            return 256
        task, size = self.task, 512  # counted in loops: a generator a list costs more than its sum
        for m in task.history:
            for p in m.parts:
                size += len(p.text or "")
        for a in task.artifacts:
            for p in a.parts:
                size += len(p.text or "")
        if self.result is not None:
            size += len(self.result.text)
            for m in self.result.messages:
                size += len(c) if isinstance(c := m.get("content"), str) else 256
        return size


@dataclass
class TextEvent:
    """A working task's reply as the model says it: the whole text so far, growing.

    Published at most every ``lifecycle.TEXT_EVERY`` seconds for a task (its first words at
    once), so a fast model costs a frame per interval, not per token. Each carries the whole
    text, so a reader that missed one misses nothing, and a newer one replaces an older one a
    slow reader has not taken yet; it is not kept in the bus's history (the next one, or the
    task's end, tells a late reader all). The text may start over (a model request retried, or
    a turn that went on to call tools): a text that does not begin with the one before replaces
    it. The reply is whole only when the task completes: its artifact (the same ``artifact_id``)
    is the answer.

    Attributes:
        artifact_id: the reply artifact's id, the same in the task once it completes.
        text: the reply so far.
        last: the model's answer is over (the task's end follows).
    """

    task_id: str
    context_id: str
    skill: str | None
    server: str
    artifact_id: str
    text: str
    last: bool = False
    time: str = field(default_factory=now_iso)
    seq: int = 0
    kind: str = "text"
    heard: bool = False

    @property
    def key(self) -> str:
        return "text:" + self.task_id

    @property
    def size(self) -> int:
        return 256 + len(self.text)


@dataclass
class ToolCallEvent:
    """One inbound MCP call on a hosted server: a tool called (``method`` ``tools/call``), a
    skill's prompt got (``prompts/get``) or a skill file read (``resources/read``, ``name`` its
    URI, ``output`` its type and size)."""

    server: str
    name: str
    source: str
    args: Any
    output: str
    is_error: bool
    ms: float
    method: str = "tools/call"
    time: str = field(default_factory=now_iso)
    seq: int = 0
    kind: str = "tool-call"


@dataclass
class TrafficEvent:
    """One HTTP exchange, inbound or outbound, with secrets already masked."""

    direction: str  # "in" | "out"
    method: str
    url: str
    status: int | None
    ms: float
    request_headers: dict[str, str]
    request_body: str
    response_headers: dict[str, str] = field(default_factory=dict)
    response_body: str = ""
    rpc_method: str | None = None
    peer: str = ""
    frames: list[str] = field(default_factory=list)
    error: str | None = None
    time: str = field(default_factory=now_iso)
    seq: int = 0
    kind: str = "traffic"
    task_id: str | None = None  # the A2A task the exchange is about, when it names one
    server: str | None = None  # for inbound exchanges: the served toolkit that answered
    by: str | None = (
        None  # for outbound ones made by a tool of the app's rather than its client: "doctor"
    )

    @property
    def size(self) -> int:
        """About the bytes this exchange holds: its bodies (each cut at ``traffic.BODY_CAP``)."""
        return 512 + len(self.request_body) + len(self.response_body) + sum(map(len, self.frames))


@dataclass
class RemoteCallEvent:
    """A hosted task's call to another agent (an A2A tool), published each time the remote task
    changes: the front ends show it under the task, and the remote task under it when they host
    that agent too (see :mod:`toolnexus.trace`).

    Attributes:
        server, task_id: the hosted server and its task that made the call.
        peer, url: the agent called (its card's name) and where.
        skill: the remote skill.
        remote_task_id: the task the peer made ("" until it answered).
        state: the remote task's state, or ``error`` (no task, or the call failed: see ``detail``).
        started: when the call began (ISO 8601, UTC); ``ms``: how long it has taken.
        trace_id, span_id, parent_span_id: the call's span; its parent is the calling task's span.
        done: the call is over (the remote task ended, or the call failed or was canceled).
    """

    server: str
    task_id: str
    peer: str
    url: str
    skill: str | None
    remote_task_id: str
    state: str
    started: str
    ms: float
    trace_id: str
    span_id: str
    parent_span_id: str | None = None
    done: bool = False
    detail: str = ""
    time: str = field(default_factory=now_iso)
    seq: int = 0
    kind: str = "remote-call"

    @property
    def key(self) -> str:
        return f"call:{self.span_id}"


@dataclass
class ServerEvent:
    """A hosted server started, stopped or failed."""

    server: str
    state: str  # "started" | "stopped" | "failed"
    url: str = ""
    detail: str = ""
    time: str = field(default_factory=now_iso)
    seq: int = 0
    kind: str = "server"


@dataclass
class Dropped:
    """The last item a dropped subscriber sees: it fell too far behind."""

    missed_from: int
    kind: str = "dropped"
    seq: int = 0


Event = (
    TaskEvent | TextEvent | ToolCallEvent | TrafficEvent | RemoteCallEvent | ServerEvent | Dropped
)


class _Subscription:
    def __init__(
        self,
        bus: EventBus,
        max_queue: int,
        accept: Callable[[Any], bool] | None,
        heard: bool = True,
        kinds: frozenset[str] | None = None,
    ) -> None:
        self.bus = bus
        self.kinds = kinds
        self.loop = asyncio.get_running_loop()
        self.max_queue = max_queue
        self.accept = accept
        self.queue: collections.deque[Any] = collections.deque()
        self.wake = asyncio.Event()
        self.dropped = False
        self.coalesced = 0
        self.heard = heard

    def push_many(self, events: Sequence[Any]) -> None:
        if (
            self.accept is None
            and not self.dropped
            and len(self.queue) + len(events) <= self.max_queue
        ):
            self.queue.extend(
                events
            )  # the common case: a reader that takes everything and keeps up
            self.wake.set()
            return
        for event in events:
            self.push(event)

    def push(self, event: Any) -> None:
        if self.dropped or (self.accept is not None and not self.accept(event)):
            return
        if len(self.queue) < self.max_queue:
            self.queue.append(event)
        else:
            key = getattr(event, "key", None)
            replaced = False
            if key is not None:
                for i in range(len(self.queue) - 1, -1, -1):
                    if getattr(self.queue[i], "key", None) == key:
                        del self.queue[i]
                        self.queue.append(event)
                        self.coalesced += 1
                        replaced = True
                        break
            if not replaced:
                first = self.queue[0].seq if self.queue else event.seq
                self.queue.clear()
                self.queue.append(Dropped(first))
                self.dropped = True
                self.bus._subs.discard(self)
                self.bus.dropped_subscribers += 1
        self.wake.set()


HISTORY_BYTES = 32 * 1024 * 1024
"""What a bus's history may hold, about, in bytes (``EventBus.history_bytes``)."""


def size_of(event: Any) -> int:
    """About how many bytes keeping ``event`` holds: its own ``size`` when it has one (bodies,
    texts), else a small event's."""
    size = getattr(event, "size", None)
    return size if type(size) is int else 256


class EventBus:
    """Fan-out of events to any number of subscribers; keeps the last ``history`` events for
    replay, and fewer when those would hold more than ``history_bytes`` (see :func:`size_of`):
    a history of large exchanges or long tasks is bounded in memory, not only in count."""

    def __init__(self, history: int = 1000, history_bytes: int = HISTORY_BYTES) -> None:
        self._subs: set[_Subscription] = set()
        self.dropped_subscribers = 0
        """Subscribers cut off so far for falling too far behind (each was told with ``Dropped``)."""
        self.taps: list[Callable[[Sequence[Any]], None]] = []
        """Called with every batch as it is published, in the publisher's thread: for counts that
        must cost next to nothing (``serve.metrics``); a tap must be quick and must not raise."""
        self._history: collections.deque[Any] = collections.deque()
        self._sizes: collections.deque[int] = (
            collections.deque()
        )  # each kept event's size_of, in order
        self._held = 0
        self.history_limit = history
        self.history_bytes = history_bytes
        self._seq = itertools.count(1)
        self.seq = 0
        """The ``seq`` of the newest event published (0 before the first): "from now on" for a reader."""
        self._lock = threading.Lock()

    def publish(self, event: Any) -> Any:
        """Stamp ``event`` with the next sequence number and hand it to every subscriber; never blocks.

        Safe from any thread: a subscriber on another event loop gets the event through that loop
        (a server in a thread feeding a notebook or a TUI on the main loop).
        """
        self.publish_many((event,))
        return event

    def publish_many(self, events: Sequence[Any]) -> None:
        """:meth:`publish` for a batch, in order: one lock and one wake-up per subscriber for all."""
        with self._lock:
            for event in events:
                event.seq = self.seq = next(self._seq)
            history, sizes = self._history, self._sizes
            for event in events:
                if event.kind == "text":  # a TextEvent: the next one tells a late reader all
                    continue
                history.append(event)
                size = size_of(event)
                sizes.append(size)
                self._held += size
            while len(history) > self.history_limit or (
                self._held > self.history_bytes and len(history) > 1
            ):
                history.popleft()
                self._held -= sizes.popleft()
            subs = list(self._subs)
        for tap in self.taps:
            tap(events)
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        for sub in subs:
            if sub.loop is here:
                sub.push_many(events)
            elif not sub.loop.is_closed():
                sub.loop.call_soon_threadsafe(sub.push_many, events)

    def history(self) -> list[Any]:
        return list(self._history)

    async def subscribe(
        self,
        *,
        replay: bool = True,
        max_queue: int = 1000,
        accept: Callable[[Any], bool] | None = None,
        heard: bool = True,
        kinds: Collection[str] | None = None,
    ) -> AsyncGenerator[Any, None]:
        """Events as they come: first the kept history (with ``replay``), then live ones.

        Args:
            max_queue: how many events may wait for this subscriber before coalescing starts.
            accept: a filter; events it rejects are never queued.
            heard: also the changes other workers made (a shared store; ``TaskEvent.heard``). A
                worker reads a task another worker changed only when someone wants them.
            kinds: only events of these kinds (``"task"``, ``"text"``, ...): a publisher skips
                making one no subscriber takes (:meth:`takes`), as a served task's words are
                when nobody reads them.
        """
        wanted = frozenset(kinds) if kinds is not None else None
        if wanted is not None:
            given_kind = accept
            accept = (
                (lambda e: e.kind in wanted)
                if given_kind is None
                else (lambda e: e.kind in wanted and given_kind(e))
            )
        if not heard:
            given = accept
            accept = (
                (lambda e: not getattr(e, "heard", False))
                if given is None
                else (lambda e: not getattr(e, "heard", False) and given(e))
            )
        sub = _Subscription(self, max_queue, accept, heard, wanted)
        with self._lock:
            if replay:
                for ev in self._history:
                    if accept is None or accept(ev):
                        sub.queue.append(ev)
            self._subs.add(sub)
        try:
            while True:
                while sub.queue:
                    ev = sub.queue.popleft()
                    yield ev
                    if isinstance(ev, Dropped):
                        return
                sub.wake.clear()
                await sub.wake.wait()
        finally:
            self._subs.discard(sub)

    @property
    def subscribers(self) -> int:
        return len(self._subs)

    def takes(self, kind: str) -> bool:
        """Whether a subscriber takes events of ``kind`` (see :meth:`subscribe`'s ``kinds``)."""
        return any(sub.kinds is None or kind in sub.kinds for sub in tuple(self._subs))

    def hears(self, kind: str | None = None) -> bool:
        """Whether a subscriber wants the changes other workers made (see :meth:`subscribe`);
        with ``kind``, the events of that kind among them."""
        return any(
            sub.heard and (kind is None or sub.kinds is None or kind in sub.kinds)
            for sub in tuple(self._subs)
        )


class Hook:
    """A user callback (sync or async) run in the background: its failure is logged, never raised,
    and a slow one never holds up the caller. ``close()`` gives late ones ``grace`` seconds."""

    def __init__(self, fn: Callable[[dict[str, Any]], Any] | None, name: str) -> None:
        self.fn = fn
        self.name = name
        self._running: set[asyncio.Task[None]] = set()

    def fire(self, payload: dict[str, Any]) -> None:
        if self.fn is None:
            return
        fn = self.fn

        async def call() -> None:
            try:
                out = fn(payload)
                if inspect.isawaitable(out):
                    await out
            except Exception:
                log.exception("%s hook failed", self.name)

        task = asyncio.ensure_future(call())
        self._running.add(task)
        task.add_done_callback(self._running.discard)

    async def close(self, grace: float = 1.0) -> None:
        if not self._running:
            return
        _, late = await asyncio.wait(list(self._running), timeout=grace)
        for task in late:
            task.cancel()
        await asyncio.gather(*late, return_exceptions=True)
