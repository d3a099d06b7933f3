"""W3C trace context as it crosses the wire: the ``traceparent`` a request carries, and the span a
task belongs to (``Task.trace``). Data only; following a task across hops is :mod:`toolnexus.trace`."""

from __future__ import annotations

import re
import secrets
from dataclasses import dataclass
from typing import Any

from .._json import is_object

__all__ = ["TraceContext", "parse_traceparent", "new_trace", "HEADER"]

HEADER = "traceparent"
_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(?:-.*)?$")


@dataclass(frozen=True)
class TraceContext:
    """A span in a trace: ``trace_id`` (32 hex digits), ``span_id`` (16), the parent span's id."""

    trace_id: str
    span_id: str
    parent_id: str | None = None
    sampled: bool = True

    def traceparent(self) -> str:
        """This span as a W3C ``traceparent`` value (the parent of whatever it is sent to)."""
        return f"00-{self.trace_id}-{self.span_id}-{'01' if self.sampled else '00'}"

    def child(self) -> TraceContext:
        """A new span of the same trace, a child of this one."""
        return TraceContext(self.trace_id, secrets.token_hex(8), self.span_id, self.sampled)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"traceId": self.trace_id, "spanId": self.span_id}
        if self.parent_id:
            out["parentId"] = self.parent_id
        if not self.sampled:
            out["sampled"] = False
        return out

    @classmethod
    def from_dict(cls, data: Any) -> TraceContext | None:
        """The context :meth:`to_dict` wrote, or None for anything else."""
        if not is_object(data):
            return None
        trace, span, parent = data.get("traceId"), data.get("spanId"), data.get("parentId")
        if not (
            isinstance(trace, str)
            and len(trace) == 32
            and isinstance(span, str)
            and len(span) == 16
        ):
            return None
        return cls(
            trace,
            span,
            parent if isinstance(parent, str) and len(parent) == 16 else None,
            data.get("sampled") is not False,
        )


def new_trace() -> TraceContext:
    """The root span of a new trace."""
    return TraceContext(secrets.token_hex(16), secrets.token_hex(8))


def parse_traceparent(value: str | None) -> TraceContext | None:
    """The caller's span named by a ``traceparent`` header, or None when it is absent or not valid
    W3C trace context (version ``ff``, all-zero ids, wrong lengths or case: ignored, as the
    recommendation says, and a new trace is started instead)."""
    if not value or len(value) > 512:
        return None
    found = _TRACEPARENT.match(value.strip())
    if found is None:
        return None
    version, trace, span, flags = found.groups()
    if (
        version == "ff"
        or (version == "00" and len(value.strip()) != 55)
        or trace == "0" * 32
        or span == "0" * 16
    ):
        return None
    return TraceContext(trace, span, None, bool(int(flags, 16) & 1))
