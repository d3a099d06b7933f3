"""``toolnexus mcp``: the toolkit as an MCP server over stdio, for a desktop host that starts it."""

from __future__ import annotations

import argparse
import contextlib
import io
import logging
import os
import sys
from collections.abc import Iterator
from typing import Any

import anyio

import toolnexus as tn

from ..display import printable
from .options import _command, _toolkit_options
from .output import EXIT_OK
from .toolkit import _toolkit


def _mcp_parser(sub: Any) -> None:
    x = _command(
        sub,
        "mcp",
        "serve the toolkit (tools; skills as prompts and resources) as MCP over stdio, for desktop MCP hosts "
        "(Claude Desktop, VS Code, Cursor): the host starts this command",
        "toolnexus mcp --skills ./skills                  # what a host's config runs",
        "toolnexus mcp --tools mytools.py:add,mul --expose add",
        "toolnexus doctor --mcp 'toolnexus mcp --skills ./skills'   # check it as a host would",
    )
    _toolkit_options(x)
    x.add_argument("--name", help="the server's name in MCP's initialize (default toolnexus)")
    x.add_argument(
        "--expose",
        action="append",
        metavar="TOOL",
        help="expose only this tool (repeatable; default: every tool but bash, write and edit)",
    )


async def _mcp(args: argparse.Namespace) -> int:
    """``toolnexus mcp``: the toolkit's tools over stdio until the host closes stdin. stdout carries
    the protocol alone; what happens is logged on stderr."""
    with _protocol_stdout() as protocol:
        logging.basicConfig(
            stream=sys.stderr, level=logging.WARNING, format="toolnexus mcp: %(message)s"
        )
        tk, _ = await _toolkit(args)
        config = tn.MCPServeConfig.from_config(tk.config.get("mcpServer"))
        if args.name:
            config.name = args.name
        if args.expose:
            config.tools = list(args.expose)

        def told(call: dict[str, Any]) -> None:
            outcome = "error" if call["is_error"] else "ok"
            print(
                printable(f"{call['name']}: {outcome} in {call['ms']:.0f} ms"),
                file=sys.stderr,
                flush=True,
            )

        exposed = [t.name for t in config.exposed(tk.tools())]
        print(
            printable(
                f"serving {len(exposed)} tool(s) over stdio as {config.name}: {', '.join(exposed)}"
            ),
            file=sys.stderr,
            flush=True,
        )
        if sys.stdin.isatty():  # run by hand: it would wait silently for a host that never comes
            print(
                "toolnexus mcp speaks MCP on stdin and stdout, for a desktop MCP host (Claude "
                "Desktop, an IDE) that starts it; typed here it waits for one. Ctrl-C stops it. "
                "For a server on a port: toolnexus serve --mcp",
                file=sys.stderr,
                flush=True,
            )
        wire = io.TextIOWrapper(open(protocol, "wb", closefd=False), encoding="utf-8")
        try:
            await tk.serve_stdio(config, on_call=told, stdout=anyio.wrap_file(wire))
        finally:
            await tk.close()
    return EXIT_OK


@contextlib.contextmanager
def _protocol_stdout() -> Iterator[int]:
    """File descriptor 1 kept for a protocol alone: yields a private copy of it, and points 1 itself
    at stderr until the block ends, so that nothing else writes there: not a ``--tools`` module
    that prints or writes to the descriptor as it loads, not a child process that echoes, not a
    tool's output (redirecting ``sys.stdout`` alone let the last two corrupt the stream)."""
    sys.stdout.flush()
    private = os.dup(1)  # not inherited by children, and above the standard three
    os.dup2(2, 1)
    try:
        yield private
    finally:
        sys.stdout.flush()
        os.dup2(private, 1)
        os.close(private)
