"""A stream read, bounded, and judged: SSE or gRPC frames, each frame against the dialect of its
reader, what the stream carried, and what it cost in tokens."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from ... import _json
from ...client.peer import A2AClient
from ...errors import PeerError, RPCError
from ...events import TrafficEvent
from ...protocol.dialects import Dialect
from ...protocol.operations import Binding
from ...protocol.stream import StreamCheck
from ...traffic import TrafficRecorder
from ..cost import stream_cost
from ..features import Finder, evidence
from ..report import Finding
from .costs import counted
from .frameworks import readings
from .lines import MAX_FRAMES, Add
from .seen import Seen


async def read_stream(client: A2AClient, find: Finder, timeout: float, before: int) -> list[Any]:
    """The frames of a stream for a one-line message, read for a bounded time and count."""
    frames: list[Any] = []
    try:  # a peer that streams forever must not keep the doctor forever
        async with asyncio.timeout(max(timeout, 30.0)):
            async with contextlib.aclosing(
                client.stream("hello again from toolnexus doctor")
            ) as stream:
                async for frame in stream:
                    frames.append(frame)
                    if len(frames) >= MAX_FRAMES:
                        find.found(
                            "warning",
                            "streaming",
                            f"a stream for a one-line message sent "
                            f"{MAX_FRAMES} frames without ending; the doctor stopped reading",
                            breaks=["streaming clients that wait for the end"],
                            fix="end the stream when the task is final or interrupted",
                        )
                        break
    except TimeoutError:
        find.found(
            "warning",
            "streaming",
            f"a stream for a one-line message did not end within "
            f"{max(timeout, 30.0):g} s ({len(frames)} frame(s))",
            before,
        )
    return frames


async def judge_stream(
    client: A2AClient, find: Finder, seen: Seen, frames: list[Any], before: int
) -> None:
    """What a stream's frames and wire say: SSE, frames that arrived, broken off or none."""
    traffic, add = find.traffic, find.add
    streamed = [
        e
        for e in list(traffic.events)[before:]
        if e.rpc_method in ("message/stream", "SendStreamingMessage")
    ]
    answered = streamed[0].response_headers.get("content-type", "") if streamed else ""
    broke = next((e for e in streamed if e.error), None)
    if client.dialect is not None:
        _frames(streamed, client.endpoint, client.dialect, seen)
    _contents(streamed, add)
    await _stream_costs(streamed, add)
    if len(frames) >= MAX_FRAMES:
        pass  # said above
    elif broke is not None:
        add(
            Finding(
                "warning",
                "streaming",
                f"the stream broke off after {len(broke.frames)} event(s), before the "
                f"task settled: {broke.error}",
                [evidence(broke)],
                ["a2a-sdk 1.x", "a2a-sdk 0.3", "JS SDK 1.x"],
                "keep a stream open until its task is final or interrupted (a proxy in "
                "front may end long answers: raise its read timeout, and send keep-alive "
                "comments)",
            )
        )
    elif frames and client.binding is Binding.GRPC:  # a server-streaming call: no SSE to check
        find.found(
            "ok",
            "streaming",
            f"the card says streaming, and {len(frames)} frame(s) arrived over a gRPC stream",
        )
    elif frames and answered.startswith("text/event-stream"):
        find.found(
            "ok",
            "streaming",
            f"the card says streaming, and {len(frames)} frame(s) arrived",
        )
    elif frames:
        find.found(
            "warning",
            "streaming",
            f"the card says streaming, but the stream was answered as "
            f"{answered or 'no content type'}, not SSE",
            before,
            ["streaming clients"],
            "answer message/stream with text/event-stream frames",
        )
    else:
        find.found(
            "error",
            "streaming",
            "the card says streaming, but no frame arrived",
            before,
            ["streaming clients"],
            "serve message/stream (SSE), or set capabilities.streaming to false",
        )


async def stream_as(
    client: A2AClient, dialect: Dialect, traffic: TrafficRecorder, seen: Seen, add: Add
) -> None:
    """One stream as a client of ``dialect`` asks for it, read to its end (bounded), its every
    frame checked against the dialect (:func:`_frames`)."""
    before = len(traffic.events)
    with contextlib.suppress(RPCError, PeerError, TimeoutError):
        async with asyncio.timeout(max(client.timeout, 30.0)):
            async with contextlib.aclosing(
                client.stream(f"hello from toolnexus doctor (a stream in {dialect.value})")
            ) as stream:
                read = 0
                async for _ in stream:
                    read += 1
                    if read >= MAX_FRAMES:
                        break
    streamed = [e for e in list(traffic.events)[before:] if e.rpc_method in _STREAMS]
    _frames(streamed, client.endpoint, dialect, seen)
    _contents(streamed, add)
    await _stream_costs(streamed, add)


