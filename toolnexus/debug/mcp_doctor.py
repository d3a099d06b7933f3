"""``toolnexus doctor --mcp TARGET``: probe an MCP server (a streamable-HTTP URL, or a stdio
server's command line) and say, in plain words, what works with which clients, with the evidence
(the exchanges, masked, as the Wire shows them) and the fix on the server's side.

The checks are harmless by default (nothing is called that could act):

- **negotiation**: the version and era the official client settles on (``server/discover``, or the
  ``initialize`` handshake), whether the handshake era is spoken too (the TypeScript SDK 1.x, and
  most hosts today, speak only it), and over HTTP what an ``initialize`` with a version nobody
  knows gets (the spec: the server answers with one it supports);
- **capabilities** declared against what answers: each list the server declares must answer, one
  it does not declare should be refused (-32601); a declared ``resources.subscribe``, ``logging``
  (handshake era) and ``completions`` are tried;
- **tools**: each name as the spec would have it, each input and output schema a valid JSON
  Schema of an object; with ``call=True`` the tools annotated read-only (``readOnlyHint``; no
  other is ever called) are called without their required arguments (the spec: a tool error the
  model can read, not a protocol error) and with arguments made from their schema's defaults,
  enums and examples, their structured content checked against the output schema;
- **errors**: an unknown tool, prompt and resource, and an unknown method, each answered with the
  protocol error the spec names (-32602, -32602, -32002, -32601), not a result;
- over HTTP, **origin** (a request from a foreign ``Origin`` must be refused: DNS rebinding) and
  **auth** (a 401 must name the protected-resource metadata, which must name an authorization
  server offering PKCE S256 and registration; a wrong token must be refused; a server that asks
  for nothing on a non-loopback address is said to);
- over stdio, **stdout** must carry nothing but JSON-RPC (a stray print corrupts the stream).

Each finding goes into a :class:`~toolnexus.debug.report.DoctorReport` (``doctor="mcp"``) as it
is made, which every front end shows the same way (and as JSON, for CI).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import json
import logging
import re
import warnings
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urlsplit

import httpx
import jsonschema_rs

from ..errors import PeerError
from ..events import TrafficEvent
from ..mcp.session import MCPSession
from ..mcp.transport import endpoint_label, mcp_failure, sdk
from ..traffic import TrafficRecorder, recorded_exchange
from .features import Finder, evidence
from .report import DoctorReport, Finding

__all__ = ["mcp_doctor"]

MAX_TOOLS = 200
"""The most tools whose schemas are checked (a server may list any number)."""
MAX_CALLS = 20
"""The most read-only tools called with ``call=True``."""
MAX_ANSWER = 1024 * 1024
"""The most bytes of one raw HTTP answer read."""
TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
"""A tool name as the spec would have it (1 to 128 of these characters)."""
HANDSHAKE_CLIENTS = ["TypeScript SDK 1.x", "handshake-era hosts"]
EVERY_CLIENT = ["every MCP client"]
UNKNOWN = "toolnexus-doctor-no-such-thing"


async def mcp_doctor(
    target: str | list[str],
    *,
    headers: dict[str, str] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 10.0,
    call: bool = False,
    on_finding: Callable[[DoctorReport], None] | None = None,
    bus: Any = None,
    record: Any = None,
) -> DoctorReport:
    """Probe the MCP server at ``target`` (a URL, or a stdio command line as a list); see the
    module docstring. ``on_finding(report)`` is called as each finding is added and once when the
    report is done. ``record``: a :class:`~toolnexus.debug.cassette.CassetteWriter` the doctor's
    session is written to (its probes of another era, version or origin are not: the cassette
    replays as the session)."""
    report = DoctorReport(endpoint_label(target), doctor="mcp")
    if on_finding is not None:
        report.watch(on_finding)
    try:
        with _quiet():
            await _checks(target, report.add, headers or {}, env, timeout, call, bus, record)
    finally:
        report.finish()
    return report


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The SDK's own logs of what the doctor provokes and reports (a stray stdout line, a refused
    sign-in) stay out of the terminal while it works."""
    sdk = logging.getLogger("mcp")
    level = sdk.level
    sdk.setLevel(logging.CRITICAL)
    try:
        yield
    finally:
        sdk.setLevel(level)


