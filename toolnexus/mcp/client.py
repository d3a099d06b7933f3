"""MCP servers as toolkit tools, and a session with any MCP server for the inspectors, on the
official ``mcp`` client.

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

:class:`MCPSession` is the session the inspectors (the TUI's MCP mode, its web form, the notebook's
``%toolnexus mcp``) keep open and only render: see its docstring. The forms they draw from a
schema, a prompt's arguments or a URI template (:class:`Field`), and a stdio command line with its
environment (:func:`split_command`), are made here, once.
"""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import copy
import json
import logging
import os
import re
import shlex
import tempfile
import time
import warnings
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from dataclasses import field as dataclass_field
from pathlib import Path
from typing import Any, Literal, Protocol
from urllib.parse import quote

import anyio

from ..display import printable
from ..errors import ConfigError, PeerError
from ..secrets import expand_env
from ..tools import Progress, ProgressFn, Tool, ToolContext, ToolResult, sanitize
from ..traffic import TrafficRecorder, recording_transport

__all__ = [
    "MCPServerSpec",
    "MCPConnection",
    "parse_servers",
    "connect_all",
    "remote_tools",
    "call_remote_tool",
    "MCPSession",
    "Notice",
    "Elicitation",
    "Reply",
    "Sampling",
    "Content",
    "Field",
    "form_fields",
    "prompt_fields",
    "form_values",
    "field_value",
    "template_fields",
    "expand_template",
    "split_command",
    "mcp_failure",
]

log = logging.getLogger("toolnexus.mcp")

DEFAULT_TIMEOUT = 30.0
CALL_TIMEOUT = 600.0
"""Seconds a session's call, read or prompt may take: a handshake-era server may ask the user a
question in the middle of it, and the user takes their time."""
MAX_NOTICES = 1000
"""The notices a session keeps (the oldest go first)."""
MAX_PAGES = 50
"""The most pages of one listing a session reads."""
MAX_ITEMS = 5000
"""The most items of one listing a session keeps."""
MAX_FIELDS = 100
"""The most fields a form made from a peer's schema has."""
MAX_STDERR = 16384
"""The characters of a stdio server's stderr a session keeps (its end)."""
USER_REJECTED = -1
"""The JSON-RPC code the MCP spec gives a sampling request the user refused."""


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
        from mcp import StdioServerParameters  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

        if self.spec.url:
            if not self.spec.headers:
                return self.spec.url
            import httpx2  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)
            from mcp.client.streamable_http import streamable_http_client  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

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
        from mcp import Client  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

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
        await _ended(self._owner)
        if self.status in ("connected", "connecting"):
            self.status = "closed"


async def _ended(owner: asyncio.Task[None] | None) -> None:
    """Wait for a session's owner task to close it (told to stop), cancelled if it will not."""
    if owner is not None and not owner.done():
        try:
            await asyncio.wait_for(asyncio.shield(owner), 5)
        except (TimeoutError, Exception):
            owner.cancel()
            await asyncio.gather(owner, return_exceptions=True)


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
    import mcp_types  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)
    from mcp.shared.exceptions import MCPError  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

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
        async with _open(url, recorder, timeout, headers=headers) as client:
            listed = await client.list_tools()
    except Exception as exc:
        raise PeerError(f"{_where(url)}: {mcp_failure(exc, recorder)}") from None
    return [_tool_dict(t) for t in listed.tools]


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
        async with _open(url, recorder, timeout, headers=headers) as client:
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
    type and text; a JSON-RPC error as its code and message."""
    from mcp.shared.exceptions import MCPError  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, PeerError):  # already one line for people
        return str(exc)
    if type(exc).__module__.startswith("mcp.client.auth"):  # the SDK's OAuth flow said why
        return f"the OAuth sign-in failed: {printable(str(exc), 400)}"
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


def _where(target: str | list[str]) -> str:
    """An endpoint for people: the URL, or ``stdio: <command line>``."""
    if isinstance(target, str):
        return target
    return "stdio: " + shlex.join(target)


def _recorder(url: str | list[str], headers: dict[str, str] | None, bus: Any) -> Any:
    recorder = TrafficRecorder(bus, peer=_where(url))
    for name, value in (headers or {}).items():
        recorder.secret(name, value)
    return recorder


def _tool_dict(t: Any) -> dict[str, Any]:
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
    return out


# -- forms from a schema ----------------------------------------------------------------------------
@dataclass(frozen=True)
class Field:
    """One field of a form made from a JSON schema (a tool's arguments, an elicitation's
    ``requestedSchema``) or a prompt's argument list: its name, the type as people read it, and
    how its typed text becomes the JSON value sent."""

    name: str
    schema: dict[str, Any]
    required: bool = False

    @property
    def kind(self) -> str:
        """The type as a schema gives it: ``integer``, ``string | null``, ``array of string``, one
        of its ``enum`` values, or ``any`` (the peer's text, made printable)."""
        return printable(_kind(self.schema), 120)

    @property
    def title(self) -> str:
        return printable(str(self.schema.get("title") or self.name), 80)

    @property
    def description(self) -> str:
        return printable(str(self.schema.get("description") or ""), 200)

    @property
    def default(self) -> str:
        """The default as the text to put in the field ("" for none)."""
        value = self.schema.get("default")
        if value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value)

    @property
    def choices(self) -> list[Any]:
        """The values an ``enum`` (or a ``oneOf`` of ``const``s) allows, else none."""
        if isinstance(self.schema.get("enum"), list):
            return list(self.schema["enum"])
        options = self.schema.get("oneOf") or self.schema.get("anyOf")
        if (
            isinstance(options, list)
            and options
            and all(isinstance(o, dict) and "const" in o for o in options)
        ):
            return [o["const"] for o in options]
        return []

    @property
    def hint(self) -> str:
        return (
            f"{self.kind}, required"
            if self.required
            else f"{self.kind}, optional: empty leaves it out"
        )

    def value(self, text: str) -> Any:
        """The field's text as the JSON value its schema wants (strings stay strings)."""
        return field_value(text, self.schema)


