"""``toolnexus-tui --web``: the same app in a browser, through textual-serve (``pip install
'toolnexus[web]'``).

Each browser tab that connects gets an app process of its own (textual-serve starts the command
per websocket), so two tabs never share or corrupt state. The page is served on 127.0.0.1 by
default, on a free port, and only to whoever has the token printed with the URL. No cookie carries
it: browsers scope cookies by host, not port, so a cookie would go to every server on 127.0.0.1
the browser visits. The tokened page hands its terminal the websocket's address, which carries the
token (``/ws/<token>``), and the websocket is refused (403, before any app process starts) without
that token or from any Origin but the page's own (another local port, ``null`` and none included).
Host headers other than the address served are refused everywhere (DNS rebinding). The static
files are textual-serve's own, public ones; a download is behind the random key only the app's
page learns. Beyond loopback only with ``--host``, and still the token.
"""

from __future__ import annotations

import hmac
import secrets
import shlex
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

__all__ = ["app_command", "serve_web"]

SOCKET = "/ws/"
"""Where the websocket is: the token follows it in the path (textual.js appends its own query)."""
PAGE_HEADERS = {"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}
"""The page's address carries the token: never in a Referer, never in a cache."""


def app_command(app_args: Sequence[str]) -> list[str]:
    """The command that runs one browser tab's app: this Python, ``-m tui`` (``tui/__main__.py``;
    ``-m tui.app`` made runpy warn on stderr, the module being imported already), ``app_args``."""
    return [sys.executable, "-m", "tui", *app_args]


def serve_web(
    app_args: Sequence[str],
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    announce: Callable[[str], None] | None = None,
) -> None:
    """Serve ``toolnexus-tui`` with ``app_args`` in the browser until interrupted; ``announce`` is
    told the URL to open (with its token) once the socket is bound."""
    try:
        import aiohttp_jinja2  # noqa: PLC0415  # optional extra: web
        import jinja2  # noqa: PLC0415  # optional extra: web
        from aiohttp import web  # noqa: PLC0415  # optional extra: web
        from textual_serve.server import Server  # noqa: PLC0415  # optional extra: web
    except ImportError:
        raise SystemExit(
            "toolnexus-tui --web needs textual-serve: pip install 'toolnexus[web]'"
        ) from None
    token = token or secrets.token_urlsafe(24)
    sock = socket.create_server((host, port))
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    public = f"http://{shown}:{bound}"
    allowed = {f"{shown}:{bound}".lower(), f"localhost:{bound}", f"127.0.0.1:{bound}"}
    origins = {f"http://{name}" for name in allowed}
    command = " ".join(shlex.quote(part) for part in app_command(app_args))

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
