"""What a stream carried, checked frame by frame: the faults a reader of it would trip on.

A stream (``SendStreamingMessage``/``message/stream``, a subscription) is a sequence of results,
each a task, a message, a status update or an artifact update, in 1.0's wrapped shape
(``{"statusUpdate": {...}}``) or 0.3's (``{"kind": "status-update", ...}``). :class:`StreamCheck`
takes them one at a time (:meth:`StreamCheck.frame`) and names each fault as it comes, and the ones
only the end shows (:meth:`StreamCheck.end`). The client warns with them as it receives
(``A2AClient.warnings``); the auditor (:mod:`toolnexus.debug.audit`) reads them from a cassette
and the doctor from its live stream probe. Nothing here is interpreted beyond its shape.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .. import _json
from .dialects import parse_state
from .model import TaskState

__all__ = ["FAULTS", "Fault", "StreamCheck", "event_of"]

FAULTS = {
    "unopened": "append to an artifact never opened",
    "after-last": "chunk after lastChunk",
    "duplicate": "duplicated chunk",
    "unclosed": "artifact never closed",
    "after-terminal": "update after a terminal state",
    "illegal": "illegal state change",
    "task-changed": "task id changed mid-stream",
    "context-changed": "context id changed mid-stream",
}
"""Each fault a stream may carry: its code and what it is called in a report."""
WARNINGS = frozenset({"unclosed", "duplicate"})
"""The faults a reader may still read right (the others are errors)."""

_WRAPPERS = (
    ("statusUpdate", "status-update"),
    ("artifactUpdate", "artifact-update"),
    ("task", "task"),
    ("message", "message"),
)


def event_of(result: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """One stream result's kind (``task``, ``message``, ``status-update``, ``artifact-update``)
    and its body, from either dialect's shape (1.0 wraps it, 0.3 names its ``kind``; an unnamed
    body is told by its fields). ``result`` must be an object."""
    for wrapper, name in _WRAPPERS:
        if _json.is_object(body := result.get(wrapper)):
            return name, body
    kind = result.get("kind")
    if kind in ("task", "message", "status-update", "artifact-update"):
        return kind, result
    if "artifact" in result and "taskId" in result:
        return "artifact-update", result
    if "status" in result and "taskId" in result:
        return "status-update", result
    if "messageId" in result and "status" not in result:
        return "message", result
    return "task", result


@dataclass(frozen=True)
class Fault:
    """One fault: its code (a key of :data:`FAULTS`), the frame it is in (1-based; 0 at the end)
    and what was seen."""

    code: str
    frame: int
    message: str

    @property
    def name(self) -> str:
        return FAULTS[self.code]

    @property
    def severity(self) -> str:
        return "warning" if self.code in WARNINGS else "error"

    def __str__(self) -> str:
        where = f"frame {self.frame}" if self.frame else "at the end"
        return f"the stream's {where}: {self.name}: {self.message}"


@dataclass
class _Artifact:
    chunks: int = 0
    closed: bool = False
    appended: bool = False
    last: str = ""  # the last chunk as sent (its parts, compact JSON)


@dataclass
class StreamCheck:
    """A stream's faults, as its frames come (see the module). ``faults`` holds every one so far."""

    faults: list[Fault] = field(default_factory=list)
    task_id: str = ""
    context_id: str = ""
    state: TaskState | None = None
    frames: int = 0
    _ended_at: int = 0  # the frame that put the task in a terminal state
    _artifacts: dict[str, _Artifact] = field(default_factory=dict)

    def _fault(self, code: str, message: str, frame: int | None = None) -> Fault:
        fault = Fault(code, self.frames if frame is None else frame, message)
        self.faults.append(fault)
        return fault

    def frame(self, result: Any) -> list[Fault]:
        """Check one frame's result; the faults it carries (also kept in :attr:`faults`)."""
        before = len(self.faults)
        self.frames += 1
        if not _json.is_object(result):
            return []
        kind, body = event_of(result)
        if kind == "message":
            self._ids(str(body.get("taskId") or ""), str(body.get("contextId") or ""))
            return self.faults[before:]
        if kind == "task":
            task_id, status = str(body.get("id") or ""), body.get("status")
        else:
            task_id, status = str(body.get("taskId") or ""), body.get("status")
        if self._ended_at:
            self._fault(
                "after-terminal",
                f"a {kind} after the task was {self.state} (frame {self._ended_at}): "
                "nothing may follow a terminal state",
            )
        self._ids(task_id, str(body.get("contextId") or ""))
        if kind in ("task", "status-update") and _json.is_object(status):
            self._state(parse_state(status.get("state")))
        if kind == "task":
            for artifact in body.get("artifacts") or ():
                if _json.is_object(artifact):  # a task frame holds each artifact whole
                    self._artifacts[str(artifact.get("artifactId"))] = _Artifact(1, False)
        elif kind == "artifact-update":
            self._artifact(body)
        return self.faults[before:]

    def _ids(self, task_id: str, context_id: str) -> None:
        if task_id:
            if self.task_id and task_id != self.task_id:
                self._fault("task-changed", f"{self.task_id!r} became {task_id!r}")
            self.task_id = self.task_id or task_id
        if context_id:
            if self.context_id and context_id != self.context_id:
                self._fault("context-changed", f"{self.context_id!r} became {context_id!r}")
            self.context_id = self.context_id or context_id

    def _state(self, state: TaskState | None) -> None:
        if state is None or state is TaskState.UNKNOWN:
            return
        old = self.state
        if self._ended_at:
            return  # a terminal state never changes: what came after is said as a fault of its own
        # a stream may start in any state (a subscription joins late, a quick agent's one frame is
        # its finished task); a state said again is no move; a move out of a terminal state is said
        # as an update after it. Between the others the protocol names no order (the official JS
        # SDK's agent goes submitted -> input-required; protocol.model.LEGAL is our server's own,
        # stricter, lifecycle): only going back to submitted, where a task starts, is no move
        if state is TaskState.SUBMITTED and old not in (None, TaskState.SUBMITTED):
            self._fault("illegal", f"{old} -> {state}: a task is submitted once, when it starts")
        self.state = state
        if state.terminal:
            self._ended_at = self.frames

    def _artifact(self, body: dict[str, Any]) -> None:
        artifact = body.get("artifact")
        if not _json.is_object(artifact):
            return
        key = str(artifact.get("artifactId"))
        chunk = json.dumps(artifact.get("parts"), sort_keys=True, separators=(",", ":"))
        seen = self._artifacts.get(key)
        append = body.get("append") is True
        if seen is None:
            if append:
                self._fault("unopened", f"an append to artifact {key!r}, which no frame opened")
            seen = self._artifacts[key] = _Artifact()
        elif seen.closed:
            self._fault(
                "after-last", f"artifact {key!r} had its lastChunk; a reader of it adds this one"
            )
        elif append and seen.chunks and chunk == seen.last:
            self._fault(
                "duplicate", f"artifact {key!r}: the same chunk as the one before ({chunk[:120]})"
            )
        seen.chunks += 1
        seen.appended = seen.appended or append
        seen.last = chunk
        if body.get("lastChunk") is True:
            seen.closed = True

    def end(self) -> list[Fault]:
        """What only the stream's end shows: an artifact streamed in appends and never closed by a
        ``lastChunk`` (a reader cannot tell it whole). Call once, when the stream ended."""
        before = len(self.faults)
        for key, seen in self._artifacts.items():
            if seen.appended and not seen.closed:
                self._fault(
                    "unclosed",
                    f"artifact {key!r} was streamed in {seen.chunks} chunks and never had "
                    "lastChunk: true",
                    frame=0,
                )
        return self.faults[before:]
