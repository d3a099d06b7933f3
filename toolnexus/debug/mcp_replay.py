"""An MCP session's cassette replayed: served as an MCP server, or diffed against a live one.

A cassette (see :mod:`toolnexus.debug.cassette`) holds an MCP session when it was recorded by an
:class:`~toolnexus.mcp.MCPSession` (``record=``; the TUI's and notebook's MCP inspector
save it with the Wire's ``k``; ``toolnexus doctor --mcp --record``): over streamable HTTP each
POST with its answer (a JSON body, or SSE frames: the server's notifications and requests, then
the answer), over stdio each JSON-RPC message (method ``STDIO``). Both eras the official SDK
speaks are read alike: the handshake era (``initialize``, a session id, the server's questions
asked during a call) and 2026-07-28 (``server/discover``, each request on its own, questions as
``input_required`` results).

**As a server** (:class:`MCPReplay`, ``toolnexus replay session.jsonl`` and ``--stdio``): each
JSON-RPC request finds its recorded call, matched as :mod:`toolnexus.debug.replay` matches A2A
(``strict``, ``lenient``, ``method``: the method and the tool, prompt or resource it names),
``_meta`` (a progress token, the 2026-07-28 envelope) set aside as the ids a client makes anew;
and it gets what the server sent for it, in order: its notifications (a progress token made the
live request's), its requests to the client (each waits for the client's answer, up to
``answer_wait`` seconds), then the answer with the live request's id. Over HTTP on ``/mcp`` (and
the recorded path), behind the same Host/Origin guard as every served thing: an answer recorded
as SSE is served as SSE, else as JSON with its recorded status; ``initialize`` is answered with a
session id the replay makes (a recorded one was masked, and is never served); a GET opens the
stream of what the server said outside any request, kept open until the client goes; DELETE ends
the session. Of the recorded headers none is served: the content type is the replay's
(``application/json`` or ``text/event-stream``), with ``nosniff``; never a recorded cookie, CORS
header, refresh or location. Over stdio: one JSON-RPC message a line, nothing else on stdout. A
``ping`` is answered whether recorded or not; any other request that matches nothing gets the
JSON-RPC error -32603 naming it and is listed in :attr:`MCPReplay.misses`.

**Against a live server** (:func:`mcp_diff`, ``toolnexus replay session.jsonl --against URL``,
or a command line): a session in the recorded era asks the live server what was asked, the
server's questions answered as the user answered them then, and reports what changed: the server
(name, era, capabilities), the tools (added, removed, each input and output schema), resources,
templates and prompts (added, removed, changed), and each answer by its shape (keys and types;
``isError`` and error codes by value).
"""

from __future__ import annotations

import asyncio
import copy
import json
import os
import sys
import urllib.parse
from collections import deque
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from .. import _json
from ..errors import PeerError
from ..mcp.transport import endpoint_label, mcp_failure, open_client, sdk
from ..protocol.model import new_id
from ..traffic import TrafficRecorder
from .cassette import Cassette, CassetteError, Exchange, load, origin_of
from .replay import (
    MATCHES,
    MAX_DEPTH,
    MAX_REQUEST,
    Difference,
    ReplayReport,
    ReplayServer,
    _json_answer,
    _normal,
    _plain,
    _shape,
)
from .replay import _shape_diff as shape_diff

__all__ = ["MCPReplay", "MCPTape", "Call", "mcp_diff", "mcp_servers", "ANSWER_WAIT"]

ANSWER_WAIT = 60.0
"""Seconds a replayed request to the client (elicitation, sampling, roots) waits for its answer."""
PACE = 0.02
"""Seconds between the messages of one answer: a client reads each on its own, as from a live
server (the TypeScript SDK handles a notification a tick after it reads it: one read holding a
progress notification and the answer loses the notification)."""
_OPENERS = frozenset({"initialize", "server/discover"})
_NAMED = {
    "tools/call": "name",
    "prompts/get": "name",
    "resources/read": "uri",
    "resources/subscribe": "uri",
    "resources/unsubscribe": "uri",
}
_SUBSCRIPTION = "io.modelcontextprotocol/subscriptionId"
_VOLATILE = frozenset({"_meta", "requestState", "cacheScope", "ttlMs", "resultType"})
"""Keys of an answer a diff does not compare: the envelope, opaque state, caching advice."""


