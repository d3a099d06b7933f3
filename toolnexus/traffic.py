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

import collections
import json
import re
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import Any

from .events import EventBus, TrafficEvent

__all__ = ["SECRET_HEADERS", "is_secret_name", "secret_parts", "mask_headers", "mask_text", "mask_url",
           "TrafficRecorder", "to_curl", "recording_transport"]

SECRET_HEADERS = frozenset({"authorization", "proxy-authorization", "x-api-key", "api-key", "cookie", "set-cookie",
                            "x-auth-token", "x-goog-api-key", "private-token"})
_SECRET_WORDS = re.compile(r"auth|token|secret|passw|key|cookie|session|signature|credential", re.IGNORECASE)
_SCHEMES = ("bearer", "basic", "token", "digest")
MASK = "***"
BODY_CAP = 256 * 1024


def is_secret_name(name: str) -> bool:
    """Whether a header or query parameter of this name carries a secret."""
    lower = name.lower()
    return lower in SECRET_HEADERS or bool(_SECRET_WORDS.search(lower))


def secret_parts(value: str) -> list[str]:
    """The strings to mask for one secret value: itself, its credential without an auth scheme,
    the values of its ``name=value`` pairs, and their JSON-escaped forms."""
    parts = [value]
    scheme, sep, rest = value.partition(" ")
    if sep and rest and scheme.lower() in _SCHEMES:
        parts.append(rest.strip())
    if "=" in value:  # a cookie's or a query's name=value pairs: each value is a secret too
        parts += [pair.partition("=")[2].strip() for pair in value.split(";") if "=" in pair]
    escaped = [json.dumps(p)[1:-1] for p in parts]
    return [p for p in dict.fromkeys(parts + escaped + [p.replace("/", "\\/") for p in escaped]) if len(p) >= 4]


def mask_headers(headers: Mapping[str, str] | Iterable[tuple[str, str]], secret_names: Iterable[str] = (),
                 secret_values: Iterable[str] = ()) -> dict[str, str]:
    """A copy of ``headers`` with every secret value replaced (``Bearer ***`` keeps the scheme)."""
    names = {n.lower() for n in secret_names}
    values = [v for v in secret_values if v]
    items = headers.items() if isinstance(headers, Mapping) else headers
    out: dict[str, str] = {}
    for key, value in items:
        lower = key.lower()
        if lower in names or is_secret_name(lower) or any(v in value for v in values):
            scheme, sep, rest = value.partition(" ")
            out[lower] = f"{scheme} {MASK}" if sep and rest and scheme.lower() in _SCHEMES else MASK
        else:
            out[lower] = value
    return out


def mask_text(text: str, secret_values: Iterable[str]) -> str:
    for value in sorted((v for v in secret_values if v and len(v) >= 4), key=len, reverse=True):
        text = text.replace(value, MASK)
    return text


def mask_url(url: str) -> str:
    """``url`` with its password and the values of its secret-looking query parameters masked."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, sep, _ = userinfo.partition(":")
        netloc = f"{user}{':' + MASK if sep else ''}@{hostport}"
    query = parts.query
    if query:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        if any(is_secret_name(k) for k, _ in pairs):
            query = "&".join(f"{urllib.parse.quote(k, safe='')}={MASK if is_secret_name(k) else urllib.parse.quote(v, safe='')}"
                             for k, v in pairs)
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_secrets(url: str) -> list[str]:
    """The secret values a URL carries (its password, secret query parameters), to mask elsewhere."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return []
    found = [parts.password] if parts.password else []
    found += [v for k, v in urllib.parse.parse_qsl(parts.query) if is_secret_name(k) and v]
    return [p for v in found for p in secret_parts(v)] + [urllib.parse.quote(v, safe="") for v in found]


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
            self.secret_values.update(secret_parts(value))

    def learn(self, headers: Mapping[str, str], url: str = "") -> None:
        """Remember the secret values in these request headers and this URL, to mask them wherever
        they appear again (a peer echoing a token in its body, an error message)."""
        for key, value in headers.items():
            if value and (key.lower() in self.secret_names or is_secret_name(key)):
                self.secret_values.update(secret_parts(value))
        if url:
            self.secret_values.update(url_secrets(url))

    def mask(self, text: str) -> str:
        """``text`` with every secret value this recorder knows masked."""
        return mask_text(text, self.secret_values)

    def record(self, *, direction: str, method: str, url: str, status: int | None, started: float,
               request_headers: Mapping[str, str], request_body: bytes | str,
               response_headers: Mapping[str, str] | None = None, response_body: bytes | str = b"",
               rpc_method: str | None = None, frames: list[str] | None = None, error: str | None = None) -> TrafficEvent:
        self.learn(request_headers, url)
        values = self.secret_values
        event = TrafficEvent(
            direction=direction,
            method=method,
            url=mask_text(mask_url(url), values),
            status=status,
            ms=(time.perf_counter() - started) * 1000,
            request_headers=mask_headers(request_headers, self.secret_names, values),
            request_body=mask_text(_text(request_body), values),
            response_headers=mask_headers(response_headers or {}, self.secret_names, values),
            response_body=mask_text(_text(response_body), values),
            rpc_method=rpc_method,
            peer=mask_text(mask_url(self.peer), values),
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
