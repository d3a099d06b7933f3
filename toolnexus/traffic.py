"""The wire log: every HTTP exchange as a :class:`TrafficEvent`, with secrets masked.

Masked everywhere: every header whose name says it carries a secret (``Authorization``,
``Cookie``, ``x-api-key``, ``x-goog-api-key``, ``private-token``, anything with ``auth``,
``token``, ``key``, ``secret``, ``pass``, ``session``, ``cookie`` or ``signature`` in its name),
any header named secret by the caller (values read from the environment), the password of a URL
and the values of its secret-looking query parameters; and each such value (and a bearer token
without its scheme, and its JSON-escaped form) wherever it appears again: in a body, an SSE
frame, an error, a URL, a curl command.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import re
import time
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, cast

from . import _json
from .events import EventBus, TrafficEvent
from .http.fetch import exchange, why
from .protocol import rest
from .protocol.model import iso_utc
from .protocol.operations import OPERATIONS
from .secrets import (
    MASK,
    SECRET_HEADERS,
    _masked,
    body_secrets,
    is_secret_name,
    mask_headers,
    mask_text,
    mask_url,
    secret_parts,
    url_secrets,
)

__all__ = [
    "SECRET_HEADERS",
    "is_secret_name",
    "secret_parts",
    "mask_headers",
    "mask_text",
    "mask_url",  # from .secrets
    "TrafficRecorder",
    "InboundRecorder",
    "to_curl",
    "curl_masks",
    "recording_transport",
    "answered",
    "recorded_exchange",
]

BODY_CAP = 256 * 1024
MAX_LEARNT = 8192
"""The longest secret value learnt to be masked wherever it appears again, in characters: a longer
one is masked in its header (by name) only, so a peer sending a new huge credential in each
request cannot grow what a recorder keeps, and searches every text for, without bound."""
PUBLISH_EVERY = (
    0.02  # seconds an inbound exchange may wait to be published with the others of its batch
)


class TrafficRecorder:
    """Keeps the last ``keep`` exchanges and publishes each on a bus (when one is given)."""

    def __init__(
        self,
        bus: EventBus | None = None,
        keep: int = 1000,
        peer: str = "",
        by: str | None = None,
        max_bytes: int | None = None,
    ) -> None:
        self.bus = bus
        self.max_bytes = max_bytes
        """The bodies the recorder keeps together, at most (the oldest exchanges go first); None:
        only ``keep`` bounds them."""
        self._kept = 0  # their bodies' characters, with max_bytes
        self.peer = peer
        self.by = by
        """Who makes these exchanges when it is not the app's own client (``"doctor"``): on each event."""
        self.events: collections.deque[TrafficEvent] = collections.deque(maxlen=keep)
        self.secret_names: set[str] = set()
        self.secret_values: set[str] = set()
        self._sorted: tuple[int, list[str]] | None = None
        self.cassette: Any = None
        """A :class:`~toolnexus.debug.cassette.CassetteWriter` that each exchange is also written to."""
        self.cut = 0
        """Inbound exchanges recorded cut short: a request or response body past ``BODY_CAP``."""

    def secret(self, header: str, value: str | None = None) -> None:
        """Treat this header (and this value, wherever it appears) as a secret."""
        self.secret_names.add(header.lower())
        if value:
            self.secret_values.update(secret_parts(value))

    def learn(self, headers: Mapping[str, str] | Iterable[tuple[str, str]], url: str = "") -> None:
        """Remember the secret values in these request headers and this URL, to mask them wherever
        they appear again (a peer echoing a token in its body, an error message)."""
        items = cast(
            "Iterable[tuple[str, str]]",
            headers.items() if isinstance(headers, Mapping) else headers,
        )
        for key, value in items:
            if (
                value
                and len(value) <= MAX_LEARNT
                and (key.lower() in self.secret_names or is_secret_name(key))
            ):
                self.secret_values.update(secret_parts(value))
        if url:
            self.secret_values.update(url_secrets(url))

    def mask(self, text: str) -> str:
        """``text`` with every secret value this recorder knows masked."""
        return _masked(text, self._sorted_values()) if text else text

    def _sorted_values(self) -> list[str]:
        """The secret values, longest first (sorted again only when one was learnt)."""
        if self._sorted is None or self._sorted[0] != len(self.secret_values):
            self._sorted = (
                len(self.secret_values),
                sorted((v for v in self.secret_values if len(v) >= 4), key=len, reverse=True),
            )
        return self._sorted[1]

    def record(
        self,
        *,
        direction: str,
        method: str,
        url: str,
        status: int | None,
        started: float,
        request_headers: Mapping[str, str],
        request_body: bytes | str,
        response_headers: Mapping[str, str] | None = None,
        response_body: bytes | str = b"",
        rpc_method: str | None = None,
        frames: list[str] | None = None,
        error: str | None = None,
        peer: str | None = None,
        task_id: str | None = None,
        server: str | None = None,
    ) -> TrafficEvent:
        """One exchange on the wire log, every secret in it masked."""
        self.learn(request_headers, url)
        for body in (request_body, response_body):  # an OAuth exchange's tokens and codes
            found = body_secrets(_text(body)) if body else []
            if found:
                self.secret_values.update(found)
        values = self._sorted_values()
        event = TrafficEvent(
            direction=direction,
            method=method,
            url=self.mask(mask_url(url)),
            status=status,
            ms=(time.perf_counter() - started) * 1000,
            request_headers=mask_headers(request_headers, self.secret_names, values),
            request_body=self.mask(_text(request_body)),
            response_headers=mask_headers(response_headers or {}, self.secret_names, values),
            response_body=self.mask(_text(response_body)),
            rpc_method=rpc_method,
            peer=self.mask(mask_url(self.peer if peer is None else peer)),
            frames=[self.mask(f) for f in frames or []],
            error=self.mask(error) if error else None,
            task_id=task_id,
            server=server,
            by=self.by,
        )
        self._keep(event)
        if self.cassette is not None:
            self.cassette.write(event)
        if self.bus is not None:
            self.bus.publish(event)
        return event

    def _keep(self, event: TrafficEvent) -> None:
        """Keep ``event``, the oldest let go past ``keep`` exchanges or ``max_bytes`` of bodies."""
        if self.max_bytes is None:
            self.events.append(event)
            return
        if len(self.events) == self.events.maxlen and self.events:
            self._kept -= _bodies(self.events[0])
        self.events.append(event)
        self._kept += _bodies(event)
        while self._kept > self.max_bytes and len(self.events) > 1:
            self._kept -= _bodies(self.events.popleft())

    def sent(
        self,
        method: str,
        url: str,
        started: float,
        request_headers: Mapping[str, str],
        request_body: bytes | str,
        answer: tuple[Any, bytes | str] | None = None,
        *,
        error: str | None = None,
        rpc_method: str | None = None,
        response_headers: Mapping[str, str] | None = None,
        frames: list[str] | None = None,
        peer: str | None = None,
        task_id: str | None = None,
        server: str | None = None,
    ) -> TrafficEvent:
        """An outgoing request on the wire log, with its ``answer``, ``(response, body read)``, or
        the ``error`` why there was none (or what went wrong after it). The response is httpx's
        (its status and headers), or only its status (an int; None: none came), its headers then
        ``response_headers`` when given."""
        response, body = answer if answer is not None else (None, b"")
        if response is None or isinstance(response, int):
            status = response
        else:
            status, response_headers = response.status_code, dict(response.headers)
        return self.record(
            direction="out",
            method=method,
            url=url,
            status=status,
            started=started,
            request_headers=request_headers,
            request_body=request_body,
            response_headers=response_headers,
            response_body=body,
            rpc_method=rpc_method,
            frames=frames,
            error=error,
            peer=peer,
            task_id=task_id,
            server=server,
        )

    def as_curl(self, event: TrafficEvent) -> str:
        """The exchange as a curl command line (secrets stay masked)."""
        return to_curl(event)


