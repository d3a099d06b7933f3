"""The personas of the quirk peers: how one kind of peer differs on the wire (:class:`Persona`),
the plain ones (0.3-only, legacy, hybrid) and the parts the framework personas share."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ... import _json
from ...errors import RPCError
from ...protocol.model import new_id
from ...protocol.operations import LEGACY_METHODS, V03_METHODS, V10_METHODS

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


class V03Only(Persona):
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


class Legacy(Persona):
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


class Hybrid(Persona):
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
            if _json.is_object(update) and is_final(update.get("status")):
                result = {"statusUpdate": {**update, "final": True}}
        return _without_zones(result)


def is_final(status: Any) -> bool:
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
# by frame: ``frame_of`` reads a frame of either dialect, ``Words`` follows a streamed artifact's
# text (appended pieces, or a close that replaces them whole).

WORKING = {"TASK_STATE_WORKING", "working"}
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
ENDED = {v for v in _LOWER.values() if v not in ("submitted", "working")}


def frame_of(result: Any) -> tuple[str, dict[str, Any], bool]:
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


def state_of(body: Mapping[str, Any]) -> str:
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


def reply_of(task: Mapping[str, Any]) -> str:
    """The text of a task's artifacts."""
    artifacts = task.get("artifacts")
    return "".join(_text_of(a) for a in (artifacts if _json.is_array(artifacts) else []))


class Words:
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


def agent_message(text: str, ids: Mapping[str, Any], v10: bool) -> dict[str, Any]:
    """An agent's text message, as a 0.3 SDK (or 1.0) server writes one: a new id each time."""
    return {
        "kind": "message",
        "role": "ROLE_AGENT" if v10 else "agent",
        "parts": [{"kind": "text", "text": text}],
        "messageId": new_id(),
        "taskId": ids.get("taskId", ids.get("id", "")),
        "contextId": ids.get("contextId", ""),
    }


def status_update(
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


def words_in_status(result: Any, words: Words) -> Any:
    """A task frame (a stream's first, or a subscription's) as a peer that says its words as
    status messages holds it: no artifact; the text so far, if any, its status message."""
    kind, body, v10 = frame_of(result)
    if kind != "task":
        return result
    words.text = reply_of(body)
    task = {k: v for k, v in body.items() if k != "artifacts"}
    if words.text and not is_final(body.get("status")) and state_of(body) not in ENDED:
        task["status"] = {
            **(body.get("status") or {}),
            "message": agent_message(words.text, body, v10),
        }
    return {"task": task} if v10 else task
