"""Cassettes: recording a session, replaying it as a peer, and against a live peer (real servers:
ours, the official a2a-sdk server, and the official a2a-sdk client against a replay)."""

from __future__ import annotations

import asyncio
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import toolnexus as tn
from toolnexus.debug.cassette import CassetteError, load
from toolnexus.debug.replay import ReplayPeer, diff

from .conftest import EXAMPLE_SKILLS
from .helpers import arun_cli, read_until, started_cli
from .peers.sdk_server import sdk_server

CASSETTES = Path(__file__).parent / "cassettes"
TOKEN = "cassette-secret-token-42"


async def demo_session(url: str, record: Path | None = None, **options) -> list[tuple[str, str]]:
    """A short session with the demo agent: a blocking send, an approval round trip (input-required,
    then answered on the same task), and a stream. Returns each task's final (state, reply)."""
    out = []
    async with tn.A2AClient(url, record=record, **options) as client:
        task = await client.send("weather in Lisbon please", blocking=True)
        out.append((task.state.value, task.reply))
        task = await client.send("please approve the report")
        async for _ in client.watch(task.id, poll_every=0.05, stream=False):
            pass
        asked = await client.get(task.id)
        out.append((asked.state.value, asked.status.message.text if asked.status.message else ""))
        task = await client.send(
            "yes, publish it", task_id=asked.id, context_id=asked.context_id, blocking=True
        )
        out.append((task.state.value, task.reply))
        streamed = [t async for t in client.stream("hello there")]
        out.append((streamed[-1].state.value, streamed[-1].reply))
    return out


async def serve_demo(token: str | None = None):
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    auth = tn.Auth.bearer(token) if token else None
    return await tk.serve(
        "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="demo-desk", auth=auth)
    )


def _without_moments(path: Path, origin: str) -> list[dict]:
    """A cassette's exchanges without what changes each time: times, durations, the peer's port."""
    rows = []
    for line in path.read_text().splitlines()[1:]:
        line = re.sub(r'"20\d\d-\d\d-\d\dT[0-9:.]+Z?"', '"T"', line.replace(origin, "http://peer"))
        row = json.loads(line)
        row.pop("time"), row.pop("ms")
        rows.append(row)
    return rows


async def test_a_session_records_masked_with_stable_ids_and_replays_as_the_peer(tmp_path):
    first, second = await serve_demo(TOKEN), await serve_demo(TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        answers = await demo_session(first.url, tmp_path / "one.jsonl", headers=auth)
        assert await demo_session(second.url, tmp_path / "two.jsonl", headers=auth) == answers
    finally:
        await first.stop()
        await second.stop()
    assert [a[0] for a in answers] == ["completed", "input-required", "completed", "completed"]
    text = (tmp_path / "one.jsonl").read_text()
    assert TOKEN not in text and '"authorization": "Bearer ***"' in text
    assert json.loads(text.splitlines()[0])["toolnexus_cassette"] == 1
    # the same session against another server (other ids, other port) gives the same cassette
    assert _without_moments(tmp_path / "one.jsonl", first.url) == _without_moments(
        tmp_path / "two.jsonl", second.url
    )
    tape = load(tmp_path / "one.jsonl")
    assert [x.rpc_method for x in tape][:3] == [None, "SendMessage", "SendMessage"]
    assert [x.task_id for x in tape][1:3] == ["task-1", "task-2"]
    assert not re.search(
        r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}", text
    )  # no uuid left: all made stable

    async with (
        ReplayPeer(tape) as peer,
        httpx.AsyncClient() as http,
    ):  # offline: the servers are gone
        assert await demo_session(peer.url) == answers
        card = (await http.get(peer.url + "/.well-known/agent-card.json")).json()
    assert card["url"] == peer.url + "/"  # the recorded origin is rewritten to the replay's own
    assert peer.misses == []
    assert [op for op, _ in peer.served][:3] == [
        "GET /.well-known/agent-card.json",
        "SendMessage",
        "SendMessage",
    ]


