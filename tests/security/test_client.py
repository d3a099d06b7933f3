"""The outbound client and the wire log against hostile peers: bounded reads, credentials only to
the host the user named, secrets masked wherever they reappear."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import time
from pathlib import Path

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

import toolnexus as tn
import toolnexus.http.fetch as fetch_limits
from toolnexus.http.server import AsgiServer
from toolnexus.traffic import TrafficRecorder, to_curl

from ..helpers import run_cli
from ..stubs import Reply, ScriptedServer


def card(url: str, **extra) -> dict:
    return {
        "name": "peer",
        "description": "a peer",
        "version": "1",
        "url": url,
        "protocolVersion": "0.3.0",
        "capabilities": {"streaming": True},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": [{"id": "s", "name": "s", "description": "d", "tags": []}],
        **extra,
    }


class Peer:
    """A hostile peer on loopback: each route is a Starlette endpoint given by the test."""

    def __init__(self, **routes) -> None:
        self.seen: list[dict] = []
        self.server = AsgiServer(
            Starlette(
                routes=[
                    Route(path, self._wrap(fn), methods=["GET", "POST"])
                    for path, fn in routes.items()
                ]
            )
        )

    def _wrap(self, fn):
        async def endpoint(request: Request):
            self.seen.append({"path": request.url.path, "headers": dict(request.headers)})
            return await fn(request, self)

        return endpoint

    @property
    def url(self) -> str:
        return self.server.url

    async def __aenter__(self) -> Peer:
        await self.server.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.server.stop()


CARD_PATH = "/.well-known/agent-card.json"


async def test_a_huge_card_is_refused_without_reading_it_all():
    async def huge(request, peer):
        async def body():
            yield b'{"name": "x", "description": "'
            for _ in range(40):
                yield b"a" * (1024 * 1024)
            yield b'"}'

        return StreamingResponse(body(), media_type="application/json")

    async with Peer(**{CARD_PATH: huge}) as peer:
        with pytest.raises(tn.PeerError, match="passed 2,097,152 bytes"):
            await tn.fetch_card(peer.url)


async def test_a_trickling_card_is_cut_off_at_the_total_timeout():
    async def trickle(request, peer):
        async def body():
            for ch in json.dumps(card("http://127.0.0.1:1/")):
                await asyncio.sleep(0.2)
                yield ch.encode()

        return StreamingResponse(body(), media_type="application/json")

    async with Peer(**{CARD_PATH: trickle}) as peer:
        t0 = time.monotonic()
        with pytest.raises(tn.PeerError, match="no whole answer within 1s"):
            await asyncio.wait_for(tn.fetch_card(peer.url, timeout=1.0), 10)
        assert time.monotonic() - t0 < 3


async def test_an_endless_stream_event_is_cut_off(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(fetch_limits, "MAX_FRAME", 64 * 1024)

    async def the_card(request, peer):
        return JSONResponse(card(peer.url + "/"))

    async def endless(request, peer):
        async def body():
            yield b'data: {"jsonrpc": "2.0", "id": 1, "result": "'
            for _ in range(200):
                yield b"a" * 4096
                await asyncio.sleep(0)

        return StreamingResponse(body(), media_type="text/event-stream")

    async with Peer(**{CARD_PATH: the_card, "/": endless}) as peer:
        async with tn.A2AClient(peer.url) as client:
            with pytest.raises(tn.PeerError, match="stream event passed 65,536 bytes"):
                async for _ in client.stream("hi"):
                    pass
            assert client.traffic.events[-1].error  # and the broken stream is on the wire log


async def test_an_endlessly_appended_artifact_is_cut_off(monkeypatch: pytest.MonkeyPatch):
    """Appends to one text are joined (each copies what came before): bounded like an answer."""
    monkeypatch.setattr(fetch_limits, "MAX_RESPONSE", 256 * 1024)

    async def the_card(request, peer):
        return JSONResponse(card(peer.url + "/"))

    async def appends(request, peer):
        async def body():
            for i in range(1000):
                event = {
                    "kind": "artifact-update",
                    "taskId": "t",
                    "contextId": "c",
                    "append": i > 0,
                    "artifact": {
                        "artifactId": "a",
                        "parts": [{"kind": "text", "text": "\x1b[2J<b>" * 1000}],
                    },
                }
                yield (
                    b"data: "
                    + json.dumps({"jsonrpc": "2.0", "id": 1, "result": event}).encode()
                    + b"\n\n"
                )
                await asyncio.sleep(0)

        return StreamingResponse(body(), media_type="text/event-stream")

    async with Peer(**{CARD_PATH: the_card, "/": appends}) as peer:
        async with tn.A2AClient(peer.url) as client:
            seen = 0
            with pytest.raises(tn.PeerError, match="streamed artifact passed 262,144 characters"):
                async for task in client.stream("hi"):
                    seen = len(task.artifacts[0].parts[0].text)
            assert 0 < seen <= 256 * 1024 and client.traffic.events[-1].error


async def test_credentials_go_only_to_the_host_the_user_named():
    async def rpc(request, peer):
        return JSONResponse(
            {
                "jsonrpc": "2.0",
                "id": "1",
                "result": {
                    "kind": "task",
                    "id": "t1",
                    "contextId": "c1",
                    "status": {"state": "completed"},
                },
            }
        )

    async with Peer(**{"/": rpc}) as elsewhere:

        async def pointing_elsewhere(request, peer):
            return JSONResponse(card(elsewhere.url + "/"))

        async with Peer(**{CARD_PATH: pointing_elsewhere}) as named:
            async with tn.A2AClient(
                named.url,
                headers={"Authorization": "Bearer user-secret-tok", "X-Api-Key": "k-secret-1234"},
            ) as client:
                task = await client.send("hello")
                assert task.state is tn.TaskState.COMPLETED
                assert not client.credentials_sent and "not sent" in client.warnings[0]
            assert (
                named.seen[0]["headers"]["authorization"] == "Bearer user-secret-tok"
            )  # the card fetch
            sent = elsewhere.seen[0]["headers"]
            assert "authorization" not in sent and "x-api-key" not in sent
            report = tn.validate_card(await tn.fetch_card(named.url))
            assert any(
                d.level == "warning" and "sends calls to" in d.message for d in report.diagnostics
            )


async def test_peer_errors_and_the_wire_log_never_show_a_secret():
    token = "tok-echoed-secret-42"

    async def the_card(request, peer):
        return JSONResponse(card(peer.url + "/"))

    async def echo(request, peer):  # a peer that echoes the credential back, and fails
        return Response(f"<html>denied for Bearer {token} ({json.dumps(token)})</html>", 502)

    async with Peer(**{CARD_PATH: the_card, "/": echo}) as peer:
        async with tn.A2AClient(
            peer.url + CARD_PATH + "?api_key=q-secret-777&x=1",
            headers={"Authorization": f"Bearer {token}"},
        ) as client:
            with pytest.raises(tn.PeerError) as caught:
                await client.send("hi")
        assert token not in str(caught.value)
        wire = json.dumps([vars(e) for e in client.traffic.events], default=str)
        assert token not in wire and "q-secret-777" not in wire and "Bearer ***" in wire

    rec = TrafficRecorder()
    ev = rec.record(
        direction="out",
        method="POST",
        url="http://user:pa55word@h.example/a?token=t-123456&page=2",
        status=200,
        started=time.perf_counter(),
        request_headers={
            "x-goog-api-key": "goog-secret-1",
            "private-token": "gl-secret-22",
            "cookie": "session=c-secret-333",
            "accept": "application/json",
        },
        request_body='{"echo": "goog-secret-1"}',
        response_body="gl-secret-22 c-secret-333",
    )
    curl = to_curl(ev)
    for secret in ("pa55word", "t-123456", "goog-secret-1", "gl-secret-22", "c-secret-333"):
        assert secret not in curl and secret not in json.dumps(vars(ev), default=str), secret
    assert "page=2" in curl and "accept: application/json" in curl


def test_trace_masks_a_token_echoed_in_a_body():
    from toolnexus.http.server import LoopThread

    async def the_card(request, peer):
        return JSONResponse(card(peer.url + "/"))

    async def rpc(request, peer):  # echoes the caller's token in its reply
        body = await request.json()
        return JSONResponse(
            {
                "jsonrpc": "2.0",
                "id": body["id"],
                "result": {
                    "kind": "task",
                    "id": "t1",
                    "contextId": "c1",
                    "status": {
                        "state": "completed",
                        "message": {
                            "kind": "message",
                            "role": "agent",
                            "messageId": "m",
                            "parts": [
                                {
                                    "kind": "text",
                                    "text": f"your token is {request.headers['authorization'][7:]}",
                                }
                            ],
                        },
                    },
                },
            }
        )

    thread = LoopThread()
    peer = Peer(**{CARD_PATH: the_card, "/": rpc})
    thread.run(peer.__aenter__(), 10)
    try:
        env = {**os.environ, "PEER_TOK": "tr-secret-token-99"}
        out = run_cli(
            "send",
            peer.url,
            "hi",
            "--trace",
            "--header",
            "Authorization: Bearer ${PEER_TOK}",
            env=env,
        )
    finally:
        thread.run(peer.__aexit__(), 10)
        thread.close()
    assert "--> POST" in out.stderr and "your token is ***" in out.stdout
    assert "tr-secret-token-99" not in out.stdout + out.stderr


async def test_model_errors_never_carry_the_key_or_the_endpoint_to_callers():
    key = "sk-ab/cd+ef-1234567890"
    escaped = key.replace("/", "\\/")  # as some servers write JSON
    body = f'{{"error": {{"message": "Incorrect API key provided: {escaped}"}}}}'.encode()
    async with ScriptedServer([Reply(401, raw=body)]) as model:
        client = tn.create_client(model.url, "openai", "m", api_key=key, retries=0)
        with pytest.raises(tn.ModelError) as caught:
            await client.run("hi", await tn.create_toolkit(builtins=False))
        assert key not in str(caught.value) and escaped not in str(caught.value)
        await client.aclose()


def test_the_peers_file_keeps_no_literal_secret(tmp_path: Path):
    from tui.peers import PeerBook

    book = PeerBook(tmp_path)
    peer = book.add(
        "http://alice:pw-literal-1@127.0.0.1:9/a?api_key=k-literal-2&page=3",
        {
            "Cookie": "session=c-literal-3",
            "Authorization": "Bearer ${PEER_TOKEN}",
            "X-Mixed": "literal-4 ${PEER_TOKEN}",
            "X-Session": "session=${SESSION}",
        },
    )
    book.save(peer.url)
    path = tmp_path / "peers-v1.json"
    text = path.read_text()
    for secret in ("pw-literal-1", "k-literal-2", "c-literal-3", "literal-4"):
        assert secret not in text
    saved = json.loads(text)["peers"][0]
    assert saved["headers"] == {
        "Authorization": "Bearer ${PEER_TOKEN}",
        "X-Session": "session=${SESSION}",
    }
    assert saved["url"] == "http://127.0.0.1:9/a?page=3"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_one_origin_written_two_ways_is_one_origin():
    from toolnexus.protocol.card import AgentCard, origin

    assert (
        origin("http://h.example/")
        == origin("HTTP://H.example:80/x")
        != origin("https://h.example/")
    )
    assert origin("http://h.example:notaport/") != origin("http://h.example/")
    same = AgentCard(card("http://h.example:80/"), "http://h.example/.well-known/agent-card.json")
    other = AgentCard(
        card("http://h.example:8080/"), "http://h.example/.well-known/agent-card.json"
    )
    assert not any("sends calls to" in d.message for d in tn.validate_card(same).diagnostics)
    assert any("sends calls to" in d.message for d in tn.validate_card(other).diagnostics)


async def test_odd_shapes_from_a_0_3_rest_peer_are_refused_clearly_never_a_crash():
    """A 0.3 REST-only peer answering shapes no peer should: not a TypeError, not interpreted."""
    frames = [
        {"task": {"id": "t", "contextId": "c", "status": {"state": "TASK_STATE_WORKING"}}},
        {"artifactUpdate": {"taskId": "t", "artifact": [1, 2]}},
        {"statusUpdate": {"taskId": "t", "status": "\x1b[31mred"}},
    ]

    async def the_card(request, peer):
        return JSONResponse(
            {
                "name": "odd",
                "url": peer.url + "/",
                "protocolVersion": "0.3.0",
                "preferredTransport": "HTTP+JSON",
                "capabilities": {"streaming": True},
            }
        )

    async def stream(request, peer):
        async def body():
            for frame in frames:
                yield b"data: " + json.dumps(frame).encode() + b"\n\n"

        return StreamingResponse(body(), media_type="text/event-stream")

    async def send(request, peer):
        return JSONResponse(
            {
                "task": {
                    "id": "t",
                    "status": {
                        "state": "TASK_STATE_COMPLETED",
                        "message": {"content": "not a list"},
                    },
                }
            }
        )

    async with Peer(
        **{CARD_PATH: the_card, "/v1/message:stream": stream, "/v1/message:send": send}
    ) as peer:
        async with tn.A2AClient(peer.url) as client:
            states = [t.state.value async for t in client.stream("hi")]
            assert (client.binding, client.dialect.value) == ("HTTP+JSON", "0.3")
            assert states[:2] == ["working", "working"]  # the odd artifact is no artifact
            with pytest.raises(
                tn.PeerError,
                match="message/send answered a shape A2A 0.3 does not have: "
                "Invalid params: expected a list of objects",
            ):
                await client.send("hi")


async def test_a_clients_warnings_are_bounded():
    """A peer that faults on every call, each time in other words (a task id, its own text), grew a
    long-lived client's warnings without end (each also checked against all before it, "once").
    The first MAX_WARNINGS are kept in order, then one line counts the rest; a reader that
    remembers how many it saw (``Conversation``: ``warnings[seen:]``) reads on."""
    from toolnexus.client.connection import MAX_WARNINGS

    async def the_card(request, peer):
        return JSONResponse(card(peer.url + "/"))

    async with Peer(**{CARD_PATH: the_card}) as peer, tn.A2AClient(peer.url) as client:
        for i in range(5 * MAX_WARNINGS):
            client.warn(f"t{i}: the stream broke off")  # the client's two ways of warning
            client.warnings.append(f"t{i}: the task followed by polling instead")
        client.warn("t0: the stream broke off")  # said once
        assert len(client.warnings) == MAX_WARNINGS + 1
        assert client.warnings[:2] == [
            "t0: the stream broke off",
            "t0: the task followed by polling instead",
        ]
        seen = len(client.warnings)
        assert (
            client.warnings[-1]
            == f"{10 * MAX_WARNINGS - MAX_WARNINGS} more warnings not kept (the first {MAX_WARNINGS} are)"
        )
        client.warnings.append("one more")
        assert client.warnings[seen:] == [] and client.warnings[-1].startswith(
            f"{9 * MAX_WARNINGS + 1} more"
        )