@dataclass
class Call:
    """One recorded request of the client and what the server sent for it."""

    seq: int
    body: dict[str, Any]
    messages: list[dict[str, Any]] = field(default_factory=list)
    """The server's notifications and requests while it ran, in order."""
    answer: dict[str, Any] | None = None
    """The JSON-RPC response (``result`` or ``error``), None when none came."""
    status: int | None = None
    """The HTTP status it was answered with (None over stdio)."""
    streamed: bool = False
    after: list[dict[str, Any]] = field(default_factory=list)
    """What the server said, outside any request, after this answer (over stdio)."""

    @property
    def method(self) -> str:
        return str(self.body.get("method", ""))

    @property
    def params(self) -> dict[str, Any]:
        params = self.body.get("params")
        return params if isinstance(params, dict) else {}

    @property
    def operation(self) -> str:
        """The method and, for a call, read or prompt, what it names: ``tools/call add``."""
        named = _NAMED.get(self.method)
        what = self.params.get(named) if named else None
        return f"{self.method} {what}" if isinstance(what, str) else self.method


@dataclass
class MCPTape:
    """One MCP server's part of a cassette, as calls (see :func:`MCPTape.read`)."""

    server: str
    calls: list[Call] = field(default_factory=list)
    stream: list[dict[str, Any]] = field(default_factory=list)
    """What the server said outside any request (a GET stream; over stdio, between requests)."""
    answers: list[tuple[str, Any]] = field(default_factory=list)
    """``(method, result)`` of each request of the server the client answered, in order."""

    @property
    def modern(self) -> bool:
        """Recorded in the 2026-07-28 era (``server/discover``), else the handshake era."""
        return any(c.method == "server/discover" for c in self.calls) or not any(
            c.method == "initialize" for c in self.calls
        )

    @classmethod
    def read(cls, cassette: Cassette, server: str | None = None) -> MCPTape:
        """The calls of the MCP server ``server`` (an origin, or a stdio server as the cassette
        names it: ``stdio: python server.py``); by default the cassette's only one.

        Raises:
            CassetteError: the cassette holds no MCP session, or several and ``server`` names none.
        """
        found = mcp_servers(cassette)
        if not found:
            raise CassetteError(f"{cassette.path} holds no MCP session to replay")
        if server is None:
            if len(found) > 1:
                raise CassetteError(
                    f"{cassette.path} talked to {len(found)} MCP servers ({', '.join(found)}): "
                    "name the one to play"
                )
            server = found[0]
        wanted = _server_of_name(server)
        if wanted not in found:
            raise CassetteError(
                f"{cassette.path} has no MCP session with {server}; it has {', '.join(found)}"
            )
        tape = cls(wanted)
        exchanges = [x for x in cassette if _server_of(x) == wanted]
        if exchanges and exchanges[0].method == "STDIO":
            tape._from_stdio(exchanges)
        else:
            tape._from_http(exchanges)
        tape._fit()
        return tape

    def _fit(self) -> None:
        """What a hostile cassette holds past :data:`MAX_DEPTH` (Python's encoder fails near 1,000
        levels): a request so deep is never matched, an answer is served as an error saying so,
        a message of the server's is left out."""
        self.calls = [c for c in self.calls if not _json.too_deep(c.body, MAX_DEPTH)]
        for call in self.calls:
            if call.answer is not None and _json.too_deep(call.answer, MAX_DEPTH):
                call.answer = _error(call.body, -32603, f"the recorded answer {_TOO_DEEP}")
            call.messages = [m for m in call.messages if not _json.too_deep(m, MAX_DEPTH)]
            call.after = [m for m in call.after if not _json.too_deep(m, MAX_DEPTH)]
        self.stream = [m for m in self.stream if not _json.too_deep(m, MAX_DEPTH)]

    def _from_http(self, exchanges: list[Exchange]) -> None:
        asked = {  # the server's requests' ids: their methods (its answer may end before them)
            _rpc_id(v): v["method"]
            for x in exchanges
            for v in _values(x)
            if _is_message(v) and _rpc_id(v) is not None
        }
        for x in exchanges:
            sent = x.request.get("json")
            values = _values(x)
            if x.method == "GET":
                self.stream += [v for v in values if _is_message(v)]
                continue
            if not isinstance(sent, dict):
                continue
            if "method" not in sent:  # the client's answer to the server's request
                if asked.get(_rpc_id(sent)):
                    self.answers.append(
                        (asked[_rpc_id(sent)], sent.get("result", sent.get("error")))
                    )
                continue
            if "id" not in sent:  # a notification of the client
                continue
            call = Call(x.seq, sent, status=x.status, streamed=x.streamed)
            for v in values:
                if _answers(v, sent["id"]):
                    call.answer = v
                elif _is_message(v):
                    call.messages.append(v)
            self.calls.append(call)
        self._input_answers()

    def _from_stdio(self, exchanges: list[Exchange]) -> None:
        spans: list[tuple[float, float, Call]] = []
        heard: list[tuple[float, dict[str, Any]]] = []
        asked: dict[Any, str] = {}
        for x in exchanges:
            sent = _json.loads_or_none(x.request_text())
            got = _json.loads_or_none(x.response_text())
            ended = _when(x)
            if isinstance(sent, dict) and "method" in sent and "id" in sent:
                call = Call(x.seq, sent, status=None)
                if isinstance(got, dict) and _answers(got, sent["id"]):
                    call.answer = got
                spans.append((ended - x.ms / 1000, ended, call))
                self.calls.append(call)
            elif isinstance(sent, dict) and "method" not in sent and "id" in sent:
                heard.append((ended, {"answer": sent}))
            elif isinstance(got, dict) and _is_message(got):
                heard.append((ended, got))
        last: Call | None = None
        for at, message in sorted(heard, key=lambda h: h[0]):
            if "answer" in message:  # the client's answer to a request of the server
                sent = message["answer"]
                if asked.get(_rpc_id(sent)):
                    self.answers.append(
                        (asked[_rpc_id(sent)], sent.get("result", sent.get("error")))
                    )
                continue
            if _rpc_id(message) is not None and isinstance(message.get("method"), str):
                asked[_rpc_id(message)] = message["method"]
            owner = _owner(message, at, spans)
            if owner is not None:
                owner.messages.append(message)
                continue
            done = [s for s in spans if s[1] <= at]
            last = max(done, key=lambda s: s[1])[2] if done else None
            (last.after if last is not None else self.stream).append(message)
        self._input_answers()

    def _input_answers(self) -> None:
        """2026-07-28: the answers a retried request carried (``inputResponses``) to the questions
        its first answer asked (``inputRequests``)."""
        asked: dict[str, str] = {}
        for call in self.calls:
            given = call.params.get("inputResponses")
            if isinstance(given, dict):
                for key, value in given.items():
                    if key in asked:
                        self.answers.append((asked.pop(key), value))
            result = (call.answer or {}).get("result")
            questions = result.get("inputRequests") if isinstance(result, dict) else None
            if isinstance(questions, dict):
                for key, question in questions.items():
                    if isinstance(question, dict) and isinstance(question.get("method"), str):
                        asked[key] = question["method"]


