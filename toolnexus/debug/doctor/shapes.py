"""The letter of a send's JSON-RPC answer (:class:`Letter`), and the findings on it: content type,
result wrapping, ``kind``, the task state's spelling, a timestamp's zone, a hybrid of the dialects."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ... import _json
from ...events import TrafficEvent
from ...protocol.dialects import Dialect
from ..features import evidence
from ..report import Finding
from .lines import Add

_ZONED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$")


@dataclass
class Letter:
    """The letter of one send's JSON-RPC result, as each client's parser meets it."""

    wrapped: bool = False
    """``{"task": …}`` or ``{"message": …}`` (1.0's SendMessageResponse), not the bare task."""
    kind: bool = False
    """The task or message carries ``kind`` (0.3's discriminator)."""
    parts_without_kind: int = 0
    state: str = ""
    timestamp: str | None = None
    evidence: str = ""
    """The exchange it was read from, as an evidence line."""

    @property
    def zoned(self) -> bool:
        return self.timestamp is None or bool(_ZONED.match(self.timestamp))

    def departures(self, dialect: Dialect, *, proto_timestamps: bool) -> list[str]:
        """What of this answer a strict reader of ``dialect`` refuses; ``proto_timestamps``: the
        reader converts to protobuf, whose Timestamp needs a zone (the a2a-sdk 1.x, on both lines)."""
        out = []
        if dialect is Dialect.V10:
            if not self.wrapped:
                out.append('the result is not wrapped as {"task": …} or {"message": …}')
            if self.state and not self.state.startswith("TASK_STATE_"):
                out.append(f"the state {self.state!r} is not TASK_STATE_*")
        else:
            if self.wrapped:
                out.append('the result is wrapped as {"task": …}, a 1.0 shape')
            if not self.kind:
                out.append("the result has no kind (task or message)")
            if self.parts_without_kind:
                out.append(f"{self.parts_without_kind} part(s) without kind")
            if self.state.startswith("TASK_STATE_"):
                out.append(f"the state {self.state!r} is not 0.3's spelling (completed)")
        if proto_timestamps and not self.zoned:
            out.append(
                f"status.timestamp {self.timestamp!r} has no zone (protobuf's Timestamp needs Z or an offset)"
            )
        return out


def _answer_of(result: Any) -> Letter:
    if not _json.is_object(result):
        return Letter()
    wrapped = len(result) == 1 and next(iter(result)) in ("task", "message")
    body = result.get("task") or result.get("message") if wrapped else result
    if not _json.is_object(body):
        return Letter(wrapped=wrapped)
    status = body.get("status")
    status = status if _json.is_object(status) else {}
    messages = (
        [status.get("message"), *(body.get("history") or ())] if "parts" not in body else [body]
    )
    parts = [
        p
        for m in messages
        if _json.is_object(m)
        for p in (m.get("parts") or ())
        if _json.is_object(p)
    ]
    parts += [
        p
        for a in (body.get("artifacts") or ())
        if _json.is_object(a)
        for p in (a.get("parts") or ())
        if _json.is_object(p)
    ]
    stamp = status.get("timestamp")
    return Letter(
        wrapped=wrapped,
        kind=body.get("kind") in ("task", "message"),
        parts_without_kind=sum("kind" not in p for p in parts),
        state=str(status.get("state") or ""),
        timestamp=stamp if isinstance(stamp, str) else None,
    )


def judge_shapes(event: TrafficEvent, dialect: Dialect, add: Add) -> Letter | None:
    """The letter of a send's JSON-RPC answer in its dialect: content type, result wrapping, ``kind``,
    the spelling of the task state, a timestamp with its zone; a 0.3 method answered in 1.0's shapes
    is named as the hybrid it is. Returns the answer's letter (None when there is no result)."""
    shown = [evidence(event)]

    def warn(check: str, message: str, breaks: list[str], fix: str) -> None:
        add(Finding("warning", check, message, shown, breaks, fix))

    if not event.response_headers.get("content-type", "").startswith("application/json"):
        warn(
            "content type",
            f"JSON-RPC answered as {event.response_headers.get('content-type')!r}",
            ["strict clients"],
            "answer with Content-Type: application/json",
        )
    data = _json.loads_or_none(event.response_body or "")
    result = data.get("result") if _json.is_object(data) else None
    if not _json.is_object(result):
        return None
    answer = _answer_of(result)
    answer.evidence = shown[0]
    if dialect is Dialect.V10:
        if not answer.wrapped:
            warn(
                "result wrapping",
                'a 1.0 SendMessage result is not {"task": ...} or {"message": ...}',
                ["a2a-sdk 1.x", "JS SDK 1.x"],
                "wrap the task (or message) as SendMessageResponse does",
            )
        if answer.state and not answer.state.startswith("TASK_STATE_"):
            warn(
                "enum casing",
                f"a 1.0 task state is {answer.state!r}, not TASK_STATE_*",
                ["a2a-sdk 1.x", "JS SDK 1.x"],
                "write 1.0 enums as their proto names (TASK_STATE_COMPLETED)",
            )
        return answer
    if answer.wrapped or (answer.parts_without_kind and not answer.kind):
        warn(
            "hybrid",
            "answers the 0.3 method message/send in 1.0's shapes ("
            + ", ".join(answer.departures(Dialect.V03, proto_timestamps=False))
            + "): a hybrid of the two "
            "dialects, which 0.3 clients cannot read",
            ["a2a-sdk 0.3", "a2a-sdk 1.x compat"],
            "answer message/send in 0.3's shapes (a bare task with kind), or SendMessage in 1.0's",
        )
        return answer
    if not answer.kind:
        warn(
            "kind",
            "a 0.3 message/send result has no kind (task or message)",
            ["a2a-sdk 0.3", "JS SDK compat"],
            'add kind: "task" (or "message")',
        )
    if answer.state.startswith("TASK_STATE_"):
        warn(
            "enum casing",
            f"a 0.3 task state is {answer.state!r}, not lower-case (completed)",
            ["a2a-sdk 0.3"],
            "write 0.3 states in lower case with dashes (input-required)",
        )
    return answer
