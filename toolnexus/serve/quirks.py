"""Peers that misbehave on purpose: ``toolnexus serve --quirks NAME`` (``A2AConfig.quirks``) serves
the agent as one of the peers the doctor knows from the field, so that whoever writes an A2A client
can test it against them before a user meets them.

A quirk is a layer over the real agent, outside its A2A endpoint: the tasks, skills, streams and
errors are the agent's own, and the quirk changes only what the peer it copies changed on the
wire. Nine are *personas* (the card, the method names and the answers of another kind of peer;
one at a time):

- ``0.3-only``: an a2a-sdk 0.3 server, most agents in the field;
- ``legacy``: a toolnexus port in another language (``SendMessage`` and ``GetTask`` only);
- ``hybrid``: fasta2a 2.1 (pydantic-ai) as it was seen: 0.3's method names answered in 1.0's
  shapes, timestamps without a zone, a stream that ends without its artifact;
- the frameworks' servers (issue 58), each as its source writes the wire: ``langgraph``
  (langgraph-api 0.16.7: a stream of mixed dialects, the words as cumulative status messages),
  ``strands`` and ``strands-compliant`` (strands-agents 1.62.0: the words as status-message
  deltas; or appends while ``submitted``), ``gemini-cli`` (0.25.2: the words as status messages
  only, the turn ending ``input-required``), ``beeai`` (0.1.85: the reply in the status; every
  task failing after one cancel) and ``maf`` (Microsoft Agent Framework's card on the a2a-sdk 1.3
  server: 0.3 promised, not answered).

The others combine with any persona:

- ``slow[=SECONDS]``: a send the caller waits on (blocking, or a stream) answers that late;
- ``drop-streams``: every stream is cut after its first event, the connection closed mid-body;
- ``content-type``: streams answered as ``application/x-ndjson``, one JSON answer a line.

:data:`QUIRKS` is the one registry (the CLI, its help and the docs read it); each entry says the
real peer it comes from and the official clients it broke there (``docs/guide.md`` has the
table, with what our client does). gRPC is not bent: the quirks are HTTP's.
"""

from __future__ import annotations

import asyncio
import collections
import copy
import re
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, NamedTuple

from .. import _json
from ..errors import ConfigError, MethodNotFoundError, RPCError, TaskNotCancelableError
from ..http.guard import send_whole
from ..http.server import CUT
from ..protocol.card import CARD_PATH, LEGACY_CARD_PATH
from ..protocol.jsonrpc import error_envelope
from ..protocol.model import new_id
from ..protocol.operations import LEGACY_METHODS, V03_METHODS, V10_METHODS

