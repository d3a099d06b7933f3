"""The browser's server of ``toolnexus-tui --web`` (textual-serve's, on aiohttp, guarded as
``tui/web.py`` says): the one module that imports the ``web`` extra, loaded by ``web.serve_web``
alone."""

from __future__ import annotations

import hmac
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import web
from textual_serve.server import Server

__all__ = ["run"]

SOCKET = "/ws/"
"""Where the websocket is: the token follows it in the path (textual.js appends its own query)."""
PAGE_HEADERS = {"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}
"""The page's address carries the token: never in a Referer, never in a cache."""


def run(
    command: str,
    sock: socket.socket,
    *,
    host: str,
    token: str,
    announce: Callable[[str], None] | None,
) -> None:
    """Serve ``command``'s app on ``sock`` (bound on ``host``) to whoever has ``token``, until
    interrupted; ``announce`` is told the URL to open."""
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    public = f"http://{shown}:{bound}"
    allowed = {f"{shown}:{bound}".lower(), f"localhost:{bound}", f"127.0.0.1:{bound}"}
    origins = {f"http://{name}" for name in allowed}

    def holds_token(given: str) -> bool:
        return hmac.compare_digest(given.encode(), token.encode())

    @web.middleware
    async def guard(request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        if request.host.lower() not in allowed:
            return web.Response(status=403, text="this page is not served under that name\n")
        if request.path == "/" and not holds_token(request.query.get("token", "")):
            return web.Response(
                status=403, text="open the URL toolnexus-tui --web printed (it has the token)\n"
            )
        if request.path.startswith(SOCKET) and not (
            holds_token(request.path[len(SOCKET) :])
            and request.headers.get("Origin", "").lower() in origins
        ):
            return web.Response(status=403, text="only the app's own page opens its websocket\n")
        return await handler(request)

    class Guarded(Server):
        async def _make_app(self) -> Any:
            # textual-serve's routes, with the websocket under the token and no static index
            app = web.Application(middlewares=[guard])
            aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
            app.add_routes(
                [
                    web.get("/", self.page),
                    web.get(SOCKET + "{token}", self.handle_websocket),
                    web.get("/download/{key}", self.handle_download),
                    web.static("/static", self.statics_path),
                ]
            )
            app.on_startup.append(self.on_startup)
            return app

        async def page(self, request: Any) -> Any:
            """textual-serve's page, its terminal pointed at the websocket under the token, on
            the host name the browser used (so the websocket's Origin is the page's)."""
            font_size = request.query.get("fontsize", "16")
            context = {
                "font_size": int(font_size) if font_size.isdigit() else 16,
                "app_websocket_url": f"ws://{request.host}{SOCKET}{token}",
                "config": {"static": {"url": "/static/"}},
                "application": {"name": self.title},
            }
            response = aiohttp_jinja2.render_template("app_index.html", request, context)
            response.headers.update(PAGE_HEADERS)
            return response

        async def on_startup(
            self, app: Any
        ) -> None:  # say where, instead of textual-serve's banner
            if announce is not None:
                announce(f"{public}/?token={token}")

    server = Guarded(command, host=host, port=bound, title="toolnexus", public_url=public)
    # textual-serve's serve() binds a port of its own and logs through rich; the socket is bound
    # above (a free port, known before the page is built), so its app is run here
    web.run_app(server._make_app(), sock=sock, handle_signals=True, print=lambda *args: None)