async def test_the_official_sdk_client_is_answered_by_a_replay(tmp_path):
    """A cassette recorded by our client, played to the official a2a-sdk 1.x client (which builds
    its requests its own way: matched by operation)."""
    from a2a.client import ClientConfig, ClientFactory
    from a2a.client.card_resolver import A2ACardResolver
    from a2a.types import a2a_pb2 as pb

    handle = await serve_demo()
    try:
        await demo_session(handle.url, tmp_path / "s.jsonl")
    finally:
        await handle.stop()
    async with (
        ReplayPeer(tmp_path / "s.jsonl", match="method") as peer,
        httpx.AsyncClient(timeout=10) as http,
    ):
        card = await A2ACardResolver(http, peer.url).get_agent_card()
        client = ClientFactory(ClientConfig(streaming=False, httpx_client=http)).create(card)
        request = pb.SendMessageRequest(
            message=pb.Message(
                message_id="m-1", role=pb.ROLE_USER, parts=[pb.Part(text="anything at all")]
            )
        )
        [task] = [ev.task async for ev in client.send_message(request) if ev.HasField("task")]
        await client.close()
    assert card.name == "demo-desk"
    assert task.id == "task-1" and task.status.state == pb.TASK_STATE_COMPLETED
    assert "weather" in "".join(p.text for a in task.artifacts for p in a.parts)
    assert peer.misses == []


async def test_diff_against_live_peers_reports_what_changed(tmp_path):
    handle = await serve_demo(TOKEN)
    auth = {"Authorization": f"Bearer {TOKEN}"}
    try:
        await demo_session(handle.url, tmp_path / "ours.jsonl", headers=auth)
        same = await diff(tmp_path / "ours.jsonl", handle.url, headers=auth)
        refused = await diff(
            tmp_path / "ours.jsonl", handle.url
        )  # the token was masked: not sent again
    finally:
        await handle.stop()
    assert same.ok, same.text()
    assert same.states["task-2"] == {
        "recorded": ["input-required", "completed"],
        "live": ["input-required", "completed"],
    }
    assert not refused.ok
    assert {
        (d.operation, d.what, d.recorded, d.live) for d in refused.differences if d.what == "status"
    } >= {("SendMessage", "status", "200", "401")}
    assert any("'authorization' (masked): pass it again" in n for n in refused.notes)

    # recorded against the official SDK server, checked against a fresh one (the same) and ours (not)
    async with sdk_server() as url:
        async with tn.A2AClient(url, record=tmp_path / "sdk.jsonl") as client:
            asked = await client.send("ask me a question", blocking=True)
            await client.send("blue", task_id=asked.id, context_id=asked.context_id, blocking=True)
    async with sdk_server() as url:
        again = await diff(tmp_path / "sdk.jsonl", url)
    assert again.ok, again.text()
    assert again.states == {
        "task-1": {
            "recorded": ["input-required", "completed"],
            "live": ["input-required", "completed"],
        }
    }
    handle = await serve_demo()
    try:
        changed = await diff(tmp_path / "sdk.jsonl", handle.url)
    finally:
        await handle.stop()
    assert not changed.ok
    states = [d for d in changed.differences if d.what == "states"]
    assert [(d.recorded, d.live) for d in states][0][0] == "input-required → completed"
    assert "difference(s)" in changed.text().splitlines()[0]

    # a poll recorded once the task had settled is asked again until the live task settles too
    handle = await serve_demo()
    try:
        async with tn.A2AClient(handle.url, record=tmp_path / "slow.jsonl") as client:
            task = await client.send("slow 1 then answer")
            await asyncio.sleep(1.5)
            assert (await client.get(task.id)).state.value == "completed"
        slow = await diff(tmp_path / "slow.jsonl", handle.url)
    finally:
        await handle.stop()
    assert slow.ok and slow.states == {
        "task-1": {"recorded": ["completed"], "live": ["completed"]}
    }, slow.text()

    gone = await diff(tmp_path / "ours.jsonl", handle.url)  # stopped: nothing answers
    assert not gone.ok and {d.what for d in gone.differences} >= {"unanswered"}


