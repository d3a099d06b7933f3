"""Replay a cassette (see :mod:`toolnexus.debug.cassette`): as a peer, or against a live one.

**As a peer** (:class:`ReplayPeer`, ``toolnexus replay session.jsonl``): an HTTP server that answers
each request with the recorded answer of a matching recorded request, so a peer's behaviour can be
reproduced offline. How requests match (``match=``):

- ``"strict"``: the same HTTP method, path and body, but for the ids a client makes anew each time
  (the JSON-RPC request id and ``messageId``).
- ``"lenient"`` (the default): as strict, but ids the client made up itself (a ``contextId`` of its
  own ...), ``metadata`` and timestamps are ignored; ids the replay handed out (``task-1``) must
  still match, so two tasks are never confused.
- ``"method"``: the same operation (JSON-RPC method, HTTP+JSON route, or method and path).

Several recorded exchanges matching one request are answered in recorded order, the last one again
once they are used up (a client that polls more often than the recording did); a recorded
``304 Not Modified`` answers only a request that is conditional too. An answer carries
its recorded status and body, and of its recorded headers only its content type, when it is JSON
or an event stream (else plain text, never sniffed). The recorded
origin is rewritten to the replay's own in every answer (the card's URLs point at the replay), and
a JSON-RPC answer carries the live request's id. A request that matches nothing gets a clear error
(JSON-RPC -32603 naming the operation, or 404) and is listed in :attr:`ReplayPeer.misses`.

**Against a live peer** (:func:`diff`, ``toolnexus replay session.jsonl --against URL``): the
recorded requests are sent again, in order, ids mapped (a recorded ``task-1`` becomes the id the
live peer gave the task; each ``messageId`` is new), and each answer is compared with the recorded
one by **status**, by **shape** (keys and types; ids, timestamps and texts are not compared; the
values of ``kind``, ``role`` and error ``code`` are) and by each task's **sequence of settled
states** (input-required, auth-required and the terminal ones; submitted and working come and go
with timing). A poll whose recorded answer had settled is asked again until the live one settles
too (up to ``settle`` seconds). Secret headers were masked when recorded: pass them again
(``headers=``, ``--header``).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import urllib.parse
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field
from functools import partial
from typing import Any, Self

import httpx

from .. import _json
from ..errors import PeerError
from ..http.fetch import MAX_RESPONSE, exchange, why
from ..http.guard import HostGuard, send_whole
from ..http.server import AsgiServer
from ..protocol import rest
from ..protocol.dialects import parse_state
from ..protocol.model import INTERRUPTED, TERMINAL, new_id
from ..protocol.operations import OPERATIONS
from ..secrets import MASK
from ..traffic import sse_data
from .cassette import STABLE_ID, Cassette, CassetteError, Exchange, load, origin_of

__all__ = [
    "ReplayServer",
    "ReplayPeer",
    "diff",
    "ReplayReport",
    "Difference",
    "MATCHES",
    "pick_origin",
]

MATCHES = ("strict", "lenient", "method")
SERVED_TYPES = {
    "application/json": b"application/json; charset=utf-8",
    rest.MEDIA_TYPE: rest.MEDIA_TYPE.encode(),
}
"""The content types a replay serves as recorded (as the bytes are sent: UTF-8); any other is
served as plain text."""
MAX_REQUEST = 16 * 1024 * 1024
"""The largest request body a replay peer reads."""
_CLIENT_IDS = frozenset({"messageId"})
_ID_KEYS = frozenset({"id", "taskId", "contextId", "artifactId", "referenceTaskIds"})
_LENIENT_DROP = frozenset({"metadata", "timestamp"})
_SETTLED = frozenset(s.value for s in TERMINAL | INTERRUPTED)
_KEPT_VALUES = frozenset({"kind", "role", "code", "jsonrpc"})
_GET_OPS = frozenset({"GetTask", "tasks/get"})


# -- what a request is, for matching --------------------------------------------------------------
def _operation(method: str, path: str, body: Any) -> str:
    """The A2A operation of a request: its JSON-RPC method, its HTTP+JSON route, else method and path."""
    if isinstance(body, dict) and isinstance(body.get("method"), str) and "jsonrpc" in body:
        return body["method"]
    found = rest.match(method, path)
    return OPERATIONS[found[0]].v10 if found else f"{method} {path}"


def _normal(value: Any, match: str, envelope: bool = True) -> Any:
    """A request body with what ``match`` ignores taken out."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            if key in _CLIENT_IDS or (envelope and key == "id" and "jsonrpc" in value):
                continue
            if match == "lenient" and (
                key in _LENIENT_DROP or (key in _ID_KEYS and not _stable(item))
            ):
                continue
            out[key] = _normal(item, match, False)
        return out
    if isinstance(value, list):
        return [_normal(item, match, False) for item in value]
    return value


