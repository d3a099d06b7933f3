"""How the MCP client reaches a server, every exchange recorded: the official ``mcp.Client`` over
streamable HTTP or a stdio server started from a command line (:func:`open_client`), and the one
line that says why an exchange failed (:func:`mcp_failure`). The toolkit's connections
(:mod:`~toolnexus.mcp.client`), the inspectors' session (:mod:`~toolnexus.mcp.session`), the MCP
doctor and the replay's ``--against`` all open their clients here."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import json
import os
import shlex
import threading
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

import anyio

from ..display import printable
from ..errors import ConfigError, PeerError
from ..traffic import TrafficRecorder, answered, recording_transport

__all__ = [
    "TRANSPORTS",
    "sdk",
    "DEFAULT_TIMEOUT",
    "MAX_STDERR_LINES",
    "StderrPump",
    "open_client",
    "mcp_failure",
    "endpoint_label",
    "recorder_for",
    "exception_text",
    "hung_up",
    "owner_ended",
    "start_failed",
]

TRANSPORTS = ("auto", "http", "sse")
"""How a URL is reached: ``http`` streamable HTTP; ``sse`` the legacy HTTP+SSE transport of
2024-11-05 (a GET stream for the server's messages, a POST per message to the address its first
event names); ``auto`` streamable HTTP, then HTTP+SSE when the server refuses that with a 4xx
(the spec's way for a client to reach old servers)."""
SSE_READ = 300.0
"""Seconds an HTTP+SSE stream may stay silent before it counts as lost."""
DEFAULT_TIMEOUT = 30.0
MAX_STDERR = 16384
"""The characters of a stdio server's stderr a failure's reason quotes (its end)."""
MAX_STDERR_LINES = 1000
"""The lines of a stdio server's stderr kept (the last ones)."""
MAX_STDERR_LINE = 4096
"""The longest line of a stdio server's stderr read at once (a longer one comes in pieces)."""
STDERR_DRAIN = 2.0
"""Seconds a session's end waits for the rest of a stdio server's stderr (a process it started
may hold the pipe open longer)."""


def sdk():  # the module itself, which the type checker reads whole
    """The official MCP SDK's client side (:mod:`toolnexus.mcp._sdk`), loaded here and nowhere
    else: the MCP client, its OAuth, the MCP doctor and replay take each piece of it from this."""
    from . import _sdk  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

    return _sdk


def start_failed(ready: asyncio.Future[Any] | None, exc: BaseException) -> bool:
    """Hand why a session ended (``exc``) to a start still waiting on ``ready``: True when one
    was waiting, False when the session had started (then the session itself says it ended)."""
    if ready is None or ready.done():
        return False
    ready.set_exception(exc if isinstance(exc, Exception) else RuntimeError("connection closed"))
    return True


async def owner_ended(owner: asyncio.Task[None] | None) -> None:
    """Wait for a session's owner task to close it (told to stop), cancelled if it will not."""
    if owner is not None and not owner.done():
        try:
            await asyncio.wait_for(asyncio.shield(owner), 5)
        except (TimeoutError, Exception):
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)


def hung_up(exc: BaseException) -> bool:
    mcp_types = sdk().types
    MCPError = sdk().MCPError

    if isinstance(exc, MCPError):
        return getattr(exc, "code", None) == mcp_types.CONNECTION_CLOSED
    return isinstance(exc, (OSError, EOFError, ConnectionError))


