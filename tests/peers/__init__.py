"""Real peers for the tests: the official SDKs' servers and clients, and scripted stubs, each
labelled with what it copies."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator
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