async def _checks(
    target: str | list[str],
    add: Callable[[Finding], Any],
    headers: dict[str, str],
    env: dict[str, str] | None,
    timeout: float,
    call: bool,
    bus: Any,
    record: Any = None,
) -> None:
    session = MCPSession(target, headers=headers, env=env, bus=bus, timeout=timeout, record=record)
    find = Finder(session.recorder, add, shown=4)
    try:
        await session.start()
    except PeerError as exc:
        find.found(
            "error",
            "connect",
            f"no MCP session: {session.reason or exc}",
            0,
            EVERY_CLIENT,
            _connect_fix(session),
        )
        if isinstance(target, str):
            await _auth(target, session, headers, timeout, find)
        return
    try:
        await _negotiation(session, target, headers, env, timeout, find)
        await _capabilities(session, find)
        tools = await _tools(session, find)
        if call:
            await _calls(session, tools, find)
        elif tools:
            read_only = sum(bool((t.get("annotations") or {}).get("readOnlyHint")) for t in tools)
            find.found(
                "info",
                "tools",
                f"no tool was called ({read_only} are annotated read-only: --call calls "
                "those, and only those)",
            )
        await _errors(session, find)
    finally:
        await session.close()
    if isinstance(target, str):
        await _origin(target, session.recorder, headers, timeout, find)
        await _auth(target, session, headers, timeout, find)
    else:
        _stdout(session, find)


def _connect_fix(session: MCPSession) -> str:
    if session.stderr:
        return "see the server's stderr above: start it by hand with the same command to see more"
    if "401" in session.reason:
        return "pass its credentials (--header 'Authorization: Bearer ...'), or sign in with OAuth in toolnexus-tui's MCP mode"
    return "check the URL or command, and that the server is running and speaks MCP"


# -- negotiation ------------------------------------------------------------------------------------
async def _negotiation(
    session: MCPSession,
    target: str | list[str],
    headers: dict[str, str],
    env: dict[str, str] | None,
    timeout: float,
    find: Finder,
) -> None:
    who = f"{session.server_name} {session.server_version}".strip() or "an anonymous server"
    era = (
        "no handshake: each request says its version"
        if session.modern
        else "the initialize handshake"
    )
    find.found("ok", "negotiation", f"{who} speaks MCP {session.protocol_version} ({era})")
    if not session.modern:
        find.found(
            "info",
            "negotiation",
            "no 2026-07-28 (server/discover was refused): 2026 clients fall back to the "
            "initialize handshake, as the official Python client does",
        )
        return
    legacy = MCPSession(target, headers=headers, env=env, timeout=timeout, mode="legacy")
    try:
        await legacy.start()
    except PeerError as exc:
        find.on(legacy.recorder).found(
            "warning",
            "negotiation",
            f"refuses the initialize handshake: {legacy.reason or exc}",
            0,
            HANDSHAKE_CLIENTS,
            "keep serving the handshake era beside 2026-07-28 (the official SDKs' servers do)",
        )
        return
    finally:
        await legacy.close()
    find.found("ok", "negotiation", f"the handshake era too: MCP {legacy.protocol_version}")
    if isinstance(target, str):
        await _unknown_version(target, headers, timeout, find)


