"""The quirk peers (``toolnexus serve --quirks``): each breaks the official clients it broke in the
field, as its entry in ``toolnexus.serve.quirks.QUIRKS`` says, and our client copes (or says why).

Each is run against the clients themselves: the official a2a-sdk 1.3 client set up as its docs
show (``ClientFactory(ClientConfig()).create_from_url``, its own httpx client), once blocking and
once streaming; the JavaScript SDK 1.3 client's script (tests/peers/js/client.mjs) where the
quirk broke it; and ours, sent and streamed."""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncIterator

import httpx
import pytest

import toolnexus as tn
from toolnexus.serve.quirks import QUIRKS, quirks_named

from ..helpers import run_cli
from ..peers.js_peer import js_client
from ..peers.quirky import quirky

pytest.importorskip("a2a", reason="the official a2a-sdk is a test peer: pip install -e '.[test]'")


@contextlib.asynccontextmanager
async def peer(*quirks: str) -> AsyncIterator[str]:
    async with quirky(*quirks, name="quirky", skill="echo", description="echoes") as p:
        yield p.url


async def official(url: str, *, streaming: bool) -> str:
    """The a2a-sdk 1.3 client as its docs set it up, one message: "" when the reply came back,
    else what it raised."""
    from a2a.client import ClientConfig, ClientFactory
    from a2a.types import a2a_pb2 as pb

    request = pb.SendMessageRequest(
        message=pb.Message(
            message_id=str(uuid.uuid4()), role=pb.ROLE_USER, parts=[pb.Part(text="hello")]
        )
    )
    client = None
    try:
        client = await ClientFactory(ClientConfig(streaming=streaming)).create_from_url(url)
        events = [ev async for ev in client.send_message(request)]
    except Exception as exc:  # what the SDK raises is the outcome
        return f"{type(exc).__name__}: {exc}"
    finally:
        if client is not None:
            await client.close()
    texts = [
        p.text
        for ev in events
        for a in (
            ev.task.artifacts
            if ev.HasField("task")
            else [ev.artifact_update.artifact]
            if ev.HasField("artifact_update")
            else []
        )
        for p in a.parts
    ]
    return "" if "echo: hello" in "".join(texts) else f"no reply among {len(events)} events"


async def ours(url: str, *, stream: bool) -> tuple[str, list[str]]:
    """Our client, one message: (the reply, its warnings)."""
    async with tn.A2AClient(url) as client:
        if stream:
            task = [t async for t in client.stream("hello")][-1]
        else:
            task = await client.send("hello", blocking=True)
        return task.reply, client.warnings


@pytest.mark.parametrize(
    ("quirk", "send", "stream", "js"),
    [
        ("0.3-only", "", "", "No compatible transport found"),
        ("legacy", "MethodNotFoundError", "MethodNotFoundError", "No compatible transport found"),
        ("hybrid", "Failed to parse timestamp", "Failed to parse timestamp", "no artifact"),
        (
            "drop-streams",
            "",
            "peer closed connection without sending complete message body",
            "terminated",
        ),
        (
            "content-type",
            "",
            "Invalid JSON-RPC response in SSE stream",
            "Expected 'text/event-stream'",
        ),
    ],
)
async def test_each_quirk_breaks_the_clients_it_broke_in_the_field(quirk, send, stream, js):
    """What each official client does against the quirk is what the field saw (the a2a-sdk's send
    and stream, the JS SDK's script), and our client gets the reply, sent and streamed."""
    async with peer(quirk) as url:
        outcomes = {
            "send": await official(url, streaming=False),
            "stream": await official(url, streaming=True),
        }
        try:
            seen = await js_client(url, "JSONRPC")
        except RuntimeError as exc:  # it gave up before its first step
            seen = {"send": {"error": str(exc)}}
        sent, sent_warnings = await ours(url, stream=False)
        streamed, streamed_warnings = await ours(url, stream=True)
    for step, expected in (("send", send), ("stream", stream)):
        if expected:
            assert expected in outcomes[step], (quirk, step, outcomes[step])
        else:
            assert outcomes[step] == "", (quirk, step, outcomes[step])
    js_failure = next(
        (seen[k]["error"] for k in ("send", "stream") if "error" in seen.get(k, {})), ""
    )
    if js == "no artifact":  # its stream ends with the state alone: the JS client has no reply
        assert seen["stream"] == ["task", "status:working", "status:completed"], seen
    else:
        assert js in js_failure, (quirk, seen)
    assert sent == streamed == "echo: hello"
    said = " ".join(sent_warnings + streamed_warnings)
    if quirk == "drop-streams":
        assert "incomplete chunked read): the task followed by polling instead" in said
    if quirk == "content-type":
        assert "answered as application/x-ndjson, not text/event-stream (SSE)" in said
    if quirk == "legacy":
        assert "blocking send instead of a stream" in said


