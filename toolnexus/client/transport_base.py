"""What every transport of the client shares: what it uses of the client (:class:`Caller`),
the base (:class:`Transport`: an operation of the table sent, its answer handed back), and the
answers and frames read the same whichever binding they came by (a stream folded into tasks,
``_Fold``; a JSON-RPC error as its RPCError)."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from dataclasses import replace
from typing import Any, ClassVar, Protocol

import httpx

from ..errors import RPC_ERRORS, PeerError, RPCError, UnsupportedOperationError
from ..http import fetch
from ..http.fetch import AnswerTooLarge
from ..protocol.card import elsewhere
from ..protocol.dialects import Dialect, json_names, parse_message, parse_task
from ..protocol.extensions import HEADER, LEGACY_HEADER, requested
from ..protocol.model import Message, Part, Task, TaskState, TaskStatus, add_words
from ..protocol.operations import Binding, Operation
from ..protocol.stream import Fault, StreamCheck, event_of
from ..traffic import TrafficRecorder, task_id_of

__all__ = ["Caller", "Transport", "GRPC_REFUSALS", "as_task", "json_named", "rpc_error", "about"]


class Caller(Protocol):
    """What a transport uses of the client whose calls it carries (:class:`~toolnexus.client.peer.A2AClient`
    is the one there is), named here so that the transports sit below the client that picks them."""

    endpoint: str
    timeout: float
    traffic: TrafficRecorder
    headers: dict[str, str]
    credentials_sent: bool
    extensions: list[str]
    activated: list[str]
    warnings: list[str]
    """What the caller is told of a peer's departures its calls got past."""

    @property
    def peer(self) -> str: ...

    @property
    def http(self) -> httpx.AsyncClient: ...

    def request_headers(self, dialect: Dialect, stream: bool = False) -> dict[str, str]: ...

    def sent_headers(self) -> dict[str, str]: ...

    def channel_credentials(self) -> Any: ...


GRPC_REFUSALS = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED"}
"""gRPC's statuses for HTTP's refusals of credentials."""


class Transport:
    """One binding's way to a peer, for one client (its HTTP client, headers, wire log, timeout)."""

    binding: ClassVar[Binding]
    caller_dialect: ClassVar[bool] = False
    """The caller's dialect holds on this binding (JSON-RPC speaks every dialect at one URL);
    otherwise the card's interface decides it."""
    streams: ClassVar[bool] = True
    """Whether the binding has streams at all (the legacy dialect has none)."""
    push_get_needs_id: ClassVar[bool] = True
    """A push config is got by its id (the route or the request names one)."""

    def __init__(self, client: Caller, dialect: Dialect) -> None:
        self.client = client
        self.dialect = dialect

    @property
    def shapes(self) -> Dialect:
        """The dialect whose shapes calls are built in and answers read in: 1.0's, but for
        JSON-RPC (0.3's REST routes are converted to and from them, see ``protocol.rest``)."""
        return Dialect.V10

    def method(self, op: Operation) -> str | None:
        """What a call of ``op`` is named on the wire and in the log: its method in the dialect
        spoken (None: not in this dialect)."""
        return op.v03 if self.dialect is Dialect.V03 else op.v10

    def elsewhere(self, endpoint: str, named: str) -> bool:
        """Whether ``endpoint`` is on another host than the one the caller ``named``."""
        return elsewhere(endpoint, named, self.binding)

    async def call(self, op: Operation, params: dict[str, Any], *, empty_ok: bool = False) -> Any:
        raise NotImplementedError

    def stream(
        self, op: Operation, params: dict[str, Any], sent: Message | None
    ) -> AsyncGenerator[Task, None]:
        raise NotImplementedError

    async def close(self) -> None:
        """Close what the transport opened (it reopens on the next call)."""

    def _refused(self, method: str, status: int) -> PeerError | None:
        """The error of an answer refusing the credentials (401, 403; gRPC's UNAUTHENTICATED and
        PERMISSION_DENIED are their statuses), else None."""
        if status not in (401, 403):
            return None
        meaning = "authentication required" if status == 401 else "invalid credentials"
        said = f"HTTP {status}" if self.binding is not Binding.GRPC else GRPC_REFUSALS[status]
        return PeerError(
            f"{self.client.peer}: {method} answered {said} ({meaning}): check the "
            "headers/credentials",
            status=status,
        )

    def unsupported(self, op: Operation) -> UnsupportedOperationError:
        """The error for an operation this transport's dialect does not have."""
        what = "streaming" if op.streams else f"{op.key} operation"
        return UnsupportedOperationError(f"the {self.dialect.value} dialect has no {what}")


