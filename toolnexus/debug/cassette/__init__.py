"""Cassettes: a session's exchanges with peers, one JSON line each, to replay later.

A cassette is a text file. Its first line says what it is::

    {"toolnexus_cassette": 1, "recorded": "2026-12-02T10:00:00.000Z"}

and every other line is one exchange, in the order they ended::

    {"seq": 1, "direction": "out", "method": "POST", "url": "http://127.0.0.1:8000/",
     "rpc_method": "SendMessage", "task_id": "task-1", "peer": "demo-desk", "ms": 3.1,
     "time": "...", "request": {"headers": {...}, "json": {...}},
     "response": {"status": 200, "headers": {...}, "json": {...}}, "error": null}

A body is ``"json"`` when it was JSON, else ``"text"``; a streamed answer has ``"frames"`` (each
SSE event's data, as JSON where it was JSON). What was recorded is what the wire log shows:
secrets are masked (``***``) before anything is written, and headers that say nothing about the
exchange (``date``, ``content-length``, ``host``, ``etag``, ``last-modified`` ...) are left out.

**Stable ids.** Every task, context, message and artifact id and every JSON-RPC request id of 8
characters or more is written as a name in order of first appearance (``task-1``, ``context-1``,
``message-3``, ``rpc-2``), everywhere it appears (bodies, frames, URL paths). Recording the same
session twice gives the same cassette, whatever ids the peer made up, and a replay (see
:mod:`toolnexus.debug.replay`) can tell a recorded id from a live one.

``A2AClient(record="session.jsonl")`` writes one as it goes; :func:`save` writes the wire log of a
TUI or notebook session; :func:`load` reads one back, with a clear error for a file that is not one.
"""

from __future__ import annotations

from .format import FORMAT, STABLE_ID, CassetteError
from .reading import Cassette, Exchange, exchange_of, exchanges, load, origin_of
from .writing import CassetteWriter, save

__all__ = [
    "FORMAT",
    "CassetteError",
    "CassetteWriter",
    "Exchange",
    "Cassette",
    "save",
    "load",
    "exchange_of",
    "exchanges",
    "origin_of",
    "STABLE_ID",
]
