"""A toolkit as an MCP server on the official ``mcp`` SDK, carried two ways: ``/mcp`` of a served
toolkit (stateless streamable HTTP, :class:`MCPProfile`) and stdio, as desktop MCP hosts start a
server (:func:`serve_stdio`, ``toolnexus mcp``). Both run the same :class:`MCPTools`.

``tools/list`` gives one entry per exposed tool (its name, description and input schema
verbatim); ``tools/call`` runs ``Tool.execute``, whose output becomes one text content with
``isError`` kept. Exposed: the tools named in ``MCPServeConfig.tools``, or, when none are named,
every tool except the builtins that run commands or write files (``bash``, ``write``, ``edit``).
A tool that asks for input (a remote agent's ``input-required``) is asked of the user through MCP
elicitation when the client offers it, and the call goes on with the answer; a client that does
not (stateless HTTP cannot) gets a tool error that says what was asked.

Over HTTP, Host and Origin are checked for the whole app (``http.guard``); the serve options'
``auth`` applies here too. Over stdio nothing but the protocol goes to stdout (the SDK points fd 1
at stderr while it serves, so a stray print cannot corrupt the stream), and logs go to stderr.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncGenerator, Callable
from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from ..events import EventBus, Hook, ToolCallEvent
from ..skills import ToolkitLike
from ..tools import Answer, Request, Tool, ToolContext, ToolResult
from .config import Auth, MCPServeConfig

__all__ = ["MCPProfile", "MCPTools", "serve_stdio"]

MAX_QUESTIONS = 10
"""The most questions one tool call may ask the user (a remote agent that keeps asking is stopped)."""
_ANSWER_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["answer"],
    "properties": {"answer": {"type": "string", "title": "Your answer"}},
}

log = logging.getLogger("toolnexus.serve.mcp")

OnCall = Callable[[dict[str, Any]], Any]


class _AsgiEndpoint:
    """A raw ASGI endpoint (Starlette would treat a bound method as a request/response function)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Any]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


class MCPTools:
    """The exposed tools of one toolkit as the SDK's lowlevel MCP ``Server`` (``app``), whatever
    carries it; every call is published on ``bus`` and handed to ``on_call``."""

    def __init__(
        self,
        toolkit: ToolkitLike,
        config: MCPServeConfig,
        *,
        bus: EventBus,
        server: str,
        on_call: OnCall | None,
    ) -> None:
        self.toolkit = toolkit
        self.config = config
        self.bus = bus
        self.server_name = server
        self.on_call = Hook(on_call, "on_call")
        self.tools = config.exposed(toolkit.tools())
        self._by_name = {t.name: t for t in self.tools}
        self.app = Server(
            config.name, version=config.version, on_list_tools=self._list, on_call_tool=self._call
        )

    # -- handlers -----------------------------------------------------------------------------------
    async def _list(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(name=t.name, description=t.description, input_schema=t.input_schema)
                for t in self.tools
            ]
        )

    async def _call(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = self._by_name.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        args = params.arguments or {}
        started = time.perf_counter()
        result: ToolResult | None = None
        try:
            result = await tool.execute(args, ToolContext())
            for _ in range(MAX_QUESTIONS):
                request = result.pending
                if request is None:
                    break
                answer = await self._ask(ctx, tool, request)
                if isinstance(answer, ToolResult):
                    result = answer
                    break
                result = await tool.execute(args, ToolContext(answer=answer))
            else:
                if result.pending is not None:
                    result = ToolResult.error(
                        f"{tool.name} asked {MAX_QUESTIONS} questions in one call; stopped"
                    )
        finally:
            outcome = result or ToolResult.error(f"{tool.name}: canceled by the client")
            self._report(tool, args, outcome, (time.perf_counter() - started) * 1000)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=outcome.output)], is_error=outcome.is_error
        )

    async def _ask(self, ctx: Any, tool: Tool, request: Request) -> Answer | ToolResult:
        """What the user answers to ``request``, through MCP elicitation; a tool error when the
        client cannot ask (no elicitation capability, or stateless HTTP) or the user cancels."""
        question = request.prompt or "the tool needs your input"
        session = getattr(ctx, "session", None)
        if session is None or not session.check_client_capability(
            types.ClientCapabilities(elicitation=types.ElicitationCapability())
        ):
            return ToolResult.error(
                f"{tool.name} asks: {question} -- this MCP client cannot answer questions "
                "(it offers no elicitation), so the call stops here"
            )
        reply = await session.elicit_form(
            message=question,
            requested_schema=_ANSWER_SCHEMA,
            related_request_id=getattr(ctx, "request_id", None),
        )
        if reply.action == "accept":
            content: dict[str, Any] = dict(reply.content or {})
            given = content.get("answer")
            return Answer(request.id, True, "" if given is None else str(given))
        if reply.action == "decline":
            return Answer(request.id, False, None)
        return ToolResult.error(f"{tool.name} asked: {question} -- the question was canceled")

    def _report(self, tool: Tool, args: Any, result: ToolResult, ms: float) -> None:
        self.bus.publish(
            ToolCallEvent(
                self.server_name, tool.name, tool.source, args, result.output, result.is_error, ms
            )
        )
        self.on_call.fire(
            {
                "name": tool.name,
                "source": tool.source,
                "ms": ms,
                "is_error": result.is_error,
                "args": args,
                "output": result.output,
            }
        )