_STREAMS = ("message/stream", "SendStreamingMessage")
_V10_EVENTS = ("task", "message", "statusUpdate", "artifactUpdate")
_V03_KINDS = ("task", "message", "status-update", "artifact-update")


def _frames(streamed: list[TrafficEvent], endpoint: str, dialect: Dialect, seen: Seen) -> None:
    """Every frame of a JSON-RPC stream checked against ``dialect`` (a reader of it refuses the
    first that departs: the official clients parse each frame strictly); the first departure is
    kept for the verdicts, with its evidence."""
    for event in streamed:
        results = [
            data.get("result")
            for data in map(_json.loads_or_none, event.frames)
            if _json.is_object(data) and _json.is_object(data.get("result"))
        ]
        seen.read.setdefault((endpoint, dialect), []).append((readings(results), evidence(event)))
        for i, frame in enumerate(event.frames, 1):
            data = _json.loads_or_none(frame)
            result = data.get("result") if _json.is_object(data) else None
            if result is None:
                continue  # an error frame, or not JSON-RPC: said by the streaming check
            faults = _frame_faults(result, dialect)
            if faults:
                seen.streams[(endpoint, dialect)] = (
                    f"frame {i} of {len(event.frames)}: " + "; ".join(faults),
                    f"{event.method} {event.url} {event.rpc_method}, frame {i}: {frame[:400]}",
                )
                return
        seen.streams.setdefault((endpoint, dialect), None)


def _contents(streamed: list[TrafficEvent], add: Add) -> None:
    """What each stream carried, checked (:class:`~toolnexus.protocol.stream.StreamCheck`): a
    finding per fault, with the frame that shows it."""
    for event in streamed:
        check = StreamCheck()
        shown: dict[int, str] = {}
        for frame in event.frames:
            data = _json.loads_or_none(frame)
            result = data.get("result") if _json.is_object(data) and "jsonrpc" in data else data
            if _json.is_object(result):
                check.frame(result)
                shown[check.frames] = (
                    f"{event.method} {event.url} {event.rpc_method}: {frame[:400]}"
                )
        check.end()
        for fault in check.faults:
            add(
                Finding(
                    fault.severity,
                    f"stream: {fault.name}",
                    f"frame {fault.frame}: {fault.message}" if fault.frame else fault.message,
                    [shown[fault.frame]] if fault.frame in shown else [evidence(event)],
                )
            )


async def _stream_costs(streamed: list[TrafficEvent], add: Add) -> None:
    """What each stream cost in tokens (:func:`counted`)."""
    for event in streamed:
        if event.frames:
            where = f"{event.rpc_method} at {event.url}"
            add(await counted("cost: stream", lambda e=event: stream_cost(e.frames), where))


def _frame_faults(result: Any, dialect: Dialect) -> list[str]:
    """What of one stream frame's result a strict reader of ``dialect`` refuses."""
    if not _json.is_object(result):
        return ["the result is not an object"]
    out: list[str] = []
    if dialect is Dialect.V10:
        keys = [k for k in _V10_EVENTS if k in result]
        if len(keys) != 1 or "kind" in result:
            out.append(
                "it is not wrapped as one of task, message, statusUpdate, artifactUpdate"
                + (f" (it has 0.3's kind {result.get('kind')!r})" if "kind" in result else "")
            )
        body = result.get(keys[0]) if len(keys) == 1 else result
    else:
        if result.get("kind") not in _V03_KINDS:
            wrapped = [k for k in _V10_EVENTS if k in result]
            out.append(
                f"it has no 0.3 kind (it is wrapped as 1.0's {wrapped[0]!r})"
                if wrapped
                else "it has no 0.3 kind"
            )
        body = result
    status = body.get("status") if _json.is_object(body) else None
    state = str(status.get("state") or "") if _json.is_object(status) else ""
    if dialect is Dialect.V10 and state and not state.startswith("TASK_STATE_"):
        out.append(f"the state {state!r} is not TASK_STATE_*")
    if dialect is not Dialect.V10 and state.startswith("TASK_STATE_"):
        out.append(f"the state {state!r} is not 0.3's spelling")
    return out