def mcp_servers(cassette: Cassette) -> list[str]:
    """The MCP servers a cassette talked to: an HTTP origin whose exchanges open an MCP session
    (``initialize``, ``server/discover``) or carry ``MCP-Protocol-Version``, and each stdio server."""
    found: dict[str, None] = {}
    for x in cassette:
        if x.method == "STDIO" or x.rpc_method in _OPENERS or _mcp_headers(x):
            found[_server_of(x)] = None
    return list(found)


def _mcp_headers(x: Exchange) -> bool:
    return any(str(k).lower() == "mcp-protocol-version" for k in x.request.get("headers") or {})


def _server_of(x: Exchange) -> str:
    return x.url if x.method == "STDIO" else origin_of(x.url)


def _server_of_name(name: str) -> str:
    return name if name.startswith("stdio:") else (origin_of(name) or name.rstrip("/"))


def _values(x: Exchange) -> list[Any]:
    if x.streamed:  # frames a list (a hostile cassette's other value: none)
        frames = x.response.get("frames")
        return list(frames) if isinstance(frames, list) else []
    return [x.response["json"]] if "json" in x.response else []


_TOO_DEEP = f"nests deeper than {MAX_DEPTH} levels: toolnexus replay serves none so deep"


def _error(message: dict[str, Any], code: int, why: str) -> dict[str, Any]:
    """A JSON-RPC error answering ``message``."""
    return {"jsonrpc": "2.0", "id": _rpc_id(message), "error": {"code": code, "message": why}}


def _servable(status: int | None) -> int:
    """A recorded HTTP status as the replay serves it: one of 200-599 that may carry a body, else
    200 (a hostile cassette's 101 claimed a protocol switch, its 304 lost the answer, its 999
    broke the server's answer)."""
    if status is None or not 200 <= status <= 599 or status in (204, 205, 304):
        return 200
    return status


def _rpc_id(message: dict[str, Any]) -> str | int | None:
    """A JSON-RPC message's id when it may be one (a string or an integer; a hostile cassette's or
    client's object, array or boolean is none), else None."""
    rpc_id = message.get("id")
    return rpc_id if isinstance(rpc_id, str | int) and not isinstance(rpc_id, bool) else None


