"""Several hosts behind a real balancer: three agent hosts, PostgreSQL on a fourth and nginx on a
fifth, each a Linux network namespace with its own address on one bridge (``tests/hosts.py``);
the test talks to the balancer from this namespace, as a client on the network would.

Through the balancer every operation works wherever it lands; a host that dies (its link cut, its
processes killed) loses no task a caller was told of; a rolling restart answers every request."""

from __future__ import annotations

import asyncio
import contextlib
import json
import signal
from collections import Counter

import httpx
import pytest

import toolnexus as tn
from toolnexus.errors import InvalidParamsError, TaskNotFoundError

from ..helpers import Served
from ..hosts import Network, Nginx, need_hosts
from ..postgres import Postgres, need_postgres
from .test_workers import get, send

AGENT_PORT, BALANCER_PORT = 8000, 8080
LEASE = 1.0


class Cluster:
    def __init__(self) -> None:
        self.net = Network()
        try:
            self.agent_hosts = [self.net.host(n) for n in (11, 12, 13)]
            self.db_host, self.lb_host = self.net.host(3), self.net.host(2)
            self.pg = Postgres(
                need_postgres(),
                host=self.db_host.addr,
                inside=self.db_host.cmd(),
                clients=self.net.cidr,
            )
            self.lb = Nginx(
                self.lb_host, BALANCER_PORT, [f"{h.addr}:{AGENT_PORT}" for h in self.agent_hosts]
            )
        except BaseException:
            self.net.close()
            raise

    def close(self) -> None:
        self.lb.close()
        self.pg.close()
        self.net.close()


@pytest.fixture(scope="module")
def cluster():
    need_hosts()
    made = Cluster()
    yield made
    made.close()


class Agents:
    """``toolnexus serve`` on every agent host, on one database, the card naming the balancer."""

    def __init__(self, cluster: Cluster, dsn: str, *extra: str) -> None:
        self.cluster, self.dsn, self.extra = cluster, dsn, extra
        self.served: dict[str, Served] = {}
        self._stack = contextlib.AsyncExitStack()

    def start(self, addr: str, *more: str) -> Served:
        host = next(h for h in self.cluster.agent_hosts if h.addr == addr)
        return Served(
            "--host",
            addr,
            "--port",
            str(AGENT_PORT),
            "--store",
            self.dsn,
            "--public-url",
            self.cluster.lb.url,
            "--lease",
            str(LEASE),
            *self.extra,
            *more,
            inside=host.cmd(),
        )

    async def up(self, addr: str, *more: str) -> Served:
        served = self.served[addr] = await self._stack.enter_async_context(self.start(addr, *more))
        await served.until(lambda lines: [x for x in lines if x.get("event") == "ready"])
        return served

    async def __aenter__(self) -> Agents:
        await asyncio.gather(*(self.up(h.addr) for h in self.cluster.agent_hosts))
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stack.aclose()

    def ran_on(self, task_id: str) -> str | None:
        """The host that moved the task to ``working`` (the others heard it)."""
        for addr, served in self.served.items():
            if any(
                x.get("task") == task_id and x.get("state") == "working" and not x.get("heard")
                for x in served.lines
            ):
                return addr
        return None


def url_of(addr: str) -> str:
    return f"http://{addr}:{AGENT_PORT}"


async def sse(
    http: httpx.AsyncClient, url: str, body: dict, first: asyncio.Event | None = None
) -> list[dict]:
    frames = []
    async with http.stream("POST", url + "/", json=body) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                frames.append(json.loads(line[6:]))
                if first is not None:
                    first.set()
    return frames


async def state_of(http: httpx.AsyncClient, url: str, task_id: str) -> dict:
    answer = (await http.post(url + "/", json=get(1, task_id))).json()
    assert "result" in answer, answer
    return answer["result"]["status"]


