"""The client reads the whole card (issue 62 item 3), against the official a2a-sdk 1.3 server: what
``toolnexus card`` prints of it (provider, documentation and icon URLs, the schemes and what each
call must carry, the extensions, each skill's modes and security), and ListTasks' time and history
filters on every binding."""

from __future__ import annotations

import asyncio
import datetime
import json

import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse

import toolnexus as tn
from toolnexus.client.transports import CUSTOM, JsonRpcTransport
from toolnexus.http.server import AsgiServer

from .helpers import arun_cli
from .peers.sdk_server import sdk_server

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")

from a2a.types import a2a_pb2 as pb  # noqa: E402

pytestmark = pytest.mark.asyncio(loop_scope="module")

EXTENSION = "https://toolnexus.example/ext/depth/v1"


def everything(card: pb.AgentCard) -> None:
    """Give the SDK's card every field a client should show: a provider, documentation and icon,
    four schemes and what the card and one skill ask for, an extension, a skill's own modes."""
    card.provider.CopyFrom(pb.AgentProvider(organization="Echo Works", url="https://echo.example"))
    card.documentation_url = "https://echo.example/docs"
    card.icon_url = "https://echo.example/icon.png"
    card.capabilities.extensions.append(
        pb.AgentExtension(uri=EXTENSION, required=True, description="a depth every call carries")
    )
    schemes = {
        "bearer": pb.SecurityScheme(
            http_auth_security_scheme=pb.HTTPAuthSecurityScheme(scheme="Bearer")
        ),
        "key": pb.SecurityScheme(
            api_key_security_scheme=pb.APIKeySecurityScheme(location="header", name="X-Echo-Key")
        ),
        "device": pb.SecurityScheme(
            oauth2_security_scheme=pb.OAuth2SecurityScheme(
                flows=pb.OAuthFlows(
                    device_code=pb.DeviceCodeOAuthFlow(
                        device_authorization_url="https://echo.example/device",
                        token_url="https://echo.example/token",
                        scopes={"ledger": "read the ledger"},
                    )
                )
            )
        ),
        "mtls": pb.SecurityScheme(mtls_security_scheme=pb.MutualTlsSecurityScheme()),
    }
    for name, scheme in schemes.items():
        card.security_schemes[name].CopyFrom(scheme)
    for name in ("bearer", "key"):
        card.security_requirements.add().schemes[name].SetInParent()
    ledger = card.skills.add(
        id="ledger",
        name="Ledger",
        description="Reads the ledger",
        tags=["books"],
        input_modes=["application/json"],
        output_modes=["text/csv", "application/json"],
    )
    need = ledger.security_requirements.add()
    need.schemes["device"].list.append("ledger")
    need.schemes["mtls"].SetInParent()


async def test_toolnexus_card_prints_the_whole_card():
    async with sdk_server(shaped=everything) as url:
        code, out, err = await arun_cli("card", url)
    assert code == 0, err
    lines = [line.strip() for line in out.splitlines()]
    for expected in (
        "provider Echo Works (https://echo.example)",
        "documentation https://echo.example/docs",
        "icon https://echo.example/icon.png",
        "scheme bearer: http bearer",
        "scheme key: apiKey in header X-Echo-Key",
        "scheme device: oauth2 (deviceCode)",
        "scheme mtls: mutualTLS",
        "security bearer (http bearer) or key (apiKey in header X-Echo-Key)",
        f"extension {EXTENSION} (required): a depth every call carries",
        "modes in text/plain; out text/plain",  # the echo skill: the card's defaults
        "modes in application/json; out text/csv, application/json",
        "security device (oauth2 (deviceCode)) [ledger] and mtls (mutualTLS)",
    ):
        assert expected in lines, (expected, out)
    # the skill's security line follows its own skill, and only the skill that names one has it
    at = lines.index("skill ledger: Reads the ledger  [books]")
    assert lines[at + 2].startswith("security device")
    assert sum(line.startswith("security ") for line in lines) == 2


async def test_a_card_read_in_either_sdk_lines_shape():
    """0.3's ``security`` and ``type`` spellings read as 1.0's."""
    card = tn.AgentCard(
        {
            "name": "old",
            "securitySchemes": {
                "k": {"type": "apiKey", "in": "header", "name": "X-K"},
                "o": {"type": "openIdConnect", "openIdConnectUrl": "https://id.example/.wk"},
            },
            "security": [{"k": []}, {"o": ["a", "b"]}],
            "skills": [{"id": "s", "security": [{"o": ["c"]}], "inputModes": ["image/png"]}],
            "defaultOutputModes": ["text/plain"],
        }
    )
    assert card.requirements() == [{"k": []}, {"o": ["a", "b"]}]
    assert card.requirements("s") == [{"o": ["c"]}]
    assert card.requirements("no-such-skill") == card.requirements()
    assert card.security_text() == "k (apiKey in header X-K) or o (openIdConnect) [a b]"
    assert card.modes("s") == (["image/png"], ["text/plain"])
    assert card.modes() == ([], ["text/plain"])