def about(params: dict[str, Any], result: Any = None) -> str | None:
    """The task a call is about, for its line on the wire log: the task its answer is or names,
    else the one its params name (a get, a cancel, an answer to a question); in any dialect."""
    return task_id_of({"params": params}, {"result": result})


def _faults(c: Caller, faults: list[Fault]) -> None:
    """Warn of a stream's faults as they come (each once)."""
    for fault in faults:
        if (note := f"{c.peer}: {fault}") not in c.warnings:
            c.warnings.append(note)


def _heard(c: Caller, given: Any) -> None:
    """Note the extensions a peer's answer names as activated (``given(name)``: a response
    header's values), when the caller asked for any."""
    if c.extensions:
        c.activated = requested([*given(HEADER), *given(LEGACY_HEADER)])


# -- answers and frames, whichever transport they came by ------------------------------------------


def rpc_error(error: Any, mask: Any = str) -> RPCError:
    """A JSON-RPC error object as the RPCError of its code (peer text masked and cut)."""
    if not isinstance(error, dict):
        return RPCError(mask(f"peer error: {error!r}"[:500]))
    code = error.get("code")
    message = mask(str(error.get("message") or "")[:2000])
    cls = RPC_ERRORS.get(code) if isinstance(code, int) else None
    if cls is None:
        err = RPCError(message or f"peer error {code}", data=error.get("data"))
        err.code = code if isinstance(code, int) else -32603
        return err
    return cls(message or None, data=error.get("data"))


def json_named(result: Any) -> Any:
    """A peer's answer with every field by its JSON name: ProtoJSON readers take the proto names
    too (``context_id`` for ``contextId``, A2A 1.0 §5.5), so this client does; a caller's own
    keys (metadata, data parts) are left as they are."""
    try:
        return json_names(result)
    except RPCError as exc:
        raise PeerError(f"the peer's answer is not readable: {exc.message}") from None


def as_task(result: Any, sent: Message | None) -> Task:
    """A send/get result as a Task: a task (wrapped or not), or a Message reply."""
    result = json_named(result)
    if isinstance(result, dict):
        if "task" in result and isinstance(result["task"], dict):
            return parse_task(result["task"])
        if "message" in result and isinstance(result["message"], dict) and "id" not in result:
            return _message_task(parse_message(result["message"], inbound=False), sent)
        if "messageId" in result and "status" not in result:
            return _message_task(parse_message(result, inbound=False), sent)
        return parse_task(result)
    raise PeerError(f"the peer answered with {type(result).__name__}, not a task or a message")


def _message_task(reply: Message, sent: Message | None) -> Task:
    """A peer that answers with a Message (no task): shown as a completed task holding it."""
    history = [sent, reply] if sent is not None else [reply]
    return Task(
        reply.task_id or "",
        reply.context_id or (sent.context_id if sent else "") or "",
        TaskStatus(TaskState.COMPLETED),
        history,
    )


