"""The client doctor's judge: each exchange a client had with the client doctor's agent, judged as
a strict server would, into a :class:`~toolnexus.debug.report.DoctorReport` (``doctor="a2a-client"``).

It reads the wire log of the agent (inbound :class:`~toolnexus.events.TrafficEvent` s, masked), so
it judges what crossed, whatever the client is: the method names of the dialect it speaks, the
``A2A-Version`` header, the envelope, the message's required fields and their spelling in that
dialect, message ids, whether it reads a stream to its end, answers a question on the same task,
sends nothing more to a finished task, asks for the card conditionally, names the tenant the
card's interface names, asks for extensions as the card declares them. Each fault names the
servers it breaks, as measured against them (the official a2a-sdk 1.3 server with its 0.3
compatibility, the JavaScript SDK 1.3 server, and ours: the table is in ``docs/guide.md``); a
departure no server refuses is said for information. A framework client's known fault is named
(AWS Strands' A2AAgent sends no taskId or contextId: its answer to a question starts a new task;
fasta2a's client sends 0.3's method names with 1.0's messages). :meth:`ClientJudge.finish` adds what the
client never tried (a stream, a cancel, a question ...), with the words that make the agent do it.
"""

from __future__ import annotations

from ... import _json
from ...events import TrafficEvent
from ...protocol import rest
from ...protocol.card import CARD_PATH, LEGACY_CARD_PATH
from ...protocol.model import TaskState
from ..report import Finding
from .answer import AnswerJudge
from .message import MessageJudge
from .request import RequestJudge
from .servers import EVERY_SERVER, JS_SERVER, OURS, SDK_SERVER, STRANDS
from .state import header

__all__ = ["ClientJudge", "SCENARIOS", "SDK_SERVER", "JS_SERVER", "OURS", "EVERY_SERVER"]

_SENDS = ("SendMessage", "SendStreamingMessage", "message/send", "message/stream")
_ON_A_TASK = ("GetTask", "CancelTask", "SubscribeToTask", "tasks/get", "tasks/cancel")
_ON_A_TASK += ("tasks/resubscribe",)
_REST_SENDS = {"/message:send": "SendMessage", "/message:stream": "SendStreamingMessage"}
SCENARIOS = {
    "streaming": "a stream (SendStreamingMessage or message/stream)",
    "cancel": "a cancel (CancelTask or tasks/cancel) of a running task: send a message with the "
    "word 'slow' first",
    "resubscribe": "a resubscribe (SubscribeToTask or tasks/resubscribe) to a running task",
    "input-required": "a question: send a message with the word 'question', then answer it",
    "auth-required": "an authorization: send a message with the word 'auth', then answer it",
    "rejected": "a refusal: send a message with the word 'reject'",
    "card cache": "the card asked for again with If-None-Match (answered 304)",
    "extensions": "an extension asked for: the A2A-Extensions header naming the one the card "
    "declares",
}
"""What a client can be seen to do, and how to make the agent let it (reported when never seen)."""


