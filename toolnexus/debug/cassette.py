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

import json
import os
import re
import threading
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import _json
from .._fs import write_whole
from ..errors import ToolnexusError
from ..events import TrafficEvent
from ..protocol.model import now_iso
from ..traffic import task_id_of

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
    "STABLE_ID",
]

FORMAT = 1
"""The cassette format this version writes and reads."""

MAX_LINE = 64 * 1024 * 1024
"""The longest line read from a cassette, in bytes (a recorded body is at most 256 KiB)."""

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

STABLE_ID = re.compile(r"^(?:task|context|message|artifact|rpc|id)-\d+$")
"""What a stable id written in a cassette looks like."""


class CassetteError(ToolnexusError, ValueError):
    """A file that is not a cassette, or a line of one that cannot be read."""


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


@dataclass
class Exchange:
    """One recorded exchange, as read from a cassette line (see the module for the fields)."""

    seq: int
    direction: str
    method: str
    url: str
    rpc_method: str | None
    request: dict[str, Any]
    response: dict[str, Any]
    error: str | None = None
    task_id: str | None = None
    peer: str = ""
    line: int = 0
    time: str = ""
    """When it ended (ISO 8601, UTC)."""
    ms: float = 0.0
    """How long it took."""

    @property
    def status(self) -> int | None:
        status = self.response.get("status")
        return status if isinstance(status, int) else None

    @property
    def streamed(self) -> bool:
        return "frames" in self.response

    def request_text(self) -> str:
        """The request body as it was sent (JSON written compactly)."""
        return _text_of(self.request)

    def response_text(self) -> str:
        return _text_of(self.response)


def _text_of(part: dict[str, Any]) -> str:
    if "json" in part:
        return json.dumps(part["json"], ensure_ascii=False, separators=(",", ":"))
    text = part.get("text", "")
    return text if isinstance(text, str) else ""


@dataclass
class Cassette:
    """A cassette read back: its exchanges in order."""

    path: Path
    exchanges: list[Exchange] = field(default_factory=list)
    recorded: str = ""

    def __iter__(self) -> Iterator[Exchange]:
        return iter(self.exchanges)

    def __len__(self) -> int:
        return len(self.exchanges)

    def origins(self) -> list[str]:
        """The HTTP origins (``scheme://host:port``) the exchanges went to, in order of first use
        (gRPC calls and stdio MCP messages are recorded, but only HTTP exchanges replay)."""
        return list(
            dict.fromkeys(
                origin_of(x.url)
                for x in self.exchanges
                if x.url.startswith(("http://", "https://"))
            )
        )

    def of(self, origin: str | None) -> list[Exchange]:
        """The HTTP exchanges with one origin (all of them when ``origin`` is None)."""
        wanted = origin.rstrip("/") if origin is not None else None
        return [
            x
            for x in self.exchanges
            if x.url.startswith(("http://", "https://"))
            and (wanted is None or origin_of(x.url) == wanted)
        ]


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of a URL."""
    scheme, sep, rest = url.partition("://")
    return f"{scheme}{sep}{rest.split('/', 1)[0]}" if sep else ""


def _field(line: int, data: dict[str, Any], name: str, kind: type | tuple[type, ...]) -> Any:
    value = data.get(name)
    if not isinstance(value, kind):
        raise CassetteError(f"line {line}: the exchange has no valid {name!r}")
    return value


def exchange_of(data: dict[str, Any], number: int) -> Exchange:
    """The exchange a cassette line holds (``data``, decoded; ``number``: its line).

    Raises:
        CassetteError: it is not an exchange (the message names the line).
    """
    request = _field(number, data, "request", dict)
    response = _field(number, data, "response", dict)
    return Exchange(
        seq=seq if isinstance(seq := data.get("seq"), int) else number - 1,
        direction="in" if data.get("direction") == "in" else "out",
        method=_field(number, data, "method", str).upper(),
        url=_field(number, data, "url", str),
        rpc_method=data.get("rpc_method") if isinstance(data.get("rpc_method"), str) else None,
        request=request,
        response=response,
        error=data.get("error") if isinstance(data.get("error"), str) else None,
        task_id=data.get("task_id") if isinstance(data.get("task_id"), str) else None,
        peer=peer if isinstance(peer := data.get("peer"), str) else "",
        line=number,
        time=when if isinstance(when := data.get("time"), str) else "",
        ms=float(ms)
        if isinstance(ms := data.get("ms"), (int, float)) and not isinstance(ms, bool)
        else 0.0,
    )


def exchanges(events: Iterable[TrafficEvent]) -> list[Exchange]:
    """A wire log's exchanges as a cassette holds them (ids made stable), without a file: what
    :func:`load` would read back from :func:`save`'s."""
    ids = StableIds()
    return [exchange_of(entry(event, ids, seq), seq) for seq, event in enumerate(events, 1)]


def load(path: str | os.PathLike[str]) -> Cassette:
    """Read a cassette.

    Raises:
        CassetteError: the file cannot be read, is not a cassette, is of a newer format, or a line
            is not an exchange (the message names the line).
    """
    path = Path(path).expanduser()
    try:
        handle = path.open("rb")
    except OSError as exc:
        raise CassetteError(f"cannot read the cassette {path}: {exc.strerror or exc}") from None
    cassette = Cassette(path)
    with handle:
        for number, raw in enumerate(iter(lambda: handle.readline(MAX_LINE + 1), b""), start=1):
            if len(raw) > MAX_LINE:
                raise CassetteError(f"{path}: line {number} is longer than {MAX_LINE:,} bytes")
            if not raw.strip():
                continue
            try:
                data = _json.loads(raw)
            except (*_json.JSONDecodeError, ValueError):
                raise CassetteError(f"{path}: line {number} is not JSON") from None
            if not isinstance(data, dict):
                raise CassetteError(f"{path}: line {number} is not a JSON object")
            if number == 1:
                version = data.get("toolnexus_cassette")
                if not isinstance(version, int):
                    raise CassetteError(
                        f"{path} is not a toolnexus cassette (its first line does not say so)"
                    )
                if version > FORMAT:
                    raise CassetteError(
                        f"{path} is cassette format {version}; this toolnexus reads {FORMAT}"
                    )
                cassette.recorded = str(data.get("recorded", ""))
                continue
            try:
                cassette.exchanges.append(exchange_of(data, number))
            except CassetteError as exc:
                raise CassetteError(f"{path}: {exc}") from None
    if not cassette.recorded and not cassette.exchanges:
        raise CassetteError(f"{path} is empty: not a toolnexus cassette")
    return cassette