def field_value(text: str, schema: dict[str, Any]) -> Any:
    """A form field's text as the JSON value its schema wants (strings stay strings)."""
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "string" in kinds and not text.startswith(("{", "[")):
        return text
    if "boolean" in kinds and text.strip().lower() in ("yes", "no", "y", "n"):
        return text.strip().lower() in ("yes", "y")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _kind(schema: dict[str, Any]) -> str:
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"][:8])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), dict) and schema["items"].get("type"):
        return f"array of {schema['items']['type']}"
    if isinstance(kind, str):
        return kind
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and all(isinstance(o, dict) for o in options):
        if options and all("const" in o for o in options):
            return "one of " + ", ".join(json.dumps(o["const"]) for o in options[:8])
        return " | ".join(_kind(o) for o in options)
    return "any"


def form_fields(schema: Any) -> list[Field]:
    """The fields of an object schema's ``properties``, in order (a name is the peer's text: a
    front end gives each field an id by its position)."""
    schema = schema if isinstance(schema, dict) else {}
    props = schema.get("properties")
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    if not isinstance(props, dict):
        return []
    return [
        Field(str(name), sub if isinstance(sub, dict) else {}, name in needed)
        for name, sub in list(props.items())[:MAX_FIELDS]
    ]


def prompt_fields(arguments: list[dict[str, Any]]) -> list[Field]:
    """A prompt's arguments as fields (each a string)."""
    return [
        Field(
            str(a.get("name", "")),
            {"type": "string", "description": a.get("description") or ""},
            bool(a.get("required")),
        )
        for a in arguments[:MAX_FIELDS]
    ]


def form_values(
    fields: list[Field], texts: list[str], *, sent: str = "nothing was sent"
) -> dict[str, Any]:
    """The form's values: each non-empty text as its field's value.

    Raises:
        ValueError: naming the required fields left empty (``sent`` says what did not happen).
    """
    values = {f.name: f.value(t) for f, t in zip(fields, texts, strict=False) if t != ""}
    missing = [f.name for f in fields if f.required and f.name not in values]
    if missing:
        raise ValueError(
            f"fill in the required argument{'s' if len(missing) > 1 else ''}: "
            + ", ".join(printable(n, 80) for n in missing)
            + f" ({sent})"
        )
    return values


# -- resource templates (RFC 6570) ------------------------------------------------------------------
_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^{}]*)\}")
_OPERATORS = {  # operator: (first, separator, named, if empty, allow reserved)
    "": ("", ",", False, "", False),
    "+": ("", ",", False, "", True),
    "#": ("#", ",", False, "", True),
    ".": (".", ".", False, "", False),
    "/": ("/", "/", False, "", False),
    ";": (";", ";", True, "", False),
    "?": ("?", "&", True, "=", False),
    "&": ("&", "&", True, "=", False),
}


def template_fields(template: str) -> list[Field]:
    """The variables of a URI template (``note://items/{item}``, ``file:///{+path}``,
    ``search{?q,lang}``) as form fields (strings; the simple and reserved ones required)."""
    out: dict[str, Field] = {}
    for op, names in _EXPRESSION.findall(template):
        for raw in names.split(","):
            name = raw.strip().rstrip("*").split(":", 1)[0]
            if name and name not in out:
                out[name] = Field(name, {"type": "string"}, op in ("", "+"))
    return list(out.values())[:MAX_FIELDS]


def expand_template(template: str, values: Mapping[str, str]) -> str:
    """A URI template expanded with ``values`` (RFC 6570 levels 1 to 3: a variable left out of
    ``values`` is left out of the URI)."""

    def expand(match: re.Match[str]) -> str:
        first, separator, named, empty, reserved = _OPERATORS[match.group(1)]
        safe = ":/?#[]@!$&'()*+,;=" if reserved else ""
        parts = []
        for raw in match.group(2).split(","):
            name = raw.strip().rstrip("*").split(":", 1)[0]
            if name not in values:
                continue
            value = quote(str(values[name]), safe=safe)
            parts.append((f"{name}{'=' + value if value else empty}") if named else value)
        return first + separator.join(parts) if parts else ""

    return _EXPRESSION.sub(expand, template)


