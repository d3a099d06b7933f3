"""One MCP server's part of a cassette, as calls (:class:`MCPTape`): over streamable HTTP each POST
with its answer, over stdio each message given to the request it was about."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from ... import _json
from ..cassette import Cassette, CassetteError, Exchange
from ..replay.server import MAX_DEPTH
from .calls import (
    SUBSCRIPTION,
    TOO_DEEP,
    Call,
    answers_to,
    id_of,
    is_message,
    json_object,
    mcp_servers,
    rpc_error,
    server_of,
    server_of_name,
)


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
        wanted = server_of_name(server)
        if wanted not in found:
            raise CassetteError(
                f"{cassette.path} has no MCP session with {server}; it has {', '.join(found)}"
            )
        tape = cls(wanted)
        exchanges = [x for x in cassette if server_of(x) == wanted]
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
                call.answer = rpc_error(call.body, -32603, f"the recorded answer {TOO_DEEP}")
            call.messages = [m for m in call.messages if not _json.too_deep(m, MAX_DEPTH)]
            call.after = [m for m in call.after if not _json.too_deep(m, MAX_DEPTH)]
        self.stream = [m for m in self.stream if not _json.too_deep(m, MAX_DEPTH)]

    def _from_http(self, exchanges: list[Exchange]) -> None:
        asked = {  # the server's requests' ids: their methods (its answer may end before them)
            id_of(v): v["method"]
            for x in exchanges
            for v in _values(x)
            if is_message(v) and id_of(v) is not None
        }
        for x in exchanges:
            sent = x.request.get("json")
            values = _values(x)
            if x.method == "GET":
                self.stream += [v for v in values if is_message(v)]
                continue
            if not isinstance(sent, dict):
                continue
            if "method" not in sent:  # the client's answer to the server's request
                if asked.get(id_of(sent)):
                    self.answers.append((asked[id_of(sent)], sent.get("result", sent.get("error"))))
                continue
            if "id" not in sent:  # a notification of the client
                continue
            call = Call(x.seq, sent, status=x.status, streamed=x.streamed)
            for v in values:
                if answers_to(v, sent["id"]):
                    call.answer = v
                elif is_message(v):
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
                if isinstance(got, dict) and answers_to(got, sent["id"]):
                    call.answer = got
                spans.append((ended - x.ms / 1000, ended, call))
                self.calls.append(call)
            elif isinstance(sent, dict) and "method" not in sent and "id" in sent:
                heard.append((ended, {"answer": sent}))
            elif isinstance(got, dict) and is_message(got):
                heard.append((ended, got))
        last: Call | None = None
        for at, message in sorted(heard, key=lambda h: h[0]):
            if "answer" in message:  # the client's answer to a request of the server
                sent = message["answer"]
                if asked.get(id_of(sent)):
                    self.answers.append((asked[id_of(sent)], sent.get("result", sent.get("error"))))
                continue
            if id_of(message) is not None and isinstance(message.get("method"), str):
                asked[id_of(message)] = message["method"]
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


def _values(x: Exchange) -> list[Any]:
    if x.streamed:  # frames a list (a hostile cassette's other value: none)
        frames = x.response.get("frames")
        return list(frames) if isinstance(frames, list) else []
    return [x.response["json"]] if "json" in x.response else []


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
    params = json_object(message.get("params"))
    token = params.get("progressToken")
    named = json_object(params.get("_meta")).get(SUBSCRIPTION)
    for _, _, call in spans:
        meta = json_object(call.params.get("_meta"))
        if (token is not None and meta.get("progressToken") == token) or (
            named is not None and call.body.get("id") == named
        ):
            return call
    if named is not None:  # a listen stream's (its id named anew in the cassette after this line)
        spans = [s for s in spans if s[2].method == "subscriptions/listen"] or spans
    pending = [s for s in spans if s[0] <= at <= s[1]]
    return max(pending, key=lambda s: s[0])[2] if pending else None
