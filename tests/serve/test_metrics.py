"""Prometheus metrics of a served agent, scraped from a real server under load and read with
prometheus-client's own parser: requests by binding, operation and outcome; tasks by state;
durations; push deliveries; the store; behind the agent's auth; on a port of their own; summed
over the workers of ``toolnexus serve --workers 2`` on a real PostgreSQL."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

import toolnexus as tn
from toolnexus.errors import TaskNotFoundError
from toolnexus.protocol.push import PushConfig

from ..helpers import Served, write_skill
from ..peers import on_loopback
from .test_workers import send

TOKEN = {"Authorization": "Bearer metrics-token"}


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted((k, v) for k, v in s.labels.items() if k != "server")))] = (
                s.value
            )
    return out


def value(found: dict, name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


async def test_a_served_agent_under_load_reports_what_it_did(tmp_path):
    posts: list[bytes] = []

    async def hook(request: Request) -> Response:
        posts.append(await request.body())
        return Response(status_code=204)

    tk = await tn.create_toolkit(builtins=False)
    config = tn.A2AConfig(
        name="metered",
        auth=tn.Auth.bearer("metrics-token"),
        grpc="127.0.0.1:0",
        push_notifications=True,
        store=f"file:{tmp_path}",
    )  # a store that waits on a disk is timed
    async with (
        on_loopback(Starlette(routes=[Route("/hook", hook, methods=["POST"])])) as webhook,
        tk.serve(client=tn.demo_client(), a2a=config, metrics=True) as handle,
    ):
        assert handle.metrics_url == handle.url + "/metrics"
        async with (
            tn.A2AClient(handle.url, headers=TOKEN) as rpc,
            tn.A2AClient(handle.url, headers=TOKEN, binding="http+json") as rest,
            tn.A2AClient(handle.url, headers=TOKEN, binding="grpc") as grpc,
        ):
            await asyncio.gather(
                *(rpc.send(f"hello {i}", blocking=True) for i in range(40)),
                *(rest.send(f"rest {i}", blocking=True) for i in range(10)),
                *(grpc.send(f"grpc {i}", blocking=True) for i in range(5)),
            )
            for _ in range(3):
                with pytest.raises(TaskNotFoundError):
                    await rpc.get("no-such-task")
            await rpc.send("pushed", blocking=True, push=PushConfig("", webhook + "/hook"))
            async with httpx.AsyncClient(timeout=10) as http:
                assert (await http.get(handle.metrics_url)).status_code == 401  # the agent's auth
                async with asyncio.timeout(10):  # the webhook answers in its own time
                    while True:
                        scraped = await http.get(handle.metrics_url, headers=TOKEN)
                        found = samples(scraped.text)
                        if (
                            value(found, "toolnexus_push_deliveries_total", outcome="delivered")
                            >= 1
                        ):
                            break
                        await asyncio.sleep(0.2)
    assert scraped.headers["content-type"].startswith("text/plain; version=0.0.4")
    assert (
        value(found, "toolnexus_requests_total", binding="JSONRPC", operation="send", outcome="ok")
        == 41
    )
    assert (
        value(
            found, "toolnexus_requests_total", binding="HTTP+JSON", operation="send", outcome="ok"
        )
        == 10
    )
    assert (
        value(found, "toolnexus_requests_total", binding="GRPC", operation="send", outcome="ok")
        == 5
    )
    assert (
        value(
            found,
            "toolnexus_requests_total",
            binding="JSONRPC",
            operation="get",
            outcome="TASK_NOT_FOUND",
        )
        == 3
    )
    assert (
        value(found, "toolnexus_request_seconds_count", binding="JSONRPC", operation="send") == 41
    )
    assert (
        value(
            found,
            "toolnexus_request_seconds_bucket",
            binding="JSONRPC",
            operation="send",
            le="+Inf",
        )
        == 41
    )
    assert value(found, "toolnexus_tasks_total", state="completed", skill="") == 56
    assert value(found, "toolnexus_tasks_total", state="submitted", skill="") == 56
    assert value(found, "toolnexus_task_seconds_count", state="completed", skill="") == 56
    # a blocking send's task is written once, as it settles; the one with a webhook at every state
    assert value(found, "toolnexus_store_seconds_count", operation="save") == 55 * 1 + 3
    assert value(found, "toolnexus_store_errors_total", operation="save") == 0
    assert len(posts) >= 1


async def test_metrics_on_a_port_of_their_own_or_none():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        client=tn.demo_client(), a2a=tn.A2AConfig(name="own-port"), metrics="127.0.0.1:0"
    ) as handle:
        async with tn.A2AClient(handle.url) as client:
            await client.send("hello", blocking=True)
        assert handle.metrics_url is not None and not handle.metrics_url.startswith(handle.url)
        async with httpx.AsyncClient(timeout=10) as http:
            assert (await http.get(handle.url + "/metrics")).status_code == 404
            found = samples((await http.get(handle.metrics_url)).text)
    assert (
        value(found, "toolnexus_requests_total", binding="JSONRPC", operation="send", outcome="ok")
        == 1
    )
    assert not [
        name for name, _ in found if name.startswith("toolnexus_store_")
    ]  # the memory store: not timed
    async with tk.serve(
        client=tn.demo_client(), a2a=tn.A2AConfig(name="none")
    ) as handle:  # off by default
        assert handle.metrics_url is None
        async with httpx.AsyncClient(timeout=10) as http:
            assert (await http.get(handle.url + "/metrics")).status_code == 404


async def test_the_wire_recorders_cut_records_are_counted():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        client=tn.demo_client(), a2a=tn.A2AConfig(name="recorded"), metrics=True, record_wire=True
    ) as handle:
        async with httpx.AsyncClient(timeout=10) as http:
            small = await http.post(handle.url + "/", json=send(1, "hello", blocking=True))
            big = await http.post(
                handle.url + "/", json=send(2, "x" * 300_000, blocking=True)
            )  # past 256 KiB
            assert small.status_code == big.status_code == 200
            async with asyncio.timeout(10):  # counted once the exchange ends
                while not value(
                    found := samples((await http.get(handle.metrics_url)).text),
                    "toolnexus_wire_cut_total",
                ):
                    await asyncio.sleep(0.2)
    assert (
        value(found, "toolnexus_wire_cut_total") == 1
    )  # the big one (request and answer): one exchange
    assert (
        value(found, "toolnexus_requests_total", binding="JSONRPC", operation="send", outcome="ok")
        == 2
    )


async def test_a_caller_cannot_grow_the_skill_label(tmp_path):
    """The ``skill`` label is the name the model passed to the ``skill`` tool, which a caller's
    prompt steers: only the agent's own skills are labels, any other name is ``other`` (issue 49:
    1,000 made-up names made 1,000 series)."""
    write_skill(tmp_path / "weather", "weather", description="Forecasts.")
    tk = await tn.create_toolkit(skills_dir=[tmp_path], builtins=False)

    def generate(request: dict) -> dict:
        last = request["messages"][-1]
        if last["role"] == "user":  # load the skill the caller named, whatever it is
            name = last["content"].split()[-1]
            return {"tool_calls": [{"name": "skill", "arguments": {"name": name}}]}
        return {"content": "done"}

    async with tk.serve(
        client=tn.create_in_process_client(generate), a2a=tn.A2AConfig(name="named"), metrics=True
    ) as handle:
        async with tn.A2AClient(handle.url) as client:
            await asyncio.gather(
                *(client.send(f"use made-up-{i}", blocking=True) for i in range(100)),
                client.send("use weather", blocking=True),
            )
        async with httpx.AsyncClient(timeout=10) as http:
            found = samples((await http.get(handle.metrics_url)).text)
    labelled = {dict(labels).get("skill") for name, labels in found if "task" in name}
    assert labelled == {"", "weather", "other"}, sorted(labelled)[:10]  # "": not known yet
    assert value(found, "toolnexus_tasks_total", state="completed", skill="other") == 100
    assert value(found, "toolnexus_tasks_total", state="completed", skill="weather") == 1


async def test_two_workers_answer_the_sum_of_both(postgres):
    async with Served("--store", postgres, "--workers", "2", "--metrics") as served:
        started = await served.until(
            lambda lines: [x for x in lines if x.get("event") == "started"]
        )
        url = started[0]["url"]
        await served.until(
            lambda lines: len([x for x in lines if x.get("event") == "worker-ready"]) == 2
        )

        def served_by() -> set[int]:
            return {
                line["worker"] for line in served.events("task") if line.get("state") == "completed"
            }

        sent = 0
        async with httpx.AsyncClient(
            timeout=30, limits=httpx.Limits(max_keepalive_connections=0)
        ) as http:
            # which worker accepts a connection is the kernel's race: send until both have served some
            for _ in range(20):
                answers = await asyncio.gather(
                    *(
                        http.post(url + "/", json=send(sent + i, f"hello {i}", blocking=True))
                        for i in range(30)
                    )
                )
                sent += 30
                assert all(a.json()["result"]["status"]["state"] == "completed" for a in answers)
                await asyncio.sleep(0.1)  # their lines printed
                if served_by() == {0, 1}:
                    break
            pids = {line.get("pid") for line in served.events("worker-ready")}
            async with asyncio.timeout(15):  # each worker writes its counts once a second
                while True:
                    found = samples((await http.get(url + "/metrics")).text)
                    if (
                        value(
                            found,
                            "toolnexus_requests_total",
                            binding="JSONRPC",
                            operation="send",
                            outcome="ok",
                        )
                        == sent
                    ):
                        break
                    await asyncio.sleep(0.3)
    assert len(pids) == 2
    assert served_by() == {
        0,
        1,
    }  # both served some: what is scraped from one port is the two summed
    assert value(found, "toolnexus_tasks_total", state="completed", skill="") == sent
    assert (
        json.dumps(served.lines).count('"event": "metrics"') == 0
    )  # a worker prints no URL of its own
