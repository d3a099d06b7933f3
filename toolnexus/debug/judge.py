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

from dataclasses import dataclass, field
from typing import Any

from .. import _json
from ..events import TrafficEvent
from ..protocol import rest
from ..protocol.card import CARD_PATH, LEGACY_CARD_PATH
from ..protocol.dialects import parse_state
from ..protocol.extensions import requested
from ..protocol.model import TaskState
from ..protocol.operations import V03_METHODS, V10_METHODS
from .report import DoctorReport, Finding

__all__ = ["ClientJudge", "SCENARIOS", "SDK_SERVER", "JS_SERVER", "OURS", "EVERY_SERVER"]

SDK_SERVER = "a2a-sdk 1.x server"
JS_SERVER = "JS SDK 1.x server"
OURS = "toolnexus server"
EVERY_SERVER = [SDK_SERVER, JS_SERVER, OURS]
STRANDS = "AWS Strands' A2AAgent (strands-agents 1.62)"
"""A framework client whose faults the judge names: it never sends a contextId or taskId."""
FASTA2A = "pydantic's fasta2a 2.1 client"
"""A framework client whose faults the judge names: 0.3's method names with 1.0's messages."""
V02_METHODS = ("tasks/send", "tasks/sendSubscribe", "tasks/pushNotification/set")
"""A2A 0.2's method names, which no server of 0.3 or 1.0 knows."""
_SENDS = ("SendMessage", "SendStreamingMessage", "message/send", "message/stream")
_STREAMS = ("SendStreamingMessage", "message/stream", "SubscribeToTask", "tasks/resubscribe")
_ON_A_TASK = ("GetTask", "CancelTask", "SubscribeToTask", "tasks/get", "tasks/cancel")
_ON_A_TASK += ("tasks/resubscribe",)
_REST_SENDS = {"/message:send": "SendMessage", "/message:stream": "SendStreamingMessage"}
_V10_PARTS = ("text", "raw", "url", "data", "file")
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


@dataclass
class _Task:
    """What the client was told of one task."""

    state: TaskState
    context: str = ""


