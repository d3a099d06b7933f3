"""An MCP session's cassette served as an MCP server, over HTTP or stdio (:class:`MCPReplay`): each
request matched to its recorded call, and what the server sent for it played in order."""

from __future__ import annotations

import asyncio
import json
import os
import sys
import urllib.parse
from collections.abc import Callable, Coroutine
from typing import Any

from ... import _json
from ...protocol.model import new_id
from ..cassette import Cassette
from ..replay.matching import normal
from ..replay.server import MAX_DEPTH, MAX_REQUEST, ReplayServer, json_answer, plain
from .calls import OPENERS, TOO_DEEP, Call, id_of, rpc_error, server_of
from .tape import MCPTape
from .wire import disconnected, made_live, servable, sse, sse_body, sse_start

ANSWER_WAIT = 60.0
"""Seconds a replayed request to the client (elicitation, sampling, roots) waits for its answer."""
PACE = 0.02
"""Seconds between the messages of one answer: a client reads each on its own, as from a live
server (the TypeScript SDK handles a notification a tick after it reads it: one read holding a
progress notification and the answer loses the notification)."""


def match_key(match: str, body: dict[str, Any]) -> tuple[Any, ...]:
    call = Call(0, body)
    if match == "method" or call.method in OPENERS:  # a client opens with its own name and ways
        return (call.operation,)
    params = dict(call.params)
    meta = params.pop("_meta", None)
    if match == "strict" and isinstance(meta, dict):
        kept = {k: v for k, v in meta.items() if k != "progressToken"}
        if kept:
            params["_meta"] = kept
    return (call.operation, json.dumps(normal(params, match, False), sort_keys=True))


Send = Callable[[dict[str, Any]], Coroutine[Any, Any, None]]


class MCPReplay(ReplayServer[Call]):
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
        super().__init__(cassette, match)
        self.tape = MCPTape.read(self.cassette, server)
        self.answer_wait = answer_wait
        for call in self.tape.calls:
            self.queue(match_key(match, call.body), call)
        self._waiting: dict[Any, asyncio.Future[None]] = {}
        self._closing = asyncio.Event()
        self.path = "/mcp"
        first = next((x for x in self.cassette if server_of(x) == self.tape.server), None)
        if first is not None and first.method != "STDIO":
            self.path = urllib.parse.urlsplit(first.url).path or "/"

    @property
    def server(self) -> str:
        return self.tape.server

    def answer_for(self, body: dict[str, Any]) -> Call | None:
        """The recorded call that answers this request (in recorded order, the last again), or None."""
        key = match_key(self.match, body)
        return self.in_turn(key, self.queued(key))

    async def handle(self, message: Any, send: Send) -> tuple[Call | None, bool]:
        """One message from the client: ``(the call that answers it, whether it is a request)``;
        an answer to a request of the replay is taken, a notification ignored."""
        if not isinstance(message, dict):
            return None, False
        if "method" not in message:
            waiter = self._waiting.pop(id_of(message), None)
            if waiter is not None and not waiter.done():
                waiter.set_result(None)
            return None, False
        if "id" not in message:
            return None, False
        if _json.too_deep(message, MAX_DEPTH):
            await send(rpc_error(message, -32600, f"the request {TOO_DEEP}"))
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
            waiter, rpc_id = None, id_of(message)
            if rpc_id is not None:  # waited for before it is sent: an answer may come at once
                waiter = asyncio.get_running_loop().create_future()
                self._waiting[rpc_id] = waiter
            await send(made_live(message, call, live))
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
            await plain(send, 404, f"toolnexus replay: the MCP endpoint is {self.path}")
            return
        method = scope["method"]
        if method == "GET":
            await self._stream(send, receive)
            return
        if method == "DELETE":
            await plain(send, 200, "")
            return
        if method != "POST":
            await plain(send, 405, "toolnexus replay: POST, GET or DELETE")
            return
        text = await sse_body(receive)
        if text is None:
            await plain(send, 413, f"request body too large (limit {MAX_REQUEST} bytes)")
            return
        message = _json.loads_or_none(text)
        if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
            await json_answer(
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
            await plain(send, 202, "")
            return
        headers = (
            [(b"mcp-session-id", new_id().encode())] if message["method"] == "initialize" else []
        )
        if call is None:
            await json_answer(send, 200, answered[0], headers)
            return
        status = servable(call.status)
        if call.answer is None and status != 200:  # refused: as recorded
            await plain(send, status, "")
            return
        if call.answer is not None and not (call.streamed or call.messages):
            await self.play(call, message, keep)
            await json_answer(send, status, answered[-1], headers)
            return
        await sse_start(send, status, headers)

        async def frame(m: dict[str, Any]) -> None:
            await sse(send, m)

        await self.play(call, message, frame)
        if call.answer is None:  # a long stream (subscriptions/listen): open until the client goes
            await self._held(receive)
        await send({"type": "http.response.body", "body": b""})

    async def _stream(self, send: Any, receive: Any) -> None:
        said = self.tape.stream + [m for c in self.tape.calls for m in c.after]
        if not said and not any(
            x.method == "GET" for x in self.cassette if server_of(x) == self.server
        ):
            await plain(send, 405, "toolnexus replay: the recorded server offered no GET stream")
            return
        await sse_start(send, 200, [])
        for message in said:
            await sse(send, message)
        await self._held(receive)
        await send({"type": "http.response.body", "body": b""})

    async def _held(self, receive: Any) -> None:
        gone = asyncio.ensure_future(disconnected(receive))
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
            if call.method in OPENERS:
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
