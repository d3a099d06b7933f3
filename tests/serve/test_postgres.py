"""The PostgreSQL store on a real PostgreSQL server (tests/postgres.py): versions, migrations, two
workers (two served agents in one process) sharing one database, and the database going away."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import urlsplit

import asyncpg
import httpx
import pytest

import toolnexus as tn
from toolnexus import _json
from toolnexus.errors import ConfigError, StaleTaskError
from toolnexus.protocol.model import Message, Part, Task, TaskState, TaskStatus
from toolnexus.stores.postgres import MIGRATIONS, SCHEMA_VERSION, PostgresTaskStore, migrate

from ..conftest import EXAMPLE_SKILLS
from .wire import rpc, v03_message


def task(i: int = 1) -> Task:
    return Task(
        f"task-{i}",
        "ctx",
        TaskStatus(TaskState.WORKING, None, "2026-12-02T10:00:00.000000Z"),
        history=[Message("user", [Part.of_text("hi")], f"m{i}", "ctx", f"task-{i}")],
    )


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
        with pytest.raises(
            StaleTaskError
        ):  # a second insert of the same id is no silent overwrite either
            await two.save(task())
    finally:
        await one.aclose()
        await two.aclose()


async def test_the_schema_is_created_once_versioned_and_never_downgraded(postgres, caplog):
    connections = [await asyncpg.connect(postgres) for _ in range(5)]
    try:
        found = await asyncio.gather(
            *(migrate(c) for c in connections)
        )  # five workers starting at once
        assert (
            sorted(found) == [0] + [SCHEMA_VERSION] * 4 and SCHEMA_VERSION == len(MIGRATIONS) == 3
        )
        assert (
            await connections[0].fetchval("SELECT count(*) FROM toolnexus_schema") == SCHEMA_VERSION
        )
        assert await migrate(connections[0]) == SCHEMA_VERSION  # idempotent
        await connections[0].execute("INSERT INTO toolnexus_schema (version) VALUES (99)")
        assert (
            await migrate(connections[1]) == 99
        )  # served on as it is (migrations only add), never downgraded
        assert await connections[0].fetchval("SELECT max(version) FROM toolnexus_schema") == 99
        assert "newer than this toolnexus's" in caplog.text
    finally:
        for c in connections:
            await c.close()


async def test_a_database_of_an_older_version_is_migrated_and_keeps_its_tasks(postgres):
    from toolnexus.stores import task_record

    old = await asyncpg.connect(postgres)
    try:  # a database as version 1 left it, with a task in it
        await old.execute(
            "CREATE TABLE toolnexus_schema (version integer NOT NULL); "
            "INSERT INTO toolnexus_schema VALUES (1);" + MIGRATIONS[0]
        )
        await old.execute(
            "INSERT INTO toolnexus_tasks (id, context_id, state, created, updated, version, record) "
            "VALUES ('task-1', 'ctx', 'working', 'c', 'u', 1, $1)",
            _json.dumps(task_record(task())),
        )
    finally:
        await old.close()
    store = PostgresTaskStore(postgres)
    try:
        kept = await store.get("task-1")
        assert kept.version == 1 and kept.history[0].text == "hi"
        kept.status = TaskStatus(TaskState.COMPLETED, None, "2026-12-02T10:00:05.000000Z")
        await store.save(kept)  # the columns version 2 added are written
        connection = await asyncpg.connect(postgres)
        try:
            assert (
                await connection.fetchval("SELECT max(version) FROM toolnexus_schema")
                == SCHEMA_VERSION
            )
            assert (
                await connection.fetchval("SELECT worker FROM toolnexus_tasks WHERE id = 'task-1'")
                is None
            )
        finally:
            await connection.close()
    finally:
        await store.aclose()


async def test_a_database_a_newer_version_migrated_is_served_on_as_it_is(postgres, caplog):
    """A rolling deploy: the first new host migrates; an old host that starts meanwhile (a restart,
    a rollback) serves on the newer schema, which only added, and says so."""
    newer = PostgresTaskStore(postgres)
    try:
        await newer.save(task())  # the schema as this version makes it
    finally:
        await newer.aclose()
    db = await asyncpg.connect(postgres)
    try:  # what a next version might add: a column with a default, a table
        await db.execute(
            f"ALTER TABLE toolnexus_tasks ADD COLUMN labels text NOT NULL DEFAULT ''; "
            f"CREATE TABLE toolnexus_future (id text); "
            f"INSERT INTO toolnexus_schema (version) VALUES ({SCHEMA_VERSION + 1})"
        )
    finally:
        await db.close()
    older = PostgresTaskStore(postgres)
    try:
        kept = await older.get("task-1")
        kept.status = TaskStatus(TaskState.COMPLETED, None, "2026-12-02T10:00:05.000000Z")
        await older.save(kept)
        assert (await older.get("task-1")).state is TaskState.COMPLETED
    finally:
        await older.aclose()
    assert (
        f"schema is version {SCHEMA_VERSION + 1}, newer than this toolnexus's {SCHEMA_VERSION}"
        in caplog.text
    )


async def serve_worker(dsn: str, name: str = "pg-desk"):
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    return await tk.serve(
        "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name=name, store=dsn)
    )


async def test_two_workers_share_tasks_conversations_and_a_cancel(postgres):
    first, second = await serve_worker(postgres), await serve_worker(postgres)
    try:
        async with tn.A2AClient(first.url) as one, tn.A2AClient(second.url) as two:
            done = await one.send("hello there", blocking=True)
            seen = await two.get(done.id)  # polled on the other worker
            assert (
                seen.state is TaskState.COMPLETED
                and seen.reply == done.reply == "You said: hello there"
            )
            later = await two.send("and again", context_id=done.context_id, blocking=True)
            assert (
                later.reply == "You said: and again (message 2 of this conversation)"
            )  # the shared transcript
            slow = await one.send("slow 1 please")
            canceled = await two.cancel(
                slow.id
            )  # running on the first worker, canceled on the second
            assert canceled.state is TaskState.CANCELED
            await asyncio.sleep(
                1.5
            )  # the first worker's run ends and tries to complete it: refused
            assert (await one.get(slow.id)).state is TaskState.CANCELED
            listed = await two.list_tasks()
        assert {t.id for t in listed["tasks"]} >= {done.id, later.id, slow.id}
    finally:
        await first.stop()
        await second.stop()


async def test_the_database_going_away_fails_calls_cleanly_and_the_agent_recovers(
    postgres, postgres_server
):
    handle = await serve_worker(postgres)
    try:
        async with httpx.AsyncClient(timeout=30) as http:
            ok = await rpc(
                http,
                handle.url,
                "message/send",
                {"message": v03_message("before"), "configuration": {"blocking": True}},
            )
            assert ok["result"]["status"]["state"] == "completed"
            await asyncio.to_thread(postgres_server.stop)
            try:
                for params in (
                    {"message": v03_message("during")},
                    {"id": "ended-on-another-worker"},
                ):
                    method = "message/send" if "message" in params else "tasks/get"
                    answer = await rpc(http, handle.url, method, params)
                    assert answer["error"] == {
                        "code": -32603,
                        "message": "the task store is unavailable: try again shortly",
                    }
                    assert "Traceback" not in str(answer)
                # a task that ended here never changes: told as it ended, without the database
                known = await rpc(http, handle.url, "tasks/get", {"id": ok["result"]["id"]})
                assert known["result"]["status"]["state"] == "completed"
            finally:
                await asyncio.to_thread(postgres_server.start)
            again = await rpc(
                http,
                handle.url,
                "message/send",
                {"message": v03_message("after"), "configuration": {"blocking": True}},
            )
            assert again["result"]["status"]["state"] == "completed"  # no restart of the agent
            got = await rpc(http, handle.url, "tasks/get", {"id": ok["result"]["id"]})
            assert got["result"]["status"]["state"] == "completed"
    finally:
        await handle.stop()


async def test_a_task_is_written_when_a_caller_is_told_of_it_not_at_every_step(postgres):
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    first = await tk.serve(
        "127.0.0.1:0",
        client=tn.demo_client(),
        a2a=tn.A2AConfig(name="pg-desk", store=postgres, blocking_timeout=0.5, lease=1.5),
    )
    second = await serve_worker(postgres)
    db = await asyncpg.connect(postgres)

    async def settled(
        task_id: str,
    ) -> tuple[int, str]:  # watched in the database: no caller is told
        async with asyncio.timeout(10):
            while (found := await written(task_id)) is None or found[1] not in (
                "completed",
                "failed",
            ):
                await asyncio.sleep(0.01)
        return found

    async def written(task_id: str) -> tuple[int, str] | None:  # (version: how many writes, state)
        row = await db.fetchrow("SELECT version, state FROM toolnexus_tasks WHERE id = $1", task_id)
        return None if row is None else (row["version"], row["state"])

    try:
        async with tn.A2AClient(first.url) as one, tn.A2AClient(second.url) as two:
            done = await one.send("hello there", blocking=True)
            assert await written(done.id) == (
                1,
                "completed",
            )  # submitted, working, completed: one write
            quick = await one.send(
                "hello again"
            )  # answered 'submitted' at once: that, then how it ends
            assert await settled(quick.id) == (
                2,
                "completed",
            )  # its 'working' was never told: not written
            assert (await two.get(quick.id)).state is TaskState.COMPLETED
            unpolled = await one.send("slow 30 not polled here")
            assert await written(unpolled.id) == (1, "submitted")
            # a run that lasts is written as it is at the next heartbeat but one: every worker sees it working
            assert (
                await until_state(two, unpolled.id, TaskState.WORKING, timeout=5)
            ).state is TaskState.WORKING
            assert await written(unpolled.id) == (2, "working")
            await two.cancel(unpolled.id)
            assert (
                await until_state(one, unpolled.id, TaskState.CANCELED)
            ).state is TaskState.CANCELED
            polled = await one.send(
                "slow 30 polled"
            )  # answered at once: its submitted is written first
            assert (await written(polled.id))[1] in ("submitted", "working")
            assert (await until_state(one, polled.id, TaskState.WORKING)).state is TaskState.WORKING
            assert await written(polled.id) == (2, "working")
            timed_out = await one.send(
                "slow 30 waited on", blocking=True
            )  # answered 'working' after 0.5 s
            assert timed_out.state is TaskState.WORKING
            assert await written(timed_out.id) == (1, "working")  # written before it was told
            assert (
                await two.get(timed_out.id)
            ).state is TaskState.WORKING  # so any worker finds it
            await two.cancel(timed_out.id)
            assert (
                await until_state(one, timed_out.id, TaskState.CANCELED)
            ).state is TaskState.CANCELED
            asked = await one.send(
                "please approve the budget", blocking=True
            )  # settles waiting for input
            assert asked.state is TaskState.INPUT_REQUIRED
            answered = await two.send(
                "yes", task_id=asked.id, context_id=asked.context_id, blocking=True
            )
            assert (
                answered.state is TaskState.COMPLETED
            )  # its run, kept beside its record, taken by the other
            await one.cancel(polled.id)
    finally:
        await db.close()
        await first.stop()
        await second.stop()


async def test_a_runs_conversation_is_written_with_its_tasks_last_state_in_one_statement(postgres):
    """One round trip for a run's end: the conversation and the settled task are one statement, so
    one transaction (the rows share their xmin); a send and an answer alike, on either worker."""
    first, second = await serve_worker(postgres), await serve_worker(postgres)
    db = await asyncpg.connect(postgres)

    async def written(task_id: str, context_id: str) -> tuple[int, int, int]:
        task_xmin = await db.fetchval(
            "SELECT xmin::text::bigint FROM toolnexus_tasks WHERE id = $1", task_id
        )
        row = await db.fetchrow(
            "SELECT xmin::text::bigint AS xmin, messages FROM toolnexus_conversations "
            "WHERE id = $1",
            context_id,
        )
        return task_xmin, row["xmin"], len(_json.loads(row["messages"]))

    try:
        async with tn.A2AClient(first.url) as one, tn.A2AClient(second.url) as two:
            done = await one.send("hello there", blocking=True)
            task_xmin, conversation_xmin, count = await written(done.id, done.context_id)
            assert task_xmin == conversation_xmin and count >= 2
            again = await two.send(
                "hello again", context_id=done.context_id, blocking=True
            )  # the other worker
            task_xmin, conversation_xmin, more = await written(again.id, done.context_id)
            assert (
                again.state is TaskState.COMPLETED
                and task_xmin == conversation_xmin
                and more > count
            )
            asked = await one.send("please approve the budget", blocking=True)
            assert asked.state is TaskState.INPUT_REQUIRED
            answered = await two.send(
                "yes", task_id=asked.id, context_id=asked.context_id, blocking=True
            )
            assert answered.state is TaskState.COMPLETED  # resumed on the other worker
            task_xmin, conversation_xmin, _ = await written(asked.id, asked.context_id)
            assert task_xmin == conversation_xmin
    finally:
        await db.close()
        await first.stop()
        await second.stop()


def test_a_store_url_that_is_not_one_names_the_forms_without_its_password():
    from toolnexus.stores import open_store

    with pytest.raises(ConfigError, match=r"postgresql://USER@HOST/DB, .*'mysql://u:\*\*\*@h/db'"):
        open_store("mysql://u:hunter2@h/db")


async def until_state(
    client: tn.A2AClient, task_id: str, *states: TaskState, timeout: float = 10.0
) -> tn.Task:
    async with asyncio.timeout(timeout):
        while True:
            got = await client.get(task_id)
            if got.state in states:
                return got
            await asyncio.sleep(0.02)


async def test_across_workers_a_cancel_stops_the_run_and_an_answer_resumes_the_task(postgres):
    first, second = await serve_worker(postgres), await serve_worker(postgres)
    try:
        async with tn.A2AClient(first.url) as one, tn.A2AClient(second.url) as two:
            slow = await one.send("slow 30 then answer")
            await until_state(one, slow.id, TaskState.WORKING)
            assert slow.id in first.runner._runs
            await two.cancel(slow.id)
            async with asyncio.timeout(5):  # the run on the first worker hears it and stops
                while slow.id in first.runner._runs:
                    await asyncio.sleep(0.005)
            assert (await one.get(slow.id)).state is TaskState.CANCELED
            # input-required asked on the first worker, answered on the second: the same run goes on
            asked = await one.send("please approve the budget", blocking=True)
            assert asked.state is TaskState.INPUT_REQUIRED and asked.id in first.runner._pending
            done = await two.send(
                "yes", task_id=asked.id, context_id=asked.context_id, blocking=True
            )
            assert done.id == asked.id and done.state is TaskState.COMPLETED
            assert done.reply.endswith(
                "Request approved (yes). You said: please approve the budget"
            )
            async with asyncio.timeout(10):  # the first worker hears it was answered (a move
                while asked.id in first.runner._pending:  # heard, then a read of the task: a
                    await asyncio.sleep(0.01)  # fixed 0.2 s was not always enough under load)
            again = await one.send(
                "please approve the trip", blocking=True
            )  # answered twice: once only
            results = await asyncio.gather(
                one.send("yes", task_id=again.id, context_id=again.context_id, blocking=True),
                two.send("yes", task_id=again.id, context_id=again.context_id, blocking=True),
                return_exceptions=True,
            )
            # one answer goes on; the other is refused: while it is being answered, or once it is done
            assert sorted(type(r).__name__ for r in results) in (
                ["InvalidParamsError", "Task"],
                ["Task", "UnsupportedOperationError"],
            )
    finally:
        await first.stop()
        await second.stop()


async def test_a_stream_on_one_worker_follows_a_task_run_on_another(postgres):
    first, second = await serve_worker(postgres), await serve_worker(postgres)
    seen_on_second: list[TaskState] = []

    async def watch_bus() -> None:
        async for ev in second.events.subscribe(replay=False):
            if isinstance(ev, tn.TaskEvent):
                seen_on_second.append(ev.state)

    watcher = asyncio.ensure_future(watch_bus())
    try:
        async with tn.A2AClient(first.url) as one, tn.A2AClient(second.url) as two:
            task = await one.send("slow 1 then approve it")
            await until_state(one, task.id, TaskState.WORKING)
            frames = [t.state async for t in two.resubscribe(task.id)]  # SSE from the second worker
        assert frames[0] is TaskState.WORKING and frames[-1] is TaskState.INPUT_REQUIRED
        assert seen_on_second == [TaskState.SUBMITTED, TaskState.WORKING, TaskState.INPUT_REQUIRED]
    finally:
        watcher.cancel()
        await first.stop()
        await second.stop()


async def test_a_database_restart_under_load_loses_nothing_and_needs_no_agent_restart(
    postgres, postgres_server
):
    """Two workers under 16 concurrent senders while the database stops for a second: every answer
    is a task or a clean JSON-RPC error, every task the database took ends settled, and both
    workers serve again afterwards (their listening connections and pools reopen)."""
    first, second = await serve_worker(postgres), await serve_worker(postgres)
    answers: list[dict] = []
    stop = asyncio.Event()

    async def sender(url: str) -> None:
        async with httpx.AsyncClient(timeout=60) as http:
            while not stop.is_set():
                answers.append(
                    await rpc(
                        http,
                        url,
                        "message/send",
                        {"message": v03_message("load"), "configuration": {"blocking": True}},
                    )
                )

    senders = [asyncio.ensure_future(sender(h.url)) for h in (first, second) for _ in range(8)]
    try:
        await asyncio.sleep(0.5)
        try:
            await asyncio.to_thread(
                postgres_server.stop, "immediate"
            )  # not on the loop: the workers go on
            await asyncio.sleep(1.0)
        finally:
            await asyncio.to_thread(postgres_server.start)
        await asyncio.sleep(1.5)
        stop.set()
        await asyncio.gather(*senders)
        errors = [a["error"] for a in answers if "error" in a]
        done = [a["result"] for a in answers if "result" in a]
        assert (
            done
        )  # (errors come when a send reaches a worker while the database is down; runs wait for it)
        assert {e["code"] for e in errors} <= {-32603} and all(
            "Traceback" not in e["message"] for e in errors
        )
        assert {r["status"]["state"] for r in done} <= {"completed", "failed"}
        async with tn.A2AClient(second.url) as two:  # after: served as before, on both workers
            assert (await two.send("after the restart", blocking=True)).state is TaskState.COMPLETED
        async with tn.A2AClient(first.url) as one:
            assert (await one.send("after the restart", blocking=True)).state is TaskState.COMPLETED
            async with asyncio.timeout(30):  # nothing the database took is left running
                while True:
                    listed = await one.list_tasks(page_size=100)
                    running = [
                        t
                        for t in listed["tasks"]
                        if t.state in (TaskState.SUBMITTED, TaskState.WORKING)
                    ]
                    if not running:
                        break
                    await asyncio.sleep(0.2)
    finally:
        stop.set()
        await first.stop()
        await second.stop()


async def test_a_push_config_is_kept_in_the_database_and_delivered_by_the_worker_that_moves_the_task(
    postgres,
):
    first, second = await serve_worker(postgres), await serve_worker(postgres)
    third = None
    try:
        async with tn.WebhookReceiver() as receiver, tn.A2AClient(first.url) as one:
            task = await one.send("slow 1 then answer")
            async with tn.A2AClient(second.url) as two:
                config = await two.set_push(task.id, receiver.target())
            await second.stop()  # the worker that took the config is gone before the task moves on
            note = await receiver.wait(task.id, state=TaskState.COMPLETED, timeout=10)
            assert note.state is TaskState.COMPLETED
            third = await serve_worker(postgres)  # a worker that never saw it lists and deletes it
            async with tn.A2AClient(third.url) as three:
                assert [c.id for c in await three.list_push(task.id)] == [config.id]
                await three.delete_push(task.id, config.id)
            assert await one.list_push(task.id) == []
        completed = [n for n in receiver.received(task.id) if n.state is TaskState.COMPLETED]
        assert len(completed) == 1  # delivered once, by the worker that completed it
    finally:
        for h in (first, second, third):
            if h is not None:
                await h.stop()


async def test_a_send_with_a_push_config_tells_each_state_once_in_order(postgres):
    """The config is kept in the database before the run may move the task: a run that moved it
    while the config was being written was told of twice ('working' as the first state, then again)."""
    handle = await serve_worker(postgres)
    try:
        async with tn.WebhookReceiver() as receiver, httpx.AsyncClient(timeout=30) as http:
            ids = []
            for i in range(10):
                target = receiver.target()
                answer = await rpc(
                    http,
                    handle.url,
                    "message/send",
                    {
                        "message": v03_message(f"push {i}"),
                        "configuration": {
                            "pushNotificationConfig": {"url": target.url, "token": target.token}
                        },
                    },
                )
                ids.append(answer["result"]["id"])
            for task_id in ids:
                await receiver.wait(task_id, state=TaskState.COMPLETED, timeout=10)
            await asyncio.sleep(0.3)
            told = {t: [n.state.value for n in receiver.received(t)] for t in ids}
            assert set(map(tuple, told.values())) == {("submitted", "working", "completed")}, told
    finally:
        await handle.stop()


async def test_a_chain_suspended_on_one_worker_is_answered_through_another(postgres, tmp_path):
    """A (two workers on PostgreSQL) -> B -> C: C's question is asked through A's first worker and
    answered through its second; the same remote tasks go on (B and C are not asked anew)."""
    from ..helpers import write_skill
    from .test_hops import relay_model

    skills = tmp_path / "skills"
    write_skill(skills / "relay", "relay", description="Hands the request onward.")
    c = await (await tn.create_toolkit(skills, builtins=False)).serve(
        "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="agent-c")
    )
    b = await (
        await tn.create_toolkit(
            skills, builtins=False, agents=[tn.Agent(card=c.url, poll_every=0.02)]
        )
    ).serve("127.0.0.1:0", client=relay_model(), a2a=tn.A2AConfig(name="agent-b"))
    workers = []
    for _ in range(2):
        tk = await tn.create_toolkit(
            skills, builtins=False, agents=[tn.Agent(card=b.url, poll_every=0.02)]
        )
        workers.append(
            await tk.serve(
                "127.0.0.1:0",
                client=relay_model(),
                a2a=tn.A2AConfig(name="agent-a", store=postgres),
            )
        )
    try:
        async with tn.A2AClient(workers[0].url) as one, tn.A2AClient(workers[1].url) as two:
            asked = await one.send("please approve the merger", blocking=True)
            assert asked.state is TaskState.INPUT_REQUIRED
            done = await two.send(
                "yes", task_id=asked.id, context_id=asked.context_id, blocking=True
            )
        assert done.state is TaskState.COMPLETED and "Request approved (yes)." in done.reply
        assert (
            len((await b.runner.store.list()).tasks)
            == len((await c.runner.store.list()).tasks)
            == 1
        )
    finally:
        for h in (*workers, b, c):
            await h.stop()


async def test_saves_made_together_are_one_statement_and_each_gets_its_own_answer(postgres):
    """Saves made while a statement is under way go in the next, one transaction (their rows share
    an xmin); a stale task among them is refused alone, and a value the database refuses fails
    only its own save."""
    one, two = PostgresTaskStore(postgres), PostgresTaskStore(postgres)
    db = await asyncpg.connect(postgres)
    try:
        tasks = [task(i) for i in range(20)]
        await asyncio.gather(*(one.save(t) for t in tasks))
        xmins = await db.fetch(
            "SELECT xmin::text AS x, version FROM toolnexus_tasks WHERE id = ANY($1::text[])",
            [t.id for t in tasks],
        )
        assert len(xmins) == 20 and len({r["x"] for r in xmins}) == 1
        assert {r["version"] for r in xmins} == {1} and {t.version for t in tasks} == {1}
        theirs = await two.get("task-3")
        theirs.status = TaskStatus(TaskState.CANCELED, None, "2026-12-02T10:00:01.000000Z")
        await two.save(theirs)
        for t in tasks:
            t.status = TaskStatus(TaskState.COMPLETED, None, "2026-12-02T10:00:02.000000Z")
        refused = task(99)
        refused.context_id = "ctx\x00"  # PostgreSQL's text holds no NUL
        got = await asyncio.gather(
            *(one.save(t) for t in [*tasks, refused]), return_exceptions=True
        )
        assert isinstance(got[3], StaleTaskError)
        assert isinstance(got[20], asyncpg.PostgresError)
        assert all(g is None for i, g in enumerate(got[:20]) if i != 3)
        rows = {
            r["id"]: (r["state"], r["version"])
            for r in await db.fetch("SELECT id, state, version FROM toolnexus_tasks")
        }
        assert rows.pop("task-3") == ("canceled", 2) and "task-99" not in rows
        assert set(rows.values()) == {("completed", 2)} and len(rows) == 19
    finally:
        await db.close()
        await one.aclose()
        await two.aclose()


async def talking_worker(
    postgres: str, words: int, pace: float, lease: float = 5.0
) -> tn.ServeHandle:
    """A worker on ``postgres`` whose model says `` w0 w1 ...``, ``words`` words ``pace`` s apart."""

    async def talker(request: dict[str, Any]) -> Any:
        for i in range(words):
            await asyncio.sleep(pace)
            yield f" w{i}"

    tk = await tn.create_toolkit(builtins=False)
    client = tn.create_in_process_client(talker, "talker")
    return await tk.serve(
        "127.0.0.1:0", client=client, a2a=tn.A2AConfig(store=postgres, lease=lease)
    )


async def test_a_followed_streams_words_go_on_while_another_workers_move_is_read(postgres):
    """A worker hears other workers' moves and words on one channel; taking a move reads the task
    (a round trip). The words of a stream it follows must not wait behind that read: here the
    read is held (the tasks table locked; the move announced apart, as another worker would) while
    the run on the other worker goes on talking. The lock holds the heartbeat of the worker
    running the task too (every third of the lease, on its listening connection): the words go on
    past it (they failed so, 1 run in a few under load, when a beat fell in the lock's window: the
    batch of words waiting behind the stalled beat was sent on the listening connection the beat
    had dropped, and lost; and the follower's own beat, with no lease to renew, stalled its
    listening connection too), so the test waits for that beat to be held before it counts."""

    first, second = (
        await talking_worker(postgres, 1000, 0.02),
        await talking_worker(postgres, 1000, 0.02),
    )
    db, other = await asyncpg.connect(postgres), await asyncpg.connect(postgres)
    beats_held = (
        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
        "AND query LIKE 'UPDATE toolnexus_tasks SET lease_until%'"
    )
    try:
        async with tn.A2AClient(first.url) as one, tn.A2AClient(second.url) as two:
            task = await one.send("talk")
            heard: list[int] = []
            locked = asyncio.Event()
            beat_at = None  # the words heard when the running worker's heartbeat was held
            async with asyncio.timeout(30):
                async for seen in two.resubscribe(task.id):  # followed on the second worker
                    words = len(" ".join(a.text for a in seen.artifacts).split())
                    heard.append(words)
                    if words >= 10 and not locked.is_set():
                        await db.execute("BEGIN")
                        await db.execute("LOCK TABLE toolnexus_tasks IN ACCESS EXCLUSIVE MODE")
                        # a move the second worker must read (it follows the task): it waits
                        await other.execute(
                            "SELECT pg_notify('toolnexus_tasks', $1)",
                            f"another-worker {task.id} 99 working",
                        )
                        locked.set()
                    elif locked.is_set() and beat_at is None:
                        if await other.fetchval(beats_held):
                            beat_at = words
                    elif beat_at is not None and words >= beat_at + 20:
                        break  # twenty words more while the read and the heartbeat wait
            await db.execute("ROLLBACK")
            await one.cancel(task.id)
        assert beat_at is not None and heard[-1] >= beat_at + 20
    finally:
        await db.close()
        await other.close()
        await first.stop()
        await second.stop()


async def test_a_followed_streams_words_go_to_its_worker_alone_and_to_all_for_an_older_one(
    postgres,
):
    """The words of a run followed on another worker go to that worker's own channel (its want
    names it), so no other worker is woken by each word; a want that names none, as a version
    before inboxes sends during a rolling deploy, still gets them on the workers' channel."""

    first, second = (
        await talking_worker(postgres, 30, 0.01),
        await talking_worker(postgres, 30, 0.01),
    )
    listener = await asyncpg.connect(postgres)  # a third worker's ear on the workers' channel
    heard: list[str] = []
    await listener.add_listener("toolnexus_tasks", lambda *args: heard.append(args[3]))
    said = " ".join(f"w{i}" for i in range(30))
    try:
        async with tn.A2AClient(first.url) as one, tn.A2AClient(second.url) as two:
            task = await one.send("talk")
            async with asyncio.timeout(30):
                seen = [t async for t in two.resubscribe(task.id)]  # followed on the second
            assert seen[-1].state is TaskState.COMPLETED and seen[-1].reply.strip() == said
            assert len(seen) > 3  # the words came as they were said, not with the end alone
            assert [h for h in heard if " want " in h and task.id in h]  # the want went to all
            assert not [h for h in heard if " words " in h]  # the words, to the follower only

            older = await one.send("talk")  # followed by a worker of the version before
            await listener.execute(
                "SELECT pg_notify('toolnexus_tasks', $1)", f"old-host:1:abc want {older.id}"
            )
            async with asyncio.timeout(30):
                while not [h for h in heard if " words " in h and older.id in h]:
                    await asyncio.sleep(0.02)
    finally:
        await listener.close()
        await first.stop()
        await second.stop()


