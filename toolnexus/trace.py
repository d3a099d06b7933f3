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
import collections
import contextlib
import contextvars
import logging
import os
import ssl
from datetime import datetime
from typing import Any

import httpx

from .errors import MissingExtra
from .events import Dropped, EventBus, RemoteCallEvent, TaskEvent
from .http.fetch import why
from .protocol.tracecontext import HEADER, TraceContext, new_trace, parse_traceparent

log = logging.getLogger("toolnexus.trace")

__all__ = ["TraceContext", "parse_traceparent", "new_trace", "export_spans", "HEADER"]

# -- where a trace is, while a request or a run is under way ------------------------------------
incoming: contextvars.ContextVar[TraceContext | None] = contextvars.ContextVar(
    "toolnexus_incoming", default=None
)
"""The caller's span of the request being served (set where the request is read)."""

calling: contextvars.ContextVar[TraceContext | None] = contextvars.ContextVar(
    "toolnexus_calling", default=None
)
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
STARTED_LIMIT = 100_000
"""Traced tasks whose start is kept until they end (the oldest are forgotten past it)."""


COLLECTOR_ANSWER = 64 * 1024
"""Bytes of a collector's answer read (an OTLP answer is a few bytes; the rest is never read)."""


def otlp_exporter() -> Any:
    """An OTLP/HTTP span exporter when the standard ``OTEL_EXPORTER_OTLP_*`` variables name an
    endpoint (it reads them all itself: headers, timeout, compression, TLS), else None. Call it on
    the serving loop: its POSTs are made there (see :class:`_Collector`).

    Raises:
        MissingExtra: an endpoint is set and the exporter is not installed.
    """
    if not any(os.environ.get(name) for name in OTLP_ENV):
        return None
    exporter = otel("OTEL_EXPORTER_OTLP_* is set: exporting spans over OTLP needs").OTLPSpanExporter
    collector: Any = _Collector(asyncio.get_running_loop())  # a Session as far as it is used
    return exporter(session=collector)


def otel(needs: str):  # the module itself, which the type checker reads whole
    """OpenTelemetry (:mod:`toolnexus._otel`), loaded here and nowhere else.

    Raises:
        MissingExtra: it is not installed (``needs`` says what needed it).
    """
    try:
        from . import _otel  # noqa: PLC0415  # optional extra: otel
    except ImportError:
        raise MissingExtra(f"{needs} pip install 'toolnexus[otel]'") from None
    return _otel


