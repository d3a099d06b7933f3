"""What the framework scripts (``<name>/client.py``, ``<name>/server.py``) share, run inside each
framework's venv (see field.py): the standard library and uvicorn only. A script imports it with
``sys.path.append(str(Path(__file__).parent.parent))`` (appended: a framework named as its folder, langgraph, comes first)."""

from __future__ import annotations

import asyncio
import json
import socket
import sys
from collections.abc import Awaitable, Callable
from typing import Any

_SPEC: dict[str, Any] = {}


def spec() -> dict[str, Any]:
    """The script's JSON argument (field.py's ``client``/``server`` write it), one dict for the
    script's life: :func:`report` sets its ``texts`` for each conversation."""
    if not _SPEC:
        _SPEC.update(json.loads(sys.argv[1]))
    return _SPEC


RESULT = "field-result: "
"""The start of the line a client script's outcome is on (a framework may print lines of its own)."""


def report(run: Callable[[], Awaitable[dict[str, Any]]]) -> None:
    """Print what ``run()`` returns (``{"error": ...}`` if it raises) as one JSON line after
    :data:`RESULT`; with ``conversations`` in the spec, ``run()`` once for each (its ``texts``),
    the list of what each returned (one process, one start of the framework)."""
    conversations = spec().get("conversations")
    seen: Any = [] if conversations is not None else None
    for texts in conversations if conversations is not None else [spec()["texts"]]:
        _SPEC["texts"] = texts
        try:
            outcome = asyncio.run(run())
        except Exception as exc:  # noqa: BLE001 - the outcome is what the test reads
            outcome = {"error": f"{type(exc).__name__}: {exc}"}
        seen = outcome if conversations is None else [*seen, outcome]
    print(RESULT + json.dumps(seen, default=str), flush=True)


def serve(build: Callable[[str], Any]) -> None:
    """Serve the ASGI app ``build(url)`` on 127.0.0.1, a free port, printing ``url`` (the socket
    already listens: a client may connect at once) and serving until killed."""
    import uvicorn  # noqa: PLC0415 - only a server script needs it

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    app = build(url)
    print(url, flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])