# -- a session that stays ---------------------------------------------------------------------------
@dataclass(frozen=True)
class Notice:
    """Something the server told or asked, in order: a notification (a list changed, a resource
    updated, a log message, progress), a request of its own (elicitation, sampling, roots) and how
    it was answered, or the session's own news (connected, a stream lost)."""

    when: float
    kind: str
    """``notification``, ``request``, ``progress``, ``log`` or ``session``."""
    method: str
    summary: str
    params: Any = None

    @property
    def clock(self) -> str:
        return time.strftime("%H:%M:%S", time.localtime(self.when))


@dataclass(frozen=True)
class Elicitation:
    """A server's question for the user: a form (``fields`` from its ``requestedSchema``) or, in
    URL mode, an address to visit (``url``). Texts are the peer's, made printable."""

    message: str
    fields: list[Field]
    url: str | None = None
    schema: dict[str, Any] = dataclass_field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """The user's answer to an :class:`Elicitation`: ``accept`` (with ``content``), ``decline``
    or ``cancel``."""

    action: Literal["accept", "decline", "cancel"]
    content: dict[str, Any] | None = None


@dataclass(frozen=True)
class Sampling:
    """A server's request to run the client's model: the conversation (role, text), its system
    prompt and token budget, for the user to approve or refuse."""

    messages: list[tuple[str, str]]
    system: str | None
    max_tokens: int

    @property
    def prompt(self) -> str:
        return self.messages[-1][1] if self.messages else ""


@dataclass(frozen=True)
class Content:
    """One item of a read resource: its URI, MIME type, and text, or (a blob) its bytes."""

    uri: str
    mime: str | None
    text: str | None = None
    data: bytes | None = None

    @property
    def size(self) -> int:
        return len(self.data) if self.data is not None else len((self.text or "").encode())


class Model(Protocol):
    """What a session uses of the model that answers sampling (an ``llm.Client``)."""

    model: str

    async def run(
        self, prompt: str, toolkit: Any = None, history: Any = None, *, sink: Any = None
    ) -> Any: ...


Elicit = Callable[[Elicitation], Awaitable[Reply]]
Approve = Callable[[Sampling], Awaitable[bool]]
Listener = Callable[[Notice], None]


