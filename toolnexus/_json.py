"""JSON in and out, with orjson when it is installed (the ``fast`` extra), else the standard library."""

from __future__ import annotations

import json
import threading
import zlib
from collections.abc import Mapping
from typing import Any

from typing_extensions import TypeIs

__all__ = [
    "dumps",
    "loads",
    "loads_or_none",
    "JSONDecodeError",
    "pack",
    "unpack",
    "tight",
    "held",
    "too_deep",
    "cut_deep",
    "is_object",
    "is_mapping",
    "is_array",
]


# What a value read from JSON (or from a peer) is, told to the type checker too: after the test its
# keys are strings and its values anything, which ``isinstance`` alone leaves unknown.
def is_object(value: object) -> TypeIs[dict[str, Any]]:
    """A JSON object (a ``dict``)."""
    return isinstance(value, dict)


def is_mapping(value: object) -> TypeIs[Mapping[str, Any]]:
    """Any mapping read like a JSON object (a ``dict``, or headers, or a protobuf map)."""
    kind = type(value)  # a dict, None, a string or a list told without the ABC's slow check
    if kind is dict:
        return True
    return value is not None and kind is not str and kind is not list and isinstance(value, Mapping)


def is_array(value: object) -> TypeIs[list[Any]]:
    """A JSON array (a ``list``)."""
    return isinstance(value, list)


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


# The shapes of a stored task and transcript, the compressor's dictionary (either codec): a 900-byte
# finished task packs to ~250 bytes (and orjson's bytes, allocated with spare room, are let go).
_ZDICT = (
    b'{"role":"user","content":""},{"role":"assistant","content":"","tool_calls":[{"id":"call_","type":"function",'
    b'"function":{"name":"","arguments":"{}"}}]},{"role":"tool","tool_call_id":"call_","content":""}'
    b'{"kind":"message","messageId":"","contextId":"","taskId":"","role":"user","parts":[{"kind":"text","text":""}]},'
    b'{"kind":"message","role":"agent","parts":[{"kind":"text","text":""}]}],"toolnexus":{"skill":null,"request":"",'
    b'"created":"2026-12-01T"}{"kind":"task","id":"","contextId":"","status":{"state":"completed","timestamp":'
    b'"2026-12-01T"},"artifacts":[{"artifactId":"","name":"reply","parts":[{"kind":"text","text":""}]}],"history":['
)


def _zlib_pack(value: Any) -> bytes:
    z = zlib.compressobj(1, zlib.DEFLATED, 11, 4, zdict=_ZDICT)  # a small window and memory level
    return z.compress(dumps(value)) + z.flush()


def _zlib_unpack(data: bytes) -> Any:
    z = zlib.decompressobj(11, zdict=_ZDICT)
    return loads(z.decompress(data) + z.flush())


try:  # pragma: no cover - which branch runs depends on the install (the ``fast`` extra)
    import zstandard
except ImportError:  # pragma: no cover
    zstandard = None

_codecs = threading.local()  # a zstd context is not for two threads at once; one each, kept warm


def _zstd() -> tuple[Any, Any]:
    try:
        return _codecs.zstd
    except AttributeError:
        z: Any = zstandard  # only called where it imported (pack and unpack look first)
        shapes = z.ZstdCompressionDict(_ZDICT, dict_type=z.DICT_TYPE_RAWCONTENT)
        _codecs.zstd = (
            z.ZstdCompressor(level=3, dict_data=shapes, write_checksum=False, write_dict_id=False),
            z.ZstdDecompressor(dict_data=shapes),
        )
        return _codecs.zstd


def _zstd_pack(value: Any) -> bytes:
    # copied to bytes of their own length: zstd's come in a block sized for the worst case (~4x)
    return bytes(memoryview(_zstd()[0].compress(dumps(value))))


def _zstd_unpack(data: bytes) -> Any:
    return loads(_zstd()[1].decompress(data))


def pack(value: Any) -> bytes:
    """``value`` as compact bytes, for this process only: JSON compressed with a dictionary of
    toolnexus' shapes (a 900-byte finished task takes ~210 bytes). zstd when ``zstandard`` is
    installed (the ``fast`` extra): its context is made once per thread and reused, where zlib
    sets one up per call; a served task's terminal save costs half as much (``bench/README.md``)."""
    return _zstd_pack(value) if zstandard is not None else _zlib_pack(value)


def unpack(data: bytes) -> Any:
    """The value :func:`pack` made."""
    return _zstd_unpack(data) if zstandard is not None else _zlib_unpack(data)


def tight(value: Any) -> bytes:
    """``value`` as JSON bytes that take no more memory than their length (orjson's own come with
    spare room: a 900-byte document held 4 KB)."""
    return bytes(memoryview(dumps(value)))


_HELD_PER_VALUE = 128
"""Bytes a decoded value or key holds besides its characters, at most (a dict of one key: 184, a
short string 50, a float 24, and a slot in the list or dict holding it)."""


def held(encoded: bytes) -> int:
    """At least the bytes that the value ``encoded`` (the compact JSON :func:`dumps` writes) holds,
    decoded: its characters (four bytes each, and their UTF-8 made once, when one is not ASCII)
    and :data:`_HELD_PER_VALUE` for each value and key (each follows a ``{``, ``[``, ``,`` or
    ``:``; one of those inside a string is counted too). Counted in one pass in C: a 788-byte
    task in 1.3 µs (four ``count`` passes took 2.5, walking the decoded value 18)."""
    values = len(encoded) - len(encoded.translate(None, b"{[,:"))
    chars = len(encoded) if encoded.isascii() else 5 * len(encoded)
    return chars + _HELD_PER_VALUE * (values + 1)


def loads_or_none(data: bytes | str) -> Any:
    """``data`` (bytes or text) decoded when it is a JSON object or array, else None (never an error)."""
    data = data.lstrip()
    if data[:1] not in (b"{", b"[", "{", "["):
        return None
    try:
        return loads(data)
    except (*JSONDecodeError, ValueError):
        return None


def cut_deep(value: Any, limit: int, marker: str) -> Any:
    """``value`` with whatever nests deeper than ``limit`` levels replaced by ``marker`` (a copy
    where something is cut; ``value`` itself when nothing is)."""
    if not too_deep(value, limit):
        return value
    if limit <= 1 or not isinstance(value, (dict, list)):
        return marker
    if isinstance(value, dict):
        return {k: cut_deep(v, limit - 1, marker) for k, v in value.items()}
    return [cut_deep(v, limit - 1, marker) for v in value]


def too_deep(value: Any, limit: int) -> bool:
    """Whether ``value`` nests objects/arrays more than ``limit`` levels (iterative: no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False