class _Fold:
    """A stream's frames (any dialect) folded into the task they are about, frame by frame.

    Text streamed as appends is one text, not a part per piece. An append the task frame before
    it already holds is not added again: a peer that sends the task first and then the events
    queued meanwhile (the official SDK's subscribe) may send the last piece it applied twice,
    once in the task and once as an event (seen as a reply with one piece doubled). Only the
    first append after a task frame can be such an echo, and only when the task's artifact was
    itself made of appended pieces (more than one part) and ends with exactly that piece."""

    def __init__(self, sent: Message | None) -> None:
        self.sent = sent
        self.task: Task | None = None
        self.echo: dict[str, Part] = {}  # an artifact's last piece in the last task frame
        self.words = ""  # the text said in status messages since the state last changed
        self.snapshots: bool | None = None  # each holds the text so far (else: each a piece)
        self.check = StreamCheck()  # the stream's faults, said as warnings as they come
        self.faults: list[Fault] = []  # the last frame's
        self.ended: TaskStatus | None = None  # the first terminal status: the task's for good

    def apply(self, result: Any) -> Task:
        task, sent = self.task, self.sent
        if not isinstance(result, dict):
            raise PeerError("a stream frame is not an object")
        result = json_named(result)
        self.faults = self.check.frame(result)
        kind, body = event_of(result)
        if kind == "task":
            task = parse_task(body)
            self.echo = {a.artifact_id: a.parts[-1] for a in task.artifacts if len(a.parts) > 1}
            unfinished = not (task.state.terminal or task.state.interrupted)
            self.words = task.said if unfinished and not task.artifacts_text else ""
            self.snapshots = None
        elif kind == "message":
            msg = parse_message(body, inbound=False)
            if task is None:
                task = _message_task(msg, sent)
            else:
                task.history.append(msg)
        else:
            if task is None:
                task = Task(
                    str(body.get("taskId", "")),
                    str(body.get("contextId", "")),
                    TaskStatus(TaskState.SUBMITTED),
                    [sent] if sent else [],
                )
            if kind == "status-update":
                self._status(task, parse_task({"id": task.id, "status": body.get("status") or {}}))
            else:
                self._artifact(task, body)
        if self.ended is not None and task.status.state is not self.ended.state:
            task.status = self.ended  # a terminal state never changes: the late frame is a warning
        elif self.ended is None and task.status.state.terminal:
            self.ended = task.status
        self.task = task
        return task

    def step(self, c: Caller, result: Any) -> Task:
        """The task after the frame ``result`` (a snapshot, to hand on), the frame's faults said
        to ``c`` as warnings as they come."""
        task = self.apply(result)
        _faults(c, self.faults)
        return task.snapshot()

    def end(self, c: Caller) -> None:
        """The stream ended: what it lacked then (see :class:`StreamCheck`) said to ``c``."""
        _faults(c, self.check.end())

    def _status(self, task: Task, update: Task) -> None:
        """A status update. The words a peer says as the agent's status messages while the task
        is unfinished are one message as they come: each a piece (Strands, the Gemini CLI) or each
        the text so far (LangGraph), told apart by the second (it starts with the first: the text
        so far). When the state moves on, that message stays in the history, as the SDKs' task
        managers keep a status message, so a turn whose only words came so is still a reply (the
        Gemini CLI ends its turns input-required with no message). An update in the same state
        without a message keeps the words."""
        status, old = update.status, task.status
        if status.state is not old.state:
            if self.words and old.message is not None:
                if all(m.message_id != old.message.message_id for m in task.history):
                    task.history.append(old.message)
            self.words, self.snapshots = "", None
        message = status.message
        if message is None and status.state is old.state and self.words:
            status.message = old.message
        elif (
            message is not None
            and message.role == "agent"
            and not (status.state.terminal or status.state.interrupted)
        ):
            text = "".join(p.text or "" for p in message.parts if p.kind == "text")
            words, self.snapshots = add_words(self.words, text, self.snapshots)
            if len(words) > fetch.MAX_RESPONSE:
                raise AnswerTooLarge(
                    f"a reply streamed as status messages passed {fetch.MAX_RESPONSE:,} "
                    "characters; at most that much is kept"
                )
            self.words = words
            others = [p for p in message.parts if p.kind != "text"]
            status.message = replace(message, parts=[Part.of_text(words), *others])
        task.status = status

    def _artifact(self, task: Task, body: dict[str, Any]) -> None:
        art = parse_task({"id": task.id, "artifacts": [body.get("artifact") or {}]}).artifacts
        if not art:
            return
        new = art[0]
        echo = self.echo.pop(new.artifact_id, None)
        index = next(
            (i for i, a in enumerate(task.artifacts) if a.artifact_id == new.artifact_id), None
        )
        if index is None:
            task.artifacts.append(new)
            return
        if not body.get("append"):
            task.artifacts[index] = new
            return
        if echo is not None and new.parts == [echo]:
            return  # the piece the task frame just before already held
        same = task.artifacts[index]
        parts = list(same.parts)
        more = list(new.parts)
        if parts and more and parts[-1].kind == "text" and more[0].kind == "text":
            # a text streamed in pieces is one text, not a line per piece; bounded like an answer,
            # since each piece copies what came before
            text = (parts[-1].text or "") + (more.pop(0).text or "")
            if len(text) > fetch.MAX_RESPONSE:
                raise AnswerTooLarge(
                    f"a streamed artifact passed {fetch.MAX_RESPONSE:,} characters; at most that "
                    "much is kept"
                )
            parts[-1] = replace(parts[-1], text=text)
        # a new value: a task yielded before this frame keeps the artifact it had
        task.artifacts[index] = replace(same, parts=parts + more)
