"""MCP servers as toolkit tools, and a session with any MCP server for the inspectors, on the
official ``mcp`` client.

A config entry (the toolkit config's ``mcpServers`` block, also accepted as ``servers`` or
``mcp``) with ``url`` is a remote streamable-HTTP server; one with ``command`` (+ ``args``,
``env``, ``cwd``) a local stdio server. ``enabled: false`` or ``disabled: true`` skips it;
``timeout`` (milliseconds, as in the toolnexus contract) defaults to 30 s; ``headers`` values
expand ``${ENV_VAR}`` and are never logged. ``type`` (``stdio``, ``http`` or ``streamable-http``,
``sse``: the legacy HTTP+SSE transport), ``protocolEra`` and ``oauth.clientId`` are read as the
desktop hosts and the official MCP Inspector write them (the last two for the inspectors).

:func:`read_servers` reads such a file whole (Claude Desktop's, Cursor's and the Inspector's
``mcpServers``, VS Code's ``servers``, or one server's entry alone), bounded; :func:`servers_file`
writes one.

Each server tool becomes ``sanitize(server)_sanitize(tool)`` with source ``mcp``; the progress a
server reports for a call (``notifications/progress``) reaches the caller's
:attr:`ToolContext.on_progress <toolnexus.tools.ToolContext>`. A server that
fails to start or connect is isolated: it contributes no tools and ``status`` says why. A server
that dies mid-session fails its calls with a clear message (never a hang) and turns ``failed``.


:class:`~toolnexus.mcp.session.MCPSession` is the session the inspectors keep open (see
:mod:`toolnexus.mcp.session`); it reads a tool's answer as these connections do
(:func:`tool_result`, :func:`tool_dict`, :func:`progress_from`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from ..errors import ConfigError, PeerError
from ..secrets import expand_env
from ..tools import Progress, ProgressFn, Tool, ToolContext, ToolResult, sanitize
from .transport import (
    DEFAULT_TIMEOUT,
    SSE_READ,
    endpoint_label,
    exception_text,
    hung_up,
    mcp_failure,
    open_client,
    owner_ended,
    recorder_for,
    sdk,
    start_failed,
)

__all__ = [
    "MCPServerSpec",
    "MCPConnection",
    "parse_servers",
    "read_servers",
    "servers_file",
    "connect_all",
    "remote_tools",
    "call_remote_tool",
    "progress_from",
    "tool_result",
    "tool_dict",
]

log = logging.getLogger("toolnexus.mcp")


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
    transport: str = "auto"
    """How a URL is reached (an entry's ``type``): ``auto``, ``http`` (streamable HTTP), ``sse``."""
    era: str = "auto"
    """The protocol era asked for (``protocolEra``): ``auto``, ``legacy``, ``modern`` or a version."""
    client_id: str | None = None
    """The OAuth client id for a server that registers none (``oauth.clientId``)."""

    def __repr__(self) -> str:  # headers may hold secrets: never print their values
        where = self.url or " ".join([self.command or "", *self.args])
        return f"MCPServerSpec(name={self.name!r}, target={where!r}, headers=<{len(self.headers)} hidden>)"

    @property
    def kind(self) -> str:
        return "http" if self.url else "stdio"


TYPES = {
    "stdio": "auto",
    "http": "http",
    "streamable-http": "http",
    "streamableHttp": "http",
    "sse": "sse",
}
"""An entry's ``type`` as the hosts write it, and the transport it names (stdio: none to choose)."""
ERAS = ("auto", "legacy", "modern")
"""An entry's ``protocolEra`` as the official Inspector writes it (or a protocol version)."""
MAX_SERVERS_FILE = 1024 * 1024
"""The most bytes of a servers file read (a desktop host's holds a few KiB)."""
MAX_SERVERS = 500
"""The most servers one file may list."""
MAX_NAME = 100
"""The longest server name read."""


def parse_servers(
    block: Any, base: str | None = None, *, expand: bool = True
) -> list[MCPServerSpec]:
    """The specs of a config's ``mcpServers`` block: ``{name: {url | command, ...}}``.
    ``expand=False`` keeps ``${ENV}`` references in ``env`` and ``headers`` as written (to save
    or show them), else they are read from the environment."""
    read = expand_env if expand else str
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
        env = entry.get("env")
        env = {} if env is None else env
        if not isinstance(env, Mapping):
            raise ConfigError(f"mcpServers.{name}.env must be an object")
        kind = entry.get("type", "http" if url and not command else "stdio")
        if kind not in TYPES:
            raise ConfigError(f"mcpServers.{name}.type must be one of {', '.join(TYPES)}")
        if url is not None and not isinstance(url, str) or not isinstance(command or "", str):
            raise ConfigError(f"mcpServers.{name}: url and command must be strings")
        era = entry.get("protocolEra", "auto")
        if not isinstance(era, str) or era not in ERAS and not _VERSION.match(era):
            raise ConfigError(f"mcpServers.{name}.protocolEra must be one of {', '.join(ERAS)}")
        oauth = entry.get("oauth") or {}
        client_id = oauth.get("clientId") if isinstance(oauth, Mapping) else None
        if client_id is not None and not isinstance(client_id, str):
            raise ConfigError(f"mcpServers.{name}.oauth.clientId must be a string")
        cwd = entry.get("cwd")
        if cwd and base and not os.path.isabs(cwd):
            cwd = os.path.join(base, cwd)
        specs.append(
            MCPServerSpec(
                name=str(name),
                url=url,
                command=command,
                args=list(args),
                env={str(k): read(str(v)) for k, v in env.items()} or None,
                cwd=cwd or (base if command else None),
                headers={str(k): read(str(v)) for k, v in headers.items()},
                timeout=float(timeout_ms) / 1000.0,
                enabled=enabled,
                transport="auto" if "type" not in entry else TYPES[kind],
                era=era,
                client_id=client_id or None,
            )
        )
    return specs


_VERSION = re.compile(r"^\d{4}-\d{2}-\d{2}$")


def read_servers(text: str | bytes, name: str = "server") -> list[MCPServerSpec]:
    """The servers a file lists, ``${ENV}`` references kept as written: an ``mcpServers`` object
    (Claude Desktop, Cursor, Claude Code, the official MCP Inspector's servers file), VS Code's
    ``servers`` object, or one server's entry alone (the Inspector's "server entry", named
    ``name``). At most :data:`MAX_SERVERS_FILE` bytes and :data:`MAX_SERVERS` servers.

    Raises:
        ConfigError: the file is too large, not JSON, or not one of those shapes; what is wrong
            with which server.
    """
    if len(text) > MAX_SERVERS_FILE:
        raise ConfigError(f"a servers file holds at most {MAX_SERVERS_FILE // 1024} KiB")
    try:
        data = json.loads(text)
    except (ValueError, RecursionError) as exc:
        raise ConfigError(f"not JSON: {str(exc)[:200]}") from None
    if not isinstance(data, Mapping):
        raise ConfigError("a servers file is a JSON object")
    if "command" in data or "url" in data:
        block: Any = {name: data}
    else:
        block = data.get("mcpServers", data.get("servers"))
        if not isinstance(block, Mapping):
            raise ConfigError(
                "no servers in it: an mcpServers object (or VS Code's servers) was expected"
            )
    if len(block) > MAX_SERVERS:
        raise ConfigError(f"a servers file lists at most {MAX_SERVERS} servers ({len(block)})")
    for key in block:
        if not 0 < len(str(key)) <= MAX_NAME:
            raise ConfigError(f"a server's name is 1 to {MAX_NAME} characters")
    return parse_servers(block, expand=False)


def servers_file(specs: list[MCPServerSpec]) -> dict[str, Any]:
    """``{"mcpServers": {...}}`` as Claude Desktop, Cursor and the official MCP Inspector read it,
    the specs as they are (:func:`read_servers` reads it back the same)."""
    out: dict[str, Any] = {}
    for spec in specs:
        entry: dict[str, Any] = {}
        if spec.url:
            if spec.transport != "auto":
                entry["type"] = spec.transport
            entry["url"] = spec.url
            if spec.headers:
                entry["headers"] = dict(spec.headers)
        else:
            entry = {"type": "stdio", "command": spec.command or "", "args": list(spec.args)}
            if spec.env:
                entry["env"] = dict(spec.env)
            if spec.cwd:
                entry["cwd"] = spec.cwd
        if spec.era != "auto":
            entry["protocolEra"] = spec.era
        if spec.client_id:
            entry["oauth"] = {"clientId": spec.client_id}
        if spec.timeout != DEFAULT_TIMEOUT:
            entry["timeout"] = round(spec.timeout * 1000)
        if not spec.enabled:
            entry["disabled"] = True
        out[spec.name] = entry
    return {"mcpServers": out}


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
        StdioServerParameters = sdk().StdioServerParameters

        if self.spec.url and self.spec.transport == "sse":  # the legacy HTTP+SSE transport
            return sdk().sse_client(
                self.spec.url,
                headers=self.spec.headers,
                timeout=self.spec.timeout,
                sse_read_timeout=SSE_READ,
            )
        if self.spec.url:
            if not self.spec.headers:
                return self.spec.url
            httpx2 = sdk().httpx2
            streamable_http_client = sdk().streamable_http_client

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
            self._fail(f"cannot connect: {exception_text(exc)}")
            await self.close()
            return []
        self.tools = [self._tool(t) for t in listed]
        self.status = "connected"
        return self.tools

    async def _own(self) -> None:
        Client = sdk().Client

        try:
            async with Client(self._target(), read_timeout_seconds=self.spec.timeout) as client:
                self._client = client
                listed = await client.list_tools()
                assert self._ready is not None
                if not self._ready.done():
                    self._ready.set_result(list(listed.tools))
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - the session ended; report, never raise here
            if not start_failed(self._ready, exc) and not self._stop.is_set():
                why = (
                    "it exited or closed the connection"
                    if isinstance(exc, asyncio.CancelledError)
                    else exception_text(exc)
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
                progress_callback=progress_from(progress),
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
            if hung_up(exc):  # the server died or hung up: this session is over
                self._fail("the server stopped: it exited or closed the connection")
                self._stop.set()
                return ToolResult.error(
                    f"{where} stopped during the call to {name}: it exited or closed the connection"
                )
            return ToolResult.error(f"{where}: {name} failed: {exception_text(exc)}")
        return tool_result(result)

    async def close(self) -> None:
        self._stop.set()
        await owner_ended(self._owner)
        if self.status in ("connected", "connecting"):
            self.status = "closed"


def progress_from(progress: ProgressFn | None) -> Any:
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


def tool_result(result: Any) -> ToolResult:
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
    recorder = recorder_for(url, headers, bus)
    try:
        async with open_client(url, recorder, timeout, headers=headers) as client:
            listed = await client.list_tools()
    except Exception as exc:
        raise PeerError(f"{endpoint_label(url)}: {mcp_failure(exc, recorder)}") from None
    return [tool_dict(t) for t in listed.tools]


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
    recorder = recorder_for(url, headers, bus)
    try:
        async with open_client(url, recorder, timeout, headers=headers) as client:
            return tool_result(
                await client.call_tool(
                    name,
                    args,
                    read_timeout_seconds=timeout,
                    progress_callback=progress_from(progress),
                )
            )
    except Exception as exc:
        raise PeerError(f"{endpoint_label(url)}: {mcp_failure(exc, recorder)}") from None


def tool_dict(t: Any) -> dict[str, Any]:
    out = {
        "name": t.name,
        "description": t.description or "",
        "input_schema": dict(t.input_schema or {}),
    }
    if getattr(t, "output_schema", None):
        out["output_schema"] = dict(t.output_schema)
    annotations = getattr(t, "annotations", None)
    if annotations is not None:
        out["annotations"] = annotations.model_dump(by_alias=True, exclude_none=True)
    execution = getattr(t, "execution", None)
    if execution is not None and execution.task_support:
        out["execution"] = {"taskSupport": execution.task_support}
    return out
