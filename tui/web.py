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

import secrets
import shlex
import socket
import sys
from collections.abc import Callable, Sequence

__all__ = ["app_command", "serve_web"]


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
        from . import web_server  # noqa: PLC0415  # optional extra: web (textual-serve, aiohttp)
    except ImportError:
        raise SystemExit(
            "toolnexus-tui --web needs textual-serve: pip install 'toolnexus[web]'"
        ) from None
    token = token or secrets.token_urlsafe(24)
    sock = socket.create_server((host, port))
    command = " ".join(shlex.quote(part) for part in app_command(app_args))
    web_server.run(command, sock, host=host, token=token, announce=announce)
