"""``toolnexus serve --workers N`` on a real PostgreSQL: N processes behind one port, a thousand
tasks, a worker killed with SIGKILL under load, and the refusal without a shared store."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from collections import Counter

import httpx

from ..helpers import Served, arun_cli


def send(i: int, text: str, blocking: bool = False) -> dict:
    return {
        "jsonrpc": "2.0",
        "id": i,
        "method": "message/send",
        "params": {
            "configuration": {"blocking": blocking},
            "message": {
                "kind": "message",
                "messageId": f"m-{i}",
                "role": "user",
                "parts": [{"kind": "text", "text": text}],
            },
        },
    }


def get(i: int, task_id: str) -> dict:
    return {"jsonrpc": "2.0", "id": i, "method": "tasks/get", "params": {"id": task_id}}


def folded(text: str, result: dict) -> str:
    """The reply as a client puts it together, after one frame of a stream: a task frame's
    artifact, a piece appended, or a text that replaces it."""
    if result.get("kind") == "task":
        return "".join(p["text"] for a in result.get("artifacts", []) for p in a["parts"])
    if result.get("kind") == "artifact-update":
        piece = "".join(p["text"] for p in result["artifact"]["parts"])
        return text + piece if result.get("append") else piece
    return text


async def follow(http: httpx.AsyncClient, url: str, task_id: str, texts: list[str]) -> dict:
    """Subscribe to a task at ``url``: the reply after each frame into ``texts``, the last
    frame's result returned (its end, unless the stream broke first: then it raises)."""
    body = {"jsonrpc": "2.0", "id": 2, "method": "tasks/resubscribe", "params": {"id": task_id}}
    result: dict = {}
    async with http.stream("POST", url + "/", json=body) as response:
        assert response.status_code == 200, await response.aread()
        async for line in response.aiter_lines():
            if line.startswith("data: "):
                result = json.loads(line[6:])["result"]
                texts.append(folded(texts[-1] if texts else "", result))
    return result


async def test_four_workers_behind_one_port_lose_no_task_and_report_each_once(postgres):
    async with Served("--store", postgres, "--workers", "4") as served:
        await served.until(
            lambda lines: len([x for x in lines if x.get("event") == "worker-ready"]) == 4
        )
        url = served.events("started")[0]["url"]
        fresh = httpx.Limits(
            max_keepalive_connections=0
        )  # a new connection each time: any worker takes it
        async with httpx.AsyncClient(timeout=30, limits=fresh) as http:
            sem = asyncio.Semaphore(32)

            async def one(i: int) -> str:
                async with sem:
                    answer = (await http.post(url + "/", json=send(i, f"task {i}"))).json()
                task_id = answer["result"]["id"]
                for _ in range(500):  # polled on whichever worker takes each connection
                    async with sem:
                        state = (await http.post(url + "/", json=get(i, task_id))).json()["result"][
                            "status"
                        ]["state"]
                    if state == "completed":
                        return task_id
                    await asyncio.sleep(0.02)
                raise AssertionError(f"task {task_id} is still {state}")

            ids = await asyncio.gather(*(one(i) for i in range(1000)))
        assert len(set(ids)) == 1000
        done = await served.until(
            lambda lines: (
                (c := [x for x in lines if x.get("state") == "completed"]) and len(c) >= 1000 and c
            )
        )
    assert not served.events("garbled")
    completed = Counter(line["task"] for line in done)
    assert set(completed) == set(ids) and set(completed.values()) == {
        1
    }  # each reported exactly once
    by_worker = Counter(line["worker"] for line in done)
    assert len(by_worker) >= 2, by_worker  # the port's connections went to more than one worker