def _bodies(event: TrafficEvent) -> int:
    return len(event.request_body) + len(event.response_body) + sum(map(len, event.frames))


async def recorded_exchange(
    traffic: TrafficRecorder | None,
    http: Any,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    content: bytes = b"",
    rpc_method: str | None = None,
    **bounds: Any,
) -> tuple[Any, bytes]:
    """:func:`~toolnexus.http.fetch.exchange` (``bounds``: its ``limit``, ``timeout``, ...) on the
    wire log (``traffic``, when there is one): the request and its answer, or why there was none
    (the error then raised again)."""
    started = time.perf_counter()
    try:
        r, body = await exchange(http, method, url, headers=headers, content=content, **bounds)
    except Exception as exc:
        if traffic is not None:
            traffic.sent(
                method, url, started, dict(headers), content, error=why(exc), rpc_method=rpc_method
            )
        raise
    if traffic is not None:
        traffic.sent(method, url, started, dict(headers), content, (r, body), rpc_method=rpc_method)
    return r, body


def _text(body: bytes | str | Any) -> str:
    if isinstance(body, bytes):
        text = body[:BODY_CAP].decode("utf-8", "replace")
        return text + (f"... [{len(body) - BODY_CAP} more bytes]" if len(body) > BODY_CAP else "")
    return str(body)[:BODY_CAP]