async def test_a_slow_peer_outlasts_the_sdk_clients_default_timeout_and_ours_waits():
    """``slow``: a blocking send answered after 6 s. The a2a-sdk client, on its own httpx client
    (5 s), times out; ours (30 s by default) has the reply; a send that does not block is answered
    at once (the peer is slow to work, not to listen)."""
    async with peer("slow") as url:
        failure, (reply, _) = await asyncio.gather(
            official(url, streaming=False), ours(url, stream=False)
        )
        async with tn.A2AClient(url) as client:
            started = await client.send("hello")
    assert "A2AClientTimeoutError" in failure and reply == "echo: hello"
    assert started.id


async def test_the_card_and_the_refusals_are_the_personas():
    """Each persona's card is the card of the peer it copies, and what that peer does not know is
    -32601 (JSON-RPC) or 404 (HTTP+JSON), whatever the agent behind it serves."""
    async with contextlib.AsyncExitStack() as stack:
        urls = {
            q: await stack.enter_async_context(peer(q)) for q in ("0.3-only", "legacy", "hybrid")
        }
        async with httpx.AsyncClient() as http:
            cards = {
                q: (await http.get(u + "/.well-known/agent-card.json")).json()
                for q, u in urls.items()
            }
            head = await http.head(urls["hybrid"] + "/.well-known/agent-card.json")
            asked = {
                q: (
                    await http.post(
                        u + "/",
                        json={
                            "jsonrpc": "2.0",
                            "id": 7,
                            "method": "GetTask",
                            "params": {"id": "x"},
                        },
                        headers={"A2A-Version": "1.0"},
                    )
                ).json()
                for q, u in urls.items()
            }
            rest = {q: (await http.get(u + "/tasks/x")).status_code for q, u in urls.items()}
    assert "supportedInterfaces" not in cards["0.3-only"] and cards["0.3-only"]["url"]
    assert cards["0.3-only"]["protocolVersion"] == "0.3.0"
    assert set(cards["legacy"]) == {
        "name",
        "description",
        "url",
        "version",
        "protocolVersion",
        "capabilities",
        "defaultInputModes",
        "defaultOutputModes",
        "skills",
    }
    assert cards["legacy"]["capabilities"] == {"streaming": False, "pushNotifications": False}
    assert "url" not in cards["hybrid"] and [
        i["protocolVersion"] for i in cards["hybrid"]["supportedInterfaces"]
    ] == ["1.0"]
    assert head.status_code == 200 and not head.content
    assert asked["0.3-only"]["error"]["code"] == -32601 and asked["0.3-only"]["id"] == 7
    assert asked["legacy"]["error"]["code"] == -32001  # GetTask known, the task is not
    assert asked["hybrid"]["error"]["code"] == -32001
    assert rest == {"0.3-only": 404, "legacy": 404, "hybrid": 404}


def test_quirks_are_named_from_one_registry():
    assert [q.spec for q in quirks_named(["hybrid,slow=2", "drop-streams"])] == [
        "hybrid",
        "slow=2",
        "drop-streams",
    ]
    for bad, said in (
        (["nope"], "no quirk 'nope'; the quirks are: " + ", ".join(QUIRKS)),
        (["legacy", "hybrid"], "legacy and hybrid are each a whole peer: pick one"),
        (["slow=fast"], "slow=SECONDS takes 0 to 3600 seconds"),
        (["hybrid=2"], "the quirk 'hybrid' takes no value"),
    ):
        with pytest.raises(tn.ConfigError, match=said.replace("(", r"\(").replace(")", r"\)")):
            quirks_named(bad)
    done = run_cli("serve", "--quirks", "nope")
    assert done.returncode == 2 and "no quirk 'nope'" in done.stderr
    assert all(q.origin and q.breaks for q in QUIRKS.values())


@pytest.mark.parametrize(
    ("quirk", "said"),
    [
        ("drop-streams", "the stream broke off after 1 event(s), before the task settled"),
        ("content-type", "the stream was answered as application/x-ndjson, not SSE"),
    ],
)
async def test_the_doctor_names_the_stream_quirks(quirk, said):
    """``doctor --send`` says what is wrong with the stream, and whom it breaks."""
    from toolnexus.debug.doctor import doctor

    async with peer(quirk) as url:
        report = await doctor(url, send=True, timeout=10)
    [streaming] = [f for f in report.findings if f.check == "streaming"]
    assert streaming.severity == "warning" and said in streaming.message, report.text()
    assert streaming.breaks and streaming.fix


