"""``toolnexus-tui --web``: the same app in a browser, through textual-serve (``pip install
'toolnexus[web]'``).

Each browser tab that connects gets an app process of its own (textual-serve starts the command
per websocket), so two tabs never share or corrupt state. The page is served on 127.0.0.1 by
default, on a free port, and only to whoever has the token printed with the URL: the tokened page
sets an HttpOnly, SameSite=Strict cookie, and the websocket, the static files and downloads are
refused (403) without it. Beyond loopback only with ``--host`` and still the token. Host headers
other than the address served are refused too (DNS rebinding).
"""

from __future__ import annotations

import hmac
import secrets
import shlex
import socket
import sys
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

__all__ = ["serve_web", "COOKIE"]

COOKIE = "toolnexus_web"


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
        from aiohttp import web
        from textual_serve.server import Server
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
    command = " ".join(shlex.quote(part) for part in (sys.executable, "-m", "tui.app", *app_args))

    @web.middleware
    async def guard(request: Any, handler: Callable[[Any], Awaitable[Any]]) -> Any:
        if request.host.lower() not in allowed:
            return web.Response(status=403, text="this page is not served under that name\n")
        given = (
            request.query.get("token", "")
            if request.path == "/"
            else request.cookies.get(COOKIE, "")
        )
        if not hmac.compare_digest(given.encode(), token.encode()):
            return web.Response(
                status=403, text="open the URL toolnexus-tui --web printed (it has the token)\n"
            )
        response = await handler(request)
        if request.path == "/":
            response.set_cookie(COOKIE, token, httponly=True, samesite="Strict", path="/")
        return response

    class Guarded(Server):
        async def _make_app(self) -> Any:
            app = await super()._make_app()
            app.middlewares.append(guard)
            return app

        async def on_startup(
            self, app: Any
        ) -> None:  # say where, instead of textual-serve's banner
            if announce is not None:
                announce(f"{public}/?token={token}")

    server = Guarded(command, host=host, port=bound, title="toolnexus", public_url=public)
    # textual-serve's serve() binds a port of its own and logs through rich; the socket is bound
    # above (a free port, known before the page is built), so its app is run here
    web.run_app(server._make_app(), sock=sock, handle_signals=True, print=lambda *args: None)
