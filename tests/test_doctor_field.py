"""The doctor's claims about peers from the field (issue 58), each against a real peer that shows
the shape: the official a2a-sdk 1.3 server set up as the framework sets it up, or our own server.
Every claim the doctor makes here is checked against the client it names, run."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

import toolnexus as tn
from toolnexus import doctor
from toolnexus.debug.client_doctor import client_doctor

from .conftest import EXAMPLE_SKILLS
from .helpers import v03_send
from .peers.field import client, need
from .peers.js_peer import js_client
from .peers.quirky import quirky
from .peers.sdk03_server import sdk03_server
from .peers.sdk_server import sdk_server
from .test_doctor_verdicts import verdicts

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")


def _said(report, check: str) -> list[tuple[str, str]]:
    return [(f.severity, f.message) for f in report.findings if f.check.startswith(check)]


async def test_grpc_refusing_credentials_is_a_refusal_not_an_open_peer():
    """Our server behind HTTP basic with gRPC: gRPC's UNAUTHENTICATED is the credentials refused
    (as HTTP's 401), not an internal error, and nothing answered without credentials."""
    tk = await tn.create_toolkit(builtins=False)
    a2a = tn.A2AConfig(auth=tn.Auth.basic("ada:secret"), grpc="127.0.0.1:0")
    async with tk.serve(client=tn.demo_client(), a2a=a2a) as handle:
        report = await doctor(handle.url, timeout=10)
    assert not _said(report, "auth"), report.text()
    grpc = [f for f in report.findings if f.check.startswith("GRPC")]
    assert grpc and all(f.severity == "info" for f in grpc), report.text()
    assert all(f.message.endswith("without credentials (UNAUTHENTICATED)") for f in grpc), (
        report.text()
    )
    assert all("UNAUTHENTICATED" in f.evidence[0] or f.evidence == [] for f in grpc)


async def test_a_card_promising_0_3_that_the_server_does_not_answer_is_named_so():
    """The official a2a-sdk 1.3 server as Microsoft Agent Framework hosts it: the card's interface
    names no version, so the SDK's card route writes 0.3's url and protocolVersion "0.3" too,
    while its routes answer 1.0 only. It was called "the toolnexus legacy dialect"."""
    async with sdk_server(versioned=False) as url:
        async with httpx.AsyncClient(timeout=10) as http:
            served = (await http.get(url + "/.well-known/agent-card.json")).json()
            v03 = await http.post(
                served["url"], json=v03_send("hello")
            )  # a 0.3 client's first call
        report = await doctor(url, timeout=10)
    assert served["protocolVersion"] == "0.3" and v03.json()["error"]["code"] == -32601
    assert "legacy" not in report.text()
    [promise] = [f for f in report.findings if f.check == "JSONRPC 0.x"]
    assert promise.severity == "error" and promise.message.startswith(
        f"the card promises 0.3 at {url}/ (url, and protocolVersion '0.3'), but the server does "
        "not answer it"
    )
    assert promise.message.endswith("0.3 clients fail on this card")
    assert 'give the interface its protocolVersion "1.0"' in promise.fix


async def _slow_to_cancel(request: dict[str, Any]) -> AsyncIterator[str]:
    """A model that works a long while on a message asking to be canceled, echoes the rest."""
    [*_, last] = [m for m in request["messages"] if m.get("role") == "user"]
    text = str(last["content"]).split("\n\n")[-1]
    if "to cancel" in text:
        await asyncio.sleep(60)
    yield f"echo: {text}"


async def test_a_cancel_is_judged_by_the_state_after_it_and_a_send_after_it():
    """BeeAI's server (``--quirks beeai``): its cancel of a working task is refused (-32002) while
    the task works on, and every task after it fails. The doctor said "the task had finished first;
    cancel was refused as it should be", and never sent again."""
    tk = await tn.create_toolkit(builtins=False)
    model = tn.create_in_process_client(_slow_to_cancel)
    config = tn.A2AConfig(name="beeai", quirks=["beeai"])
    async with tk, tk.serve(client=model, a2a=config) as handle:
        report = await doctor(handle.url, send=True, timeout=10)
        async with tn.A2AClient(handle.url) as client:  # any client, after the doctor's cancel
            later = await client.send("hello", blocking=True)
        asked = await official_send(handle.url)
    said = _said(report, "cancel")
    assert not [m for _, m in said if "as it should be" in m], report.text()
    assert (
        "warning",
        "cancel was refused as not cancelable (Task cannot be canceled - current state: working), "
        "but the task was working, not finished",
    ) in said, report.text()
    [broke] = [m for severity, m in said if severity == "error"]
    assert broke.startswith(
        "after one cancel, a message that worked before failed (its task failed: Action has been "
        "aborted)"
    )
    assert later.state is tn.TaskState.FAILED and "aborted" in later.status.message.text
    assert asked == ("TASK_STATE_FAILED", "")


async def test_a_blocking_send_answered_submitted_is_named():
    """The official a2a-sdk 1.3 server whose executor returns before the work is done: a blocking
    send is answered with the task submitted, and the official client, sending without streaming,
    gets that task and no reply."""
    async with sdk_server(detached=True) as url:
        report = await doctor(url, send=True, timeout=10)
        asked = await official_send(url)
    [blocking] = [f for f in report.findings if f.check == "blocking send"]
    assert blocking.severity == "warning" and blocking.message.startswith(
        "a blocking send was answered with the task submitted"
    )
    assert asked == ("TASK_STATE_SUBMITTED", "")


async def official_send(url: str) -> tuple[str, str]:
    """The official a2a-sdk 1.3 client, without streaming, sends "hello" as a user sets it up: the
    state of the task it got back, and the text of its artifacts."""
    from a2a.client import ClientConfig, ClientFactory
    from a2a.client.card_resolver import A2ACardResolver
    from a2a.types import a2a_pb2 as pb

    async with httpx.AsyncClient(timeout=15) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        message = pb.Message(message_id=str(uuid.uuid4()), role=pb.ROLE_USER)
        message.parts.append(pb.Part(text="hello"))
        try:
            [task] = [
                ev.task
                async for ev in client.send_message(pb.SendMessageRequest(message=message))
                if ev.HasField("task")
            ]
        finally:
            await client.close()
    text = "".join(p.text for a in task.artifacts for p in a.parts)
    return pb.TaskState.Name(task.status.state), text


async def test_1_0_rules_are_not_applied_to_a_0_3_peer():
    """The official a2a-sdk 0.3 server (the line of Strands, BeeAI, CrewAI): 0.3 reads historyLength
    0 as no limit, and its resubscribe is not asked to answer the task first; the doctor faulted
    both by 1.0's rules."""
    async with sdk03_server() as url:
        report = await doctor(url, send=True, timeout=10)
        async with httpx.AsyncClient(timeout=10) as http:  # what 0 means to it: no limit
            sent = (await http.post(url, json=v03_send("hello"))).json()["result"]
            asked = {"id": sent["id"], "historyLength": 0}
            got = await http.post(
                url, json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": asked}
            )
    assert len(got.json()["result"]["history"]) >= 1
    assert _said(report, "historyLength") == [
        ("ok", "1 answers at most one message (0.3 reads 0 as no limit)")
    ], report.text()
    [(severity, message)] = _said(report, "subscribe")
    assert severity == "info" and message.startswith("not checked: answering the task first")


async def test_every_stream_frame_is_read_before_a_client_is_said_to_work():
    """LangGraph's stream (``--quirks langgraph``): the first frame 1.0's, the rest 0.3-shaped. The
    doctor said "a2a-sdk 1.x: works" and "JS SDK 1.x: works"; both clients, streaming, fail."""
    async with quirky("langgraph", name="langgraph", skill="echo", description="echoes") as peer:
        report = await doctor(peer.url, send=True, timeout=10)
        python = await official_stream(peer.url)
        js = (await js_client(peer.url, "JSONRPC")).get("stream") or {}
    said = verdicts(report)
    for line in ("a2a-sdk 1.x", "JS SDK 1.x"):
        severity, message = said[line]
        assert severity == "warning" and "cannot read the stream" in message, report.text()
        assert "frame 2 of " in message and "0.3's kind 'status-update'" in message
    assert python != "echo: hello", python  # it read no reply
    print(f"the a2a-sdk 1.3 client read: {python!r}; the JS SDK: {js}")
    assert "error" in js or not js.get("reply"), js


async def official_stream(url: str) -> str:
    """The official a2a-sdk 1.3 client as a user sets it up (streaming, its default): the reply's
    text it read, or the error it raised."""
    from a2a.client import ClientConfig, ClientFactory
    from a2a.client.card_resolver import A2ACardResolver
    from a2a.types import a2a_pb2 as pb

    async with httpx.AsyncClient(timeout=15) as http:
        card = await A2ACardResolver(http, url).get_agent_card()
        client = ClientFactory(ClientConfig(httpx_client=http)).create(card)
        message = pb.Message(message_id=str(uuid.uuid4()), role=pb.ROLE_USER)
        message.parts.append(pb.Part(text="hello"))
        text = ""
        try:
            async for ev in client.send_message(pb.SendMessageRequest(message=message)):
                if ev.HasField("artifact_update"):
                    text += "".join(p.text for p in ev.artifact_update.artifact.parts)
        except Exception as exc:  # whatever the SDK raises is the outcome looked at
            return f"{type(exc).__name__}: {exc}"
        finally:
            await client.close()
    return text


# -- the framework clients (issue 58 item 5): each claim checked with the framework's own client --


async def test_google_adk_is_said_to_keep_only_the_last_chunk_where_it_does():
    """A stream that closes its artifact with ``append: true, lastChunk: true`` and only the last
    chunk (the official a2a-sdk 1.3 server streaming each reply in three appends): ADK's client
    keeps only that chunk. Our own server closes with the whole text: ADK reads it whole."""
    need("adk")
    async with sdk_server(chunked=True) as url:
        report = await doctor(url, send=True, timeout=10)
        adk = await client("adk", url, ["hello there"])
    severity, message = verdicts(report)["Google ADK"]
    assert severity == "warning" and message.startswith(
        "breaks: records only the last chunk of this stream"
    ), report.text()
    [kept] = adk["replies"]  # "echo: hello there" streamed in three: only the third is kept
    assert kept and kept != "echo: hello there" and "echo: hello there".endswith(kept), adk
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="ours")) as handle:
        ours = await doctor(handle.url, send=True, timeout=10)
        whole = await client("adk", handle.url, ["hello there"])
        async with tn.A2AClient(handle.url) as ours_client:
            reply = (await ours_client.send("hello there", blocking=True)).reply
    severity, message = verdicts(ours)["Google ADK"]
    assert severity == "ok" and message.startswith("works: as a2a-sdk 1.x"), ours.text()
    assert reply and whole["replies"] == [reply], whole


