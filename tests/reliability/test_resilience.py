"""Load, slow clients, faults, a crash mid-load and security: nothing lost, nothing leaked."""

from __future__ import annotations

import asyncio
import json
import logging
import signal
import time
from pathlib import Path

import httpx
import pytest

import toolnexus as tn
from toolnexus.llm.demo import demo_generate
from toolnexus.protocol.model import TaskState

from ..helpers import assert_legal, free_port, read_until, started_cli
from ..serve.wire import rpc, v03_message
from ..stubs import Reply, ScriptedServer, openai_text

# -- load ----------------------------------------------------------------------------------------


async def test_a_thousand_concurrent_tasks_with_a_keeping_up_and_a_slow_subscriber():
    calls: list[str] = []
    tk = await tn.create_toolkit(
        builtins=False, skills=[tn.SkillDef("greet", "says hello", "Say hello.")]
    )
    bus = tn.EventBus(history=100_000, history_bytes=1 << 40)
    seen: list[tn.TaskEvent] = []
    slow_seen: list[object] = []
    working = peak = 0

    async def keeping_up() -> None:
        nonlocal working, peak
        async for ev in bus.subscribe(replay=False, max_queue=100_000):
            if isinstance(ev, tn.TaskEvent):
                seen.append(ev)
                working += {TaskState.WORKING: 1, TaskState.COMPLETED: -1}.get(ev.state, 0)
                peak = max(peak, working)

    async def slow() -> None:  # reads one event a second: coalesced or dropped, never in the way
        async for ev in bus.subscribe(replay=False, max_queue=50):
            slow_seen.append(ev)
            await asyncio.sleep(1)

    release = asyncio.Event()

    async def held(request: dict) -> object:  # every task works until all thousand work
        await release.wait()  # (a fixed "slow 4" let the first end before the last began)
        return await demo_generate(request)

    readers = [asyncio.ensure_future(keeping_up()), asyncio.ensure_future(slow())]
    await asyncio.sleep(0)
    async with tk.serve(
        client=tn.create_in_process_client(held),
        a2a=tn.A2AConfig(name="load"),
        events=bus,
        on_task=lambda ev: calls.append(ev["id"]),
    ) as h:
        t0 = time.monotonic()
        host, port = h.url.removeprefix("http://").split(":")

        async def sender(
            first: int,
        ) -> list[dict]:  # raw keep-alive HTTP: a general client is too slow here
            reader, writer = await asyncio.open_connection(host, int(port))
            out = []
            for i in range(first, first + 20):
                text = ("greet " if i % 3 == 0 else "") + f"task {i}"
                body = json.dumps(
                    {
                        "jsonrpc": "2.0",
                        "id": i,
                        "method": "message/send",
                        "params": {
                            "message": v03_message(text),
                            "configuration": {"blocking": False},
                        },
                    }
                ).encode()
                writer.write(
                    f"POST / HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
                    f"Content-Length: {len(body)}\r\n\r\n".encode()
                    + body
                )
                head = await reader.readuntil(b"\r\n\r\n")
                length = int(
                    next(
                        line.split(b":")[1]
                        for line in head.split(b"\r\n")
                        if line.lower().startswith(b"content-length")
                    )
                )
                out.append(json.loads(await reader.readexactly(length)))
            writer.close()
            return out

        sent = [
            r for batch in await asyncio.gather(*(sender(k * 20) for k in range(50))) for r in batch
        ]
        assert all(r["result"]["status"]["state"] == "submitted" for r in sent)
        for _ in range(600):
            if working >= 1000:
                break
            await asyncio.sleep(0.05)
        release.set()
        for _ in range(600):
            if len(calls) >= 1000 and len(seen) >= 3000:
                break
            await asyncio.sleep(0.05)
        elapsed = time.monotonic() - t0
    for reader in readers:
        reader.cancel()
    await asyncio.gather(*readers, return_exceptions=True)
    assert len(calls) == 1000 and len(set(calls)) == 1000  # on_task exactly once each
    per_task: dict[str, list[TaskState]] = {}
    for ev in seen:
        per_task.setdefault(ev.task_id, []).append(ev.state)
    assert len(per_task) == 1000
    assert all(
        states == [TaskState.SUBMITTED, TaskState.WORKING, TaskState.COMPLETED]
        for states in per_task.values()
    )
    assert [e.seq for e in seen] == sorted(e.seq for e in seen)  # each exactly once, in order
    assert_legal(bus.history())
    assert peak == 1000, peak  # truly concurrent
    assert len(slow_seen) < 50  # the slow one fell behind; the server did not wait for it
    print(
        f"\n1,000 tasks, {peak} in flight at once, all terminal in {elapsed:.2f}s; "
        f"keeping-up subscriber saw {len(seen)} transitions, the slow one {len(slow_seen)}"
    )