async def _unknown_version(url: str, headers: dict[str, str], timeout: float, find: Finder) -> None:
    """An ``initialize`` asking for a version nobody speaks: the server answers with its own."""
    recorder = TrafficRecorder(None, peer=url)
    for name, value in headers.items():
        recorder.secret(name, value)
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "1999-01-01",
            "capabilities": {},
            "clientInfo": {"name": "toolnexus-doctor", "version": "1"},
        },
    }
    answer = await _raw(url, recorder, headers, timeout, body)
    if answer is None:
        return
    status, data = answer
    result = data.get("result") if isinstance(data, dict) else None
    version = result.get("protocolVersion") if isinstance(result, dict) else None
    if status == 200 and isinstance(version, str) and version != "1999-01-01":
        find.found(
            "ok",
            "negotiation",
            f"an initialize asking for an unknown version is answered with {version}",
        )
    else:
        find.on(recorder).found(
            "warning",
            "negotiation",
            "an initialize asking for a version the server does not know is not answered "
            "with one it does",
            0,
            ["clients newer or older than the server"],
            "answer initialize with the latest version the server supports (the spec's "
            "version negotiation); the client then decides",
        )


# -- capabilities -----------------------------------------------------------------------------------
_LISTS = {"tools": "tools/list", "resources": "resources/list", "prompts": "prompts/list"}


async def _capabilities(session: MCPSession, find: Finder) -> None:
    MCPError = sdk().MCPError

    client, caps = session.client, session.capabilities
    listing = {
        "tools": client.list_tools,
        "resources": client.list_resources,
        "prompts": client.list_prompts,
    }
    find.found(
        "info",
        "capabilities",
        "declared: " + (json.dumps(caps, sort_keys=True) if caps else "none"),
    )
    for name, method in _LISTS.items():
        before = find.mark()
        try:
            listed = await asyncio.wait_for(listing[name](cache_mode="bypass"), session.timeout)
        except MCPError as exc:
            if name in caps:
                find.found(
                    "error",
                    "capabilities",
                    f"declares {name} but {method} fails: {exc.error.code} {exc.error.message}",
                    before,
                    EVERY_CLIENT,
                    f"answer {method}, or stop declaring {name}",
                    at=f"capabilities.{name}",
                )
            elif exc.error.code != -32601:
                find.found(
                    "warning",
                    "capabilities",
                    f"{method} (not declared) is answered with {exc.error.code}, not "
                    "-32601 (method not found)",
                    before,
                    fix="answer a method the server does not offer with -32601",
                )
            continue
        except Exception as exc:  # noqa: BLE001 - said as a finding
            find.found(
                "error" if name in caps else "warning",
                "capabilities",
                f"{method} failed: {mcp_failure(exc, session.recorder)}",
                before,
                EVERY_CLIENT if name in caps else [],
                at=f"capabilities.{name}",
            )
            continue
        items = getattr(listed, name, None) or []
        if name in caps:
            find.found("ok", "capabilities", f"{name}: {len(items)} listed", at=method)
        else:
            find.found(
                "warning",
                "capabilities",
                f"answers {method} ({len(items)}) without declaring {name}",
                before,
                ["clients that ask only what the server declares (most hosts)"],
                f"declare the {name} capability",
                at=method,
            )
    await _subscribe(session, find)
    await _logging(session, find)


async def _subscribe(session: MCPSession, find: Finder) -> None:
    MCPError = sdk().MCPError

    resources = session.capabilities.get("resources") or {}
    if not resources.get("subscribe") or session.modern:
        return  # 2026-07-28 subscribes on the listen stream, which the session opened
    try:
        listed = await session.resources()
    except PeerError:
        return
    if not listed:
        return
    uri = listed[0]["uri"]
    before = find.mark()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await asyncio.wait_for(session.client.subscribe_resource(uri), session.timeout)
            await asyncio.wait_for(session.client.unsubscribe_resource(uri), session.timeout)
    except (MCPError, Exception) as exc:  # noqa: BLE001
        find.found(
            "error",
            "capabilities",
            f"declares resources.subscribe but subscribing to {uri} fails: "
            f"{mcp_failure(exc, session.recorder)}",
            before,
            ["clients that subscribe"],
            "answer resources/subscribe and resources/unsubscribe, or stop declaring subscribe",
            at="capabilities.resources.subscribe",
        )
        return
    find.found("ok", "capabilities", f"resources.subscribe: subscribed to {uri} and back")


