"""The task lifecycle: the one place that moves a served task (TaskRunner); the tasks are kept in a
store (:mod:`toolnexus.stores`).

Every state change goes through :meth:`TaskRunner.transition`, which checks the move against
``LEGAL``, makes the task's next value (:meth:`Task.moved`: what did not change is shared with
the one before), saves it, publishes it in a :class:`TaskEvent` and wakes the waiters. The store,
the event and every reader hold that same value, never changed after; only the live task (the
object a run holds, ``_live``) follows the moves. A terminal state never changes; an illegal move
is refused and recorded nowhere.

Durable when told: a state a caller is told of (a send's answer, a stream's frame, a poll, a push
notification, a listing) is saved before it is told, and a state nobody is told of is written with
the next one somebody is. A blocking send's caller is told only once its task settles, so its
task's ``submitted`` and ``working`` are kept in memory (``_unsaved``) and written with the state it
settles in: one write to a file or a database, not three; a send answered at once writes its
``submitted`` and then the state it settles in, ``working`` only if a poll comes meanwhile. A task
that a stream or a webhook follows from its start is written at every move. With a shared store,
a state left unwritten for a heartbeat is written then (``write_behind``): another host's poll of a
task that runs for a while sees it ``working``. Anything that reads
such a task through the runner (``get``, ``list``, a blocking wait that times out) saves it first;
a poll that comes while a move is being saved waits for it (the live task may show a state that
move is about to replace unwritten), and a move whose write fails leaves what was unwritten as it
was, to be written when told.

Read where known: a poll of a task this worker runs is answered from the task it holds (saved at
each move it was told of; another worker's move is announced and adopted, see
``stores.postgres.WorkerLink``), and one that ended lately here from the value it ended with (an
ended task never changes): no store read. In-process observers (the event bus: the TUI, the notebook, ``toolnexus serve``'s log) see
every state as it happens; after a ``kill -9`` a task no caller was told of is gone, as its caller's
connection is.

Words as they come: a run's model says its reply in pieces (:class:`Reply`, the run's
:class:`~toolnexus.llm.run.TextSink`); they are told at most every :data:`TEXT_EVERY` seconds (the
first at once) or when :data:`TEXT_BYTES` wait, as a :class:`~toolnexus.events.TextEvent` with the
whole text so far, to the bus, the task's streams (as artifact updates: ``append``; the last one
whole, ``lastChunk``) and ``on_text``, and a poll of a working task shows it. They are never written: the
store gets the reply once, whole, as the completed task's artifact (the same ``artifact_id``),
with the state it completes in. A crash mid-reply leaves the task as its last written state
(``working``, or ``submitted``), failed at the next start or when its lease lapses; the words
said before it are gone with it. Push notifications carry states and the finished artifact, not
the words as they come (a POST per piece to every webhook would cost more than it tells).
"""

from __future__ import annotations

