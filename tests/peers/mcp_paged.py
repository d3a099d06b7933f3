"""An MCP server on the official Python SDK's low-level ``Server`` that does what the high-level
one does not, for the inspector's tests: its lists come a page at a time (tools by 3, resources
and prompts by 2, each ``nextCursor`` the server's own opaque word), a tool that waits until it is
cancelled (and counts the cancels it saw: ``cancelled``), a tool that logs a line at every level
(the handshake era's ``logging/setLevel`` honoured by the server; 2026-07-28's per-request opt-in
by the SDK), ping (the SDK's own answer), and an MCP App's ``ui://`` resource among its resources.

``python -m tests.peers.mcp_paged stdio`` (both eras, as the client chooses), or ``... sse`` (the
legacy HTTP+SSE transport of 2024-11-05 on a free loopback port; prints ``MCP <url>``).
"""

from __future__ import annotations

import asyncio
import sys
import warnings
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route

from .mcp_everything import _serve, _socket

LEVELS = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
NUMBERED = [f"tool{i}" for i in range(1, 8)]
TOOLS = [*NUMBERED, "wait", "log", "cancelled"]
PROMPTS = [f"prompt{i}" for i in range(1, 6)]
RESOURCES = [f"note://page/{i}" for i in range(1, 6)] + ["ui://paged/app"]
PAGES = {"tools": 3, "prompts": 2, "resources": 2}


def _page(kind: str, items: list[Any], params: types.PaginatedRequestParams | None) -> Any:
    """The page a cursor names (``<kind>-<start>``: any other cursor is refused, as the spec
    has it) and the next one's cursor."""
    cursor = params.cursor if params is not None else None
    start = 0
    if cursor is not None:
        head, _, number = cursor.partition("-")
        if head != kind or not number.isdigit():
            raise MCPError(types.INVALID_PARAMS, f"Invalid cursor: {cursor[:40]}")
        start = int(number)
    end = start + PAGES[kind]
    return items[start:end], (f"{kind}-{end}" if end < len(items) else None)


def build() -> Server[Any]:
    state: dict[str, Any] = {"level": "debug", "cancelled": 0}

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        names, more = _page("tools", TOOLS, params)
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=n,
                    description=f"{n} of the paged server",
                    input_schema={"type": "object", "properties": {}},
                )
                for n in names
            ],
            next_cursor=more,
        )

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        def said(text: str) -> types.CallToolResult:
            return types.CallToolResult(content=[types.TextContent(type="text", text=text)])

        if params.name == "wait":  # until cancelled (a minute at most)
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                state["cancelled"] += 1
                raise
            return said("waited a minute, never cancelled")
        if params.name == "cancelled":
            return said(f"cancelled {state['cancelled']} times")
        if params.name == "log":
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                for level in LEVELS:
                    if LEVELS.index(level) >= LEVELS.index(state["level"]):
                        await ctx.session.send_log_message(
                            level, f"a {level} line", "paged", related_request_id=ctx.request_id
                        )
            return said("logged")
        if params.name in NUMBERED:
            return said(f"{params.name} answers")
        raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")

    async def set_level(ctx: Any, params: types.SetLevelRequestParams) -> types.EmptyResult:
        state["level"] = params.level
        return types.EmptyResult()

    async def list_prompts(ctx: Any, params: Any) -> types.ListPromptsResult:
        names, more = _page("prompts", PROMPTS, params)
        return types.ListPromptsResult(
            prompts=[types.Prompt(name=n, description=f"{n} of the paged server") for n in names],
            next_cursor=more,
        )

    async def get_prompt(ctx: Any, params: types.GetPromptRequestParams) -> types.GetPromptResult:
        return types.GetPromptResult(
            messages=[
                types.PromptMessage(
                    role="user", content=types.TextContent(type="text", text=params.name)
                )
            ]
        )

    async def list_resources(ctx: Any, params: Any) -> types.ListResourcesResult:
        uris, more = _page("resources", RESOURCES, params)
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=u,
                    name=u.rsplit("/", 1)[1],
                    mime_type="text/html;profile=mcp-app" if u.startswith("ui://") else None,
                )
                for u in uris
            ],
            next_cursor=more,
        )

    async def read_resource(
        ctx: Any, params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if params.uri.startswith("ui://"):  # an MCP App's HTML
            return types.ReadResourceResult(
                contents=[
                    types.TextResourceContents(
                        uri=params.uri,
                        mime_type="text/html;profile=mcp-app",
                        text="<html><body>an app</body></html>",
                    )
                ]
            )
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=params.uri, text=f"page {params.uri}")]
        )

    with warnings.catch_warnings():  # the handshake era's logging, deprecated in 2026-07-28
        warnings.simplefilter("ignore")
        return Server(
            "paged-py",
            version="1.0.0",
            instructions="Lists a page at a time, a tool to cancel, logs at every level.",
            on_list_tools=list_tools,
            on_call_tool=call_tool,
            on_set_logging_level=set_level,
            on_list_prompts=list_prompts,
            on_get_prompt=get_prompt,
            on_list_resources=list_resources,
            on_read_resource=read_resource,
        )


def sse_app(server: Server[Any]) -> Starlette:
    sse = SseServerTransport("/messages/")

    async def handle(request: Request) -> Response:
        async with sse.connect_sse(request.scope, request.receive, request._send) as (read, write):  # noqa: SLF001  # the SDK's own example
            await server.run(read, write, server.create_initialization_options())
        return Response()

    return Starlette(
        routes=[
            Route("/sse", handle, methods=["GET"]),
            Mount("/messages/", app=sse.handle_post_message),
        ]
    )


async def main(how: str) -> None:
    server = build()
    if how == "stdio":
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())
        return
    sock = _socket()
    print(f"MCP http://127.0.0.1:{sock.getsockname()[1]}/sse", flush=True)
    await _serve(sse_app(server), sock)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else "stdio"))