def exception_text(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(exception_text(e) for e in exc.exceptions)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def mcp_failure(exc: BaseException, recorder: Any = None) -> str:
    """One line for why an MCP exchange failed: an HTTP error status on the wire (with its
    meaning), else the first leaf of an exception group (anyio wraps everything in one), with its
    type and text; a JSON-RPC error as its code and message."""
    MCPError = sdk().MCPError

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, PeerError):  # already one line for people
        return str(exc)
    if type(exc).__module__.startswith("mcp.client.auth"):  # the SDK's OAuth flow said why
        said = f"the OAuth sign-in failed: {printable(str(exc), 400)}"
        if type(exc).__name__ == "OAuthRegistrationError":  # no dynamic registration there
            said += (
                " (the authorization server registers no client: give its client id, the"
                " static one it gave you)"
            )
        return said
    status = getattr(getattr(exc, "response", None), "status_code", None)
    if isinstance(exc, MCPError) and status is None:
        # the server's JSON-RPC error (on 2026-07-28 HTTP it comes with a 4xx status), unless the
        # exchange that failed was an HTTP refusal without one (a 401 from an auth layer)
        last = recorder.events[-1] if recorder is not None and recorder.events else None
        if (
            last is None
            or not last.status
            or last.status < 400
            or '"jsonrpc"' in (last.response_body or "")
        ):
            return f"MCP error {exc.code}: {printable(str(exc.error.message), 400)}"
        status = last.status
    if status is None and recorder is not None:
        status = next(
            (e.status for e in reversed(recorder.events) if e.status and e.status >= 400), None
        )
    if isinstance(status, int):
        meaning = {
            401: "authentication required",
            403: "invalid credentials",
            404: "no MCP endpoint there",
            421: "the server does not answer for this host name",
        }.get(status, "")
        return f"HTTP {status}" + (f": {meaning}" if meaning else "")
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def endpoint_label(target: str | list[str]) -> str:
    """An endpoint for people: the URL, or ``stdio: <command line>``."""
    if isinstance(target, str):
        return target
    return "stdio: " + shlex.join(target)


def recorder_for(url: str | list[str], headers: dict[str, str] | None, bus: Any) -> Any:
    recorder = TrafficRecorder(bus, peer=endpoint_label(url))
    for name, value in (headers or {}).items():
        recorder.secret(name, value)
    return recorder


@contextlib.asynccontextmanager
async def open_client(
    target: str | list[str],
    recorder: Any,
    timeout: float,
    *,
    headers: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    auth: Any = None,
    stderr: Callable[[str], None] | None = None,
    stderr_line: Callable[[str], None] | None = None,
    on_response: Callable[[Any], None] | None = None,
    transport: str = "http",
    **options: Any,
) -> AsyncGenerator[Any, None]:
    """The official ``mcp.Client`` for ``target``, every exchange recorded: over streamable HTTP
    (``headers``; ``auth``: an :class:`~toolnexus.mcp.auth.OAuthFlow`) or a stdio server started
    from a command line (``env``, ``cwd``; its stderr read as it comes: ``stderr_line`` hears each
    line, and the end of it is in the error when the server fails; ``stderr`` is given its end when
    the server ends, instead; ``on_response`` sees each HTTP answer as it came, before the wire log
    masks it). ``transport``: ``sse`` reaches the URL by the legacy HTTP+SSE transport
    (:data:`TRANSPORTS`), else streamable HTTP. ``options``: the ``Client``'s own."""
    if not isinstance(target, str):
        stdio = _stdio_client(target, recorder, timeout, env, cwd, stderr, stderr_line, options)
        async with stdio as client:
            yield client
        return
    provider = await auth.provider(target) if auth is not None else None
    http_client = _http_client_factory(recorder, on_response)
    if transport == "sse":
        stream = sdk().sse_client(
            target,
            headers=headers or {},
            timeout=timeout,
            sse_read_timeout=SSE_READ,
            httpx_client_factory=http_client,
            auth=provider,
        )
        async with sdk().Client(stream, read_timeout_seconds=timeout, **options) as client:
            yield client
        return
    async with http_client(headers, timeout, provider) as http:
        async with sdk().Client(
            sdk().streamable_http_client(target, http_client=http),
            read_timeout_seconds=timeout,
            **options,
        ) as client:
            yield client