def _stable(value: Any) -> bool:
    if isinstance(value, list):
        return bool(value) and all(_stable(v) for v in value)
    return isinstance(value, str) and bool(STABLE_ID.match(value))


def _key(match: str, method: str, path: str, query: str, body: Any, text: str) -> tuple[Any, ...]:
    op = _operation(method, path, body)
    if match == "method":
        return (method, op)
    content = json.dumps(_normal(body, match), sort_keys=True) if body is not None else text
    return (method, path, query, op, content)


def _split(url: str) -> tuple[str, str]:
    parts = urllib.parse.urlsplit(url)
    return parts.path or "/", parts.query


def _loads(text: str) -> Any:
    """``text`` as JSON when it is an object or array nesting at most 200 levels (what is compared
    is walked recursively), else None."""
    value = _json.loads_or_none(text)
    return None if value is not None and _json.too_deep(value, 200) else value


# -- the replay peer ------------------------------------------------------------------------------
class ReplayServer:
    """What a replay served over HTTP is, A2A's and MCP's alike: an ASGI app that answers the
    lifespan and hands each HTTP request to :meth:`answer`, on a loopback server of its own behind
    the Host/Origin guard, started and stopped (also as ``async with``)."""

    url = ""
    """Where it is served (after :meth:`start`)."""
    _server: AsgiServer | None = None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] == "http":
            await self.answer(scope, receive, send)

    async def answer(self, scope: Any, receive: Any, send: Any) -> None:
        """Answer one HTTP request."""
        raise NotImplementedError

    def served_at(self, base: str) -> str:
        """The URL given out for a server at ``base`` (the server's own by default)."""
        return base

    async def start(self, addr: str | int | None = "127.0.0.1:0") -> str:
        """Serve on ``addr`` (loopback, a free port by default); returns the URL."""
        server: AsgiServer | None = None

        def bound() -> tuple[str, int]:
            assert server is not None
            return server.host, server.port

        server = AsgiServer(HostGuard(self, bound), addr)
        await server.start()
        self._server = server
        self.url = self.served_at(server.url)
        return self.url

    async def stop(self) -> None:
        server, self._server = self._server, None
        if server is not None:
            await server.stop()

    async def __aenter__(self) -> Self:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class ReplayPeer(ReplayServer):
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
        if match not in MATCHES:
            raise ValueError(f"match must be one of {', '.join(MATCHES)}, not {match!r}")
        self.cassette = cassette if isinstance(cassette, Cassette) else load(cassette)
        self.origin = pick_origin(self.cassette, origin)
        self.match = match
        self.exchanges = self.cassette.of(self.origin)
        self._queues: dict[tuple[Any, ...], list[Exchange]] = {}
        for x in self.exchanges:
            path, query = _split(x.url)
            body = x.request.get("json")
            self._queues.setdefault(
                _key(match, x.method, path, query, body, x.request_text()), []
            ).append(x)
        self._used: dict[tuple[Any, ...], int] = {}
        self.served: list[tuple[str, Exchange]] = []
        """``(operation, recorded exchange)`` of each request answered, in order."""
        self.misses: list[str] = []
        """The requests no recorded exchange matched (``"POST / SendMessage"`` ...)."""

    def answer_for(
        self, method: str, path: str, query: str, body: Any, text: str, conditional: bool = False
    ) -> Exchange | None:
        """The recorded exchange that answers this request (in recorded order, the last again), or None.

        A recorded ``304 Not Modified`` answers only a ``conditional`` request (one that carries
        ``If-None-Match`` or ``If-Modified-Since``): to any other it would say "use the copy you
        have" to a caller that has none."""
        key = _key(self.match, method, path, query, body, text) + (conditional,)
        queue = self._queues.get(key[:-1])
        if queue and not conditional:
            queue = [x for x in queue if x.status != 304]
        if not queue:
            return None
        used = self._used.get(key, 0)
        self._used[key] = used + 1
        return queue[min(used, len(queue) - 1)]

    async def answer(self, scope: Any, receive: Any, send: Any) -> None:
        chunks, size = [], 0
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > MAX_REQUEST:
                await _plain(send, 413, f"request body too large (limit {MAX_REQUEST} bytes)")
                return
            chunks.append(chunk)
            if not message.get("more_body"):
                break
        text = b"".join(chunks).decode("utf-8", "replace")
        body = _loads(text)
        method, path = scope["method"], scope["path"]
        query = scope.get("query_string", b"").decode("latin-1")
        conditional = any(
            name in (b"if-none-match", b"if-modified-since") for name, _ in scope["headers"]
        )
        recorded = self.answer_for(method, path, query, body, text, conditional)
        op = _operation(method, path, body)
        rpc_id = body.get("id") if isinstance(body, dict) and "jsonrpc" in body else None
        if recorded is None:
            self.misses.append(op)
            why = f"the replay has no recorded exchange matching {op} (match {self.match})" + (
                "; started with --match method, it answers any request of the same operation"
                if self.match != "method"
                else ""
            )
            if rpc_id is not None or (isinstance(body, dict) and "jsonrpc" in body):
                await _json_answer(
                    send,
                    200,
                    {"jsonrpc": "2.0", "id": rpc_id, "error": {"code": -32603, "message": why}},
                )
            else:
                await _plain(send, 404, why)
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
            await _plain(
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
            await _plain(  # a 101 would claim a protocol switch, a 999 broke the answer
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


_NOSNIFF = (b"x-content-type-options", b"nosniff")


async def _plain(send: Any, status: int, text: str) -> None:
    await send_whole(send, status, b"text/plain; charset=utf-8", text.encode("utf-8"), _NOSNIFF)


MAX_DEPTH = 200
"""The deepest JSON a replay serves from a cassette (Python's encoder fails near 1,000 levels)."""
_LINES = re.compile(r"\r\n|\r|\n")
"""What ends a line in an event stream."""


async def _json_answer(
    send: Any, status: int, value: Any, headers: list[tuple[bytes, bytes]] | None = None
) -> None:
    body = json.dumps(value, ensure_ascii=False).encode("utf-8")
    await send_whole(send, status, b"application/json", body, _NOSNIFF, *(headers or []))


# -- against a live peer --------------------------------------------------------------------------
@dataclass
class Difference:
    """One way a live answer differs from the recorded one."""

    seq: int
    operation: str
    what: str  # "status" | "shape" | "states" | "error" | "unanswered"
    path: str
    recorded: str
    live: str

    def text(self) -> str:
        where = f" at {self.path}" if self.path else ""
        return f"#{self.seq} {self.operation}: {self.what}{where}: recorded {self.recorded}, live {self.live}"


@dataclass
class ReplayReport:
    """What :func:`diff` found: ``ok`` when no live answer differs from the recorded one."""

    cassette: str
    url: str
    exchanges: int = 0
    differences: list[Difference] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    states: dict[str, dict[str, list[str]]] = field(default_factory=dict)
    """Each recorded task's settled states: ``{"task-1": {"recorded": [...], "live": [...]}}``."""

    @property
    def ok(self) -> bool:
        return not self.differences

    def text(self) -> str:
        head = f"{self.url}: {self.exchanges} exchange(s) replayed from {self.cassette}: " + (
            "the same" if self.ok else f"{len(self.differences)} difference(s)"
        )
        return "\n".join(
            [head]
            + [f"  {d.text()}" for d in self.differences]
            + [f"  note: {n}" for n in self.notes]
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "cassette": self.cassette,
            "url": self.url,
            "ok": self.ok,
            "exchanges": self.exchanges,
            "differences": [asdict(d) for d in self.differences],
            "notes": self.notes,
            "states": self.states,
        }


def _shape(value: Any, key: str = "") -> Any:
    """What is compared of an answer: keys and value types, and the values of a few keys."""
    if isinstance(value, dict):
        return {k: _shape(v, k) for k, v in value.items() if k != "state"}
    if isinstance(value, list):
        merged: Any = None
        for item in value:
            merged = _merge(merged, _shape(item, key))
        return ["list", merged]
    if key in _KEPT_VALUES and isinstance(value, (str, int)) and not isinstance(value, bool):
        return f"={value}"
    return {str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}.get(
        type(value), "?"
    )


def _merge(a: Any, b: Any) -> Any:
    if a is None:
        return b
    if isinstance(a, dict) and isinstance(b, dict):
        return {
            k: _merge(a.get(k), b.get(k)) if k in a and k in b else a.get(k, b.get(k))
            for k in {**a, **b}
        }
    if isinstance(a, list) and isinstance(b, list):
        return ["list", _merge(a[1], b[1])]
    if a == b:
        return a
    return "|".join(sorted({*_alternatives(a), *_alternatives(b)}))


def _alternatives(shape: Any) -> list[str]:
    if isinstance(shape, str):
        return shape.split("|")
    return ["object" if isinstance(shape, dict) else "array"]


def _describe(shape: Any) -> str:
    if isinstance(shape, dict):
        return "an object"
    if isinstance(shape, list):
        return "an array"
    return shape[1:] if shape.startswith("=") else f"a {shape}"


def _shape_diff(recorded: Any, live: Any, path: str, out: list[tuple[str, str, str]]) -> None:
    if isinstance(recorded, dict) and isinstance(live, dict):
        for k in recorded:
            where = f"{path}.{k}" if path else k
            if k not in live:
                out.append((where, "present", "missing"))
            else:
                _shape_diff(recorded[k], live[k], where, out)
        for k in live:
            if k not in recorded:
                out.append((f"{path}.{k}" if path else k, "absent", "added"))
    elif isinstance(recorded, list) and isinstance(live, list):
        if recorded[1] is not None and live[1] is not None:
            _shape_diff(recorded[1], live[1], f"{path}[]", out)
    elif recorded != live:
        out.append((path or "(body)", _describe(recorded), _describe(live)))


def _states(value: Any, out: list[tuple[str, str]]) -> None:
    """``(task id, state)`` of every task or status update in an answer, in order."""
    if isinstance(value, dict):
        status = value.get("status")
        task = value.get("taskId") or (value.get("id") if isinstance(status, dict) else None)
        if (
            isinstance(status, dict)
            and isinstance(task, str)
            and isinstance(status.get("state"), str)
        ):
            state = parse_state(
                status["state"]
            )  # either dialect's spelling; an unknown one as it came
            out.append((task, state.value if state is not None else status["state"]))
        for item in value.values():
            if isinstance(item, (dict, list)) and item is not status:
                _states(item, out)
    elif isinstance(value, list):
        for item in value:
            _states(item, out)


def _pair_ids(recorded: Any, live: Any, ids: dict[str, str]) -> None:
    """Learn the live id of each stable id in a recorded answer, from the same place in the live one."""
    if isinstance(recorded, dict) and isinstance(live, dict):
        for k, v in recorded.items():
            if k in live:
                _pair_ids(v, live[k], ids)
    elif isinstance(recorded, list) and isinstance(live, list):
        for a, b in zip(recorded, live, strict=False):
            _pair_ids(a, b, ids)
    elif (
        isinstance(recorded, str)
        and isinstance(live, str)
        and STABLE_ID.match(recorded)
        and recorded not in ids
    ):
        ids[recorded] = live


def _answers(x_response: Mapping[str, Any]) -> list[Any]:
    """The recorded answer's JSON values (its body, or its frames)."""
    if "frames" in x_response:
        return list(x_response.get("frames") or [])
    return [x_response["json"]] if "json" in x_response else []


def _last_state(values: list[Any]) -> str | None:
    """The last task state these answers name, or None."""
    found: list[tuple[str, str]] = []
    for value in values:
        _states(value, found)
    return found[-1][1] if found else None


_Answer = tuple[int | None, str | None, bool, list[Any]]
"""A live answer: its status, why there was none, whether it streamed, its JSON values."""


async def diff(
    cassette: Cassette | str | os.PathLike[str],
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    origin: str | None = None,
    timeout: float = 30.0,
    settle: float = 30.0,
    http: httpx.AsyncClient | None = None,
) -> ReplayReport:
    """Send a cassette's recorded requests to the live peer at ``url`` and compare its answers.

    Args:
        cassette: a :class:`Cassette` or the path of one.
        url: the live peer's origin or base URL (each recorded path is sent there).
        headers: sent with every request, over the recorded ones (secrets were masked when recorded).
        origin: which recorded peer, when the cassette talked to several.
        timeout: seconds for one answer (a stream: the whole of it).
        settle: seconds a poll is repeated until the live answer settles as the recorded one had.

    Raises:
        CassetteError: the cassette cannot be read or names no such peer.
    """
    tape = cassette if isinstance(cassette, Cassette) else load(cassette)
    played = pick_origin(tape, origin)
    base = url.rstrip("/")
    live_origin = origin_of(base) or base
    report = ReplayReport(str(tape.path), base)
    ids: dict[str, str] = {}
    recorded_states: dict[str, list[str]] = {}
    live_states: dict[str, list[str]] = {}
    given = {k.lower(): v for k, v in (headers or {}).items()}
    own = http is None
    client = http or httpx.AsyncClient(timeout=timeout)

    try:
        for x in tape.of(played):
            report.exchanges += 1
            op, target, content = _live_request(x, live_origin, ids)
            sent = _sent_headers(x.request.get("headers", {}), given, report.notes)
            recorded_values = _answers(x.response)
            polls = settle if op in _GET_OPS and _last_state(recorded_values) in _SETTLED else 0.0
            status, error, streamed, live_values = await _settled(
                partial(_ask, client, x.method, target, sent, content, timeout), polls, x.status
            )
            if error is not None or x.status is None:
                if (error is not None) != (x.status is None):
                    report.differences.append(
                        Difference(
                            x.seq,
                            op,
                            "unanswered",
                            "",
                            x.error or str(x.status),
                            error or str(status),
                        )
                    )
                continue
            if (
                status != x.status
            ):  # a refusal, or another answer altogether: its shape says nothing more
                report.differences.append(
                    Difference(x.seq, op, "status", "", str(x.status), str(status))
                )
                continue
            for a, b in zip(recorded_values, live_values, strict=False):
                _pair_ids(a, b, ids)
            shapes = _shapes_between(x.streamed, streamed, recorded_values, live_values)
            report.differences += [Difference(x.seq, op, "shape", p, a, b) for p, a, b in shapes]
            _settled_states(recorded_values, recorded_states)
            _settled_states(live_values, live_states, {v: k for k, v in ids.items()})
    finally:
        if own:
            await client.aclose()
    _compare_states(report, recorded_states, live_states)
    return report


def _live_request(x: Exchange, live_origin: str, ids: dict[str, str]) -> tuple[str, str, bytes]:
    """A recorded request's operation, and its URL and body for the live peer: each message id
    made anew, each id the live peer gave (``ids``, by the recorded one) in place of the recorded."""
    path, query = _split(x.url)
    body = x.request.get("json")
    op = x.rpc_method or _operation(x.method, path, body)
    for value in [body] if body is not None else []:  # each message id made anew
        for stable in _message_ids(value):
            ids.setdefault(stable, new_id())
    target = _to_live(live_origin + path + (f"?{query}" if query else ""), ids)
    return op, target, _to_live(x.request_text(), ids).encode("utf-8")


def _to_live(text: str, ids: Mapping[str, str]) -> str:
    for stable in sorted(ids, key=len, reverse=True):
        text = text.replace(stable, ids[stable])
    return text


def _compare_states(
    report: ReplayReport, recorded: dict[str, list[str]], live: dict[str, list[str]]
) -> None:
    """Each recorded task's settled states beside the live one's, a difference where they part."""
    for task in recorded:
        mine, theirs = recorded[task], live.get(task, [])
        report.states[task] = {"recorded": mine, "live": theirs}
        if mine != theirs:
            report.differences.append(
                Difference(
                    0, task, "states", "", " → ".join(mine) or "none", " → ".join(theirs) or "none"
                )
            )


async def _settled(
    ask: Callable[[], Awaitable[_Answer]], polls: float, status: int | None
) -> _Answer:
    """``ask()`` (an :func:`_ask`), asked again every 0.2 s for up to ``polls`` seconds while the
    live answer (of the recorded ``status``) names a task that has not settled (a poll whose
    recorded answer had)."""
    waited = 0.0
    while True:
        answer = await ask()
        live_status, error, _, live_values = answer
        if (
            error is None
            and live_status == status
            and waited < polls
            and _last_state(live_values) not in _SETTLED | {None}
        ):
            await asyncio.sleep(0.2)
            waited += 0.2
            continue
        return answer


def _sent_headers(
    recorded: Mapping[str, str], given: Mapping[str, str], notes: list[str]
) -> dict[str, str]:
    """A recorded request's headers but the masked ones, with the user's (``given``, lower-case
    names) over them; a note for each masked one the user did not pass again."""
    sent = {k: v for k, v in recorded.items() if MASK not in v and k.lower() not in given}
    for name in sorted(k for k, v in recorded.items() if MASK in v and k.lower() not in given):
        note = f"the recorded requests carried the secret header {name!r} (masked): pass it again"
        if note not in notes:
            notes.append(note)
    sent.update(given)
    return sent


async def _ask(
    client: httpx.AsyncClient,
    method: str,
    target: str,
    headers: dict[str, str],
    content: bytes,
    timeout: float,
) -> _Answer:
    """One request to the live peer: its status, why there was none, whether it streamed, and
    the JSON values it answered (each event's, for a stream)."""
    try:
        r, raw = await exchange(
            client,
            method,
            target,
            headers=headers,
            content=content,
            limit=MAX_RESPONSE,
            timeout=timeout,
        )
        status, answer, error = r.status_code, raw.decode("utf-8", "replace"), None
        streamed = "text/event-stream" in r.headers.get("content-type", "")
    except (httpx.HTTPError, PeerError) as exc:
        status, answer, error, streamed = None, "", why(exc), False
    values = (
        [v for v in (_loads(f) for f in sse_data(answer.encode())) if v is not None]
        if streamed
        else [v for v in [_loads(answer)] if v is not None]
    )
    return status, error, streamed, values


def _shapes_between(
    was_streamed: bool, streamed: bool, recorded: list[Any], live: list[Any]
) -> list[tuple[str, str, str]]:
    """Where the live answer's shape departs from the recorded one's: ``(path, recorded, live)``."""
    shapes: list[tuple[str, str, str]] = []
    if streamed != was_streamed:
        shapes.append(("(body)", _kind(was_streamed), _kind(streamed)))
    elif bool(recorded) != bool(live) and not streamed:
        shapes.append(
            (
                "(body)",
                "JSON" if recorded else "not JSON",
                "JSON" if live else "not JSON",
            )
        )
    recorded_shape = live_shape = None
    for value in recorded:
        recorded_shape = _merge(recorded_shape, _shape(value))
    for value in live:
        live_shape = _merge(live_shape, _shape(value))
    if recorded_shape is not None and live_shape is not None:
        _shape_diff(recorded_shape, live_shape, "", shapes)
    elif streamed and (recorded_shape is None) != (live_shape is None):
        shapes.append(
            (
                "(stream)",
                "events" if recorded_shape is not None else "none",
                "events" if live_shape is not None else "none",
            )
        )
    return shapes


def _settled_states(
    values: list[Any], into: dict[str, list[str]], back: Mapping[str, str] | None = None
) -> None:
    """Each settled state the answers name, added to its task's run in ``into`` (``back``: a live
    task id to the recorded one)."""
    found: list[tuple[str, str]] = []
    for value in values:
        _states(value, found)
    for task, state in found:
        seq = into.setdefault(back.get(task, task) if back is not None else task, [])
        if state in _SETTLED and (not seq or seq[-1] != state):
            seq.append(state)


def _kind(streamed: bool) -> str:
    return "an SSE stream" if streamed else "one body"


def _message_ids(value: Any) -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "messageId" and isinstance(v, str) and STABLE_ID.match(v):
                found.append(v)
            else:
                found += _message_ids(v)
    elif isinstance(value, list):
        for item in value:
            found += _message_ids(item)
    return found