async def _logging(session: MCPSession, find: Finder) -> None:
    if "logging" not in session.capabilities:
        return
    if session.modern:
        find.found(
            "info",
            "capabilities",
            "declares logging, deprecated on 2026-07-28: a client asks for log messages "
            "per request there",
        )
        return
    before = find.mark()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await asyncio.wait_for(session.client.set_logging_level("info"), session.timeout)
    except Exception as exc:  # noqa: BLE001
        find.found(
            "error",
            "capabilities",
            f"declares logging but logging/setLevel fails: {mcp_failure(exc, session.recorder)}",
            before,
            ["clients that set a log level"],
            "answer logging/setLevel, or stop declaring logging",
            at="capabilities.logging",
        )
        return
    find.found("ok", "capabilities", "logging: logging/setLevel answered")


# -- tools ------------------------------------------------------------------------------------------
async def _tools(session: MCPSession, find: Finder) -> list[dict[str, Any]]:
    if "tools" not in session.capabilities:
        return []
    try:
        tools = await session.tools()
    except PeerError:
        return []  # said by the capabilities
    seen: set[str] = set()
    bad = 0
    for tool in tools[:MAX_TOOLS]:
        name = tool["name"]
        where = f"tools[{name}]"
        if name in seen:
            find.found(
                "error",
                "tools",
                f"two tools are named {name!r}",
                breaks=EVERY_CLIENT,
                fix="give each tool its own name",
                at=where,
            )
        seen.add(name)
        if not TOOL_NAME.match(name):
            bad += 1
            find.found(
                "warning",
                "tools",
                f"the name {name!r} is not 1 to 128 of A-Z a-z 0-9 _ - .",
                breaks=["clients and models that check tool names (OpenAI's, Anthropic's)"],
                fix="rename the tool",
                at=where,
            )
        for key, field in (("input_schema", "inputSchema"), ("output_schema", "outputSchema")):
            schema = tool.get(key)
            if schema is None:
                continue
            problem = _schema_problem(schema)
            if problem:
                bad += 1
                find.found(
                    "error",
                    "tools",
                    f"the {field} {problem}",
                    breaks=EVERY_CLIENT
                    if key == "input_schema"
                    else ["clients that check results"],
                    fix=f"make the {field} a valid JSON Schema of an object",
                    at=f"{where}.{field}",
                )
    if len(tools) > MAX_TOOLS:
        find.found("info", "tools", f"the first {MAX_TOOLS} of {len(tools)} tools were checked")
    if not bad:
        find.found(
            "ok",
            "tools",
            f"{len(tools)} tool{'s' * (len(tools) != 1)}: names and schemas valid "
            f"({sum(1 for t in tools if t.get('output_schema'))} with an output schema)",
        )
    return tools


def _schema_problem(schema: Any) -> str:
    """Why a tool's schema is not a valid JSON Schema of an object ("" when it is); checked
    against its ``$schema``'s meta-schema, else 2020-12's (jsonschema-rs, as the tools' own
    arguments are)."""
    if not isinstance(schema, dict):
        return "is not a JSON object"
    if schema.get("type") != "object":
        return f"has type {schema.get('type')!r}, not 'object'"
    try:
        jsonschema_rs.meta.validate(schema if "$schema" in schema else {**schema, "$schema": _2020})
    except jsonschema_rs.ValidationError as exc:
        path = "/".join(str(p) for p in exc.instance_path)
        return f"is not a valid JSON Schema{f' at {path}' if path else ''}: {exc.message[:200]}"
    except (jsonschema_rs.ReferencingError, ValueError) as exc:
        return f"cannot be read as a JSON Schema: {str(exc).splitlines()[0][:200]}"
    return ""


_2020 = "https://json-schema.org/draft/2020-12/schema"


