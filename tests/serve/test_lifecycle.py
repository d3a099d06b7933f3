"""Task lifecycle through the runner: events, on_task, failures, cancel, blocking caps."""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

import toolnexus as tn
from toolnexus.protocol.model import TaskState

from ..conftest import EXAMPLE_SKILLS
from ..helpers import assert_legal, eventually
from .wire import V10, rpc, v03_message, v10_message


async def test_on_task_exactly_once_across_200_concurrent_tasks():
    calls: list[dict] = []

    async def on_task(ev: dict) -> None:
        calls.append(ev)

    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="load"), on_task=on_task) as h,
        httpx.AsyncClient(timeout=60, limits=httpx.Limits(max_connections=50)) as http,
    ):
        texts = [f"job {i}" if i % 10 else f"weather job {i}" for i in range(200)]
        replies = await asyncio.gather(
            *[
                rpc(http, h.url, "message/send", {"message": v03_message(t)}, id=i)
                for i, t in enumerate(texts)
            ]
        )
        assert all(r["result"]["status"]["state"] == "completed" for r in replies)
        await eventually(lambda: len(calls) >= 200)
        await asyncio.sleep(0.1)  # a second call for a task would have come by now
        events = h.events.history()
    ids = [c["id"] for c in calls]
    assert len(ids) == 200 and len(set(ids)) == 200
    assert {c["state"] for c in calls} == {"completed"}
    by_task = assert_legal(events)
    assert all(
        states == [TaskState.SUBMITTED, TaskState.WORKING, TaskState.COMPLETED]
        for states in by_task.values()
    )
    sample = next(c for c in calls if c["task"] == "weather job 10")
    assert sample["skill"] == "weather"
    # the skill, then its table (read_skill_file)
    assert sample["result"].usage.total_tokens > 0 and sample["result"].tool_call_count == 2


async def test_events_carry_the_tasks_values_and_run_results():
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="ev")) as h,
        httpx.AsyncClient() as http,
    ):
        got = []

        async def collect():
            async for ev in h.events.subscribe(replay=False):
                if isinstance(ev, tn.TaskEvent):
                    got.append(ev)
                    if ev.state.terminal:
                        return

        collector = asyncio.ensure_future(collect())
        await asyncio.sleep(0)
        answer = await rpc(http, h.url, "message/send", {"message": v03_message("greet Bob")})
        await asyncio.wait_for(collector, 5)
        stored = await h.runner.store.get(answer["result"]["id"])
    assert [e.state for e in got] == [TaskState.SUBMITTED, TaskState.WORKING, TaskState.COMPLETED]
    # each move made one value: the event holds it, the store keeps that same value, and what a move
    # did not change is shared with the value before (nothing copied twice, nothing changed after)
    assert stored is got[2].task
    assert (
        got[1].task.history is got[0].task.history
        and got[1].task.artifacts is got[0].task.artifacts
    )
    assert (
        len(got[0].task.history) == 1
        and not got[0].task.artifacts
        and len(got[2].task.history) == 2
    )
    assert got[0].previous is None and got[1].previous is TaskState.SUBMITTED
    assert all(e.server == "ev" for e in got)
    assert [e.seq for e in got] == sorted(e.seq for e in got)
    assert got[0].task.state is TaskState.SUBMITTED  # a value, never the live task
    assert got[2].result is not None and got[2].result.tool_calls[0]["name"] == "skill"
    assert got[2].skill == "greet"
    assert got[2].task.artifacts[0].text.startswith('Using the "greet" skill')


async def test_a_raising_or_slow_on_task_never_affects_the_server():
    def boom(ev):
        raise RuntimeError("hook broke")

    async def slow(ev):
        await asyncio.sleep(30)

    tk = await tn.create_toolkit(builtins=False)
    for hook in (boom, slow):
        async with (
            tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(), on_task=hook) as h,
            httpx.AsyncClient() as http,
        ):
            t0 = time.monotonic()
            for i in range(3):
                r = await rpc(http, h.url, "message/send", {"message": v03_message(f"x{i}")})
                assert r["result"]["status"]["state"] == "completed"
            assert time.monotonic() - t0 < 5


