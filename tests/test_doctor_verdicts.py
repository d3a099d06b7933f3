"""The doctor's verdict on each client, against that client run: a panel of real servers (ours on
every binding, the official a2a-sdk 1.3 server with JSON-RPC and its 0.3 compat, with gRPC alone
and with HTTP+JSON alone, the JavaScript SDK's server) and the quirk peers (``toolnexus serve --quirks``) labelled as what they copy:
a toolnexus legacy-dialect port like upstream toolnexus 0.21, a hybrid as fasta2a 2.1 was seen to
answer, an a2a-sdk 0.3 server, and one slower than the official Python clients wait. For each, ``doctor(send=True)`` says of every official client "works" or
"breaks", and the real client says what happens: the official a2a-sdk 1.3 client, the JavaScript
SDK 1.3 client and ours each send a message. Every verdict must be what happened.

The a2a-sdk 0.3 line is not installable beside 1.3 in one environment, so its verdicts are not
run here (they rest on its card model and its method names, both checked in test_doctor.py)."""

from __future__ import annotations

import asyncio
import contextlib
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest

import toolnexus as tn
from toolnexus.debug.doctor import FRAMEWORKS, doctor

from .peers.hybrid_stub import hybrid_stub
from .peers.js_peer import js_client, js_server
from .peers.legacy_stub import legacy_stub
from .peers.quirky import quirky
from .peers.sdk_server import sdk_server

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")

SERVERS = [
    "ours",
    "sdk-jsonrpc-compat",
    "sdk-grpc-only",
    "sdk-rest-only",
    "sdk-versionless",
    "js-sdk",
    "legacy-port",
    "hybrid",
    "0.3-only",
    "slow",
]


@contextlib.asynccontextmanager
async def server(name: str) -> AsyncIterator[str]:
    if name == "ours":
        tk = await tn.create_toolkit(builtins=False)
        async with tk.serve(
            client=tn.demo_client(), a2a=tn.A2AConfig(name="ours", grpc="127.0.0.1:0")
        ) as handle:
            yield handle.url
    elif name.startswith("sdk-"):
        binding = {
            "sdk-jsonrpc-compat": "JSONRPC",
            "sdk-grpc-only": "GRPC",
            "sdk-rest-only": "HTTP+JSON",
            "sdk-versionless": "",  # as Microsoft Agent Framework hosts it: 0.3 on its card, 1.0 served
        }[name]
        async with sdk_server(
            compat=binding == "JSONRPC", binding=binding or "JSONRPC", versioned=bool(binding)
        ) as url:
            yield url
    elif name == "js-sdk":
        async with js_server() as url:
            yield url
    elif name in ("legacy-port", "hybrid"):
        async with legacy_stub() if name == "legacy-port" else hybrid_stub() as stub:
            yield stub.url
    else:  # a quirk peer (toolnexus serve --quirks)
        async with quirky(name, name=name, skill="echo", description="echoes") as peer:
            yield peer.url


async def official_python(url: str, bindings: list[str]) -> str:
    """The official a2a-sdk 1.3 client as a user sets it up: its card resolver, its factory (its
    ClientConfig listing ``bindings``, else its default; for gRPC the channel factory it asks
    for; its own HTTP client, with its default timeout), one message sent. "" when a task came
    back, else the error it raised."""
    from a2a.client import ClientConfig, ClientFactory
    from a2a.client.card_resolver import A2ACardResolver
    from a2a.types import a2a_pb2 as pb

    async with httpx.AsyncClient(timeout=15) as http:
        try:
            card = await A2ACardResolver(http, url).get_agent_card()
            extra = {}
            if "GRPC" in bindings:
                import grpc

                extra["grpc_channel_factory"] = grpc.aio.insecure_channel
            config = ClientConfig(streaming=False, supported_protocol_bindings=bindings, **extra)
            client = ClientFactory(config).create(card)
            request = pb.SendMessageRequest(
                message=pb.Message(
                    message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text="hello")]
                )
            )
            try:
                tasks = [
                    ev.task async for ev in client.send_message(request) if ev.HasField("task")
                ]
            finally:
                await client.close()
        except Exception as exc:  # whatever the SDK raises is the outcome being compared
            return f"{type(exc).__name__}: {exc}"
    return "" if tasks else "no task came back"


async def official_js(url: str) -> str:
    try:
        seen = await js_client(url, "JSONRPC")
    except RuntimeError as exc:
        return str(exc)[-300:]
    send = seen.get("send") or {}
    return send["error"] if "error" in send else ""


