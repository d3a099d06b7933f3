"""What is compared of an answer, recorded and live: its shape (keys and value types, the values
of a few keys), merged over a stream's events, and where two shapes part."""

from __future__ import annotations

from typing import Any

_KEPT_VALUES = frozenset({"kind", "role", "code", "jsonrpc"})


def shape(value: Any, key: str = "") -> Any:
    """What is compared of an answer: keys and value types, and the values of a few keys."""
    if isinstance(value, dict):
        return {k: shape(v, k) for k, v in value.items() if k != "state"}
    if isinstance(value, list):
        merged: Any = None
        for item in value:
            merged = _merge(merged, shape(item, key))
        return ["list", merged]
    if key in _KEPT_VALUES and isinstance(value, (str, int)) and not isinstance(value, bool):
        return f"={value}"
    return {str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}.get(
        type(value), "?"
    )


def _merge(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if isinstance(a, dict) and isinstance(b, dict):
        return {
            k: _merge(a.get(k), b.get(k)) if k in a and k in b else a.get(k, b.get(k))
            for k in {**a, **b}
        }
    if isinstance(a, list) and isinstance(b, list):
        return ["list", _merge(a[1], b[1])]
    if a == b:
        return a
    return "|".join(sorted({*_alternatives(a), *_alternatives(b)}))


def _alternatives(shape: Any) -> list[str]:
    if isinstance(shape, str):
        return shape.split("|")
    return ["object" if isinstance(shape, dict) else "array"]


def _describe(shape: Any) -> str:
    if isinstance(shape, dict):
        return "an object"
    if isinstance(shape, list):
        return "an array"
    return shape[1:] if shape.startswith("=") else f"a {shape}"


def shape_diff(recorded: Any, live: Any, path: str, out: list[tuple[str, str, str]]) -> None:
    if isinstance(recorded, dict) and isinstance(live, dict):
        for k in recorded:
            where = f"{path}.{k}" if path else k
            if k not in live:
                out.append((where, "present", "missing"))
            else:
                shape_diff(recorded[k], live[k], where, out)
        for k in live:
            if k not in recorded:
                out.append((f"{path}.{k}" if path else k, "absent", "added"))
    elif isinstance(recorded, list) and isinstance(live, list):
        if recorded[1] is not None and live[1] is not None:
            shape_diff(recorded[1], live[1], f"{path}[]", out)
    elif recorded != live:
        out.append((path or "(body)", _describe(recorded), _describe(live)))


def shapes_between(
    was_streamed: bool, streamed: bool, recorded: list[Any], live: list[Any]
) -> list[tuple[str, str, str]]:
    """Where the live answer's shape departs from the recorded one's: ``(path, recorded, live)``."""
    shapes: list[tuple[str, str, str]] = []
    if streamed != was_streamed:
        shapes.append(("(body)", _kind(was_streamed), _kind(streamed)))
    elif bool(recorded) != bool(live) and not streamed:
        shapes.append(
            (
                "(body)",
                "JSON" if recorded else "not JSON",
                "JSON" if live else "not JSON",
            )
        )
    recorded_shape = live_shape = None
    for value in recorded:
        recorded_shape = _merge(recorded_shape, shape(value))
    for value in live:
        live_shape = _merge(live_shape, shape(value))
    if recorded_shape is not None and live_shape is not None:
        shape_diff(recorded_shape, live_shape, "", shapes)
    elif streamed and (recorded_shape is None) != (live_shape is None):
        shapes.append(
            (
                "(stream)",
                "events" if recorded_shape is not None else "none",
                "events" if live_shape is not None else "none",
            )
        )
    return shapes


def _kind(streamed: bool) -> str:
    return "an SSE stream" if streamed else "one body"