class _Collector:
    """What the OTLP exporter posts through, in place of its ``requests.Session``: each POST is made
    on the serving loop with httpx, its answer read to ``COLLECTOR_ANSWER`` bytes and within the
    export's timeout in all. requests read a collector's answer whole, for as long as it came: an
    endless one grew an agent by 340 MiB in 13 s, and one trickled a byte at a time held the
    export's thread, and with it the agent's exit, past any bound. The exporter keeps everything
    else: its settings (endpoint, headers, timeout, compression; TLS through ``verify`` and
    ``cert``, which it sets here), its encoding, its retries."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.verify: Any = True
        self.cert: Any = None
        self._http: httpx.AsyncClient | None = None

    def request(
        self,
        method: str,
        url: str,
        *,
        headers: dict[str, str] | None = None,
        data: bytes | None = None,
        timeout: float | None = None,
        **_: Any,
    ) -> Any:
        """One POST, from the exporter's thread: a ``requests.Response``, or the ``requests``
        errors the exporter knows (a timeout, a failed connection: it retries those)."""
        loaded = otel("the OTLP exporter needs")  # loaded: it is the exporter that calls
        requests, CaseInsensitiveDict = loaded.requests, loaded.CaseInsensitiveDict

        limit = timeout if timeout else 10.0
        post = self._post(method, url, headers or {}, data or b"", limit)
        try:
            status, reason, answer_headers, body = asyncio.run_coroutine_threadsafe(
                post, self.loop
            ).result(limit + 1)
        except (TimeoutError, httpx.TimeoutException) as exc:
            raise requests.Timeout(f"the collector gave no answer within {limit:g}s") from exc
        except httpx.TransportError as exc:
            raise requests.ConnectionError(why(exc)) from exc
        response = requests.Response()
        response.status_code, response.reason, response.url = status, reason, url
        response.headers = CaseInsensitiveDict(answer_headers)
        response._content = body  # read here, bounded
        return response

    async def _post(
        self, method: str, url: str, headers: dict[str, str], data: bytes, limit: float
    ) -> tuple[int, str, dict[str, str], bytes]:
        if self._http is None:
            self._http = httpx.AsyncClient(verify=self._tls(), follow_redirects=False)
        body = b""
        async with asyncio.timeout(limit):
            async with self._http.stream(
                method, url, headers=headers, content=data, timeout=limit
            ) as r:
                async for chunk in r.aiter_bytes():
                    body += chunk
                    if len(body) >= COLLECTOR_ANSWER:
                        break  # the rest is never read
                return r.status_code, r.reason_phrase, dict(r.headers), body[:COLLECTOR_ANSWER]

    def _tls(self) -> Any:
        """The exporter's TLS settings (a CA file or folder, a client certificate) for httpx."""
        if self.verify is False:
            return False
        if isinstance(self.verify, str):
            folder = os.path.isdir(self.verify)
            context = ssl.create_default_context(
                cafile=None if folder else self.verify, capath=self.verify if folder else None
            )
        else:
            context = httpx.create_ssl_context()
        if self.cert:
            context.load_cert_chain(*((self.cert,) if isinstance(self.cert, str) else self.cert))
        return context

    def close(self) -> None:
        """The exporter's shutdown, from its thread."""
        http, self._http = self._http, None
        if http is not None and not self.loop.is_closed():
            with contextlib.suppress(Exception):
                asyncio.run_coroutine_threadsafe(http.aclose(), self.loop).result(5)


def _nanos(stamp: str | None) -> int:
    if not stamp:
        return 0
    return int(datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp() * 1_000_000_000)


def export_spans(
    bus: EventBus,
    exporter: Any,
    *,
    service: str = "toolnexus",
    batch: int = 512,
    keep: int = 10_000,
) -> asyncio.Task[None]:
    """Export every traced task and remote call seen on ``bus`` as OpenTelemetry spans.

    ``exporter`` is any ``opentelemetry.sdk.trace.export.SpanExporter`` (OTLP, console, in
    memory): a task is a SERVER span from its first state to its last (an input-required wait
    included), a remote call a CLIENT span, each with the ids it had on the wire, so the spans of
    every agent in a chain fit into one trace in any OTel backend. Returns the task that reads the
    bus; cancel it to stop (what is made and not yet exported goes first, for up to 5 s).

    Reading the bus never waits on the exporter: spans wait in a queue (at most ``keep``; past
    it the oldest are dropped, and said) and go out ``batch`` at a time from a task of their own,
    each export in a thread (a network exporter blocks; a slow or dead collector only delays its
    spans). A reader the bus cuts off (it fell behind) reads on from there, saying what it lost.
    Needs ``pip install 'toolnexus[otel]'``.
    """
    spans = _Spans(otel("exporting spans needs OpenTelemetry:"), exporter, service, batch, keep)
    return asyncio.ensure_future(spans.pump(bus))


