"""The client doctor (``toolnexus doctor --client``): a correct client comes out clean, a broken one
gets each of its faults named. The correct ones are the real clients: the official a2a-sdk 1.3
client (1.0, and its 0.3 compatibility), the JavaScript SDK 1.3 client, ADK's RemoteA2aAgent
(tests/peers/adk), and ours; the broken one is written here, one fault a request."""

from __future__ import annotations

import asyncio
import json
import subprocess
import uuid

import httpx
import pytest

import toolnexus as tn
from toolnexus.debug.client_doctor import EXTENSION, client_doctor

from .helpers import cli
from .peers import field
from .peers.js_peer import js_client

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")

SCENARIOS = ("streaming", "cancel", "input-required", "auth-required", "rejected")


def faults(report) -> list[str]:
    return [
        f"{f.severity} {f.check}: {f.message}"
        for f in report.findings
        if f.severity in ("warning", "error")
    ]


def passed(report) -> set[str]:
    return {f.check for f in report.findings if f.severity == "ok"}


async def test_our_client_is_clean_and_goes_through_every_scenario():
    async with client_doctor() as doctor:
        async with tn.A2AClient(doctor.url, extensions=[EXTENSION]) as client:
            await client.send("hello", blocking=True)
            [t async for t in client.stream("stream this")]
            asked = await client.send("a question", blocking=True)
            await client.send("blue", task_id=asked.id, context_id=asked.context_id, blocking=True)
            locked = await client.send("auth, please", blocking=True)
            assert locked.state is tn.TaskState.AUTH_REQUIRED
            opened = await client.send(
                "signed in", task_id=locked.id, context_id=locked.context_id, blocking=True
            )
            assert opened.reply == "answered: signed in"
            refused = await client.send("reject this", blocking=True)
            assert refused.state is tn.TaskState.REJECTED
            slow = await client.send("slow")
            async for _ in client.resubscribe(slow.id):
                break  # following it is enough
            await client.cancel(slow.id)
        async with tn.A2AClient(doctor.url) as again:  # the card it keeps: asked conditionally
            await again.connect()
    report = doctor.report
    assert report.done and not faults(report), report.text()
    assert {
        "method names",
        "version header",
        "message ids",
        "card cache",
        "tenant",
        "extensions",
        *SCENARIOS,
    } <= passed(report), report.text()


async def official(url: str, dialect: str) -> None:
    """The official a2a-sdk 1.3 client through the doctor's scenarios: a send, a stream, a question
    answered on its task, a slow task followed and canceled. ``dialect="0.3"``: its 0.3 compat."""
    from a2a.client import ClientConfig, ClientFactory
    from a2a.client.card_resolver import A2ACardResolver
    from a2a.types import a2a_pb2 as pb

    def request(text: str, **fields) -> pb.SendMessageRequest:
        message = pb.Message(
            message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text=text)], **fields
        )
        return pb.SendMessageRequest(message=message)

    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        if dialect == "0.3":  # the card's 0.3 interface only, as a 0.3-only peer's card
            keep = [i for i in card.supported_interfaces if i.protocol_version.startswith("0.3")]
            del card.supported_interfaces[:]
            card.supported_interfaces.extend(keep)
        blocking = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        streaming = ClientFactory(ClientConfig(httpx_client=http, streaming=True)).create(card)
        [ev async for ev in blocking.send_message(request("hello"))]
        [ev async for ev in streaming.send_message(request("stream this"))]
        [asked] = [ev.task async for ev in blocking.send_message(request("a question"))]
        answer = request("blue", task_id=asked.id, context_id=asked.context_id)
        [ev async for ev in blocking.send_message(answer)]
        [locked] = [ev.task async for ev in blocking.send_message(request("auth, please"))]
        signed = request("signed in", task_id=locked.id, context_id=locked.context_id)
        [ev async for ev in blocking.send_message(signed)]
        [ev async for ev in blocking.send_message(request("reject this"))]
        slow = request("slow")
        slow.configuration.return_immediately = True
        [started] = [ev.task async for ev in blocking.send_message(slow)]
        await blocking.cancel_task(pb.CancelTaskRequest(id=started.id))


@pytest.mark.parametrize("dialect", ["1.0", "0.3"])
async def test_the_official_python_client_is_clean(dialect):
    async with client_doctor() as doctor:
        await official(doctor.url, dialect)
    report = doctor.report
    assert not faults(report), report.text()
    assert set(SCENARIOS) <= passed(report), report.text()
    said = next(f.message for f in report.findings if f.check == "method names")
    assert said.startswith(f"speaks {dialect}"), report.text()


