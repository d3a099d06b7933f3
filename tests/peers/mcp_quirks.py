"""An MCP server with what the MCP doctor must find, on the official Python SDK's lowlevel
``Server`` over stdio: a stray print on stdout before the protocol, a tool whose input schema is
not a JSON Schema, a tool name no model accepts, a read-only tool that runs without its required
argument, a read-only tool whose structured content does not match its output schema, prompts
declared but failing to list, and an unknown tool answered as a tool error.

``python -m tests.peers.mcp_quirks``
"""

from __future__ import annotations

import asyncio
import sys
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError

READ_ONLY = types.ToolAnnotations(read_only_hint=True)
TOOLS = [
    types.Tool(
        name="broken_schema",
        description="Its input schema is not a JSON Schema.",
        input_schema={"type": "object", "properties": {"x": {"type": "nonsense"}}},
    ),
    types.Tool(
        name="bad name!",
        description="A name no model accepts.",
        input_schema={"type": "object"},
    ),
    types.Tool(
        name="lenient",
        description="Runs without its required argument.",
        input_schema={
            "type": "object",
            "required": ["n"],
            "properties": {"n": {"type": "integer", "default": 3}},
        },
        annotations=READ_ONLY,
    ),
    types.Tool(
        name="liar",
        description="Its structured content does not match its output schema.",
        input_schema={"type": "object"},
        output_schema={
            "type": "object",
            "required": ["total"],
            "properties": {"total": {"type": "integer"}},
        },
        annotations=READ_ONLY,
    ),
]


async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
    return types.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name == "liar":
        return types.CallToolResult(
            content=[types.TextContent(type="text", text='{"total": "three"}')],
            structured_content={"total": "three"},
        )
    if params.name in {t.name for t in TOOLS}:
        n = (params.arguments or {}).get("n", "nothing")
        return types.CallToolResult(content=[types.TextContent(type="text", text=f"ran with {n}")])
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=f"no tool {params.name}")], is_error=True
    )


async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
    raise MCPError(types.INTERNAL_ERROR, "the prompts are not ready")


async def main() -> None:
    print("hello from a stray print", flush=True)  # on stdout, before the protocol: wrong
    server = Server(
        "quirks",
        version="0.0.1",
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_prompts=list_prompts,
    )
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    asyncio.run(main())
    sys.exit(0)