# The field's frameworks as servers (issue 58 item 7): each persona's stream, as that framework's
# source writes it (see each persona's docstring in toolnexus.serve.quirks), on an agent whose
# model says its reply in four pieces.

PIECES = ("echo: ", "hello ", "there ", "friend")


async def _pieces(request: dict[str, object]) -> AsyncIterator[str]:
    for piece in PIECES:
        await asyncio.sleep(0.05)  # apart: each its own frame (not a measure of anything)
        yield piece


@contextlib.asynccontextmanager
async def worded(*quirks: str) -> AsyncIterator[tuple[str, object]]:
    """Our server as ``quirks`` make it, on a model that streams :data:`PIECES`: (url, handle)."""
    tk = await tn.create_toolkit(
        builtins=False, skills=[tn.SkillDef("echo", "echoes", tags=["echo"])]
    )
    config = tn.A2AConfig(name="field", description="echoes", quirks=quirks)
    async with tk, tk.serve(client=tn.create_in_process_client(_pieces), a2a=config) as handle:
        yield handle.url, handle


async def frames(url: str, method: str, *, v10: bool = False) -> list[dict[str, object]]:
    """The results of one stream, raw, as the peer sent them."""
    message: dict[str, object] = (
        {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
        if v10
        else {
            "kind": "message",
            "messageId": "m1",
            "role": "user",
            "parts": [{"kind": "text", "text": "hi"}],
        }
    )
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"message": message}}
    headers = {"A2A-Version": "1.0"} if v10 else {}
    out: list[dict[str, object]] = []
    async with httpx.AsyncClient(timeout=30) as http:
        async with http.stream("POST", url + "/", json=body, headers=headers) as response:
            async for line in response.aiter_lines():
                if line.startswith("data: "):
                    out.append(json.loads(line[6:])["result"])
    return out


def _shape(result: dict[str, object]) -> tuple[object, ...]:
    """A frame in brief: its kind (or 1.0 wrapper), its state, its message's or artifact's text,
    and the artifact's append/lastChunk."""
    for wrapper in ("task", "statusUpdate", "artifactUpdate"):
        if wrapper in result:
            return (wrapper, *_shape(result[wrapper])[1:])  # type: ignore[arg-type]
    status = result.get("status") or {}
    message = status.get("message") if isinstance(status, dict) else None
    artifact = result.get("artifact")
    text = None
    for holder in (message, artifact):
        if isinstance(holder, dict):
            text = "".join(p.get("text", "") for p in holder["parts"])
    return (
        result.get("kind"),
        status.get("state") if isinstance(status, dict) else None,
        text,
        result.get("append"),
        result.get("lastChunk"),
        result.get("final"),
    )


async def test_the_frameworks_stream_as_their_sources_write_it():
    """langgraph, strands, strands-compliant, gemini-cli and beeai stream the reply as that
    framework does: the words as status messages (deltas or the text so far), or appends while
    the task is submitted, or not at all; the frames' shapes, dialects and flags as its source
    writes them."""
    seen = {}
    for quirk, method, v10 in (
        ("langgraph", "SendStreamingMessage", True),
        ("strands", "message/stream", False),
        ("strands-compliant", "message/stream", False),
        ("gemini-cli", "message/stream", False),
        ("beeai", "message/stream", False),
    ):
        async with worded(quirk) as (url, _):
            seen[quirk] = [_shape(f) for f in await frames(url, method, v10=v10)]
    whole = "".join(PIECES)
    so_far = ["".join(PIECES[: i + 1]) for i in range(len(PIECES))]
    assert seen["langgraph"] == [
        ("task", "TASK_STATE_SUBMITTED", None, None, None, None),
        ("status-update", "TASK_STATE_WORKING", None, None, None, False),
        *[("status-update", "TASK_STATE_WORKING", t, None, None, False) for t in so_far],
        ("artifact-update", None, whole, False, True, None),
        ("status-update", "TASK_STATE_COMPLETED", None, None, None, True),
    ]
    assert seen["strands"] == [
        ("task", "submitted", None, None, None, None),
        *[("status-update", "working", p, None, None, False) for p in PIECES],
        ("artifact-update", None, whole, None, None, None),
        ("status-update", "completed", None, None, None, True),
    ]
    assert seen["strands-compliant"] == [
        ("task", "submitted", None, None, None, None),
        ("artifact-update", None, PIECES[0], False, None, None),
        *[("artifact-update", None, p, True, None, None) for p in PIECES[1:]],
        ("artifact-update", None, "", True, True, None),
        ("status-update", "completed", None, None, None, True),
    ]
    assert seen["gemini-cli"] == [
        ("task", "submitted", None, None, None, None),
        ("status-update", "working", None, None, None, False),
        *[("status-update", "working", p, None, None, False) for p in PIECES],
        ("status-update", "input-required", None, None, None, True),
    ]
    assert seen["beeai"] == [
        ("task", "submitted", None, None, None, None),
        ("status-update", "working", None, None, None, False),
        ("status-update", "completed", whole, None, None, True),
    ]


