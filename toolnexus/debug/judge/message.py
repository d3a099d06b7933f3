"""A message the client sends: its role, parts and configuration, its id, and whether it goes on
the task it should."""

from __future__ import annotations

from typing import Any

from ... import _json
from ...events import TrafficEvent
from ..report import Finding
from .servers import EVERY_SERVER, FASTA2A, JS_SERVER, OURS, SDK_SERVER, STRANDS
from .state import JudgeState, header

_V10_PARTS = ("text", "raw", "url", "data", "file")


class MessageJudge(JudgeState):
    """A message the client sends, judged."""

    def _message(
        self, event: TrafficEvent, method: str, dialect: str, params: dict[str, Any]
    ) -> None:
        if method in ("SendStreamingMessage", "message/stream"):
            self.seen.add("streaming")
            if "text/event-stream" not in header(event, "accept"):
                self._add(
                    "info",
                    "accept",
                    "a stream asked for without Accept: text/event-stream (the servers answer SSE anyway)",
                    event,
                    fix="send Accept: text/event-stream with a stream",
                    at=method,
                )
        message = params.get("message")
        if not _json.is_object(message):
            self._add(
                "error",
                "message",
                f"{method} without a message object",
                event,
                EVERY_SERVER,
                'send params.message: {"messageId", "role", "parts"}',
                at=method,
            )
            return
        mid = message.get("messageId")
        if not isinstance(mid, str) or not mid:
            self._add(
                "error",
                "message ids",
                "a message without a messageId (-32602 from every server)",
                event,
                EVERY_SERVER,
                "give every message a fresh messageId (a UUID)",
                at=method,
            )
        else:
            text = _json.dumps(message.get("parts")).decode()
            first = self.message_ids.setdefault(mid, text)
            if first != text:
                self._add(
                    "warning",
                    "message ids",
                    f"messageId {mid!r} used again for another message",
                    event,
                    fix="give every new message a fresh messageId (send the same one only to "
                    "retry the same message)",
                    at=method,
                )
            else:
                self.report.note(Finding("ok", "message ids", "gives each message its messageId"))
        given = message.get("extensions")
        if given is not None and not (
            _json.is_array(given) and all(isinstance(u, str) and u for u in given)
        ):
            self._add(
                "error",
                "message",
                "message.extensions is not an array of URIs",
                event,
                [SDK_SERVER, OURS],
                'send "extensions": ["https://..."] (the URIs the message is part of), or leave '
                "it out",
                at=method,
            )
        self._role(event, method, dialect, message.get("role"))
        hybrid = dialect == "0.3" and "kind" not in message  # 1.0's message under 0.3's name
        self._parts(event, method, dialect, message.get("parts"), hybrid)
        self._configuration(event, method, dialect, params.get("configuration"))
        self._continuation(event, method, message)

    def _role(self, event: TrafficEvent, method: str, dialect: str, role: Any) -> None:
        want = "ROLE_USER" if dialect == "1.0" else "user"
        if role == want:
            return
        if dialect == "1.0" and role == "user":
            breaks = [SDK_SERVER]
        elif dialect != "1.0" and role == "ROLE_USER":
            breaks = [SDK_SERVER, JS_SERVER]
        else:
            breaks = EVERY_SERVER
        self._add(
            "error",
            "message",
            f"role {role!r} in a {dialect} message, not {want!r}",
            event,
            breaks,
            f'send "role": "{want}" in {dialect}',
            at=method,
        )

    def _parts(
        self, event: TrafficEvent, method: str, dialect: str, parts: Any, hybrid: bool = False
    ) -> None:
        if not _json.is_array(parts) or not parts:
            self._add(
                "error",
                "message",
                "a message without parts",
                event,
                EVERY_SERVER,
                "send at least one part",
                at=method,
            )
            return
        for part in parts:
            if not _json.is_object(part):
                self._add(
                    "error", "message", "a part is not an object", event, EVERY_SERVER, at=method
                )
                return
            if dialect == "1.0":
                contents = [k for k in _V10_PARTS if k in part]
                if "kind" in part:
                    self._add(
                        "info",
                        "message",
                        "1.0 parts carry 0.3's kind (the servers ignore it)",
                        event,
                        fix="leave kind out of 1.0 parts",
                        at=method,
                    )
                if len(contents) != 1:
                    self._add(
                        "error",
                        "message",
                        f"a 1.0 part with {len(contents)} contents (text, raw, url or data: one)",
                        event,
                        EVERY_SERVER,
                        "give each part exactly one of text, raw, url, data",
                        at=method,
                    )
                    return
            elif "kind" not in part:
                self._add(
                    "error",
                    "message",
                    f"a {dialect} part without kind"
                    + (
                        f" (0.3's method names with 1.0's parts: the hybrid {FASTA2A} sends)"
                        if hybrid
                        else ""
                    ),
                    event,
                    [JS_SERVER],
                    'give each 0.3 part its kind ("text", "file", "data")',
                    at=method,
                )
                return

    def _configuration(self, event: TrafficEvent, method: str, dialect: str, config: Any) -> None:
        if not _json.is_object(config):
            return
        if dialect == "1.0" and "blocking" in config and "returnImmediately" not in config:
            self._add(
                "warning",
                "configuration",
                "0.3's configuration.blocking in a 1.0 send: 1.0 servers ignore it (the send "
                "blocks unless returnImmediately is true)",
                event,
                fix="send configuration.returnImmediately: true for a send that returns at once",
                at=method,
            )
        if dialect != "1.0" and "returnImmediately" in config and "blocking" not in config:
            self._add(
                "warning",
                "configuration",
                "1.0's configuration.returnImmediately in a 0.3 send: 0.3 servers ignore it (the "
                "send blocks unless blocking is false)",
                event,
                fix="send configuration.blocking: false for a send that returns at once",
                at=method,
            )

    def _continuation(self, event: TrafficEvent, method: str, message: dict[str, Any]) -> None:
        """A message on a task the client knows: to a question, an answer; to a finished task,
        nothing; a new task where a question waits in the same context is the classic fault."""
        task_id, context = message.get("taskId"), message.get("contextId")
        known = self.tasks.get(task_id) if isinstance(task_id, str) else None
        if known is not None:
            if known.state.terminal:
                self.after_end.add(str(task_id))
                self._add(
                    "error",
                    "finished tasks",
                    f"sent a message to a task that is {known.state.value}",
                    event,
                    EVERY_SERVER,
                    "start a new task (no taskId; the same contextId keeps the conversation)",
                    at=method,
                )
            elif known.state.interrupted:
                self.seen.add(known.state.value)
                self._add(
                    "ok",
                    known.state.value,
                    "answered on the same task (its taskId and contextId)"
                    if context == known.context
                    else "answered on the same task",
                )
            return
        self.messages += 1
        if not context:
            waiting = [tid for tid, t in self.tasks.items() if t.state.interrupted]
            if waiting:
                state = self.tasks[waiting[0]].state.value
                self._add(
                    "error",
                    state,
                    f"task {waiting[0]} asked a question ({state}) and the next message came with "
                    "neither its taskId nor a contextId: a new task in a new conversation, not the "
                    f"answer ({STRANDS} does this: it never sends either)",
                    event,
                    EVERY_SERVER,
                    "answer with the task's taskId and contextId",
                    at=method,
                )
            return
        self.contexts += 1
        if isinstance(context, str) and context:
            waiting = [
                tid for tid, t in self.tasks.items() if t.context == context and t.state.interrupted
            ]
            if waiting:
                self._add(
                    "error",
                    self.tasks[waiting[0]].state.value,
                    f"task {waiting[0]} asked a question ({self.tasks[waiting[0]].state.value}) "
                    "and the next message in its context started a new task instead of answering it",
                    event,
                    EVERY_SERVER,
                    "answer with the task's taskId (and its contextId)",
                    at=method,
                )
