"""Follow a task across hops: W3C trace context in, out, and on every task it touches.

A request to a served agent may carry a W3C ``traceparent`` header (``00-<trace id>-<parent span
id>-<flags>``): the task it creates joins that trace, its own span a child of the caller's. When a
task's run calls another agent through an A2A tool (:mod:`toolnexus.client.agents`), the call is a
span of its own, a child of the task's, and the request carries ``traceparent`` naming it, so the
remote task (on any agent that honours W3C trace context) joins the same trace. A task that was
given no trace starts one at its first remote call.

Each remote call is published on the serving bus as a :class:`~toolnexus.events.RemoteCallEvent`
(peer, remote task id, state, times) whenever the remote task changes, so the front ends show a
task with the calls it made, nested across every agent they host (``monitor.trace_tree``).
:func:`export_spans` turns the same events into OpenTelemetry spans for any OTel exporter
(``pip install 'toolnexus[otel]'``).

Nothing here costs a served agent anything when unused: one header lookup per request, one
context variable set per run; ids are made only for a request that brings a trace or a task that
calls another agent. The trace context itself (``TraceContext``, the ``traceparent`` header) is
data of the wire, in :mod:`toolnexus.protocol.tracecontext`; it is named here too.
"""

from __future__ import annotations

import asyncio
import contextvars
import os
from datetime import datetime
from typing import Any

from .errors import MissingExtra
from .events import EventBus, RemoteCallEvent, TaskEvent
from .protocol.tracecontext import HEADER, TraceContext, new_trace, parse_traceparent

__all__ = ["TraceContext", "parse_traceparent", "new_trace", "export_spans", "HEADER"]

# -- where a trace is, while a request or a run is under way ------------------------------------
incoming: contextvars.ContextVar[TraceContext | None] = contextvars.ContextVar("toolnexus_incoming", default=None)
"""The caller's span of the request being served (set where the request is read)."""

calling: contextvars.ContextVar[TraceContext | None] = contextvars.ContextVar("toolnexus_calling", default=None)
"""The span of the remote call under way: what an outbound request names as its parent."""

running: contextvars.ContextVar[Any] = contextvars.ContextVar("toolnexus_running", default=None)
"""``(task, runner)`` of the task whose run this is (set by ``TaskRunner`` for each run)."""


def accept(headers: Any) -> None:
    """Note the caller's trace from a request's (lower-case) headers or a gRPC call's metadata."""
    value = headers.get(HEADER) if hasattr(headers, "get") else None
    if value:
        incoming.set(parse_traceparent(value))


def outgoing() -> str | None:
    """The ``traceparent`` to send with an outbound request now: the remote call's span, else the
    running task's own (when it has a trace), else none."""
    span = calling.get()
    if span is None:
        run = running.get()
        span = run[0].trace if run is not None else None
    return span.traceparent() if span is not None else None


# -- OpenTelemetry -------------------------------------------------------------------------------
OTLP_ENV = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")


def otlp_exporter() -> Any:
    """An OTLP/HTTP span exporter when the standard ``OTEL_EXPORTER_OTLP_*`` variables name an
    endpoint (it reads them all itself: headers, timeout, compression), else None.

    Raises:
        MissingExtra: an endpoint is set and the exporter is not installed.
    """
    if not any(os.environ.get(name) for name in OTLP_ENV):
        return None
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    except ImportError:
        raise MissingExtra("OTEL_EXPORTER_OTLP_* is set: exporting spans over OTLP needs "
                           "pip install 'toolnexus[otel]'") from None
    return OTLPSpanExporter()
def _nanos(stamp: str | None) -> int:
    if not stamp:
        return 0
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1_000_000_000)


def export_spans(bus: EventBus, exporter: Any, *, service: str = "toolnexus") -> asyncio.Task[None]:
    """Export every traced task and remote call seen on ``bus`` as OpenTelemetry spans.

    ``exporter`` is any ``opentelemetry.sdk.trace.export.SpanExporter`` (OTLP, console, in
    memory): a task is a SERVER span from its first state to its last (an input-required wait
    included), a remote call a CLIENT span, each with the ids it had on the wire, so the spans of
    every agent in a chain fit into one trace in any OTel backend. Returns the task that reads the
    bus; cancel it to stop. Each export runs in a thread (a network exporter blocks). Needs
    ``pip install 'toolnexus[otel]'``.
    """
    try:
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace import ReadableSpan
        from opentelemetry.trace import (
            SpanContext,
            SpanKind,
            Status,
            StatusCode,
            TraceFlags,
        )
    except ImportError:
        raise MissingExtra("exporting spans needs OpenTelemetry: pip install 'toolnexus[otel]'") from None
    resource = Resource.create({"service.name": service})
    started: dict[str, int] = {}

    def context(trace: str, span: str, remote: bool = False) -> Any:
        return SpanContext(int(trace, 16), int(span, 16), is_remote=remote, trace_flags=TraceFlags(1))

    def span(name: str, kind: Any, ctx: TraceContext, start: int, end: int, ok: bool,
             attributes: dict[str, Any]) -> Any:
        parent = context(ctx.trace_id, ctx.parent_id, True) if ctx.parent_id else None
        return ReadableSpan(name=name, context=context(ctx.trace_id, ctx.span_id), parent=parent, resource=resource,
                            attributes=attributes, kind=kind, start_time=start, end_time=end,
                            status=Status(StatusCode.OK if ok else StatusCode.ERROR))

    async def pump() -> None:
        async for ev in bus.subscribe(replay=False):
            if isinstance(ev, TaskEvent):
                trace = ev.task.trace
                if trace is None:
                    continue
                started.setdefault(trace.span_id, _nanos(ev.time))
                if ev.state.terminal:
                    await asyncio.to_thread(exporter.export, [span(f"task {ev.skill or ev.server}", SpanKind.SERVER, trace,
                                          started.pop(trace.span_id), _nanos(ev.time), ev.state.value == "completed",
                                          {"a2a.task_id": ev.task_id, "a2a.context_id": ev.context_id,
                                           "a2a.state": ev.state.value, "toolnexus.server": ev.server})])
            elif isinstance(ev, RemoteCallEvent) and ev.done:
                call = TraceContext(ev.trace_id, ev.span_id, ev.parent_span_id)
                await asyncio.to_thread(exporter.export, [span(f"call {ev.peer}", SpanKind.CLIENT, call, _nanos(ev.started), _nanos(ev.time),
                                      ev.state == "completed",
                                      {"a2a.task_id": ev.task_id, "a2a.remote_task_id": ev.remote_task_id,
                                       "a2a.peer": ev.peer, "a2a.state": ev.state})])

    return asyncio.ensure_future(pump())