async def _calls(session: MCPSession, tools: list[dict[str, Any]], find: Finder) -> None:
    """The read-only tools called: without their required arguments, then with arguments made
    from their schema; nothing else is ever called."""
    read_only = [t for t in tools if (t.get("annotations") or {}).get("readOnlyHint") is True]
    if not read_only:
        find.found(
            "info",
            "tools",
            "no tool is annotated read-only (readOnlyHint), so none was called",
            fix="annotate the tools that change nothing with readOnlyHint: true",
        )
        return
    for tool in read_only[:MAX_CALLS]:
        name, schema = tool["name"], tool["input_schema"]
        where = f"tools[{name}]"
        required = schema.get("required") or []
        if required:
            await _call_without(session, name, required, where, find)
        args = _example_arguments(schema)
        if args is None:
            find.found(
                "info",
                "tools",
                f"{name} was not called with arguments: its schema gives no default, enum or "
                "example for every required one",
                at=where,
            )
            continue
        await _call_with(session, tool, args, where, find)


async def _call_with(
    session: MCPSession, tool: dict[str, Any], args: dict[str, Any], where: str, find: Finder
) -> None:
    """One read-only tool called with ``args``: a result, which matches its output schema."""
    name = tool["name"]
    before = find.mark()
    try:
        result = await session.call(name, args)
    except PeerError as exc:
        if "structured content" in str(exc) or "output schema" in str(exc):
            # the official client refused the result: it checks it against the schema
            find.found(
                "error",
                "tools",
                f"{name}'s result does not match its output schema: " + str(exc).splitlines()[0],
                before,
                ["clients that check results (the official SDKs' do: they refuse it)"],
                "return structuredContent matching the output schema",
                at=f"{where}.structuredContent",
            )
            return
        find.found(
            "error",
            "tools",
            f"{name} {json.dumps(args)} failed as a protocol error: {exc}",
            before,
            EVERY_CLIENT,
            "report a tool's failure as a result with isError",
            at=where,
        )
        return
    output = tool.get("output_schema")
    structured = result.metadata.get("structured")
    if output and not result.is_error:
        if structured is None:
            find.found(
                "error",
                "tools",
                f"{name} declares an output schema but its result has no structuredContent",
                before,
                ["clients that read structured results"],
                "return structuredContent matching the output schema",
                at=f"{where}.outputSchema",
            )
            return
        try:
            errors = [
                e.message for e in jsonschema_rs.validator_for(output).iter_errors(structured)
            ]
        except (
            jsonschema_rs.ValidationError,
            jsonschema_rs.ReferencingError,
            ValueError,
        ) as exc:
            errors = [f"the output schema cannot be used: {exc}"]
        if errors:
            find.found(
                "error",
                "tools",
                f"{name}'s structuredContent does not match its output schema: {errors[0][:200]}",
                before,
                ["clients that check results (the official SDKs' do)"],
                "return structuredContent matching the output schema",
                at=f"{where}.structuredContent",
            )
            return
    find.found(
        "ok",
        "tools",
        f"{name} {json.dumps(args)[:120]}: "
        + ("a tool error" if result.is_error else "answered")
        + (
            ", structured content matches the output schema"
            if output and structured is not None
            else ""
        ),
        at=where,
    )


async def _call_without(
    session: MCPSession, name: str, required: list[str], where: str, find: Finder
) -> None:
    before = find.mark()
    try:
        result = await session.call(name, {})
    except PeerError as exc:
        find.found(
            "warning",
            "errors",
            f"{name} without its required {', '.join(map(str, required))} is a protocol "
            f"error ({exc}): the model never sees why and cannot correct itself",
            before,
            ["models calling through any client"],
            "report invalid arguments as a tool result with isError (the spec's input "
            "validation errors)",
            at=where,
        )
        return
    if result.is_error:
        find.found("ok", "errors", f"{name} without its required arguments: a tool error", at=where)
    else:
        find.found(
            "warning",
            "tools",
            f"{name} runs without its required {', '.join(map(str, required))}: the input "
            "schema is not honoured",
            before,
            ["models that trust the schema"],
            "check the arguments against the input schema before the tool runs",
            at=where,
        )


