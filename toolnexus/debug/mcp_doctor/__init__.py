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

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

from ...errors import PeerError
from ...mcp.session import MCPSession
from ...mcp.transport import endpoint_label
from ..features import Finder
from ..report import DoctorReport, Finding
from .auth import auth
from .calls import call_tools
from .capabilities import capabilities
from .lines import EVERY_CLIENT
from .negotiation import negotiation
from .rpc import error_answers, origin
from .stdio import stdout
from .tools import list_tools

__all__ = ["mcp_doctor"]


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
            await auth(target, session, headers, timeout, find)
        return
    try:
        await negotiation(session, target, headers, env, timeout, find)
        await capabilities(session, find)
        tools = await list_tools(session, find)
        if call:
            await call_tools(session, tools, find)
        elif tools:
            read_only = sum(bool((t.get("annotations") or {}).get("readOnlyHint")) for t in tools)
            find.found(
                "info",
                "tools",
                f"no tool was called ({read_only} are annotated read-only: --call calls "
                "those, and only those)",
            )
        await error_answers(session, find)
    finally:
        await session.close()
    if isinstance(target, str):
        await origin(target, session.recorder, headers, timeout, find)
        await auth(target, session, headers, timeout, find)
    else:
        stdout(session, find)


def _connect_fix(session: MCPSession) -> str:
    if session.stderr:
        return "see the server's stderr above: start it by hand with the same command to see more"
    if "401" in session.reason:
        return "pass its credentials (--header 'Authorization: Bearer ...'), or sign in with OAuth in toolnexus-tui's MCP mode"
    return "check the URL or command, and that the server is running and speaks MCP"
