"""``toolnexus serve`` stopped by SIGTERM drains: it stops accepting, lets what runs finish within
``--drain``, answers every caller still waiting when that time is up (never a plain-text 500), and
fails what is left, saying so; a second signal ends the drain at once. And a stream following a
task that another worker runs ends, when its own worker stops, with an error it can retry on."""

from __future__ import annotations

import asyncio
import gc
import json
import signal
import socket
import time
import warnings

import httpx

import toolnexus as tn
from toolnexus.http.server import AsgiServer
from toolnexus.serve.lifecycle import STOPPED

from ..conftest import EXAMPLE_SKILLS
from ..helpers import Served
from .test_workers import send


def streamed(i: int, text: str) -> dict:
    return {**send(i, text), "method": "message/stream"}


async def sse_events(
    http: httpx.AsyncClient, url: str, body: dict, seen: asyncio.Event
) -> list[dict]:
    """Every ``data:`` frame of one JSON-RPC stream; ``seen`` set at the first."""
    out = []
    async with http.stream("POST", url, json=body) as response:
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                out.append(json.loads(line[6:]))
                seen.set()
    return out


async def test_sigterm_finishes_what_fits_in_the_drain_answers_every_caller_and_fails_the_rest(
    tmp_path,
):
    store = f"file:{tmp_path / 'tasks'}"
    async with Served("--store", store, "--drain", "2") as served:
        url = (await served.until(lambda lines: served.events("started")))[0]["url"]
        async with httpx.AsyncClient(timeout=30) as http:
            short = [
                asyncio.ensure_future(
                    http.post(url + "/", json=send(i, "slow 1 then answer", blocking=True))
                )
                for i in range(3)
            ]
            long = asyncio.ensure_future(
                http.post(url + "/", json=send(10, "slow 30 then answer", blocking=True))
            )
            seen = asyncio.Event()
            stream = asyncio.ensure_future(
                sse_events(http, url + "/", streamed(11, "slow 30 then answer"), seen)
            )
            unwatched = (await http.post(url + "/", json=send(12, "slow 1 then answer"))).json()[
                "result"
            ]["id"]
            await seen.wait()
            await served.until(
                lambda lines: len([x for x in lines if x.get("state") == "working"]) == 6
            )
            served.proc.send_signal(signal.SIGTERM)
            draining = await served.until(lambda lines: served.events("draining"))
            assert draining[0]["running"] == 6 and draining[0]["seconds"] == 2
            try:
                await http.get(url + "/.well-known/agent-card.json")
                raise AssertionError("a new connection was accepted while draining")
            except httpx.ConnectError:
                pass
            answers = [(await r) for r in short]
            assert [a.status_code for a in answers] == [200] * 3
            assert {a.json()["result"]["status"]["state"] for a in answers} == {"completed"}
            late = await long
            assert late.status_code == 200 and late.headers["content-type"].startswith(
                "application/json"
            )
            status = late.json()["result"]["status"]
            assert status["state"] == "failed" and status["message"]["parts"][0]["text"] == STOPPED
            frames = await stream
            last = frames[-1]["result"]
            assert (
                last["kind"] == "status-update"
                and last["final"] is True
                and last["status"]["state"] == "failed"
            )
            await asyncio.wait_for(served.proc.wait(), 10)
        err = await served.stderr()
        assert (
            served.proc.returncode == 0 and "Traceback" not in err and "CancelledError" not in err
        ), err
        assert "2 task(s) still running when it stopped were failed" in err
    # what a caller was told stays true after a restart: nothing was left 'working' to be failed by recovery
    async with Served("--store", store) as again:
        url = (await again.until(lambda lines: again.events("started")))[0]["url"]
        async with httpx.AsyncClient(timeout=30) as http:
            got = await http.post(
                url + "/",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tasks/get",
                    "params": {"id": unwatched},
                },
            )
            assert (
                got.json()["result"]["status"]["state"] == "completed"
            )  # it ran to its end during the drain
            late_id = late.json()["result"]["id"]
            got = await http.post(
                url + "/",
                json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": late_id}},
            )
            assert got.json()["result"]["status"]["message"]["parts"][0]["text"] == STOPPED


async def test_a_second_signal_ends_the_drain_at_once():
    async with Served("--drain", "60") as served:
        url = (await served.until(lambda lines: served.events("started")))[0]["url"]
        async with httpx.AsyncClient(timeout=30) as http:
            waiting = asyncio.ensure_future(
                http.post(url + "/", json=send(1, "slow 30 then answer", blocking=True))
            )
            await served.until(lambda lines: [x for x in lines if x.get("state") == "working"])
            served.proc.send_signal(signal.SIGTERM)
            await served.until(lambda lines: served.events("draining"))
            started = time.monotonic()
            served.proc.send_signal(signal.SIGINT)
            answer = await waiting
            await asyncio.wait_for(served.proc.wait(), 10)
            assert time.monotonic() - started < 5
        assert answer.json()["result"]["status"]["state"] == "failed"
        assert served.proc.returncode == 0