async def test_through_the_balancer_every_operation_works_wherever_it_lands(cluster, tmp_path):
    lb = cluster.lb.url
    config = tmp_path / "agent.json"  # webhooks on the private network the hosts share
    config.write_text(json.dumps({"a2a": {"name": "demo-desk", "pushPrivateOk": True}}))
    async with (
        Agents(cluster, cluster.pg.database(), "--config", str(config)) as agents,
        tn.WebhookReceiver(addr=f"{cluster.net.gateway}:0") as hook,
    ):
        async with httpx.AsyncClient(timeout=30) as http:
            card = (await http.get(lb + "/.well-known/agent-card.json")).json()
            assert card["url"] == lb + "/" and {i["url"] for i in card["supportedInterfaces"]} == {
                lb + "/"
            }

            blocking = [
                (await http.post(lb + "/", json=send(i, f"hello {i}", blocking=True))).json()[
                    "result"
                ]
                for i in range(9)
            ]
            assert {t["status"]["state"] for t in blocking} == {"completed"}
            assert Counter(agents.ran_on(t["id"]) for t in blocking) == {
                h.addr: 3 for h in cluster.agent_hosts
            }

            polled = (await http.post(lb + "/", json=send(20, "slow 1 then answer"))).json()[
                "result"
            ]["id"]
            seen = set()
            async with asyncio.timeout(15):
                while (status := await state_of(http, lb, polled))["state"] != "completed":
                    seen.add(status["state"])
                    await asyncio.sleep(0.1)
            assert "working" in seen  # polled through hosts that do not run it, while it ran

            first = asyncio.Event()
            streaming = asyncio.ensure_future(
                sse(http, lb, {**send(21, "slow 2 then answer"), "method": "message/stream"}, first)
            )
            await first.wait()  # the balancer passes each event as it comes (no buffering)
            assert not streaming.done()
            frames = await streaming
            assert (
                frames[-1]["result"]["final"] is True
                and frames[-1]["result"]["status"]["state"] == "completed"
            )

            slow = (await http.post(lb + "/", json=send(22, "slow 30 then answer"))).json()[
                "result"
            ]["id"]
            async with asyncio.timeout(10):
                while agents.ran_on(slow) is None:
                    await asyncio.sleep(0.05)
            runner = agents.ran_on(slow)
            other = next(h.addr for h in cluster.agent_hosts if h.addr != runner)
            canceled = (
                await http.post(
                    url_of(other) + "/",
                    json={
                        "jsonrpc": "2.0",
                        "id": 3,
                        "method": "tasks/cancel",
                        "params": {"id": slow},
                    },
                )
            ).json()
            assert canceled["result"]["status"]["state"] == "canceled"
            assert (await state_of(http, url_of(runner), slow))[
                "state"
            ] == "canceled"  # its run stopped there

            asked = (await http.post(lb + "/", json=send(23, "please confirm the order"))).json()[
                "result"
            ]
            async with asyncio.timeout(10):
                while (await state_of(http, lb, asked["id"]))["state"] != "input-required":
                    await asyncio.sleep(0.05)
            asker = agents.ran_on(asked["id"])
            answerer = next(h.addr for h in cluster.agent_hosts if h.addr != asker)
            answer = send(24, "yes", blocking=True)
            answer["params"]["message"].update(taskId=asked["id"], contextId=asked["contextId"])
            done = (await http.post(url_of(answerer) + "/", json=answer)).json()["result"]
            assert done["status"]["state"] == "completed"
            assert (
                done["artifacts"][0]["parts"][0]["text"]
                == "Request approved (yes). You said: please confirm the order"
            )

            target = hook.target()
            pushed = send(25, "slow 1 then answer")
            pushed["params"]["configuration"]["pushNotificationConfig"] = {
                "url": target.url,
                "token": target.token,
            }
            pushed_id = (await http.post(lb + "/", json=pushed)).json()["result"]["id"]
            await hook.wait(pushed_id, state=tn.TaskState.COMPLETED, timeout=15)
            await asyncio.sleep(1.0)  # a second delivery by another host would have come by now
            states = [n.state for n in hook.received(pushed_id)]
            assert states.count(tn.TaskState.COMPLETED) == 1 and len(states) == len(set(states)), (
                states
            )

            listings = []
            for h in cluster.agent_hosts:
                page = (
                    await http.post(
                        url_of(h.addr) + "/",
                        json={
                            "jsonrpc": "2.0",
                            "id": 4,
                            "method": "ListTasks",
                            "params": {"pageSize": 100},
                        },
                        headers={"A2A-Version": "1.0"},
                    )
                ).json()["result"]
                listings.append(sorted(t["id"] for t in page["tasks"]))
            assert listings[0] == listings[1] == listings[2] and len(listings[0]) == 9 + 5


