"""Real peers for the tests: the official SDKs' servers and clients, and scripted stubs, each
labelled with what it copies."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from toolnexus.http.server import AsgiServer


@contextlib.asynccontextmanager
async def on_loopback(app: Any) -> AsyncIterator[str]:
    """``app`` (ASGI) served on 127.0.0.1, a free port; yields its base URL."""
    server = AsgiServer(app)
    await server.start()
    try:
        yield server.url
    finally:
        await server.stop()


Raw = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


@contextlib.asynccontextmanager
async def raw_on_loopback(handle: Raw) -> AsyncIterator[str]:
    """A TCP server on 127.0.0.1 whose every connection is ``handle(reader, writer)``, for a peer
    no HTTP framework would play (one that never answers, trickles, answers without end); yields
    ``http://127.0.0.1:PORT``. Whatever a handler is doing when the block ends, it is cancelled
    and its connection closed."""
    handling: set[asyncio.Task[None]] = set()

    async def each(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        handling.add(task)
        try:
            await handle(reader, writer)
        except (Exception, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_server(each, "127.0.0.1", 0)
    try:
        yield f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    finally:
        server.close()
        for task in handling:
            task.cancel()
        await asyncio.gather(*handling, return_exceptions=True)
        await server.wait_closed()
