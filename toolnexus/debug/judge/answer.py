"""What the client was answered and did with it: a call on a task it knows, a stream read to its
end, each task it was told of."""

from __future__ import annotations

from typing import Any

from ... import _json
from ...events import TrafficEvent
from ...protocol.dialects import parse_state
from ...protocol.model import TaskState
from .servers import EVERY_SERVER
from .state import JudgeState, evidence_of

_STREAMS = ("SendStreamingMessage", "message/stream", "SubscribeToTask", "tasks/resubscribe")


def _told(result: Any) -> tuple[str, TaskState, str] | None:
    """``(task id, state, context id)`` of an answer or a stream event, in any dialect."""
    if not _json.is_object(result):
        return None
    for body in (result, result.get("task"), result.get("statusUpdate")):
        if _json.is_object(body):
            status = body.get("status")
            tid = body.get("taskId") or body.get("id")
            state = parse_state(status.get("state")) if _json.is_object(status) else None
            if isinstance(tid, str) and state is not None:
                context = body.get("contextId")
                return tid, state, context if isinstance(context, str) else ""
    return None


class AnswerJudge(JudgeState):
    """What the client was answered and did with it, judged."""

    def _on_a_task(self, event: TrafficEvent, method: str, params: dict[str, Any]) -> None:
        tid = params.get("id")
        if not isinstance(tid, str) or not tid:
            self._add(
                "error",
                "params",
                f"{method} without an id (-32602 from every server)",
                event,
                EVERY_SERVER,
                "name the task: params.id",
                at=method,
            )
            return
        history = params.get("historyLength")
        if history is not None and (
            isinstance(history, bool) or not isinstance(history, int) or history < 0
        ):
            self._add(
                "error",
                "params",
                f"historyLength {history!r} is not a whole number of 0 or more",
                event,
                EVERY_SERVER,
                "send historyLength as a non-negative integer, or leave it out",
                at=method,
            )
        if method in ("CancelTask", "tasks/cancel"):
            self.seen.add("cancel")
            self._add("ok", "cancel", "canceled a task")
        if method in ("SubscribeToTask", "tasks/resubscribe"):
            self.seen.add("resubscribe")
            self._add("ok", "resubscribe", "resubscribed to a task")
        self.cut.pop(tid, None)  # it came back for the task

    def _answer(self, event: TrafficEvent, method: str, *, enveloped: bool = True) -> None:
        """What the client was told (the tasks' states), and whether it read a stream to its end."""
        if method in _STREAMS and event.frames:
            last: tuple[str, TaskState, str] | None = None
            for frame in event.frames:
                data = _json.loads_or_none(frame)
                if enveloped:
                    data = data.get("result") if _json.is_object(data) else None
                told = _told(data)
                if told is not None:
                    self._tell(*told)
                    last = told
            if last is not None and not (last[1].terminal or last[1].interrupted):
                self.cut[last[0]] = evidence_of(event)
            elif last is not None:
                self._add("ok", "streaming", "read the stream to its end")
            return
        data = _json.loads_or_none(event.response_body)
        if enveloped:
            data = data.get("result") if _json.is_object(data) else None
        told = _told(data)
        if told is not None:
            self._tell(*told)