def to_curl(event: TrafficEvent, templates: Mapping[str, str] | None = None) -> str:
    """A TrafficEvent as a curl command (headers as captured, secrets masked).

    ``templates``: header values as the user wrote them (``Bearer ${TOKEN}``); a header sent from
    one is written with its environment reference in double quotes, so the pasted command works
    where that variable is set. Any other secret stays ``***``: see :func:`curl_masks`.
    """
    given = {k.lower(): v for k, v in (templates or {}).items() if _ENV_REF.search(v)}
    parts = ["curl", "-sS", "-X", event.method]
    for key, value in event.request_headers.items():
        if key in ("content-length", "host", "accept-encoding", "connection", "user-agent"):
            continue
        if key in given:
            parts += ["-H", _dquote_env(f"{key}: {given[key]}")]
            continue
        parts += ["-H", _quote(f"{key}: {value}")]
    if event.request_body:
        parts += ["--data-binary", _quote(event.request_body)]
    parts.append(_quote(event.url))
    return " ".join(parts)


_ENV_REF = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}")


def _dquote_env(text: str) -> str:
    """``text`` in double quotes for a POSIX shell, its ``${VAR}`` references left to expand and
    everything else literal (``\\ " $ ` `` escaped)."""
    out, last = [], 0
    for ref in _ENV_REF.finditer(text):
        out.append(re.sub(r'([\\"$`])', r"\\\1", text[last : ref.start()]))
        out.append(ref.group(0))
        last = ref.end()
    out.append(re.sub(r'([\\"$`])', r"\\\1", text[last:]))
    return '"' + "".join(out) + '"'


def curl_masks(curl: str) -> bool:
    """Whether a curl command from :func:`to_curl` still holds a masked secret (``***``)."""
    return MASK in curl


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def recording_transport(recorder: TrafficRecorder, httpx_module: Any = None) -> Any:
    """An HTTP transport (for ``httpx`` or ``httpx2``) that records every exchange on ``recorder``,
    streamed responses included (recorded when their stream closes, frame by frame)."""
    if httpx_module is None:
        import httpx2 as httpx_module  # noqa: PLC0415  # start-up: httpx2, the MCP SDK's HTTP client

    module = httpx_module

    class RecordingTransport(module.AsyncBaseTransport):
        def __init__(self) -> None:
            self.inner = module.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            started = time.perf_counter()
            body = await request.aread()
            rpc = _rpc_method(body)
            try:
                response = await self.inner.handle_async_request(request)
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
                url = str(request.url)
                headers = dict(request.headers)
                recorder.sent(
                    request.method, url, started, headers, body, error=error, rpc_method=rpc
                )
                raise
            inner_stream, chunks = response.stream, []

            class Tee(module.AsyncByteStream):
                async def __aiter__(self) -> Any:
                    async for chunk in inner_stream:
                        chunks.append(chunk)
                        yield chunk

                async def aclose(self) -> None:
                    await inner_stream.aclose()
                    content = b"".join(chunks)
                    url, headers = str(request.url), dict(request.headers)
                    answer = (response, content)
                    frames = sse_data(content)
                    recorder.sent(
                        request.method,
                        url,
                        started,
                        headers,
                        body,
                        answer,
                        rpc_method=rpc,
                        frames=frames,
                    )

            return module.Response(
                status_code=response.status_code,
                headers=response.headers,
                stream=Tee(),
                extensions=response.extensions,
                request=request,
            )

        async def aclose(self) -> None:
            await self.inner.aclose()

    return RecordingTransport()


