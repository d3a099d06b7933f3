"""Raw HTTP requests to the server: its JSON-RPC errors for what no client should send, and the
Origin it refuses (DNS rebinding)."""

from __future__ import annotations

import asyncio
import ipaddress
import json
from typing import Any
from urllib.parse import urlsplit

import httpx

from ...mcp.session import MCPSession
from ...mcp.transport import mcp_failure, sdk
from ...traffic import TrafficRecorder, recorded_exchange
from ..features import Finder
from .lines import EVERY_CLIENT, MAX_ANSWER, UNKNOWN


async def error_answers(session: MCPSession, find: Finder) -> None:
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


async def raw(
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


def initialize_body() -> dict[str, Any]:
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


async def origin(
    url: str, recorder: TrafficRecorder, headers: dict[str, str], timeout: float, find: Finder
) -> None:
    before = find.mark()
    answer = await raw(
        url, recorder, headers, timeout, initialize_body(), {"Origin": "http://evil.example"}
    )
    if answer is None:
        return
    status, _ = answer
    if status in (400, 403):
        find.found("ok", "origin", f"a request from a foreign Origin is refused ({status})", at=url)
        return
    find.found(
        "error" if loopback(url) else "warning",
        "origin",
        f"a request from Origin http://evil.example is answered {status}: a web page the user "
        "visits can call this server (DNS rebinding)",
        before,
        ["anyone whose browser opens a hostile page while the server runs"],
        "refuse requests whose Origin is not the server's own (403), as the spec requires",
        at=url,
    )


def loopback(url: str) -> bool:
    host = urlsplit(url).hostname or ""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
