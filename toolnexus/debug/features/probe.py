"""What the feature probes share (:class:`Probe`): the card, the interface they speak, the user's
headers (sent only to the host named), a message and a send in the dialect spoken."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

import httpx

from ... import _json
from ...protocol.card import AgentCard, elsewhere
from ...protocol.dialects import Dialect, parse_state
from ...protocol.model import TaskState
from ...protocol.operations import Binding
from .finder import Answer, Finder, rpc

SDK_1X = "a2a-sdk 1.x"
JS_1X = "JS SDK 1.x"
OURS = "toolnexus"


@dataclass
class Probe(Finder):
    """What the feature probes share besides: the card, the HTTP client and the user's headers
    (sent only to the host named)."""

    card: AgentCard
    http: httpx.AsyncClient
    headers: dict[str, str]
    timeout: float
    endpoint: str = ""
    dialect: Dialect = Dialect.V10

    def where(self) -> bool:
        """Pick the JSON-RPC interface the probes speak (1.0, else 0.3); False when none."""
        v1, v0 = self.card.jsonrpc_interface("1"), self.card.jsonrpc_interface("0")
        url = self.card.raw.get("url")
        if v1 is not None and v1.get("url"):
            self.endpoint, self.dialect = str(v1["url"]), Dialect.V10
        elif v0 is not None and v0.get("url"):
            self.endpoint, self.dialect = str(v0["url"]), Dialect.V03
        elif isinstance(url, str) and url:
            self.endpoint, self.dialect = url, Dialect.V03
        else:
            return False
        if self.endpoint.startswith("/") and self.card.source:
            self.endpoint = self.card.source.split("/.well-known/")[0] + self.endpoint
        return True

    @property
    def v10(self) -> bool:
        return self.dialect is Dialect.V10

    def sent_headers(self, *, credentials: bool = True, **extra: str) -> dict[str, str]:
        own = self.headers if credentials and not self._elsewhere() else {}
        out = {"content-type": "application/json", "accept": "application/json", **own}
        if self.v10:
            out["A2A-Version"] = "1.0"
        out.update(extra)
        return out

    def _elsewhere(self) -> bool:
        return elsewhere(self.endpoint, self.card.source or self.endpoint, Binding.JSONRPC)

    async def call(
        self, v10: str, v03: str | None, params: dict[str, Any], **options: Any
    ) -> Answer | None:
        """The operation named ``v10`` (``v03`` in 0.3; None: 0.3 has none) with ``params``."""
        method = v10 if self.v10 else v03
        if method is None:
            return None
        extra = options.pop("extra", {})
        headers = self.sent_headers(**options, **extra)
        return await rpc(
            self.http, self.endpoint, method, params, headers, self.timeout, self.traffic
        )

    def message(self, text: str, *parts: dict[str, Any]) -> dict[str, Any]:
        """A user message in the dialect spoken (``parts``: instead of the text, as 1.0 parts)."""
        if self.v10:
            content = list(parts) or [{"text": text}]
            return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": content}
        content = [_part_v03(p) for p in parts] or [{"kind": "text", "text": text}]
        return {"kind": "message", "messageId": str(uuid.uuid4()), "role": "user", "parts": content}

    async def send(self, text: str, *parts: dict[str, Any], **configuration: Any) -> Answer | None:
        """A blocking send (``configuration`` in 1.0's names, turned into 0.3's)."""
        config = dict(configuration)
        if not self.v10 and "returnImmediately" in config:
            config["blocking"] = not config.pop("returnImmediately")
        params: dict[str, Any] = {"message": self.message(text, *parts)}
        if config:
            params["configuration"] = config
        return await self.call("SendMessage", "message/send", params)


def _part_v03(part: dict[str, Any]) -> dict[str, Any]:
    if "text" in part:
        return {"kind": "text", "text": part["text"]}
    file: dict[str, Any] = {"bytes": part.get("raw", "")}
    if part.get("mediaType"):
        file["mimeType"] = part["mediaType"]
    if part.get("filename"):
        file["name"] = part["filename"]
    return {"kind": "file", "file": file}


def task_of(answer: Answer | None) -> dict[str, Any] | None:
    """The task an answer carries (1.0's ``{"task": ...}`` or 0.3's bare task)."""
    if answer is None or answer.got != "result" or not _json.is_object(answer.data):
        return None
    task = answer.data.get("task", answer.data)
    return task if _json.is_object(task) and isinstance(task.get("id"), str) else None


def state_of(task: dict[str, Any] | None) -> TaskState | None:
    status = task.get("status") if task is not None else None
    return parse_state(status.get("state")) if _json.is_object(status) else None