async def test_the_pytest_fixtures_verify_a_committed_cassette(a2a_verify, a2a_replay):
    """The project's own regression test through its plugin: the demo agent still answers as it did
    when tests/cassettes/demo-desk.jsonl was recorded (re-record: python -m tests.test_replay)."""
    handle = await serve_demo()
    try:
        report = await a2a_verify.check("cassettes/demo-desk.jsonl", handle.url)
    finally:
        await handle.stop()
    assert report.ok and report.exchanges == 7
    peer = a2a_replay("cassettes/demo-desk.jsonl")  # served from a thread of its own
    assert await demo_session(peer.url) == [
        ("completed", recorded_reply(peer, "weather in Lisbon please")),
        ("input-required", recorded_question(peer)),
        ("completed", recorded_reply(peer, "yes, publish it")),
        ("completed", "You said: hello there"),
    ]
    assert "Lisbon" in recorded_reply(peer, "weather in Lisbon please")
    assert recorded_question(peer).startswith("Publish this report?\n\nReport\n")  # the draft


def recorded_question(peer: ReplayPeer) -> str:
    """What the recorded approval task asked (its input-required status message)."""
    [x] = [x for x in peer.exchanges if x.rpc_method == "GetTask"][-1:]
    return x.response["json"]["result"]["status"]["message"]["parts"][0]["text"]


def recorded_reply(peer: ReplayPeer, text: str) -> str:
    """The reply of the recorded blocking send of ``text``, read from the cassette itself."""
    [x] = [
        x
        for x in peer.exchanges
        if x.rpc_method == "SendMessage"
        and x.request["json"]["params"]["message"]["parts"][0]["text"] == text
    ]
    return x.response["json"]["result"]["task"]["artifacts"][0]["parts"][0]["text"]


def test_the_plugin_is_registered_for_any_test_suite(tmp_path):
    """A suite with no conftest gets the fixtures through the pytest11 entry point."""
    (tmp_path / "cassettes").mkdir()
    (tmp_path / "cassettes" / "demo.jsonl").write_bytes(
        (CASSETTES / "demo-desk.jsonl").read_bytes()
    )
    (tmp_path / "test_theirs.py").write_text(
        "import httpx\n"
        "def test_replayed_card(a2a_replay):\n"
        "    peer = a2a_replay('cassettes/demo.jsonl')\n"
        "    assert httpx.get(peer.url + '/.well-known/agent-card.json').json()['name'] == 'demo-desk'\n"
        "def test_verify_fails_with_the_report(a2a_verify):\n"
        "    a2a_verify('cassettes/demo.jsonl', 'http://127.0.0.1:9')\n"
    )
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=120,
    )
    assert "1 failed, 1 passed" in run.stdout, run.stdout + run.stderr
    assert "unanswered" in run.stdout and "Traceback" not in run.stdout