async def ours(url: str) -> str:
    try:
        async with tn.A2AClient(url) as client:
            await client.send("hello", blocking=True)
    except (tn.PeerError, tn.RPCError) as exc:
        return str(exc)
    return ""


def verdicts(report) -> dict[str, tuple[str, str]]:
    return {
        f.check.removeprefix("client: "): (f.severity, f.message)
        for f in report.findings
        if f.check.startswith("client: ")
    }


@pytest.mark.parametrize("name", SERVERS)
async def test_each_verdict_is_what_the_client_does(name):
    async with server(name) as url:
        report = await doctor(url, send=True, timeout=10)
        said = verdicts(report)
        official = {"a2a-sdk 1.x", "a2a-sdk 0.3", "JS SDK 1.x", "toolnexus"}
        assert set(said) == official | set(FRAMEWORKS), report.text()  # tests/test_doctor_field.py
        assert (
            not [  # holds the frameworks' verdicts to their clients
                line
                for line, (severity, _) in said.items()
                if line in official and severity not in ("ok", "warning")
            ]
        ), report.text()
        # the a2a-sdk 1.x as the doctor says it is set up: its default, or the binding it must be told of
        bindings = [b for b in ("GRPC", "HTTP+JSON") if f"over {b} at" in said["a2a-sdk 1.x"][1]]
        lines = {
            "a2a-sdk 1.x": official_python(url, bindings),
            "JS SDK 1.x": official_js(url),
            "toolnexus": ours(url),
        }
        outcomes = dict(zip(lines, await asyncio.gather(*lines.values()), strict=True))
    for line, failure in outcomes.items():
        severity, message = said[line]
        assert (severity == "ok") == (failure == ""), (
            f"{name}: the doctor said of {line} {message!r}; "
            f"running it: {failure or 'it worked'}\n{report.text()}"
        )
        assert message.startswith("works: " if severity == "ok" else "breaks: ")


async def test_the_hybrid_is_named_and_our_client_gets_its_reply_streamed_or_not():
    """0.3's method names answered in 1.0's shapes: named a hybrid, and our client (the CLI, the
    agent tools, the TUI and the notebook all use it) reads the reply whole, sent or streamed
    (its stream ends with the final status and no artifact: a get follows)."""
    async with hybrid_stub() as stub:
        report = await doctor(stub.url, send=True, timeout=10)
        [hybrid] = [f for f in report.findings if f.check == "hybrid"]
        assert "answers the 0.3 method message/send in 1.0's shapes" in hybrid.message
        assert hybrid.breaks == ["a2a-sdk 0.3", "a2a-sdk 1.x compat"]
        async with tn.A2AClient(stub.url) as client:
            sent = await client.send("one", blocking=True)
            streamed = [t async for t in client.stream("two")]
        chat = tn.Conversation(peer=stub.url)
        async with tn.A2AClient(stub.url) as client:
            turn = chat.say("three")
            await chat.run(client, turn, poll_every=0.01)
        tk = await tn.create_toolkit(
            builtins=False, agents=[tn.Agent(card=stub.url, poll_every=0.01)]
        )
        async with tk:
            [tool] = [t.name for t in tk.tools() if t.source == "a2a"]
            called = await tk.execute(tool, {"task": "four"})
    assert sent.reply == "echo: one" and streamed[-1].reply == "echo: two"
    assert turn.text == "echo: three" and turn.state is tn.TurnState.FINISHED
    assert not called.is_error and called.output == "echo: four"
    assert stub.methods.count("GetTask") >= 1  # the stream's reply came by a get


async def test_without_send_the_shapes_are_said_to_be_unknown():
    """The default is free of side effects: nothing is sent, so no verdict claims a client works."""
    async with hybrid_stub() as stub:
        report = await doctor(stub.url, timeout=10)
        sent = [m for m in stub.methods if m in ("SendMessage", "message/send")]
        made = await stub.tasks()
    said = verdicts(report)
    assert said["a2a-sdk 1.x"][0] == "info" and said["a2a-sdk 1.x"][1].startswith("cannot tell: ")
    assert "without --send" in said["a2a-sdk 1.x"][1] and said["toolnexus"][0] == "info"
    assert said["a2a-sdk 0.3"] == ("warning", "breaks: it rejects this card (no top-level url)")
    assert not [f for f in report.findings if f.severity == "ok" and f.check.startswith("client: ")]
    assert len(sent) == 2 and not made  # asked with nothing to send: no task made
