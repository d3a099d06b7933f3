"""The PostgreSQL store on a real PostgreSQL server (tests/postgres.py): versions, migrations, two
workers (two served agents in one process) sharing one database, and the database going away."""

from __future__ import annotations

import asyncio

import asyncpg
import httpx
import pytest

import toolnexus as tn
from toolnexus.a2a.model import Message, Part, Task, TaskState, TaskStatus
from toolnexus.errors import ConfigError
from toolnexus.serve.postgres import SCHEMA_VERSION, PostgresTaskStore, StaleTaskError, migrate

from ..conftest import EXAMPLE_SKILLS
from .wire import rpc, v03_message


def task(i: int = 1) -> Task:
    return Task(f"task-{i}", "ctx", TaskStatus(TaskState.WORKING, None, "2026-12-02T10:00:00.000000Z"),
                history=[Message("user", [Part.of_text("hi")], f"m{i}", "ctx", f"task-{i}")])


async def test_a_write_over_another_workers_write_is_refused_not_lost(postgres):
    one, two = PostgresTaskStore(postgres), PostgresTaskStore(postgres)
    try:
        await one.save(task())
        mine, theirs = await one.get("task-1"), await two.get("task-1")
        assert mine.version == theirs.version == 1
        theirs.status = TaskStatus(TaskState.CANCELED, None, "2026-12-02T10:00:01.000000Z")
        await two.save(theirs)
        mine.status = TaskStatus(TaskState.COMPLETED, None, "2026-12-02T10:00:02.000000Z")
        with pytest.raises(StaleTaskError, match="changed by another worker"):
            await one.save(mine)
        stored = await one.get("task-1")
        assert stored.state is TaskState.CANCELED and stored.version == 2
        with pytest.raises(StaleTaskError):  # a second insert of the same id is no silent overwrite either
            await two.save(task())
    finally:
        await one.aclose()
        await two.aclose()


async def test_the_schema_is_created_once_versioned_and_never_downgraded(postgres):
    connections = [await asyncpg.connect(postgres) for _ in range(5)]
    try:
        found = await asyncio.gather(*(migrate(c) for c in connections))  # five workers starting at once
        assert sorted(found) == [0, 1, 1, 1, 1] and SCHEMA_VERSION == 1
        assert await connections[0].fetchval("SELECT count(*) FROM toolnexus_schema") == 1
        assert await migrate(connections[0]) == 1  # idempotent
        await connections[0].execute("INSERT INTO toolnexus_schema (version) VALUES (99)")
        with pytest.raises(ConfigError, match="schema is version 99; this toolnexus knows 1: upgrade"):
            await migrate(connections[1])
    finally:
        for c in connections:
            await c.close()


async def serve_worker(dsn: str, name: str = "pg-desk"):
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    return await tk.serve("127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name=name, store=dsn))


async def test_two_workers_share_tasks_conversations_and_a_cancel(postgres):
    first, second = await serve_worker(postgres), await serve_worker(postgres)
    try:
        async with tn.A2AClient(first.url) as one, tn.A2AClient(second.url) as two:
            done = await one.send("hello there", blocking=True)
            seen = await two.get(done.id)  # polled on the other worker
            assert seen.state is TaskState.COMPLETED and seen.reply == done.reply == "You said: hello there"
            later = await two.send("and again", context_id=done.context_id, blocking=True)
            assert later.reply == "You said: and again (message 2 of this conversation)"  # the shared transcript
            slow = await one.send("slow 1 please")
            canceled = await two.cancel(slow.id)  # running on the first worker, canceled on the second
            assert canceled.state is TaskState.CANCELED
            await asyncio.sleep(1.5)  # the first worker's run ends and tries to complete it: refused
            assert (await one.get(slow.id)).state is TaskState.CANCELED
            listed = await two.list_tasks()
        assert {t.id for t in listed["tasks"]} >= {done.id, later.id, slow.id}
    finally:
        await first.stop()
        await second.stop()


async def test_the_database_going_away_fails_calls_cleanly_and_the_agent_recovers(postgres, postgres_server):
    handle = await serve_worker(postgres)
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            ok = await rpc(http, handle.url, "message/send", {"message": v03_message("before"), "configuration": {
                "blocking": True}})
            assert ok["result"]["status"]["state"] == "completed"
            postgres_server.stop()
            try:
                for params in ({"message": v03_message("during")}, {"id": ok["result"]["id"]}):
                    method = "message/send" if "message" in params else "tasks/get"
                    answer = await rpc(http, handle.url, method, params)
                    assert answer["error"] == {"code": -32603, "message": "the task store is unavailable: try again shortly"}
                    assert "Traceback" not in str(answer)
            finally:
                postgres_server.start()
            again = await rpc(http, handle.url, "message/send", {"message": v03_message("after"), "configuration": {
                "blocking": True}})
            assert again["result"]["status"]["state"] == "completed"  # no restart of the agent
            got = await rpc(http, handle.url, "tasks/get", {"id": ok["result"]["id"]})
            assert got["result"]["status"]["state"] == "completed"
    finally:
        await handle.stop()


def test_a_store_url_that_is_not_one_names_the_forms_without_its_password():
    from toolnexus.serve.tasks import open_store

    with pytest.raises(ConfigError, match=r"'postgresql://\.\.\.'.*'mysql://u:\*\*\*@h/db'"):
        open_store("mysql://u:hunter2@h/db")