async def test_a_replay_peer_refuses_what_it_has_no_answer_for(tmp_path):
    tape = tmp_path / "t.jsonl"
    hostile = "\x1b[31m[bold]red[/bold]</pre><script>x</script>"
    tape.write_text(
        "\n".join(
            json.dumps(row)
            for row in [
                {"toolnexus_cassette": 1, "recorded": "2026-12-02T00:00:00Z"},
                {
                    "seq": 1,
                    "direction": "out",
                    "method": "POST",
                    "url": "http://10.1.2.3:7/",
                    "rpc_method": "GetTask",
                    "request": {
                        "headers": {},
                        "json": {
                            "jsonrpc": "2.0",
                            "id": 1,
                            "method": "GetTask",
                            "params": {"id": "task-1"},
                        },
                    },
                    "response": {
                        "status": 200,
                        "headers": {
                            "content-type": "application/json",
                            "x-evil": "a\r\nset-cookie: x=1",
                            "bad name": "x",
                            "content-length": "1",
                        },
                        "json": {
                            "jsonrpc": "2.0",
                            "id": 1,
                            "result": {
                                "id": "task-1",
                                "note": hostile,
                                "url": "http://10.1.2.3:7/x",
                            },
                        },
                    },
                },
            ]
        )
        + "\n"
    )
    async with ReplayPeer(tape) as peer, httpx.AsyncClient(timeout=10) as http:
        hit = await http.post(
            peer.url + "/",
            json={"jsonrpc": "2.0", "id": "abc", "method": "GetTask", "params": {"id": "task-1"}},
        )
        other = await http.post(
            peer.url + "/",
            json={"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {"id": "task-2"}},
        )
        card = await http.get(peer.url + "/.well-known/agent-card.json")
        junk = await http.post(peer.url + "/", content=b"\x00not json")
        big = await http.post(peer.url + "/", content=b"x" * (16 * 1024 * 1024 + 10))
        foreign = await http.get(peer.url + "/", headers={"Host": "attacker.example"})
    assert (
        "set-cookie" not in hit.headers and "x-evil" not in hit.headers
    )  # a header never splits the answer
    assert hit.json() == {
        "jsonrpc": "2.0",
        "id": "abc",
        "result": {"id": "task-1", "note": hostile, "url": peer.url + "/x"},
    }  # served as recorded, not interpreted
    assert other.json()["id"] == 7 and other.json()["error"]["code"] == -32603
    assert "no recorded exchange matching GetTask" in other.json()["error"]["message"]
    assert card.status_code == 404 and junk.status_code == 404 and big.status_code == 413
    assert foreign.status_code == 421
    assert peer.misses == ["GetTask", "GET /.well-known/agent-card.json", "POST /"]


HOSTILE_HEADERS = {
    "set-cookie": "session=stolen; Path=/",
    "access-control-allow-origin": "*",
    "access-control-allow-credentials": "true",
    "refresh": "0; url=http://attacker.example/",
    "location": "http://attacker.example/",
    "content-security-policy": "script-src *",
    "x-frame-options": "ALLOWALL",
    "link": "<http://attacker.example/x.js>; rel=preload",
    "cache-control": "public, max-age=31536000",
}


def _hostile(seq: int, path: str, content_type: str, body: dict) -> dict:
    """A recorded GET of ``path`` answered with ``body`` (``text``, ``json`` or ``frames``) and
    ``content_type`` among every hostile header."""
    return {
        "seq": seq,
        "direction": "out",
        "method": "GET",
        "url": f"http://10.1.2.3:7{path}",
        "rpc_method": None,
        "request": {"headers": {}},
        "response": {
            "status": 200,
            "headers": {"content-type": content_type, **HOSTILE_HEADERS},
            **body,
        },
    }


async def test_a_hostile_cassette_is_served_with_none_of_its_recorded_headers(tmp_path):
    """Issue 49: a cassette's recorded headers were served as recorded: ``text/html`` with a
    script, cookies for every local port, CORS with credentials, a refresh to elsewhere. A replay
    serves a content type from a short list (JSON, A2A's JSON, an event stream; anything else as
    plain text, never sniffed) and no other recorded header."""
    script = "<html><script>fetch('http://127.0.0.1:1/')</script></html>"
    tape = tmp_path / "hostile.jsonl"
    rows = [
        {"toolnexus_cassette": 1, "recorded": "2026-12-02T00:00:00Z"},
        _hostile(1, "/page", "text/html", {"text": script}),
        _hostile(
            2,
            "/.well-known/agent-card.json",
            "application/json; charset=utf-8",
            {"json": {"name": "card"}},
        ),
        _hostile(3, "/tasks/t-1", "application/a2a+json", {"json": {"id": "t-1"}}),
        _hostile(4, "/tasks/t-1:subscribe", "text/html", {"frames": [{"id": "t-1"}]}),
    ]
    tape.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    async with ReplayPeer(tape, match="method") as peer, httpx.AsyncClient(timeout=10) as http:
        page = await http.get(peer.url + "/page")
        card = await http.get(peer.url + "/.well-known/agent-card.json")
        task = await http.get(peer.url + "/tasks/t-1")
        stream = await http.get(peer.url + "/tasks/t-1:subscribe")
    served = {"page": page, "card": card, "task": task, "stream": stream}
    for name, answer in served.items():
        assert answer.status_code == 200, (name, answer.text)
        names = set(answer.headers) - {"date", "server", "content-length", "transfer-encoding"}
        assert names == {"content-type", "x-content-type-options"}, (name, answer.headers)
        assert answer.headers["x-content-type-options"] == "nosniff"
    assert page.headers["content-type"] == "text/plain; charset=utf-8"
    assert page.text == script  # the bytes as data, never as a page
    assert card.headers["content-type"] == "application/json; charset=utf-8"
    assert task.headers["content-type"] == "application/a2a+json"
    assert card.json() == {"name": "card"} and task.json() == {"id": "t-1"}
    assert stream.headers["content-type"] == "text/event-stream"
    assert stream.text == 'data: {"id":"t-1"}\n\n'


async def test_a_recorded_304_answers_only_a_conditional_request(tmp_path):
    """A session that fetched the card twice, the second time conditionally, holds a 200 and a 304
    for one request; served in recorded order, a caller without a copy could get the 304 (the TUI's
    Wire cassette did, whenever the server's side of the exchange was written first)."""
    card = "/.well-known/agent-card.json"
    not_modified = _hostile(1, card, "application/json", {"text": ""})
    not_modified["request"] = {"headers": {"if-none-match": '"v1"'}}
    not_modified["response"] = {"status": 304, "headers": {"etag": '"v1"'}, "text": ""}
    tape = tmp_path / "card-twice.jsonl"
    rows = [
        {"toolnexus_cassette": 1, "recorded": "2026-12-02T00:00:00Z"},
        not_modified,
        _hostile(2, card, "application/json", {"json": {"name": "card"}}),
    ]
    tape.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    async with ReplayPeer(tape, match="method") as peer, httpx.AsyncClient(timeout=10) as http:
        plain = [await http.get(peer.url + card) for _ in range(2)]
        conditional = await http.get(peer.url + card, headers={"if-none-match": '"v1"'})
    assert [r.status_code for r in plain] == [200, 200]
    assert plain[0].json() == {"name": "card"}
    assert conditional.status_code == 304
    tape.write_text("\n".join(json.dumps(row) for row in rows[:2]) + "\n")
    async with ReplayPeer(tape, match="method") as peer, httpx.AsyncClient(timeout=10) as http:
        alone = await http.get(peer.url + card)
    assert alone.status_code == 404 and "no recorded exchange" in alone.text


@pytest.mark.parametrize(
    "match, context, text, answered",
    [
        ("strict", None, "weather in Lisbon please", True),
        ("strict", "a-context-the-client-made", "weather in Lisbon please", False),
        ("lenient", "a-context-the-client-made", "weather in Lisbon please", True),
        ("lenient", None, "weather in Oslo please", False),
        ("method", "a-context-the-client-made", "weather in Oslo please", True),
    ],
)
async def test_how_a_request_finds_its_recorded_answer(match, context, text, answered):
    message = {"messageId": "new-each-time", "role": "ROLE_USER", "parts": [{"text": text}]}
    if context:
        message["contextId"] = context
    body = {
        "jsonrpc": "2.0",
        "id": 5,
        "method": "SendMessage",
        "params": {"message": message, "configuration": {"returnImmediately": False}},
    }
    async with (
        ReplayPeer(CASSETTES / "demo-desk.jsonl", match=match) as peer,
        httpx.AsyncClient() as http,
    ):
        answer = (await http.post(peer.url + "/", json=body, headers={"A2A-Version": "1.0"})).json()
    assert ("result" in answer) is answered, answer
    assert answer["id"] == 5
    if answered:
        assert answer["result"]["task"]["id"] == "task-1"


@pytest.mark.parametrize(
    "content, error",
    [
        ("", "is empty: not a toolnexus cassette"),
        ("{nope\n", "line 1 is not JSON"),
        ('{"hello": 1}\n', "is not a toolnexus cassette"),
        ('{"toolnexus_cassette": 9}\n', "is cassette format 9; this toolnexus reads 1"),
        ('{"toolnexus_cassette": 1}\n[1, 2]\n', "line 2 is not a JSON object"),
        (
            '{"toolnexus_cassette": 1}\n{"method": "GET", "url": "http://a/"}\n',
            "line 2: the exchange has no valid 'request'",
        ),
    ],
)
def test_a_file_that_is_not_a_cassette_says_why(tmp_path, content, error):
    path = tmp_path / "bad.jsonl"
    path.write_text(content)
    with pytest.raises(CassetteError, match=re.escape(error)):
        load(path)


def test_a_cassette_with_several_peers_plays_the_one_named(tmp_path):
    rows = (
        [{"toolnexus_cassette": 1}]
        + [
            {
                "method": "GET",
                "url": f"http://127.0.0.1:{port}/.well-known/agent-card.json",
                "request": {"headers": {}},
                "response": {"status": 200, "headers": {}, "json": {"name": str(port)}},
            }
            for port in (1001, 1002)
        ]
        + [  # recorded, never replayed: a gRPC call
            {
                "method": "POST",
                "url": "grpc://127.0.0.1:1003/a2a.v1.A2AService/GetTask",
                "request": {"headers": {}},
                "response": {"status": 200, "headers": {}, "json": {}},
            }
        ]
    )
    path = tmp_path / "two.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows))
    with pytest.raises(CassetteError, match="talked to 2 peers .*1001.*1002.*name the one to play"):
        ReplayPeer(path)
    with pytest.raises(CassetteError, match="has no exchange with http://127.0.0.1:9"):
        ReplayPeer(path, origin="http://127.0.0.1:9")
    assert [
        x.response["json"]["name"]
        for x in ReplayPeer(path, origin="http://127.0.0.1:1002").exchanges
    ] == ["1002"]
    with pytest.raises(ValueError, match="match must be one of strict, lenient, method"):
        ReplayPeer(path, origin="http://127.0.0.1:1002", match="fuzzy")


async def test_cli_records_replays_and_diffs(tmp_path):
    handle = await serve_demo()
    try:
        cassette = tmp_path / "cli.jsonl"
        code, _, err = await arun_cli("send", handle.url, "greet Ada", "--record", str(cassette))
        assert code == 0, err
        code, out, err = await arun_cli("replay", str(cassette), "--against", handle.url, "--json")
    finally:
        await handle.stop()
    assert code == 0, out + err
    assert json.loads(out)["ok"] is True
    with started_cli("replay", str(cassette), "--json") as proc:
        started = read_until(proc, "ready")[0]
        assert started["exchanges"] == len(load(cassette)) and started["match"] == "lenient"
        async with tn.A2AClient(started["url"]) as client:
            task = await client.send("greet Ada")
            async for event in client.watch(task.id, poll_every=0.05, stream=False):
                task = event.task
        assert task.id == "task-1" and task.state.value == "completed" and "greet" in task.reply
        async with httpx.AsyncClient() as http:
            await http.post(
                started["url"] + "/", json={"jsonrpc": "2.0", "id": 1, "method": "\x1b[2Jnope"}
            )
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        stopped = json.loads(proc.stdout.read().strip().splitlines()[-1])
        assert stopped["event"] == "stopped" and stopped["unmatched"] == ["\x1b[2Jnope"]
    code, _, err = await arun_cli("replay", str(tmp_path / "missing.jsonl"))
    assert code == 2 and err.startswith("toolnexus: cannot read the cassette")
    assert len(err.strip().splitlines()) == 1


async def test_a_trace_and_a_miss_read_as_what_they_are(tmp_path):
    """A task can end before ``send`` subscribes to follow it: the peer's refusal is on the trace,
    said to be expected. A request the replay has no answer for says so once, and how to match
    looser. The recording makes the first happen every time: the task has ended (on the server's
    side) before the subscription is sent."""
    handle = await serve_demo()
    tape = tmp_path / "ended.jsonl"
    try:
        async with tn.A2AClient(handle.url, record=tape) as client:
            task = await client.send("hello")
            async with asyncio.timeout(30):
                while not (await handle.runner.get(task.id)).state.terminal:
                    await asyncio.sleep(0.02)
            with pytest.raises(tn.RPCError, match="already completed"):
                async for _ in client.resubscribe(task.id):
                    pass
            await client.get(task.id)
    finally:
        await handle.stop()
    with started_cli("replay", str(tape), "--json", "--match", "method") as proc:
        url = read_until(proc, "ready")[0]["url"]
        code, out, err = await arun_cli("send", url, "hello", "--trace")
    assert code == 0 and out.strip() == "You said: hello", err
    said = err.splitlines()
    refused = next(i for i, line in enumerate(said) if " SubscribeToTask " in line)
    answer = next(i for i in range(refused, len(said)) if said[i].startswith("<-- "))
    assert "already completed" in said[answer]
    assert said[answer + 1].strip().startswith("(expected, not a problem: the task had ended")
    with started_cli("replay", str(tape), "--json") as proc:  # lenient: the text must match
        url = read_until(proc, "ready")[0]["url"]
        code, _, err = await arun_cli("send", url, "something never said")
    assert code == 1 and err.count("replay") == 1, err
    assert err.startswith("toolnexus: the replay has no recorded exchange matching SendMessage")
    assert "--match method" in err


if __name__ == "__main__":  # re-record tests/cassettes/demo-desk.jsonl from the demo agent

    async def _record() -> None:
        handle = await serve_demo()
        try:
            await demo_session(handle.url, CASSETTES / "demo-desk.jsonl")
        finally:
            await handle.stop()

    asyncio.run(_record())


async def test_a_hostile_live_peer_cannot_crash_or_hold_the_diff():
    """900-deep JSON for every answer, and a stream that never ends: differences, within the timeout."""
    from starlette.applications import Starlette
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    from toolnexus.http.server import AsgiServer

    deep = "[" * 900 + "]" * 900

    async def rpc(request):
        if b"SendStreamingMessage" in await request.body():

            async def forever():
                while True:
                    yield b"data: {}\n\n"
                    await asyncio.sleep(0.05)

            return StreamingResponse(forever(), media_type="text/event-stream")
        return Response(
            '{"jsonrpc":"2.0","id":"1","result":' + deep + "}", media_type="application/json"
        )

    async def card(request):
        return Response(deep, media_type="application/json")

    server = AsgiServer(
        Starlette(
            routes=[Route("/", rpc, methods=["POST"]), Route("/.well-known/agent-card.json", card)]
        )
    )
    await server.start()
    try:
        async with asyncio.timeout(30):
            report = await diff(CASSETTES / "demo-desk.jsonl", server.url, timeout=1.0, settle=1.0)
    finally:
        await server.stop()
    assert not report.ok
    assert ("SendMessage", "shape", "(body)", "JSON", "not JSON") in {
        (d.operation, d.what, d.path, d.recorded, d.live) for d in report.differences
    }
    assert any(
        d.operation == "SendStreamingMessage"
        and d.what == "unanswered"
        and "AnswerTooSlow" in d.live
        for d in report.differences
    )


async def test_a_hostile_cassettes_odd_statuses_frames_and_depths_are_served_as_data(tmp_path):
    """Issue 59 item 8: a recorded status of 101 was served as a protocol switch and 999 broke the
    answer (a traceback); frames that were not a list failed; a text frame holding a blank line
    ended its event and began one of the cassette's choosing; JSON nested 900 levels was a 500.
    Now a status outside 200-599 and JSON past 200 levels are a 502 saying so, frames are a list,
    and each line of a frame's text is its own data line."""
    rows = [{"toolnexus_cassette": 1, "recorded": "2026-12-02T00:00:00Z"}]
    cases = {
        "/s101": {"status": 101, "json": {"ok": 1}},
        "/s999": {"status": 999, "json": {"ok": 1}},
        "/frames-int": {"status": 200, "frames": 5},
        "/inject": {"status": 200, "frames": ['{"id": "t-1"}\n\ndata: {"evil": 1}\r\nevent: x']},
        "/deep": {"status": 200, "json": "DEEP"},
    }
    for seq, (path, response) in enumerate(cases.items(), start=1):
        row = _hostile(seq, path, "application/json", {})
        row["response"] = {"headers": {}, **response}
        rows.append(row)
    tape = tmp_path / "odd.jsonl"
    nested = '{"a":' * 900 + "{}" + "}" * 900
    tape.write_text(("\n".join(json.dumps(row) for row in rows) + "\n").replace('"DEEP"', nested))
    async with ReplayPeer(tape, match="method") as peer, httpx.AsyncClient(timeout=10) as http:
        got = {path: await http.get(peer.url + path) for path in cases}
        again = await http.get(peer.url + "/inject")  # still serving
    for path in ("/s101", "/s999", "/deep"):
        assert got[path].status_code == 502 and "cannot be served" in got[path].text, path
    assert got["/frames-int"].status_code == 200 and got["/frames-int"].text == ""
    events = [e for e in got["/inject"].text.split("\n\n") if e]
    assert len(events) == 1, got["/inject"].text  # one event, its text in three data lines
    assert events[0] == 'data: {"id": "t-1"}\ndata: \ndata: data: {"evil": 1}\ndata: event: x'
    assert again.status_code == 200