# -- slow clients ----------------------------------------------------------------------------------


async def test_a_client_sending_a_byte_a_second_does_not_stop_others():
    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig()) as h,
        httpx.AsyncClient() as http,
    ):
        host, port = h.url.removeprefix("http://").split(":")
        reader, writer = await asyncio.open_connection(host, int(port))
        body = json.dumps(
            {
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {"message": v03_message("slowly")},
            }
        ).encode()
        writer.write(
            f"POST / HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        await writer.drain()

        async def trickle() -> None:
            for byte in body[:4]:  # bounded: four bytes, one a second
                writer.write(bytes([byte]))
                await writer.drain()
                await asyncio.sleep(1)

        dribble = asyncio.ensure_future(trickle())
        latencies = []
        for i in range(20):
            t = time.monotonic()
            r = await rpc(http, h.url, "message/send", {"message": v03_message(f"meanwhile {i}")})
            latencies.append(time.monotonic() - t)
            assert r["result"]["status"]["state"] == "completed"
            await asyncio.sleep(0.1)
        await dribble
        writer.close()
        assert max(latencies) < 1.0


# -- faults ------------------------------------------------------------------------------------------


async def test_model_endpoint_faults_fail_their_tasks_and_others_are_served():
    replies = {
        "boom": [Reply(500, {"error": "kaput"})] * 3,
        "busy": [
            Reply(429, {"error": "slow down"}, {"Retry-After": "0"}),
            openai_text("after retry"),
        ],
        "garbage": [Reply(raw=b"<html>not json</html>")],
        "hang": [Reply(delay=30)],
    }

    from starlette.applications import Starlette
    from starlette.responses import Response
    from starlette.routing import Route

    from toolnexus.http.server import AsgiServer

    counts: dict[str, int] = {}

    async def model(request):
        body = json.loads(await request.body())
        prompt = body["messages"][-1]["content"]
        key = next((k for k in replies if k in prompt), None)
        if key is None:
            reply = openai_text(f"fine: {prompt}")
        else:
            counts[key] = counts.get(key, 0) + 1
            script = replies[key]
            reply = script[min(counts[key] - 1, len(script) - 1)]
        if reply.delay:
            await asyncio.sleep(reply.delay)
        content = reply.raw if reply.raw is not None else json.dumps(reply.body).encode()
        return Response(content, reply.status, headers=reply.headers, media_type="application/json")

    stub = AsgiServer(Starlette(routes=[Route("/chat/completions", model, methods=["POST"])]))
    await stub.start()
    client = tn.create_client(
        stub.url,
        "openai",
        "m",
        api_key="sk-fault-key",
        retries=2,
        retry_base_ms=10,
        request_timeout=1.0,
    )
    tk = await tn.create_toolkit(builtins=False)
    try:
        async with (
            tk.serve(client=client, a2a=tn.A2AConfig(blocking_timeout=10)) as h,
            httpx.AsyncClient() as http,
        ):

            async def send(text):
                return (await rpc(http, h.url, "message/send", {"message": v03_message(text)}))[
                    "result"
                ]

            t0 = time.monotonic()
            results = await asyncio.gather(
                send("boom"),
                send("busy"),
                send("garbage"),
                send("hang"),
                *(send(f"normal {i}") for i in range(5)),
            )
            by_text = {r["history"][0]["parts"][0]["text"]: r for r in results}
            boom = by_text["boom"]["status"]
            # the caller learns the kind of failure, never the endpoint's URL or its answer
            assert (
                boom["state"] == "failed"
                and boom["message"]["parts"][0]["text"]
                == "model error: the model endpoint failed (HTTP 500)"
            )
            assert counts["boom"] == 3
            assert by_text["busy"]["status"]["state"] == "completed" and counts["busy"] == 2
            garbage = by_text["garbage"]["status"]["message"]["parts"][0]["text"]
            assert (
                garbage
                == "model error: the model endpoint could not be reached or gave an unusable answer"
            )
            hang = by_text["hang"]["status"]["message"]["parts"][0]["text"]
            assert (
                by_text["hang"]["status"]["state"] == "failed"
                and hang == "model error: the model did not answer in time"
            )
            assert stub.url not in json.dumps(results)
            assert all(by_text[f"normal {i}"]["status"]["state"] == "completed" for i in range(5))
            assert time.monotonic() - t0 < 8
            assert not any("sk-fault-key" in json.dumps(r) for r in results)
    finally:
        await client.aclose()
        await stub.stop()


async def test_a_peer_that_dies_mid_poll_gives_the_tool_an_error():
    served = await tn.create_toolkit(
        builtins=False, skills=[tn.SkillDef("work", "works slowly", "Work.")]
    )
    h = await served.serve(
        client=tn.demo_client(), a2a=tn.A2AConfig(name="doomed", streaming=False)
    )
    caller = await tn.create_toolkit(
        builtins=False, agents=[tn.Agent(card=h.card_url, poll_every=0.05, timeout=30)]
    )
    async with caller:
        call = asyncio.ensure_future(caller.execute("doomed_work", {"task": "slow 20"}))
        await asyncio.sleep(0.5)
        await h.stop()  # the peer dies while the tool polls
        t0 = time.monotonic()
        result = await asyncio.wait_for(call, 10)
    assert result.is_error and "A2A task" in result.output and "error" in result.output
    assert time.monotonic() - t0 < 5


# -- a crash mid-load ---------------------------------------------------------------------------------


def _serve_process(store: Path, port: int):
    """``toolnexus serve`` on a file store, ready; stopped however the block ends."""
    return started_cli("serve", "--store", f"file:{store}", "--port", str(port), "--json")


def test_kill_9_during_load_then_restart(tmp_path: Path):
    store, port = tmp_path / "tasks", free_port()
    url = f"http://127.0.0.1:{port}"
    with _serve_process(store, port) as proc, httpx.Client(timeout=30) as http:
        read_until(proc, "ready")

        def send(text: str, blocking: bool) -> dict:
            r = http.post(
                url + "/",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "message/send",
                    "params": {
                        "message": v03_message(text),
                        "configuration": {"blocking": blocking},
                    },
                },
            )
            return r.json()["result"]

        done = [send(f"done {i}", True) for i in range(20)]
        waiting = [send(f"please confirm order {i}", True) for i in range(5)]
        running = [send(f"slow 30 number {i}", False) for i in range(10)]
        assert all(t["status"]["state"] == "completed" for t in done)
        assert all(t["status"]["state"] == "input-required" for t in waiting)
        before = {p.name: p.read_text() for p in store.glob("*.json")}
        for i in range(
            5
        ):  # blocking sends in flight: nobody is told of their tasks before they settle
            try:
                http.post(
                    url + "/",
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "message/send",
                        "params": {
                            "message": v03_message(f"slow 30 unseen {i}"),
                            "configuration": {"blocking": True},
                        },
                    },
                    timeout=0.2,
                )
            except httpx.HTTPError:
                pass
        for t in running:  # a poll tells its caller 'working': from then on it is on the disk
            assert http.post(
                url + "/",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tasks/get",
                    "params": {"id": t["id"]},
                },
            ).json()["result"]["status"]["state"] in ("submitted", "working")
        for i in range(30):  # more load in flight at the moment of the kill
            try:
                http.post(
                    url + "/",
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "message/send",
                        "params": {
                            "message": v03_message(f"late {i}"),
                            "configuration": {"blocking": False},
                        },
                    },
                    timeout=0.2,
                )
            except httpx.HTTPError:
                pass
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
    files = sorted(store.glob("*.json"))
    for path in files:
        json.loads(path.read_text())  # every task file parses: whole, never partial
    count = len(files)
    with _serve_process(store, port) as proc, httpx.Client(timeout=30) as http:  # a restart
        read_until(proc, "ready")
        assert not list(store.glob(".*.tmp"))  # leftovers of the crash are cleaned at start

        def get(task_id: str) -> dict:
            return http.post(
                url + "/",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tasks/get",
                    "params": {"id": task_id},
                },
            ).json()["result"]

        for t in running:  # every task a caller was told of is there
            got = get(t["id"])
            assert got["status"]["state"] == "failed"
            assert got["status"]["message"]["parts"][0]["text"] == "interrupted by restart"
        for t in done:
            assert get(t["id"])["status"]["state"] == "completed"
        for name, text in before.items():  # completed ones are unchanged, byte for byte
            if json.loads(text)["status"]["state"] == "completed":
                assert (store / name).read_text() == text
        answered = http.post(
            url + "/",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {
                    "message": v03_message(
                        "yes", taskId=waiting[0]["id"], contextId=waiting[0]["contextId"]
                    )
                },
            },
        ).json()
        assert answered["result"]["id"] == waiting[0]["id"]
        assert answered["result"]["status"]["state"] == "completed"
        for path in store.glob("*.json"):
            record = json.loads(path.read_text())
            assert record["status"]["state"] not in (
                "submitted",
                "working",
            )  # none left pretending to run
            assert "unseen" not in path.read_text()  # those nobody was told of were never written
    print(f"\ncrash: {count} task files survived kill -9, all parse; 1 restart; 0 lost")


