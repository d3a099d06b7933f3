"""Bounded reads from a peer over HTTP: every answer is read to at most a size and within a time
in all (httpx's own timeout is per read: a peer trickling a byte at a time would never trip it),
and an SSE stream event by event, each bounded the same way. The client, the doctor, the replay
and the webhook read peers through these."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Mapping
from urllib.parse import urlsplit

import httpx

__all__ = [
    "MAX_CARD",
    "MAX_RESPONSE",
    "MAX_FRAME",
    "AnswerTooLarge",
    "AnswerTooSlow",
    "read_body",
    "exchange",
    "sse_events",
    "NDJSON_TYPES",
    "why",
    "peer_url",
]


MAX_CARD = 2 * 1024 * 1024
"""The largest agent card read, in bytes."""
MAX_RESPONSE = 16 * 1024 * 1024
"""The largest JSON-RPC answer read, in bytes."""
MAX_FRAME = 4 * 1024 * 1024
"""The largest SSE event read, in bytes."""


class AnswerTooLarge(httpx.HTTPError):
    """A peer's answer went past the size this client reads."""


class AnswerTooSlow(httpx.TimeoutException):
    """A peer's answer did not arrive whole within the time this client gives it."""


async def read_body(r: httpx.Response, limit: int) -> bytes:
    """The whole body of ``r``, refused past ``limit`` bytes (after decompression)."""
    declared = r.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise AnswerTooLarge(f"the answer is {int(declared):,} bytes; at most {limit:,} are read")
    chunks, size = [], 0
    async for chunk in r.aiter_bytes():
        size += len(chunk)
        if size > limit:
            raise AnswerTooLarge(f"the answer passed {limit:,} bytes; at most that much is read")
        chunks.append(chunk)
    return b"".join(chunks)


async def exchange(
    http: httpx.AsyncClient,
    method: str,
    url: str,
    *,
    headers: Mapping[str, str],
    content: bytes = b"",
    limit: int,
    timeout: float,
) -> tuple[httpx.Response, bytes]:
    """One request and its whole answer: at most ``limit`` bytes, within ``timeout`` seconds in all
    (httpx's own timeout is per read: a peer trickling a byte at a time would never trip it)."""
    try:
        async with asyncio.timeout(timeout):
            async with http.stream(
                method, url, content=content, headers=dict(headers), timeout=timeout
            ) as r:
                return r, await read_body(r, limit)
    except TimeoutError:
        raise AnswerTooSlow(f"no whole answer within {timeout:g}s") from None


NDJSON_TYPES = ("application/x-ndjson", "application/jsonl", "application/json-lines")
"""Content types of a stream of JSON documents one a line, which some peers answer a stream with
instead of SSE (LiteLLM's A2A gateway did): read line by line, each line an event."""


async def sse_events(
    r: httpx.Response, timeout: float, max_frame: int, *, lines: bool = False
) -> AsyncGenerator[str, None]:
    """The ``data`` of each SSE event of ``r``, bounded in size (``max_frame`` bytes) and in the time one
    event may take to arrive once begun (``timeout``); comments and other fields are skipped.
    ``lines``: ``r`` is NDJSON (:data:`NDJSON_TYPES`), each line that is not blank an event."""
    buffer = b""
    data: list[bytes] = []
    size = 0
    begun: float | None = None
    async for chunk in r.aiter_bytes():
        if begun is None:
            begun = time.monotonic()
        buffer += chunk
        while True:
            end = buffer.find(b"\n")
            if end < 0:
                break
            line, buffer = buffer[:end].rstrip(b"\r"), buffer[end + 1 :]
            if lines:
                if line.strip():
                    yield line.decode("utf-8", "replace")
                begun = None
            elif line.startswith(b"data:"):
                data.append(line[5:].lstrip())
                size += len(line)
            elif not line and data:
                yield b"\n".join(data).decode("utf-8", "replace")
                data, size, begun = [], 0, None
            elif not line:
                begun = None
        if size + len(buffer) > max_frame:
            raise AnswerTooLarge(
                f"a stream event passed {max_frame:,} bytes; at most that much is read"
            )
        if begun is not None and (data or buffer) and time.monotonic() - begun > timeout:
            raise AnswerTooSlow(f"a stream event did not arrive whole within {timeout:g}s")
        if not data and not buffer:
            begun = None


def why(exc: BaseException) -> str:
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def peer_url(url: str) -> str:
    """``url`` when it can name a peer: an absolute ``http://`` or ``https://`` URL with a host.

    Raises:
        ValueError: it is not one (``htp:/bad``, ``not a url``), said in one line.
    """
    try:
        parts = urlsplit(url.strip())
        ok = (
            parts.scheme.lower() in ("http", "https")
            and bool(parts.hostname)
            and " " not in url.strip()
        )
        parts.port  # noqa: B018  # a port that is not a number raises here
    except ValueError:
        ok = False
    if not ok:
        raise ValueError(
            f"not an http(s) URL: {url!r} (give the agent's base URL or card URL, "
            "such as http://127.0.0.1:8000)"
        )
    return url.strip()