__all__ = ["QUIRKS", "Quirk", "QuirkPeer", "Asked", "quirks_named"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

SLOW_FOR = 6.0
"""Seconds ``slow`` holds a send by default: past the 5 s the official SDK clients wait for an
answer unless told otherwise (httpx's default)."""
MAX_BODY = 8 * 1024 * 1024
"""The most of a request the quirk layer reads to look at (the agent behind it has its own limit,
and a larger body passes through unread)."""
ASKED = 1000
"""The calls a quirk peer remembers (``QuirkPeer.asked``)."""
_ZONE = re.compile(r"(?:[Zz]|[+-]\d\d:\d\d)$")


class Persona:
    """How one kind of peer differs on the wire: its card, the method names it knows, the paths it
    serves, and how its answers are spelled. The default is the agent as it is."""

    def card(self, card: dict[str, Any]) -> dict[str, Any]:
        return card

    def method(self, name: str) -> tuple[str, str | None] | None:
        """The method the agent is asked instead of ``name``, and the ``A2A-Version`` header to ask
        it with (None: the caller's); None when this peer does not know ``name`` (-32601)."""
        return name, None

    def serves(self, path: str) -> bool:
        """Whether this peer answers at ``path`` (the card and ``POST /`` are always served)."""
        return True

    def refusal(self, name: str) -> RPCError | None:
        """The error this peer answers ``name`` with before the agent is asked (None: none)."""
        return None

    def answer(self, result: Any) -> Any:
        """A JSON-RPC result (a whole answer or one stream event's) as this peer spells it; None
        drops a stream event."""
        return result

    def stream(self) -> Callable[[Any], list[Any]]:
        """One stream's rewriting: each event's result as the events this peer sends for it
        (none, one, or several), in order; made anew for every stream (it may keep what it saw)."""

        def each(result: Any) -> list[Any]:
            out = self.answer(result)
            return [] if out is None else [out]

        return each


class _V03Only(Persona):
    """An a2a-sdk 0.3 server: the 0.3 card (``url``, ``protocolVersion`` 0.3.0, no
    ``supportedInterfaces``), 0.3's method names only, 0.3's HTTP+JSON routes under ``/v1/``."""

    def card(self, card: dict[str, Any]) -> dict[str, Any]:
        out = {k: v for k, v in card.items() if k != "supportedInterfaces"}
        out["protocolVersion"] = "0.3.0"
        return out

    def method(self, name: str) -> tuple[str, str | None] | None:
        return (name, "") if name in V03_METHODS else None

    def serves(self, path: str) -> bool:
        return path.startswith("/v1/")


class _Legacy(Persona):
    """A toolnexus port in another language (upstream toolnexus 0.21, its C#, Rust, Go and JS
    ports): a 0.3.0 card with only a ``url``, no streaming, ``SendMessage`` and ``GetTask`` answered
    in the legacy shapes whatever the version header, everything else -32601."""

    def card(self, card: dict[str, Any]) -> dict[str, Any]:
        keep = ("name", "description", "url", "version", "defaultInputModes", "defaultOutputModes")
        out: dict[str, Any] = {k: card[k] for k in keep if k in card}
        out["protocolVersion"] = "0.3.0"
        out["capabilities"] = {"streaming": False, "pushNotifications": False}
        out["skills"] = card.get("skills", [])
        return out

    def method(self, name: str) -> tuple[str, str | None] | None:
        known = name in LEGACY_METHODS and name in ("SendMessage", "GetTask")
        return (name, "") if known else None

    def serves(self, path: str) -> bool:
        return False


class _Hybrid(Persona):
    """fasta2a 2.1 (pydantic-ai) as its answers were captured: a 1.0 card without ``url``; the 0.3 method
    names and the 1.0 ones alike, every answer in 1.0's shapes; ``status.timestamp`` without a
    zone; a stream whose artifact never comes (the reply is only on the task, for a get), its
    last status update marked ``final`` as 0.3 does."""

    def card(self, card: dict[str, Any]) -> dict[str, Any]:
        drop = ("url", "preferredTransport", "additionalInterfaces")
        out = {k: v for k, v in card.items() if k not in drop}
        interfaces = card.get("supportedInterfaces")
        out["supportedInterfaces"] = [
            i
            for i in (interfaces if _json.is_array(interfaces) else [])
            if _json.is_object(i)
            and i.get("protocolBinding") == "JSONRPC"
            and str(i.get("protocolVersion", "")).startswith("1")
        ]
        out["protocolVersion"] = "1.0"
        return out

    def method(self, name: str) -> tuple[str, str | None] | None:
        row = V03_METHODS.get(name) or V10_METHODS.get(name)
        return (row.v10, "1.0") if row is not None else None

    def serves(self, path: str) -> bool:
        return False

    def answer(self, result: Any) -> Any:
        if _json.is_object(result):
            if "artifactUpdate" in result:
                return None
            update = result.get("statusUpdate")
            if _json.is_object(update) and _final(update.get("status")):
                result = {"statusUpdate": {**update, "final": True}}
        return _without_zones(result)


def _final(status: Any) -> bool:
    if not _json.is_object(status):
        return False
    state = status.get("state")
    return isinstance(state, str) and state.endswith(
        ("COMPLETED", "CANCELED", "FAILED", "REJECTED", "INPUT_REQUIRED", "AUTH_REQUIRED")
    )


def _without_zones(value: Any) -> Any:
    """``value`` with every ``timestamp`` written without its zone (``Z`` or an offset)."""
    if _json.is_object(value):
        return {
            k: _ZONE.sub("", v) if k == "timestamp" and isinstance(v, str) else _without_zones(v)
            for k, v in value.items()
        }
    if _json.is_array(value):
        return [_without_zones(v) for v in value]
    return value


# The field's frameworks as servers (issue 58), each as its version was seen on the wire (their
# sources: docs/guide.md's table names the file each shape was read from). The agent behind
# answers in one dialect (the persona's ``method``); each rewrites what the agent streams, frame
# by frame: ``_update`` reads a frame of either dialect, ``_Words`` follows a streamed artifact's
# text (appended pieces, or a close that replaces them whole).

_WORKING = {"TASK_STATE_WORKING", "working"}
_LOWER = {
    "TASK_STATE_SUBMITTED": "submitted",
    "TASK_STATE_WORKING": "working",
    "TASK_STATE_INPUT_REQUIRED": "input-required",
    "TASK_STATE_AUTH_REQUIRED": "auth-required",
    "TASK_STATE_COMPLETED": "completed",
    "TASK_STATE_CANCELED": "canceled",
    "TASK_STATE_FAILED": "failed",
    "TASK_STATE_REJECTED": "rejected",
}
_ENDED = {v for v in _LOWER.values() if v not in ("submitted", "working")}


def _update(result: Any) -> tuple[str, dict[str, Any], bool]:
    """A stream frame's kind (task, message, status-update, artifact-update), its body, and
    whether it was 1.0's (wrapped) rather than 0.3's (``kind``)."""
    if not _json.is_object(result):
        return "", {}, False
    for wrapper, kind in (
        ("task", "task"),
        ("message", "message"),
        ("statusUpdate", "status-update"),
        ("artifactUpdate", "artifact-update"),
    ):
        body = result.get(wrapper)
        if _json.is_object(body):
            return kind, body, True
    return str(result.get("kind", "")), result, False


def _state(body: Mapping[str, Any]) -> str:
    status = body.get("status")
    state = status.get("state") if _json.is_object(status) else None
    return state if isinstance(state, str) else ""


def _text_of(artifact: Any) -> str:
    parts = artifact.get("parts") if _json.is_object(artifact) else None
    return "".join(
        p["text"]
        for p in (parts if _json.is_array(parts) else [])
        if _json.is_object(p) and isinstance(p.get("text"), str)
    )


def _reply_of(task: Mapping[str, Any]) -> str:
    """The text of a task's artifacts."""
    artifacts = task.get("artifacts")
    return "".join(_text_of(a) for a in (artifacts if _json.is_array(artifacts) else []))


class _Words:
    """A streamed reply's text as the agent sends it: appended pieces, or a piece that replaces
    what came before (a close with the whole text: ``append: false, lastChunk: true``)."""

    def __init__(self) -> None:
        self.text = ""

    def take(self, body: Mapping[str, Any]) -> tuple[str, bool]:
        """One artifact update: (what it adds to the text, whether it is the last); the text is
        then :attr:`text`. A replacement that does not continue the text adds all of it."""
        piece = _text_of(body.get("artifact"))
        before = self.text
        self.text = before + piece if body.get("append") else piece
        added = self.text[len(before) :] if self.text.startswith(before) else self.text
        return added, bool(body.get("lastChunk"))


def _said(text: str, ids: Mapping[str, Any], v10: bool) -> dict[str, Any]:
    """An agent's text message, as a 0.3 SDK (or 1.0) server writes one: a new id each time."""
    return {
        "kind": "message",
        "role": "ROLE_AGENT" if v10 else "agent",
        "parts": [{"kind": "text", "text": text}],
        "messageId": new_id(),
        "taskId": ids.get("taskId", ids.get("id", "")),
        "contextId": ids.get("contextId", ""),
    }


def _status(
    body: Mapping[str, Any], state: str, message: Any = None, **more: Any
) -> dict[str, Any]:
    """A 0.3-shaped status update (``kind``, ``final``) about the task ``body`` is about."""
    status: dict[str, Any] = {"state": state}
    if message is not None:
        status["message"] = message
    old = body.get("status")
    if _json.is_object(old) and "timestamp" in old:
        status["timestamp"] = old["timestamp"]
    return {
        "kind": "status-update",
        "taskId": body.get("taskId", ""),
        "contextId": body.get("contextId", ""),
        "status": status,
        "final": more.pop("final", False),
        **more,
    }


def _words_in_status(result: Any, words: _Words) -> Any:
    """A task frame (a stream's first, or a subscription's) as a peer that says its words as
    status messages holds it: no artifact; the text so far, if any, its status message."""
    kind, body, v10 = _update(result)
    if kind != "task":
        return result
    words.text = _reply_of(body)
    task = {k: v for k, v in body.items() if k != "artifacts"}
    if words.text and not _final(body.get("status")) and _state(body) not in _ENDED:
        task["status"] = {**(body.get("status") or {}), "message": _said(words.text, body, v10)}
    return {"task": task} if v10 else task


class _Strands(_V03Only):
    """AWS Strands 1.62 (``strands-agents``, on a2a-sdk 0.3.26), ``A2AServer(agent)`` by
    default (``strands/multiagent/a2a/executor.py``): each piece of the reply a ``working``
    status update carrying it as an agent message (a delta, a new message each), never an
    artifact until the end; then the whole text as one artifact ``agent_response`` (no
    ``append``, no ``lastChunk``), then ``completed``."""

    def stream(self) -> Callable[[Any], list[Any]]:
        words = _Words()

        def each(result: Any) -> list[Any]:
            kind, body, _ = _update(result)
            if kind == "status-update" and _state(body) in _WORKING:
                return []  # only the pieces say working
            if kind != "artifact-update":
                return [_words_in_status(result, words)]
            added, last = words.take(body)
            out = [_status(body, "working", _said(added, body, False))] if added else []
            if last:
                artifact = {
                    "artifactId": new_id(),
                    "name": "agent_response",
                    "parts": [{"kind": "text", "text": words.text}],
                }
                out.append({**_ids(body), "kind": "artifact-update", "artifact": artifact})
            return out

        return each


def _ids(body: Mapping[str, Any]) -> dict[str, Any]:
    return {"taskId": body.get("taskId", ""), "contextId": body.get("contextId", "")}


class _StrandsCompliant(_V03Only):
    """AWS Strands 1.62 with ``A2AServer(agent, enable_a2a_compliant_streaming=True)``, its
    recommended mode: the reply as artifact appends to one ``agent_response`` artifact (the first
    ``append: false``), closed by an empty ``append: true, lastChunk: true`` piece, then
    ``completed``; the task never says ``working`` (it is ``submitted`` while the words come)."""

    def stream(self) -> Callable[[Any], list[Any]]:
        words = _Words()
        artifact_id = new_id()
        sent = False

        def piece(body: Mapping[str, Any], text: str, **flags: bool) -> dict[str, Any]:
            artifact = {
                "artifactId": artifact_id,
                "name": "agent_response",
                "parts": [{"kind": "text", "text": text}],
            }
            return {**_ids(body), "kind": "artifact-update", "artifact": artifact, **flags}

        def each(result: Any) -> list[Any]:
            nonlocal sent
            kind, body, _ = _update(result)
            if kind == "status-update" and _state(body) in _WORKING:
                return []
            if kind == "task":  # its artifact is this peer's, the text so far
                words.text = _reply_of(body)
                sent = bool(words.text)
                task = {k: v for k, v in body.items() if k != "artifacts"}
                if sent:
                    task["artifacts"] = [piece(body, words.text)["artifact"]]
                return [task]
            if kind != "artifact-update":
                return [result]
            added, last = words.take(body)
            out: list[Any] = []
            if last and not sent:  # one piece only: the whole text, closed
                return [piece(body, words.text, lastChunk=True)]
            if added:
                out.append(piece(body, added, append=sent))
                sent = True
            if last:
                out.append(piece(body, "", append=True, lastChunk=True))
            return out

        return each


class _GeminiCli(_V03Only):
    """The Gemini CLI's A2A server 0.25.2 (npm ``@google/gemini-cli-a2a-server``, on the JS
    SDK 0.3; ``dist/src/agent/task.js``, ``executor.js``): every status update carries
    ``metadata.coderAgent.kind``; the reply's pieces are ``working`` status updates whose agent
    message is the piece (``text-content``); no artifact; a turn ends ``input-required``,
    ``final: true``, with no message (``state-change``), the reply only in the status messages.
    A task read whole (a blocking send, a get) is so too: ``input-required``, no artifact, the
    reply an agent message in its history."""

    @staticmethod
    def _meta(kind: str) -> dict[str, Any]:
        return {"coderAgent": {"kind": kind}, "model": "gemini-2.5-pro"}

    def answer(self, result: Any) -> Any:
        if not (_json.is_object(result) and result.get("kind") == "task"):
            return result
        if result.get("status", {}).get("state") != "completed":
            return result
        text = _reply_of(result)
        history = list(result.get("history") or [])
        if text:
            history.append(_said(text, result, False))
        out = {k: v for k, v in result.items() if k != "artifacts"}
        return {
            **out,
            "status": {**result["status"], "state": "input-required"},
            "history": history,
        }

    def stream(self) -> Callable[[Any], list[Any]]:
        words = _Words()

        def each(result: Any) -> list[Any]:
            kind, body, _ = _update(result)
            if kind == "artifact-update":
                added, _ = words.take(body)
                if not added:
                    return []
                said = _said(added, body, False)
                return [_status(body, "working", said, metadata=self._meta("text-content"))]
            if kind != "status-update":
                return [_words_in_status(self.answer(result), words)]
            if _state(body) == "completed":
                return [
                    _status(body, "input-required", final=True, metadata=self._meta("state-change"))
                ]
            return [{**body, "metadata": self._meta("state-change")}]

        return each


class _BeeAI(_V03Only):
    """BeeAI 0.1.85 (``beeai-framework[a2a]``, on a2a-sdk 0.3.26;
    ``beeai_framework/adapters/a2a/serve/executors/``): no stream of words: the whole reply is the
    ``completed`` status's message, with no artifact. And its bug: a cancel aborts the executor's
    one shared ``AbortController`` (the cancel itself refused, -32002, the task still working),
    so that every task after it fails "Action has been aborted"."""

    ABORTED = "Action has been aborted"

    def __init__(self) -> None:
        self.aborted = False

    def refusal(self, name: str) -> RPCError | None:
        if name in ("tasks/cancel", "CancelTask"):
            self.aborted = True
            return TaskNotCancelableError("Task cannot be canceled - current state: working")
        return None

    def _ended(self, body: Mapping[str, Any], text: str) -> dict[str, Any]:
        """A finished task's status as BeeAI says it: the reply in the message."""
        status = dict(body.get("status") or {})
        if self.aborted and status.get("state") == "completed":
            status["state"], text = "failed", self.ABORTED
        if text and status.get("state") in ("completed", "failed"):
            status["message"] = _said(text, body, False)
        return status

    def answer(self, result: Any) -> Any:
        if not (_json.is_object(result) and result.get("kind") == "task"):
            return result
        text = _reply_of(result)
        out = {k: v for k, v in result.items() if k != "artifacts"}
        return {**out, "status": self._ended(result, text)}

    def stream(self) -> Callable[[Any], list[Any]]:
        words = _Words()

        def each(result: Any) -> list[Any]:
            kind, body, _ = _update(result)
            if kind == "artifact-update":
                words.take(body)
                return []
            if kind == "status-update":
                return [{**body, "status": self._ended(body, words.text)}]
            return [self.answer(result)]

        return each


class _LangGraph(Persona):
    """LangGraph's A2A endpoint, langgraph-api 0.16.7 (``langgraph_api/api/a2a.py``): a card with
    ``url`` and one 1.0 JSON-RPC interface (no ``protocolVersion``); 0.3's method names taken as
    1.0's (then answered in 0.3's spelling). A 1.0 stream mixes dialects: the first frame 1.0's
    (``{"task": …}``), every other 0.3-shaped (``kind: status-update``, ``final``) with 1.0's enum
    names (``TASK_STATE_WORKING``, ``ROLE_AGENT``); the reply's words as ``working`` status
    messages each holding the text so far (a cumulative snapshot, a new message each), then the
    whole text as an artifact ``Assistant Response`` (``append: false, lastChunk: true``), then a
    ``completed`` update with no message."""

    def card(self, card: dict[str, Any]) -> dict[str, Any]:
        keep = ("name", "description", "url", "capabilities", "defaultInputModes")
        out: dict[str, Any] = {k: card[k] for k in keep if k in card}
        out["supportedInterfaces"] = [
            {"url": card.get("url", ""), "protocolBinding": "JSONRPC", "protocolVersion": "1.0"}
        ]
        out["defaultOutputModes"] = card.get("defaultOutputModes", [])
        out["skills"] = card.get("skills", [])
        out["version"] = "0.16.7"
        return out

    def method(self, name: str) -> tuple[str, str | None] | None:
        if name in V03_METHODS:
            return name, ""
        return (name, "1.0") if name in V10_METHODS else None

    def serves(self, path: str) -> bool:
        return False

    def stream(self) -> Callable[[Any], list[Any]]:
        words = _Words()

        def each(result: Any) -> list[Any]:
            kind, body, v10 = _update(result)
            if kind == "task":
                _, task, _ = _update(_words_in_status(result, words))
                return [{"task": {**task, "kind": "task"}} if v10 else task]
            if kind == "status-update":
                final = _final(body.get("status")) or _state(body) in _ENDED
                status = dict(body.get("status") or {})
                if _json.is_object(status.get("message")):
                    status["message"] = {"kind": "message", **status["message"]}
                return [{**body, "kind": "status-update", "status": status, "final": final}]
            if kind != "artifact-update":
                return [result]
            added, last = words.take(body)
            working = "TASK_STATE_WORKING" if v10 else "working"
            out = [_status(body, working, _said(words.text, body, v10))] if added else []
            if last:
                artifact = {
                    "artifactId": new_id(),
                    "name": "Assistant Response",
                    "parts": [{"kind": "text", "text": words.text}],
                }
                out.append(
                    {
                        **_ids(body),
                        "kind": "artifact-update",
                        "artifact": artifact,
                        "append": False,
                        "lastChunk": True,
                    }
                )
            return out

        return each


class _MafCard(Persona):
    """The a2a-sdk 1.3 server as Microsoft Agent Framework hosts it (agent-framework-a2a
    1.0.0b261022): 1.0 only, but its card still carries 0.3's ``protocolVersion: "0.3"`` and
    ``url``, so a 0.3 client that believes the card asks ``message/send`` and gets -32601."""

    def card(self, card: dict[str, Any]) -> dict[str, Any]:
        drop = ("preferredTransport", "additionalInterfaces")
        out = {k: v for k, v in card.items() if k not in drop}
        interfaces = card.get("supportedInterfaces")
        out["supportedInterfaces"] = [
            i
            for i in (interfaces if _json.is_array(interfaces) else [])
            if _json.is_object(i) and str(i.get("protocolVersion", "")).startswith("1")
        ]
        out["protocolVersion"] = "0.3"
        return out

    def method(self, name: str) -> tuple[str, str | None] | None:
        return (name, None) if name in V10_METHODS else None

    def serves(self, path: str) -> bool:
        return not path.startswith("/v1/")


@dataclass(frozen=True)
class Quirk:
    """One way a real peer departed from the protocol, served on purpose."""

    name: str
    what: str
    """What it does, in a line (``{seconds}``: its delay)."""
    origin: str
    """The real peer it copies, and where it was seen."""
    breaks: tuple[str, ...]
    """The official clients it broke there."""
    persona: Persona | None = None
    seconds: float = 0.0
    """``slow``: how late an awaited send is answered."""
    cut: bool = False
    """``drop-streams``: each stream is cut after its first event."""
    ndjson: bool = False
    """``content-type``: streams answered as NDJSON."""

    @property
    def summary(self) -> str:
        """What it does, in a line."""
        return self.what.format(seconds=self.seconds)

    @property
    def spec(self) -> str:
        """How the command line names it (``slow=2``)."""
        return (
            f"{self.name}={self.seconds:g}" if self.seconds and self.name == "slow" else self.name
        )


QUIRKS: dict[str, Quirk] = {
    q.name: q
    for q in (
        Quirk(
            "0.3-only",
            "an A2A 0.3 peer: the 0.3 card, 0.3's method names only (1.0's are -32601)",
            "a2a-sdk 0.3.x servers, most agents in the field in 2025-2026 (ADK's to_a2a, the "
            "a2a-samples); a2a-js#601 and a2a-java#1121: 1.x clients found no interface on such a card",
            ("JS SDK 1.x without legacyCompat",),
            persona=_V03Only(),
        ),
        Quirk(
            "legacy",
            "a toolnexus port: SendMessage and GetTask only, in the legacy shapes, on a 0.3.0 card",
            "upstream toolnexus 0.21 and its C#, Rust, Go and JS ports (every official client "
            "failed on them with -32601 on message/send)",
            ("a2a-sdk 1.x", "a2a-sdk 0.3", "JS SDK 1.x"),
            persona=_Legacy(),
        ),
        Quirk(
            "hybrid",
            "0.3's method names answered in 1.0's shapes, timestamps without a zone, streams "
            "without their artifact, a 1.0 card without url",
            "fasta2a 2.1 (pydantic-ai), as its answers were captured on the wire",
            ("a2a-sdk 1.x (a timestamp without a zone)", "a2a-sdk 0.3 (no url on the card)"),
            persona=_Hybrid(),
        ),
        Quirk(
            "langgraph",
            "LangGraph's mixed stream: the first frame 1.0's, the rest 0.3-shaped with 1.0's enum "
            "names; the words as working status messages, each the text so far, then one artifact",
            "langgraph-api 0.16.7 (langgraph dev), langgraph_api/api/a2a.py",
            ("a2a-sdk 1.x (frames 2 on)", "JS SDK 1.x (frames 2 on)"),
            persona=_LangGraph(),
        ),
        Quirk(
            "strands",
            "AWS Strands' default stream: the words as working status messages, one piece each, "
            "then the whole text as one artifact",
            "strands-agents 1.62.0, A2AServer(agent) (a2a-sdk 0.3.26)",
            ("clients that read only artifacts while the task works (no words until the end)",),
            persona=_Strands(),
        ),
        Quirk(
            "strands-compliant",
            "AWS Strands' compliant stream: artifact appends while the task is still submitted "
            "(never working), closed by an empty lastChunk",
            "strands-agents 1.62.0, A2AServer(agent, enable_a2a_compliant_streaming=True)",
            ("clients that show words only while the task is working",),
            persona=_StrandsCompliant(),
        ),
        Quirk(
            "gemini-cli",
            "the Gemini CLI's stream: the words as working status messages (text-content), then "
            "input-required, final, with no message and no artifact",
            "@google/gemini-cli-a2a-server 0.25.2 (the JS SDK 0.3)",
            ("clients that read the reply from artifacts or the last status (no reply at all)",),
            persona=_GeminiCli(),
        ),
        Quirk(
            "beeai",
            "BeeAI's server: no stream of words, the whole reply in the completed status's "
            "message; after one cancel (refused, -32002) every task fails 'Action has been aborted'",
            "beeai-framework 0.1.85 (a2a-sdk 0.3.26)",
            ("every client after a cancel (a shared AbortController)",),
            persona=_BeeAI(),
        ),
        Quirk(
            "maf",
            "Microsoft Agent Framework's card: 0.3's protocolVersion and url on a server that "
            "answers 1.0 only (message/send: -32601)",
            "agent-framework-a2a 1.0.0b261022 on the a2a-sdk 1.3 server",
            ("a2a-sdk 0.3 (it believes the card: -32601)",),
            persona=_MafCard(),
        ),
        Quirk(
            "slow",
            "a send the caller waits on (blocking, or a stream) is answered {seconds:g} s late",
            "LLM agents that think longer than a client waits: beeai-framework#1183 (a tool of "
            "7 s against the a2a-sdk client's 5 s httpx default), a2a-go#125 (a fixed 5 s)",
            ("a2a-sdk 1.x with its default httpx client", "a2a-go"),
            seconds=SLOW_FOR,
        ),
        Quirk(
            "drop-streams",
            "every stream is cut after its first event (the connection closed mid-body)",
            "proxies and gateways that end a long SSE response: a2a-samples#144 ('peer closed "
            "connection without sending complete message body')",
            ("a2a-sdk 1.x", "JS SDK 1.x"),
            cut=True,
        ),
        Quirk(
            "content-type",
            "streams answered as application/x-ndjson (one JSON-RPC answer a line), not SSE",
            "LiteLLM's A2A gateway, BerriAI/litellm#20278 (the a2a-sdk client: 'Expected response "
            "header Content-Type to contain text/event-stream')",
            ("a2a-sdk 1.x",),
            ndjson=True,
        ),
    )
}
"""Every quirk by name, in the order the docs list them."""


def quirks_named(specs: Sequence[str]) -> tuple[Quirk, ...]:
    """The quirks a command line or a config names (``["hybrid", "slow=2"]``; a comma-separated
    string in one item too). Raises ``ConfigError`` naming the known ones for an unknown name, a
    bad value, or two personas."""
    out: list[Quirk] = []
    for spec in (s.strip() for item in specs for s in item.split(",") if s.strip()):
        name, _, value = spec.partition("=")
        quirk = QUIRKS.get(name.strip())
        if quirk is None:
            raise ConfigError(f"no quirk {name!r}; the quirks are: {', '.join(QUIRKS)}")
        if value:
            if quirk.name != "slow":
                raise ConfigError(f"the quirk {quirk.name!r} takes no value")
            try:
                seconds = float(value)
            except ValueError:
                seconds = -1.0
            if not 0 < seconds <= 3600:
                raise ConfigError(f"slow=SECONDS takes 0 to 3600 seconds, not {value!r}")
            quirk = replace(quirk, seconds=seconds)
        out = [q for q in out if q.name != quirk.name] + [quirk]
    personas = [q.name for q in out if q.persona is not None]
    if len(personas) > 1:
        raise ConfigError(f"{' and '.join(personas)} are each a whole peer: pick one")
    return tuple(out)


class _Cut(Exception):
    """Raised to the HTTP server to end a response mid-body (``drop-streams``)."""


class Asked(NamedTuple):
    """A JSON-RPC call a quirk peer was asked, as the caller sent it."""

    method: str
    headers: dict[str, str]


@dataclass
class QuirkPeer:
    """The agent's ASGI app, answering as ``quirks`` make it (see the module docstring). ``asked``
    holds the last :data:`ASKED` JSON-RPC calls as their callers sent them (before a persona
    renamed or refused them): what a client under test really sent."""

    app: App
    quirks: Sequence[Quirk]
    persona: Persona = field(init=False)
    asked: collections.deque[Asked] = field(init=False)

    def __post_init__(self) -> None:
        self.asked = collections.deque(maxlen=ASKED)
        persona = next((q.persona for q in self.quirks if q.persona is not None), Persona())
        self.persona = copy.deepcopy(persona)  # its own: a persona may keep state (beeai)
        self.slow = max((q.seconds for q in self.quirks), default=0.0)
        self.cut = any(q.cut for q in self.quirks)
        self.ndjson = any(q.ndjson for q in self.quirks)
        self.bends = type(self.persona) is not Persona
        """A persona is in force (the card and the answers are rewritten)."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path: str = scope["path"]
        if path in (CARD_PATH, LEGACY_CARD_PATH) and scope["method"] in ("GET", "HEAD"):
            return await self._card(scope, receive, send)
        if path != "/" and not self.persona.serves(path):
            return await _reply(send, 404, {"error": f"not found: {path}"})
        body, whole = await _body(receive)
        if scope["method"] == "POST" and whole:
            headers = dict(scope["headers"])
            envelope = _json.loads_or_none(body)
            if path == "/" and _json.is_object(envelope):
                method = envelope.get("method")
                if isinstance(method, str):
                    self.asked.append(Asked(method, _text_headers(headers)))
                    refusal = self.persona.refusal(method)
                    if refusal is not None:
                        return await _reply(send, 200, error_envelope(envelope.get("id"), refusal))
                    asked = self.persona.method(method)
                    if asked is None:
                        refusal = error_envelope(envelope.get("id"), MethodNotFoundError())
                        return await _reply(send, 200, refusal)
                    name, version = asked
                    if name != method:
                        body = _json.dumps({**envelope, "method": name})
                    if version is not None:
                        headers.pop(b"a2a-version", None)
                        if version:
                            headers[b"a2a-version"] = version.encode()
                    scope = {**scope, "headers": list(headers.items())}
                    params = envelope.get("params")
                    await self._hold(method, params, headers)
            elif path.endswith(("/message:send", "/message:stream")):
                await self._hold(path.rsplit("/", 1)[1], envelope, headers)
        cut = asyncio.Event()
        await self.app(scope, _replay(body, whole, receive, cut), self._answer(send, cut))
        if cut.is_set():  # the agent has stopped: now the connection goes
            stop = scope.get("extensions", {}).get(CUT)
            if stop is None:  # not on our HTTP server: an error ends the answer there
                raise _Cut()
            stop()
            while (await receive())["type"] != "http.disconnect":
                pass  # until the server has seen it go (else it logs an unfinished answer)

    async def _hold(self, method: str, params: Any, headers: Mapping[bytes, bytes]) -> None:
        """``slow``: wait before a send the caller waits on reaches the agent."""
        if self.slow and _awaited(method, params, headers):
            await asyncio.sleep(self.slow)

    async def _card(self, scope: Scope, receive: Receive, send: Send) -> None:
        """The card as the persona writes it; always whole (its validators would be the agent's)."""
        if not self.bends:
            return await self.app(scope, receive, send)
        asked = [
            (k, v) for k, v in scope["headers"] if k not in (b"if-none-match", b"if-modified-since")
        ]
        held: dict[str, Any] = {}
        chunks: list[bytes] = []

        async def keep(message: Message) -> None:
            if message["type"] == "http.response.start":
                held.update(message)
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))

        await self.app({**scope, "method": "GET", "headers": asked}, receive, keep)
        card = _json.loads_or_none(b"".join(chunks))
        if held.get("status") != 200 or not _json.is_object(card):
            return await _reply(send, int(held.get("status", 500)), card)
        body = _json.dumps(self.persona.card(card))
        await send(
            {
                "type": "http.response.start",
                "status": 200,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", b"%d" % len(body)),
                ],
            }
        )
        await send(
            {"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body}
        )

    def _answer(self, send: Send, cut: asyncio.Event) -> Send:
        """``send`` for one answer of the agent: a JSON answer or a stream, rewritten; with
        ``drop-streams``, a stream's first event is its last (``cut`` is set, and the rest of
        the agent's answer goes nowhere)."""
        mode = ""
        pending = b""
        events = 0
        persona, bends = self.persona, self.bends
        rewrite = persona.stream()

        async def bent(message: Message) -> None:
            nonlocal mode, pending, events
            if message["type"] == "http.response.start":
                headers = dict(message.get("headers") or [])
                kind = headers.get(b"content-type", b"")
                if kind.startswith(b"text/event-stream"):
                    mode = "sse"
                    if self.ndjson:
                        headers[b"content-type"] = b"application/x-ndjson"
                    message = {**message, "headers": list(headers.items())}
                elif kind.startswith(b"application/json") and bends:
                    mode = "json"
                    headers.pop(b"content-length", None)
                    message = {**message, "headers": list(headers.items())}
                return await send(message)
            if cut.is_set():
                return
            if message["type"] != "http.response.body" or not mode:
                return await send(message)
            pending += message.get("body", b"")
            more = bool(message.get("more_body", False))
            if mode == "json":
                if more:
                    return
                data = _json.loads_or_none(pending)
                if _json.is_object(data) and "result" in data:
                    data = {**data, "result": persona.answer(data["result"])}
                    pending = _json.dumps(data)
                return await send({"type": "http.response.body", "body": pending})
            out: list[bytes] = []
            while b"\n\n" in pending:
                event, pending = pending.split(b"\n\n", 1)
                rewritten = self._event(event, rewrite)
                if rewritten is None:
                    continue
                out.append(rewritten)
                if not event.startswith(b":"):
                    events += 1
                if self.cut and events >= 1:
                    await send(
                        {"type": "http.response.body", "body": b"".join(out), "more_body": True}
                    )
                    cut.set()
                    return
            if out or not more:
                await send({"type": "http.response.body", "body": b"".join(out), "more_body": more})

        return bent

    def _event(self, event: bytes, rewrite: Callable[[Any], list[Any]]) -> bytes | None:
        """One SSE event as this peer sends it: none, or the events ``rewrite`` makes of it."""
        lines = event.split(b"\n")
        data = b"\n".join(line[6:] for line in lines if line.startswith(b"data: "))
        if not data:  # a comment (keep-alive): NDJSON has none
            return None if self.ndjson else event + b"\n\n"
        value = _json.loads_or_none(data)
        datas = [data]
        if _json.is_object(value) and "result" in value:
            datas = [_json.dumps({**value, "result": r}) for r in rewrite(value["result"])]
            if not datas:
                return None
        if self.ndjson:
            return b"".join(d + b"\n" for d in datas)
        head = b"".join(line + b"\n" for line in lines if not line.startswith(b"data: "))
        return b"".join(head + b"data: " + d + b"\n\n" for d in datas)


def _text_headers(headers: Mapping[bytes, bytes]) -> dict[str, str]:
    return {k.decode("latin-1"): v.decode("latin-1") for k, v in headers.items()}


def _awaited(method: str, params: Any, headers: Mapping[bytes, bytes]) -> bool:
    """Whether the caller waits for the task with this send: a stream, or a blocking send (0.3
    blocks unless told not to, 1.0 unless told to return at once, legacy only when told to); a
    send without a message is refused at once."""
    if not (_json.is_object(params) and _json.is_object(params.get("message"))):
        return False
    if method in ("message/stream", "SendStreamingMessage", "message:stream"):
        return True
    if method not in ("message/send", "SendMessage", "message:send"):
        return False
    config = params.get("configuration") if _json.is_object(params) else None
    config = config if _json.is_object(config) else {}
    if "returnImmediately" in config or "return_immediately" in config:
        return not (config.get("returnImmediately") or config.get("return_immediately"))
    if "blocking" in config:
        return config["blocking"] is not False
    legacy = method == "SendMessage" and b"a2a-version" not in headers
    return not legacy


async def _body(receive: Receive) -> tuple[bytes, bool]:
    """The request's body, and whether it is whole (a larger one is passed on unread past ``MAX_BODY``)."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            return b"".join(chunks), False
        chunk: bytes = message.get("body", b"")
        chunks.append(chunk)
        size += len(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), True
        if size > MAX_BODY:
            return b"".join(chunks), False


def _replay(body: bytes, whole: bool, receive: Receive, cut: asyncio.Event) -> Receive:
    """``receive`` for the agent: what was read of the body first, then whatever the client
    sends; once its answer is ``cut``, that the client has gone."""
    sent = False

    async def again() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": not whole}
        if cut.is_set():
            return {"type": "http.disconnect"}
        heard = asyncio.ensure_future(receive())
        stopped = asyncio.ensure_future(cut.wait())
        try:
            await asyncio.wait((heard, stopped), return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
            if not heard.done():
                heard.cancel()
        if heard.done() and not heard.cancelled():
            return heard.result()
        return {"type": "http.disconnect"}

    return again


async def _reply(send: Send, status: int, body: Any) -> None:
    await send_whole(send, status, b"application/json", _json.dumps(body))