class MCPSession:
    """One live session with any MCP server, kept open for an inspector (the TUI's MCP mode, its
    web form, the notebook's widget): what it negotiated, its lists, reads, prompts and calls, and
    everything it told or asked (:attr:`notices`, :meth:`watch`). Owned by a background task (anyio
    wants the task that opened a session to close it); calls may come from any task.

    ``target``: a streamable-HTTP URL (with ``headers``) or a stdio server's command line as a list
    (with ``env`` added to a safe default environment, and ``cwd``). Every exchange, each stdio
    JSON-RPC message too, is on ``bus`` (the Wire). The session offers the server what it was given:
    ``elicit`` (the user answers a form: the elicitation capability), ``model`` and ``approve`` (a
    sampling request, once the user approves it, is answered by ``model``: the sampling
    capability), ``roots`` (always offered; the user's list, :meth:`set_roots`), ``authorize`` (an
    OAuth sign-in when an HTTP server asks for one: see :mod:`toolnexus.mcp.auth`). ``record``: a
    :class:`~toolnexus.debug.cassette.CassetteWriter` every exchange is written to as well (a
    cassette ``toolnexus replay`` serves as this server, or diffs against it: see
    :mod:`toolnexus.debug.mcp_replay`); the caller closes it.

    Both eras the official SDK speaks: a 2026-07-28 server's questions come as ``input_required``
    results, which the SDK answers through the same callbacks and retries; its changes come on a
    ``subscriptions/listen`` stream the session keeps open (re-opened when the resources subscribed
    to change). A handshake-era server asks during the call and notifies on the connection; its
    resources are subscribed with ``resources/subscribe``.
    """

    def __init__(
        self,
        target: str | list[str],
        *,
        headers: dict[str, str] | None = None,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        bus: Any = None,
        timeout: float = DEFAULT_TIMEOUT,
        call_timeout: float = CALL_TIMEOUT,
        roots: list[str] | None = None,
        elicit: Elicit | None = None,
        model: Model | None = None,
        approve: Approve | None = None,
        authorize: Any = None,
        mode: str = "auto",
        record: Any = None,
    ) -> None:
        from .auth import OAuthFlow  # noqa: PLC0415  # start-up: its redirect server (Starlette's responses, 50 ms)

        if not isinstance(target, str) and (not target or not target[0]):
            raise ConfigError("an MCP stdio server needs a command")
        self.target = target
        self.where = _where(target)
        self.headers = dict(headers or {})
        self.env, self.cwd = env, cwd
        self.timeout, self.call_timeout = timeout, call_timeout
        self.roots = [root_uri(r) for r in roots or []]
        self.elicit, self.model, self.approve = elicit, model, approve
        self.mode = mode
        self.recorder = _recorder(target, self.headers, bus)
        self.recorder.cassette = record
        self.oauth = (
            OAuthFlow(authorize, secret=self.recorder.secret_values.add)
            if authorize is not None and isinstance(target, str)
            else None
        )
        self.status: Literal["connecting", "connected", "failed", "closed"] = "connecting"
        self.reason = ""
        self.protocol_version = ""
        self.server_name = ""
        self.server_version = ""
        self.instructions = ""
        self.capabilities: dict[str, Any] = {}
        self.subscribed: set[str] = set()
        self.notices: collections.deque[Notice] = collections.deque(maxlen=MAX_NOTICES)
        self.stderr = ""
        self.challenge = ""
        """The ``WWW-Authenticate`` of the last 401 (a challenge, no secret)."""
        self._listeners: list[Listener] = []
        self._client: Any = None
        self._owner: asyncio.Task[None] | None = None
        self._listen_task: asyncio.Task[None] | None = None
        self._stop = asyncio.Event()
        self._ready: asyncio.Future[None] | None = None

    def __repr__(self) -> str:
        return f"MCPSession({self.where!r}, status={self.status!r})"

    @property
    def modern(self) -> bool:
        """The 2026-07-28 era (a per-request envelope, no handshake), else the handshake era."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

        return self.protocol_version in MODERN_PROTOCOL_VERSIONS

    @property
    def client(self) -> Any:
        """The official SDK's ``mcp.Client`` of this session, for what the session does not wrap
        (the doctor asks it for exact JSON-RPC errors).

        Raises:
            PeerError: the session is not connected.
        """
        return self._connected()

    @property
    def offered(self) -> list[str]:
        """The capabilities this client declares."""
        out = ["roots"]
        if self.elicit is not None:
            out.append("elicitation")
        if self.model is not None and self.approve is not None:
            out.append("sampling")
        return out

    # -- life ---------------------------------------------------------------------------------------
    async def start(self) -> MCPSession:
        """Connect; when the server refuses with a 401 that names its protected-resource metadata
        (the MCP authorization spec's sign that it takes OAuth) and ``authorize`` was given, run
        the OAuth sign-in and connect again with its token.

        Raises:
            PeerError: it could not connect; the reason in one line (also in :attr:`reason`).
        """
        try:
            await self._attempt(None)
        except PeerError:
            if self.oauth is None or not self._asks_oauth():
                raise
            self._tell("session", "oauth", "the server asks for OAuth: signing in")
            self._stop = asyncio.Event()
            await self._attempt(self.oauth)
        self.status = "connected"
        self._tell("session", "connected", self._hello())
        return self

    async def _attempt(self, auth: Any) -> None:
        self._ready = asyncio.get_running_loop().create_future()
        self._owner = asyncio.ensure_future(self._own(auth))
        wait = self.timeout + (auth.timeout if auth is not None else 0)
        try:
            await asyncio.wait_for(asyncio.shield(self._ready), wait)
        except Exception as exc:
            reason = self._failure(exc)
            await self.close()
            self.status, self.reason = "failed", reason
            raise PeerError(f"{self.where}: {reason}") from None

    def _asks_oauth(self) -> bool:
        """Whether the last 401 names the server's protected-resource metadata (read from the
        answer itself: the wire log masks every header named for auth)."""
        return "resource_metadata" in self.challenge.lower()

    def _answered(self, response: Any) -> None:
        if response.status_code == 401:
            self.challenge = response.headers.get("www-authenticate", "")

    async def __aenter__(self) -> MCPSession:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def close(self) -> None:
        self._stop.set()
        await _ended(self._owner)
        if self.oauth is not None:
            await self.oauth.close()
        if self.status in ("connected", "connecting"):
            self.status = "closed"

    def _failure(self, exc: BaseException) -> str:
        if self.oauth is not None and self.oauth.failure:  # the sign-in's own words
            return self.oauth.failure
        reason = mcp_failure(exc, self.recorder)
        if self.stderr:
            reason += f"; its stderr ends: {printable(self.stderr[-400:].strip())}"
        return reason

    def _hello(self) -> str:
        who = f"{self.server_name} {self.server_version}".strip() or "an anonymous server"
        return f"{who}, protocol {self.protocol_version}"

    async def _own(self, auth: Any) -> None:
        try:
            async with _open(
                self.target,
                self.recorder,
                self.timeout,
                headers=self.headers,
                env=self.env,
                cwd=self.cwd,
                auth=auth,
                stderr=self._heard_stderr,
                on_response=self._answered,
                mode=self.mode,
                cache=None,
                message_handler=self._heard,
                elicitation_callback=self._elicited if self.elicit is not None else None,
                sampling_callback=self._sampled
                if self.model is not None and self.approve is not None
                else None,
                list_roots_callback=self._listed_roots,
            ) as client:
                self._client = client
                self._learn(client)
                if self.modern:
                    self._listen_task = asyncio.ensure_future(self._listen())
                assert self._ready is not None
                if not self._ready.done():
                    self._ready.set_result(None)
                await self._stop.wait()
        except BaseException as exc:  # noqa: BLE001 - the session ended; report, never raise here
            if self._ready is not None and not self._ready.done():
                self._ready.set_exception(
                    exc if isinstance(exc, Exception) else RuntimeError("connection closed")
                )
            elif not self._stop.is_set():
                self.status, self.reason = "failed", self._failure(exc)
                self._tell("session", "ended", f"the session ended: {self.reason}")
            if isinstance(exc, asyncio.CancelledError):
                return
        finally:
            self._client = None
            if self._listen_task is not None:
                self._listen_task.cancel()
                await asyncio.gather(self._listen_task, return_exceptions=True)
            if not self._stop.is_set() and self.status == "connected":
                self.status, self.reason = "failed", "the server closed the connection"
                self._tell("session", "ended", self.reason)

    def _learn(self, client: Any) -> None:
        self.protocol_version = str(client.protocol_version)
        info = client.server_info
        self.server_name = printable(info.name, 200) if info is not None else ""
        self.server_version = printable(info.version, 100) if info is not None else ""
        self.instructions = printable(client.instructions or "", 4000)
        self.capabilities = client.server_capabilities.model_dump(by_alias=True, exclude_none=True)

    def _heard_stderr(self, tail: str) -> None:
        self.stderr = tail

    # -- what the server says -----------------------------------------------------------------------
    def watch(self, listener: Listener) -> Callable[[], None]:
        """Call ``listener(notice)`` for every notice from now on; returns the way to stop."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _tell(self, kind: str, method: str, summary: str, params: Any = None) -> Notice:
        notice = Notice(time.time(), kind, method, printable(summary, 400), params)
        self.notices.append(notice)
        for listener in list(self._listeners):
            try:
                listener(notice)
            except Exception:  # noqa: BLE001 - a front end's listener never breaks the session
                log.warning("a notice listener failed", exc_info=True)
        return notice

    async def _heard(self, message: Any) -> None:
        if isinstance(message, Exception):
            self._tell("session", "error", f"the connection said: {mcp_failure(message)}")
            return
        method = str(getattr(message, "method", "?"))
        params = getattr(message, "params", None)
        data = params.model_dump(by_alias=True, exclude_none=True, mode="json") if params else {}
        if method == "notifications/message":
            level = data.get("level", "info")
            said = data.get("data")
            text = said if isinstance(said, str) else json.dumps(said, ensure_ascii=False)
            self._tell("log", method, f"{level}: {text}", data)
        elif method == "notifications/subscriptions/acknowledged":
            return  # the listen stream says what it honoured
        elif method == "notifications/progress":
            self._tell("progress", method, _progress_text(data), data)
        elif method == "notifications/resources/updated":
            self._tell("notification", method, f"updated: {data.get('uri', '')}", data)
        else:
            self._tell("notification", method, method.removeprefix("notifications/"), data)

    async def _listen(self, acked: asyncio.Future[None] | None = None) -> None:
        """2026-07-28: keep a ``subscriptions/listen`` stream open for every change and the
        resources subscribed to (its events reach :meth:`_heard` like notifications); ``acked``
        is done once the server acknowledged it (or refused)."""
        from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

        client = self._client
        try:
            async with client.listen(
                tools_list_changed=True,
                prompts_list_changed=True,
                resources_list_changed=True,
                resource_subscriptions=sorted(self.subscribed),
            ) as sub:
                honored = getattr(sub, "honored", None)
                said = honored.model_dump(by_alias=True, exclude_none=True) if honored else {}
                self._tell(
                    "session", "subscriptions/listen", f"listening: {json.dumps(said)}", said
                )
                if acked is not None and not acked.done():
                    acked.set_result(None)
                async for _ in sub:
                    pass
            self._tell("session", "subscriptions/listen", "the server ended the listen stream")
        except asyncio.CancelledError:
            raise
        except (ListenNotSupportedError, SubscriptionLost, Exception) as exc:  # noqa: BLE001
            if self._stop.is_set():
                return  # the session is closing: the stream goes with it
            self._tell("session", "subscriptions/listen", f"no change stream: {mcp_failure(exc)}")
        finally:
            if acked is not None and not acked.done():
                acked.set_result(None)

    async def _relisten(self) -> None:
        """Open the listen stream again for the resources now subscribed to, and wait until the
        server acknowledged it (2026-07-28; nothing in the handshake era)."""
        if not self.modern or self._client is None:
            return
        before = self._listen_task
        if before is not None:
            before.cancel()
        acked: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._listen_task = asyncio.ensure_future(self._after(before, acked))
        await asyncio.wait_for(asyncio.shield(acked), self.timeout)

    async def _after(self, before: asyncio.Task[None] | None, acked: asyncio.Future[None]) -> None:
        if before is not None:
            await asyncio.gather(before, return_exceptions=True)
        await self._listen(acked)

    # -- what the server asks -----------------------------------------------------------------------
    async def _elicited(self, context: Any, params: Any) -> Any:
        import mcp_types as types  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

        url = getattr(params, "url", None)
        schema = dict(getattr(params, "requested_schema", None) or {})
        request = Elicitation(
            printable(params.message, 2000),
            form_fields(schema),
            printable(url, 2000) if url else None,
            schema,
        )
        self._tell(
            "request",
            "elicitation/create",
            f"asks: {request.message}",
            params.model_dump(by_alias=True, exclude_none=True, mode="json"),
        )
        assert self.elicit is not None
        try:
            reply = await self.elicit(request)
        except Exception as exc:  # noqa: BLE001 - the front end's failure is a cancel, not a crash
            log.warning("the elicitation form failed", exc_info=True)
            reply = Reply("cancel")
            self._tell("session", "elicitation/create", f"the form failed: {_reason(exc)}")
        self._tell("request", "elicitation/create", f"answered: {reply.action}")
        return types.ElicitResult(
            action=reply.action, content=reply.content if reply.action == "accept" else None
        )

    async def _sampled(self, context: Any, params: Any) -> Any:
        import mcp_types as types  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

        request = Sampling(
            [(m.role, printable(_sampled_text(m.content), 20000)) for m in params.messages],
            printable(params.system_prompt, 4000) if params.system_prompt else None,
            params.max_tokens,
        )
        self._tell(
            "request",
            "sampling/createMessage",
            f"asks the model: {request.prompt[:200]}",
            params.model_dump(by_alias=True, exclude_none=True, mode="json"),
        )
        assert self.approve is not None and self.model is not None
        try:
            approved = await self.approve(request)
        except Exception:  # noqa: BLE001 - a failed approval is a refusal
            log.warning("the sampling approval failed", exc_info=True)
            approved = False
        if not approved:
            self._tell("request", "sampling/createMessage", "refused by the user")
            return types.ErrorData(
                code=USER_REJECTED, message="the user refused the sampling request"
            )
        try:
            said, model = await _complete(self.model, request, self.call_timeout)
        except Exception as exc:  # noqa: BLE001 - the model's failure is the request's error
            self._tell("request", "sampling/createMessage", f"the model failed: {_reason(exc)}")
            return types.ErrorData(
                code=types.INTERNAL_ERROR, message=f"the model failed: {_reason(exc)}"
            )
        self._tell("request", "sampling/createMessage", f"answered by {model}: {said[:200]}")
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=said),
            model=model,
            stop_reason="endTurn",
        )

    async def _listed_roots(self, context: Any) -> Any:
        import mcp_types as types  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

        self._tell("request", "roots/list", f"asks for the roots: {len(self.roots)} given")
        from pydantic import FileUrl  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

        return types.ListRootsResult(roots=[types.Root(uri=FileUrl(u)) for u in self.roots])

    async def set_roots(self, roots: list[str]) -> None:
        """Declare the user's roots (paths or ``file://`` URIs); a handshake-era server is told
        they changed (2026-07-28 has no such notification: it asks again when it needs them)."""
        self.roots = [root_uri(r) for r in roots]
        client = self._client
        if client is not None and not self.modern:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await self._do(client.session.send_roots_list_changed())
        self._tell("session", "roots", f"roots: {', '.join(self.roots) or 'none'}")

    # -- what the user asks -------------------------------------------------------------------------
    async def _do(self, work: Awaitable[Any], timeout: float | None = None) -> Any:
        """Run one request of the session from any task, bounded in time; the session dying
        fails it at once.

        Raises:
            PeerError: the server refused it (a JSON-RPC error, in one line) or it failed.
        """
        job = asyncio.ensure_future(work)
        owner = self._owner
        waits: set[asyncio.Future[Any]] = {job} if owner is None else {job, owner}
        limit = self.timeout if timeout is None else timeout
        try:
            done, _ = await asyncio.wait(
                waits, timeout=limit + 1, return_when=asyncio.FIRST_COMPLETED
            )
        except asyncio.CancelledError:
            job.cancel()
            raise
        if job not in done:
            job.cancel()
            await asyncio.gather(job, return_exceptions=True)
            if owner is not None and owner.done():
                raise PeerError(
                    f"{self.where}: the session ended: {self.reason or 'connection lost'}"
                )
            raise PeerError(f"{self.where}: no answer within {limit:g} s")
        try:
            return job.result()
        except Exception as exc:
            raise PeerError(mcp_failure(exc, self.recorder)) from None

    def _connected(self) -> Any:
        client = self._client
        if client is None or self.status != "connected":
            raise PeerError(
                f"{self.where}: the session is {self.status}{': ' + self.reason if self.reason else ''}"
            )
        return client

    async def _pages(
        self, fetch: Callable[[str | None], Awaitable[Any]], field_name: str
    ) -> list[Any]:
        items: list[Any] = []
        cursor: str | None = None
        for _ in range(MAX_PAGES):
            page = await self._do(fetch(cursor))
            items += getattr(page, field_name) or []
            cursor = page.next_cursor
            if not cursor or len(items) >= MAX_ITEMS:
                break
        return items[:MAX_ITEMS]

    async def tools(self) -> list[dict[str, Any]]:
        """``[{name, description, input_schema, output_schema?, annotations?}]``, every page."""
        client = self._connected()
        listed = await self._pages(lambda c: client.list_tools(cursor=c), "tools")
        return [_tool_dict(t) for t in listed]

    async def resources(self) -> list[dict[str, Any]]:
        """``[{uri, name, description, mime_type, size}]``, every page."""
        client = self._connected()
        listed = await self._pages(lambda c: client.list_resources(cursor=c), "resources")
        return [r.model_dump(exclude_none=True, mode="json") for r in listed]

    async def templates(self) -> list[dict[str, Any]]:
        """``[{uri_template, name, description, mime_type}]``, every page."""
        client = self._connected()
        listed = await self._pages(
            lambda c: client.list_resource_templates(cursor=c), "resource_templates"
        )
        return [t.model_dump(exclude_none=True, mode="json") for t in listed]

    async def prompts(self) -> list[dict[str, Any]]:
        """``[{name, description, arguments: [{name, description, required}]}]``, every page."""
        client = self._connected()
        listed = await self._pages(lambda c: client.list_prompts(cursor=c), "prompts")
        return [p.model_dump(exclude_none=True, mode="json") for p in listed]

    async def read(self, uri: str) -> list[Content]:
        """The contents of one resource (a blob's bytes decoded), each with its MIME type."""
        client = self._connected()
        result = await self._do(client.read_resource(uri), self.call_timeout)
        out = []
        for c in result.contents:
            blob = getattr(c, "blob", None)
            data = None
            if blob is not None:
                try:
                    data = base64.b64decode(blob, validate=False)
                except ValueError:
                    data = b""
            out.append(Content(str(c.uri), c.mime_type, getattr(c, "text", None), data))
        return out

    async def prompt(
        self, name: str, arguments: dict[str, str]
    ) -> tuple[str, list[tuple[str, str]]]:
        """A prompt filled with ``arguments``: its description and its messages (role, text)."""
        client = self._connected()
        result = await self._do(client.get_prompt(name, arguments), self.call_timeout)
        return (
            printable(result.description or "", 2000),
            [(m.role, _block_text(m.content)) for m in result.messages],
        )

    async def call(
        self, name: str, args: dict[str, Any], *, progress: ProgressFn | None = None
    ) -> ToolResult:
        """Call one tool; ``progress`` hears what the server reports while it runs (also a notice).
        A tool's error is a result (``is_error``); a protocol error raises.

        Raises:
            PeerError: the server refused the call (a JSON-RPC error) or the session failed.
        """
        client = self._connected()

        async def heard(p: Progress) -> None:
            self._tell(
                "progress",
                "notifications/progress",
                _progress_text({"progress": p.done, "total": p.total, "message": p.message}),
            )
            if progress is not None:
                await progress(p)

        result = await self._do(
            client.call_tool(
                name,
                args,
                read_timeout_seconds=self.call_timeout,
                progress_callback=_progress_from(progress or _ignore),
            ),
            self.call_timeout,
        )
        outcome = _result(result)
        if result.structured_content is not None:
            outcome.metadata["structured"] = result.structured_content
        outcome.metadata["content"] = [
            b.model_dump(by_alias=True, exclude_none=True, mode="json")
            for b in result.content or []
        ]
        return outcome

    async def subscribe(self, uri: str) -> None:
        """Be told when this resource changes: ``resources/subscribe`` in the handshake era, the
        listen stream's ``resourceSubscriptions`` on 2026-07-28."""
        client = self._connected()
        if not self.modern:
            if not (self.capabilities.get("resources") or {}).get("subscribe"):
                raise PeerError(
                    f"{self.where}: the server offers no resource subscriptions (its capabilities "
                    "say so); read the resource again to see it now"
                )
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await self._do(client.subscribe_resource(uri))
        self.subscribed.add(uri)
        await self._relisten()
        self._tell("session", "resources/subscribe", f"subscribed: {uri}")

    async def unsubscribe(self, uri: str) -> None:
        client = self._connected()
        if not self.modern:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                await self._do(client.unsubscribe_resource(uri))
        self.subscribed.discard(uri)
        await self._relisten()
        self._tell("session", "resources/unsubscribe", f"unsubscribed: {uri}")