async def test_the_frameworks_break_the_official_client_as_they_did():
    """The a2a-sdk 1.3 client as its docs set it up: LangGraph's frames after the first are not
    1.0's, so its stream has no reply; the Gemini CLI's reply is only in status messages and
    BeeAI's only in the status, where it does not look; Strands' two streams and MAF's 1.0
    answers it reads."""
    outcome = {}
    for quirk in ("langgraph", "strands", "strands-compliant", "gemini-cli", "beeai", "maf"):
        async with worded(quirk) as (url, _):
            outcome[quirk] = await official(url, streaming=True)
    assert outcome["langgraph"].startswith("no reply"), outcome
    assert outcome["gemini-cli"].startswith("no reply"), outcome
    assert outcome["beeai"].startswith("no reply"), outcome
    assert outcome["strands"] == outcome["strands-compliant"] == outcome["maf"] == "", outcome


async def test_beeai_fails_every_task_after_one_cancel_and_maf_answers_no_03():
    """beeai: the cancel is refused (-32002, the task still working) and every later task fails
    'Action has been aborted'; a reply before it is the completed status's message, with no
    artifact. maf: the card says 0.3 (``protocolVersion``, ``url``) beside its 1.0 interfaces
    only, and 0.3's message/send is -32601 while 1.0's SendMessage is answered."""
    send = {"jsonrpc": "2.0", "id": 2, "method": "message/send"}
    message = {
        "kind": "message",
        "messageId": "m",
        "role": "user",
        "parts": [{"kind": "text", "text": "hi"}],
    }
    async with worded("beeai") as (url, _), httpx.AsyncClient(timeout=30) as http:
        before = (await http.post(url + "/", json={**send, "params": {"message": message}})).json()
        cancel = {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tasks/cancel",
            "params": {"id": before["result"]["id"]},
        }
        refused = (await http.post(url + "/", json=cancel)).json()
        after = (
            await http.post(
                url + "/", json={**send, "params": {"message": {**message, "messageId": "n"}}}
            )
        ).json()
    assert (
        before["result"]["status"]["state"] == "completed" and "artifacts" not in before["result"]
    )
    assert before["result"]["status"]["message"]["parts"][0]["text"] == "".join(PIECES)
    assert refused["error"]["code"] == -32002 and "working" in refused["error"]["message"]
    assert after["result"]["status"]["state"] == "failed"
    assert after["result"]["status"]["message"]["parts"][0]["text"] == "Action has been aborted"
    async with worded("maf") as (url, _), httpx.AsyncClient(timeout=30) as http:
        card = (await http.get(url + "/.well-known/agent-card.json")).json()
        refused = (await http.post(url + "/", json={**send, "params": {"message": message}})).json()
        answered = await official(url, streaming=False)
    assert card["protocolVersion"] == "0.3" and card["url"]
    assert {i["protocolVersion"] for i in card["supportedInterfaces"]} == {"1.0"}
    assert refused["error"]["code"] == -32601 and answered == ""


def test_the_personas_read_a_stream_closed_whole_as_one_closed_with_its_last_piece():
    """Our server closes a streamed artifact with its last piece (``append: true``) or with the
    whole text (``append: false, lastChunk: true``, as ADK and fasta2a do); each persona sends
    the same frames for both."""

    def frame(text: str, append: bool, last: bool) -> dict[str, object]:
        artifact = {"artifactId": "a", "parts": [{"kind": "text", "text": text}]}
        return {
            "kind": "artifact-update",
            "taskId": "t",
            "contextId": "c",
            "artifact": artifact,
            "append": append,
            "lastChunk": last,
        }

    def brief(result: dict) -> tuple[object, ...]:
        holder = result.get("artifact") or (result.get("status") or {}).get("message") or {}
        text = "".join(p["text"] for p in holder.get("parts", []))
        return (result.get("kind"), text, result.get("append"), result.get("lastChunk"))

    pieces = [frame("Hel", False, False), frame("lo", True, False)]
    for name in ("langgraph", "strands", "strands-compliant", "gemini-cli", "beeai"):
        persona = QUIRKS[name].persona
        assert persona is not None
        seen = []
        for close in (frame("!", True, True), frame("Hello!", False, True)):
            rewrite = persona.stream()
            seen.append([brief(r) for f in [*pieces, close] for r in rewrite(f)])
        assert seen[0] == seen[1], (name, seen)