class MCPProfile(MCPTools):
    """``/mcp`` for one served toolkit: stateless streamable HTTP, behind the serve options' auth."""

    def __init__(
        self,
        toolkit: ToolkitLike,
        config: MCPServeConfig,
        *,
        bus: EventBus,
        server: str,
        on_call: OnCall | None,
        auth: Auth | None,
    ) -> None:
        super().__init__(toolkit, config, bus=bus, server=server, on_call=on_call)
        self.auth = auth
        self._manager: StreamableHTTPSessionManager | None = None

    def routes(self) -> list[Route]:
        return [
            Route("/mcp", endpoint=_AsgiEndpoint(self._asgi), methods=["GET", "POST", "DELETE"])
        ]

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncGenerator[None, None]:
        # Host/Origin are checked for the whole app by http.guard.HostGuard, in front of this
        self._manager = StreamableHTTPSessionManager(
            app=self.app,
            stateless=True,
            json_response=False,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False),
        )
        async with self._manager.run():
            yield
        await self.on_call.close()

    async def _asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.auth is not None:
            headers = {
                k.decode("latin-1").lower(): v.decode("latin-1")
                for k, v in scope.get("headers", [])
            }
            status = self.auth.check(headers)
            if status is not None:
                text = "authentication required" if status == 401 else "invalid credentials"
                await JSONResponse({"error": text}, status)(scope, receive, send)
                return
        assert self._manager is not None, "the MCP lifespan has not started"
        await self._manager.handle_request(scope, receive, send)


async def serve_stdio(
    toolkit: ToolkitLike,
    config: MCPServeConfig | dict[str, Any] | bool | None = None,
    *,
    on_call: OnCall | None = None,
    events: EventBus | None = None,
    stdin: Any = None,
    stdout: Any = None,
) -> None:
    """Serve ``toolkit``'s tools as MCP over stdio until the client closes stdin (as Claude Desktop,
    VS Code, Cursor and other desktop hosts start a server). ``config``: the ``mcpServer`` block
    (name, version, the tools to expose), else the toolkit config's, else the defaults. ``stdin`` /
    ``stdout``: other streams than the process's (anyio text files), for embedding."""
    from mcp.server.stdio import stdio_server

    if config is None:
        config = toolkit.config.get("mcpServer")
    cfg = MCPServeConfig.from_config(config if config is not None and config is not False else None)
    tools = MCPTools(toolkit, cfg, bus=events or EventBus(), server=cfg.name, on_call=on_call)
    try:
        async with stdio_server(stdin, stdout) as (read, write):
            await tools.app.run(read, write, tools.app.create_initialization_options())
    finally:
        await tools.on_call.close()