@dataclass
class ClientJudge:
    """Judges each exchange (:meth:`exchange`) into ``report``; :meth:`finish` at the end."""

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
        evidence = [_evidence(event)] if event is not None else []
        self.report.note(Finding(severity, check, message, evidence, list(breaks or []), fix, at))

    # -- one exchange ----------------------------------------------------------------------------------
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
        version = _header(event, "a2a-version")
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
                f"sent Content-Type {_header(event, 'content-type')!r}, not application/json",
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

    def _envelope(self, event: TrafficEvent, body: dict[str, Any]) -> bool:
        if body.get("jsonrpc") != "2.0":
            self._add(
                "error",
                "envelope",
                f'"jsonrpc" is {body.get("jsonrpc")!r}, not "2.0"',
                event,
                EVERY_SERVER,
                'send "jsonrpc": "2.0"',
            )
            return False
        if not isinstance(body.get("method"), str):
            self._add(
                "error",
                "envelope",
                '"method" is not a string',
                event,
                EVERY_SERVER,
                "name the method",
            )
            return False
        rid = body.get("id", ...)
        if rid is ...:
            self._add(
                "error",
                "envelope",
                "a request without an id is a notification: the server answers nothing",
                event,
                EVERY_SERVER,
                'give every request an "id" (a string or a number)',
            )
        elif rid is None:
            self._add(
                "info",
                "envelope",
                'an "id" of null: the servers answer it, but JSON-RPC 2.0 keeps null for '
                "answers it could not tie to a request",
                event,
                fix='give every request a string or number "id"',
            )
        elif isinstance(rid, bool) or not isinstance(rid, str | int | float):
            self._add(
                "error",
                "envelope",
                f'"id" is {type(rid).__name__}, not a string or a number',
                event,
                EVERY_SERVER,
                'give every request a string or number "id"',
            )
            return False
        return True

    def _dialect(self, event: TrafficEvent, method: str, params: Any) -> str | None:
        """The dialect of a call from its method name and version header (its faults said)."""
        version = _header(event, "a2a-version")
        if method in V02_METHODS:
            self._add(
                "error",
                "method names",
                f"{method} is A2A 0.2's name: no 0.3 or 1.0 server knows it (-32601)",
                event,
                EVERY_SERVER,
                "speak 0.3 (message/send, message/stream, tasks/get) or 1.0 (SendMessage, ...)",
                at=method,
            )
            return None
        if method in V03_METHODS:
            self.report.note(
                Finding("ok", "method names", "speaks 0.3 (message/send, tasks/get, ...)")
            )
            if version and not version.startswith("0."):
                self._add(
                    "error",
                    "version header",
                    f"a 0.3 method sent with A2A-Version: {version}",
                    event,
                    [SDK_SERVER, JS_SERVER],
                    "send no A2A-Version (or 0.3) with 0.3's methods, or speak 1.0's",
                    at=method,
                )
            return "0.3"
        if method in V10_METHODS:
            if version.startswith("1"):
                self.report.note(
                    Finding("ok", "method names", "speaks 1.0 (SendMessage, GetTask, ...)")
                )
                self.report.note(
                    Finding("ok", "version header", "sends A2A-Version: 1.0 with 1.0's methods")
                )
                return "1.0"
            return self._version_fault(event, method, version, params)
        self._add(
            "error",
            "method names",
            f"{method!r} is no A2A method (in 0.3 or 1.0)",
            event,
            EVERY_SERVER,
            "use the method names of one dialect: 1.0's SendMessage, GetTask, ... or 0.3's "
            "message/send, tasks/get, ...",
            at=method,
        )
        return None

    def _version_fault(
        self, event: TrafficEvent, method: str, version: str, params: Any = None
    ) -> str | None:
        if version:
            self._add(
                "error",
                "version header",
                f"{method} (1.0) sent with A2A-Version: {version}",
                event,
                EVERY_SERVER,
                "send A2A-Version: 1.0 with 1.0's methods",
                at=method,
            )
            return None
        legacy = _legacy_shapes(params)
        if legacy:
            self._add(
                "warning",
                "method names",
                f"{method} without A2A-Version and with 0.3's shapes: the toolnexus legacy "
                "dialect, which only toolnexus servers answer",
                event,
                [SDK_SERVER, JS_SERVER],
                "speak 1.0 (A2A-Version: 1.0 and 1.0's shapes) or 0.3 (message/send)",
                at=method,
            )
            return "legacy"
        self._add(
            "error",
            "version header",
            f"{method} (1.0) sent without A2A-Version: 1.0; servers read a call without it as 0.3",
            event,
            [SDK_SERVER, JS_SERVER],
            "send the header A2A-Version: 1.0 with every 1.0 call",
            at=method,
        )
        return "1.0"

    # -- the tenant and the extensions (§8.3.2, §4.6) --------------------------------------------------
    def _tenant(self, event: TrafficEvent, method: str, given: Any, where: str) -> None:
        """A 1.0 call's tenant (``where``: in the params, or the HTTP+JSON path) against the one
        the card's interface names: clients must send it (§8.3.2)."""
        want = self.tenant
        if not want:
            return
        place = "params.tenant" if where == "params" else f"the path (/{want}/...)"
        if given == want:
            self._add("ok", "tenant", f"names the card's tenant {want!r} in its 1.0 calls")
        elif not given:
            self._add(
                "warning",
                "tenant",
                f"a 1.0 call without the tenant {want!r} the card's interface names: a gateway "
                "that routes by tenant cannot place it, and a toolnexus server keeping a task "
                "space per tenant files it elsewhere",
                event,
                fix=f"send the interface's tenant in every 1.0 call: {place}",
                at=method,
            )
        else:
            self._add(
                "error",
                "tenant",
                f"a 1.0 call names tenant {given!r}, not the card's {want!r}",
                event,
                [OURS],
                f"send the tenant the card's interface names: {place}",
                at=method,
            )

    def _extensions(self, event: TrafficEvent, method: str, dialect: str) -> None:
        """The extensions a call asks for (``A2A-Extensions``; 0.3's ``X-A2A-Extensions``)."""
        named = requested(
            [v for k, v in event.request_headers.items() if k.lower() == "a2a-extensions"]
        )
        legacy = requested(
            [v for k, v in event.request_headers.items() if k.lower() == "x-a2a-extensions"]
        )
        if dialect == "1.0" and legacy and not named:
            self._add(
                "warning",
                "extensions",
                "asked for extensions in 0.3's X-A2A-Extensions header in a 1.0 call: 1.0 "
                "servers read A2A-Extensions",
                event,
                [SDK_SERVER],
                "name the extensions in the A2A-Extensions header (0.3's name beside it is fine)",
                at=method,
            )
        asked = named or legacy
        unknown = [u for u in asked if u not in self.extensions]
        if unknown:
            self._add(
                "info",
                "extensions",
                f"asked for {', '.join(unknown)}, which the card does not declare: no server "
                "activates it",
                event,
                fix="ask only for the extensions the card lists in capabilities.extensions",
                at=method,
            )
        if any(u in self.extensions for u in asked):
            self.seen.add("extensions")
            self._add("ok", "extensions", "asks for an extension the card declares")

    # -- a message -------------------------------------------------------------------------------------
    def _message(
        self, event: TrafficEvent, method: str, dialect: str, params: dict[str, Any]
    ) -> None:
        if method in ("SendStreamingMessage", "message/stream"):
            self.seen.add("streaming")
            if "text/event-stream" not in _header(event, "accept"):
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

    # -- the agent's answer ----------------------------------------------------------------------------
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
                self.cut[last[0]] = _evidence(event)
            elif last is not None:
                self._add("ok", "streaming", "read the stream to its end")
            return
        data = _json.loads_or_none(event.response_body)
        if enveloped:
            data = data.get("result") if _json.is_object(data) else None
        told = _told(data)
        if told is not None:
            self._tell(*told)

    def _tell(self, tid: str, state: TaskState, context: str) -> None:
        task = self.tasks.get(tid)
        if task is None:
            self.tasks[tid] = _Task(state, context)
            return
        task.state = state
        task.context = task.context or context

    # -- the end -----------------------------------------------------------------------------------------
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


def _legacy_shapes(params: Any) -> bool:
    message = params.get("message") if _json.is_object(params) else None
    if not _json.is_object(message):
        return False
    parts = message.get("parts")
    return message.get("role") == "user" and (
        not _json.is_array(parts) or any(_json.is_object(p) and "kind" in p for p in parts)
    )


def _header(event: TrafficEvent, name: str) -> str:
    return next((v for k, v in event.request_headers.items() if k.lower() == name), "")


def _evidence(event: TrafficEvent) -> str:
    sent = (event.request_body or "").replace("\n", " ")
    answer = (event.response_body or event.error or "").replace("\n", " ")
    version = _header(event, "a2a-version")
    head = f" [A2A-Version: {version}]" if version else ""
    return f"{event.method} {event.url}{head} {sent[:300]} -> {event.status or '-'} {answer[:300]}"