async def test_microsoft_agent_framework_is_judged_as_its_client_reads():
    """MAF's A2AAgent(url=...) reads no card: it speaks 1.0 at the URL it is given (a 0.3-only peer,
    BeeAI's, answers it -32601); and it reads a task's words from its artifacts, else the last
    history message, never status.message (a failed task shows the user's own words)."""
    need("maf")
    async with quirky("beeai", name="beeai", skill="echo", description="echoes") as peer:
        report = await doctor(peer.url, send=True, timeout=10)
        refused = await client("maf", peer.url, ["hello"])
    severity, message = verdicts(report)["Microsoft Agent Framework"]
    assert severity == "warning" and "answers SendMessage with -32601" in message, report.text()
    assert "MethodNotFound" in refused["error"], refused
    async with sdk_server() as url:
        report = await doctor(url, send=True, timeout=10)
        seen = await client("maf", url, ["hello", "fail please"])
    severity, message = verdicts(report)["Microsoft Agent Framework"]
    assert severity == "ok" and "a failed task it shows as the user's own words" in message
    assert seen["replies"] == ["echo: hello", "fail please"], seen  # the failure: the user's words


async def test_aws_strands_is_said_not_to_answer_questions_where_the_peer_asks_them():
    """Strands' A2AAgent never sends a taskId or contextId: against an agent whose skill example
    asks for input (our demo's report), the doctor says it cannot answer, and its answer does not
    reach the question."""
    need("strands")
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="ours")) as handle:
        report = await doctor(handle.url, send=True, timeout=10)
        seen = await client("strands", handle.url, ["draft and approve the weekly report", "yes"])
    severity, message = verdicts(report)["AWS Strands"]
    assert severity == "info" and message.startswith(  # Strands' doing, not the peer's
        "breaks: cannot answer this agent's questions"
    ), report.text()
    assert seen["states"][0][-1] == "input-required", seen
    assert seen["contexts"][0] != seen["contexts"][1], seen  # the answer went elsewhere


