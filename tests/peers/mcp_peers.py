"""The MCP servers written for the tests on the official SDKs, started for a test:
``mcp_everything.py`` (Python SDK, both eras; also behind OAuth) and ``js/mcp_server.mjs``
(TypeScript SDK 1.x, the handshake era), over stdio (a command line) or streamable HTTP (a URL);
``js/mcp_tasks.mjs`` (its tools run as MCP tasks) over either.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from ..helpers import stop_process
from .js_peer import HERE as JS
from .js_peer import need_js_sdk

ROOT = Path(__file__).resolve().parents[2]
PY_STDIO = [sys.executable, "-m", "tests.peers.mcp_everything", "stdio"]
TS_STDIO = ["node", str(JS / "mcp_server.mjs"), "stdio"]
TS_TASKS = ["node", str(JS / "mcp_tasks.mjs")]
"""``js/mcp_tasks.mjs``: the TypeScript SDK's server with tools run as MCP tasks, over stdio."""
ENV = {"PYTHONPATH": str(ROOT)}
"""What a stdio server started from the tests needs beside the SDK's safe default environment."""


def stdio(sdk: str) -> list[str]:
    """The command line of the ``py``, ``ts`` or ``ts-tasks`` server over stdio."""
    if sdk in ("ts", "ts-tasks"):
        need_js_sdk()
        return list(TS_STDIO if sdk == "ts" else TS_TASKS)
    return list(PY_STDIO)


@contextlib.contextmanager
def http_server(
    sdk: str, *, oauth: bool = False, static: bool = False, sse: bool = False
) -> Iterator[dict[str, str]]:
    """The ``py``, ``ts`` or ``ts-tasks`` server over streamable HTTP on 127.0.0.1: ``{"MCP": url}`` (and
    ``"AS"``: the authorization server's, with ``oauth``; ``static``: one that registers no
    client, only a static client id); with ``sse``, the ``py`` one over the legacy HTTP+SSE
    transport, its stream's URL; ``paged`` (``mcp_paged.py``) over HTTP+SSE."""
    if sdk in ("ts", "ts-tasks"):
        need_js_sdk()
        argv = ["node", str(JS / ("mcp_server.mjs" if sdk == "ts" else "mcp_tasks.mjs")), "http"]
    elif sdk == "paged":
        argv = [sys.executable, "-m", "tests.peers.mcp_paged", "sse"]
    else:
        how = "sse" if sse else ("oauth-static" if static else "oauth") if oauth else "http"
        argv = [sys.executable, "-m", "tests.peers.mcp_everything", how]
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env={**os.environ, **ENV},
    )
    try:
        assert proc.stdout is not None
        said: dict[str, str] = {}
        for _ in range(2 if oauth else 1):
            line = proc.stdout.readline().split()
            assert len(line) == 2, f"the {sdk} MCP server did not start: {line}"
            said[line[0]] = line[1]
        yield said
    finally:
        stop_process(proc)