async def test_a_worker_killed_under_load_fails_its_running_tasks_after_the_lease_and_only_those(
    postgres,
):
    async with Served("--store", postgres, "--workers", "2", "--lease", "1") as served:
        await served.until(
            lambda lines: len([x for x in lines if x.get("event") == "worker-ready"]) == 2
        )
        url = served.events("started")[0]["url"]
        pids = {line["worker"]: line["pid"] for line in served.events("worker")}
        fresh = httpx.Limits(max_keepalive_connections=0)
        async with httpx.AsyncClient(timeout=30, limits=fresh) as http:
            slow: list[str] = []

            def running(lines: list[dict]) -> dict[str, int]:
                return {
                    x["task"]: x["worker"]
                    for x in lines
                    if x.get("state") == "working" and x["task"] in slow
                }

            while len(slow) < 60 and (
                len(slow) < 8 or len(set(running(served.lines).values())) < 2
            ):
                slow.append(
                    (
                        await http.post(url + "/", json=send(len(slow), "slow 30 then answer"))
                    ).json()["result"]["id"]
                )  # until both workers run some (the kernel picks who accepts)
                await asyncio.sleep(0.05)
            working = await served.until(lambda lines: len(w := running(lines)) == len(slow) and w)
            assert len(set(working.values())) == 2
            victim = Counter(working.values()).most_common(1)[0][0]
            os.kill(pids[victim], signal.SIGKILL)
            quick = [
                (await http.post(url + "/", json=send(100 + i, f"quick {i}", blocking=True))).json()
                for i in range(20)
            ]
            assert {q["result"]["status"]["state"] for q in quick} == {
                "completed"
            }  # the survivor serves on

            async def state(task_id: str) -> dict:
                return (await http.post(url + "/", json=get(1, task_id))).json()["result"]["status"]

            mine = [t for t, w in working.items() if w == victim]
            async with asyncio.timeout(15):  # lease 1 s, then a tick of a third of it
                while [(await state(t))["state"] for t in mine] != ["failed"] * len(mine):
                    await asyncio.sleep(0.2)
            reason = (await state(mine[0]))["message"]["parts"][0]["text"]
            others = [t for t, w in working.items() if w != victim]
            assert {(await state(t))["state"] for t in others} <= {
                "working"
            } and others  # untouched
        assert reason == "the worker running this task stopped (its lease expired)"
        restarted = await served.until(
            lambda lines: [x for x in lines if x.get("event") == "worker-exited"]
        )
        assert restarted[0]["worker"] == victim and restarted[0]["code"] == -signal.SIGKILL
        lapsed = [x for x in served.lines if x.get("state") == "failed"]
        assert sorted(x["task"] for x in lapsed) == sorted(mine)  # each failure reported once


async def test_workers_without_a_shared_store_are_refused_in_one_line(tmp_path):
    for store in ([], ["--store", f"file:{tmp_path}"]):
        code, out, err = await arun_cli("serve", "--workers", "3", *store)
        assert code == 2 and not out
        assert err.strip() == (
            "toolnexus: --workers 3 needs a store the workers share: --store "
            "postgresql://USER@HOST/DB (the memory and file stores live in one process)"
        )


def next_version(hold: float) -> list[str]:
    """What python runs for a host of a next version of toolnexus: one more migration, a column
    with a default and a table made once (no IF NOT EXISTS: run twice, it fails), holding its
    locks ``hold`` seconds, as a real one on a big table would."""
    return [
        "-c",
        f"""
import sys
from toolnexus.stores import postgres
postgres.MIGRATIONS.append("ALTER TABLE toolnexus_tasks ADD COLUMN labels text NOT NULL DEFAULT ''; "
                           "CREATE TABLE toolnexus_next (ran timestamptz NOT NULL DEFAULT now()); "
                           "INSERT INTO toolnexus_next DEFAULT VALUES; SELECT pg_sleep({hold})")
postgres.SCHEMA_VERSION = len(postgres.MIGRATIONS)
from toolnexus.cli import main
sys.exit(main(sys.argv[1:]))
""",
    ]


class Load:
    """Blocking sends to a host from four loops, from ``start`` until ``stop``: the ids of the
    tasks answered completed, and every other answer."""

    def __init__(self, http: httpx.AsyncClient, url: str) -> None:
        self.http, self.url = http, url
        self.answered: list[str] = []
        self.failures: list[str] = []
        self._stop = asyncio.Event()
        self._loops: list[asyncio.Future[None]] = []

    def start(self) -> Load:
        self._loops = [asyncio.ensure_future(self._send(k)) for k in range(4)]
        return self

    async def stop(self) -> None:
        self._stop.set()
        await asyncio.gather(*self._loops)

    async def _send(self, k: int) -> None:
        i = 0
        while not self._stop.is_set():
            i += 1
            r = await self.http.post(
                self.url + "/", json=send(k * 100_000 + i, f"load {k} {i}", blocking=True)
            )
            body = (
                r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
            )
            if (
                r.status_code != 200
                or body.get("result", {}).get("status", {}).get("state") != "completed"
            ):
                self.failures.append(f"{r.status_code} {r.text[:200]}")
            else:
                self.answered.append(body["result"]["id"])


async def _schema(db) -> tuple[list[int], bool, int]:
    """The schema's versions, whether the next version's column is there, and the rows of its
    table (-1: no table)."""
    versions = [
        r["version"]
        for r in await db.fetch("SELECT version FROM toolnexus_schema ORDER BY version")
    ]
    column = await db.fetchval(
        "SELECT count(*) FROM information_schema.columns"
        " WHERE table_name = 'toolnexus_tasks' AND column_name = 'labels'"
    )
    table = await db.fetchval("SELECT to_regclass('toolnexus_next') IS NOT NULL")
    rows = await db.fetchval("SELECT count(*) FROM toolnexus_next") if table else -1
    return versions, bool(column), rows