async def test_the_client_doctor_names_strands_not_answering_on_the_task():
    """AWS Strands' A2AAgent, driven at the client doctor: asked a question, its answer carries
    neither the taskId nor a contextId (a new task); the judge says so and names it."""
    need("strands")
    async with client_doctor() as doc:
        seen = await client("strands", doc.url, ["a question, please", "blue"])
    assert seen["states"][0][-1] == "input-required" and seen["contexts"][0] != seen["contexts"][1]
    [fault] = [f for f in doc.report.findings if f.severity == "error"]
    assert fault.check == "input-required" and "neither its taskId nor a contextId" in fault.message
    assert "AWS Strands' A2AAgent" in fault.message, doc.report.text()
    [talk] = [f for f in doc.report.findings if f.check == "conversation"]
    assert talk.severity == "info" and talk.message.startswith("sent 2 messages, none with")


async def test_crewai_a2a_handler_and_fasta2a_are_judged_as_their_clients_read():
    """CrewAI joins a streamed artifact's chunks with spaces (the official a2a-sdk 1.3 server, with
    its 0.3 compatibility for CrewAI's a2a-sdk 0.3, streaming each reply in three appends);
    a2a-handler shows a failed task without its reason (its words only in status.message);
    fasta2a's card model refuses a card whose skills lack inputModes and outputModes."""
    need("crewai")
    need("handler")
    need("fasta2a")
    async with sdk_server(chunked=True, compat=True) as url:
        report = await doctor(url, send=True, timeout=10)
        crew = await client("crewai", url, ["hello there"])
    severity, message = verdicts(report)["CrewAI"]
    assert severity == "info" and message.startswith(  # CrewAI's doing: the stream is right
        "breaks: joins the chunks of a streamed artifact with spaces"
    ), report.text()
    assert crew["replies"][0] != "echo: hello there", crew
    assert crew["replies"][0].split() != "echo: hello there".split(), crew  # a space inside a word
    async with sdk_server() as url:
        report = await doctor(url, send=True, timeout=10)
        handler, fasta2a = await asyncio.gather(
            client("handler", url, ["fail please"]), client("fasta2a", url, ["hello"])
        )
    said = verdicts(report)
    severity, message = said["a2a-handler"]
    assert severity == "ok" and "a failed task it shows without its reason" in message
    [shown] = handler["shown"]
    assert "failed" in shown and "could not do it" not in shown, handler
    severity, message = said["fasta2a"]
    assert severity == "info" and message.startswith("breaks: its card model refuses this card")
    assert "inputModes" in fasta2a["card"], fasta2a


async def test_the_client_doctor_names_fasta2a_s_hybrid_messages():
    """fasta2a's client, driven at the client doctor: message/send with 1.0's message (no kind on
    it or its parts); the judge names the hybrid and whose it is."""
    need("fasta2a")
    async with client_doctor() as doc:
        await client("fasta2a", doc.url, ["hello"])
    [fault] = [f for f in doc.report.findings if f.severity == "error"]
    assert fault.message == (
        "a 0.3 part without kind (0.3's method names with 1.0's parts: the hybrid pydantic's "
        "fasta2a 2.1 client sends)"
    ), doc.report.text()