async def test_the_javascript_client_is_clean():
    async with client_doctor() as doctor:
        seen = await js_client(doctor.url, "JSONRPC")
    report = doctor.report
    assert seen["send"]["state"] == "completed" and seen["cancel"]["state"] == "canceled", seen
    assert not faults(report), report.text()
    assert {"method names", "version header", "streaming", "cancel"} <= passed(report), (
        report.text()
    )


async def test_adk_remote_agent_is_clean():
    """ADK's RemoteA2aAgent (google-adk, in a venv of its own: it pins an older OpenTelemetry)."""
    async with client_doctor() as doctor:
        seen = await field.client("adk", doctor.url, ["hello from adk"])
    report = doctor.report
    assert seen.get("replies") == ["echo: hello from adk"], seen
    assert not faults(report), report.text()
    assert {"method names", "message ids"} <= passed(report), report.text()


async def broken(url: str) -> None:
    """A client written wrong on purpose: one fault a request."""
    m10 = {"role": "ROLE_USER", "parts": [{"text": "hello"}]}
    m03 = {"kind": "message", "role": "user", "parts": [{"kind": "text", "text": "hello"}]}
    v1 = {"A2A-Version": "1.0"}

    async with httpx.AsyncClient(base_url=url, timeout=30) as http:

        async def rpc(method, params, headers=None, **envelope):
            body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
            body.update(envelope)
            r = await http.post("/", json=body, headers=headers or {})
            return r.json() if r.content else None

        def fresh(message):
            return {**message, "messageId": str(uuid.uuid4())}

        await http.get("/.well-known/agent.json")  # the 0.2 path
        await rpc("SendMessage", {"message": fresh(m10)})  # no A2A-Version
        await rpc("SendMessage", {"message": fresh({**m10, "role": "user"})}, v1)
        await rpc("SendMessage", {"message": m10}, v1)  # no messageId
        await rpc("tasks/send", {"id": "t1", "message": fresh(m03)})  # A2A 0.2
        await rpc("message/send", {"message": fresh({**m03, "parts": [{"text": "hi"}]})})
        await rpc("message/send", {"message": fresh(m03)}, v1)  # 0.3 with 1.0's header
        await rpc("SendMessage", {"message": fresh(m10), "configuration": {"blocking": False}}, v1)
        reused = str(uuid.uuid4())
        await rpc("SendMessage", {"message": {**m10, "messageId": reused}}, v1)
        other = {**m10, "parts": [{"text": "something else"}], "messageId": reused}
        await rpc("SendMessage", {"message": other}, v1)
        done = (await rpc("SendMessage", {"message": fresh(m10)}, v1))["result"]["task"]
        to_done = {**fresh(m10), "taskId": done["id"], "contextId": done["contextId"]}
        await rpc("SendMessage", {"message": to_done}, v1)  # to a finished task
        asked = {**fresh(m10), "parts": [{"text": "a question"}]}
        question = (await rpc("SendMessage", {"message": asked}, v1))["result"]["task"]
        aside = {**fresh(m10), "contextId": question["contextId"]}  # no taskId: a new task
        await rpc("SendMessage", {"message": aside}, v1)
        refused = {**fresh(m10), "parts": [{"text": "reject this"}]}
        rejected = (await rpc("SendMessage", {"message": refused}, v1))["result"]["task"]
        again = {**fresh(m10), "taskId": rejected["id"], "contextId": rejected["contextId"]}
        await rpc("SendMessage", {"message": again}, v1)  # to the rejected task
        locked = {**fresh(m10), "parts": [{"text": "auth, please"}]}
        await rpc("SendMessage", {"message": locked}, v1)  # never answered
        await rpc("GetTask", {}, v1)  # no id
        await rpc("GetTask", {"id": "x", "tenant": "elsewhere"}, v1)  # not the card's tenant
        await rpc("GetTask", {"id": "x"}, {**v1, "X-A2A-Extensions": EXTENSION})  # 0.3's name
        await rpc("SendMessage", {"message": {**fresh(m10), "extensions": EXTENSION}}, v1)
        await rpc("GetTask", {"id": "x"}, v1, jsonrpc="1.0")
        slow = {"jsonrpc": "2.0", "id": 1, "method": "SendStreamingMessage"}
        slow["params"] = {"message": {**fresh(m10), "parts": [{"text": "slow"}]}}
        async with http.stream(
            "POST", "/", json=slow, headers={**v1, "Accept": "text/event-stream"}
        ) as r:
            async for _ in r.aiter_lines():
                break  # the first event, then gone for good


