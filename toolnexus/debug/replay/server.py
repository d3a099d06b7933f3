"""What a replay served over HTTP is, A2A's and MCP's alike (:class:`ReplayServer`), and the answers
it writes itself (plain text, JSON), bounded."""

from __future__ import annotations

import json
import os
from typing import Any, Generic, Self, TypeVar

from ...http.guard import HostGuard, send_whole
from ...http.server import AsgiServer
from ..cassette import Cassette, load
from .matching import MATCHES

T = TypeVar("T")

MAX_REQUEST = 16 * 1024 * 1024
"""The largest request body a replay peer reads."""


class ReplayServer(Generic[T]):
    """What a replay served over HTTP is, A2A's and MCP's alike: a cassette played with one way of
    matching requests (``match``: :data:`MATCHES`), each request's recorded answers (``T``: an
    exchange, an MCP call) queued under its key and given in turn, the requests answered and those
    none matched listed; an ASGI app that answers the lifespan and hands each HTTP request to
    :meth:`answer`, on a loopback server of its own behind the Host/Origin guard, started and
    stopped (also as ``async with``).

    Raises:
        CassetteError: the cassette cannot be read.
        ValueError: an unknown ``match``.
    """

    url = ""
    """Where it is served (after :meth:`start`)."""
    _server: AsgiServer | None = None

    def __init__(self, cassette: Cassette | str | os.PathLike[str], match: str) -> None:
        if match not in MATCHES:
            raise ValueError(f"match must be one of {', '.join(MATCHES)}, not {match!r}")
        self.cassette = cassette if isinstance(cassette, Cassette) else load(cassette)
        self.match = match
        self._queues: dict[tuple[Any, ...], list[T]] = {}
        self._used: dict[tuple[Any, ...], int] = {}
        self.served: list[tuple[str, T]] = []
        """``(operation, recorded answer)`` of each request answered, in order."""
        self.misses: list[str] = []
        """The requests no recorded answer matched, by operation (``"POST / SendMessage"``,
        ``"tools/call nope"`` ...)."""

    def queue(self, key: tuple[Any, ...], recorded: T) -> None:
        """A recorded answer to the requests of ``key``, given after those queued before it."""
        self._queues.setdefault(key, []).append(recorded)

    def queued(self, key: tuple[Any, ...]) -> list[T]:
        """The recorded answers to the requests of ``key``, in recorded order."""
        return self._queues.get(key, [])

    def in_turn(self, key: tuple[Any, ...], queue: list[T]) -> T | None:
        """Of the recorded answers ``queue`` to the requests of ``key``, the one whose turn it is:
        in recorded order, the last one again once they are used up; None when there are none."""
        if not queue:
            return None
        used = self._used.get(key, 0)
        self._used[key] = used + 1
        return queue[min(used, len(queue) - 1)]

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] == "http":
            await self.answer(scope, receive, send)

    async def answer(self, scope: Any, receive: Any, send: Any) -> None:
        """Answer one HTTP request."""
        raise NotImplementedError

    def served_at(self, base: str) -> str:
        """The URL given out for a server at ``base`` (the server's own by default)."""
        return base

    async def start(self, addr: str | int | None = "127.0.0.1:0") -> str:
        """Serve on ``addr`` (loopback, a free port by default); returns the URL."""
        server: AsgiServer | None = None

        def bound() -> tuple[str, int]:
            assert server is not None
            return server.host, server.port

        server = AsgiServer(HostGuard(self, bound), addr)
        await server.start()
        self._server = server
        self.url = self.served_at(server.url)
        return self.url

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            await server.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


_NOSNIFF = (b"x-content-type-options", b"nosniff")


async def plain(send: Any, status: int, text: str) -> None:
    await send_whole(send, status, b"text/plain; charset=utf-8", text.encode("utf-8"), _NOSNIFF)


MAX_DEPTH = 200
"""The deepest JSON a replay serves from a cassette (Python's encoder fails near 1,000 levels)."""


async def json_answer(
    send: Any, status: int, value: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps(value, ensure_ascii=False).encode("utf-8")
    await send_whole(send, status, b"application/json", body, _NOSNIFF, *(headers or []))
