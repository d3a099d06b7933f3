"""JSON in and out, with orjson when it is installed (the ``fast`` extra), else the standard library."""

from __future__ import annotations

import json
import zlib
from typing import Any

__all__ = ["dumps", "loads", "JSONDecodeError", "pack", "unpack", "tight"]

try:  # pragma: no cover - which branch runs depends on the install
    import orjson

    def dumps(value: Any) -> bytes:
        return orjson.dumps(value)

    def loads(data: bytes | str) -> Any:
        return orjson.loads(data)

    JSONDecodeError: tuple[type[Exception], ...] = (orjson.JSONDecodeError, RecursionError)
except ImportError:  # pragma: no cover

    def dumps(value: Any) -> bytes:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8")

    def loads(data: bytes | str) -> Any:
        return json.loads(data)

    JSONDecodeError = (json.JSONDecodeError, UnicodeDecodeError, RecursionError)


# The shapes of a stored task and transcript, so that zlib finds them in its dictionary: a 900-byte
# finished task packs to ~250 bytes (and orjson's bytes, allocated with spare room, are let go).
_ZDICT = (b'{"role":"user","content":""},{"role":"assistant","content":"","tool_calls":[{"id":"call_","type":"function",'
          b'"function":{"name":"","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_","content":""}'
          b'{"kind":"message","messageId":"","contextId":"","taskId":"","role":"user","parts":[{"kind":"text","text":""}]},'
          b'{"kind":"message","role":"agent","parts":[{"kind":"text","text":""}]}],"toolnexus":{"skill":null,"request":"",'
          b'"created":"2026-12-01T"}{"kind":"task","id":"","contextId":"","status":{"state":"completed","timestamp":'
          b'"2026-12-01T"},"artifacts":[{"artifactId":"","name":"reply","parts":[{"kind":"text","text":""}]}],"history":[')


def pack(value: Any) -> bytes:
    """``value`` as compact bytes (JSON, deflated with a dictionary of toolnexus' shapes; a small
    window and memory level: ~5 µs for a short task)."""
    z = zlib.compressobj(1, zlib.DEFLATED, 11, 4, zdict=_ZDICT)
    return z.compress(dumps(value)) + z.flush()


def unpack(data: bytes) -> Any:
    """The value :func:`pack` made."""
    z = zlib.decompressobj(11, zdict=_ZDICT)
    return loads(z.decompress(data) + z.flush())


def tight(value: Any) -> bytes:
    """``value`` as JSON bytes that take no more memory than their length (orjson's own come with
    spare room: a 900-byte document held 4 KB)."""
    return bytes(memoryview(dumps(value)))
