"""Served tasks in memory, for the life of the process (the default store)."""

from __future__ import annotations

import asyncio
import collections
import logging
import re
import time

from .. import _json
from ..errors import ConfigError
from ..protocol.model import Task
from .base import (
    EVERY_TASK,
    STATES,
    StoreKind,
    TaskPage,
    TaskQuery,
    epoch,
    readable,
    task_from_record,
    task_record,
    visible,
    window,
)

__all__ = ["MemoryTaskStore", "KIND"]

log = logging.getLogger("toolnexus.serve")


class MemoryTaskStore:
    """Tasks in memory, for the life of the process (the default).

    One entry per task: ``(context_id, state value, status timestamp, owner, body)``. A task in
    flight is kept as the live object; a finished one packed (``_json.pack``: compact bytes, ~250
    bytes for a short exchange), so that its entry holds only strings and bytes and the garbage
    collector stops walking it after its first pass. The last ``RECENT`` tasks to finish are kept
    as they were, so that the polls that follow a task's end (most of a busy agent's traffic)
    do not unpack it, and are packed as they leave those (``_pack``, after the request that
    finished them, in one batch): no request waits for a pack. Listings walk the entries newest first (the dict keeps the order of
    creation).

    Retention: past ``max_tasks`` finished tasks, or for finished tasks older than ``max_age``
    seconds, the oldest finished tasks are dropped (a task in flight never is). None: no limit.
    """

    RECENT = 256

    def __init__(self, max_tasks: int | None = 100_000, max_age: float | None = None) -> None:
        if max_tasks is not None and (type(max_tasks) is not int or max_tasks < 0):
            raise ConfigError(
                f"keep_tasks (the finished tasks the memory store keeps) must be a whole number "
                f">= 0 or None, not {max_tasks!r}"
            )
        if max_age is not None and (
            isinstance(max_age, bool) or not isinstance(max_age, (int, float)) or not max_age > 0
        ):
            raise ConfigError(
                f"keep_for (seconds the memory store keeps a finished task) must be a number > 0 "
                f"or None, not {max_age!r}"
            )
        self._tasks: dict[str, tuple[str, str, str, str | None, Task | bytes]] = {}
        self._finished: collections.deque[str] = (
            collections.deque()
        )  # ids, in the order they finished
        self._recent: collections.OrderedDict[str, Task] = (
            collections.OrderedDict()
        )  # just finished, live
        self._packing = False
        self.max_tasks = max_tasks
        self.max_age = max_age

    async def get(self, id: str) -> Task | None:
        found = self._tasks.get(id)
        if found is None:
            return None
        body = found[4]
        if isinstance(body, bytes):
            live = self._recent.get(id)
            return (
                live
                if live is not None
                else readable(id, lambda: task_from_record(_json.unpack(body)))
            )
        return body

    async def save(self, task: Task) -> None:
        was = self._tasks.get(task.id)
        self._tasks[task.id] = (
            task.context_id,
            task.state.value,
            task.status.timestamp or "",
            task.owner,
            task,
        )
        if task.state.terminal:
            if was is None or not STATES[was[1]].terminal:
                self._finished.append(task.id)
            self._recent[task.id] = task
            self._recent.move_to_end(task.id)
            if (
                len(self._recent) > self.RECENT and not self._packing
            ):  # packed after this request, in a batch
                self._packing = True
                asyncio.get_running_loop().call_soon(self._pack)
            self._retain()

    def _pack(self) -> None:
        """Pack the finished tasks that left the last ``RECENT`` (off the path of the request that
        finished them: one call for all that left since)."""
        self._packing = False
        while len(self._recent) > self.RECENT:
            id, task = self._recent.popitem(last=False)
            entry = self._tasks.get(id)
            if entry is None or entry[4] is not task:
                continue
            try:
                body = _json.pack(task_record(task))
            except (TypeError, ValueError) as exc:  # keep the live task rather than lose it
                log.error("task %s cannot be stored as JSON (%s); kept as it is", id, exc)
                continue
            self._tasks[id] = (*entry[:4], body)

    def _retain(self) -> None:
        """Drop the oldest finished tasks past ``max_tasks`` or ``max_age``."""
        finished = self._finished
        while self.max_tasks is not None and len(finished) > self.max_tasks:
            self._drop_oldest()
        if self.max_age is not None:
            cutoff = time.time() - self.max_age
            while finished and epoch(self._tasks[finished[0]][2]) < cutoff:
                self._drop_oldest()

    def _drop_oldest(self) -> None:
        gone = self._finished.popleft()
        self._tasks.pop(gone, None)
        self._recent.pop(gone, None)

    async def list(self, query: TaskQuery = EVERY_TASK) -> TaskPage:
        # read once: the walk may cover every task the process keeps
        context_id, owner, after = query.context_id, query.owner, query.updated_after
        state = query.state.value if query.state else None
        chosen = [
            id
            for id, (ctx, st, stamp, who, _) in reversed(self._tasks.items())
            if (context_id is None or ctx == context_id)
            and visible(who, owner)
            and (state is None or st == state)
            and (after is None or stamp >= after)
        ]
        start, end, next_token = window(len(chosen), query.page_size, query.page_token)
        tasks = [t for t in [await self.get(id) for id in chosen[start:end]] if t is not None]
        return TaskPage(tasks, next_token, len(chosen))

    def __len__(self) -> int:
        return len(self._tasks)


KIND = StoreKind(
    "memory",
    "memory",
    re.compile("memory"),
    MemoryTaskStore,
    lambda _, max_tasks, max_age: MemoryTaskStore(max_tasks, max_age),
)
"""``memory`` (the default): for the life of the process, with a retention."""