def _object(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


def _is_message(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("method"), str)


def _answers(value: Any, rpc_id: Any) -> bool:
    return (
        isinstance(value, dict)
        and "method" not in value
        and ("result" in value or "error" in value)
        and value.get("id") == rpc_id
    )


def _when(x: Exchange) -> float:
    """When an exchange ended (its line's ``time``), in seconds; 0 when it says nothing."""
    try:
        return datetime.fromisoformat(x.time.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return float(x.seq)


def _owner(
    message: dict[str, Any], at: float, spans: list[tuple[float, float, Call]]
) -> Call | None:
    """The request a server message over stdio was about: the one its progress token or
    subscription names, else the latest one sent that had not been answered yet."""
    params = _object(message.get("params"))
    token = params.get("progressToken")
    named = _object(params.get("_meta")).get(_SUBSCRIPTION)
    for _, _, call in spans:
        meta = _object(call.params.get("_meta"))
        if (token is not None and meta.get("progressToken") == token) or (
            named is not None and call.body.get("id") == named
        ):
            return call
    if named is not None:  # a listen stream's (its id named anew in the cassette after this line)
        spans = [s for s in spans if s[2].method == "subscriptions/listen"] or spans
    pending = [s for s in spans if s[0] <= at <= s[1]]
    return max(pending, key=lambda s: s[0])[2] if pending else None


# -- matching -------------------------------------------------------------------------------------
def _key(match: str, body: dict[str, Any]) -> tuple[Any, ...]:
    call = Call(0, body)
    if match == "method" or call.method in _OPENERS:  # a client opens with its own name and ways
        return (call.operation,)
    params = dict(call.params)
    meta = params.pop("_meta", None)
    if match == "strict" and isinstance(meta, dict):
        kept = {k: v for k, v in meta.items() if k != "progressToken"}
        if kept:
            params["_meta"] = kept
    return (call.operation, json.dumps(_normal(params, match, False), sort_keys=True))


# -- the replay server ----------------------------------------------------------------------------
Send = Callable[[dict[str, Any]], Coroutine[Any, Any, None]]


class MCPReplay(ReplayServer):
    """Serves an MCP session's cassette as an MCP server, over HTTP or stdio (see the module).

    Args:
        cassette: a :class:`Cassette` or the path of one.
        match: ``"strict"``, ``"lenient"`` or ``"method"``.
        server: which recorded MCP server to play when the cassette holds several (an origin, or
            the ``stdio: ...`` name it has); by default the only one.
        answer_wait: seconds a replayed request to the client waits for its answer.

    Raises:
        CassetteError: the cassette cannot be read or holds no such MCP session.
        ValueError: an unknown ``match``.
    """

    def __init__(
        self,
        cassette: Cassette | str | os.PathLike[str],
        *,
        match: str = "lenient",
        server: str | None = None,
        answer_wait: float = ANSWER_WAIT,
    ) -> None:
        if match not in MATCHES:
            raise ValueError(f"match must be one of {', '.join(MATCHES)}, not {match!r}")
        self.cassette = cassette if isinstance(cassette, Cassette) else load(cassette)
        self.tape = MCPTape.read(self.cassette, server)
        self.match = match
        self.answer_wait = answer_wait
        self._queues: dict[tuple[Any, ...], list[Call]] = {}
        for call in self.tape.calls:
            self._queues.setdefault(_key(match, call.body), []).append(call)
        self._used: dict[tuple[Any, ...], int] = {}
        self._waiting: dict[Any, asyncio.Future[None]] = {}
        self._closing = asyncio.Event()
        self.served: list[tuple[str, Call]] = []
        """``(operation, recorded call)`` of each request answered, in order."""
        self.misses: list[str] = []
        """The requests no recorded call matched (``"tools/call nope"`` ...)."""
        self.path = "/mcp"
        first = next((x for x in self.cassette if _server_of(x) == self.tape.server), None)
        if first is not None and first.method != "STDIO":
            self.path = urllib.parse.urlsplit(first.url).path or "/"

    @property
    def server(self) -> str:
        return self.tape.server

    def answer_for(self, body: dict[str, Any]) -> Call | None:
        """The recorded call that answers this request (in recorded order, the last again), or None."""
        key = _key(self.match, body)
        queue = self._queues.get(key)
        if not queue:
            return None
        used = self._used.get(key, 0)
        self._used[key] = used + 1
        return queue[min(used, len(queue) - 1)]

    async def handle(self, message: Any, send: Send) -> tuple[Call | None, bool]:
        """One message from the client: ``(the call that answers it, whether it is a request)``;
        an answer to a request of the replay is taken, a notification ignored."""
        if not isinstance(message, dict):
            return None, False
        if "method" not in message:
            waiter = self._waiting.pop(_rpc_id(message), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
            return None, False
        if "id" not in message:
            return None, False
        if _json.too_deep(message, MAX_DEPTH):
            await send(_error(message, -32600, f"the request {_TOO_DEEP}"))
            return None, True
        call = self.answer_for(message)
        op = Call(0, message).operation
        if call is None:
            if message.get("method") == "ping":
                await send({"jsonrpc": "2.0", "id": message["id"], "result": {}})
            else:
                self.misses.append(op)
                why = f"toolnexus replay: no recorded MCP request matches {op} (match={self.match})"
                await send(
                    {
                        "jsonrpc": "2.0",
                        "id": message["id"],
                        "error": {"code": -32603, "message": why},
                    }
                )
            return None, True
        self.served.append((op, call))
        return call, True

    async def play(self, call: Call, live: dict[str, Any], send: Send) -> None:
        """What the server sent for ``call``, made the live request's: its notifications, its
        requests (each waiting for the client's answer), then the answer."""
        for message in call.messages:
            waiter, rpc_id = None, _rpc_id(message)
            if rpc_id is not None:  # waited for before it is sent: an answer may come at once
                waiter = asyncio.get_running_loop().create_future()
                self._waiting[rpc_id] = waiter
            await send(_made_live(message, call, live))
            if waiter is not None:
                try:
                    await asyncio.wait_for(waiter, self.answer_wait)
                except TimeoutError:
                    self._waiting.pop(rpc_id, None)
            await asyncio.sleep(PACE)
        if call.answer is not None:
            await send({**call.answer, "id": live.get("id")})

    # -- over HTTP ----------------------------------------------------------------------------------
    async def answer(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["path"].rstrip("/") not in {self.path.rstrip("/"), "/mcp"}:
            await _plain(send, 404, f"toolnexus replay: the MCP endpoint is {self.path}")
            return
        method = scope["method"]
        if method == "GET":
            await self._stream(send, receive)
            return
        if method == "DELETE":
            await _plain(send, 200, "")
            return
        if method != "POST":
            await _plain(send, 405, "toolnexus replay: POST, GET or DELETE")
            return
        text = await _body(receive)
        if text is None:
            await _plain(send, 413, f"request body too large (limit {MAX_REQUEST} bytes)")
            return
        message = _json.loads_or_none(text)
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            await _json_answer(
                send,
                400,
                {
                    "jsonrpc": "2.0",
                    "id": None,
                    "error": {"code": -32700, "message": "not a JSON-RPC message"},
                },
            )
            return
        answered: list[dict[str, Any]] = []

        async def keep(m: dict[str, Any]) -> None:
            answered.append(m)

        call, request = await self.handle(message, keep)
        if not request:
            await _plain(send, 202, "")
            return
        headers = (
            [(b"mcp-session-id", new_id().encode())] if message["method"] == "initialize" else []
        )
        if call is None:
            await _json_answer(send, 200, answered[0], headers)
            return
        status = _servable(call.status)
        if call.answer is None and status != 200:  # refused: as recorded
            await _plain(send, status, "")
            return
        if call.answer is not None and not (call.streamed or call.messages):
            await self.play(call, message, keep)
            await _json_answer(send, status, answered[-1], headers)
            return
        await _sse_start(send, status, headers)

        async def frame(m: dict[str, Any]) -> None:
            await _sse(send, m)

        await self.play(call, message, frame)
        if call.answer is None:  # a long stream (subscriptions/listen): open until the client goes
            await self._held(receive)
        await send({"type": "http.response.body", "body": b""})

    async def _stream(self, send: Any, receive: Any) -> None:
        said = self.tape.stream + [m for c in self.tape.calls for m in c.after]
        if not said and not any(
            x.method == "GET" for x in self.cassette if _server_of(x) == self.server
        ):
            await _plain(send, 405, "toolnexus replay: the recorded server offered no GET stream")
            return
        await _sse_start(send, 200, [])
        for message in said:
            await _sse(send, message)
        await self._held(receive)
        await send({"type": "http.response.body", "body": b""})

    async def _held(self, receive: Any) -> None:
        gone = asyncio.ensure_future(_disconnected(receive))
        closing = asyncio.ensure_future(self._closing.wait())
        try:
            await asyncio.wait({gone, closing}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            for task in (gone, closing):
                task.cancel()
            await asyncio.gather(gone, closing, return_exceptions=True)

    def served_at(self, base: str) -> str:
        return base.rstrip("/") + self.path

    async def start(self, addr: str | int | None = "127.0.0.1:0") -> str:
        """Serve over HTTP on ``addr`` (loopback, a free port by default); returns the endpoint's URL."""
        self._closing = asyncio.Event()
        return await super().start(addr)

    async def stop(self) -> None:
        self._closing.set()
        await super().stop()

    # -- over stdio ---------------------------------------------------------------------------------
    async def serve_stdio(
        self, reader: asyncio.StreamReader | None = None, out: Any = None
    ) -> None:
        """Serve over stdio (``reader``, ``out``: the process's own by default) until the client
        closes its end: one JSON-RPC message a line; nothing else is written to ``out``."""
        if reader is None:
            reader = asyncio.StreamReader(limit=MAX_REQUEST)
            loop = asyncio.get_running_loop()
            await loop.connect_read_pipe(
                lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer
            )
        target = out if out is not None else sys.stdout.buffer
        lock = asyncio.Lock()
        tasks: set[asyncio.Task[None]] = set()

        async def write(message: dict[str, Any]) -> None:
            async with lock:
                target.write(json.dumps(message, ensure_ascii=False).encode() + b"\n")
                target.flush()

        stream = list(self.tape.stream)  # what the server said outside requests: once open

        async def answer(call: Call, message: dict[str, Any]) -> None:
            await self.play(call, message, write)
            if call.method in _OPENERS:
                while stream:
                    await write(stream.pop(0))
            for said in call.after:
                await write(said)

        try:
            while True:
                try:
                    line = await reader.readline()
                except ValueError:  # a line past the limit: its end is read and dropped
                    await write(
                        {
                            "jsonrpc": "2.0",
                            "id": None,
                            "error": {
                                "code": -32700,
                                "message": f"a message past {MAX_REQUEST} bytes",
                            },
                        }
                    )
                    continue
                if not line:
                    break
                if not line.strip():
                    continue
                message = _json.loads_or_none(line)
                if not isinstance(message, dict):
                    await write(
                        {
                            "jsonrpc": "2.0",
                            "id": None,
                            "error": {"code": -32700, "message": "not a JSON-RPC message"},
                        }
                    )
                    continue
                call, _ = await self.handle(message, write)
                if call is not None:
                    task = asyncio.ensure_future(answer(call, message))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
        finally:
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)


def _made_live(message: dict[str, Any], call: Call, live: dict[str, Any]) -> dict[str, Any]:
    """A recorded server message for ``call`` as it goes to the live request: its progress token
    and the subscription it names are the live request's."""
    params = message.get("params")
    if not isinstance(params, dict):
        return message
    out = copy.deepcopy(message)
    live_meta = _object(_object(live.get("params")).get("_meta"))
    if "progressToken" in params and "progressToken" in live_meta:
        out["params"]["progressToken"] = live_meta["progressToken"]
    meta = out["params"].get("_meta")
    if isinstance(meta, dict) and _SUBSCRIPTION in meta and call.method == "subscriptions/listen":
        meta[_SUBSCRIPTION] = live.get("id")
    return out


async def _body(receive: Any) -> str | None:
    chunks, size = [], 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return ""
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > MAX_REQUEST:
            return None
        chunks.append(chunk)
        if not message.get("more_body"):
            return b"".join(chunks).decode("utf-8", "replace")


async def _disconnected(receive: Any) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _sse_start(send: Any, status: int, headers: list[tuple[bytes, bytes]]) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/event-stream"),
                (b"x-content-type-options", b"nosniff"),
                *headers,
            ],
        }
    )


async def _sse(send: Any, message: dict[str, Any]) -> None:
    data = json.dumps(message, ensure_ascii=False).encode("utf-8")
    await send(
        {
            "type": "http.response.body",
            "body": b"event: message\ndata: " + data + b"\n\n",
            "more_body": True,
        }
    )


# -- against a live server ------------------------------------------------------------------------
_LISTS = {
    "tools/list": ("tools", "name"),
    "resources/list": ("resources", "uri"),
    "resources/templates/list": ("resourceTemplates", "uriTemplate"),
    "prompts/list": ("prompts", "name"),
}


async def mcp_diff(
    cassette: Cassette | str | os.PathLike[str],
    target: str | list[str],
    *,
    headers: Mapping[str, str] | None = None,
    env: dict[str, str] | None = None,
    server: str | None = None,
    timeout: float = 30.0,
    bus: Any = None,
) -> ReplayReport:
    """Ask the live MCP server at ``target`` (a URL, or a stdio command line as a list) what the
    cassette's session asked, in the recorded era, and report what changed (see the module).

    Raises:
        CassetteError: the cassette cannot be read or holds no such MCP session.
    """
    tape_file = cassette if isinstance(cassette, Cassette) else load(cassette)
    tape = MCPTape.read(tape_file, server)
    where = endpoint_label(target)
    report = ReplayReport(str(tape_file.path), where)
    recorder = TrafficRecorder(bus, peer=where)
    for name, value in (headers or {}).items():
        recorder.secret(name, value)
    answers: dict[str, deque[Any]] = {}
    for method, result in tape.answers:
        answers.setdefault(method, deque()).append(result)
    client_options = _answering(answers)
    mode = "auto" if tape.modern else "legacy"
    differ = _Differ(report)
    try:
        async with open_client(
            target,
            recorder,
            timeout,
            headers=dict(headers or {}),
            env=env,
            mode=mode,
            cache=None,
            **client_options,
        ) as client:
            for call in _asked(tape.calls):
                report.exchanges += 1
                await differ.one(client, call, tape, timeout)
    except PeerError as exc:
        report.differences.append(Difference(0, "connect", "unanswered", "", "a session", str(exc)))
    except Exception as exc:  # noqa: BLE001 - the live server failed the session: that is the finding
        report.differences.append(
            Difference(0, "connect", "unanswered", "", "a session", mcp_failure(exc, recorder))
        )
    masked = sorted(
        {
            k
            for x in tape_file
            if _server_of(x) == tape.server
            for k, v in (x.request.get("headers") or {}).items()
            if "***" in str(v)
            and k.lower() != "mcp-session-id"
            and k.lower() not in {h.lower() for h in headers or {}}
        }
    )
    report.notes += [
        f"the recorded requests carried the secret header {name!r} (masked): pass it again"
        for name in masked
    ]
    return report


def _asked(calls: list[Call]) -> list[Call]:
    """The calls a diff asks again: each request but a retry (2026-07-28: the SDK retries by
    itself) and the listen stream, each with the final answer of its retries."""
    out: list[Call] = []
    for call in calls:
        if call.method == "subscriptions/listen":
            continue
        if "requestState" in call.params and out and out[-1].operation == call.operation:
            out[-1] = Call(out[-1].seq, out[-1].body, call.messages, call.answer, call.status)
            continue
        out.append(call)
    return out


def _answering(answers: dict[str, deque[Any]]) -> dict[str, Any]:
    """The client's callbacks that answer the server's questions as they were answered then
    (a question not answered then is declined, or refused)."""
    types = sdk().types

    def take(method: str) -> Any:
        queue = answers.get(method)
        return queue.popleft() if queue else None

    async def elicited(context: Any, params: Any) -> Any:
        given = take("elicitation/create")
        if isinstance(given, dict) and "action" in given:
            return types.ElicitResult.model_validate(given)
        return types.ElicitResult(action="decline")

    async def sampled(context: Any, params: Any) -> Any:
        given = take("sampling/createMessage")
        if isinstance(given, dict) and "role" in given:
            return types.CreateMessageResult.model_validate(given)
        return types.ErrorData(code=-1, message="not answered in the recording")

    async def rooted(context: Any) -> Any:
        given = take("roots/list")
        return types.ListRootsResult.model_validate(
            given if isinstance(given, dict) else {"roots": []}
        )

    return {
        "elicitation_callback": elicited,
        "sampling_callback": sampled,
        "list_roots_callback": rooted,
    }


class _Differ:
    def __init__(self, report: ReplayReport) -> None:
        self.report = report

    def add(self, call: Call, what: str, path: str, recorded: str, live: str) -> None:
        self.report.differences.append(
            Difference(call.seq, call.operation, what, path, recorded, live)
        )

    async def one(self, client: Any, call: Call, tape: MCPTape, timeout: float) -> None:
        types = sdk().types

        if call.method in _OPENERS:
            self.opener(client, call, tape)
            return
        recorded = (call.answer or {}).get("result")
        recorded_error = (call.answer or {}).get("error")
        try:
            live = await asyncio.wait_for(self.ask(client, call), timeout)
        except TimeoutError:
            self.add(call, "unanswered", "", "an answer", f"none within {timeout:g} s")
            return
        except Exception as exc:  # noqa: BLE001 - a protocol error is an answer too
            code = getattr(getattr(exc, "error", None), "code", None)
            if isinstance(recorded_error, dict):
                if code is not None and recorded_error.get("code") != code:
                    self.add(call, "error", "code", str(recorded_error.get("code")), str(code))
            else:
                self.add(call, "error", "", "a result", f"an error: {mcp_failure(exc)}")
            return
        if live is _UNASKED:
            self.report.notes.append(
                f"#{call.seq} {call.operation}: not asked again (a diff asks lists, calls, reads, prompts, completions and ping)"
            )
            self.report.exchanges -= 1
            return
        if isinstance(recorded_error, dict):
            self.add(call, "error", "", f"the error {recorded_error.get('code')}", "a result")
            return
        live_value = (
            live.model_dump(by_alias=True, exclude_none=True, mode="json")
            if isinstance(live, types.Result) or hasattr(live, "model_dump")
            else live
        )
        if call.method in _LISTS:
            self.listing(call, recorded, live_value)
            return
        if call.method == "tools/call" and isinstance(recorded, dict):
            was, now = bool(recorded.get("isError")), bool(live_value.get("isError"))
            if was != now:
                self.add(call, "error", "isError", str(was).lower(), str(now).lower())
        self.shapes(call, recorded, live_value)

    async def ask(self, client: Any, call: Call) -> Any:
        p, m = call.params, call.method
        if m == "ping":
            return await client.send_ping()
        if m == "tools/call":
            return await client.call_tool(str(p.get("name", "")), p.get("arguments") or {})
        if m == "resources/read":
            return await client.read_resource(str(p.get("uri", "")))
        if m == "prompts/get":
            return await client.get_prompt(str(p.get("name", "")), p.get("arguments") or {})
        if m in _LISTS and not p.get("cursor"):
            fetch = {
                "tools/list": client.list_tools,
                "resources/list": client.list_resources,
                "resources/templates/list": client.list_resource_templates,
                "prompts/list": client.list_prompts,
            }[m]
            return await fetch()
        if m == "completion/complete":
            types = sdk().types

            ref = p.get("ref") or {}
            kind = (
                types.PromptReference
                if ref.get("type") == "ref/prompt"
                else types.ResourceTemplateReference
            )
            return await client.complete(
                kind.model_validate(ref),
                p.get("argument") or {},
                (p.get("context") or {}).get("arguments"),
            )
        return _UNASKED

    def opener(self, client: Any, call: Call, tape: MCPTape) -> None:
        result = (call.answer or {}).get("result") or {}
        info = (
            result.get("serverInfo")
            or ((result.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo"))
            or {}
        )
        live_info = client.server_info
        name = getattr(live_info, "name", "") if live_info is not None else ""
        if info.get("name") and info.get("name") != name:
            self.add(call, "server", "name", str(info.get("name")), name or "none")
        version = str(client.protocol_version)
        was = result.get("protocolVersion") or ",".join(result.get("supportedVersions") or [])
        if was and version not in str(was).split(","):
            self.add(call, "server", "protocol version", str(was), version)
        live_caps = client.server_capabilities.model_dump(
            by_alias=True, exclude_none=True, mode="json"
        )
        caps = result.get("capabilities") or {}
        for name_ in sorted(set(caps) | set(live_caps)):
            if name_ not in live_caps:
                self.add(call, "server", f"capabilities.{name_}", "declared", "missing")
            elif name_ not in caps:
                self.add(call, "server", f"capabilities.{name_}", "absent", "added")

    def listing(self, call: Call, recorded: Any, live: Any) -> None:
        field_name, key = _LISTS[call.method]
        kind = (
            call.method.split("/")[0] if call.method != "resources/templates/list" else "templates"
        )
        was = {
            str(i.get(key)): i
            for i in (recorded or {}).get(field_name) or []
            if isinstance(i, dict)
        }
        now = {
            str(i.get(key)): i for i in (live or {}).get(field_name) or [] if isinstance(i, dict)
        }
        for name in sorted(set(was) - set(now)):
            self.add(call, kind, name, "present", "removed")
        for name in sorted(set(now) - set(was)):
            self.add(call, kind, name, "absent", "added")
        for name in sorted(set(was) & set(now)):
            for part in ("inputSchema", "outputSchema", "arguments", "mimeType", "description"):
                a, b = was[name].get(part), now[name].get(part)
                if _canon(a) == _canon(b):
                    continue
                what = "schema" if part.endswith("Schema") else kind
                changes: list[tuple[str, Any, Any]] = []
                _changes(_stripped(a), _stripped(b), f"{name}.{part}", changes)
                for path, before, after in changes[:MAX_CHANGES]:
                    self.add(call, what, path, _brief(before), _brief(after))
                if len(changes) > MAX_CHANGES:
                    self.add(
                        call,
                        what,
                        f"{name}.{part}",
                        "...",
                        f"{len(changes) - MAX_CHANGES} more changes",
                    )

    def shapes(self, call: Call, recorded: Any, live: Any) -> None:
        found: list[tuple[str, str, str]] = []
        a, b = _shape(_stripped(recorded)), _shape(_stripped(live))
        shape_diff(a, b, "", found)
        for path, was, now in found:
            self.add(call, "shape", path, was, now)


_UNASKED = object()
MAX_CHANGES = 5
"""The changes of one schema, prompt or resource a diff lists (then how many more)."""


def _stripped(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stripped(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_stripped(v) for v in value]
    return value


def _changes(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]]) -> None:
    """Each place two JSON values differ: ``(path, recorded, live)``, None for absent."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            _changes(a.get(k), b.get(k), f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _changes(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append((path, a, b))


def _canon(value: Any) -> str:
    return json.dumps(_stripped(value), sort_keys=True)


def _brief(value: Any) -> str:
    text = "absent" if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."