def _example_arguments(schema: dict[str, Any]) -> dict[str, Any] | None:
    """Arguments from the schema's defaults, enums, consts and examples (None when a required one
    has none)."""
    props = schema.get("properties") or {}
    out: dict[str, Any] = {}
    for name, sub in props.items():
        if not isinstance(sub, dict):
            continue
        for key in ("default", "const"):
            if key in sub:
                out[name] = sub[key]
                break
        else:
            if isinstance(sub.get("enum"), list) and sub["enum"]:
                out[name] = sub["enum"][0]
            elif isinstance(sub.get("examples"), list) and sub["examples"]:
                out[name] = sub["examples"][0]
    required = schema.get("required") or []
    return out if all(r in out for r in required) else None


# -- errors -----------------------------------------------------------------------------------------
async def _errors(session: MCPSession, find: Finder) -> None:
    MCPError = sdk().MCPError

    client, caps = session.client, session.capabilities
    probes: list[tuple[str, str, Any, set[int]]] = []
    if "tools" in caps:
        probes.append(
            ("an unknown tool", "tools/call", lambda: client.call_tool(UNKNOWN, {}), {-32602})
        )
    if "prompts" in caps:
        probes.append(
            ("an unknown prompt", "prompts/get", lambda: client.get_prompt(UNKNOWN), {-32602})
        )
    if "resources" in caps:
        probes.append(
            (
                "an unknown resource",
                "resources/read",
                lambda: client.read_resource(f"toolnexus-doctor://{UNKNOWN}", cache_mode="bypass"),
                {-32002, -32602},
            )
        )
    for what, method, ask, codes in probes:
        before = find.mark()
        try:
            answer = await asyncio.wait_for(ask(), session.timeout)
        except MCPError as exc:
            code = exc.error.code
            if code in codes:
                find.found("ok", "errors", f"{what}: protocol error {code}", at=method)
            else:
                find.found(
                    "warning",
                    "errors",
                    f"{what} is answered with {code}, not {' or '.join(map(str, sorted(codes)))}",
                    before,
                    ["clients that tell the errors apart"],
                    f"answer {what} with {min(codes, key=abs)}",
                    at=method,
                )
            continue
        except Exception as exc:  # noqa: BLE001
            find.found(
                "error",
                "errors",
                f"{what}: {mcp_failure(exc, session.recorder)}",
                before,
                EVERY_CLIENT,
                at=method,
            )
            continue
        is_error = getattr(answer, "is_error", False)
        find.found(
            "warning",
            "errors",
            f"{what} is answered with a {'tool error' if is_error else 'result'}, not the "
            f"protocol error the spec names ({min(codes, key=abs)})",
            before,
            ["clients that tell a missing tool from a failing one (a host re-lists on it)"],
            f"answer {method} for {what} with the JSON-RPC error {min(codes, key=abs)}",
            at=method,
        )


# -- HTTP: origin and auth --------------------------------------------------------------------------
async def _raw(
    url: str,
    recorder: TrafficRecorder,
    headers: dict[str, str],
    timeout: float,
    body: dict[str, Any],
    extra: dict[str, str] | None = None,
) -> tuple[int, Any] | None:
    """One JSON-RPC POST as a 2025 client sends it, recorded: ``(status, JSON or None)``."""

    sent = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-11-25",
        **headers,
        **(extra or {}),
    }
    async with httpx.AsyncClient(timeout=timeout) as http:
        try:
            r, data = await recorded_exchange(
                recorder,
                http,
                "POST",
                url,
                headers=sent,
                content=json.dumps(body).encode(),
                limit=MAX_ANSWER,
                timeout=timeout,
                rpc_method=str(body.get("method")),
            )
        except Exception:  # noqa: BLE001 - on the wire log, with why
            return None
    text = data.decode("utf-8", "replace")
    if "text/event-stream" in r.headers.get("content-type", ""):
        text = next(
            (line[5:].strip() for line in text.splitlines() if line.startswith("data:")), ""
        )
    try:
        return r.status_code, json.loads(text)
    except ValueError:
        return r.status_code, None


