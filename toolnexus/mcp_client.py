"""MCP servers as toolkit tools, on the official ``mcp`` client.

A config entry (the toolkit config's ``mcpServers`` block, also accepted as ``servers`` or
``mcp``) with ``url`` is a remote streamable-HTTP server; one with ``command`` (+ ``args``,
``env``, ``cwd``) a local stdio server. ``enabled: false`` or ``disabled: true`` skips it;
``timeout`` (milliseconds, as in the toolnexus contract) defaults to 30 s; ``headers`` values
expand ``${ENV_VAR}`` and are never logged.

Each server tool becomes ``sanitize(server)_sanitize(tool)`` with source ``mcp``; the progress a
server reports for a call (``notifications/progress``) reaches the caller's
:attr:`ToolContext.on_progress <toolnexus.tools.ToolContext>`. A server that
fails to start or connect is isolated: it contributes no tools and ``status`` says why. A server
that dies mid-session fails its calls with a clear message (never a hang) and turns ``failed``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
from collections.abc import AsyncGenerator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from .display import printable
from .errors import ConfigError, PeerError
from .secrets import expand_env
from .tools import Progress, ProgressFn, Tool, ToolContext, ToolResult, sanitize
from .traffic import TrafficRecorder, recording_transport

__all__ = [
    "MCPServerSpec",
    "MCPConnection",
    "parse_servers",
    "connect_all",
    "remote_tools",
    "call_remote_tool",
]

log = logging.getLogger("toolnexus.mcp")

DEFAULT_TIMEOUT = 30.0


@dataclass
class MCPServerSpec:
    """One MCP server to load tools from."""

    name: str
    url: str | None = None
    command: str | None = None
    args: list[str] = field(default_factory=list)
    env: dict[str, str] | None = None
    cwd: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    enabled: bool = True

    def __repr__(self) -> str:  # headers may hold secrets: never print their values
        where = self.url or " ".join([self.command or "", *self.args])
        return f"MCPServerSpec(name={self.name!r}, target={where!r}, headers=<{len(self.headers)} hidden>)"

    @property
    def kind(self) -> str:
        return "http" if self.url else "stdio"


def parse_servers(block: Any, base: str | None = None) -> list[MCPServerSpec]:
    """The specs of a config's ``mcpServers`` block: ``{name: {url | command, ...}}``."""
    if block is None:
        return []
    if not isinstance(block, Mapping):
        raise ConfigError("mcpServers must be an object of server name to settings")
    specs = []
    for name, entry in block.items():
        if not isinstance(entry, Mapping):
            raise ConfigError(f"mcpServers.{name} must be an object")
        enabled = (
            entry.get("enabled", True) is not False and entry.get("disabled", False) is not True
        )
        url, command = entry.get("url"), entry.get("command")
        if enabled and not url and not command:
            raise ConfigError(f"mcpServers.{name} needs a url or a command")
        args = entry.get("args", [])
        if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
            raise ConfigError(f"mcpServers.{name}.args must be a list of strings")
        timeout_ms = entry.get("timeout", DEFAULT_TIMEOUT * 1000)
        if (
            not isinstance(timeout_ms, (int, float))
            or isinstance(timeout_ms, bool)
            or timeout_ms <= 0
        ):
            raise ConfigError(
                f"mcpServers.{name}.timeout must be a positive number of milliseconds"
            )
        headers = entry.get("headers") or {}
        if not isinstance(headers, Mapping):
            raise ConfigError(f"mcpServers.{name}.headers must be an object")
        cwd = entry.get("cwd")
        if cwd and base and not os.path.isabs(cwd):
            cwd = os.path.join(base, cwd)
        specs.append(
            MCPServerSpec(
                name=str(name),
                url=url,
                command=command,
                args=list(args),
                env={k: expand_env(str(v)) for k, v in (entry.get("env") or {}).items()} or None,
                cwd=cwd or (base if command else None),
                headers={str(k): expand_env(str(v)) for k, v in headers.items()},
                timeout=float(timeout_ms) / 1000.0,
                enabled=enabled,
            )
        )
    return specs


