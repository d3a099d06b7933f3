"""A wire log written as a cassette: each exchange an entry, its ids made stable, its noisy headers
left out (:class:`CassetteWriter`, as exchanges come; :func:`save`, a log whole)."""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ... import _json
from ..._fs import write_whole
from ...events import TrafficEvent
from ...protocol.model import now_iso
from ...traffic import task_id_of
from .format import FORMAT, STABLE_ID

_NOISE = frozenset(
    {
        "date",
        "content-length",
        "host",
        "user-agent",
        "accept-encoding",
        "connection",
        "server",
        "transfer-encoding",
        "keep-alive",
        "etag",
        "last-modified",
    }
)
"""Headers left out of a cassette: they change every time and say nothing about the exchange."""

_ID_KINDS = {
    "taskId": "task",
    "contextId": "context",
    "messageId": "message",
    "artifactId": "artifact",
    "referenceTaskIds": "task",
}


class StableIds:
    """Gives every id met a stable name (``task-1`` ...) and rewrites texts with those names."""

    def __init__(self) -> None:
        self.names: dict[str, str] = {}
        self._counts: dict[str, int] = {}
        self._longest_first: list[str] | None = None

    def learn(self, value: Any, parent_kind: str = "") -> None:
        """Name the ids found in a decoded JSON request or answer."""
        if isinstance(value, dict):
            envelope = "jsonrpc" in value
            tasky = "status" in value or value.get("kind") == "task"
            for key, item in value.items():
                kind = _ID_KINDS.get(key)
                if key == "id":
                    kind = (
                        "rpc"
                        if envelope
                        else "task"
                        if (tasky or parent_kind == "params")
                        else "id"
                    )
                if kind is not None:
                    for one in item if isinstance(item, list) else [item]:
                        self._name(one, kind)
                self.learn(item, key)
        elif isinstance(value, list):
            for item in value:
                self.learn(item, parent_kind)

    def _name(self, value: Any, kind: str) -> None:
        if (
            not isinstance(value, str)
            or len(value) < 8
            or value in self.names
            or STABLE_ID.match(value)
        ):
            return
        self._counts[kind] = count = self._counts.get(kind, 0) + 1
        self.names[value] = f"{kind}-{count}"
        self._longest_first = None

    def rewrite(self, text: str) -> str:
        """``text`` with every id learnt so far replaced by its stable name."""
        if not text or not self.names:
            return text
        if self._longest_first is None:
            self._longest_first = sorted(self.names, key=len, reverse=True)
        for real in self._longest_first:
            if real in text:
                text = text.replace(real, self.names[real])
        return text


def _body(text: str) -> dict[str, Any]:
    """A body as it is written: ``{"json": value}`` when it is JSON, ``{"text": text}`` else."""
    value = _json.loads_or_none(text)
    if value is not None:
        return {"json": value}
    return {"text": text} if text else {}


def _frame(text: str) -> Any:
    value = _json.loads_or_none(text)
    return text if value is None else value


def _headers(headers: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in headers.items() if k.lower() not in _NOISE}


def entry(event: TrafficEvent, ids: StableIds, seq: int) -> dict[str, Any]:
    """One exchange as a cassette line (a dict), its ids rewritten to stable names."""
    sent, answer = (
        _json.loads_or_none(event.request_body),
        _json.loads_or_none(event.frames[0] if event.frames else event.response_body),
    )
    for decoded in (sent, answer, *(_json.loads_or_none(f) for f in event.frames[1:])):
        if decoded is not None:
            ids.learn(decoded)
    task_id = event.task_id or task_id_of(sent, answer)
    if task_id:
        ids._name(task_id, "task")
    w = ids.rewrite
    response: dict[str, Any] = {"status": event.status, "headers": _headers(event.response_headers)}
    if event.frames:
        response["frames"] = [_frame(w(f)) for f in event.frames]
    else:
        response.update(_body(w(event.response_body)))
    return {
        "seq": seq,
        "direction": event.direction,
        "method": event.method,
        "url": w(event.url),
        "rpc_method": event.rpc_method,
        "task_id": w(task_id) if task_id else None,
        "peer": event.peer,
        "server": event.server,
        "ms": round(event.ms, 3),
        "time": event.time,
        "request": {"headers": _headers(event.request_headers), **_body(w(event.request_body))},
        "response": response,
        "error": w(event.error) if event.error else None,
    }


def _header_line() -> str:
    return json.dumps({"toolnexus_cassette": FORMAT, "recorded": now_iso()})


class CassetteWriter:
    """Writes exchanges to a cassette as they happen (one line each, flushed), ids made stable.

    Args:
        path: the file; created (with its folder), or replaced when it exists.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path).expanduser()
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("w", encoding="utf-8")
        self._file.write(_header_line() + "\n")
        self._file.flush()
        self._ids = StableIds()
        self._seq = 0
        self._lock = threading.Lock()

    def write(self, event: TrafficEvent) -> None:
        """Append one exchange (already masked: a TrafficEvent always is)."""
        with self._lock:
            if self._file.closed:
                return
            self._seq += 1
            self._file.write(
                json.dumps(entry(event, self._ids, self._seq), ensure_ascii=False) + "\n"
            )
            self._file.flush()

    def close(self) -> None:
        with self._lock:
            self._file.close()

    def __enter__(self) -> CassetteWriter:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def save(events: Iterable[TrafficEvent], path: str | os.PathLike[str]) -> Path:
    """Write these exchanges (a wire log: the TUI's, a notebook server's) as a cassette at ``path``,
    whole (a reader never finds half of it; :class:`CassetteWriter` is for recording as it happens)."""
    ids = StableIds()
    lines = [
        _header_line(),
        *(
            json.dumps(entry(event, ids, seq), ensure_ascii=False)
            for seq, event in enumerate(events, 1)
        ),
    ]
    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    return write_whole(target, "\n".join(lines) + "\n")