async def test_a_broken_client_gets_each_fault_named():
    async with client_doctor() as doctor:
        await broken(doctor.url)
    said = "\n".join(faults(doctor.report))
    for fault in (
        "warning card: asked for the card at /.well-known/agent.json (the 0.2 path)",
        "error version header: SendMessage (1.0) sent without A2A-Version: 1.0",
        "error message: role 'user' in a 1.0 message, not 'ROLE_USER'",
        "error message ids: a message without a messageId",
        "error method names: tasks/send is A2A 0.2's name",
        "error message: a 0.3 part without kind",
        "error version header: a 0.3 method sent with A2A-Version: 1.0",
        "warning configuration: 0.3's configuration.blocking in a 1.0 send",
        "warning message ids: messageId",  # used again for another message
        "error finished tasks: sent a message to a task that is completed",
        "error input-required: task ",  # ... started a new task instead of answering it
        "error params: GetTask without an id",
        'error envelope: "jsonrpc" is \'1.0\', not "2.0"',
        "warning streaming: closed the stream of task ",
        "warning input-required: task ",  # ... is still input-required: the client never answered
        "error finished tasks: sent a message to a task that is rejected",
        "warning auth-required: task ",  # ... is still auth-required: the client never answered
        "warning tenant: a 1.0 call without the tenant 'doctor' the card's interface names",
        "error tenant: a 1.0 call names tenant 'elsewhere', not the card's 'doctor'",
        "warning extensions: asked for extensions in 0.3's X-A2A-Extensions header in a 1.0 call",
        "error message: message.extensions is not an array of URIs",
    ):
        assert fault in said, f"{fault!r} not named:\n{doctor.report.text()}"
    errors = [f for f in doctor.report.findings if f.severity == "error"]
    assert all(f.breaks and f.fix for f in errors), doctor.report.text()
    assert doctor.report.failed()


async def test_the_command_prints_the_report_as_the_client_calls_and_json_at_the_end():
    proc = await asyncio.create_subprocess_exec(
        *cli("doctor", "--client", "--json", "--for", "60"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    try:
        ready = json.loads(await asyncio.wait_for(proc.stderr.readline(), 30))
        async with httpx.AsyncClient(timeout=30) as http:  # a fault: no A2A-Version
            await http.post(
                ready["url"] + "/",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "SendMessage",
                    "params": {
                        "message": {
                            "messageId": "m",
                            "role": "ROLE_USER",
                            "parts": [{"text": "hi"}],
                        }
                    },
                },
            )
        proc.terminate()
        out, _ = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
    report = json.loads(out)
    assert report["doctor"] == "a2a-client" and report["done"]
    assert any(
        f["check"] == "version header" and f["severity"] == "error" for f in report["findings"]
    )
    assert proc.returncode == 1


async def test_the_servers_named_for_a_missing_version_header_do_refuse_it():
    """A 1.0 call without ``A2A-Version`` (issue 62 item 4): the client doctor names the servers
    that refuse it, and each named one does, as it answers it (-32009, the call read as 0.3): the
    official a2a-sdk 1.x server and the JS SDK's; ours, not named, serves it as 1.0."""
    from .peers.js_peer import js_server
    from .peers.sdk_server import sdk_server

    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}},
    }
    async with httpx.AsyncClient(timeout=30) as http:
        async with client_doctor() as doctor:
            ours = (await http.post(doctor.url + "/", json=call)).json()
            assert "result" in ours  # lenient: served as 1.0 (docs/wire.md says why)
        (finding,) = [f for f in doctor.report.findings if f.check == "version header"]
        assert finding.severity == "error" and "without A2A-Version: 1.0" in finding.message
        assert set(finding.breaks) == {"a2a-sdk 1.x server", "JS SDK 1.x server"}
        for name, server in (
            ("a2a-sdk 1.x server", sdk_server()),
            ("JS SDK 1.x server", js_server()),
        ):
            async with server as url:
                answer = (await http.post(url + "/", json=call)).json()
                assert answer["error"]["code"] == -32009, (name, answer)
                call_v1 = await http.post(url + "/", json=call, headers={"A2A-Version": "1.0"})
                assert "result" in call_v1.json(), (name, call_v1.text)
