"""``toolnexus mcp``: the toolkit as an MCP server over stdio, for a desktop host that starts it."""

from __future__ import annotations

import argparse
import asyncio
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
    """``toolnexus mcp``: the toolkit's tools over stdio until the host closes stdin (or Ctrl-C:
    exit 130, see ``main``). stdout carries the protocol alone; what happens is logged on stderr."""
    with _kept_for_protocol(1, 2) as protocol:
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
            with _kept_for_protocol(0, _null()) as asked:
                await tk.serve_stdio(
                    config, on_call=told, stdin=_Lines(asked), stdout=anyio.wrap_file(wire)
                )
        finally:
            await tk.close()
    return EXIT_OK


@contextlib.contextmanager
def _kept_for_protocol(fd: int, stand_in: int) -> Iterator[int]:
    """File descriptor ``fd`` (0 or 1) kept for the protocol alone: yields a private copy of it, and
    points ``fd`` itself at ``stand_in`` until the block ends (then closed, when it is not 0, 1 or
    2). So nothing else writes to stdout (not a ``--tools`` module that prints or writes to the
    descriptor as it loads, not a child process that echoes, not a tool's output: redirecting
    ``sys.stdout`` alone let the last two corrupt the stream), and nothing else reads the
    host's messages from stdin (a tool's child reads the null device: end of file)."""
    if fd == 1:
        sys.stdout.flush()
    private = os.dup(fd)  # not inherited by children, and above the standard three
    os.dup2(stand_in, fd)
    if stand_in > 2:
        os.close(stand_in)
    try:
        yield private
    finally:
        if fd == 1:
            sys.stdout.flush()
        os.dup2(private, fd)
        os.close(private)


def _null() -> int:
    return os.open(os.devnull, os.O_RDONLY)


MAX_LINE = 16 * 1024 * 1024
"""The longest message a host may send (one JSON-RPC message a line); a longer one is dropped,
and the server answers it as a message it cannot parse."""


class _Lines:
    """The lines a host writes to stdin, read on the loop as they come, for the MCP SDK's stdio
    server (it iterates its stdin). Its own reader waits on a worker thread, and a thread blocked
    reading a terminal or a pipe kept the process alive after Ctrl-C until a line or end of file
    came (the interpreter waits for its threads at exit): here a read waits on the loop, which
    Ctrl-C cancels. The descriptor stays blocking (a terminal's flags are its shell's too): it is
    read once the loop says it is readable; a file, which the loop cannot watch, never blocks."""

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.held = b""
        self.ended = False
        self.watchable = True
        self.dropping = False  # in a line past MAX_LINE: the rest of it is dropped

    def __aiter__(self) -> _Lines:
        return self

    async def __anext__(self) -> str:
        await asyncio.sleep(0)  # the loop's other work between two lines, as with the SDK's reader
        while True:
            end = self.held.find(b"\n")
            if end >= 0:
                line, self.held = self.held[: end + 1], self.held[end + 1 :]
                if self.dropping:
                    self.dropping = False
                    return "\n"  # what was dropped: answered as a message that does not parse
                return line.decode("utf-8", "replace")
            if self.ended:
                if self.held and not self.dropping:
                    line, self.held = self.held, b""
                    return line.decode("utf-8", "replace")
                raise StopAsyncIteration
            if len(self.held) > MAX_LINE:
                self.held, self.dropping = b"", True
            await self._readable()
            chunk = os.read(self.fd, 65536)
            self.ended = not chunk
            self.held += chunk

    async def _readable(self) -> None:
        if not self.watchable:
            return
        loop = asyncio.get_running_loop()
        ready: asyncio.Future[None] = loop.create_future()
        try:
            loop.add_reader(self.fd, lambda: ready.done() or ready.set_result(None))
        except (OSError, ValueError, NotImplementedError):  # a file: a read never waits
            self.watchable = False
            return
        try:
            await ready
        finally:
            loop.remove_reader(self.fd)