import asyncio
import collections
import logging
import math
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .. import trace
from .._json import is_object
from ..errors import (
    InvalidParamsError,
    MaxTurnsError,
    ModelError,
    PushNotificationNotSupportedError,
    StaleTaskError,
    StoreUnavailableError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ..events import EventBus, Hook, TaskEvent, TextEvent
from ..llm.run import Inbox
from ..protocol.model import (
    Artifact,
    Message,
    Part,
    Task,
    TaskState,
    TaskStatus,
    is_legal,
    new_id,
    now_iso,
)
from ..protocol.params import ListTasks, SendMessage
from ..skills import ToolkitLike, without
from ..stores import JoinsConversations, KeepsEnded, Link, Shared, TaskPage, TaskStore, visible
from ..stores.base import TaskQuery, when_available
from ..tools import AUTH, REJECT, Answer, Attachment
from .files import FileFetchError, TaskFiles, artifacts_of, reply_accepted

if TYPE_CHECKING:
    from ..llm import Client, RunResult
    from ..protocol.push import PushConfig
    from .push import PushNotifier

__all__ = ["TaskRunner", "OnTask", "Follow", "Reply", "STOPPED", "TEXT_EVERY", "TEXT_BYTES"]

log = logging.getLogger("toolnexus.serve")

OnTask = Callable[[dict[str, Any]], Any]


class Follow:
    """What a stream reads (:meth:`TaskRunner.listen`): each later transition of its task and its
    reply's text as it grows (a newer text replaces an older one not read yet: each holds all of
    it); None when this server stops before the task ends (:meth:`TaskRunner.stop_runs`): the
    stream ends there. Never blocks its writer."""

    __slots__ = ("_items", "_wake", "_timer", "_due", "_rung")

    def __init__(self) -> None:
        self._items: collections.deque[TaskEvent | TextEvent | None] = collections.deque()
        self._wake = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._due = 0.0  # when the wait under way times out (the loop's clock)
        self._rung = False  # it did

    def put_nowait(self, item: TaskEvent | TextEvent | None) -> None:
        items = self._items
        if item.__class__ is TextEvent and items:
            newest = items[-1]
            if newest.__class__ is TextEvent:
                items[-1] = item  # all its text and more
                return
        items.append(item)
        self._wake.set()

    async def get(self, timeout: float | None = None) -> TaskEvent | TextEvent | None:
        """The next item, at once when one waits (no suspension).

        Raises:
            TimeoutError: none came within ``timeout`` seconds. One timer a stream, moved on
                only when it rings (:meth:`_ring`): a frame costs no timer of its own, and a
                stream waits once per frame.
        """
        items = self._items
        if not items:
            wake = self._wake
            wake.clear()
            if timeout is None:
                while not items:
                    await wake.wait()
                    wake.clear()
            else:
                loop = asyncio.get_running_loop()
                self._due, self._rung = loop.time() + timeout, False
                timer = self._timer
                if timer is None or timer.when() > self._due:  # none, or set for a longer wait
                    if timer is not None:
                        timer.cancel()
                    self._timer = loop.call_at(self._due, self._ring)
                while not items:
                    await wake.wait()
                    wake.clear()
                    if self._rung and not items:
                        raise TimeoutError
        return items.popleft()

    def _ring(self) -> None:
        """The timer: the wait under way timed out, or began later (then the timer moves there)."""
        loop = asyncio.get_running_loop()
        if self._due > loop.time():
            self._timer = loop.call_at(self._due, self._ring)
            return
        self._timer, self._rung = None, True
        self._wake.set()

    def close(self) -> None:
        """Its stream ended: no timer left behind."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def qsize(self) -> int:
        return len(self._items)


def _adopt(task: Task, fresh: Task) -> None:
    """Make ``task`` (the object a run holds) what another worker stored."""
    task.status, task.history, task.artifacts = fresh.status, fresh.history, fresh.artifacts
    task.metadata, task.version = fresh.metadata, fresh.version
    task.trace = task.trace or fresh.trace


STOPPED = "the server stopped before this task finished: send it again"
"""Why a task still running when its server stopped failed (:meth:`TaskRunner.stop_runs`)."""

INBOX_LIMIT = 100
"""Messages that may wait for a working task's next model turn; more are refused (-32602)."""

ENDED_KEPT = 1024
"""How many of the tasks that ended here lately a poll is answered for without a store read."""

TEXT_EVERY = 0.02
"""A reply's words are told at most once every this many seconds per task (a model's first
words at once, and any that come after a pause as long): a fast model costs a frame per
interval, not per token; one as slow as a person reads, a frame per piece with no delay."""

TEXT_BYTES = 4096
"""...and as soon as this many characters wait, however soon after the last time."""

_EVERY = ListTasks()
"""A list that asks for no more than the first page of every task."""

WAKE_EVERY = 0.05
"""A wait with a timeout (a blocking send's) ends at the first multiple of this many seconds past
its deadline: one timer wakes every wait due in that interval. A timer per wait
(``asyncio.timeout``) was the costliest single step of a blocking send (``bench/README.md``)."""


def _skill_loaded(result: RunResult) -> Any:
    """The skill a run loaded: its first ``skill`` tool call's name, else None."""
    return next(
        (
            c["args"].get("name")
            for c in result.tool_calls
            if c["name"] == "skill" and is_object(c.get("args"))
        ),
        None,
    )


class Reply:
    """A run's reply as its model says it: the :class:`~toolnexus.llm.run.TextSink` the runner
    gives the model loop. Pieces are held and told together (see :data:`TEXT_EVERY`); a turn that
    was provisional, or a request tried again, starts the text over at its next piece."""

    __slots__ = (
        "runner",
        "task",
        "artifact_id",
        "told",
        "held",
        "size",
        "restart",
        "last_told",
        "timer",
        "loop",
    )

    def __init__(self, runner: TaskRunner, task: Task) -> None:
        self.runner = runner
        self.task = task
        self.artifact_id = new_id()
        self.told = ""  # the text callers were told
        self.held: list[str] = []  # said since, not told yet
        self.size = 0
        self.restart = False  # the next piece starts the text over
        self.loop = asyncio.get_running_loop()
        self.last_told = -math.inf
        self.timer: asyncio.TimerHandle | None = None

    def text(self, piece: str) -> None:
        if self.restart:
            self.restart, self.told = False, ""
        self.held.append(piece)
        self.size += len(piece)
        if self.timer is None:
            due = self.last_told + TEXT_EVERY
            if self.size >= TEXT_BYTES or self.loop.time() >= due:
                self.tell()
            else:
                self.timer = self.loop.call_at(due, self.tell)
        elif self.size >= TEXT_BYTES:
            self.tell()

    def retry(self) -> None:
        self.stop()
        self.held.clear()
        self.size = 0
        self.restart = bool(self.told)

    def end(self, final: bool) -> None:
        self.tell(last=final)
        if not final:
            self.restart = bool(self.told)

    def tell(self, last: bool = False) -> None:
        """Tell what is held (``last``: and that the answer is over)."""
        self.stop()
        if self.held:
            self.told += "".join(self.held)
            self.held.clear()
            self.size = 0
        elif not (last and self.told):
            return
        self.last_told = self.loop.time()
        self.runner.said(self, last)

    def stop(self) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None

    def artifact(self) -> Artifact:
        """The reply so far, as the artifact it will be."""
        return Artifact([Part.of_text(self.told)], self.artifact_id, name="reply")


class TaskRunner:
    """Creates, runs, answers and cancels the tasks of one served toolkit."""

    def __init__(
        self,
        *,
        toolkit: ToolkitLike,
        client: Client | None,
        store: TaskStore,
        bus: EventBus,
        server: str,
        on_task: OnTask | None = None,
        on_text: OnTask | None = None,
    ) -> None:
        self.toolkit = toolkit
        self.client = client
        self.store = store
        self.bus = bus
        self.server = server
        self.on_task = Hook(on_task, "on_task")
        self.on_text = Hook(on_text, "on_text")
        self._replies: dict[str, Reply] = {}  # the replies of the runs here, as they are said
        self._wanted: dict[str, str] = {}  # runs here whose words a stream elsewhere follows: what
        # was announced of them (see stores.postgres.WorkerLink)
        self._heard_words: dict[str, tuple[str, str]] = {}  # followed here, run elsewhere: the
        # reply as heard (its artifact id, its text)
        self._locks: dict[str, asyncio.Lock] = {}
        self._changed: dict[str, asyncio.Event] = {}
        # a WAKE_EVERY interval -> its timer, and the tasks waited on until then (how many waits each)
        self._due: dict[int, tuple[asyncio.TimerHandle, dict[str, int]]] = {}
        self._runs: dict[str, asyncio.Task[None]] = {}
        self._pending: dict[str, RunResult] = {}
        self._inboxes: dict[str, Inbox] = {}  # messages for a task's run, sent while it works
        self._watchers: dict[str, list[Follow]] = {}
        self._hooks: set[asyncio.Future[None]] = set()
        self._live: dict[
            str, Task
        ] = {}  # tasks this worker holds in flight (their runs' own objects)
        self._heard: collections.OrderedDict[str, TaskState] = (
            collections.OrderedDict()
        )  # other workers' latest
        self._quiet: set[str] = (
            set()
        )  # tasks whose states are written only when told (see the module's doc)
        self._unsaved: dict[str, Task] = {}  # quiet tasks whose latest state is not written yet
        self._ends_kept = isinstance(store, KeepsEnded)  # see TaskRunner._known
        # a store that writes a run's conversation with its task's last state (one statement)
        self._joint: JoinsConversations | None = None
        if isinstance(store, JoinsConversations) and client is not None:
            self._joint = store if store.joins(client.store) else None
        # a store every worker shares: a suspended run is kept with its task, for any of them
        self._shared: Shared | None = store if isinstance(store, Shared) else None
        self._aging: set[str] = set()  # those of them already unwritten at the last write_behind()
        self._ended: collections.OrderedDict[str, Task] = (
            collections.OrderedDict()
        )  # the last ENDED_KEPT ended here
        self._stopping = False  # a stop's drain is over: waits return what they have
        self.link: Link | None = None
        """The shared store's link to the other workers (``Shared.link``), when there is one."""
        self.push: PushNotifier | None = None
        """Where changes of tasks with push-notification configs go (None: the agent has none)."""
        self.files: TaskFiles | None = None
        """The callers' files: each task's folder, fetched URLs (None: files are not taken)."""
        self._accepts: dict[str, tuple[str, ...]] = {}  # a send's acceptedOutputModes, by task
        # the skills a task's caller may not use (their security requirements), by task
        self._hidden: dict[str, frozenset[str]] = {}

    # -- the one way a task changes -----------------------------------------------------------
    async def transition(
        self,
        task: Task,
        state: TaskState,
        *,
        message: Message | None = None,
        artifacts: list[Artifact] | None = None,
        history: list[Message] | None = None,
        result: RunResult | None = None,
        new: bool = False,
        conversation: tuple[str, list[dict[str, Any]]] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> Task | None:
        """Move ``task`` to ``state`` if the move is legal: save, wake waiters, publish. Returns the
        task's new value (see :meth:`Task.moved`), None if the move was refused. ``message``: the
        state's message (why it failed, what it asks), also added to its history as the agent's
        last message (clients that read a task's text from its history, not its status: Microsoft
        Agent Framework's and a2a-handler's). ``conversation``:
        written in the same statement as this move (a store that :attr:`_joint` said joins them);
        ``metadata``: keys set on the task's metadata by this move (a request's, answering it).

        The live task (the object this worker's run of it holds, :attr:`_live`) takes the new
        value's status, lists and version once it is saved; a task passed in that is not live (a
        value a store handed back) is never changed. ``new`` marks the first record of a task (its
        move from nothing to ``submitted``).
        """
        lock = self._locks.get(task.id)
        if lock is None:
            lock = self._locks[task.id] = asyncio.Lock()
        async with lock:
            live = self._live.get(task.id)
            if live is not None and live is not task and live.version >= task.version:
                task = live  # what this worker holds is as new as what was read: move that
            for _ in range(5):
                before = None if new else task.status.state
                if not is_legal(before, state):
                    log.debug("task %s: refused move %s -> %s", task.id, before, state)
                    return None
                stamp = now_iso()
                said = [*(history or ()), message] if message is not None else history
                value = task.moved(TaskStatus(state, message, stamp), said, artifacts, metadata)
                if await self._write(task, value, state, conversation):
                    break
                fresh = await self.store.get(task.id)
                if fresh is None:
                    return None
                was = task.status
                _adopt(task, fresh)  # a live task, or a private read of a shared store
                if (
                    fresh.state is state
                    and not state.terminal
                    and fresh.status.timestamp != was.timestamp
                ):
                    return fresh  # our own write, whose answer was lost with the connection
            else:
                log.warning(
                    "task %s: gave up moving it to %s after 5 writes by other workers",
                    task.id,
                    state.value,
                )
                return None
            await self._announce(task, value, before, state, stamp, result, artifacts, new)
        return value

    async def _write(
        self,
        task: Task,
        value: Task,
        state: TaskState,
        conversation: tuple[str, list[dict[str, Any]]] | None,
    ) -> bool:
        """:meth:`transition`'s write of ``value``: saved (with ``conversation`` when the store
        joins them), or kept unsaved while its caller is quiet. False: another worker moved the
        task first (:class:`StaleTaskError`)."""
        quiet, unsaved = task.id in self._quiet, None
        try:
            if quiet:
                if not (state.terminal or state.interrupted):
                    self._unsaved[task.id] = value  # written when told (see the module's doc)
                    return True
                self._quiet.discard(task.id)  # settled: its caller is told now, and of all after
                unsaved = self._unsaved.pop(task.id, None)
            if conversation is not None and self._joint is not None:
                await self._joint.save(value, conversation)
            else:
                await self.store.save(value)
            return True
        except StaleTaskError:  # another worker moved it first: take that, decide again
            return False
        except (
            BaseException
        ):  # not written (the store away): what was unwritten stays so, and known
            if quiet:
                self._quiet.add(task.id)
                if unsaved is not None:
                    self._unsaved[task.id] = unsaved
            raise

    async def _announce(
        self,
        task: Task,
        value: Task,
        before: TaskState | None,
        state: TaskState,
        stamp: str,
        result: RunResult | None,
        artifacts: list[Artifact] | None,
        new: bool,
    ) -> None:
        """:meth:`transition`'s news of a saved move: the live task takes ``value``; the bus, the
        task's watchers and its push configs hear it; an ended task is forgotten here."""
        if new or task is self._live.get(task.id):
            task.status, task.history, task.artifacts = (
                value.status,
                value.history,
                value.artifacts,
            )
            task.metadata, task.version = value.metadata, value.version
        event = TaskEvent(
            task.id,
            task.context_id,
            task.skill,
            before,
            state,
            value,
            self.server,
            result,
            stamp,
        )
        self.bus.publish(event)
        for q in self._watchers.get(task.id, ()):
            q.put_nowait(event)
        if self.push is not None:  # a task without configs costs one dict lookup
            if self.push.shared is not None:  # shared by workers: configs set on any of them
                try:
                    await self.push.sync(task.id)
                except Exception as exc:  # the move is saved and told; its notification may miss
                    log.warning("task %s: its push configs could not be read: %s", task.id, exc)
            self.push.notify(value, artifacts or [])
        changed = self._changed.pop(task.id, None)
        if changed is not None:
            changed.set()
        if state.terminal:
            self._forget(task.id)
            self._keep_ended(value)
        if state.terminal or state.interrupted:
            self._fire_on_task(value, state, result)

    def _keep_ended(self, value: Task) -> None:
        if not self._ends_kept:  # a store that may drop it (retention): asked every time
            return
        self._ended[value.id] = value
        if len(self._ended) > ENDED_KEPT:
            self._ended.popitem(last=False)

    def _forget(self, task_id: str) -> None:
        """Drop what this worker kept for a task in flight, once it ended (here or on another worker)."""
        self._quiet.discard(task_id)
        self._locks.pop(task_id, None)
        self._pending.pop(task_id, None)
        self._inboxes.pop(task_id, None)  # e.g. left over by a suspended run, then canceled
        self._live.pop(task_id, None)
        reply = self._replies.pop(task_id, None)
        if reply is not None:
            reply.stop()
        self._wanted.pop(task_id, None)
        self._heard_words.pop(task_id, None)

    def _stop_here(
        self, task: Task, run: asyncio.Task[None] | None, waiting: RunResult | None, canceled: bool
    ) -> None:
        """Stop this worker's run of a task that ended; when it was canceled, also the remote task
        whose question its suspended run waits on (the tool's ``Request.on_cancel``)."""
        if run is not None and not run.done():
            run.cancel()
        hook = (
            waiting.pending.on_cancel
            if waiting is not None and waiting.pending is not None
            else None
        )
        if canceled and hook is not None:
            self._start_hook(task, hook)

    def _fire_on_task(self, task: Task, state: TaskState, result: RunResult | None) -> None:
        if self.on_task.fn is None:  # no hook: not even its payload is made
            return
        self.on_task.fire(
            {
                "id": task.id,
                "skill": task.skill,
                "task": task.request,
                "result": result,
                "state": state.value,
                "context_id": task.context_id,
            }
        )

    def said(self, reply: Reply, last: bool) -> None:
        """Tell a reply's words: the bus, the task's streams, ``on_text``."""
        task = reply.task
        if task.state is not TaskState.WORKING or self._replies.get(task.id) is not reply:
            return  # a run whose task moved on (canceled) says nothing more
        watchers = self._watchers.get(task.id)
        to_bus = self.bus.takes("text")
        if watchers or to_bus:
            event = TextEvent(
                task.id,
                task.context_id,
                task.skill,
                self.server,
                reply.artifact_id,
                reply.told,
                last,
            )
            if to_bus:
                self.bus.publish(event)
            for q in watchers or ():
                q.put_nowait(event)
        if task.id in self._wanted:
            self._announce_words(reply, last)
        if self.on_text.fn is not None:
            self.on_text.fire(
                {
                    "id": task.id,
                    "context_id": task.context_id,
                    "skill": task.skill,
                    "text": reply.told,
                    "last": last,
                }
            )

    def _announce_words(self, reply: Reply, last: bool) -> None:
        """Tell the other workers following this run what its reply says since the last time."""
        before, text = self._wanted.get(reply.task.id, ""), reply.told
        offset = len(before) if text.startswith(before) else 0  # else it started over
        self._wanted[reply.task.id] = text
        if self.link is not None and (text[offset:] or last):
            task = reply.task
            self.link.words(
                task.id, task.context_id, reply.artifact_id, offset, text[offset:], last
            )

    def wanted(self, task_id: str) -> bool:
        """A stream on another worker follows a task: if it runs here, its reply so far is
        announced now and each later piece as it is told. Whether it runs here."""
        reply = self._replies.get(task_id)
        if reply is None:
            if task_id not in self._runs:
                return False
            self._wanted[task_id] = ""  # its run has not begun its reply yet: from its first word
            return True
        self._wanted[task_id] = ""
        if reply.told and reply.task.state is TaskState.WORKING:
            self._announce_words(reply, False)
        return True

    def hears_words(self, task_id: str) -> bool:
        """Whether another worker's words of ``task_id`` go anywhere here (a stream, the bus)."""
        return task_id in self._watchers or self.bus.hears("text")

    def heard_words(
        self, task_id: str, context_id: str, artifact_id: str, offset: int, piece: str, last: bool
    ) -> None:
        """Another worker's run says more of its reply (the text from ``offset`` on begins with
        ``piece``): told to this worker's streams of the task and its bus, as its own words are."""
        if not self.hears_words(task_id):
            return
        watchers = self._watchers.get(task_id)
        known, text = self._heard_words.get(task_id, (artifact_id, ""))
        if known != artifact_id:
            text = ""
        if offset > len(text):
            return  # joined after this piece's start: the reply so far comes when it was asked for
        text = text[:offset] + piece
        self._heard_words[task_id] = (artifact_id, text)
        if len(self._heard_words) > 10_000:
            del self._heard_words[next(iter(self._heard_words))]
        event = TextEvent(
            task_id, context_id, None, self.server, artifact_id, text, last, heard=True
        )
        if self.bus.takes("text"):
            self.bus.publish(event)
        for q in watchers or ():
            q.put_nowait(event)

    # -- create and run -----------------------------------------------------------------------
    async def send(
        self,
        request: SendMessage,
        *,
        owner: str | None = None,
        follow: bool = False,
        hidden: frozenset[str] = frozenset(),
    ) -> tuple[Task, Follow | None]:
        """The send operation, whatever the binding: a message without ``taskId`` creates a task
        (for the request's ``skill``, when it names one); with one, it answers the task's question
        or reaches its running model at the next turn. The request's ``metadata`` (not the
        message's) is kept on the task: a new task's metadata, keys set on a task the message goes
        to. Its ``push`` (checked by the caller) is registered for the task before anything can
        change it (a new task's webhook hears its first state too); ``blocking``: the caller is
        answered only once the task settles (:meth:`wait`), so a new task's states before that are
        written with the one it settles in; ``accepted``: the media types the caller takes
        (``acceptedOutputModes``): its reply and its tools' artifacts of other types are left out.
        ``follow``: the queue of its changes from now on, for a stream. ``hidden``: the skills a new
        task's caller may not use: its model is not offered them (:func:`toolnexus.skills.without`).

        Raises:
            TaskNotFoundError: ``taskId`` names no task the caller may see.
            InvalidParamsError: ``contextId`` is not the task's, or its inbox is full.
            UnsupportedOperationError: the task is finished, or finishing, and takes no message.
        """
        message, push, metadata = request.message, request.push, request.metadata
        if message.task_id:
            try:
                task = await self.get(message.task_id, owner)
            except TaskNotFoundError:
                raise TaskNotFoundError(f"Task not found: {message.task_id}") from None
            if message.context_id and message.context_id != task.context_id:
                raise InvalidParamsError(
                    f"message.contextId {message.context_id} does not match the context of task {task.id}"
                )
            queue = self.listen(task.id) if follow else None
            if push is not None:
                await self._register(push, task)
            if task.state.interrupted:
                task = await self.answer(task, message, metadata)
            elif await self.tell(task, message, metadata):
                task = self._live.get(task.id, task)  # what a blocking send waits on
            else:  # a working task takes it at its next turn
                if queue is not None:
                    self.unlisten(task.id, queue)
                why = (
                    "is already "
                    + task.state.value
                    + "; send a new message without taskId to start a new task"
                    if task.state.terminal
                    else "is finishing; send a new message without taskId"
                )
                raise UnsupportedOperationError(f"Task {task.id} {why}")
            return task, queue
        skill = request.skill
        prompt = f"Use the {skill} skill.\n\n{message.text}" if skill else message.text
        task = await self.create(
            message,
            skill,
            prompt,
            owner,
            answered=not request.blocking,
            followed=follow,
            push=push,
            metadata=metadata,
            accepted=request.accepted,
            hidden=hidden,
        )
        # no await since the run was scheduled: the task is still 'submitted' here
        queue = self.listen(task.id) if follow else None
        return task, queue

    async def _register(self, push: PushConfig, task: Task) -> PushNotifier:
        if self.push is None:
            raise PushNotificationNotSupportedError(
                "Push notifications are not supported by this agent"
            )
        push.task_id = task.id
        await self.push.keep(self.push.set(push))
        return self.push

    async def create(
        self,
        message: Message,
        skill: str | None,
        prompt: str,
        owner: str | None = None,
        *,
        answered: bool = True,
        followed: bool = False,
        push: PushConfig | None = None,
        metadata: dict[str, Any] | None = None,
        accepted: Sequence[str] | None = None,
        hidden: frozenset[str] = frozenset(),
    ) -> Task:
        """A new ``submitted`` task for ``message`` (``metadata``: its own), its run started.
        Returns the task itself.
        ``answered``: its caller is told of this first state now (False: a blocking send, told
        once it settles); ``followed``: a stream follows each of its states from this one;
        ``push``: registered, and told of this first state, before the run can move it (keeping
        a config may wait on a database: a run started first would be told of twice). Unless a
        stream or a webhook follows it, a later state is written only once somebody is told of
        it (see the module's doc)."""
        minted = not message.context_id
        context = message.context_id or new_id()
        caller = trace.incoming.get()
        task = Task(
            new_id(),
            context,
            TaskStatus(TaskState.SUBMITTED),
            metadata=metadata,
            skill=skill,
            request=message.text,
            owner=owner,
            trace=caller.child() if caller is not None else None,
        )
        message.context_id, message.task_id = context, task.id
        quiet = push is None and not followed
        if quiet and not answered:
            self._quiet.add(task.id)
        await self.transition(task, TaskState.SUBMITTED, history=[message], new=True)
        if quiet and answered:  # written: the send's answer tells it
            self._quiet.add(task.id)
        self._live[task.id] = task
        self._inboxes[task.id] = Inbox()
        if accepted:
            self._accepts[task.id] = tuple(accepted)
        if hidden:
            self._hidden[task.id] = hidden
        try:
            if push is not None:  # its webhook hears of every state, this first one too
                notifier = await self._register(push, task)
                notifier.notify(task.snapshot(), [])
        finally:  # a config that could not be kept fails the call, not the task
            self._start(task, self._fulfil(task, prompt, None, new_context=minted, message=message))
        return task

    def _toolkit(self, task: Task) -> ToolkitLike:
        """The toolkit as ``task``'s caller may use it: without the skills it may not."""
        return without(self.toolkit, self._hidden.get(task.id, frozenset()))

    async def tell(
        self, task: Task, message: Message, metadata: dict[str, Any] | None = None
    ) -> bool:
        """A message for a task that is working: kept in its history where it arrived (its
        request's ``metadata`` on the task) and given to the model before its next turn. False
        when the run is past reading it (answering, done)."""
        inbox = self._inboxes.get(task.id)
        if inbox is None or inbox.closed or task.state.terminal or task.state.interrupted:
            return False
        if len(inbox) >= INBOX_LIMIT:
            raise InvalidParamsError(
                f"task {task.id} already has {len(inbox)} messages waiting for its next turn"
            )
        message.context_id, message.task_id = task.context_id, task.id
        inbox.append(message.text)
        async with self._locks.setdefault(task.id, asyncio.Lock()):
            live = self._live.get(task.id, task)
            value = live.moved(live.status, [message], metadata=metadata)
            await self.store.save(value)
            if live is self._live.get(task.id):
                live.history, live.metadata = value.history, value.metadata
                live.version = value.version
        return True

    def _hold(self, task: Task) -> Task:
        """This worker's live object for ``task`` (a value a store handed back, never changed):
        brought up to its version, or made when there is none."""
        live = self._live.get(task.id)
        if live is None:
            live = self._live[task.id] = task.moved(task.status)
        elif live.version < task.version:
            _adopt(live, task)
        return live

    async def answer(
        self, task: Task, message: Message, metadata: dict[str, Any] | None = None
    ) -> Task:
        """Resume an interrupted task with the user's ``message`` (its request's ``metadata`` set
        on the task). Returns the live task, which follows its run from here."""
        message.context_id, message.task_id = task.context_id, task.id
        pending = self._pending.pop(task.id, None)
        if (
            self._shared is not None and self.client is not None
        ):  # shared: one worker claims the suspended run
            stored = await self._shared.take_pending(task.id)
            if stored is None and task.state.interrupted:
                raise InvalidParamsError(f"task {task.id} is already being answered")
            if pending is None and stored is not None:
                pending = self.client.restore(stored, self._toolkit(task))  # suspended elsewhere
        held = task.id in self._live
        task = self._hold(task)
        if not await self.transition(task, TaskState.WORKING, history=[message], metadata=metadata):
            if not held:
                self._live.pop(task.id, None)
            raise InvalidParamsError(f"the task is {task.state.value}, no longer waiting for input")
        # messages that came in as the run suspended go with the answer, before it
        earlier = list(self._inboxes.pop(task.id, ()))
        self._inboxes[task.id] = Inbox()
        text = "\n\n".join([*earlier, message.text])
        self._start(task, self._fulfil(task, text, pending, started=True, message=message))
        return task

    def _start(self, task: Task, work: Awaitable[None]) -> None:
        run = asyncio.ensure_future(work)
        self._runs[task.id] = run
        run.add_done_callback(
            lambda _: self._runs.pop(task.id, None) if self._runs.get(task.id) is run else None
        )

    async def _fulfil(
        self,
        task: Task,
        prompt: str,
        pending: RunResult | None,
        started: bool = False,
        new_context: bool = False,
        message: Message | None = None,
    ) -> None:
        """Run ``task`` to its end (or its next question); ``new_context``: this server made up its
        context just now, so its conversation has nothing to read yet; ``message``: the one that
        started or answered it, whose files go to the task's folder first. The folder goes when
        the run ends without a question."""
        try:
            await self._run(task, prompt, pending, started, new_context, message)
        finally:
            if not task.state.interrupted:
                self._accepts.pop(task.id, None)
                self._hidden.pop(task.id, None)
                if self.files is not None:
                    self.files.forget(task.id)

    async def _run(
        self,
        task: Task,
        prompt: str,
        pending: RunResult | None,
        started: bool,
        new_context: bool,
        message: Message | None,
    ) -> None:
        inbox = self._inboxes.get(task.id)
        words = self._replies.get(task.id)  # one reply a task, a question and its answer included
        if words is None:
            words = self._replies[task.id] = Reply(self, task)
        words.task = task
        trace.running.set(
            (task, self)
        )  # this run's own context: its tools' remote calls join the task's trace
        try:
            if not started and not await self._settle(
                task, lambda: self.transition(task, TaskState.WORKING)
            ):
                return
            if self.client is None:
                await self.transition(
                    task,
                    TaskState.FAILED,
                    message=Message.agent(
                        "no model client is configured for this agent (serve(..., client=...))",
                        task.context_id,
                        task.id,
                    ),
                )
                return
            files: list[Attachment] = []
            folder: Path | None = None
            if (
                message is not None
                and self.files is not None
                and any(p.kind in ("file", "data") for p in message.parts)
            ):
                try:
                    files, note, folder = await self.files.take(task.id, message)
                except FileFetchError as exc:
                    await self._fail(task, str(exc))
                    return
                prompt += note
            result = await self._ask(
                self.client, task, prompt, pending, new_context, inbox, words, files, folder
            )
        except asyncio.CancelledError:
            return  # cancel() already moved the task
        except ModelError as exc:  # the detail (endpoint URL, its answer) stays in the server's log
            log.warning("task %s: %s", task.id, exc)
            await self._fail(task, f"model error: {exc.public}")
            return
        except MaxTurnsError as exc:
            await self._fail(task, f"model error: {exc}")
            return
        except StoreUnavailableError:  # its conversation could not be read or kept
            await self._fail(task, "the task store was unavailable while it ran: send it again")
            return
        except Exception:
            log.exception("task %s: the run failed", task.id)
            await self._fail(task, "internal error while running the task")
            return
        finally:
            words.stop()  # what a run that ended left held is not told
            if inbox is not None:
                inbox.closed = True  # whatever happened, no later message is left unread in it
                if not inbox and self._inboxes.get(task.id) is inbox:
                    del self._inboxes[task.id]
        if task.skill is None:
            task.skill = _skill_loaded(result)
        if result.status == "pending" and result.pending is not None:
            await self._suspend(task, result, words)
        else:
            await self._complete(self.client, task, result, words)

    async def _ask(
        self,
        client: Any,
        task: Task,
        prompt: str,
        pending: RunResult | None,
        new_context: bool,
        inbox: Any,
        words: Reply,
        files: list[Attachment],
        folder: Path | None,
    ) -> RunResult:
        """:meth:`_run`'s model run: the suspended run ``pending`` resumed with ``prompt`` as its
        answer, else the task's conversation asked it."""
        # joint: the conversation is written with the task's last state, one statement (see __init__)
        if pending is not None:
            result = await client.resume(
                pending,
                Answer(pending.pending.id, True, prompt),  # type: ignore[union-attr]  # a suspended run exists only where a model client does
                inbox=inbox,
                keep=self._joint is None,
                sink=words,
            )
        else:
            # callers told apart never share a conversation, even when they name the same context
            conversation = (
                task.context_id if task.owner is None else f"{task.owner}/{task.context_id}"
            )
            result = await client.ask(
                prompt,
                self._toolkit(task),
                id=conversation,
                inbox=inbox,
                new=new_context,
                keep=self._joint is None,
                sink=words,
                files=files,
                folder=folder,
            )
        return result

    async def _suspend(self, task: Task, result: RunResult, words: Reply) -> None:
        """:meth:`_run`'s end of a run that waits: rejected by a tool, or the task asks for input
        (or authorization), the run kept for its answer."""
        assert result.pending is not None
        kind = result.pending.kind
        if kind == REJECT:  # a tool refused the work: the task ends, nothing to resume
            why = Message.agent(result.pending.prompt or "rejected", task.context_id, task.id)
            await self._settle(
                task,
                lambda: self.transition(task, TaskState.REJECTED, message=why, result=result),
            )
            return
        state = TaskState.AUTH_REQUIRED if kind == AUTH else TaskState.INPUT_REQUIRED
        default = "authorization required" if kind == AUTH else "input required"
        question = Message.agent(result.pending.prompt or default, task.context_id, task.id)
        self._pending[task.id] = result
        words.told, words.restart = "", False  # provisional; the answer's reply replaces it
        shared = self._shared
        suspended = result.suspended() if shared is not None else None
        if shared is not None and suspended is not None:  # any worker may take the answer
            if task.id in self._quiet:  # the run is kept beside the task's record: written first
                await self._settle(task, lambda: self._told(task.id))
            await self._settle(task, lambda: shared.save_pending(task.id, suspended))
        await self._settle(
            task,
            lambda: self.transition(
                task,
                state,
                message=question,
                result=result,
            ),
        )

    async def _complete(self, client: Any, task: Task, result: RunResult, words: Reply) -> None:
        """:meth:`_run`'s end of a finished run: the task completed with its reply and artifacts,
        its conversation written with it."""
        reply = Message.agent(result.text, task.context_id, task.id)
        accepted = self._accepts.get(task.id)
        artifacts = [
            *(
                [Artifact([Part.of_text(result.text)], words.artifact_id, name="reply")]
                if reply_accepted(accepted)
                else []
            ),
            *artifacts_of(result, accepted),
        ]
        unsaved, store = result.unsaved_conversation, client.store
        done = await self._settle(
            task,
            lambda: self.transition(
                task,
                TaskState.COMPLETED,
                artifacts=artifacts,
                history=[reply],
                result=result,
                conversation=unsaved,
            ),
        )
        if (
            unsaved is not None and done is None
        ):  # not moved (canceled meanwhile): its conversation is kept all the same
            await self._settle(task, lambda: store.save(*unsaved))

    async def _fail(self, task: Task, reason: str) -> None:
        note = Message.agent(reason, task.context_id, task.id)
        await self._settle(task, lambda: self.transition(task, TaskState.FAILED, message=note))

    async def _settle(self, task: Task, write: Callable[[], Awaitable[Any]]) -> Any:
        """A run's write, tried again while the store is unavailable (``stores.when_available``)."""
        return await when_available(write, f"task {task.id}: its run's result")

    # -- other workers (a shared store: see stores.postgres.WorkerLink) --------------------------
    async def arrived(self, task_id: str, version: int, state: TaskState) -> None:
        """Another worker moved a task: tell this worker's bus, streams and waits; stop a run here
        that it ended (a cancel sent to it), forget a question it took the answer to. A change of
        a task nothing here holds, follows or waits on, with no subscriber that wants it, costs
        nothing more than this check."""
        if not (
            task_id in self._live
            or task_id in self._watchers
            or task_id in self._changed
            or task_id in self._runs
            or task_id in self._pending
            or self.bus.hears("task")
        ):
            return
        fresh = await self.store.get(task_id)
        if fresh is None:
            return
        previous = self._heard.pop(task_id, None)
        live = self._live.get(task_id)
        if live is not None:
            previous = previous or live.state
            if live.version < fresh.version:
                _adopt(live, fresh)
        if not state.terminal:
            self._heard[task_id] = state
            if len(self._heard) > 10_000:
                self._heard.popitem(last=False)
        value = fresh  # a read of its own: the event's value
        if (
            fresh.version != version
        ):  # it moved on since: this announcement's state, with what is stored
            value = fresh.moved(TaskStatus(state, None, fresh.status.timestamp))
        event = TaskEvent(
            task_id,
            fresh.context_id,
            fresh.skill,
            previous,
            state,
            value,
            self.server,
            None,
            fresh.status.timestamp or now_iso(),
            heard=True,
        )
        self.bus.publish(event)
        for q in self._watchers.get(task_id, ()):
            q.put_nowait(event)
        changed = self._changed.pop(task_id, None)
        if changed is not None:
            changed.set()
        if state.terminal:
            self._stop_here(
                fresh,
                self._runs.pop(task_id, None),
                self._pending.get(task_id),
                canceled=state is TaskState.CANCELED,
            )
            self._forget(task_id)
            if fresh.version == version:
                self._keep_ended(fresh)
        elif not state.interrupted:
            self._pending.pop(task_id, None)  # its question was answered on another worker

    async def lapsed(self, task_id: str) -> None:
        """A running task whose worker stopped renewing its lease: failed, saying why (the first
        worker to see it wins; the others' writes are stale and refused)."""
        task = await self.store.get(task_id)
        if task is None or task.state not in (TaskState.SUBMITTED, TaskState.WORKING):
            return
        live = self._live.get(
            task_id
        )  # its run here ended without its last write: what waits on it holds this
        if live is not None:
            _adopt(live, task)
            task = live
        note = Message.agent(
            "the worker running this task stopped (its lease expired)", task.context_id, task.id
        )
        if await self.transition(task, TaskState.FAILED, message=note):
            log.warning("task %s: failed, its worker's lease expired", task_id)

    # -- queries and control ------------------------------------------------------------------
    async def get(self, id: str, owner: str | None = None) -> Task:
        """The task, if ``owner`` may see it (None: the server itself, or callers not told apart)."""
        await self._telling(id)
        task = self._known(id)
        if task is None:
            task = await self.store.get(id)
        if task is None or not visible(task.owner, owner):
            raise TaskNotFoundError()
        return task

    def _known(self, id: str) -> Task | None:
        """A task's value as this worker knows it without asking the store: one it holds in flight
        (written at each move anybody was told of), or one that ended here lately."""
        live = self._live.get(id)
        if live is not None:  # a value: later moves of the live task do not touch it
            reply = self._replies.get(id)
            if reply is not None and reply.told and live.state is TaskState.WORKING:
                return live.moved(live.status, artifacts=[reply.artifact()])  # its words so far
            return live.moved(live.status)
        return self._ended.get(id)

    async def list(self, request: ListTasks = _EVERY, owner: str | None = None) -> TaskPage:
        """A page of the store's tasks (see :meth:`TaskStore.list`), the quiet ones in it too."""
        for id in list(self._quiet):
            await self._told(id)
        return await self.store.list(
            TaskQuery(
                context_id=request.context_id,
                state=request.state,
                updated_after=request.updated_after,
                owner=owner,
                page_size=request.page_size,
                page_token=request.page_token,
            )
        )

    async def _telling(self, id: str) -> None:
        """A caller is about to be told of a task: a move being saved is waited for (the live task
        may show a state that move is replacing unwritten), and a state left unwritten is written."""
        moving = self._moving(id)
        if moving is not None:
            async with moving:
                pass
        if id in self._quiet:
            await self._told(id)

    async def _told(self, id: str) -> None:
        """A quiet task is about to be told of: from now on every state is written, this one first."""
        self._quiet.discard(id)
        async with self._locks.setdefault(id, asyncio.Lock()):
            task = self._unsaved.pop(id, None)
            if task is not None:
                try:
                    await self.store.save(task)
                except (
                    StaleTaskError
                ):  # another worker moved it since (a cancel): that is what is told
                    fresh = await self.store.get(id)
                    live = self._live.get(id)
                    if fresh is not None and live is not None and live.version < fresh.version:
                        _adopt(live, fresh)  # its run's next move is decided on that
                    return
                except BaseException:
                    self._quiet.add(id)  # as it was: written by its next move, or the next read
                    self._unsaved[id] = task
                    raise
                live = self._live.get(id)
                if live is not None:
                    live.version = task.version

    async def write_behind(self) -> int:
        """Write the quiet tasks whose state was already unwritten at the last call (a shared
        store's heartbeat calls it): a run that lasts shows as it is on every host within two
        calls, not only once a caller here asks. Returns how many were written."""
        due = [id for id in self._unsaved if id in self._aging]
        self._aging = set(self._unsaved).difference(due)
        for id in due:
            await self._told(id)
        return len(due)

    async def cancel(self, id: str, owner: str | None = None) -> Task:
        """Cancel a task: its run is cancelled (a remote call under way sends the peer a cancel);
        a task waiting for input whose question came from a remote agent cancels that task too."""
        task = await self.get(id, owner)
        if task.state.terminal:
            raise TaskNotCancelableError(
                f"Task cannot be canceled: it is already {task.state.value}"
            )
        run = self._runs.pop(id, None)
        waiting = self._pending.get(id)
        canceled = await self.transition(task, TaskState.CANCELED)
        if canceled is None:
            now = self._live.get(id, task).state.value
            raise TaskNotCancelableError(f"Task cannot be canceled: it is already {now}")
        self._stop_here(task, run, waiting, canceled=True)
        if run is None:  # waiting for input: no run to take its folder away when it ends
            self._accepts.pop(id, None)
            self._hidden.pop(id, None)
            if self.files is not None:
                self.files.forget(id)
        return canceled

    def _start_hook(self, task: Task, hook: Callable[[], Awaitable[Any]]) -> None:
        """Run a suspended tool's cancel hook in the background (bounded; a failure is logged)."""

        async def run() -> None:
            try:
                async with asyncio.timeout(30):
                    await hook()
            except Exception as exc:  # the task is canceled either way
                log.warning("task %s: canceling the request it waited on failed: %s", task.id, exc)

        self._hooks.add(future := asyncio.ensure_future(run()))
        future.add_done_callback(self._hooks.discard)

    def _settled(self, task: Task) -> bool:
        """``task`` is terminal or interrupted, and told: not in the middle of its move there. The
        live task takes a move's state once it is saved and published, but the move still holds
        its lock while it tells the webhooks; a waiter woken by the move before answers after it."""
        return (task.state.terminal or task.state.interrupted) and self._moving(task.id) is None

    def _moving(self, task_id: str) -> asyncio.Lock | None:
        """The lock of the task's move under way (it holds it while saving), or None."""
        lock = self._locks.get(task_id)
        return lock if lock is not None and lock.locked() else None

    async def wait(self, task: Task, timeout: float | None) -> Task:
        """Wait until ``task`` is terminal or interrupted, or ``timeout`` seconds have passed (ending
        within ``WAKE_EVERY`` after that). Returns its latest value: ``task`` itself when it is
        the live one, which its moves change; a value a store handed back never changes."""
        task = self._live.get(task.id, task)
        due: tuple[asyncio.TimerHandle, dict[str, int]] | None = None
        slot, waits = 0, {}  # not dict[str, int](): calling the alias costs a dict 80 times over
        if timeout is not None and not (task.state.terminal or task.state.interrupted):
            loop = asyncio.get_running_loop()
            slot = math.ceil((loop.time() + timeout) / WAKE_EVERY)
            due = self._due.get(slot)
            if due is None:
                due = self._due[slot] = (loop.call_at(slot * WAKE_EVERY, self._time_up, slot), {})
            waits = due[1]
            waits[task.id] = waits.get(task.id, 0) + 1
        try:
            while not self._settled(task) and not self._stopping:
                if due is not None and self._due.get(slot) is not due:  # its time is up
                    break
                changed = self._changed.get(task.id)
                if changed is None:
                    changed = self._changed[task.id] = asyncio.Event()
                if self.link is None:
                    await changed.wait()
                    task = await self._latest(task)
                    continue
                try:  # shared: another worker's change may be announced while this one hears nothing
                    async with asyncio.timeout(1.0):
                        await changed.wait()
                    task = await self._latest(task)
                except TimeoutError:
                    fresh = await self.store.get(task.id)
                    if fresh is not None and fresh.version > task.version:
                        task = fresh
        finally:
            if due is not None and self._due.get(slot) is due:
                left = waits.pop(task.id) - 1
                if left:
                    waits[task.id] = left
        await self._telling(task.id)  # time up in the middle of a move, or before it settled
        return task

    async def _latest(self, task: Task) -> Task:
        """``task`` as it is now: itself once settled (a live task is changed by its moves), else
        the live one, else what the store holds."""
        if self._settled(task):
            return task
        live = self._live.get(task.id)
        if live is not None:
            return live
        fresh = await self.store.get(task.id)
        return fresh if fresh is not None and fresh.version >= task.version else task

    def _time_up(self, slot: int) -> None:
        """End the waits due in this interval: their tasks' waiters wake, and those with time left
        wait again."""
        for task_id in self._due.pop(slot, (None, ()))[1]:
            changed = self._changed.pop(task_id, None)
            if changed is not None:
                changed.set()

    def listen(self, task_id: str) -> Follow:
        """A queue that receives every later transition of the task; end with :meth:`unlisten`."""
        queue = Follow()
        self._watchers.setdefault(task_id, []).append(queue)
        if self.link is not None and task_id not in self._runs:  # run by another worker, maybe
            self.link.want(task_id)
        return queue

    def unlisten(self, task_id: str, queue: Follow) -> None:
        queue.close()
        watchers = self._watchers.get(task_id, [])
        if queue in watchers:
            watchers.remove(queue)
        if not watchers:
            self._watchers.pop(task_id, None)

    async def recover(self) -> int:
        """After a restart: mark ``submitted``/``working`` tasks of the store failed. Returns how many."""
        page_token, count = "", 0
        while True:
            page = await self.store.list(TaskQuery(page_size=100, page_token=page_token))
            for task in page.tasks:
                if task.state in (TaskState.SUBMITTED, TaskState.WORKING):
                    note = Message.agent("interrupted by restart", task.context_id, task.id)
                    count += await self.transition(task, TaskState.FAILED, message=note) is not None
            if not page.next_token:
                return count
            page_token = page.next_token

    async def resync(self) -> None:
        """After this worker stopped hearing the others (the database away): each task it follows
        or waits on that another worker runs, read again; one that ended or asks for input
        meanwhile is told as if announced (its streams and waits end)."""
        for task_id in list({*self._watchers, *self._changed} - set(self._runs)):
            fresh = await self.store.get(task_id)
            if (
                fresh is not None
                and (fresh.state.terminal or fresh.state.interrupted)
                and self._heard.get(task_id) is not fresh.state
            ):
                await self.arrived(task_id, fresh.version, fresh.state)

    # -- stopping -------------------------------------------------------------------------------
    @property
    def running(self) -> int:
        """How many runs are in flight here."""
        return len(self._runs)

    async def idle(self) -> None:
        """Return once no run is in flight here (a stop's drain: what runs may finish; a request
        still being answered may start one more, waited for too). A suspended run (a task waiting
        for input) is not in flight: it resumes wherever its answer arrives."""
        while self._runs:
            await asyncio.wait(list(self._runs.values()))

    async def stop_runs(self, why: str) -> int:
        """The end of a stop's drain: fail every task still running here, saying ``why`` (saved
        first, so that every caller told of it and every host asked sees it; a blocking send
        waiting on it is answered with it, a stream gets it as its last event), and stop its run.
        Streams following a task not run here end (the caller resubscribes, through a balancer
        to a host that stays), and every wait returns what it has. Returns how many failed."""
        self._stopping = True
        failed = 0
        for task_id, run in list(self._runs.items()):
            task = self._live.get(task_id)
            if task is not None and not task.state.terminal:
                note = Message.agent(why, task.context_id, task.id)
                failed += await self.transition(task, TaskState.FAILED, message=note) is not None
            run.cancel()
        for queues in self._watchers.values():
            for queue in queues:
                queue.put_nowait(None)
        for changed in self._changed.values():
            changed.set()
        return failed

    async def close(self) -> None:
        """Cancel every run in flight; give the hooks already fired a second, then cancel them too."""
        for timer, _ in self._due.values():
            timer.cancel()
        for reply in self._replies.values():
            reply.stop()
        runs = list(self._runs.values()) + list(self._hooks)
        for run in runs:
            run.cancel()
        await asyncio.gather(*runs, return_exceptions=True)
        await self.on_task.close()
        await self.on_text.close()