@contextlib.asynccontextmanager
async def _stdio_client(
    argv: list[str],
    recorder: Any,
    timeout: float,
    env: dict[str, str] | None,
    cwd: str | None,
    stderr: Callable[[str], None] | None,
    stderr_line: Callable[[str], None] | None,
    options: dict[str, Any],
) -> AsyncGenerator[Any, None]:
    """:func:`open_client`'s client of a stdio server started from ``argv``: what the server said
    on stderr ends a failure's reason, or is handed to ``stderr`` when the server ends."""
    if not argv or not argv[0]:
        raise ConfigError("an MCP stdio server needs a command")
    errlog = StderrPump(stderr_line)
    try:
        try:
            async with sdk().Client(
                _tapped_stdio(argv, recorder, errlog.file, env, cwd),
                read_timeout_seconds=timeout,
                **options,
            ) as client:
                yield client
        finally:  # the server has ended: the rest of what it said is read
            await errlog.close()
    except Exception as exc:  # what the server said on stderr is often the reason
        tail = errlog.tail()
        if not tail or stderr is not None:
            raise
        raise PeerError(f"{mcp_failure(exc)}; its stderr ends: {printable(tail)}") from None
    finally:
        if stderr is not None:
            stderr(errlog.tail())


def _http_client_factory(
    recorder: Any, on_response: Callable[[Any], None] | None
) -> Callable[..., Any]:
    """:func:`open_client`'s maker of the HTTP client of a session: every exchange on the wire
    log, each answer seen by ``on_response`` as it came."""
    httpx2 = sdk().httpx2

    async def answered(response: Any) -> None:
        if on_response is not None:
            on_response(response)

    def http_client(
        headers: dict[str, str] | None = None, timeout: Any = None, auth: Any = None
    ) -> Any:
        """The HTTP client of the session: every exchange on the wire log, each answer seen."""
        return httpx2.AsyncClient(
            headers=headers or {},
            timeout=timeout,
            transport=recording_transport(recorder, httpx2),
            auth=auth,
            event_hooks={"response": [answered]},
        )

    return http_client


class StderrPump:
    """A stdio server's stderr, read as it comes: the server writes to a pipe (:attr:`file`), a
    thread of its own reads it a line at a time (at most :data:`MAX_STDERR_LINE` bytes at once) and
    hands each line to ``heard`` on the loop that made the pump; the last
    :data:`MAX_STDERR_LINES` are kept (:meth:`tail`)."""

    def __init__(self, heard: Callable[[str], None] | None = None) -> None:
        self._heard = heard
        self._loop = asyncio.get_running_loop()
        self._lines: collections.deque[str] = collections.deque(maxlen=MAX_STDERR_LINES)
        self._lock = threading.Lock()
        read, write = os.pipe()
        self.file = os.fdopen(write, "w", encoding="utf-8", errors="replace")
        """The pipe's end the server's process writes to."""
        self._thread = threading.Thread(
            target=self._pump, args=(read,), name="mcp-stderr", daemon=True
        )
        self._thread.start()

    def _pump(self, read: int) -> None:
        with os.fdopen(read, "rb") as pipe:
            while raw := pipe.readline(MAX_STDERR_LINE):
                line = raw.decode("utf-8", "replace").rstrip("\r\n")
                with self._lock:
                    self._lines.append(line)
                if self._heard is not None:
                    with contextlib.suppress(RuntimeError):  # the loop has closed
                        self._loop.call_soon_threadsafe(self._heard, line)

    def tail(self) -> str:
        """The end of what the server said (:data:`MAX_STDERR` characters at most)."""
        with self._lock:
            return "\n".join(self._lines)[-MAX_STDERR:].strip()

    async def close(self) -> None:
        """Close our end of the pipe and wait (:data:`STDERR_DRAIN` s at most) for the reader to
        take the rest of what the server wrote."""
        self.file.close()
        await asyncio.to_thread(self._thread.join, STDERR_DRAIN)


