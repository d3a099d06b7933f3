"""A cassette's recorded answers served over HTTP (:class:`ReplayPeer`, ``toolnexus replay
session.jsonl``): each request answered with the recorded answer of a matching request."""

from __future__ import annotations

import json
import os
import re
from typing import Any

from ... import _json
from ...protocol import rest
from ..cassette import Cassette, CassetteError, Exchange, origin_of
from .matching import bounded_json, match_key, operation_of, split_url
from .server import MAX_DEPTH, MAX_REQUEST, ReplayServer, json_answer, plain

SERVED_TYPES = {
    "application/json": b"application/json; charset=utf-8",
    rest.MEDIA_TYPE: rest.MEDIA_TYPE.encode(),
}
"""The content types a replay serves as recorded (as the bytes are sent: UTF-8); any other is
served as plain text."""


class ReplayPeer(ReplayServer[Exchange]):
    """Serves a cassette's recorded answers over HTTP (see the module).

    Args:
        cassette: a :class:`Cassette` or the path of one.
        match: ``"strict"``, ``"lenient"`` or ``"method"``.
        origin: which recorded peer to play, when the cassette talked to several (an origin such as
            ``http://127.0.0.1:8000``); by default the only one.

    Raises:
        CassetteError: the cassette cannot be read, holds no exchange, or holds several peers and
            ``origin`` names none of them.
        ValueError: an unknown ``match``.
    """

    def __init__(
        self,
        cassette: Cassette | str | os.PathLike[str],
        *,
        match: str = "lenient",
        origin: str | None = None,
    ) -> None:
        super().__init__(cassette, match)
        self.origin = pick_origin(self.cassette, origin)
        self.exchanges = self.cassette.of(self.origin)
        for x in self.exchanges:
            path, query = split_url(x.url)
            body = x.request.get("json")
            self.queue(match_key(match, x.method, path, query, body, x.request_text()), x)

    def answer_for(
        self, method: str, path: str, query: str, body: Any, text: str, conditional: bool = False
    ) -> Exchange | None:
        """The recorded exchange that answers this request (in recorded order, the last again), or None.

        A recorded ``304 Not Modified`` answers only a ``conditional`` request (one that carries
        ``If-None-Match`` or ``If-Modified-Since``): to any other it would say "use the copy you
        have" to a caller that has none."""
        key = match_key(self.match, method, path, query, body, text)
        queue = self.queued(key)
        if not conditional:
            queue = [x for x in queue if x.status != 304]
        return self.in_turn(key + (conditional,), queue)

    async def answer(self, scope: Any, receive: Any, send: Any) -> None:
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_REQUEST:
                await plain(send, 413, f"request body too large (limit {MAX_REQUEST} bytes)")
                return
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        text = b"".join(chunks).decode("utf-8", "replace")
        body = bounded_json(text)
        method, path = scope["method"], scope["path"]
        query = scope.get("query_string", b"").decode("latin-1")
        conditional = any(
            name in (b"if-none-match", b"if-modified-since") for name, _ in scope["headers"]
        )
        recorded = self.answer_for(method, path, query, body, text, conditional)
        op = operation_of(method, path, body)
        rpc_id = body.get("id") if isinstance(body, dict) and "jsonrpc" in body else None
        if recorded is None:
            self.misses.append(op)
            why = f"the replay has no recorded exchange matching {op} (match {self.match})" + (
                "; started with --match method, it answers any request of the same operation"
                if self.match != "method"
                else ""
            )
            if rpc_id is not None or (isinstance(body, dict) and "jsonrpc" in body):
                await json_answer(
                    send,
                    200,
                    {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": -32603, "message": why}},
                )
            else:
                await plain(send, 404, why)
            return
        self.served.append((op, recorded))
        await self._play(send, recorded, rpc_id)

    def _rewrite(self, text: str) -> str:
        return text.replace(self.origin, self.url) if self.url and self.origin else text

    def _body(self, value: Any, rpc_id: Any) -> bytes:
        if isinstance(value, dict) and "jsonrpc" in value and rpc_id is not None:
            value = {**value, "id": rpc_id}
        text = (
            value
            if isinstance(value, str)
            else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        )
        return self._rewrite(text).encode("utf-8")

    async def _play(self, send: Any, x: Exchange, rpc_id: Any) -> None:
        response = x.response
        status = x.status
        if status is None:  # the recording saw no answer (a refused connection, a timeout)
            await plain(
                send,
                502,
                f"the replay's recorded exchange got no answer: {x.error or 'unknown'}",
            )
            return
        frames = response.get("frames")
        frames = (
            frames if isinstance(frames, list) else []
        )  # a hostile cassette's other value: none
        if not 200 <= status <= 599 or _json.too_deep([response.get("json"), frames], MAX_DEPTH):
            await plain(  # a 101 would claim a protocol switch, a 999 broke the answer
                send,
                502,
                f"the replay's recorded exchange cannot be served (status {status}, or JSON "
                f"nested past {MAX_DEPTH} levels)",
            )
            return
        headers = [(b"content-type", _served_type(x)), (b"x-content-type-options", b"nosniff")]
        if x.streamed:
            await send({"type": "http.response.start", "status": status, "headers": headers})
            for frame in frames:  # each line of a frame's text its own data line: never an event
                lines = _LINES.split(self._body(frame, rpc_id).decode("utf-8"))
                await send(
                    {
                        "type": "http.response.body",
                        "body": "".join(f"data: {line}\n" for line in lines).encode() + b"\n",
                        "more_body": True,
                    }
                )
            await send({"type": "http.response.body", "body": b""})
            return
        if "json" in response:
            content = self._body(response["json"], rpc_id)
        else:
            content = self._rewrite(str(response.get("text", ""))).encode("utf-8")
        headers.append((b"content-length", str(len(content)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": content})


def pick_origin(cassette: Cassette, origin: str | None) -> str:
    """The one recorded origin to play (see :class:`ReplayPeer`)."""
    origins = cassette.origins()
    if not origins:
        raise CassetteError(f"{cassette.path} holds no exchange to replay")
    if origin is not None:
        wanted = origin_of(origin) or origin.rstrip("/")
        if wanted not in origins:
            raise CassetteError(
                f"{cassette.path} has no exchange with {wanted}; it has {', '.join(origins)}"
            )
        return wanted
    if len(origins) > 1:
        raise CassetteError(
            f"{cassette.path} talked to {len(origins)} peers ({', '.join(origins)}): "
            "name the one to play"
        )
    return origins[0]


def _served_type(x: Exchange) -> bytes:
    """The one header a replayed answer carries from its cassette: its content type, when it is
    one an A2A peer answers with (``SERVED_TYPES``; an event stream for a streamed answer), else
    plain text. Nothing else recorded is served: a cookie would reach every server on the same
    host, CORS would open the replay to any page, a refresh or a location would send a browser
    elsewhere, an HTML type would run a cassette's script on 127.0.0.1."""
    if x.streamed:
        return b"text/event-stream"
    recorded = next(
        (
            v
            for k, v in (x.response.get("headers") or {}).items()
            if str(k).lower() == "content-type"
        ),
        "",
    )
    media = str(recorded).split(";")[0].strip().lower()
    return SERVED_TYPES.get(media, b"text/plain; charset=utf-8")


_LINES = re.compile(r"\r\n|\r|\n")
"""What ends a line in an event stream."""