async def test_model_failures_fail_the_task_with_a_reason():
    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig()) as h,
        httpx.AsyncClient() as http,
    ):
        r = await rpc(http, h.url, "message/send", {"message": v03_message("please fail")})
        status = r["result"]["status"]
        assert status["state"] == "failed"
        assert status["message"]["parts"][0]["text"] == "model error: demo model: asked to fail"
        assert status["message"]["role"] == "agent"

    def crash(req):
        raise ZeroDivisionError("secret internals")

    # an in-process model's error is a model error; a bug elsewhere is "internal error" only
    async with (
        tk.serve(client=tn.create_in_process_client(crash), a2a=tn.A2AConfig()) as h,
        httpx.AsyncClient() as http,
    ):
        r = await rpc(http, h.url, "message/send", {"message": v03_message("x")})
        assert r["result"]["status"]["message"]["parts"][0]["text"].startswith(
            "model error: in-process model failed"
        )

    class BrokenClient:
        async def ask(self, *a, **k):
            raise KeyError("secret internals")

    async with (
        tk.serve(client=BrokenClient(), a2a=tn.A2AConfig()) as h,
        httpx.AsyncClient() as http,
    ):
        r = await rpc(http, h.url, "message/send", {"message": v03_message("x")})
        text = r["result"]["status"]["message"]["parts"][0]["text"]
        assert text == "internal error while running the task" and "secret" not in str(r)


async def test_no_client_fails_the_task_saying_so():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(a2a=tn.A2AConfig()) as h, httpx.AsyncClient() as http:
        r = await rpc(http, h.url, "message/send", {"message": v03_message("x")})
    assert r["result"]["status"]["state"] == "failed"
    assert "no model client is configured" in r["result"]["status"]["message"]["parts"][0]["text"]


async def test_cancel_stops_the_run_in_flight():
    started, stopped = asyncio.Event(), asyncio.Event()

    async def generate(req):
        started.set()
        try:
            await asyncio.sleep(30)
        finally:
            stopped.set()
        return {"content": "late"}

    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(client=tn.create_in_process_client(generate), a2a=tn.A2AConfig()) as h,
        httpx.AsyncClient() as http,
    ):
        sent = await rpc(
            http,
            h.url,
            "SendMessage",
            {"message": v10_message("x"), "configuration": {"returnImmediately": True}},
            headers=V10,
        )
        tid = sent["result"]["task"]["id"]
        await asyncio.wait_for(started.wait(), 5)
        canceled = await rpc(http, h.url, "CancelTask", {"id": tid}, headers=V10)
        assert canceled["result"]["status"]["state"] == "TASK_STATE_CANCELED"
        await asyncio.wait_for(stopped.wait(), 5)
        await asyncio.sleep(0.05)
        again = await rpc(http, h.url, "GetTask", {"id": tid}, headers=V10)
        assert again["result"]["status"]["state"] == "TASK_STATE_CANCELED"
        assert_legal(h.events.history())


async def test_blocking_send_is_capped():
    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(blocking_timeout=0.2)) as h,
        httpx.AsyncClient() as http,
    ):
        t0 = time.monotonic()
        r = await rpc(http, h.url, "message/send", {"message": v03_message("slow 3")})
        assert time.monotonic() - t0 < 2
        assert r["result"]["status"]["state"] == "working"
        await rpc(http, h.url, "tasks/cancel", {"id": r["result"]["id"]})


async def test_a_blocking_sends_task_not_yet_written_is_found_by_every_reader(tmp_path):
    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(store=f"file:{tmp_path}")) as h,
        httpx.AsyncClient(timeout=30) as http,
    ):

        async def blocking(text: str) -> asyncio.Task:
            seen = h.events.seq
            call = asyncio.ensure_future(
                rpc(http, h.url, "message/send", {"message": v03_message(text)})
            )
            async with asyncio.timeout(5):  # the bus (the TUI's view) hears it working at once
                while not [
                    e for e in h.events.history() if e.seq > seen and e.state is TaskState.WORKING
                ]:
                    await asyncio.sleep(0.01)
            return call

        listed_call = await blocking("slow 30 listed")
        assert not list(tmp_path.glob("*.json"))  # nobody was told of it yet: not written
        listed = await rpc(
            http, h.url, "ListTasks", {}, headers=V10
        )  # a listing tells: written first
        [found] = listed["result"]["tasks"]
        assert (
            found["status"]["state"] == "TASK_STATE_WORKING"
            and len(list(tmp_path.glob("*.json"))) == 1
        )
        assert [t.id for t in await h.tasks()] == [found["id"]]
        got_call = await blocking("slow 30 got")
        got_id = next(
            e.task_id for e in reversed(h.events.history()) if e.task.request == "slow 30 got"
        )
        assert (
            await h.runner.get(got_id)
        ).state is TaskState.WORKING  # as the TUI reads it, to cancel it
        assert len(list(tmp_path.glob("*.json"))) == 2
        for call, task_id in ((listed_call, found["id"]), (got_call, got_id)):
            await h.runner.cancel(task_id)
            answer = await asyncio.wait_for(call, 5)  # the blocking caller hears the cancel
            assert answer["result"]["status"]["state"] == "canceled"
        assert_legal(h.events.history())


