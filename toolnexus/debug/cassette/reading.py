"""A cassette read (:func:`load`): its exchanges (:class:`Exchange`), and a wire log's exchanges as a
cassette holds them (:func:`exchange_of`, :func:`exchanges`)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ... import _json
from ...events import TrafficEvent
from .format import FORMAT, MAX_LINE, CassetteError
from .writing import StableIds, entry


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