async def test_a_host_that_dies_loses_no_task_a_caller_was_told_of_and_its_streams_resubscribe(
    cluster,
):
    lb = cluster.lb.url
    async with Agents(cluster, cluster.pg.database(), "--lease", "3") as agents:
        async with httpx.AsyncClient(timeout=30) as http:
            ids = [
                (await http.post(lb + "/", json=send(i, "slow 3 then answer"))).json()["result"][
                    "id"
                ]
                for i in range(9)
            ]
            first = asyncio.Event()
            stream = asyncio.ensure_future(
                sse(http, lb, {**send(30, "slow 3 then answer"), "method": "message/stream"}, first)
            )
            await first.wait()
            async with asyncio.timeout(10):
                while any(agents.ran_on(t) is None for t in ids):
                    await asyncio.sleep(0.05)
            followed = None
            async with asyncio.timeout(10):
                while followed is None:
                    followed = next(
                        (
                            x["task"]
                            for s in agents.served.values()
                            for x in s.lines
                            if x.get("state") == "working" and x["task"] not in ids
                        ),
                        None,
                    )
                    await asyncio.sleep(0.05)
            victim = agents.ran_on(followed)
            host = next(h for h in cluster.agent_hosts if h.addr == victim)
            host.die()  # its link cut, every process in it killed
            with pytest.raises(httpx.HTTPError):  # the stream on the dead host ends with an error
                frames = await asyncio.wait_for(stream, 15)
                assert frames[-1]["result"]["final"] is not True
                raise httpx.RemoteProtocolError("ended without its final event")
            resubscribed = asyncio.Event()  # at once, through the balancer: another host follows it
            again_ = asyncio.ensure_future(
                sse(
                    http,
                    lb,
                    {
                        "jsonrpc": "2.0",
                        "id": 5,
                        "method": "tasks/resubscribe",
                        "params": {"id": followed},
                    },
                    resubscribed,
                )
            )
            await resubscribed.wait()
            assert not again_.done()  # it goes on: the task is not over yet for anyone
            quick = [
                (await http.post(lb + "/", json=send(40 + i, f"quick {i}", blocking=True)))
                for i in range(6)
            ]
            assert [q.status_code for q in quick] == [200] * 6  # the balancer skips the dead host
            assert {q.json()["result"]["status"]["state"] for q in quick} == {"completed"}
            again = await asyncio.wait_for(again_, 20)
            last = again[-1]["result"]
            assert last["final"] is True and last["status"]["state"] == "failed"
            assert (
                last["status"]["message"]["parts"][0]["text"]
                == "the worker running this task stopped (its lease expired)"
            )
            async with asyncio.timeout(20):  # the bound the docs state: the lease and a third of it
                while {(await state_of(http, lb, t))["state"] for t in ids} - {
                    "completed",
                    "failed",
                }:
                    await asyncio.sleep(0.2)
            for t in ids:  # every task a caller was told of is there, in a clear state
                status = await state_of(http, lb, t)
                if agents.ran_on(t) == victim:
                    assert status["state"] == "failed"
                    assert (
                        status["message"]["parts"][0]["text"]
                        == "the worker running this task stopped (its lease expired)"
                    )
                else:
                    assert status["state"] == "completed"
            assert any(agents.ran_on(t) == victim for t in ids)
        host.revive()


async def test_a_rolling_restart_under_load_answers_every_request(cluster):
    lb = cluster.lb.url
    async with Agents(cluster, cluster.pg.database(), "--drain", "10") as agents:
        answers: list[httpx.Response] = []
        made: list[str] = []
        stop = asyncio.Event()

        async def load(n: int) -> None:
            async with httpx.AsyncClient(timeout=60) as http:
                i = 0
                while not stop.is_set():
                    i += 1
                    if i % 2:
                        r = await http.post(
                            lb + "/", json=send(i, f"load {n} {i} slow 0.5", blocking=True)
                        )
                    else:
                        r = await http.post(lb + "/", json=send(i, f"load {n} {i} slow 1"))
                    answers.append(r)
                    if r.status_code == 200 and "result" in r.json():
                        made.append(r.json()["result"]["id"])
                        answers.append(await http.post(lb + "/", json=get(i, made[-1])))

        drained: list[dict] = []
        loads = [asyncio.ensure_future(load(n)) for n in range(6)]
        await asyncio.sleep(1.0)
        for h in cluster.agent_hosts:  # each drained, then started again as a new version
            served = agents.served[h.addr]
            served.proc.send_signal(signal.SIGTERM)
            await asyncio.wait_for(served.proc.wait(), 20)
            assert served.proc.returncode == 0
            drained.extend(served.events("draining"))
            await agents.up(h.addr, "--description", "version 2")
            await asyncio.sleep(0.5)
        stop.set()
        await asyncio.gather(*loads)
        bad = [
            (r.status_code, r.text[:200])
            for r in answers
            if r.status_code != 200 or "result" not in r.json()
        ]
        assert not bad, bad[:5]
        assert len(made) > 50
        assert len(drained) >= 2 and all(
            d["running"] > 0 for d in drained
        )  # the restarts met running tasks
        async with httpx.AsyncClient(timeout=30) as http:
            card = (await http.get(lb + "/.well-known/agent-card.json")).json()
            assert card["description"] == "version 2"
            async with asyncio.timeout(20):
                while left := [
                    t for t in made if (await state_of(http, lb, t))["state"] != "completed"
                ]:
                    await asyncio.sleep(0.2)
            assert not left  # no task lost, none failed by the restarts
        assert not [s for s in cluster.lb.statuses() if s != "200"]


