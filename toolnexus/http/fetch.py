"""Bounded reads from a peer over HTTP: every answer is read to at most a size and within a time
in all (httpx's own timeout is per read: a peer trickling a byte at a time would never trip it),
and an SSE stream event by event, each bounded the same way. The client, the doctor, the replay
and the webhook read peers through these. And where such a read connects when a rule decides which
addresses it may reach (:func:`pinned`: a webhook, a card signature's key set): the address a name
resolves to is checked, and that address is the one connected to."""

from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import time
import urllib.parse
from collections.abc import AsyncGenerator, Callable, Mapping
from typing import Any
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
    "Address",
    "host_address",
    "pinned",
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
    extensions: Mapping[str, Any] | None = None,
) -> tuple[httpx.Response, bytes]:
    """One request and its whole answer: at most ``limit`` bytes, within ``timeout`` seconds in all
    (httpx's own timeout is per read: a peer trickling a byte at a time would never trip it).
    ``extensions``: httpx's (the TLS server name of a :func:`pinned` URL)."""
    try:
        async with asyncio.timeout(timeout):
            async with http.stream(
                method,
                url,
                content=content,
                headers=dict(headers),
                timeout=timeout,
                extensions=dict(extensions or {}),
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


Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def host_address(host: str) -> Address | None:
    """The address a URL's host spells, in every spelling a resolver accepts (``127.0.0.1``, the
    short ``127.1``, one number ``2130706433``, hex ``0x7f000001``, octal, a trailing dot, an IPv6
    literal; an IPv4-mapped IPv6 address as its IPv4 one), or None when the host is a name."""
    text = host.strip("[]").rstrip(".").split("%")[0]
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        if not _NUMERIC.fullmatch(text):
            return None
        try:  # what getaddrinfo does with a numeric host: the classic inet_aton forms
            address = ipaddress.IPv4Address(socket.inet_aton(text))
        except OSError:
            return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


_NUMERIC = re.compile(r"(?:0[xX][0-9a-fA-F]*|[0-9]+)(?:\.(?:0[xX][0-9a-fA-F]*|[0-9]+)){0,3}")


async def pinned(
    url: str, refuse: Callable[[Address, int], str | None], timeout: float
) -> tuple[str, dict[str, str], dict[str, Any]] | str:
    """Where to connect for ``url`` when ``refuse`` (an address and port: why not, or None) decides
    which addresses may be reached: the URL with its host replaced by the first address it resolves
    to now that ``refuse`` lets through, the ``Host`` header, and the TLS server name (httpx's
    ``extensions``); or why not (a string). The address checked is the one connected to: a name
    that resolves elsewhere a moment later (DNS rebinding) changes nothing."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    address = host_address(host)
    if address is not None:
        found: list[Address] = [address]
    else:
        try:
            async with asyncio.timeout(timeout):
                infos = await asyncio.get_running_loop().getaddrinfo(
                    host, port, type=socket.SOCK_STREAM
                )
        except TimeoutError:
            return f"{host} did not resolve within {timeout:g}s"
        except OSError as exc:
            return f"{host} does not resolve: {why(exc)}"
        found = [a for a in (host_address(str(info[4][0])) for info in infos) if a is not None]
    refusals = [refuse(a, port) for a in found]
    chosen = next((a for a, refused in zip(found, refusals, strict=True) if refused is None), None)
    if chosen is None:
        return next((r for r in refusals if r), f"{host} resolves to no address")
    netloc = f"[{chosen}]:{port}" if chosen.version == 6 else f"{chosen}:{port}"
    extensions = {"sni_hostname": host} if parts.scheme == "https" and address is None else {}
    return (
        urllib.parse.urlunsplit((parts.scheme, netloc, parts.path or "/", parts.query, "")),
        {"host": parts.netloc},
        extensions,
    )
