"""Issue 59 item 3: a request's head is bounded (``http.server.MAX_HEAD``: request line and
headers) on both servers, the served agent's (every route and binding: JSON-RPC, HTTP+JSON, MCP,
the card, gRPC's metadata) and the webhook receiver's, with either HTTP parser uvicorn may run
(httptools, installed with uvicorn[standard]; h11 without it). Past the bound: 431 and the
connection closed. The served agent answered 1 MB and 4 MB A2A-Extensions headers with 200, the
receiver took a 670 KB one."""

from __future__ import annotations

import asyncio

import grpc
import pytest
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse
from starlette.routing import Route
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

import toolnexus as tn
from toolnexus.client.webhook import WebhookReceiver
from toolnexus.http.server import MAX_HEAD, AsgiServer, _guarded

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")
from a2a.types import a2a_pb2 as pb  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

BODY = b'{"jsonrpc":"2.0","id":1,"method":"tasks/get","params":{"id":"nope"}}'


async def status_of(port: int, head: bytes, body: bytes = b"") -> str:
    """The status line a raw request gets, or ``closed`` when the server closed the connection
    before it could be read whole (a head far past the bound: the rest is never read)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(head + body)
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), 30)
    except (ConnectionResetError, BrokenPipeError):
        return "closed"
    finally:
        writer.close()
    return line.decode().strip() or "closed"


def request(port: int, method: str, path: str, extra: int, body: bytes = b"") -> bytes:
    """A request head with an ``A2A-Extensions`` header of ``extra`` bytes."""
    lines = [
        f"{method} {path} HTTP/1.1",
        f"host: 127.0.0.1:{port}",
        "content-type: application/json",
        f"content-length: {len(body)}",
        "a2a-extensions: " + "x" * extra,
    ]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


async def test_the_served_agents_head_is_bounded_on_every_route_and_grpcs_metadata_too():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(grpc="127.0.0.1:0")) as h:
        port = int(h.url.rsplit(":", 1)[1].rstrip("/"))
        routes = [
            ("POST", "/", BODY),
            ("GET", "/tasks/nope", b""),
            ("POST", "/mcp", b"{}"),
            ("GET", "/.well-known/agent-card.json", b""),
        ]
        said = {}
        for method, path, body in routes:
            for extra in (MAX_HEAD - 1024, MAX_HEAD + 1, 1_000_000, 4_000_000):
                status = await status_of(port, request(port, method, path, extra, body), body)
                said[(path, extra)] = status.split(" ")[1] if status != "closed" else status
        async with grpc.aio.insecure_channel(h.grpc_target) as channel:
            get = channel.unary_unary(
                "/lf.a2a.v1.A2AService/GetTask",
                request_serializer=pb.GetTaskRequest.SerializeToString,
                response_deserializer=pb.Task.FromString,
            )
            for extra in (MAX_HEAD - 1024, MAX_HEAD + 1, 1_000_000):
                try:
                    await get(
                        pb.GetTaskRequest(id="nope"),
                        metadata=[("a2a-extensions", "x" * extra)],
                        timeout=30,
                    )
                except grpc.aio.AioRpcError as exc:
                    said[("grpc", extra)] = exc.code().name
        async with tn.A2AClient(h.url) as client:  # and it keeps serving
            assert (await client.send("hello", blocking=True)).state.terminal
    for path in ("/", "/tasks/nope", "/mcp", "/.well-known/agent-card.json"):
        assert said[(path, MAX_HEAD - 1024)] not in ("431", "closed"), said
        assert said[(path, MAX_HEAD + 1)] == "431", said
        assert said[(path, 1_000_000)] in ("431", "closed"), said
        assert said[(path, 4_000_000)] in ("431", "closed"), said
    assert said[("grpc", MAX_HEAD - 1024)] == "NOT_FOUND", said  # read, and answered
    assert said[("grpc", MAX_HEAD + 1)] == said[("grpc", 1_000_000)] == "RESOURCE_EXHAUSTED"


async def test_the_webhook_receivers_head_is_bounded():
    async with WebhookReceiver() as rx:
        port = int(rx.url.rstrip("/").rsplit(":", 1)[1])
        said = {
            extra: await status_of(port, request(port, "POST", "/", extra, b"{}"), b"{}")
            for extra in (1000, MAX_HEAD + 1, 670_000)
        }
    assert said[1000].startswith("HTTP/1.1 401"), said  # read: no token
    assert said[MAX_HEAD + 1].startswith("HTTP/1.1 431"), said
    assert said[670_000] == "closed" or said[670_000].startswith("HTTP/1.1 431"), said


@pytest.mark.parametrize("parser", [HttpToolsProtocol, H11Protocol], ids=["httptools", "h11"])
async def test_either_parser_answers_431_past_the_bound(parser):
    """The same bound whichever parser uvicorn runs: a head arriving in one read or several, one
    huge header, many headers or a long request line."""
    app = Starlette(routes=[Route("/", lambda r: PlainTextResponse("ok"))])
    server = AsgiServer(app, http=_guarded(parser, 10.0, MAX_HEAD, parser is HttpToolsProtocol))
    await server.start()
    port = server.port
    try:
        heads = {
            "under": request(port, "GET", "/", MAX_HEAD - 1024),
            "one header": request(port, "GET", "/", MAX_HEAD + 1),
            "many headers": b"GET / HTTP/1.1\r\nhost: 127.0.0.1:%d\r\n" % port
            + b"".join(b"x-%d: %s\r\n" % (i, b"b" * 100) for i in range(700))
            + b"\r\n",
            "request line": b"GET /?%s HTTP/1.1\r\nhost: 127.0.0.1:%d\r\n\r\n"
            % (b"q" * (MAX_HEAD + 1), port),
        }
        said = {name: (await status_of(port, head)).split(" ")[1] for name, head in heads.items()}
    finally:
        await server.stop()
    assert said == {
        "under": "200",
        "one header": "431",
        "many headers": "431",
        "request line": "431",
    }