async def test_a_workers_leases_are_renewed_while_its_pool_is_taken(postgres):
    """A loaded worker's statements queue for its pool (every read and save of its streams), and
    its tick may write behind or reap for seconds: its heartbeat renews the leases of its runs
    apart from both, so that no other worker fails them as if it had died (found at 256 streams
    across two hosts on a loaded machine: "the worker running this task stopped (its lease
    expired)"). Here every connection of the worker's pool is taken while its run goes on: the
    task's lease is renewed all the same."""
    worker = await talking_worker(postgres, 400, 0.02, lease=1.5)
    db = await asyncpg.connect(postgres)
    held: list[Any] = []
    try:
        async with tn.A2AClient(worker.url) as client:
            task = await client.send("talk")
            async with asyncio.timeout(30):
                while task.id not in worker.runner._runs:
                    await asyncio.sleep(0.01)
            pool = await worker.runner.store.db.pool()
            held = [await pool.acquire() for _ in range(pool.get_max_size())]
            taken = await db.fetchval("SELECT now()")
            renewed = "SELECT lease_until > $2::timestamptz + interval '1.5 seconds' FROM toolnexus_tasks WHERE id = $1"
            async with asyncio.timeout(20):  # renewed after the pool was taken (a beat: 0.5 s)
                while not await db.fetchval(renewed, task.id, taken):
                    await asyncio.sleep(0.1)
            assert task.id in worker.runner._runs  # its run goes on
    finally:
        for connection in held:
            await pool.release(connection)
        await db.close()
        await worker.stop()


