"""``toolnexus serve --workers N`` on a real PostgreSQL: N processes behind one port, a thousand
tasks, a worker killed with SIGKILL under load, and the refusal without a shared store."""

from __future__ import annotations

import asyncio
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


NEXT_VERSION = """
import sys
from toolnexus.stores import postgres
# what a next version of toolnexus might bring: a column with a default, and a table made once
# (no IF NOT EXISTS: run twice, it fails); it holds its locks a while, as a real one on a big table would
postgres.MIGRATIONS.append("ALTER TABLE toolnexus_tasks ADD COLUMN labels text NOT NULL DEFAULT ''; "
                           "CREATE TABLE toolnexus_next (ran timestamptz NOT NULL DEFAULT now()); "
                           "INSERT INTO toolnexus_next DEFAULT VALUES; SELECT pg_sleep(0.5)")
postgres.SCHEMA_VERSION = len(postgres.MIGRATIONS)
from toolnexus.cli import main
sys.exit(main(sys.argv[1:]))
"""


async def test_a_new_versions_migration_runs_once_while_the_old_version_serves(postgres):
    """A rolling deploy that brings a migration: two hosts of the new version start at once while a
    host of the old one serves under load. The migration runs once (the second new host waits on
    the lock and finds it done), the old host answers every request through it and after it, and
    each version reads what the other wrote."""
    import asyncpg

    from toolnexus.stores.postgres import SCHEMA_VERSION

    answered: list[str] = []
    failures: list[str] = []
    stop = asyncio.Event()

    async def load(http: httpx.AsyncClient, url: str, k: int) -> None:
        i = 0
        while not stop.is_set():
            i += 1
            r = await http.post(
                url + "/", json=send(k * 100_000 + i, f"load {k} {i}", blocking=True)
            )
            body = (
                r.json() if r.headers.get("content-type", "").startswith("application/json") else {}
            )
            if (
                r.status_code != 200
                or body.get("result", {}).get("status", {}).get("state") != "completed"
            ):
                failures.append(f"{r.status_code} {r.text[:200]}")
            else:
                answered.append(body["result"]["id"])

    async with Served("--store", postgres) as old:
        await old.until(lambda lines: old.events("ready"))
        old_url = old.events("started")[0]["url"]
        async with httpx.AsyncClient(timeout=30) as http:
            loaders = [asyncio.ensure_future(load(http, old_url, k)) for k in range(4)]
            await asyncio.sleep(0.3)
            before = len(answered)
            new_hosts = [
                Served("--store", postgres, program=["-c", NEXT_VERSION]) for _ in range(2)
            ]
            async with new_hosts[0] as one, new_hosts[1] as two:
                try:
                    await asyncio.gather(
                        *(
                            h.until(lambda lines, h=h: h.events("ready"), timeout=60)
                            for h in (one, two)
                        )
                    )
                    during = len(answered) - before
                    await asyncio.sleep(0.3)
                finally:
                    stop.set()
                    await asyncio.gather(*loaders)
                new_url = one.events("started")[0]["url"]
                made_new = (
                    await http.post(new_url + "/", json=send(1, "made by the new version", True))
                ).json()
                made_old = (
                    await http.post(old_url + "/", json=send(2, "made by the old version", True))
                ).json()
                seen_by_old = (
                    await http.post(old_url + "/", json=get(3, made_new["result"]["id"]))
                ).json()
                seen_by_new = (
                    await http.post(
                        two.events("started")[0]["url"] + "/", json=get(4, made_old["result"]["id"])
                    )
                ).json()
            assert "Traceback" not in await one.stderr() + await two.stderr()
        assert seen_by_old["result"]["status"]["state"] == "completed"
        assert seen_by_new["result"]["status"]["state"] == "completed"
    assert "Traceback" not in await old.stderr()
    assert not failures, failures[:3]
    assert during > 0 and len(set(answered)) == len(
        answered
    )  # the old host served while the new ones migrated
    db = await asyncpg.connect(postgres)
    try:
        assert await db.fetchval("SELECT count(*) FROM toolnexus_next") == 1  # run once
        assert [
            r["version"]
            for r in await db.fetch("SELECT version FROM toolnexus_schema ORDER BY version")
        ] == list(range(1, SCHEMA_VERSION + 2))
        assert (
            await db.fetchval("SELECT count(*) FROM toolnexus_tasks WHERE labels = ''")
            == len(answered) + 2
        )
    finally:
        await db.close()


async def test_past_a_thousand_connections_to_all_workers_new_requests_get_503(postgres):
    """``max_connections`` (1,000) is the agent's, not each worker's: 1,030 connections held on two
    workers (about 515 each) and every new request gets 503 (issue 49: each worker counted its
    own and answered 200); once they close, 200 again."""
    from toolnexus.http.server import MAX_CONNECTIONS

    async with Served("--store", postgres, "--workers", "2") as served:
        started = await served.until(lambda lines: served.events("started"), timeout=60)
        await served.until(lambda lines: len(served.events("worker-ready")) >= 2, timeout=60)
        url = started[0]["url"]
        host, port = url.removeprefix("http://").rsplit(":", 1)
        held = []
        try:
            for _ in range(MAX_CONNECTIONS + 30):
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
