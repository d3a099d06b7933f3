"""The MCP profile of a served toolkit: ``/mcp`` on the official ``mcp`` SDK (stateless streamable HTTP).

``tools/list`` gives one entry per exposed tool (its name, description and input schema
verbatim); ``tools/call`` runs ``Tool.execute``, whose output becomes one text content with
``isError`` kept. Exposed: the tools named in ``MCPServeConfig.tools``, or, when none are named,
every tool except the builtins that run commands or write files (``bash``, ``write``, ``edit``).

Host and Origin are checked for the whole app (``http.guard``); the serve options' ``auth``
applies here too.
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
from ..tools import Tool, ToolContext, ToolResult
from .config import Auth, MCPServeConfig

__all__ = ["MCPProfile"]

log = logging.getLogger("toolnexus.serve.mcp")

OnCall = Callable[[dict[str, Any]], Any]


class _AsgiEndpoint:
    """A raw ASGI endpoint (Starlette would treat a bound method as a request/response function)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Any]) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.app(scope, receive, send)


class MCPProfile:
    """``/mcp`` for one served toolkit."""

    def __init__(self, toolkit: ToolkitLike, config: MCPServeConfig, *, bus: EventBus, server: str,
                 on_call: OnCall | None, auth: Auth | None) -> None:
        self.toolkit = toolkit
        self.config = config
        self.bus = bus
        self.server_name = server
        self.on_call = Hook(on_call, "on_call")
        self.auth = auth
        self.tools = config.exposed(toolkit.tools())
        self._by_name = {t.name: t for t in self.tools}
        self._manager: StreamableHTTPSessionManager | None = None
        self.app = Server(config.name, version=config.version, on_list_tools=self._list, on_call_tool=self._call)

    def routes(self) -> list[Route]:
        return [Route("/mcp", endpoint=_AsgiEndpoint(self._asgi), methods=["GET", "POST", "DELETE"])]

    @contextlib.asynccontextmanager
    async def lifespan(self) -> AsyncGenerator[None, None]:
        # Host/Origin are checked for the whole app by http.guard.HostGuard, in front of this
        self._manager = StreamableHTTPSessionManager(
            app=self.app, stateless=True, json_response=False,
            security_settings=TransportSecuritySettings(enable_dns_rebinding_protection=False))
        async with self._manager.run():
            yield
        await self.on_call.close()

    async def _asgi(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.auth is not None:
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            status = self.auth.check(headers)
            if status is not None:
                text = "authentication required" if status == 401 else "invalid credentials"
                await JSONResponse({"error": text}, status)(scope, receive, send)
                return
        assert self._manager is not None, "the MCP lifespan has not started"
        await self._manager.handle_request(scope, receive, send)

    # -- handlers -----------------------------------------------------------------------------------
    async def _list(self, ctx: Any, params: Any) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[
            types.Tool(name=t.name, description=t.description, input_schema=t.input_schema) for t in self.tools
        ])

    async def _call(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = self._by_name.get(params.name)
        if tool is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        args = params.arguments or {}
        started = time.perf_counter()
        result: ToolResult | None = None
        try:
            result = await tool.execute(args, ToolContext())
        finally:
            outcome = result or ToolResult.error(f"{tool.name}: canceled by the client")
            self._report(tool, args, outcome, (time.perf_counter() - started) * 1000)
        return types.CallToolResult(content=[types.TextContent(type="text", text=outcome.output)],
                                    is_error=outcome.is_error)

    def _report(self, tool: Tool, args: Any, result: ToolResult, ms: float) -> None:
        self.bus.publish(ToolCallEvent(self.server_name, tool.name, tool.source, args, result.output,
                                       result.is_error, ms))
        self.on_call.fire({"name": tool.name, "source": tool.source, "ms": ms, "is_error": result.is_error,
                           "args": args, "output": result.output})