async def test_waits_on_one_task_each_end_at_their_own_time_or_its_end():
    """Waits with a timeout share one timer per interval: a short wait ends on time while a longer
    one and one without a timeout on the same task go on; the end of the task ends the rest; nothing
    of them is left behind."""
    from toolnexus.serve.lifecycle import WAKE_EVERY

    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig()) as h,
        httpx.AsyncClient() as http,
    ):
        sent = await rpc(
            http,
            h.url,
            "message/send",
            {"message": v03_message("slow 30"), "configuration": {"blocking": False}},
        )
        task = await h.runner.get(sent["result"]["id"])
        t0 = time.monotonic()
        short, long, endless = (
            asyncio.ensure_future(h.runner.wait(task, t)) for t in (0.2, 0.6, None)
        )
        await asyncio.wait_for(short, 10)
        assert 0.2 <= time.monotonic() - t0 < 1.5 and not long.done() and not endless.done()
        await asyncio.wait_for(long, 10)
        assert (
            0.6 <= time.monotonic() - t0 < 2.5
            and task.state is TaskState.WORKING
            and not endless.done()
        )
        again = asyncio.ensure_future(h.runner.wait(task, 30))
        await asyncio.sleep(2 * WAKE_EVERY)
        await rpc(http, h.url, "tasks/cancel", {"id": task.id})
        for waiting in (endless, again):
            assert (await asyncio.wait_for(waiting, 5)).state is TaskState.CANCELED
        assert not any(task.id in waits for _, waits in h.runner._due.values())
        timers = [timer for timer, _ in h.runner._due.values()]
        assert timers  # the 30 s wait's interval is still to come
    assert all(timer.cancelled() for timer in timers)  # a stopped server leaves no timer behind


async def test_terminal_states_never_change():
    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig()) as h,
        httpx.AsyncClient() as http,
    ):
        r = await rpc(http, h.url, "message/send", {"message": v03_message("done")})
        task = await h.runner.get(r["result"]["id"])
        for state in TaskState:
            assert await h.runner.transition(task, state) is None
        assert task.state is TaskState.COMPLETED


async def test_auth_bearer_and_api_key():
    tk = await tn.create_toolkit(builtins=False)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(auth=tn.Auth.bearer("s3cret"))) as h,
        httpx.AsyncClient() as http,
    ):
        card = (await http.get(h.card_url)).json()  # the card stays public
        assert card["security"] == [{"bearer": []}]
        assert card["securitySchemes"]["bearer"]["scheme"] == "bearer"
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {"message": v03_message("x")},
        }
        r = await http.post(h.url + "/", json=body)
        assert r.status_code == 401 and r.headers["www-authenticate"] == "Bearer"
        # a JSON-RPC error envelope (refused before the body is read: no id), which clients that
        # read only the envelope can tell apart from any other failure
        refusal = r.json()
        assert refusal["jsonrpc"] == "2.0" and refusal["id"] is None
        assert refusal["error"]["code"] == -32000
        assert refusal["error"]["message"] == "authentication required"
        assert refusal["error"]["data"][0]["reason"] == "UNAUTHENTICATED"
        r = await http.post(h.url + "/", json=body, headers={"Authorization": "Bearer wrong"})
        assert r.status_code == 403
        assert r.json()["error"] == {
            "code": -32000,
            "message": "invalid credentials",
            "data": [
                {
                    "@type": "type.googleapis.com/google.rpc.ErrorInfo",
                    "reason": "PERMISSION_DENIED",
                    "domain": "a2a-protocol.org",
                    "metadata": {},
                }
            ],
        }
        async with tn.A2AClient(h.url, headers={"Authorization": "Bearer wrong"}) as peer:
            with pytest.raises(tn.PeerError, match=r"HTTP 403 \(invalid credentials\)"):
                await peer.send("x")
        assert len(await h.tasks()) == 0
        r = await http.post(h.url + "/", json=body, headers={"Authorization": "Bearer s3cret"})
        assert r.status_code == 200 and r.json()["result"]["status"]["state"] == "completed"
    auth = tn.Auth.api_key("k1", "k2", header="X-Key")
    assert "k1" not in repr(auth)
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(auth=auth)) as h,
        httpx.AsyncClient() as http,
    ):
        body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "x"}}
        assert (await http.post(h.url + "/", json=body)).status_code == 401
        assert (
            await http.post(h.url + "/", json=body, headers={"x-key": "nope"})
        ).status_code == 403
        r = await http.post(h.url + "/", json=body, headers={"x-key": "k2"})
        assert r.status_code == 200 and r.json()["error"]["code"] == -32001
