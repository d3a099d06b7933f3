"""What the server negotiated: its protocol version and era, and its answer to a version it does
not speak."""

from __future__ import annotations

from ...errors import PeerError
from ...mcp.session import MCPSession
from ...traffic import TrafficRecorder
from ..features import Finder
from .lines import HANDSHAKE_CLIENTS
from .rpc import raw


async def negotiation(
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
    answer = await raw(url, recorder, headers, timeout, body)
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