async def test_a_stream_following_another_workers_task_ends_with_a_retryable_error_when_its_worker_stops(
    postgres,
):
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    runs = await tk.serve(
        "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="pg-desk", store=postgres)
    )
    follows = await tk.serve(
        "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="pg-desk", store=postgres)
    )
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            task = (await http.post(runs.url + "/", json=send(1, "slow 3 then answer"))).json()[
                "result"
            ]
            seen = asyncio.Event()
            resubscribe = {
                "jsonrpc": "2.0",
                "id": 7,
                "method": "tasks/resubscribe",
                "params": {"id": task["id"]},
            }
            stream = asyncio.ensure_future(sse_events(http, follows.url + "/", resubscribe, seen))
            rest_seen = asyncio.Event()

            async def rest_frames() -> tuple[int, list[dict]]:
                out = []
                async with http.stream(
                    "POST", f"{follows.url}/tasks/{task['id']}:subscribe"
                ) as response:
                    async for line in response.aiter_lines():
                        if line.startswith("data: "):
                            out.append(json.loads(line[6:]))
                            rest_seen.set()
                return response.status_code, out

            rest = asyncio.ensure_future(rest_frames())
            await seen.wait()
            await rest_seen.wait()
            await follows.stop(
                drain=0.5
            )  # its streams follow a task the other worker runs: not waited for
            frames = await asyncio.wait_for(stream, 5)
            assert frames[-1] == {
                "jsonrpc": "2.0",
                "id": 7,
                "error": {
                    "code": -32603,
                    "message": "the server is stopping: resubscribe to go on following the task",
                },
            }
            status, rest_out = await asyncio.wait_for(rest, 5)
            assert status == 200 and rest_out[-1]["error"]["code"] == 503
            assert rest_out[-1]["error"]["status"] == "UNAVAILABLE"
            # resubscribing to a worker that stays goes on to the end
            again = await sse_events(http, runs.url + "/", resubscribe, asyncio.Event())
            assert again[-1]["result"]["status"]["state"] == "completed"
    finally:
        await runs.stop()
        await follows.stop()


async def test_sigterm_to_workers_drains_each_and_the_port_refuses_at_once(postgres):
    async with Served("--store", postgres, "--workers", "2", "--drain", "5") as served:
        await served.until(lambda lines: len(served.events("worker-ready")) == 2)
        url = served.events("started")[0]["url"]
        fresh = httpx.Limits(
            max_keepalive_connections=0
        )  # a new connection each time: any worker takes it
        async with httpx.AsyncClient(timeout=30, limits=fresh) as http:
            calls: list[asyncio.Future] = []
            while len({x["worker"] for x in served.lines if x.get("state") == "working"}) < 2:
                assert len(calls) < 200, (
                    "one worker took every connection"
                )  # the kernel picks who accepts
                calls += [
                    asyncio.ensure_future(
                        http.post(
                            url + "/",
                            json=send(len(calls) + i, "slow 2 then answer", blocking=True),
                        )
                    )
                    for i in range(4)
                ]
                await asyncio.sleep(0.1)
            served.proc.send_signal(signal.SIGTERM)
            answers = [await c for c in calls]
            try:
                await http.get(url + "/.well-known/agent-card.json")
                raise AssertionError("a new connection was accepted while draining")
            except httpx.ConnectError:
                pass
            await asyncio.wait_for(served.proc.wait(), 15)
        assert {a.json()["result"]["status"]["state"] for a in answers} == {"completed"}
        err = await served.stderr()
        assert served.proc.returncode == 0 and "Traceback" not in err, err
        assert sorted(x["worker"] for x in served.events("worker-stopped")) == [
            0,
            1,
        ]  # each stopped, once
        assert not served.events("worker-exited")  # stopped, not restarted as if it had died


def test_a_stop_leaves_no_socket_open_for_clients_that_do_not_read():
    """The CI run of 441c714 failed a TUI test on three ResourceWarnings (unclosed transport
    <_SelectorSocketTransport closing>, and their sockets) that the collector found there: a stop
    on another test's loop had returned with three connections open, their answers waiting in
    their buffers for clients that never read (a graceful close waits to write them first), and
    the loop was closed under them. A stop now cuts what its drain leaves: nothing is left for
    the collector once the loop is closed, before the clients are."""
    clients: list[socket.socket] = []

    async def never_read() -> None:
        answering = asyncio.Semaphore(0)

        async def app(scope: dict, receive, send) -> None:
            if scope["type"] == "lifespan":
                while (await receive())["type"] == "lifespan.startup":
                    await send({"type": "lifespan.startup.complete"})
                await send({"type": "lifespan.shutdown.complete"})
                return
            await send({"type": "http.response.start", "status": 200, "headers": []})
            answering.release()  # the write below fills every buffer: it never returns
            await send({"type": "http.response.body", "body": b"x" * 2**24, "more_body": True})

        server = AsgiServer(app, graceful=0.1)
        await server.start()
        for _ in range(3):
            client = socket.create_connection(("127.0.0.1", server.port))
            client.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            client.sendall(b"GET / HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n")
            clients.append(client)
        for _ in clients:
            await answering.acquire()
        await server.stop()

    try:
        asyncio.run(never_read())  # closes its loop, as pytest-asyncio does after a test
    finally:
        for client in clients:
            client.close()
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        gc.collect()
    assert [str(w.message) for w in seen if issubclass(w.category, ResourceWarning)] == []