async def test_the_database_going_away_every_host_says_retry_and_all_serve_again_when_it_is_back(
    cluster,
):
    lb = cluster.lb.url
    async with Agents(cluster, cluster.pg.database()) as agents:
        async with httpx.AsyncClient(timeout=30) as http:
            running = (await http.post(lb + "/", json=send(1, "slow 3 then answer"))).json()[
                "result"
            ]["id"]
            async with asyncio.timeout(10):
                while agents.ran_on(running) is None:
                    await asyncio.sleep(0.05)
            elsewhere = next(
                h.addr for h in cluster.agent_hosts if h.addr != agents.ran_on(running)
            )
            first = asyncio.Event()  # a stream on another host, following it across the outage
            follow = asyncio.ensure_future(
                sse(
                    http,
                    url_of(elsewhere),
                    {
                        "jsonrpc": "2.0",
                        "id": 6,
                        "method": "tasks/resubscribe",
                        "params": {"id": running},
                    },
                    first,
                )
            )
            await first.wait()
            await asyncio.to_thread(cluster.pg.stop)
            try:
                for h in cluster.agent_hosts:
                    answer = (
                        await http.post(url_of(h.addr) + "/", json=send(2, "during", blocking=True))
                    ).json()
                    assert answer["error"] == {
                        "code": -32603,
                        "message": "the task store is unavailable: try again shortly",
                    }
                    r = await http.get(f"{url_of(h.addr)}/tasks/{running}")
                    if h.addr == agents.ran_on(running) and r.status_code == 200:
                        # the host running it answers from the task it holds, when its state
                        # is already written (a heartbeat wrote `working`): no read needed
                        assert r.json()["status"]["state"] == "TASK_STATE_WORKING"
                        continue
                    assert r.status_code == 503 and r.json()["error"]["status"] == "UNAVAILABLE"
            finally:
                await asyncio.to_thread(cluster.pg.start)
            for h in cluster.agent_hosts:  # each reconnects by itself, no restart
                async with asyncio.timeout(30):
                    while "result" not in (
                        answer := (
                            await http.post(
                                url_of(h.addr) + "/", json=send(3, "after", blocking=True)
                            )
                        ).json()
                    ):
                        await asyncio.sleep(0.2)
                assert answer["result"]["status"]["state"] == "completed"
            async with asyncio.timeout(
                30
            ):  # the run that ended while the database was away: its result kept
                while (await state_of(http, lb, running))["state"] != "completed":
                    await asyncio.sleep(0.2)
            frames = await asyncio.wait_for(
                follow, 15
            )  # what it missed while the database was away, read again
            assert (
                frames[-1]["result"]["final"] is True
                and frames[-1]["result"]["status"]["state"] == "completed"
            )
            # and the hosts hear each other again: a stream on one follows a task another runs
            a, b = cluster.agent_hosts[0].addr, cluster.agent_hosts[1].addr
            task = (await http.post(url_of(a) + "/", json=send(4, "slow 1 then answer"))).json()[
                "result"
            ]["id"]
            frames = await sse(
                http,
                url_of(b),
                {"jsonrpc": "2.0", "id": 5, "method": "tasks/resubscribe", "params": {"id": task}},
            )
            assert (
                frames[-1]["result"]["final"] is True
                and frames[-1]["result"]["status"]["state"] == "completed"
            )


