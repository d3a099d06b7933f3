"""A stdio server's stdout: nothing but JSON-RPC messages."""

from __future__ import annotations

import re

from ...mcp.session import MCPSession
from ..features import Finder
from ..report import Finding

_STRAY = re.compile(r"input_value='((?:[^'\\]|\\.)*)'")


def _stray(error: str) -> str:
    """The line a server wrote on stdout, from the SDK's complaint about it."""
    found = _STRAY.search(error)
    return f"stdout: {found.group(1)}" if found else error.splitlines()[0]


def stdout(session: MCPSession, find: Finder) -> None:
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
