"""What a request is, for matching it to a recorded one: its operation, and its body with what a
``match`` ignores taken out (``strict``, ``lenient``, ``method``: see the package)."""

from __future__ import annotations

import json
import urllib.parse
from typing import Any

from ... import _json
from ...protocol import rest
from ...protocol.operations import OPERATIONS
from ..cassette import STABLE_ID

MATCHES = ("strict", "lenient", "method")


_CLIENT_IDS = frozenset({"messageId"})
_ID_KEYS = frozenset({"id", "taskId", "contextId", "artifactId", "referenceTaskIds"})
_LENIENT_DROP = frozenset({"metadata", "timestamp"})


def operation_of(method: str, path: str, body: Any) -> str:
    """The A2A operation of a request: its JSON-RPC method, its HTTP+JSON route, else method and path."""
    if isinstance(body, dict) and isinstance(body.get("method"), str) and "jsonrpc" in body:
        return body["method"]
    found = rest.match(method, path)
    return OPERATIONS[found[0]].v10 if found else f"{method} {path}"


def normal(value: Any, match: str, envelope: bool = True) -> Any:
    """A request body with what ``match`` ignores taken out."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in _CLIENT_IDS or (envelope and key == "id" and "jsonrpc" in value):
                continue
            if match == "lenient" and (
                key in _LENIENT_DROP or (key in _ID_KEYS and not _stable(item))
            ):
                continue
            out[key] = normal(item, match, False)
        return out
    if isinstance(value, list):
        return [normal(item, match, False) for item in value]
    return value


def _stable(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(_stable(v) for v in value)
    return isinstance(value, str) and bool(STABLE_ID.match(value))


def match_key(
    match: str, method: str, path: str, query: str, body: Any, text: str
) -> tuple[Any, ...]:
    op = operation_of(method, path, body)
    if match == "method":
        return (method, op)
    content = json.dumps(normal(body, match), sort_keys=True) if body is not None else text
    return (method, path, query, op, content)


def split_url(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.path or "/", parts.query


def bounded_json(text: str) -> Any:
    """``text`` as JSON when it is an object or array nesting at most 200 levels (what is compared
    is walked recursively), else None."""
    value = _json.loads_or_none(text)
    return None if value is not None and _json.too_deep(value, 200) else value