# -- security ---------------------------------------------------------------------------------------


async def test_secrets_never_reach_logs_or_the_wire_log(caplog: pytest.LogCaptureFixture):
    token, key = "tok-secret-123456", "sk-model-secret-987654"
    caplog.set_level(logging.DEBUG)
    async with ScriptedServer([Reply(401, {"error": f"bad key {key}"})]) as model:
        client = tn.create_client(model.url, "openai", "m", api_key=key)
        tk = await tn.create_toolkit(builtins=False)
        async with tk.serve(
            client=client, a2a=tn.A2AConfig(auth=tn.Auth.bearer(token)), mcp=True
        ) as h:
            assert h.url.startswith("http://127.0.0.1:")  # the default bind is loopback
            async with httpx.AsyncClient() as http:
                assert (await http.get(h.card_url)).status_code == 200  # the card stays public
                for path in ("/", "/mcp"):
                    assert (await http.post(h.url + path, json={})).status_code == 401
                    assert (
                        await http.post(
                            h.url + path, json={}, headers={"authorization": "Bearer x"}
                        )
                    ).status_code == 403
            async with tn.A2AClient(h.url, headers={"Authorization": f"Bearer {token}"}) as peer:
                task = await peer.send("hello", blocking=True)
                wire = [vars(e) for e in peer.traffic.events]
            assert task.state is TaskState.FAILED
            assert task.status.message.text == "model error: the model endpoint failed (HTTP 401)"
        await client.aclose()
    text = caplog.text + json.dumps(wire, default=str)
    assert token not in text and key not in text
    assert "Bearer ***" in json.dumps(wire, default=str)