def sse_data(content: bytes) -> list[str]:
    """The ``data:`` lines of a recorded SSE body, one per frame as the wire log shows them."""
    return [
        line[5:].strip().decode("utf-8", "replace")
        for line in content.split(b"\n")
        if line.startswith(b"data:")
    ]


def _rpc_method(body: bytes) -> str | None:
    """The JSON-RPC method a request body names; for a body that answers a request of the peer's
    own (an MCP client's answer to a server's elicitation or sampling), what it answers."""
    sent = _json.loads_or_none(body)
    return _method_of(sent) or answered(sent)


def answered(message: Any, asked: Mapping[Any, str] | None = None) -> str | None:
    """``answer to elicitation/create #3`` for a JSON-RPC response (an id and a result or an error,
    no method): the method of the request it answers when ``asked`` (id -> method) knows it, its
    id alone otherwise; None for anything else."""
    if not isinstance(message, dict) or "method" in message or "id" not in message:
        return None
    if "result" not in message and "error" not in message:
        return None
    rid = message["id"]
    if not isinstance(rid, (str, int)) or isinstance(rid, bool):
        return None
    method = (asked or {}).get(rid)
    return f"answer to {method + ' ' if method else ''}#{str(rid)[:40]}"


def _method_of(request: Any) -> str | None:
    """The JSON-RPC method a decoded request names, or None."""
    method = request.get("method") if isinstance(request, dict) else None
    return method if isinstance(method, str) else None


class InboundRecorder:
    """ASGI middleware: every exchange a served toolkit has with its callers, on the wire log.

    Each request and its response (SSE frames one by one, bodies up to ``BODY_CAP``) become one
    inbound :class:`TrafficEvent` on ``recorder`` (so on its bus), masked like the outbound ones,
    with the A2A task it is about (``task_id``) so a task's view can put the wire beside its
    lifecycle. Refused requests (421, 401, 413 ...) are recorded too. A stream is recorded when
    it ends. Installed only when asked for (``serve(..., record_wire=True)``): nothing is paid
    otherwise.

    What a request pays is kept small (measured with ``bench/serve_bench.py --wire``): while it is
    served it keeps references to what crossed (header lists, body chunks up to ``BODY_CAP``);
    when it ends they become one tuple of bytes, strings and numbers, which the garbage collector
    stops looking at after one glance; nothing is decoded, searched or masked then. The exchanges
    that ended within ``PUBLISH_EVERY`` (20 ms) are published together, their secrets learnt
    first; every field of an event (URL, method, task, bodies, masking) is worked out when first
    read.
    """

    def __init__(self, app: Any, recorder: TrafficRecorder, server: str) -> None:
        self.app = app
        self.recorder = recorder
        self.server = server
        self._ended: list[tuple[Any, ...]] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        request: list[Any] = [0]  # bytes kept, then the body's chunks
        response: list[Any] = [None, (), 0]  # status, headers, bytes kept, then the body's chunks
        error: str | None = None
        method = scope["method"]

        async def recv() -> Any:
            message = await receive()
            if message["type"] == "http.request":
                chunk = message.get("body", b"")
                if request[0] < BODY_CAP:
                    request.append(chunk)
                request[0] += len(chunk)  # every byte counted: past BODY_CAP, the record is cut
            return message

        def emit(message: Any) -> Any:  # hands back send's own awaitable: no coroutine of its own
            if message["type"] == "http.response.body":
                chunk = message.get("body", b"")
                if response[2] < BODY_CAP:
                    response.append(chunk)
                response[2] += len(chunk)
            elif message["type"] == "http.response.start":
                response[0] = message["status"]
                response[1] = message.get("headers", ())
            return send(message)

        try:
            await self.app(scope, receive if method == "GET" or method == "HEAD" else recv, emit)
        except BaseException as exc:
            error = f"{type(exc).__name__}: {exc}".strip()
            raise
        finally:
            # flat: bytes, strings, numbers and tuples of them (no list, no dict, nothing of the
            # scope), so that the collector untracks it at first sight and keeps nothing else alive
            self._ended.append(
                (
                    method,
                    scope.get("scheme", "http"),
                    scope["path"],
                    scope["query_string"],
                    tuple(scope["headers"]),
                    scope.get("client"),
                    b"".join(request[1:])[:BODY_CAP] if request[0] else b"",
                    response[0],
                    tuple(response[1]),
                    b"".join(response[3:])[:BODY_CAP] if response[2] else b"",
                    error,
                    started,
                    time.perf_counter(),
                    request[0] > BODY_CAP or response[2] > BODY_CAP,
                )
            )
            if (
                len(self._ended) == 1
            ):  # published in batches: one wake-up of the bus's readers for many
                asyncio.get_running_loop().call_later(PUBLISH_EVERY, self._publish)

    def _publish(self) -> None:
        """The exchanges ended since the last call, as events, on the recorder and its bus."""
        ended, self._ended = self._ended, []
        rec = self.recorder
        wall, now = time.time(), time.perf_counter()
        for raw in ended:  # learnt first, so that every event masks them
            secret = [
                (k.decode("latin-1"), v.decode("latin-1")) for k, v in raw[4] if _secret_raw(k)
            ]
            if secret or raw[3]:
                rec.learn(secret, f"http://x/?{raw[3].decode('latin-1')}" if raw[3] else "")
        rec.cut += sum(raw[13] for raw in ended)
        events = [_Inbound(rec, raw, wall - (now - raw[12]), self.server) for raw in ended]
        if rec.events.maxlen != 0:  # a served toolkit's recorder keeps none: the bus keeps them
            rec.events.extend(events)
        if rec.bus is not None:
            rec.bus.publish_many(events)


