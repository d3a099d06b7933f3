"""A busy server takes the connections waiting for it (issue 65 item 2).

On uvloop (``toolnexus serve``'s loop) libuv accepts one connection a turn of the loop for each
handle listening. Under load a turn is long (100-150 ms measured at 128 streams a host), so a
burst of new connections waited seconds in the kernel's accept queue while the open ones were
served: behind nginx, which opens a connection to a host per request, most subscribes reached
their host after their one-second reply had ended."""

from __future__ import annotations

import asyncio
import socket

import uvloop
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Route

from toolnexus.http.server import ACCEPTS_PER_TURN, AsgiServer


async def _ok(_request: Request) -> PlainTextResponse:
    return PlainTextResponse("ok")


def _asked(client: socket.socket) -> bytes:
    client.sendall(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
    return client.recv(4096)


def test_a_turn_of_the_loop_accepts_many_waiting_connections():
    """200 connections made while the server's loop does not run wait in the accept queue; a turn
    of the loop takes up to ACCEPTS_PER_TURN of them (one a turn before: [0, 1, 2, 3, ...]), and no
    more (each taken one asking for more again emptied the queue at the fifth turn: [..., 18, 33,
    200]: a worker of several sharing the socket would take every waiting connection), and each
    is served."""
    clients: list[socket.socket] = []

    async def burst() -> tuple[list[int], list[bytes]]:
        server = AsgiServer(Starlette(routes=[Route("/", _ok)]))
        await server.start()
        try:
            assert server._server is not None
            connections = server._server.server_state.connections
            for _ in range(200):  # the loop does not run: the kernel queues each
                clients.append(socket.create_connection(("127.0.0.1", server.port)))
            seen = []
            for _ in range(8):
                await asyncio.sleep(0)  # one turn
                seen.append(len(connections))
            answers = await asyncio.to_thread(lambda: [_asked(c) for c in clients])
        finally:
            await server.stop()
        return seen, answers

    try:
        seen, answers = uvloop.run(burst())
    finally:
        for client in clients:
            client.close()
    steps = [b - a for a, b in zip(seen, seen[1:], strict=False)]
    assert max(steps) == ACCEPTS_PER_TURN and seen[-1] < 200, seen
    assert all(a.startswith(b"HTTP/1.1 200") for a in answers)