_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def split_command(text: str) -> tuple[list[str], dict[str, str]]:
    """A stdio server's command line as a shell reads it, ``NAME=value`` words before the command
    its environment (``${VAR}`` expanded): ``(argv, env)``.

    Raises:
        ValueError: the line does not split (an open quote).
    """
    words = shlex.split(text)
    env: dict[str, str] = {}
    while words and _ENV_WORD.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = expand_env(value)
    return words, env


def root_uri(root: str) -> str:
    """A root as the user gave it (a path, ``~`` expanded, or a ``file://`` URI) as a URI."""
    if root.startswith("file://"):
        return root
    return Path(os.path.expanduser(root)).resolve().as_uri()


async def _ignore(p: Progress) -> None:
    """A progress listener that asks for progress (the notices show it) and does nothing."""


def _progress_text(data: dict[str, Any]) -> str:
    done, total, message = data.get("progress"), data.get("total"), data.get("message")
    amount = f"{done:g}" if isinstance(done, (int, float)) else "?"
    if isinstance(total, (int, float)):
        amount += f"/{total:g}"
    return f"progress {amount}" + (f": {message}" if message else "")


def _block_text(block: Any) -> str:
    """A content block as text for people (an image or audio as its type, a resource its URI)."""
    kind = getattr(block, "type", "")
    if kind == "text":
        return block.text
    if kind in ("image", "audio"):
        return f"[{kind}: {getattr(block, 'mime_type', '')}]"
    if kind == "resource_link":
        return f"[resource: {getattr(block, 'uri', '')}]"
    if kind == "resource":
        res = getattr(block, "resource", None)
        return getattr(res, "text", None) or f"[resource: {getattr(res, 'uri', '')}]"
    return f"[{kind or 'content'}]"


