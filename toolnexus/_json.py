"""JSON in and out, with orjson when it is installed (the ``fast`` extra), else the standard library."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["dumps", "loads", "JSONDecodeError"]

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