def _initialize() -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "toolnexus-doctor", "version": "1"},
        },
    }


async def _origin(
    url: str, recorder: TrafficRecorder, headers: dict[str, str], timeout: float, find: Finder
) -> None:
    before = find.mark()
    answer = await _raw(
        url, recorder, headers, timeout, _initialize(), {"Origin": "http://evil.example"}
    )
    if answer is None:
        return
    status, _ = answer
    if status in (400, 403):
        find.found("ok", "origin", f"a request from a foreign Origin is refused ({status})", at=url)
        return
    find.found(
        "error" if _loopback(url) else "warning",
        "origin",
        f"a request from Origin http://evil.example is answered {status}: a web page the user "
        "visits can call this server (DNS rebinding)",
        before,
        ["anyone whose browser opens a hostile page while the server runs"],
        "refuse requests whose Origin is not the server's own (403), as the spec requires",
        at=url,
    )


def _loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


async def _auth(
    url: str, session: MCPSession, headers: dict[str, str], timeout: float, find: Finder
) -> None:
    recorder = session.recorder
    refused = next((e for e in recorder.events if e.status == 401 and e.url == url), None)
    if refused is None:
        if not any(k.lower() == "authorization" for k in headers):
            find.found(
                "info" if _loopback(url) else "warning",
                "auth",
                "answers without any credentials"
                + ("" if _loopback(url) else ", on an address others can reach"),
                fix="" if _loopback(url) else "require a token (the MCP authorization spec: OAuth)",
                at=url,
            )
        else:
            await _wrong_token(url, recorder, headers, timeout, find)
        return
    await _auth_metadata(url, refused, session.challenge, recorder, timeout, find)


async def _wrong_token(
    url: str, recorder: TrafficRecorder, headers: dict[str, str], timeout: float, find: Finder
) -> None:
    before = find.mark()
    wrong = {k: v for k, v in headers.items() if k.lower() != "authorization"}
    wrong["Authorization"] = "Bearer toolnexus-doctor-wrong-token"
    answer = await _raw(url, recorder, wrong, timeout, _initialize())
    if answer is None:
        return
    status, _ = answer
    if status in (401, 403):
        find.found("ok", "auth", f"a wrong token is refused ({status})", at=url)
    else:
        find.found(
            "error",
            "auth",
            f"a wrong bearer token is answered {status}",
            before,
            ["everyone who trusts the token to keep others out"],
            "check the token on every request",
            at=url,
        )


async def _auth_metadata(
    url: str,
    refused: TrafficEvent,
    challenge: str,
    recorder: TrafficRecorder,
    timeout: float,
    find: Finder,
) -> None:
    """A 401's way to a token (``challenge``: its WWW-Authenticate, which the wire log masks)."""
    found = re.search(r'resource_metadata="?([^",\s]+)"?', challenge)
    parts = urlsplit(url)
    prm_url = (
        found.group(1)
        if found
        else f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"
    )
    if not found:
        find.add(
            Finding(
                "warning",
                "auth",
                "the 401 names no resource_metadata in WWW-Authenticate"
                + (f" ({challenge!r})" if challenge else ""),
                [evidence(refused)],
                ["MCP clients that run OAuth (they look at the well-known path next)"],
                'answer 401 with WWW-Authenticate: Bearer resource_metadata="<its URL>"',
                at=url,
            )
        )
    prm = await _get_json(prm_url, recorder, timeout)
    if not isinstance(prm, dict):
        find.found(
            "error",
            "auth",
            f"no protected-resource metadata at {prm_url}",
            len(recorder.events) - 1,
            ["MCP clients that run OAuth"],
            "serve the protected-resource metadata (RFC 9728) naming the authorization server",
            at=prm_url,
        )
        return
    servers = prm.get("authorization_servers")
    resource = prm.get("resource")
    if resource not in (url, url.rstrip("/"), f"{parts.scheme}://{parts.netloc}"):
        find.found(
            "warning",
            "auth",
            f"the metadata's resource {resource!r} is not this server ({url})",
            breaks=["the official SDKs' clients (they refuse a token for another resource)"],
            fix="set resource to the MCP endpoint's URL",
            at=prm_url,
        )
    if not isinstance(servers, list) or not servers:
        find.found(
            "error",
            "auth",
            "the protected-resource metadata names no authorization server",
            breaks=["MCP clients that run OAuth"],
            fix="list the authorization server in authorization_servers",
            at=prm_url,
        )
        return
    await _authorization_server(url, str(servers[0]).rstrip("/"), recorder, timeout, find)