@contextlib.asynccontextmanager
async def stalling(postgres: str) -> AsyncIterator[tuple[str, asyncio.Event]]:
    """A relay in front of the real PostgreSQL (its URL through the relay), which stops passing
    bytes on once the event is set: a network that drops packets silently, a proxy that stops
    reading."""
    where = urlsplit(postgres)
    stalled, released = asyncio.Event(), asyncio.Event()
    handlers: list[asyncio.Task[None]] = []
    ends: list[asyncio.StreamWriter] = []  # every socket the relay holds, closed at its end

    async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while data := await reader.read(65536):
            if stalled.is_set():
                await released.wait()  # holds what it read: nothing more passes
                return
            writer.write(data)
            await writer.drain()

    async def relay(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        upstream_reader, upstream_writer = await asyncio.open_connection(where.hostname, where.port)
        ends.append(upstream_writer)
        await asyncio.gather(
            pipe(reader, upstream_writer), pipe(upstream_reader, writer), return_exceptions=True
        )

    def accepted(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        ends.append(writer)  # known at once, before its handler has run at all
        handlers.append(asyncio.ensure_future(relay(reader, writer)))

    proxy = await asyncio.start_server(accepted, "127.0.0.1", 0)
    port = proxy.sockets[0].getsockname()[1]
    try:
        yield postgres.replace(where.netloc.split("@")[-1], f"127.0.0.1:{port}"), stalled
    finally:  # nothing left open for a later test to find (unraisable ResourceWarnings): a
        # connection accepted as the test ended (asyncpg sends a cancel request on a connection
        # of its own when a statement under way is cancelled) was still opening its upstream
        # when the ends were closed, and its two sockets were left to the collector
        proxy.close()
        released.set()
        await asyncio.sleep(0.1)  # a connection accepted just before the close is made
        for handler in handlers:
            handler.cancel()
        await asyncio.gather(*handlers, return_exceptions=True)
        for end in ends:
            end.close()


async def test_a_stalled_listening_connection_is_dropped_not_waited_on(postgres):
    """A worker's announcements go on its listening connection. One that stalls (a network that
    drops packets silently, a proxy that stops reading) is dropped once a batch has waited
    WorkerLink.ANNOUNCE_TIMEOUT, where every word after it would wait in a queue without end; the
    next tick listens again. The stall is a relay in front of the real PostgreSQL that stops
    passing bytes on."""
    async with stalling(postgres) as (url, stalled):
        store = PostgresTaskStore(url)
        link = store.link(runner=None)
        link.ANNOUNCE_TIMEOUT = 0.5
        await link._listen()
        announcing = asyncio.ensure_future(link._announce())
        try:
            link.words("t1", "ctx", "a1", 0, "first", False)
            async with asyncio.timeout(10):
                while not link._out.empty():
                    await asyncio.sleep(0.01)
                await asyncio.sleep(0.2)  # that batch answered: the connection works
            assert not link._listener.is_closed()
            stalled.set()
            link.words("t1", "ctx", "a1", 5, " second", False)
            async with asyncio.timeout(10):
                while not link._listener.is_closed():
                    await asyncio.sleep(0.02)
            assert not announcing.done()  # the link goes on announcing (by the pool until the tick)
        finally:
            announcing.cancel()
            if link._listener is not None:
                link._listener.terminate()
            await asyncio.gather(announcing, return_exceptions=True)


class _Runs:
    """What the link's heartbeat reads of its runner: the tasks whose runs are alive here."""

    def __init__(self, *ids: str) -> None:
        self._runs = dict.fromkeys(ids)


async def test_a_heartbeat_goes_by_the_pool_while_the_listening_connection_stalls(postgres):
    """The heartbeat waits on the listening connection for the batch of announcements under way
    there, but not for one that stalls (WorkerLink.ANNOUNCE_TIMEOUT, 30 s, is six leases): after
    a third of the lease it goes by the pool, and the leases of the runs here are renewed."""
    async with stalling(postgres) as (url, stalled):
        store = PostgresTaskStore(postgres, lease=1.5)
        await store.save(task(7))  # working: leased to this worker (its pool opened directly)
        link = store.link(runner=_Runs("task-7"))
        store.db.url = url  # the listening connection alone through the relay
        await link._listen()
        store.db.url = postgres
        announcing = asyncio.ensure_future(link._announce())
        beating: asyncio.Future[None] | None = None
        db = await asyncpg.connect(postgres)
        try:
            stalled.set()
            link.words("task-7", "ctx", "a1", 0, "first", False)  # its batch stalls, holding
            async with asyncio.timeout(10):  # the connection
                while not link._using.locked():
                    await asyncio.sleep(0.01)
            since = await db.fetchval("SELECT now()")
            beating = asyncio.ensure_future(link._beat())
            renewed = (
                "SELECT lease_until > $2::timestamptz + interval '1.5 seconds' "
                "FROM toolnexus_tasks WHERE id = $1"
            )
            async with asyncio.timeout(20):  # renewed after the stall began (a beat: 0.5 s)
                while not await db.fetchval(renewed, "task-7", since):
                    await asyncio.sleep(0.1)
        finally:
            for running in (announcing, beating):
                if running is not None:
                    running.cancel()
            await asyncio.gather(
                *(f for f in (announcing, beating) if f is not None), return_exceptions=True
            )
            if link._listener is not None:
                link._listener.terminate()
            await db.close()
            await store.aclose()


async def test_a_heartbeat_has_one_deadline_for_the_batch_and_its_statement(postgres):
    """The heartbeat's wait for the batch of announcements under way on the listening connection
    and its own statement there share one deadline (a quarter of the lease): each given a third
    of it, a beat a third after the last reached the pool as the lease lapsed (found in review).
    Here the batch ends a moment after the beat began, and the statement then stalls: it is given
    only what is left of the deadline, and the pool's turn comes."""
    async with stalling(postgres) as (url, stalled):
        store = PostgresTaskStore(postgres, lease=1.5)
        link = store.link(runner=_Runs("task-7"))
        store.db.url = url  # the listening connection alone through the relay
        await link._listen()
        store.db.url = postgres
        given: list[float | None] = []
        heartbeat = store.heartbeat

        async def timed(running: list[str], connection: Any = None, timeout: float | None = None):
            given.append(timeout)
            return await heartbeat(running, connection, timeout)

        store.heartbeat = timed  # the real statement, its timeout noted
        loop = asyncio.get_running_loop()
        try:
            stalled.set()
            await link._using.acquire()  # a batch under way there
            renewing = asyncio.ensure_future(link._renew(["task-7"]))
            await asyncio.sleep(0)  # its deadline taken, it waits for the batch
            assert not renewing.done()
            began = loop.time()
            await asyncio.sleep(0.05)
            waited = loop.time() - began
            link._using.release()  # the batch answered; the heartbeat's statement stalls
            assert await renewing is False  # the pool's turn
            assert len(given) == 1 and given[0] is not None
            assert given[0] <= store.lease / 4 - waited
        finally:
            if link._listener is not None:
                link._listener.terminate()
            await store.aclose()


async def test_a_link_stops_without_waiting_on_a_stalled_listening_connection(postgres):
    """A worker stopped while its listening connection stalls (a batch of announcements under way
    there): the batch is canceled, and closing the connection waits for an answer to that cancel
    which never comes. close(timeout=2) raised TimeoutError out of WorkerLink.stop, and so out of
    ServeHandle.stop; the connection is cut instead."""
    async with stalling(postgres) as (url, stalled):
        store = PostgresTaskStore(postgres)
        link = store.link(runner=_Runs())
        store.db.url = url  # the listening connection alone through the relay
        await link._listen()
        store.db.url = postgres
        link._tasks = [asyncio.ensure_future(link._announce())]
        listener = link._listener
        try:
            stalled.set()
            link.words("task-7", "ctx", "a1", 0, "first", False)  # its batch stalls
            async with asyncio.timeout(10):
                while not link._using.locked():
                    await asyncio.sleep(0.01)
            await link.stop()
            assert listener.is_closed()
        finally:
            if not listener.is_closed():
                listener.terminate()
            await store.aclose()


async def test_a_piece_longer_than_a_notification_goes_as_several_in_order(postgres):
    """A notification holds at most 8,000 bytes: a reply's piece longer than that is announced as
    several, each at its own offset, the last of them alone saying it ends the reply; each as the
    database takes it (sent to a real PostgreSQL, heard back on the channel)."""
    store = PostgresTaskStore(postgres)
    link = store.link(runner=None)
    listener = await asyncpg.connect(postgres)
    heard: list[str] = []
    await listener.add_listener("toolnexus_tasks", lambda *args: heard.append(args[3]))
    piece = "word é 🙂 " * 1500  # 15,000 characters, 4 bytes the most a character
    try:
        link.words("t1", "ctx", "a1", 5, piece, True)
        batch = [link._out.get_nowait() for _ in range(link._out.qsize())]
        await store.announce(batch)
        async with asyncio.timeout(10):
            while len(heard) < len(batch):
                await asyncio.sleep(0.02)
        parts = [h.split("\n", 1) for h in heard]
        heads = [_json.loads(head.split(" ", 2)[2]) for head, _ in parts]
        assert len(heard) > 1 and all(len(h.encode()) <= 8000 for h in heard)
        assert "".join(text for _, text in parts) == piece
        offsets = [5 + len("".join(text for _, text in parts[:i])) for i in range(len(parts))]
        assert [h[3] for h in heads] == offsets
        assert [h[4] for h in heads] == [False] * (len(heads) - 1) + [True]
    finally:
        await listener.close()
        await store.aclose()