def _pairs(headers: Iterable[tuple[bytes, bytes]]) -> list[tuple[str, str]]:
    return [(k.decode("latin-1"), v.decode("latin-1")) for k, v in headers]


@functools.lru_cache(maxsize=1024)
def _secret_raw(name: bytes) -> bool:
    return is_secret_name(name.decode("latin-1"))


_cached = functools.cached_property


class _Inbound(TrafficEvent):
    """An inbound exchange whose every field is worked out (decoded, parsed, masked) when first
    read: a served request pays for keeping what crossed, not for showing it.

    What it was, unmasked, is in slots (never in ``vars(event)``, never in its repr); an event
    nobody has read is one object the collector tracks, with no ``__dict__`` yet."""

    __slots__ = ("_rec", "_raw", "_wall", "server", "seq", "_parsed")
    direction = "in"
    kind = "traffic"

    def __init__(
        self, recorder: TrafficRecorder, raw: tuple[Any, ...], wall: float, server: str
    ) -> None:
        self._rec = recorder
        self._raw = raw  # method, scheme, path, query, headers, client, body, status, headers, answer, error, started, ended
        self._wall = wall
        self.server = server
        self.seq = 0

    def _headers(self, headers: Iterable[tuple[bytes, bytes]]) -> dict[str, str]:
        rec = self._rec
        return mask_headers(_pairs(headers), rec.secret_names, rec._sorted_values())

    @property
    def size(self) -> int:  # the raw bodies' lengths, nothing decoded
        raw = self._raw
        return 512 + len(raw[6]) + len(raw[9])

    method = _cached(lambda self: self._raw[0])  # type: ignore[assignment]  # a field decoded on first read, over the event's own
    peer = _cached(lambda self: "%s:%s" % (self._raw[5] or ("?", 0)))  # type: ignore[assignment]  # a field decoded on first read, over the event's own
    status = _cached(lambda self: self._raw[7])  # type: ignore[assignment]  # a field decoded on first read, over the event's own
    error = _cached(lambda self: self._raw[10] and self._rec.mask(self._raw[10]))  # type: ignore[assignment]  # a field decoded on first read, over the event's own
    ms = _cached(lambda self: (self._raw[12] - self._raw[11]) * 1000)  # type: ignore[assignment]  # a field decoded on first read, over the event's own

    @_cached
    def url(self) -> str:  # type: ignore[override]  # decoded from the raw record on first read, over the event's field
        raw = self._raw
        host = next((v.decode("latin-1") for k, v in raw[4] if k == b"host"), "")
        query = raw[3].decode("latin-1")
        return self._rec.mask(
            mask_url(f"{raw[1]}://{host}{raw[2]}" + (f"?{query}" if query else ""))
        )

    @_cached
    def time(self) -> str:  # type: ignore[override]  # decoded from the raw record on first read, over the event's field
        return iso_utc(datetime.fromtimestamp(self._wall, UTC))

    def _decoded(self) -> tuple[Any, tuple[str, dict[str, str]] | None]:
        """The request body decoded, and the HTTP+JSON operation and path fields when it is one:
        worked out once, kept in a slot (unmasked, so never in ``vars(event)``)."""
        try:
            return self._parsed
        except AttributeError:
            sent = _json.loads_or_none(self._raw[6]) if self._raw[0] == "POST" else None
            route = (
                None
                if self._raw[0] == "POST" and _method_of(sent)
                else rest.match(self._raw[0], self._raw[2])
            )
            self._parsed = (sent, route)
            return self._parsed

    _sent = property(lambda self: self._decoded()[0])
    _rest = property(lambda self: self._decoded()[1])

    @_cached
    def rpc_method(self) -> str | None:  # type: ignore[override]  # decoded from the raw record on first read, over the event's field
        found = self._rest
        return OPERATIONS[found[0]].v10 if found else _method_of(self._sent)

    @_cached
    def task_id(self) -> str | None:  # type: ignore[override]  # decoded from the raw record on first read, over the event's field
        if self.rpc_method is None:
            return None
        answer = self._raw[9]
        sse = answer.startswith(b"data:") or b"\ndata:" in answer[:200]
        first = _json.loads_or_none(
            (answer.split(b"\n\n", 1)[0].partition(b"data:")[2] if sse else answer).strip()
        )
        found = self._rest
        if found is None:
            return task_id_of(self._sent, first)
        # HTTP+JSON: the answer is the result itself, the path names the task
        sent = self._sent if isinstance(self._sent, dict) else {}
        named = found[1].get("taskId") or found[1].get("id")
        return task_id_of({"params": {**sent, "id": named} if named else sent}, {"result": first})

    @_cached
    def request_headers(self) -> dict[str, str]:  # type: ignore[override]  # decoded from the raw record on first read, over the event's field
        return self._headers(self._raw[4])

    @_cached
    def request_body(self) -> str:  # type: ignore[override]  # decoded from the raw record on first read, over the event's field
        return self._rec.mask(_text(self._raw[6]))

    @_cached
    def response_headers(self) -> dict[str, str]:  # type: ignore[override]  # decoded from the raw record on first read, over the event's field
        return self._headers(self._raw[8])

    @_cached
    def response_body(self) -> str:  # type: ignore[override]  # decoded from the raw record on first read, over the event's field
        return self._rec.mask(_text(self._raw[9]))

    @_cached
    def frames(self) -> list[str]:  # type: ignore[override]  # decoded from the raw record on first read, over the event's field
        if not self.response_headers.get("content-type", "").startswith("text/event-stream"):
            return []
        return [self._rec.mask(frame) for frame in sse_data(self._raw[9])]


def task_id_of(request: Any, response: Any) -> str | None:
    """The A2A task an exchange is about: from the answer (a task, a task wrapped in ``task``, a
    status or artifact update, in any dialect), else from the request (``params.id``,
    ``params.message.taskId``)."""
    result = response.get("result") if isinstance(response, dict) else None
    if isinstance(result, dict):
        for body in (
            result,
            result.get("task"),
            result.get("statusUpdate"),
            result.get("artifactUpdate"),
        ):
            if isinstance(body, dict):
                found = body.get("taskId") or (body.get("id") if "status" in body else None)
                if isinstance(found, str) and found:
                    return found
    params = request.get("params") if isinstance(request, dict) else None
    if isinstance(params, dict):
        found = params.get("id")
        if not isinstance(found, str):
            message = params.get("message")
            found = message.get("taskId") if isinstance(message, dict) else None
        if isinstance(found, str) and found:
            return found
    return None