@contextlib.asynccontextmanager
async def _tapped_stdio(
    argv: list[str],
    recorder: Any,
    errlog: Any,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> AsyncGenerator[Any, None]:
    """A stdio server started from ``argv`` whose every JSON-RPC message is recorded
    (:class:`_StdioLog`)."""
    log = _StdioLog(recorder, endpoint_label(argv))
    params = sdk().StdioServerParameters(command=argv[0], args=list(argv[1:]), env=env, cwd=cwd)
    try:
        async with sdk().stdio_client(params, errlog=errlog) as (
            read,
            write,
        ):  # its stderr must not draw over a TUI
            yield _Tap(read, log.received), _Tap(write, log.sent)
    finally:  # a request never answered (a listen stream) is on the wire too
        log.unanswered()


class _StdioLog:
    """The wire log of a stdio session: a request and its response as one exchange (method
    ``STDIO``), a notification on its own; a message the server sent of its own (a notification,
    a request to the client) inbound, the client's answer to such a request named after it
    (``answer to elicitation/create #0``)."""

    def __init__(self, recorder: TrafficRecorder, where: str) -> None:
        self.recorder, self.where = recorder, where
        self.pending: dict[Any, tuple[float, str, str | None]] = {}
        self.asked: dict[
            Any, str
        ] = {}  # the server's requests to the client, by id, until answered

    @staticmethod
    def dump(m: Any) -> tuple[dict[str, Any], str]:
        msg = getattr(m, "message", m)
        body = (
            msg.model_dump_json(by_alias=True, exclude_none=True)
            if hasattr(msg, "model_dump_json")
            else str(msg)
        )
        try:
            return json.loads(body), body
        except ValueError:
            return {}, body

    def note(
        self,
        request: str,
        method: str | None,
        started: float | None = None,
        direction: str = "out",
        **more: Any,
    ) -> None:
        """One message (or a request and its answer) on the wire log."""
        self.recorder.record(
            direction=direction,
            method="STDIO",
            url=self.where,
            status=None,
            started=time.perf_counter() if started is None else started,
            request_headers={},
            request_body=request,
            rpc_method=method,
            **more,
        )

    def sent(self, m: Any) -> None:
        data, body = self.dump(m)
        if "method" in data and "id" in data:
            self.pending[data["id"]] = (time.perf_counter(), body, data["method"])
        elif "method" in data:  # a notification of ours
            self.note(body, data["method"])
        else:  # our answer to the server's own request
            self.note(body, answered(data, self.asked))
            self.asked.pop(data.get("id"), None)

    def received(self, m: Any) -> None:
        if isinstance(m, Exception):
            self.note("", None, error=exception_text(m))
            return
        data, body = self.dump(m)
        answer = "method" not in data  # else a notification or a request of the server's own
        started, request, method = (self.pending.pop(data.get("id"), None) if answer else None) or (
            time.perf_counter(),
            "",
            data.get("method"),
        )
        if not answer and "id" in data and isinstance(method, str) and len(self.asked) < 1000:
            self.asked[data["id"]] = method
        error = data.get("error")
        self.note(
            request,
            method,
            started,
            "out" if answer else "in",  # an answer to us, else the server's own message
            response_body=body,
            error=error.get("message") if isinstance(error, dict) else None,
        )

    def unanswered(self) -> None:
        """Each request never answered, on the wire log as such."""
        for started, request, method in self.pending.values():
            self.note(request, method, started, error="no answer: the session ended")
        self.pending.clear()


class _Tap:
    """A memory stream that calls ``seen`` with every message passing through it."""

    def __init__(self, inner: Any, seen: Any) -> None:
        self._inner, self._seen = inner, seen

    async def send(self, item: Any) -> None:
        self._seen(item)
        await self._inner.send(item)

    async def receive(self) -> Any:
        item = await self._inner.receive()
        self._seen(item)
        return item

    def __aiter__(self) -> _Tap:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> _Tap:
        await self._inner.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._inner.__aexit__(*exc)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)
