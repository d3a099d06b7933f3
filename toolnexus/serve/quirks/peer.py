"""The quirk peer: the agent's ASGI app answering as its quirks make it."""

from __future__ import annotations

import asyncio
import collections
import copy
from collections.abc import Awaitable, Callable, Mapping, MutableMapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from ... import _json
from ...errors import MethodNotFoundError
from ...http.guard import send_whole
from ...http.server import CUT
from ...protocol.card import CARD_PATH, LEGACY_CARD_PATH
from ...protocol.jsonrpc import error_envelope
from .personas import Persona
from .quirk import Quirk

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
App = Callable[[Scope, Receive, Send], Awaitable[None]]

MAX_BODY = 8 * 1024 * 1024
"""The most of a request the quirk layer reads to look at (the agent behind it has its own limit,
and a larger body passes through unread)."""
ASKED = 1000
"""The calls a quirk peer remembers (``QuirkPeer.asked``)."""


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
