"""What every doctor's checks share: one raw JSON-RPC call on the wire log (:func:`rpc`), an exchange
as evidence, and the :class:`Finder` whose findings show the exchanges since a mark."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from ... import _json
from ...events import TrafficEvent
from ...http.fetch import exchange, why
from ...traffic import TrafficRecorder
from ..report import Finding


@dataclass
class Answer:
    """What one raw JSON-RPC call got: the error code, ``"result"``, or None (no JSON-RPC answer),
    the result or error object, the response, and why there was none."""

    got: Any
    data: Any
    response: httpx.Response | None
    why: str = ""


def evidence(event: TrafficEvent) -> str:
    """One exchange as an evidence line (masked: what the wire log holds)."""
    answer = (event.response_body or event.error or "").replace("\n", " ")
    sent = (event.request_body or "").replace("\n", " ")
    return (
        f"{event.method} {event.url} {sent[:200]} -> {event.status or '-'} {answer[:400]}".replace(
            "  ", " "
        )
    )


def since(traffic: TrafficRecorder, before: int) -> list[str]:
    """The exchanges recorded since the ``before``-th, as evidence lines."""
    return [evidence(e) for e in list(traffic.events)[before:]]


async def rpc(
    http: httpx.AsyncClient,
    endpoint: str,
    method: str,
    params: dict[str, Any],
    headers: dict[str, str],
    timeout: float,
    traffic: TrafficRecorder,
) -> Answer:
    """One raw JSON-RPC call, bounded, on the wire log."""
    body = _json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    started = time.perf_counter()
    try:
        r, content = await exchange(
            http,
            "POST",
            endpoint,
            headers=headers,
            content=body,
            limit=1 << 20,
            timeout=timeout,
        )
    except httpx.HTTPError as exc:
        return Answer(None, None, None, why(exc))
    traffic.sent("POST", endpoint, started, headers, body, (r, content), rpc_method=method)
    data = _json.loads_or_none(content)
    if not _json.is_object(data):
        return Answer(None, None, r, f"HTTP {r.status_code} without a JSON-RPC answer")
    error = data.get("error")
    if _json.is_object(error):
        return Answer(error.get("code"), error, r)
    if "result" in data:
        return Answer("result", data["result"], r)
    return Answer(None, None, r, f"HTTP {r.status_code} without a JSON-RPC answer")


@dataclass
class Finder:
    """What every doctor's checks share: the wire log whose exchanges since a mark show each
    finding, and where findings go."""

    traffic: TrafficRecorder
    add: Callable[[Finding], Any]
    shown: int = field(default=0, kw_only=True)
    """The most exchanges a finding shows, the last ones (0: all since its mark)."""

    def found(
        self,
        severity: str,
        check: str,
        message: str,
        before: int | None = None,
        breaks: list[str] | None = None,
        fix: str = "",
        at: str = "",
    ) -> None:
        """A finding, with the exchanges since the ``before``-th as its evidence (None: none)."""
        shown = since(self.traffic, before)[-self.shown :] if before is not None else []
        self.add(Finding(severity, check, message, shown, list(breaks or []), fix, at))

    def mark(self) -> int:
        """Where the next exchange will be on the wire log (a finding's ``before``)."""
        return len(self.traffic.events)

    def on(self, traffic: TrafficRecorder) -> Finder:
        """The same, its evidence from another wire log."""
        return replace(self, traffic=traffic)
