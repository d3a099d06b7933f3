"""Our client shows a peer's streamed reply as it comes: against the official a2a-sdk 1.3 server
(JSON-RPC, HTTP+JSON and gRPC) and the official JavaScript SDK's server (JSON-RPC and HTTP+JSON),
each streaming one reply as three appends, A2AClient.stream yields the task after every piece, its
text growing, each piece before the peer said the next; the last is the joined reply."""

from __future__ import annotations

import asyncio

import pytest

import toolnexus as tn
from toolnexus.protocol.model import TaskState

from .peers import sdk_server as sdk
from .peers.js_peer import js_server


async def follow(url: str) -> list[tuple[float, str]]:
    seen: list[tuple[float, str]] = []
    async with tn.A2AClient(url) as client:
        async for task in client.stream("chunked paced reply please"):
            text = task.artifacts_text
            if not seen or seen[-1][1] != text:
                seen.append((asyncio.get_running_loop().time(), text))
        assert task.state is TaskState.COMPLETED and task.reply == "echo: chunked reply please"
    return seen


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
async def test_the_sdk_servers_pieces_are_shown_as_they_come(binding):
    if binding == "GRPC":
        pytest.importorskip("grpc")
    sdk.SAID.clear()
    async with sdk.sdk_server(binding=binding) as url:
        seen = await follow(url)
    texts = [text for _, text in seen if text]
    assert texts == ["echo: chu", "echo: chunked repl", "echo: chunked reply please"]
    first, second = (at for at, text in seen if text in texts[:2])
    assert first < sdk.SAID[1] and second < sdk.SAID[2]  # each before the next was said


@pytest.mark.parametrize("rest", [False, True])
async def test_the_js_sdk_servers_pieces_are_shown_as_they_come(rest):
    async with js_server(rest=rest) as url:
        seen = await follow(url)
    texts = [text for _, text in seen if text]
    assert texts == ["echo: chu", "echo: chunked repl", "echo: chunked reply please"]
    times = [at for at, text in seen if text]
    assert times[2] - times[0] > 0.3  # two pieces 0.3 s apart at the peer arrived apart here
