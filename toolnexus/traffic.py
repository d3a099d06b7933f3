"""The wire log: every HTTP exchange as a :class:`TrafficEvent`, with secrets masked.

Masked everywhere: ``Authorization``, ``Proxy-Authorization``, ``x-api-key``, ``api-key``,
``Cookie``, ``Set-Cookie``, ``x-auth-token``, any header whose value was read from the
environment (``${VAR}`` in a config), and those values wherever they appear in a body.
"""

from __future__ import annotations

import collections
import time
from collections.abc import Iterable, Mapping
from typing import Any

from .events import EventBus, TrafficEvent

__all__ = ["SECRET_HEADERS", "mask_headers", "mask_text", "TrafficRecorder", "to_curl", "recording_transport"]

SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie",
                            "x-auth-token"})
MASK = "***"
BODY_CAP = 256 * 1024


def mask_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]], secret_names: Iterable[str] = (),
                 secret_values: Iterable[str] = ()) -> dict[str, str]:
    """A copy of ``headers`` with every secret value replaced (``Bearer ***`` keeps the scheme)."""
    names = SECRET_HEADERS | {n.lower() for n in secret_names}
    values = [v for v in secret_values if v]
    items = headers.items() if isinstance(headers, Mapping) else headers
    out: dict[str, str] = {}
    for key, value in items:
        lower = key.lower()
        if lower in names or any(v and v in value for v in values):
            scheme, sep, rest = value.partition(" ")
            out[lower] = f"{scheme} {MASK}" if sep and rest and scheme.lower() in ("bearer", "basic", "token") \
                else MASK
        else:
            out[lower] = value
    return out


def mask_text(text: str, secret_values: Iterable[str]) -> str:
    for value in secret_values:
        if value and len(value) >= 4:
            text = text.replace(value, MASK)
    return text


class TrafficRecorder:
    """Keeps the last ``keep`` exchanges and publishes each on a bus (when one is given)."""

    def __init__(self, bus: EventBus | None = None, keep: int = 1000, peer: str = "") -> None:
        self.bus = bus
        self.peer = peer
        self.events: collections.deque[TrafficEvent] = collections.deque(maxlen=keep)
        self.secret_names: set[str] = set()
        self.secret_values: set[str] = set()

    def secret(self, header: str, value: str | None = None) -> None:
        """Treat this header (and this value, wherever it appears) as a secret."""
        self.secret_names.add(header.lower())
        if value:
            self.secret_values.add(value)

    def record(self, *, direction: str, method: str, url: str, status: int | None, started: float,
               request_headers: Mapping[str, str], request_body: bytes | str,
               response_headers: Mapping[str, str] | None = None, response_body: bytes | str = b"",
               rpc_method: str | None = None, frames: list[str] | None = None, error: str | None = None) -> TrafficEvent:
        values = self.secret_values
        event = TrafficEvent(
            direction=direction,
            method=method,
            url=url,
            status=status,
            ms=(time.perf_counter() - started) * 1000,
            request_headers=mask_headers(request_headers, self.secret_names, values),
            request_body=mask_text(_text(request_body), values),
            response_headers=mask_headers(response_headers or {}, self.secret_names, values),
            response_body=mask_text(_text(response_body), values),
            rpc_method=rpc_method,
            peer=self.peer,
            frames=[mask_text(f, values) for f in frames or []],
            error=mask_text(error, values) if error else None,
        )
        self.events.append(event)
        if self.bus is not None:
            self.bus.publish(event)
        return event

    def as_curl(self, event: TrafficEvent) -> str:
        """The exchange as a curl command line (secrets stay masked)."""
        return to_curl(event)


def _text(body: bytes | str | Any) -> str:
    if isinstance(body, bytes):
        text = body[:BODY_CAP].decode("utf-8", "replace")
        return text + (f"... [{len(body) - BODY_CAP} more bytes]" if len(body) > BODY_CAP else "")
    return str(body)[:BODY_CAP]


def to_curl(event: TrafficEvent) -> str:
    """A TrafficEvent as a curl command (headers as captured, secrets masked)."""
    parts = ["curl", "-sS", "-X", event.method]
    for key, value in event.request_headers.items():
        if key in ("content-length", "host", "accept-encoding", "connection", "user-agent"):
            continue
        parts += ["-H", _quote(f"{key}: {value}")]
    if event.request_body:
        parts += ["--data-binary", _quote(event.request_body)]
    parts.append(_quote(event.url))
    return " ".join(parts)


def _quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def recording_transport(recorder: TrafficRecorder, httpx_module: Any = None) -> Any:
    """An HTTP transport (for ``httpx`` or ``httpx2``) that records every exchange on ``recorder``,
    streamed responses included (recorded when their stream closes, frame by frame)."""
    if httpx_module is None:
        import httpx2 as httpx_module

    module = httpx_module

    class RecordingTransport(module.AsyncBaseTransport):  # type: ignore[misc,name-defined]
        def __init__(self) -> None:
            self.inner = module.AsyncHTTPTransport()

        async def handle_async_request(self, request: Any) -> Any:
            started = time.perf_counter()
            body = await request.aread()
            rpc = _rpc_method(body)
            try:
                response = await self.inner.handle_async_request(request)
            except Exception as exc:
                recorder.record(direction="out", method=request.method, url=str(request.url), status=None,
                                started=started, request_headers=dict(request.headers), request_body=body,
                                rpc_method=rpc, error=f"{type(exc).__name__}: {exc}")
                raise
            inner_stream, chunks = response.stream, []

            class Tee(module.AsyncByteStream):  # type: ignore[misc,name-defined]
                async def __aiter__(self) -> Any:
                    async for chunk in inner_stream:
                        chunks.append(chunk)
                        yield chunk

                async def aclose(self) -> None:
                    await inner_stream.aclose()
                    content = b"".join(chunks)
                    frames = [line[5:].strip().decode("utf-8", "replace") for line in content.split(b"\n")
                              if line.startswith(b"data:")]
                    recorder.record(direction="out", method=request.method, url=str(request.url),
                                    status=response.status_code, started=started,
                                    request_headers=dict(request.headers), request_body=body,
                                    response_headers=dict(response.headers), response_body=content,
                                    rpc_method=rpc, frames=frames)

            return module.Response(status_code=response.status_code, headers=response.headers, stream=Tee(),
                                   extensions=response.extensions, request=request)

        async def aclose(self) -> None:
            await self.inner.aclose()

    return RecordingTransport()


def _rpc_method(body: bytes) -> str | None:
    import json

    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data.get("method") if isinstance(data, dict) and isinstance(data.get("method"), str) else None