class ClientJudge(RequestJudge, MessageJudge, AnswerJudge):
    """Judges each exchange (:meth:`exchange`) into ``report``; :meth:`finish` at the end."""

    def exchange(self, event: TrafficEvent) -> None:
        """Judge one exchange the client had with the agent (an inbound wire-log event)."""
        if event.direction != "in":
            return
        path = event.url.split("://", 1)[-1].partition("/")[2]
        path = "/" + path.split("?", 1)[0]
        if event.method in ("GET", "HEAD") and path in (CARD_PATH, LEGACY_CARD_PATH):
            return self._card(event, path)
        if event.method == "POST" and path == "/":
            return self._rpc(event)
        if path.startswith("/v1/") or event.rpc_method:  # HTTP+JSON (1.0, or 0.3 under /v1/)
            return self._rest(event, path)

    def _card(self, event: TrafficEvent, path: str) -> None:
        self.card_fetches += 1
        if path == LEGACY_CARD_PATH:
            self._add(
                "warning",
                "card",
                f"asked for the card at {LEGACY_CARD_PATH} (the 0.2 path)",
                event,
                [SDK_SERVER, JS_SERVER],
                f"ask {CARD_PATH} first: the SDK servers answer 404 at the 0.2 path",
            )
            return
        conditional = {k.lower() for k in event.request_headers} & {
            "if-none-match",
            "if-modified-since",
        }
        if event.status == 304:
            self.seen.add("card cache")
            self._add("ok", "card cache", "asked for the card conditionally and took the 304")
        elif not conditional and self.card_fetches == 2:
            self._add(
                "info",
                "card cache",
                "fetched the whole card again without If-None-Match (the card has an ETag and "
                "max-age: a conditional request costs a 304)",
                event,
            )
        else:
            self._add("ok", "card", f"fetched the card at {CARD_PATH}")

    def _rest(self, event: TrafficEvent, path: str) -> None:
        method = event.rpc_method or ""
        self._add("info", "binding", "speaks HTTP+JSON (judged: its version header and messages)")
        version = header(event, "a2a-version")
        v03 = path.startswith("/v1/")
        if not v03 and not version.startswith("1"):
            self._version_fault(event, method, version)
        if not v03:
            routed = rest.match(event.method, path)
            self._tenant(event, method, routed[1].get("tenant") if routed else None, "path")
        self._extensions(event, method, "0.3" if v03 else "1.0")
        sent = _json.loads_or_none(event.request_body)
        if method in _SENDS and _json.is_object(sent):
            self._message(event, method, "1.0", sent)
        self._answer(event, method, enveloped=False)

    def _rpc(self, event: TrafficEvent) -> None:
        if event.status == 415:
            self._add(
                "error",
                "content type",
                f"sent Content-Type {header(event, 'content-type')!r}, not application/json",
                event,
                EVERY_SERVER,
                "send Content-Type: application/json",
            )
            return
        body = _json.loads_or_none(event.request_body)
        if not _json.is_object(body):
            self._add(
                "error",
                "envelope",
                "the body is not a JSON-RPC request object",
                event,
                EVERY_SERVER,
                'send one object: {"jsonrpc": "2.0", "id": ..., "method": ..., "params": {...}}',
            )
            return
        if not self._envelope(event, body):
            return
        method = body["method"]
        dialect = self._dialect(event, method, body.get("params"))
        if dialect is None:
            return
        params = body.get("params")
        if not _json.is_object(params):
            self._add(
                "error",
                "params",
                f"{method}'s params are not an object",
                event,
                EVERY_SERVER,
                "send params as a JSON object",
                at=method,
            )
            return
        if dialect == "1.0":
            self._tenant(event, method, params.get("tenant"), "params")
        self._extensions(event, method, dialect)
        if method in _SENDS:
            self._message(event, method, dialect, params)
        elif method in _ON_A_TASK:
            self._on_a_task(event, method, params)
        self._answer(event, method)

    def finish(self) -> None:
        """What the client left undone: streams it closed early and never came back to, questions
        it never answered, what it never tried; then the report is done."""
        for tid, evidence in self.cut.items():
            self.report.note(
                Finding(
                    "warning",
                    "streaming",
                    f"closed the stream of task {tid} before it settled, and never asked for it again",
                    [evidence],
                    [],
                    "read a stream until its task is final or interrupted, or follow the task "
                    "with GetTask or SubscribeToTask",
                )
            )
        if self.messages >= 2 and not self.contexts:
            self.report.note(
                Finding(
                    "info",
                    "conversation",
                    f"sent {self.messages} messages, none with a contextId: each a conversation "
                    "of its own (fine for one-off tasks; a conversation needs the contextId of "
                    f"its first answer: {STRANDS} never sends one)",
                    [],
                    [],
                    "send the contextId of the first answer with each later message of the "
                    "conversation",
                )
            )
        for tid, task in self.tasks.items():
            if task.state.interrupted:
                self.report.note(
                    Finding(
                        "warning",
                        task.state.value,
                        f"task {tid} is still {task.state.value}: the client never answered",
                        fix="answer with a message carrying the task's taskId and contextId",
                    )
                )
        rejected = [tid for tid, t in self.tasks.items() if t.state is TaskState.REJECTED]
        if rejected:
            self.seen.add("rejected")
            if not set(rejected) & self.after_end:
                self.report.note(
                    Finding(
                        "ok",
                        "rejected",
                        "took a rejected task as final (it sent nothing more to it)",
                    )
                )
        for scenario, how in SCENARIOS.items():
            if scenario not in self.seen:
                self.report.note(Finding("info", scenario, f"not tried: {how}"))
        self.report.finish()
