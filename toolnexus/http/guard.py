"""What stands in front of every route of a served toolkit: the Host/Origin check.

A server bound to loopback is reachable from any web page the user opens, through DNS rebinding
(``attacker.example`` made to resolve to 127.0.0.1): the browser then sends the page's requests
with ``Host: attacker.example``, or ``Origin: http://attacker.example``. So, on a loopback bind,
every request must name a loopback host with the bound port (or a host the config allows), and an
``Origin``, when sent, must be one of those hosts too. A foreign Host gets 421, a foreign Origin 403,
and nothing behind them runs. On a wider bind the Host is checked only against the configured
``allowed_hosts`` (when any), and an Origin must still be the Host's own or an allowed one.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Iterable

from starlette.types import ASGIApp, Receive, Scope, Send

from .. import _json

__all__ = ["HostGuard", "is_loopback", "send_whole"]

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def is_loopback(host: str) -> bool:
    """Whether ``host`` (a bind address or a name) is this machine only."""
    name = host.strip("[]").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class HostGuard:
    """ASGI middleware: refuses requests whose Host or Origin is not this server's (see the module).

    Args:
        app: the app behind the guard.
        bound: returns the bound ``(host, port)`` (known only once the socket is bound).
        allowed_hosts: more ``host`` or ``host:port`` values to accept (``host`` alone: any port).
        allowed_origins: more origins (``scheme://host[:port]``) to accept.
    """

    def __init__(
        self,
        app: ASGIApp,
        bound: Callable[[], tuple[str, int]],
        allowed_hosts: Iterable[str] = (),
        allowed_origins: Iterable[str] = (),
    ) -> None:
        self.app = app
        self._bound = bound
        self.extra_hosts = {h.lower() for h in allowed_hosts}
        self.extra_origins = {o.lower().rstrip("/") for o in allowed_origins}
        self._known: tuple[frozenset[bytes], bool, int] | None = None

    def _host_ok(self, host: str, loopback: bool, port: int) -> bool:
        host = host.lower()
        name, _, given_port = host.rpartition(":") if not host.endswith("]") else (host, "", "")
        if not name:  # no port in the header
            name, given_port = host, ""
        if host in self.extra_hosts or name in self.extra_hosts:
            return True
        if not loopback:
            return not self.extra_hosts
        if given_port not in ("", str(port)):
            return False
        return name in _LOOPBACK_NAMES or is_loopback(name)

    def _origin_ok(self, origin: str, host: str, loopback: bool, port: int) -> bool:
        """An Origin is fine when it is the request's own host, an allowed origin, or (on a loopback
        bind) another loopback name of this server; ``null`` (sandboxed pages, files) never is."""
        if origin in self.extra_origins:
            return True
        scheme, _, authority = origin.partition("://")
        if scheme not in ("http", "https") or not authority:
            return False
        if authority == host:
            return True
        return self._host_ok(authority, loopback, port) and (
            loopback or authority in self.extra_hosts
        )

    def _fast(self) -> tuple[frozenset[bytes], bool, int]:
        """The Host values that pass at once (this server's own names), the bind's kind, the port;
        worked out once the socket is bound, so a request pays one set lookup."""
        bound_host, port = self._bound()
        if self._known is None or self._known[2] != port:
            loopback = is_loopback(bound_host)
            names = [*_LOOPBACK_NAMES, bound_host] if loopback else []
            hosts = {f"{n}:{port}".encode() for n in names} | {n.encode() for n in names}
            self._known = (frozenset(hosts), loopback, port)
        return self._known

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        known, loopback, port = self._fast()
        raw_host = raw_origin = b""
        for key, value in scope.get("headers", ()):
            if key == b"host":
                raw_host = value
            elif key == b"origin":
                raw_origin = value
        if raw_host in known and not raw_origin:  # the common case: a local client, no browser
            await self.app(scope, receive, send)
            return
        host, origin = raw_host.decode("latin-1"), raw_origin.decode("latin-1")
        if not self._host_ok(host, loopback, port):
            await _refuse(send, 421, f"this server does not answer for host {host[:100]!r}")
            return
        if origin and not self._origin_ok(origin.lower().rstrip("/"), host.lower(), loopback, port):
            await _refuse(send, 403, f"cross-origin request refused (Origin {origin[:100]!r})")
            return
        await self.app(scope, receive, send)


async def _refuse(send: Send, status: int, message: str) -> None:
    body = _json.dumps({"error": message})
    await send_whole(send, status, b"application/json", body, (b"connection", b"close"))


async def send_whole(
    send: Send,
    status: int,
    content_type: bytes,
    body: bytes,
    *headers: tuple[bytes, bytes],
) -> None:
    """An ASGI answer in one piece: its content type and length, then ``headers``, then ``body``."""
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", content_type),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
