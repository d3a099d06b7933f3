"""The frameworks' servers as personas (issue 58): each as its source writes the wire (LangGraph,
Strands, the Gemini CLI, BeeAI, Microsoft Agent Framework's card)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from ... import _json
from ...errors import RPCError, TaskNotCancelableError
from ...protocol.model import new_id
from ...protocol.operations import V03_METHODS, V10_METHODS
from .personas import (
    ENDED,
    WORKING,
    Persona,
    V03Only,
    Words,
    agent_message,
    frame_of,
    is_final,
    reply_of,
    state_of,
    status_update,
    words_in_status,
)


class Strands(V03Only):
    """AWS Strands 1.62 (``strands-agents``, on a2a-sdk 0.3.26), ``A2AServer(agent)`` by
    default (``strands/multiagent/a2a/executor.py``): each piece of the reply a ``working``
    status update carrying it as an agent message (a delta, a new message each), never an
    artifact until the end; then the whole text as one artifact ``agent_response`` (no
    ``append``, no ``lastChunk``), then ``completed``."""

    def stream(self) -> Callable[[Any], list[Any]]:
        words = Words()

        def each(result: Any) -> list[Any]:
            kind, body, _ = frame_of(result)
            if kind == "status-update" and state_of(body) in WORKING:
                return []  # only the pieces say working
            if kind != "artifact-update":
                return [words_in_status(result, words)]
            added, last = words.take(body)
            out = (
                [status_update(body, "working", agent_message(added, body, False))] if added else []
            )
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


class StrandsCompliant(V03Only):
    """AWS Strands 1.62 with ``A2AServer(agent, enable_a2a_compliant_streaming=True)``, its
    recommended mode: the reply as artifact appends to one ``agent_response`` artifact (the first
    ``append: false``), closed by an empty ``append: true, lastChunk: true`` piece, then
    ``completed``; the task never says ``working`` (it is ``submitted`` while the words come)."""

    def stream(self) -> Callable[[Any], list[Any]]:
        words = Words()
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
            kind, body, _ = frame_of(result)
            if kind == "status-update" and state_of(body) in WORKING:
                return []
            if kind == "task":  # its artifact is this peer's, the text so far
                words.text = reply_of(body)
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


class GeminiCli(V03Only):
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
        text = reply_of(result)
        history = list(result.get("history") or [])
        if text:
            history.append(agent_message(text, result, False))
        out = {k: v for k, v in result.items() if k != "artifacts"}
        return {
            **out,
            "status": {**result["status"], "state": "input-required"},
            "history": history,
        }

    def stream(self) -> Callable[[Any], list[Any]]:
        words = Words()

        def each(result: Any) -> list[Any]:
            kind, body, _ = frame_of(result)
            if kind == "artifact-update":
                added, _ = words.take(body)
                if not added:
                    return []
                said = agent_message(added, body, False)
                return [status_update(body, "working", said, metadata=self._meta("text-content"))]
            if kind != "status-update":
                return [words_in_status(self.answer(result), words)]
            if state_of(body) == "completed":
                return [
                    status_update(
                        body, "input-required", final=True, metadata=self._meta("state-change")
                    )
                ]
            return [{**body, "metadata": self._meta("state-change")}]

        return each


class BeeAI(V03Only):
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
            status["message"] = agent_message(text, body, False)
        return status

    def answer(self, result: Any) -> Any:
        if not (_json.is_object(result) and result.get("kind") == "task"):
            return result
        text = reply_of(result)
        out = {k: v for k, v in result.items() if k != "artifacts"}
        return {**out, "status": self._ended(result, text)}

    def stream(self) -> Callable[[Any], list[Any]]:
        words = Words()

        def each(result: Any) -> list[Any]:
            kind, body, _ = frame_of(result)
            if kind == "artifact-update":
                words.take(body)
                return []
            if kind == "status-update":
                return [{**body, "status": self._ended(body, words.text)}]
            return [self.answer(result)]

        return each


class LangGraph(Persona):
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
        words = Words()

        def each(result: Any) -> list[Any]:
            kind, body, v10 = frame_of(result)
            if kind == "task":
                _, task, _ = frame_of(words_in_status(result, words))
                return [{"task": {**task, "kind": "task"}} if v10 else task]
            if kind == "status-update":
                final = is_final(body.get("status")) or state_of(body) in ENDED
                status = dict(body.get("status") or {})
                if _json.is_object(status.get("message")):
                    status["message"] = {"kind": "message", **status["message"]}
                return [{**body, "kind": "status-update", "status": status, "final": final}]
            if kind != "artifact-update":
                return [result]
            added, last = words.take(body)
            working = "TASK_STATE_WORKING" if v10 else "working"
            out = (
                [status_update(body, working, agent_message(words.text, body, v10))]
                if added
                else []
            )
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


class MafCard(Persona):
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