async def test_a_new_versions_migration_runs_once_while_the_old_version_serves(postgres):
    """A rolling deploy that brings a migration: two hosts of the new version start at once while a
    host of the old one serves under load. The migration runs once (the second new host waits on
    the lock and finds it done), the old host answers every request through it and after it, and
    each version reads what the other wrote."""
    import asyncpg

    from toolnexus.stores.postgres import SCHEMA_VERSION

    async with Served("--store", postgres) as old:
        await old.until(lambda lines: old.events("ready"))
        old_url = old.events("started")[0]["url"]
        async with httpx.AsyncClient(timeout=30) as http:
            load = Load(http, old_url).start()
            await asyncio.sleep(0.3)
            before = len(load.answered)
            new_hosts = [Served("--store", postgres, program=next_version(0.5)) for _ in range(2)]
            async with new_hosts[0] as one, new_hosts[1] as two:
                try:
                    await asyncio.gather(
                        *(
                            h.until(lambda lines, h=h: h.events("ready"), timeout=60)
                            for h in (one, two)
                        )
                    )
                    during = len(load.answered) - before
                    await asyncio.sleep(0.3)
                finally:
                    await load.stop()
                new_url = one.events("started")[0]["url"]
                seen_by_new, seen_by_old = await _each_reads_the_other(
                    http, old_url, new_url, two.events("started")[0]["url"]
                )
            assert "Traceback" not in await one.stderr() + await two.stderr()
        assert seen_by_old["result"]["status"]["state"] == "completed"
        assert seen_by_new["result"]["status"]["state"] == "completed"
    assert "Traceback" not in await old.stderr()
    assert not load.failures, load.failures[:3]
    assert during > 0 and len(set(load.answered)) == len(
        load.answered
    )  # the old host served while the new ones migrated
    db = await asyncpg.connect(postgres)
    try:
        assert await _schema(db) == (list(range(1, SCHEMA_VERSION + 2)), True, 1)  # run once
        assert (
            await db.fetchval("SELECT count(*) FROM toolnexus_tasks WHERE labels = ''")
            == len(load.answered) + 2
        )
    finally:
        await db.close()


async def _each_reads_the_other(
    http: httpx.AsyncClient, old_url: str, new_url: str, other_new_url: str
) -> tuple[dict, dict]:
    """A task made by each version, read by the other: (the new one's view of the old one's
    task, the old one's view of the new one's)."""
    made_new = (
        await http.post(new_url + "/", json=send(1, "made by the new version", True))
    ).json()
    made_old = (
        await http.post(old_url + "/", json=send(2, "made by the old version", True))
    ).json()
    seen_by_old = (await http.post(old_url + "/", json=get(3, made_new["result"]["id"]))).json()
    seen_by_new = (
        await http.post(other_new_url + "/", json=get(4, made_old["result"]["id"]))
    ).json()
    return seen_by_new, seen_by_old


async def test_a_host_killed_mid_migration_leaves_the_schema_whole_and_the_next_one_migrates(
    postgres,
):
    """A host of the new version is killed (SIGKILL) while its migration runs, holding the lock
    with its statement half done, beside an old host under load (issue 49's untested surface).
    The migration's transaction is rolled back whole: no column, no table, no version row; the
    old host answers every request, through the migration's locks and after; the next new host
    to start runs the migration once, and each version reads what the other wrote."""
    import asyncpg

    from toolnexus.stores.postgres import SCHEMA_VERSION

    db = await asyncpg.connect(postgres)
    migrating = (  # the killed host's migration, still running in its server process
        "SELECT count(*) FROM pg_stat_activity WHERE query LIKE '%pg_sleep(3)%'"
        " AND state = 'active' AND pid <> pg_backend_pid()"
    )
    try:
        async with Served("--store", postgres) as old:
            await old.until(lambda lines: old.events("ready"))
            old_url = old.events("started")[0]["url"]
            async with httpx.AsyncClient(timeout=30) as http:
                load = Load(http, old_url).start()
                try:
                    async with Served("--store", postgres, program=next_version(3)) as killed:
                        async with asyncio.timeout(60):
                            while not await db.fetchval(migrating):
                                await asyncio.sleep(0.05)
                        killed.proc.kill()
                        await killed.proc.wait()
                    async with asyncio.timeout(60):  # its statement ends; nothing commits it
                        while await db.fetchval(migrating):
                            await asyncio.sleep(0.05)
                    after_kill = await _schema(db)
                    async with Served("--store", postgres, program=next_version(0.5)) as new:
                        await new.until(lambda lines: new.events("ready"), timeout=60)
                        new_url = new.events("started")[0]["url"]
                        seen_by_new, seen_by_old = await _each_reads_the_other(
                            http, old_url, new_url, new_url
                        )
                    assert "Traceback" not in await new.stderr()
                finally:
                    await load.stop()
        assert "Traceback" not in await old.stderr()
        assert after_kill == (list(range(1, SCHEMA_VERSION + 1)), False, -1)  # as it was
        assert await _schema(db) == (list(range(1, SCHEMA_VERSION + 2)), True, 1)  # then once
        assert seen_by_old["result"]["status"]["state"] == "completed"
        assert seen_by_new["result"]["status"]["state"] == "completed"
        assert not load.failures, load.failures[:3]
        assert load.answered and len(set(load.answered)) == len(load.answered)
    finally:
        await db.close()