async def test_a_reply_streams_through_another_host_as_live_as_on_its_own(cluster, monkeypatch):
    """A task runs on one host; a subscriber on another gets the reply so far, then each word as
    the model says it (the hosts' words cross through the database: WorkerLink want/words), and
    the join of what it got is the task's artifact."""
    monkeypatch.setenv("TOOLNEXUS_DEMO_PACE", "0.2")  # the served demo's words, 0.2 s apart
    async with Agents(cluster, cluster.pg.database()) as agents:
        runner, other = (h.addr for h in cluster.agent_hosts[:2])
        async with httpx.AsyncClient(timeout=30) as http:
            prompt = " ".join(f"w{i}" for i in range(15))
            task = (await http.post(url_of(runner) + "/", json=send(1, prompt))).json()["result"]
            async with asyncio.timeout(20):
                while agents.ran_on(task["id"]) is None:
                    await asyncio.sleep(0.05)
            assert agents.ran_on(task["id"]) == runner
            await asyncio.sleep(1.0)  # some words said before the subscriber joins
            frames = await sse(
                http,
                url_of(other),
                {
                    "jsonrpc": "2.0",
                    "id": 2,
                    "method": "tasks/resubscribe",
                    "params": {"id": task["id"]},
                },
            )
            final = (await http.post(url_of(other) + "/", json=get(3, task["id"]))).json()
    results = [f["result"] for f in frames]
    assert results[0]["kind"] == "task" and results[-1]["status"]["state"] == "completed"
    text = "".join(p["text"] for a in results[0].get("artifacts", []) for p in a["parts"])
    updates = [r for r in results if r["kind"] == "artifact-update"]
    for update in updates:
        piece = "".join(p["text"] for p in update["artifact"]["parts"])
        text = text + piece if update["append"] else piece
    assert text == final["result"]["artifacts"][0]["parts"][0]["text"] == "You said: " + prompt
    assert len(updates) >= 5, [r["kind"] for r in results]  # words as they came, not one lump


SPOOFED = {  # what a caller may put in its own request; the documented nginx passes it on
    "X-Forwarded-For": "127.0.0.1, 10.0.0.11",
    "X-Real-IP": "127.0.0.1",
    "X-Client-IP": "127.0.0.1",
    "Forwarded": 'for=127.0.0.1;host=evil.example;proto=https, for="[::1]"',
    "X-Forwarded-Host": "evil.example",
    "X-Forwarded-Proto": "https",
    "X-Forwarded-Port": "443",
    "X-Forwarded-User": "alice",
    "X-Remote-User": "alice",
    "X-Original-URL": "/tasks",
}


async def test_behind_nginx_forwarded_headers_change_neither_who_calls_nor_the_address_rules(
    cluster, tmp_path
):
    """The documented nginx set-up passes a caller's own ``X-Forwarded-*``, ``Forwarded`` and
    ``X-Real-IP`` headers on to the hosts (issue 49's untested surface). None of them lets a
    caller in without its token or makes it another caller (two bearer tokens: each sees only its
    own tasks), moves the card elsewhere, or opens the push address rules (hosts beyond loopback
    take only public webhooks, whoever says it is local)."""
    lb = cluster.lb.url
    config = tmp_path / "agent.json"
    config.write_text(json.dumps({"a2a": {"auth": {"bearer": ["alice-token", "bob-token"]}}}))
    alice_says = {"Authorization": "Bearer alice-token"}
    bob_says = {**SPOOFED, "Authorization": "Bearer bob-token"}
    async with Agents(cluster, cluster.pg.database(), "--config", str(config)):
        async with httpx.AsyncClient(timeout=30) as http:
            card = (await http.get(lb + "/.well-known/agent-card.json", headers=SPOOFED)).json()
            assert card["url"] == lb + "/" and {i["url"] for i in card["supportedInterfaces"]} == {
                lb + "/"
            }
            anonymous = await http.post(lb + "/", json=send(1, "hello"), headers=SPOOFED)
            assert anonymous.status_code == 401
        async with tn.A2AClient(lb, headers=alice_says) as alice:
            hers = await alice.send("hello from alice", blocking=True)
        async with tn.A2AClient(lb, headers=bob_says) as bob:
            assert not bob.warnings  # the card sent no call elsewhere
            for _ in range(3):  # whichever host each lands on
                with pytest.raises(TaskNotFoundError):
                    await bob.get(hers.id)
                with pytest.raises(TaskNotFoundError):
                    await bob.cancel(hers.id)
                with pytest.raises(TaskNotFoundError):
                    await bob.send("and now mine", task_id=hers.id, context_id=hers.context_id)
            listed = await bob.list_tasks()
            assert hers.id not in {t.id for t in listed["tasks"]}
            his = await bob.send("hello from bob", blocking=True)
            inward = [
                f"http://{cluster.lb_host.addr}:9/hook",  # the hosts' own private network
                f"http://{cluster.agent_hosts[0].addr}:{AGENT_PORT}/",  # a host itself
                "http://127.0.0.1:9/hook",
                "http://localhost:9/hook",
                "http://169.254.169.254/latest/meta-data/",
            ]
            for url in inward:
                with pytest.raises(InvalidParamsError, match="refused"):
                    await bob.set_push(his.id, url)
