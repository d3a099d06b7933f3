"""A remote task's calls of :class:`~toolnexus.client.peer.A2AClient` (:class:`TaskCalls`): get,
cancel and list, and a task followed to its end: resubscribed over a stream, or polled
(``follow``), its state changes as events (``watch``); the frames of any stream read the same way
(``_frames``), which a send's stream uses too."""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import time
from collections.abc import AsyncGenerator
from typing import Any

from ..errors import PeerError, RPCError
from ..events import EventBus, TaskEvent
from ..protocol.dialects import parse_task
from ..protocol.model import Message, Task, TaskState, iso_utc
from ..protocol.operations import OPERATIONS
from .connection import Connection
from .transports import as_task, json_named

__all__ = ["TaskCalls"]


class TaskCalls(Connection):
    """The calls on a task the peer holds, and a task followed until it settles."""

    async def get(self, task_id: str, history_length: int | None = None) -> Task:
        params: dict[str, Any] = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        return as_task(await self._call("get", params), None)

    async def cancel(self, task_id: str) -> Task:
        return as_task(await self._call("cancel", {"id": task_id}), None)

    async def list_tasks(
        self,
        *,
        context_id: str | None = None,
        state: TaskState | None = None,
        page_size: int | None = None,
        page_token: str | None = None,
        include_artifacts: bool = False,
        status_timestamp_after: datetime.datetime | str | None = None,
        history_length: int | None = None,
    ) -> dict[str, Any]:
        """``ListTasks`` (1.0 peers): ``{tasks: [Task], next_page_token, total_size}``.
        ``status_timestamp_after``: only tasks whose status changed after it (a timezone-aware
        datetime, or an ISO 8601 timestamp as the peer takes it); ``history_length``: at most that
        many of each task's latest messages (0: none)."""
        params: dict[str, Any] = {"includeArtifacts": include_artifacts}
        if status_timestamp_after is not None:
            params["statusTimestampAfter"] = (
                iso_utc(status_timestamp_after)
                if isinstance(status_timestamp_after, datetime.datetime)
                else status_timestamp_after
            )
        if history_length is not None:
            params["historyLength"] = history_length
        if context_id:
            params["contextId"] = context_id
        if state is not None:
            params["status"] = "TASK_STATE_" + state.value.upper().replace("-", "_")
        if page_size:
            params["pageSize"] = page_size
        if page_token:
            params["pageToken"] = page_token
        result = json_named(await self._call("list", params))
        return {
            "tasks": [parse_task(t) for t in result.get("tasks") or []],
            "next_page_token": result.get("nextPageToken", ""),
            "total_size": result.get("totalSize", 0),
        }

    async def resubscribe(self, task_id: str) -> AsyncGenerator[Task, None]:
        """Follow a running task over SSE; yields the task after every frame."""
        async with contextlib.aclosing(
            self._frames("resubscribe", {"id": task_id}, None)
        ) as frames:  # closed with us
            async for task in frames:
                yield task

    async def _frames(
        self, op: str, params: dict[str, Any], sent: Message | None
    ) -> AsyncGenerator[Task, None]:
        """A stream's tasks; when it ends with the task finished but holding no reply (no artifact,
        no answer from the agent: some peers stream only the states), the task as the peer keeps
        it, got once, so that the reply is not lost. A stream that breaks off before the task
        settles (the connection lost: a proxy cut it) is followed by polling, and ``warnings``
        says so."""
        last: Task | None = None
        try:
            async with contextlib.aclosing(self._sse(op, params, sent)) as frames:
                async for task in frames:
                    last = task
                    yield task
        except PeerError as exc:
            if not exc.lost or last is None or not last.id:
                raise
            if last.state.terminal or last.state.interrupted:
                raise
            self.warnings.append(f"{exc}: the task followed by polling instead")
            async for event in self.watch(last.id, stream=False):
                last = event.task
                yield last
        if (
            last is not None
            and last.id
            and last.state.terminal
            and not last.artifacts
            and not any(m.role == "agent" for m in last.history)
            and last.status.message is None
        ):
            yield await self.get(last.id)

    async def _sse(
        self, op: str, params: dict[str, Any], sent: Message | None
    ) -> AsyncGenerator[Task, None]:
        """The frames of a stream as tasks, over the transport in use (bounded as it says)."""
        await self._ready()
        operation = OPERATIONS[op]
        if not self.transport.streams:
            raise self.transport.unsupported(operation)
        async with contextlib.aclosing(
            self.transport.stream(operation, self._tenanted(params), sent)
        ) as frames:
            async for task in frames:
                yield task

    async def follow(
        self,
        task_id: str,
        *,
        poll_every: float = 1.0,
        max_interval: float = 5.0,
        backoff: float = 1.5,
        timeout: float | None = None,
        stream: bool = True,
    ) -> AsyncGenerator[Task, None]:
        """A remote task after every change, until it is terminal or interrupted: over SSE where
        the peer streams (``stream`` and the card say so), after every frame (a reply's words as
        they come); else polled, each time its state or its text changed, the interval starting at
        ``poll_every`` and growing by ``backoff`` up to ``max_interval``."""
        await self.connect()
        deadline = None if timeout is None else time.monotonic() + timeout
        self.polls = 0
        last: Task | None = None
        if stream and self.card is not None and self.card.streaming and self.transport.streams:
            try:
                async with contextlib.aclosing(self.resubscribe(task_id)) as frames:
                    async for task in frames:
                        last = task
                        yield task
                        if task.state.terminal or task.state.interrupted:
                            return
            except (RPCError, PeerError):
                pass  # the peer cannot resubscribe (already terminal, or no streaming after all): poll
        interval = poll_every
        while True:
            task = await self.get(task_id)
            self.polls += 1
            if last is None or task.state is not last.state or task.said != last.said:
                last = task
                yield task
            if task.state.terminal or task.state.interrupted:
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            await asyncio.sleep(
                interval
                if deadline is None
                else max(0.0, min(interval, deadline - time.monotonic()))
            )
            interval = min(interval * backoff, max(max_interval, poll_every))

    async def watch(
        self,
        task_id: str,
        *,
        poll_every: float = 1.0,
        max_interval: float = 5.0,
        backoff: float = 1.5,
        timeout: float | None = None,
        bus: EventBus | None = None,
        stream: bool = True,
    ) -> AsyncGenerator[TaskEvent, None]:
        """Every state change of a remote task as a TaskEvent, until it is terminal or interrupted
        (followed as :meth:`follow` says). The events are also published on ``bus`` (or the
        client's bus)."""
        target = bus or self.bus
        last: TaskState | None = None
        async with contextlib.aclosing(
            self.follow(
                task_id,
                poll_every=poll_every,
                max_interval=max_interval,
                backoff=backoff,
                timeout=timeout,
                stream=stream,
            )
        ) as changes:
            async for task in changes:
                if task.state is last:
                    continue
                ev = TaskEvent(
                    task.id, task.context_id, None, last, task.state, task.snapshot(), self.peer
                )
                last = task.state
                if target is not None:
                    target.publish(ev)
                yield ev