async def test_past_the_connection_limit_of_all_workers_new_requests_get_503(postgres):
    """``--max-connections`` is the agent's, not each worker's: 130 connections held on two workers
    under a limit of 100 (about 65 each) and every new request gets 503 (issue 49: each worker
    counted its own and answered 200); once they close, 200 again. The supervisor says the limit."""
    async with Served("--store", postgres, "--workers", "2", "--max-connections", "100") as served:
        started = await served.until(lambda lines: served.events("started"), timeout=60)
        await served.until(lambda lines: len(served.events("worker-ready")) >= 2, timeout=60)
        assert served.events("connections")[0]["max"] == 100
        url = started[0]["url"]
        host, port = url.removeprefix("http://").rsplit(":", 1)
        held = []
        try:
            for _ in range(130):
                _, writer = await asyncio.open_connection(host, int(port))
                writer.write(b"GET / HTTP/1.1\r\n")  # a request head, never ended
                held.append(writer)
            async with httpx.AsyncClient(timeout=30) as http:
                # each on a fresh connection, so that it lands on either worker
                full = [
                    (
                        await http.get(url + "/.well-known/agent-card.json", headers=CLOSE)
                    ).status_code
                    for _ in range(8)
                ]
                for writer in held:
                    writer.close()
                await asyncio.gather(*(w.wait_closed() for w in held), return_exceptions=True)
                held = []
                async with asyncio.timeout(30):  # the workers see them close
                    while (
                        await http.get(url + "/.well-known/agent-card.json", headers=CLOSE)
                    ).status_code != 200:
                        await asyncio.sleep(0.1)
        finally:
            for writer in held:
                writer.close()
    assert full == [503] * 8, full


CLOSE = {"Connection": "close"}


async def test_a_stream_whose_worker_is_killed_resumes_on_another_with_every_word_once(postgres):
    """A reply run on one worker and followed on another (its words cross through the database);
    the follower killed (SIGKILL) mid-reply: the caller's stream breaks, it subscribes again on a
    worker that did not exist when the stream began, and the reply it puts together is the task's,
    each word once (what it had before the kill a beginning of it, and so is each text after)."""
    pace = {"TOOLNEXUS_DEMO_PACE": "0.1"}  # the demo's words, 0.1 s apart
    prompt = " ".join(f"w{i}" for i in range(100))
    started = lambda lines: [x["url"] for x in lines if x.get("event") == "started"]  # noqa: E731
    async with (
        Served("--store", postgres, env=pace) as runner,
        Served("--store", postgres, env=pace) as follower,
    ):
        url, there = (await runner.until(started))[0], (await follower.until(started))[0]
        async with httpx.AsyncClient(timeout=30) as http:
            task_id = (await http.post(url + "/", json=send(1, prompt))).json()["result"]["id"]
            before: list[str] = []
            stream = asyncio.ensure_future(follow(http, there, task_id, before))
            async with asyncio.timeout(30):
                while len((before or [""])[-1].split()) < 12:  # some words heard there
                    assert not stream.done(), stream.result()
                    await asyncio.sleep(0.02)
            async with Served("--store", postgres, env=pace) as again:  # its replacement
                elsewhere = (await again.until(started))[0]
                assert follower.proc is not None
                os.kill(follower.proc.pid, signal.SIGKILL)
                try:
                    broke = await asyncio.wait_for(stream, 20)
                except httpx.HTTPError as exc:
                    broke = exc
                assert isinstance(broke, httpx.HTTPError), broke  # it ended mid-reply, not done
                after: list[str] = []
                last = await follow(http, elsewhere, task_id, after)
            final = (await http.post(url + "/", json=get(3, task_id))).json()["result"]
    reply = final["artifacts"][0]["parts"][0]["text"]
    assert last["status"]["state"] == final["status"]["state"] == "completed"
    assert reply == "You said: " + prompt
    assert after[-1] == reply  # no word lost, none twice
    assert all(reply.startswith(text) for text in before + after), [
        t for t in before + after if not reply.startswith(t)
    ]
    assert len(before[-1].split()) >= 12 and len(after) > 2  # heard live, before and after