async def _authorization_server(
    url: str, issuer: str, recorder: TrafficRecorder, timeout: float, find: Finder
) -> None:
    """What the authorization server the protected-resource metadata names tells a client."""
    meta = await _get_json(f"{issuer}/.well-known/oauth-authorization-server", recorder, timeout)
    if not isinstance(meta, dict):
        meta = await _get_json(f"{issuer}/.well-known/openid-configuration", recorder, timeout)
    if not isinstance(meta, dict):
        find.found(
            "error",
            "auth",
            f"the authorization server {issuer} publishes no metadata (RFC 8414 or OpenID)",
            breaks=["MCP clients that run OAuth"],
            fix="serve /.well-known/oauth-authorization-server",
            at=issuer,
        )
        return
    if "S256" not in (meta.get("code_challenge_methods_supported") or []):
        find.found(
            "error",
            "auth",
            "the authorization server does not say it supports PKCE S256",
            breaks=["MCP clients (the spec: they refuse to go on without it)"],
            fix="list S256 in code_challenge_methods_supported",
            at=issuer,
        )
    if not meta.get("registration_endpoint") and not meta.get(
        "client_id_metadata_document_supported"
    ):
        find.found(
            "warning",
            "auth",
            "the authorization server offers neither dynamic client registration nor "
            "client ID metadata documents",
            breaks=["clients that were not registered by hand"],
            fix="offer a registration_endpoint (RFC 7591)",
            at=issuer,
        )
    find.found(
        "ok",
        "auth",
        f"OAuth: a 401 leads to {issuer} (authorization code with PKCE); sign in with "
        "toolnexus-tui's MCP mode to check the rest",
        at=url,
    )


async def _get_json(url: str, recorder: TrafficRecorder, timeout: float) -> Any:
    async with httpx.AsyncClient(timeout=timeout) as http:
        try:
            r, data = await recorded_exchange(
                recorder, http, "GET", url, headers={}, limit=MAX_ANSWER, timeout=timeout
            )
        except Exception:  # noqa: BLE001 - on the wire log, with why
            return None
    if r.status_code != 200:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return None


# -- stdio ------------------------------------------------------------------------------------------
_STRAY = re.compile(r"input_value='((?:[^'\\]|\\.)*)'")


def _stray(error: str) -> str:
    """The line a server wrote on stdout, from the SDK's complaint about it."""
    found = _STRAY.search(error)
    return f"stdout: {found.group(1)}" if found else error.splitlines()[0]


def _stdout(session: MCPSession, find: Finder) -> None:
    strays = [
        e for e in session.recorder.events if e.method == "STDIO" and e.error and not e.rpc_method
    ]
    if not strays:
        find.found("ok", "stdout", "stdout carried JSON-RPC messages only")
        return
    find.add(
        Finding(
            "error",
            "stdout",
            f"stdout carried {len(strays)} line{'s' * (len(strays) != 1)} that "
            f"{'are' if len(strays) != 1 else 'is'} not JSON-RPC",
            [_stray(e.error or "") for e in strays[:4]],
            ["every stdio client: a stray line can corrupt or end the session"],
            "write logs and prints to stderr; stdout is the protocol's alone",
        )
    )