class _Spans:
    """What :func:`export_spans` keeps: the spans made and not yet exported, when each traced
    task began, how many were dropped."""

    def __init__(self, o: Any, exporter: Any, service: str, batch: int, keep: int) -> None:
        self.o, self.exporter, self.service = o, exporter, service
        self.batch, self.keep = batch, keep
        self.resource = o.Resource.create({"service.name": service})
        self.started: dict[str, int] = {}
        """A traced task's first state, by span id (at most STARTED_LIMIT)."""
        self.pending: collections.deque[Any] = collections.deque()
        self.ready = asyncio.Event()
        self.dropped = 0

    def context(self, trace: str, span: str, remote: bool = False) -> Any:
        return self.o.SpanContext(
            int(trace, 16), int(span, 16), is_remote=remote, trace_flags=self.o.TraceFlags(1)
        )

    def span(
        self,
        name: str,
        kind: Any,
        ctx: TraceContext,
        start: int,
        end: int,
        ok: bool,
        attributes: dict[str, Any],
    ) -> Any:
        o = self.o
        parent = self.context(ctx.trace_id, ctx.parent_id, True) if ctx.parent_id else None
        return o.ReadableSpan(
            name=name,
            context=self.context(ctx.trace_id, ctx.span_id),
            parent=parent,
            resource=self.resource,
            attributes=attributes,
            kind=kind,
            start_time=start,
            end_time=end,
            status=o.Status(o.StatusCode.OK if ok else o.StatusCode.ERROR),
        )

    def add(self, made: Any) -> None:
        if len(self.pending) >= self.keep:
            self.pending.popleft()
            self.dropped += 1
            if self.dropped in (1, 10, 100) or self.dropped % 1000 == 0:
                log.warning(
                    "%s: %d span(s) dropped: the exporter is %d behind",
                    self.service,
                    self.dropped,
                    self.keep,
                )
        self.pending.append(made)
        self.ready.set()

    async def ship(self) -> None:
        pending = self.pending
        while True:
            await self.ready.wait()
            self.ready.clear()
            while pending:
                chunk = [pending.popleft() for _ in range(min(self.batch, len(pending)))]
                try:
                    await asyncio.to_thread(self.exporter.export, chunk)
                except (
                    Exception
                ) as exc:  # a collector's failure is the exporter's to say; the bus reads on
                    log.warning("%s: %d span(s) not exported: %s", self.service, len(chunk), exc)

    def seen(self, ev: Any) -> None:
        SpanKind, started = self.o.SpanKind, self.started
        if isinstance(ev, TaskEvent):
            trace = ev.task.trace
            if trace is None:
                return
            if trace.span_id not in started:
                if (
                    len(started) >= STARTED_LIMIT
                ):  # tasks that never end (a question never answered)
                    started.pop(next(iter(started)))
                started[trace.span_id] = _nanos(ev.time)
            if ev.state.terminal:
                self.add(
                    self.span(
                        f"task {ev.skill or ev.server}",
                        SpanKind.SERVER,
                        trace,
                        started.pop(trace.span_id, _nanos(ev.time)),
                        _nanos(ev.time),
                        ev.state.value == "completed",
                        {
                            "a2a.task_id": ev.task_id,
                            "a2a.context_id": ev.context_id,
                            "a2a.state": ev.state.value,
                            "toolnexus.server": ev.server,
                        },
                    )
                )
        elif isinstance(ev, RemoteCallEvent) and ev.done:
            call = TraceContext(ev.trace_id, ev.span_id, ev.parent_span_id)
            self.add(
                self.span(
                    f"call {ev.peer}",
                    SpanKind.CLIENT,
                    call,
                    _nanos(ev.started),
                    _nanos(ev.time),
                    ev.state == "completed",
                    {
                        "a2a.task_id": ev.task_id,
                        "a2a.remote_task_id": ev.remote_task_id,
                        "a2a.peer": ev.peer,
                        "a2a.state": ev.state,
                    },
                )
            )

    async def pump(self, bus: EventBus) -> None:
        shipper = asyncio.ensure_future(self.ship())
        try:
            while True:
                async for ev in bus.subscribe(replay=False, max_queue=10_000):
                    if isinstance(
                        ev, Dropped
                    ):  # cut off for falling behind: what it missed has no span
                        log.warning(
                            "%s: spans of the events from seq %d on were lost: the reader fell behind",
                            self.service,
                            ev.missed_from,
                        )
                    else:
                        self.seen(ev)
        finally:
            shipper.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await shipper
            if (
                self.pending
            ):  # stopping: what was made goes out first (a dead collector: 5 s at most)
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(
                        asyncio.to_thread(self.exporter.export, list(self.pending)), 5
                    )