class MCPConnection:
    """One live session with an MCP server, owned by a background task (anyio wants the task that
    opened a session to close it); calls may come from any task."""

    def __init__(self, spec: MCPServerSpec) -> None:
        self.spec = spec
        self.status: Literal["connected", "failed", "disabled", "connecting", "closed"] = (
            "connecting" if spec.enabled else "disabled"
        )
        self.reason = ""
        self.tools: list[Tool] = []
        self._client: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready: asyncio.Future[list[Any]] | None = None
        self._http: Any = (
            None  # our own HTTP client when headers are configured; closed with the session
        )

    def __repr__(self) -> str:
        return f"MCPConnection({self.spec.name!r}, status={self.status!r})"

    def _target(self) -> Any:
        from mcp import StdioServerParameters

        if self.spec.url:
            if not self.spec.headers:
                return self.spec.url
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            self._http = httpx2.AsyncClient(headers=self.spec.headers, timeout=self.spec.timeout)
            return streamable_http_client(self.spec.url, http_client=self._http)
        env = {**os.environ, **(self.spec.env or {})} if self.spec.env else None
        return StdioServerParameters(
            command=self.spec.command or "", args=self.spec.args, env=env, cwd=self.spec.cwd
        )

    async def start(self) -> list[Tool]:
        """Connect and list the tools; on failure the status says why and no tools are returned."""
        if not self.spec.enabled:
            return []
        self._ready = asyncio.get_running_loop().create_future()
        self._owner = asyncio.ensure_future(self._own())
        try:
            listed = await asyncio.wait_for(asyncio.shield(self._ready), self.spec.timeout)
        except Exception as exc:
            self._fail(f"cannot connect: {_reason(exc)}")
            await self.close()
            return []
        self.tools = [self._tool(t) for t in listed]
        self.status = "connected"
        return self.tools

    async def _own(self) -> None:
        from mcp import Client

        try:
            async with Client(self._target(), read_timeout_seconds=self.spec.timeout) as client:
                self._client = client
                listed = await client.list_tools()
                assert self._ready is not None
                if not self._ready.done():
                    self._ready.set_result(list(listed.tools))
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - the session ended; report, never raise here
            if self._ready is not None and not self._ready.done():
                self._ready.set_exception(
                    exc if isinstance(exc, Exception) else RuntimeError("connection closed")
                )
            elif not self._stop.is_set():
                why = (
                    "it exited or closed the connection"
                    if isinstance(exc, asyncio.CancelledError)
                    else _reason(exc)
                )
                self._fail(f"the server stopped: {why}")
            if isinstance(exc, asyncio.CancelledError):
                return
        finally:
            self._client = None
            if self._http is not None:
                await self._http.aclose()
                self._http = None
            if not self._stop.is_set() and self.status == "connected":
                self._fail("the server closed the connection")

    def _fail(self, reason: str) -> None:
        self.status, self.reason = "failed", reason
        log.warning("MCP server %s: %s", self.spec.name, reason)

    def _tool(self, t: Any) -> Tool:
        remote = t.name

        async def call(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            return await self.call(remote, args, progress=ctx.on_progress)

        schema = dict(t.input_schema) if t.input_schema else {"type": "object"}
        return Tool(
            f"{sanitize(self.spec.name)}_{sanitize(remote)}",
            t.description or "",
            schema,
            call,
            source="mcp",
            validate=False,
        )

    async def call(
        self, name: str, args: dict[str, Any], *, progress: ProgressFn | None = None
    ) -> ToolResult:
        client = self._client
        where = f"MCP server {self.spec.name}"
        if client is None or self.status != "connected":
            return ToolResult.error(
                f"{where} is {self.status}{': ' + self.reason if self.reason else ''}"
            )
        work = asyncio.ensure_future(
            client.call_tool(
                name,
                args,
                read_timeout_seconds=self.spec.timeout,
                progress_callback=_progress_from(progress),
            )
        )
        owner = self._owner
        waits: set[asyncio.Future[Any]] = {work} if owner is None else {work, owner}
        try:
            done, _ = await asyncio.wait(
                waits, timeout=self.spec.timeout + 1, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:
            work.cancel()
            raise
        if work not in done:
            work.cancel()
            if owner is not None and owner.done():
                return ToolResult.error(
                    f"{where} stopped during the call to {name}: {self.reason or 'connection lost'}"
                )
            return ToolResult.error(f"{where}: {name} timed out after {self.spec.timeout:g}s")
        try:
            result = work.result()
        except Exception as exc:
            if _closed(exc):  # the server died or hung up: this session is over
                self._fail("the server stopped: it exited or closed the connection")
                self._stop.set()
                return ToolResult.error(
                    f"{where} stopped during the call to {name}: it exited or closed the connection"
                )
            return ToolResult.error(f"{where}: {name} failed: {_reason(exc)}")
        return _result(result)

    async def close(self) -> None:
        self._stop.set()
        owner = self._owner
        if owner is not None and not owner.done():
            try:
                await asyncio.wait_for(asyncio.shield(owner), 5)
            except (asyncio.TimeoutError, Exception):
                owner.cancel()
                await asyncio.gather(owner, return_exceptions=True)
        if self.status in ("connected", "connecting"):
            self.status = "closed"


def _progress_from(progress: ProgressFn | None) -> Any:
    """The SDK's progress callback that hands a remote tool's progress to ``progress`` (None when
    nobody listens, so the call asks the server for none)."""
    if progress is None:
        return None

    async def heard(done: float, total: float | None, message: str | None) -> None:
        try:
            await progress(Progress(done, total, message))
        except Exception:  # noqa: BLE001 - a listener's failure is not the call's
            log.warning("a progress listener failed; the call goes on", exc_info=True)

    return heard


def _closed(exc: BaseException) -> bool:
    import mcp_types
    from mcp.shared.exceptions import MCPError

    if isinstance(exc, MCPError):
        return getattr(exc, "code", None) == mcp_types.CONNECTION_CLOSED
    return isinstance(exc, (OSError, EOFError, ConnectionError))


def _reason(exc: BaseException) -> str:
    if isinstance(exc, BaseExceptionGroup):
        return "; ".join(_reason(e) for e in exc.exceptions)
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


def _result(result: Any) -> ToolResult:
    texts = []
    for block in result.content or []:
        kind = getattr(block, "type", "")
        if kind == "text":
            texts.append(block.text)
        elif kind in ("image", "audio"):
            texts.append(f"[{kind}: {getattr(block, 'mime_type', '')}]")
        elif kind == "resource_link":
            texts.append(f"[resource: {getattr(block, 'uri', '')}]")
        elif kind == "resource":
            res = getattr(block, "resource", None)
            texts.append(getattr(res, "text", None) or f"[resource: {getattr(res, 'uri', '')}]")
    if result.is_error:
        return ToolResult.error("\n".join(texts) or "the tool failed")
    if result.structured_content is not None:
        return ToolResult(json.dumps(result.structured_content, ensure_ascii=False))
    return ToolResult("\n".join(texts))


async def connect_all(specs: list[MCPServerSpec]) -> tuple[list[MCPConnection], list[Tool]]:
    """Connect every server at once; each failure is isolated to its own server."""
    conns = [MCPConnection(s) for s in specs]
    lists = await asyncio.gather(*(c.start() for c in conns))
    return conns, [t for tools in lists for t in tools]


async def remote_tools(
    url: str | list[str],
    *,
    headers: dict[str, str] | None = None,
    bus: Any = None,
    timeout: float = DEFAULT_TIMEOUT,
) -> list[dict[str, Any]]:
    """The tools of any MCP endpoint, ``[{name, description, input_schema}]`` (every exchange on ``bus``).

    ``url``: a streamable-HTTP endpoint, or a command line as a list (``["uvx", "some-mcp"]``) to
    start a stdio server for this call (each JSON-RPC message it exchanges is on ``bus`` too).

    Raises:
        PeerError: the endpoint cannot be reached or refused (the reason in one line, e.g. HTTP 401).
    """
    recorder = _recorder(url, headers, bus)
    try:
        async with _session(url, headers, recorder, timeout) as client:
            listed = await client.list_tools()
    except Exception as exc:
        raise PeerError(f"{_where(url)}: {mcp_failure(exc, recorder)}") from None
    return [
        {
            "name": t.name,
            "description": t.description or "",
            "input_schema": dict(t.input_schema or {}),
        }
        for t in listed.tools
    ]


async def call_remote_tool(
    url: str | list[str],
    name: str,
    args: dict[str, Any],
    *,
    headers: dict[str, str] | None = None,
    bus: Any = None,
    timeout: float = DEFAULT_TIMEOUT,
    progress: ProgressFn | None = None,
) -> ToolResult:
    """Call one tool on any MCP endpoint (a session for this call only); the result as a ToolResult.
    ``url`` as in :func:`remote_tools` (a list: a stdio server's command line); ``progress`` hears
    what the server reports while the tool runs.

    Raises:
        PeerError: the endpoint cannot be reached or refused (the reason in one line).
    """
    recorder = _recorder(url, headers, bus)
    try:
        async with _session(url, headers, recorder, timeout) as client:
            return _result(
                await client.call_tool(
                    name,
                    args,
                    read_timeout_seconds=timeout,
                    progress_callback=_progress_from(progress),
                )
            )
    except Exception as exc:
        raise PeerError(f"{_where(url)}: {mcp_failure(exc, recorder)}") from None


def mcp_failure(exc: BaseException, recorder: Any = None) -> str:
    """One line for why an MCP exchange failed: an HTTP error status on the wire (with its
    meaning), else the first leaf of an exception group (anyio wraps everything in one), with its
    type and text."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, PeerError):  # already one line for people
        return str(exc)
    status = getattr(getattr(exc, "response", None), "status_code", None)
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


def _where(target: str | list[str]) -> str:
    """An endpoint for people: the URL, or ``stdio: <command line>``."""
    if isinstance(target, str):
        return target
    import shlex

    return "stdio: " + shlex.join(target)


def _recorder(url: str | list[str], headers: dict[str, str] | None, bus: Any) -> Any:
    recorder = TrafficRecorder(bus, peer=_where(url))
    for name, value in (headers or {}).items():
        recorder.secret(name, value)
    return recorder


@contextlib.asynccontextmanager
async def _session(
    url: str | list[str], headers: dict[str, str] | None, recorder: Any, timeout: float
) -> AsyncGenerator[Any, None]:
    import httpx2
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    if not isinstance(url, str):
        if not url or not url[0]:
            raise ConfigError("an MCP stdio server needs a command")
        import tempfile

        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                async with Client(
                    _tapped_stdio(url, recorder, errlog), read_timeout_seconds=timeout
                ) as client:
                    yield client
            except Exception as exc:  # what the server said on stderr is often the reason
                errlog.flush()
                errlog.seek(0)
                tail = errlog.read()[-400:].strip()
                if not tail:
                    raise
                raise PeerError(f"{mcp_failure(exc)}; its stderr ends: {printable(tail)}") from None
        return

    async with httpx2.AsyncClient(
        headers=headers or {}, timeout=timeout, transport=recording_transport(recorder, httpx2)
    ) as http:
        async with Client(
            streamable_http_client(url, http_client=http), read_timeout_seconds=timeout
        ) as client:
            yield client


@contextlib.asynccontextmanager
async def _tapped_stdio(argv: list[str], recorder: Any, errlog: Any) -> AsyncGenerator[Any, None]:
    """A stdio server started from ``argv`` whose every JSON-RPC message is recorded: a request and
    its response as one exchange (method ``STDIO``), a notification on its own."""
    import time

    from mcp import StdioServerParameters
    from mcp.client.stdio import stdio_client

    where = _where(argv)
    pending: dict[Any, tuple[float, str, str | None]] = {}

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

    def sent(m: Any) -> None:
        data, body = dump(m)
        if "method" in data and "id" in data:
            pending[data["id"]] = (time.perf_counter(), body, data["method"])
        else:  # a notification, or our answer to the server's own request
            recorder.record(
                direction="out",
                method="STDIO",
                url=where,
                status=None,
                started=time.perf_counter(),
                request_headers={},
                request_body=body,
                rpc_method=data.get("method"),
            )

    def received(m: Any) -> None:
        if isinstance(m, Exception):
            recorder.record(
                direction="out",
                method="STDIO",
                url=where,
                status=None,
                started=time.perf_counter(),
                request_headers={},
                request_body="",
                error=_reason(m),
            )
            return
        data, body = dump(m)
        started, request, method = pending.pop(
            data.get("id"), (time.perf_counter(), "", data.get("method"))
        )
        recorder.record(
            direction="out",
            method="STDIO",
            url=where,
            status=None,
            started=started,
            request_headers={},
            request_body=request,
            response_body=body,
            rpc_method=method,
            error=(data.get("error") or {}).get("message")
            if isinstance(data.get("error"), dict)
            else None,
        )

    params = StdioServerParameters(command=argv[0], args=list(argv[1:]))
    async with stdio_client(params, errlog=errlog) as (
        read,
        write,
    ):  # its stderr must not draw over a TUI
        yield _Tap(read, received), _Tap(write, sent)


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
        import anyio

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
