"""The auditor: what each recorded stream of a cassette carried, checked, as a doctor's report.

Each streamed exchange (``SendStreamingMessage``, ``message/stream``, a subscription; 1.0's and
0.3's shapes, JSON-RPC or HTTP+JSON) is read frame by frame by
:class:`toolnexus.protocol.stream.StreamCheck`, and each fault is a finding naming the line and the
frame. Then how each reader would read the stream's artifacts, by the doctor's rules
(:func:`toolnexus.debug.doctor.readings`, the doctor's verdicts read them too): the official
clients (a2a-sdk 1.x and 0.3, the JS SDK) as the spec says, Google ADK and CrewAI their own ways;
a reader whose text differs from the spec's is said as the doctor says it (a warning where the
peer can fix it, ADK's; info where the stream is right, CrewAI's). And what each stream cost in
tokens, the protocol's share apart (:mod:`toolnexus.debug.cost`; the recording's stable ids are
counted for the peer's own).
``toolnexus audit CASSETTE`` prints it (the doctor's format, ``--json``, ``--fail-on``).
"""

from __future__ import annotations

import os
from typing import Any

from .. import _json
from ..protocol.stream import StreamCheck
from .cassette import Exchange, load
from .cost import stream_cost
from .doctor import ADK, CREWAI, FRAMEWORKS, costs, framework_breaks, misread, readings
from .report import DoctorReport, Finding

__all__ = ["audit", "audit_frames", "OFFICIAL"]

OFFICIAL = ("a2a-sdk 1.x", "a2a-sdk 0.3", "JS SDK 1.x")
"""The official clients: each reads an artifact update as the spec says."""
_STREAMS = ("SendStreamingMessage", "SubscribeToTask", "message/stream", "tasks/resubscribe")


def _results(x: Exchange) -> list[tuple[int, Any, str]]:
    """A streamed exchange's results, each with its frame number and the frame as recorded (a
    JSON-RPC frame's ``result``; an HTTP+JSON frame is the result; error frames are left out)."""
    out = []
    for i, frame in enumerate(x.response.get("frames") or (), 1):
        data = _json.loads_or_none(frame) if isinstance(frame, str) else frame
        if _json.is_object(data) and "jsonrpc" in data:
            data = data.get("result")
        if _json.is_object(data):
            out.append((i, data, str(frame)[:400]))
    return out


def audit_frames(results: list[Any], where: str, evidence: dict[int, str], add: Any) -> int:
    """Check one stream's results (each a frame's result, in order), adding a finding per fault
    and per reader that reads it otherwise than the spec; the number of faults."""
    check = StreamCheck()
    for result in results:
        check.frame(result)
    check.end()
    for fault in check.faults:
        shown = [evidence[fault.frame]] if fault.frame in evidence else []
        add(
            Finding(
                fault.severity,
                f"stream: {fault.name}",
                f"frame {fault.frame}: {fault.message}" if fault.frame else fault.message,
                shown,
                list(OFFICIAL),
                at=where,
            )
        )
    read = readings(results)
    if any(read.values()):
        said = f"the official clients ({', '.join(OFFICIAL)}) read {read['spec']!r}"
        add(Finding("info", "stream: read as", said, at=where))
        for name in (ADK, CREWAI):
            if (fault := misread(name, read)) is not None:
                what = FRAMEWORKS[name][1]
                add(framework_breaks(name, f"{fault[0]}; {what}", [], fault[1], at=where))
    if not check.faults:
        add(Finding("ok", "stream", f"{check.frames} frames, no fault", at=where))
    return len(check.faults)


def audit(path: str | os.PathLike[str]) -> DoctorReport:
    """Every recorded stream of the cassette at ``path`` checked (see the module).

    Raises:
        CassetteError: the file is not a cassette.
    """
    cassette = load(path)
    report = DoctorReport(str(cassette.path), doctor="audit")
    streams = [x for x in cassette if x.streamed or x.rpc_method in _STREAMS]
    for x in streams:
        results = _results(x)
        where = f"line {x.line} ({x.rpc_method or x.method + ' ' + x.url})"
        audit_frames(
            [r for _, r, _ in results],
            where,
            {n: f"frame {n}: {shown}" for n, (_, _, shown) in enumerate(results, 1)},
            report.add,
        )
        recorded = x.response.get("frames") or ()
        frames = [f if isinstance(f, str) else _json.dumps(f).decode() for f in recorded]
        report.add(costs("cost: stream", lambda f=frames: stream_cost(f), where))
    if not streams:
        report.add(Finding("info", "stream", "the cassette holds no stream"))
    report.finish()
    return report
