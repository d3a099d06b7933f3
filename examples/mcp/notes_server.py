"""A small MCP server over stdio, built on the official SDK, for toolnexus to load as a tool source.

Its tools: ``add`` (two numbers), ``shout`` (upper-cases text), ``stats`` (structured output),
``fail`` (always an error result), ``sleep`` (waits, cancellably) and ``pid`` (its process id).

Use it from a toolkit config::

    {"mcpServers": {"notes": {"command": "python", "args": ["examples/mcp/notes_server.py"]}}}
"""

from __future__ import annotations

import asyncio
import os

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("notes")


@server.tool(structured_output=False)
def add(a: float, b: float) -> str:
    """Add two numbers."""
    return f"{a + b:g}"


@server.tool(structured_output=False)
def shout(text: str) -> str:
    """Return the text in upper case."""
    return text.upper()


@server.tool(structured_output=True)
def stats(text: str) -> dict[str, int]:
    """Count the words and characters of a text."""
    return {"words": len(text.split()), "chars": len(text)}


@server.tool(structured_output=False)
def fail(reason: str = "asked to fail") -> str:
    """Always fails, with the reason given."""
    raise ToolError(reason)


@server.tool(structured_output=False)
async def sleep(seconds: float) -> str:
    """Wait some seconds, then say so."""
    await asyncio.sleep(seconds)
    return f"slept {seconds:g}s"


@server.tool(structured_output=False)
def pid() -> str:
    """The server's process id."""
    return str(os.getpid())


if __name__ == "__main__":
    server.run("stdio")