def _sampled_text(content: Any) -> str:
    blocks = content if isinstance(content, list) else [content]
    return "\n".join(_block_text(b) for b in blocks)


async def _complete(model: Model, request: Sampling, timeout: float) -> tuple[str, str]:
    """``request`` run through ``model`` (its system prompt the request's, no tools)."""
    chosen = copy.copy(model)
    if request.system is not None and hasattr(chosen, "system_prompt"):
        chosen.system_prompt = request.system  # type: ignore[attr-defined]  # an llm.Client's
    history = [{"role": role, "content": text} for role, text in request.messages[:-1]]
    result = await asyncio.wait_for(chosen.run(request.prompt, None, history), timeout)
    return str(getattr(result, "text", "")), str(getattr(result, "model", "") or model.model)


# -- transports -------------------------------------------------------------------------------------
@contextlib.asynccontextmanager
async def _open(
    target: str | list[str],
    recorder: Any,
    timeout: float,
    *,
    headers: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
    auth: Any = None,
    stderr: Callable[[str], None] | None = None,
    on_response: Callable[[Any], None] | None = None,
    **options: Any,
) -> AsyncGenerator[Any, None]:
    """The official ``mcp.Client`` for ``target``, every exchange recorded: over streamable HTTP
    (``headers``; ``auth``: an :class:`~toolnexus.mcp.auth.OAuthFlow`) or a stdio server started
    from a command line (``env``, ``cwd``; its stderr kept: ``stderr`` hears it, and the end of it
    is in the error when the server fails; ``stderr`` is given its end when the server ends, instead;
    ``on_response`` sees each HTTP answer as it came, before the wire log masks it).
    ``options``: the ``Client``'s own."""
    import httpx2  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)
    from mcp import Client  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)
    from mcp.client.streamable_http import streamable_http_client  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

    if not isinstance(target, str):
        if not target or not target[0]:
            raise ConfigError("an MCP stdio server needs a command")
        with tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace") as errlog:
            try:
                async with Client(
                    _tapped_stdio(target, recorder, errlog, env, cwd),
                    read_timeout_seconds=timeout,
                    **options,
                ) as client:
                    yield client
            except Exception as exc:  # what the server said on stderr is often the reason
                tail = _tail(errlog)
                if not tail or stderr is not None:
                    raise
                raise PeerError(f"{mcp_failure(exc)}; its stderr ends: {printable(tail)}") from None
            finally:
                if stderr is not None:
                    stderr(_tail(errlog))
        return

    provider = await auth.provider(target) if auth is not None else None

    async def answered(response: Any) -> None:
        if on_response is not None:
            on_response(response)

    async with httpx2.AsyncClient(
        headers=headers or {},
        timeout=timeout,
        transport=recording_transport(recorder, httpx2),
        auth=provider,
        event_hooks={"response": [answered]},
    ) as http:
        async with Client(
            streamable_http_client(target, http_client=http),
            read_timeout_seconds=timeout,
            **options,
        ) as client:
            yield client