@pytest.mark.parametrize("binding", ["JSONRPC", "HTTP+JSON", "GRPC"])
async def test_list_tasks_by_status_time_and_with_a_history_length(binding):
    """``statusTimestampAfter`` leaves out the tasks whose status last changed before it;
    ``historyLength`` cuts each task's history; the SDK's server on each binding."""
    async with sdk_server(binding=binding) as url:
        async with tn.A2AClient(url) as client:
            first = await client.send("echo one", blocking=True)
            await asyncio.sleep(0.01)  # the SDK stamps in its own clock: past the first's stamp
            between = datetime.datetime.now(datetime.UTC)
            await asyncio.sleep(0.01)
            second = await client.send("echo two", blocking=True)
            everything_ = await client.list_tasks()
            after = await client.list_tasks(status_timestamp_after=between)
            as_text = await client.list_tasks(status_timestamp_after=between.isoformat())
            cut = await client.list_tasks(history_length=0)
            whole = await client.list_tasks(history_length=5)
    assert {t.id for t in everything_["tasks"]} == {first.id, second.id}
    assert [t.id for t in after["tasks"]] == [second.id]
    assert [t.id for t in as_text["tasks"]] == [second.id]
    assert all(not t.history for t in cut["tasks"])
    assert all(t.history for t in whole["tasks"])


def modes(card: pb.AgentCard) -> None:
    """The echo skill takes text only (the card's default); a skill "look" takes PNG images."""
    del card.default_input_modes[:]
    card.default_input_modes.append("text/plain")
    card.skills.add(id="look", name="Look", description="Looks", tags=["img"]).input_modes.extend(
        ["text/plain", "image/png"]
    )


async def test_a_send_carries_only_what_the_skill_takes_and_says_so_first(tmp_path):
    """The SDK's server refuses a part whose media type its card does not name (-32005): our
    client leaves such a part out, saying so before it sends, and sends what the skill takes."""
    table, picture = tmp_path / "t.csv", tmp_path / "p.png"
    table.write_text("a,b\n1,2\n")
    picture.write_bytes(b"\x89PNG\r\n\x1a\n")
    async with sdk_server(shaped=modes, check_modes=True) as url:
        async with tn.A2AClient(url) as client:
            kept, notes = client.fitting(
                [tn.Part.of_text("hi"), tn.Part.of_file(table)], "echo", ["text/csv"]
            )
            assert [p.kind for p in kept] == ["text"]
            assert notes == [
                "the skill echo takes text/plain: file t.csv (text/csv, 8 B) (text/csv) is not sent",
                "the skill echo answers in text/plain, none of which you accept (text/csv): the "
                "agent may refuse the task",
            ]
            assert [e.method for e in client.traffic.events] == ["GET"]  # nothing sent yet
            task = await client.send("hi", skill="echo", files=[table], blocking=True)
            assert task.reply == "echo: hi" and client.warnings == notes[:1]
            look = await client.send("see", skill="look", files=[picture, table], blocking=True)
            assert look.reply == "echo: see (+1 parts)"  # the PNG went, the CSV did not
        code, out, err = await arun_cli("send", url, "hi", "--file", str(table), "--skill", "echo")
    assert code == 0, err
    assert out.strip() == "echo: hi"
    assert err.count("is not sent") == 1, err


TAGGED = "https://toolnexus.example/bindings/tagged-jsonrpc/v1"


class Tagged(JsonRpcTransport):
    """A binding of a library user's own: JSON-RPC, each call tagged with a header of its own."""

    calls = 0

    def request(self, op, params, stream=False):  # type: ignore[no-untyped-def]
        Tagged.calls += 1
        method, verb, url, body, headers = super().request(op, params, stream)
        return method, verb, url, body, {**headers, "x-tagged": "yes"}


def tagged_first(card: pb.AgentCard) -> None:
    """The agent lists the tagged binding first, at its JSON-RPC route."""
    first = pb.AgentInterface(
        url=card.supported_interfaces[0].url, protocol_binding=TAGGED, protocol_version="1.0"
    )
    card.supported_interfaces.insert(0, first)


async def test_a_binding_a_library_user_registers():
    heard: list[dict[str, str]] = []
    async with sdk_server(shaped=tagged_first, heard=heard) as url:
        async with tn.A2AClient(url) as client:  # not registered: the standard one it knows
            assert (await client.send("echo", blocking=True)).reply == "echo: echo"
            assert client.binding.value == "JSONRPC" and "x-tagged" not in heard[-1]
        with pytest.raises(ValueError, match="registered one"):
            tn.A2AClient(url, binding=TAGGED)
        tn.register_binding(TAGGED, Tagged)
        try:
            async with tn.A2AClient(url) as client:  # the card's first, now spoken
                task = await client.send("echo tagged", blocking=True)
                assert TAGGED in client.dialect_reason
            async with tn.A2AClient(url, binding=TAGGED) as client:  # or asked for by name
                again = await client.get(task.id)
        finally:
            del CUSTOM[TAGGED]
    assert task.reply == "echo: echo tagged" and again.id == task.id
    assert Tagged.calls == 2 and heard[-1]["x-tagged"] == "yes"
    with pytest.raises(ValueError, match="a URI of its own"):
        tn.register_binding("GRPC", Tagged)


