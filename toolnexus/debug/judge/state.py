"""What the judge keeps of a client's exchanges (:class:`JudgeState`), where its findings go, and
an exchange as their evidence."""

from __future__ import annotations

from dataclasses import dataclass, field

from ...events import TrafficEvent
from ...protocol.model import TaskState
from ..report import DoctorReport, Finding


@dataclass
class _Task:
    """What the client was told of one task."""

    state: TaskState
    context: str = ""


def header(event: TrafficEvent, name: str) -> str:
    return next((v for k, v in event.request_headers.items() if k.lower() == name), "")


def evidence_of(event: TrafficEvent) -> str:
    sent = (event.request_body or "").replace("\n", " ")
    answer = (event.response_body or event.error or "").replace("\n", " ")
    version = header(event, "a2a-version")
    head = f" [A2A-Version: {version}]" if version else ""
    return f"{event.method} {event.url}{head} {sent[:300]} -> {event.status or '-'} {answer[:300]}"


@dataclass
class JudgeState:
    """What the judge keeps of a client's exchanges, and where its findings go (``report``)."""

    report: DoctorReport
    tenant: str = ""
    """The tenant the agent's card names on its 1.0 interfaces ("": none)."""
    extensions: tuple[str, ...] = ()
    """The URIs of the extensions the agent's card declares."""
    tasks: dict[str, _Task] = field(default_factory=dict)
    message_ids: dict[str, str] = field(default_factory=dict)
    """messageId -> the text of the message that first used it."""
    seen: set[str] = field(default_factory=set)
    """The scenarios (:data:`SCENARIOS`) the client went through."""
    after_end: set[str] = field(default_factory=set)
    """Tasks the client sent a message to after they had ended."""
    cut: dict[str, str] = field(default_factory=dict)
    """Streams the client closed before its task settled: task id -> the evidence."""
    card_fetches: int = 0
    messages: int = 0
    """Messages the client sent that were not on a task it knew."""
    contexts: int = 0
    """Of those, the ones that named a contextId."""

    def _add(
        self,
        severity: str,
        check: str,
        message: str,
        event: TrafficEvent | None = None,
        breaks: list[str] | None = None,
        fix: str = "",
        at: str = "",
    ) -> None:
        evidence = [evidence_of(event)] if event is not None else []
        self.report.note(Finding(severity, check, message, evidence, list(breaks or []), fix, at))

    def _tell(self, tid: str, state: TaskState, context: str) -> None:
        task = self.tasks.get(tid)
        if task is None:
            self.tasks[tid] = _Task(state, context)
            return
        task.state = state
        task.context = task.context or context