def _tail(errlog: Any) -> str:
    errlog.flush()
    errlog.seek(0)
    return errlog.read()[-MAX_STDERR:].strip()


@contextlib.asynccontextmanager
async def _tapped_stdio(
    argv: list[str],
    recorder: Any,
    errlog: Any,
    env: dict[str, str] | None = None,
    cwd: str | None = None,
) -> AsyncGenerator[Any, None]:
    """A stdio server started from ``argv`` whose every JSON-RPC message is recorded: a request and
    its response as one exchange (method ``STDIO``), a notification on its own."""
    from mcp import StdioServerParameters  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)
    from mcp.client.stdio import stdio_client  # noqa: PLC0415  # start-up: the MCP SDK (a second to import)

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
        answer = "method" not in data  # else a notification or a request of the server's own
        started, request, method = (pending.pop(data.get("id"), None) if answer else None) or (
            time.perf_counter(),
            "",
            data.get("method"),
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

    params = StdioServerParameters(command=argv[0], args=list(argv[1:]), env=env, cwd=cwd)
    try:
        async with stdio_client(params, errlog=errlog) as (
            read,
            write,
        ):  # its stderr must not draw over a TUI
            yield _Tap(read, received), _Tap(write, sent)
    finally:  # a request never answered (a listen stream) is on the wire too
        for started, request, method in pending.values():
            recorder.record(
                direction="out",
                method="STDIO",
                url=where,
                status=None,
                started=started,
                request_headers={},
                request_body=request,
                rpc_method=method,
                error="no answer: the session ended",
            )
        pending.clear()


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