async def test_parts_references_and_a_message_answer_with_the_sdk_server(tmp_path):
    """A data part, a file by URL and referenceTaskIds go out and come back as the SDK's server
    keeps them; an agent that answers with a Message (no task) is read as its reply."""
    async with sdk_server(shaped=everything_in) as url:
        async with tn.A2AClient(url) as client:
            first = await client.send("echo first", blocking=True)
            message = tn.Message(
                "user",
                [
                    tn.Part.of_text("echo parts"),
                    tn.Part.of_data({"city": "Oslo", "temp": -3}),
                    tn.Part(
                        "file", url="https://files.example/r.pdf", media_type="application/pdf"
                    ),
                ],
                reference_task_ids=[first.id],
            )
            task = await client.send(message, blocking=True)
            got = await client.get(task.id)
            answered = await client.send("a message, not a task", blocking=True)
    echoed = next(a for a in task.artifacts if a.name == "echoed")
    assert [p.kind for p in echoed.parts] == ["data", "file"]
    assert echoed.parts[0].data == {"city": "Oslo", "temp": -3}
    assert echoed.parts[1].url == "https://files.example/r.pdf"
    assert echoed.parts[1].media_type == "application/pdf"
    assert got.history[0].reference_task_ids == [first.id]
    assert answered.state is tn.TaskState.COMPLETED and answered.reply == "here is a message"


def everything_in(card: pb.AgentCard) -> None:
    card.default_input_modes.append("*/*")


async def test_our_server_keeps_reference_task_ids():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="refs")) as handle:
        async with tn.A2AClient(handle.url) as client:
            first = await client.send("hello", blocking=True)
            message = tn.Message(
                "user", [tn.Part.of_text("hi again")], reference_task_ids=[first.id]
            )
            second = await client.send(message, blocking=True)
            got = await client.get(second.id)
    assert got.history[0].reference_task_ids == [first.id]


async def test_a_stream_to_an_agent_that_does_not_stream():
    """An agent that refuses streams (-32004, its card's streaming false): the stream becomes a
    blocking send, then polled, as the official SDK's client falls back."""
    tk = await tn.create_toolkit(builtins=False)
    a2a = tn.A2AConfig(name="still", streaming=False)
    async with tk.serve(client=tn.demo_client(), a2a=a2a) as handle:
        async with tn.A2AClient(handle.url) as client:
            tasks = [t async for t in client.stream("hello")]
            methods = [e.rpc_method for e in client.traffic.events if e.method == "POST"]
    assert tasks[-1].state is tn.TaskState.COMPLETED and tasks[-1].reply
    assert methods == ["SendStreamingMessage", "SendMessage"]
    assert any("-32004 (it does not stream)" in w for w in client.warnings)


SNAKE_TASK = {
    "id": "t-1",
    "context_id": "c-1",
    "status": {"state": "TASK_STATE_COMPLETED", "timestamp": "2026-01-02T03:04:05+02:00"},
    "artifacts": [{"artifact_id": "a-1", "parts": [{"text": "in proto names"}]}],
    "metadata": {"caller_key": 1},
}


async def _proto_named_peer(scope, receive, send):  # type: ignore[no-untyped-def]
    """A peer that answers in ProtoJSON's proto field names (as a ProtoJSON writer may)."""
    if scope["type"] != "http":
        return
    if scope["path"].endswith("agent-card.json"):
        url = f"http://{dict(scope['headers'])[b'host'].decode()}/"
        body = {
            "name": "snake",
            "supported_interfaces": [
                {"url": url, "protocol_binding": "JSONRPC", "protocol_version": "1.0"}
            ],
        }
        body["supportedInterfaces"] = body.pop("supported_interfaces")  # the card: camelCase
        answer = JSONResponse(body)
    else:
        request = json.loads(await Request(scope, receive).body())
        result = (
            {"task": SNAKE_TASK}
            if request["method"] == "SendMessage"
            else {"tasks": [SNAKE_TASK], "next_page_token": "", "total_size": 1}
        )
        answer = JSONResponse({"jsonrpc": "2.0", "id": request["id"], "result": result})
    await answer(scope, receive, send)


async def test_an_answer_in_proto_field_names_is_read():
    server = AsgiServer(_proto_named_peer)
    await server.start()
    try:
        async with tn.A2AClient(server.url) as client:
            task = await client.send("hi", blocking=True)
            listed = await client.list_tasks()
    finally:
        await server.stop()
    assert task.context_id == "c-1" and task.artifacts[0].artifact_id == "a-1"
    assert task.reply == "in proto names" and task.metadata == {"caller_key": 1}
    assert task.status.timestamp == "2026-01-02T03:04:05+02:00"  # an offset, read as written
    assert listed["tasks"][0].context_id == "c-1" and listed["total_size"] == 1
