"""One contract for every TaskStore, every capability a store declares run against each store
that declares it (restart recovery included), and what the memory and file stores add."""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import socket
from pathlib import Path

import httpx
import pytest

import toolnexus as tn
from toolnexus.errors import StaleTaskError, StoreUnavailableError
from toolnexus.protocol.model import Artifact, Message, Part, Task, TaskState, TaskStatus
from toolnexus.stores import (
    KINDS,
    STORE_FORMS,
    Closable,
    Durable,
    FileTaskStore,
    JoinsConversations,
    KeepsEnded,
    MemoryConversationStore,
    MemoryTaskStore,
    Shared,
    TaskPage,
    TaskQuery,
    TaskStore,
    kind_of,
    open_store,
    task_record,
)
from toolnexus.stores.base import EVERY_TASK

from ..helpers import read_until, run_cli, started_cli, store_where
from .wire import rpc, v03_message


def kinds(capability: type | None = None) -> list:
    """The kinds of store (``toolnexus.stores.KINDS``) whose stores declare ``capability``."""
    return [
        pytest.param(kind, id=kind.name)
        for kind in KINDS
        if capability is None or issubclass(kind.store, capability)
    ]


async def close(*stores: TaskStore) -> None:
    for store in stores:
        if isinstance(store, Closable):
            await store.aclose()


@pytest.fixture
async def store(store_spec: str):
    opened = open_store(store_spec)
    yield opened
    await close(opened)


def make(i: int, ctx: str = "c1", state: TaskState = TaskState.COMPLETED) -> Task:
    t = Task(
        f"task-{i}",
        ctx,
        TaskStatus(state, None, f"2026-11-30T10:00:{i:02}.000000Z"),
        history=[Message("user", [Part.of_text(f"q{i}")], f"m{i}", ctx, f"task-{i}")],
        artifacts=[Artifact([Part.of_text(f"a{i}")], f"art{i}", "reply")],
        skill="greet",
        request=f"q{i}",
        created=f"2026-11-30T10:00:{i:02}.000000Z",
    )
    return t


# -- the contract: every store ------------------------------------------------------------------


async def test_get_save_round_trip(store):
    assert await store.get("task-1") is None
    t = make(1)
    await store.save(t)
    got = await store.get("task-1")
    assert got.id == "task-1" and got.context_id == "c1" and got.state is TaskState.COMPLETED
    assert got.history[0].text == "q1" and got.artifacts[0].text == "a1"
    assert got.skill == "greet" and got.request == "q1"
    t.status = TaskStatus(TaskState.FAILED, Message.agent("why"), "2026-11-30T11:00:00.000000Z")
    await store.save(t)
    assert (await store.get("task-1")).state is TaskState.FAILED


async def test_list_filters_and_pages(store):
    for i in range(5):
        await store.save(
            make(
                i,
                "even" if i % 2 == 0 else "odd",
                TaskState.COMPLETED if i < 4 else TaskState.WORKING,
            )
        )

    async def ids(**asked) -> list[str]:
        return [t.id for t in (await store.list(TaskQuery(**asked))).tasks]

    page = await store.list(TaskQuery(page_size=2))
    assert (
        [t.id for t in page.tasks] == ["task-4", "task-3"] and page.total == 5 and page.next_token
    )
    page2 = await store.list(TaskQuery(page_size=2, page_token=page.next_token))
    page3 = await store.list(TaskQuery(page_size=2, page_token=page2.next_token))
    assert [t.id for t in page2.tasks + page3.tasks] == ["task-2", "task-1", "task-0"]
    assert page3.next_token == ""
    assert await ids(context_id="odd") == ["task-3", "task-1"]
    assert await ids(state=TaskState.WORKING) == ["task-4"]
    assert await ids(updated_after="2026-11-30T10:00:02.500000Z") == ["task-4", "task-3"]
    with pytest.raises(ValueError):
        await store.list(TaskQuery(page_token="garbage"))
    owned = make(5)
    owned.owner = "ada"
    await store.save(owned)
    assert await ids(owner="ada", page_size=2) == ["task-5", "task-4"]  # hers and unowned ones
    assert await ids(owner="bob", page_size=2) == ["task-4", "task-3"]
    assert await ids(page_size=2) == ["task-5", "task-4"]  # the server sees every task


@pytest.mark.parametrize("kind", kinds())
def test_each_kind_is_named_opened_and_listed_alike(kind, request, tmp_path: Path):
    """The registry is the one list: what a kind's string names is that kind, opens its store
    (which keeps the contract), and every help text's list of forms has it."""
    spec = store_where(kind, request, tmp_path)
    opened = open_store(spec)
    assert kind_of(spec) is kind and type(opened) is kind.store
    assert isinstance(opened, TaskStore) and kind.form in STORE_FORMS.split(" | ")


def test_open_store_forms(tmp_path: Path):
    assert isinstance(open_store(None), MemoryTaskStore)
    assert isinstance(open_store("memory"), MemoryTaskStore)
    assert isinstance(open_store(f"file:{tmp_path}/t"), FileTaskStore)
    custom = MemoryTaskStore()
    assert open_store(custom) is custom
    for wrong in ("redis://x", "file:", "memory:x", "Memory"):
        with pytest.raises(tn.ConfigError, match=f"store must be one of {STORE_FORMS}, or a"):
            open_store(wrong)
    with pytest.raises(tn.ConfigError, match="has no get"):
        open_store(object())


def test_a_store_object_listing_by_keywords_as_before_is_refused_at_start():
    """A user's store written for the old contract (list(*, context_id=..., page_size=...)) is told
    so when opened, not on the first ListTasks by a TypeError."""

    class OldStore(MemoryTaskStore):
        async def list(self, *, context_id=None, state=None, page_size=50, page_token=""):  # pyright: ignore[reportIncompatibleMethodOverride]
            return await super().list()

    class OldPositional(MemoryTaskStore):  # binds the query as its context, listing nothing
        async def list(self, context_id=None, state=None, page_size=50, page_token=""):  # pyright: ignore[reportIncompatibleMethodOverride]
            return await super().list()

    for old in (OldStore(), OldPositional()):
        with pytest.raises(tn.ConfigError, match=r"list\(\) must take one TaskQuery"):
            open_store(old)

    @dataclasses.dataclass
    class Keyed(OldStore):  # its repr shows what it was given
        dsn: str = "postgresql://tn:hunter2@db/tasks"

    with pytest.raises(tn.ConfigError) as refused:
        open_store(Keyed())
    assert "Keyed" in str(refused.value) and "hunter2" not in str(refused.value)

    class NewStore(MemoryTaskStore):  # the query under any other name is the new contract
        async def list(self, asked: TaskQuery = EVERY_TASK) -> TaskPage:
            return await super().list(asked)

    store = NewStore()
    assert open_store(store) is store


# -- Durable: what it saved, a new store on the same place has; a restart fails what ran ----------


@pytest.mark.parametrize("kind", kinds(Durable))
async def test_a_durable_store_hands_a_new_store_on_its_place_what_it_saved(
    kind, request, tmp_path: Path
):
    spec = store_where(kind, request, tmp_path)
    first = open_store(spec)
    saved = [make(1), make(2, "c2", TaskState.WORKING)]
    for task in saved:
        await first.save(task)
    await close(first)
    again = open_store(spec)
    try:
        page = await again.list()
        assert [task_record(t) for t in page.tasks] == [task_record(t) for t in saved[::-1]]
        assert task_record(await again.get("task-2")) == task_record(saved[1])
    finally:
        await close(again)


LAPSED = "the worker running this task stopped (its lease expired)"
"""How a shared store's task whose worker died ends (``TaskRunner.lapsed``)."""


@pytest.mark.parametrize("kind", kinds(Durable))
async def test_a_server_on_a_durable_store_fails_what_a_kill_left_running(
    kind, request, tmp_path: Path
):
    """``toolnexus serve`` on the store, killed (SIGKILL) with a task running, one waiting for an
    answer and one done; a server started on the store again fails the running one (at start on a
    store one process owns; on a shared one once the dead worker's lease lapses), answers the
    waiting one and leaves the done one as it was."""
    spec = store_where(kind, request, tmp_path)
    with started_cli("serve", "--store", spec, "--lease", "0.5", "--json") as proc:
        url = read_until(proc, "ready")[0]["url"]
        async with httpx.AsyncClient(timeout=30) as http:

            async def send(text: str, blocking: bool) -> dict:
                params = {"message": v03_message(text), "configuration": {"blocking": blocking}}
                return (await rpc(http, url, "message/send", params))["result"]

            done = await send("greet Ada", True)
            asked = await send("please confirm the order", True)
            running = await send("slow 60", False)
            async with asyncio.timeout(30):  # a poll tells 'working': from then on it is stored
                while (await rpc(http, url, "tasks/get", {"id": running["id"]}))["result"][
                    "status"
                ]["state"] != "working":
                    await asyncio.sleep(0.05)
        assert (done["status"]["state"], asked["status"]["state"]) == (
            "completed",
            "input-required",
        )
        proc.kill()
        proc.wait(10)
    kept = open_store(spec)
    done_before = task_record(await kept.get(done["id"]))
    await close(kept)

    tk = await tn.create_toolkit(builtins=False)
    config = tn.A2AConfig(store=spec, lease=0.5)
    async with tk.serve(client=tn.demo_client(), a2a=config) as h, httpx.AsyncClient() as http:
        why = LAPSED if isinstance(h.runner.store, Shared) else "interrupted by restart"
        async with asyncio.timeout(30):
            while (got := (await rpc(http, h.url, "tasks/get", {"id": running["id"]}))["result"])[
                "status"
            ]["state"] == "working":
                await asyncio.sleep(0.1)
        assert got["status"]["state"] == "failed"
        assert got["status"]["message"]["parts"][0]["text"] == why
        answer = v03_message("yes", taskId=asked["id"], contextId=asked["contextId"])
        answered = (await rpc(http, h.url, "message/send", {"message": answer}))["result"]
        assert answered["id"] == asked["id"] and answered["status"]["state"] == "completed"
        moves = [
            (e.task_id, e.previous, e.state)
            for e in h.events.history()
            if isinstance(e, tn.TaskEvent)
        ]
        assert (running["id"], TaskState.WORKING, TaskState.FAILED) in moves
    kept = open_store(spec)
    assert task_record(await kept.get(done["id"])) == done_before  # untouched
    await close(kept)


# -- KeepsEnded: no retention ---------------------------------------------------------------------


@pytest.mark.parametrize("kind", kinds(KeepsEnded))
async def test_a_store_that_keeps_ended_tasks_keeps_each_as_it_ended(kind, request, tmp_path: Path):
    """The memory store's retention (one task, for a second) is given, and ignored: the runner
    answers polls of ended tasks from what it holds, trusting the store to keep them so."""
    store = open_store(store_where(kind, request, tmp_path), max_tasks=1, max_age=1)
    try:
        ended = [make(i, state=state) for i, state in enumerate(TaskState) if state.terminal]
        for task in ended:
            await store.save(task)
        await asyncio.sleep(0)  # whatever a store does once the loop is free
        for task in ended:
            got = await store.get(task.id)
            assert got is not None and task_record(got) == task_record(task)
    finally:
        await close(store)


# -- Closable: closed when its server stops -------------------------------------------------------


@pytest.mark.parametrize("kind", kinds(Closable))
async def test_a_closable_store_is_closed_when_its_server_stops(kind, request, tmp_path: Path):
    store = open_store(store_where(kind, request, tmp_path))
    closed: list[bool] = []
    aclose = store.aclose

    async def counted() -> None:  # the store's own aclose, its calls counted
        closed.append(True)
        await aclose()

    store.aclose = counted
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(store=store)) as h:
        async with tn.A2AClient(h.url) as a2a:
            assert (await a2a.send("hello", blocking=True)).state is TaskState.COMPLETED
        assert closed == []
    assert closed == [True]


# -- JoinsConversations: a run's conversation written with its task's last state ------------------


@pytest.mark.parametrize("kind", kinds(JoinsConversations))
async def test_a_store_that_joins_conversations_keeps_both_in_one_save(
    kind, request, tmp_path: Path
):
    store = open_store(store_where(kind, request, tmp_path))
    try:
        conversations = store.conversations()
        assert store.joins(conversations) and not store.joins(MemoryConversationStore())
        said = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
        await store.save(make(1), ("c1", said))
        assert (await store.get("task-1")).state is TaskState.COMPLETED
        assert await conversations.get("c1") == said
        client = tn.create_in_process_client(lambda req: f"heard {len(req['messages'])}")
        tk = await tn.create_toolkit(builtins=False)
        async with tk.serve(client=client, a2a=tn.A2AConfig(store=store)) as h:
            assert store.joins(client.store)  # the client's conversations are kept there
            async with tn.A2AClient(h.url) as a2a:
                first = await a2a.send("one", blocking=True)
                second = await a2a.send("two", context_id=first.context_id, blocking=True)
        assert second.reply == "heard 3"
        assert [m["content"] for m in await conversations.get(first.context_id)][-1] == "heard 3"
    finally:
        await close(store)


# -- Shared: one store for every worker -----------------------------------------------------------


@pytest.mark.parametrize("kind", kinds(Shared))
async def test_a_shared_store_is_one_store_for_every_worker(kind, request, tmp_path: Path):
    """Two stores on one place, as two workers hold them: each sees what the other saved, a save
    over a version the other wrote since is refused, a suspended run is taken once, and the push
    configs set on one are loaded by the other."""
    spec = store_where(kind, request, tmp_path)
    one, two = open_store(spec), open_store(spec)
    try:
        first = make(1, state=TaskState.WORKING)
        await one.save(first)
        seen = await two.get("task-1")
        assert seen.state is TaskState.WORKING
        await two.save(seen.moved(TaskStatus(TaskState.COMPLETED, None, "2026-11-30T11:00:00Z")))
        with pytest.raises(StaleTaskError):
            await one.save(first.moved(TaskStatus(TaskState.FAILED, None, "2026-11-30T11:00:01Z")))
        assert (await one.get("task-1")).state is TaskState.COMPLETED
        await one.save_pending("task-1", {"run": [1, 2]})
        assert await two.take_pending("task-1") == {"run": [1, 2]}
        assert await one.take_pending("task-1") is None  # taken once
        await one.save_push("task-1", "cfg-1", {"url": "http://127.0.0.1:9/hook"})
        assert await two.load_push("task-1") == (1, [{"url": "http://127.0.0.1:9/hook"}])
        await two.delete_push("task-1", "cfg-1")
        assert await one.load_push("task-1") == (2, [])
    finally:
        await close(one, two)


# -- what the memory and file stores add ----------------------------------------------------------


async def test_file_store_survives_a_new_process_and_odd_ids(tmp_path: Path):
    folder = tmp_path / "tasks"
    first = FileTaskStore(folder)
    odd = make(1)
    odd.id = "../../etc/passwd ünïcode"
    await first.save(odd)
    await first.save(make(2))
    names = sorted(p.name for p in folder.glob("*.json"))
    assert (
        all("/" not in n and ".." not in n.replace(".json", "") for n in names) and len(names) == 2
    )
    first.close()  # one owner at a time
    again = FileTaskStore(folder)
    assert (await again.get(odd.id)).id == odd.id
    for p in folder.glob("*.json"):
        json.loads(p.read_text())  # every file is whole JSON
    again.close()
    (folder / "broken.json").write_text("{half")
    (folder / ".x.json.123.tmp").write_text("{partial")
    third = FileTaskStore(folder)
    assert len((await third.list()).tasks) == 2  # the broken one is skipped and logged
    assert not (folder / ".x.json.123.tmp").exists()


async def test_the_memory_store_keeps_at_most_max_tasks_finished_oldest_first():
    store = MemoryTaskStore(max_tasks=3)
    running = make(0, state=TaskState.WORKING)
    await store.save(running)
    for i in range(1, 6):
        await store.save(make(i))
    page = await store.list(TaskQuery(page_size=100))
    assert [t.id for t in page.tasks] == [
        "task-5",
        "task-4",
        "task-3",
        "task-0",
    ]  # a task in flight stays
    assert await store.get("task-1") is None and await store.get("task-2") is None
    running.status = TaskStatus(TaskState.COMPLETED, None, "2026-11-30T10:01:00.000000Z")
    await store.save(running)  # it finishes last, so it goes last
    assert [t.id for t in (await store.list(TaskQuery(page_size=100))).tasks] == [
        "task-5",
        "task-4",
        "task-0",
    ]


@pytest.mark.parametrize(
    "options",
    [
        {"max_tasks": -1},
        {"max_tasks": 2.5},
        {"max_tasks": True},
        {"max_tasks": "10"},
        {"max_age": 0},
        {"max_age": -5},
        {"max_age": float("nan")},
        {"max_age": "60"},
    ],
)
def test_the_memory_store_refuses_a_retention_that_is_not_one(options):
    with pytest.raises(tn.ConfigError, match="keep_(tasks|for) .* must be"):
        MemoryTaskStore(**options)


async def test_serve_refuses_a_bad_retention_before_it_listens():
    tk = await tn.create_toolkit(builtins=False)
    with pytest.raises(tn.ConfigError, match="keep_tasks"):
        await tk.serve(
            client=tn.create_in_process_client(lambda req: "ok"), a2a=tn.A2AConfig(keep_tasks=-3)
        )


async def test_the_memory_store_drops_finished_tasks_past_max_age():
    import datetime

    store = MemoryTaskStore(max_tasks=None, max_age=3600)
    old = make(1)  # finished in 2026-11-30, long ago by the clock
    await store.save(old)
    fresh = make(2)
    fresh.status = TaskStatus(
        TaskState.COMPLETED,
        None,
        datetime.datetime.now(datetime.UTC).isoformat().replace("+00:00", "Z"),
    )
    await store.save(fresh)
    assert [t.id for t in (await store.list()).tasks] == ["task-2"]


async def test_serve_passes_the_retention_and_conversations_are_capped():
    tk = await tn.create_toolkit(builtins=False)
    client = tn.create_in_process_client(lambda req: "ok")
    client.store.max_conversations = 2
    async with (
        tk.serve(client=client, a2a=tn.A2AConfig(keep_tasks=2, blocking_timeout=5)) as h,
        httpx.AsyncClient() as http,
    ):
        ids = [
            (await rpc(http, h.url, "message/send", {"message": v03_message(f"t{i}")}))["result"][
                "id"
            ]
            for i in range(4)
        ]
        assert [t.id for t in await h.tasks()] == ids[:1:-1]
        assert len(client.store._data) == 2
        gone = await http.post(
            h.url, json={"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": ids[0]}}
        )
        assert gone.json()["error"]["code"] == -32001


async def test_a_task_in_a_context_the_server_just_made_reads_no_conversation():
    from toolnexus.stores import MemoryConversationStore

    class Reads(MemoryConversationStore):  # the real store, its reads counted
        asked: list[str] = []

        async def get(self, id):
            self.asked.append(id)
            return await super().get(id)

    tk = await tn.create_toolkit(builtins=False)
    client = tn.create_in_process_client(lambda req: f"heard {len(req['messages'])}")
    client.store = Reads()
    async with tk.serve(client=client, a2a=tn.A2AConfig()) as h, tn.A2AClient(h.url) as a2a:
        first = await a2a.send("one", blocking=True)
        assert (
            Reads.asked == [] and first.reply == "heard 1"
        )  # nothing could be there yet: not read
        second = await a2a.send("two", context_id=first.context_id, blocking=True)
        assert (
            Reads.asked == [first.context_id] and second.reply == "heard 3"
        )  # a context named: read
        own = await a2a.send("three", context_id="chosen-by-the-caller", blocking=True)
        assert Reads.asked[-1] == "chosen-by-the-caller" and own.reply == "heard 1"


async def test_a_finished_task_in_the_memory_store_is_not_walked_by_the_garbage_collector():
    """A retained task is one entry of strings and bytes: after its first collection the collector
    no longer walks it (100,000 retained tasks would otherwise be walked by every full collection)."""
    import gc

    store = MemoryTaskStore()
    running, done = make(1, state=TaskState.WORKING), make(2)
    await store.save(running)
    await store.save(done)
    for i in range(
        3, MemoryTaskStore.RECENT + 3
    ):  # once it has left the recently finished, kept live
        await store.save(make(i))
    await asyncio.sleep(0)
    gc.collect()
    assert not gc.is_tracked(store._tasks["task-2"])
    assert gc.is_tracked(store._tasks["task-1"])  # a task in flight is the live object
    assert (
        await store.list(TaskQuery(state=TaskState.COMPLETED, page_size=100))
    ).total == MemoryTaskStore.RECENT + 1
    assert [t.id for t in (await store.list(TaskQuery(state=TaskState.WORKING))).tasks] == [
        "task-1"
    ]


def test_finished_tasks_pack_with_either_codec_and_from_many_threads_at_once():
    """zstd (the ``fast`` extra, installed here) or zlib: the same value back, a quarter of the
    size; zstd contexts are per thread, so stores on other threads (a notebook's servers) never
    share one mid-call."""
    from concurrent.futures import ThreadPoolExecutor

    from toolnexus import _json
    from toolnexus.stores import task_from_record, task_record

    task = make(1)
    task.history[0].parts[0].text = "Grüße, 東京 \u0000 " + "x" * 200
    record = task_record(task)
    assert (
        _json.zstandard is not None and _json.pack is not _json._zlib_pack
    )  # what a served task uses
    for pack, unpack in (
        (_json._zstd_pack, _json._zstd_unpack),
        (_json._zlib_pack, _json._zlib_unpack),
    ):
        blob = pack(record)
        assert unpack(blob) == record and task_from_record(unpack(blob)) == task
        assert len(blob) < len(_json.dumps(record)) / 2

    def round_trip(i: int) -> bool:
        value = {**record, "id": f"task-{i}", "n": [i] * (i % 50)}
        return all(_json.unpack(_json.pack(value)) == value for _ in range(50))

    with ThreadPoolExecutor(8) as pool:
        assert all(pool.map(round_trip, range(400)))


def test_a_packed_task_holds_no_more_memory_than_its_bytes():
    """The memory a retained task costs is the point of packing it: 50,000 packed tasks in a fresh
    interpreter grow its resident memory by about their length each (zstd's output came in a
    block sized for the worst case: 950 bytes held for 215)."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent("""
        import os
        from toolnexus import _json
        from toolnexus.stores import task_record
        from tests.serve.test_stores import make

        def rss():
            return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("VmRSS"))

        record, kept = task_record(make(1)), []
        before = rss()
        for i in range(50_000):
            kept.append(_json.pack({**record, "id": os.urandom(18).hex()}))
        print((rss() - before) * 1024 / len(kept), sum(map(len, kept)) / len(kept))
    """)
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=Path(__file__).resolve().parents[2],
    )
    assert out.returncode == 0, out.stderr
    held, length = map(float, out.stdout.split())
    assert held < length + 200, (held, length)


async def test_the_memory_store_hands_back_recently_finished_tasks_without_unpacking():
    store = MemoryTaskStore(max_tasks=MemoryTaskStore.RECENT + 10)
    first = make(0)
    await store.save(first)
    assert await store.get("task-0") is first  # the polls right after its end: nothing unpacked
    for i in range(1, MemoryTaskStore.RECENT + 1):
        await store.save(make(i))
    assert (
        store._tasks["task-0"][4] is first
    )  # no save packs: the request that finished a task waits for none
    await asyncio.sleep(
        0
    )  # packed once the loop is free, all that left the recent ones in one batch
    assert (
        isinstance(store._tasks["task-0"][4], bytes)
        and len(store._recent) == MemoryTaskStore.RECENT
    )
    again = await store.get("task-0")  # older: read back from its packed record
    assert again is not first
    assert (again.id, again.state, again.history[0].text, again.artifacts[0].text, again.skill) == (
        "task-0",
        TaskState.COMPLETED,
        "q0",
        "a0",
        "greet",
    )
    for i in range(
        MemoryTaskStore.RECENT + 1, MemoryTaskStore.RECENT + 20
    ):  # retention drops both forms
        await store.save(make(i))
    await asyncio.sleep(0)
    assert await store.get("task-0") is None and await store.get("task-9") is None
    assert len(store._recent) == MemoryTaskStore.RECENT


@pytest.mark.parametrize("store", ["file", "memory"])
async def test_a_blocking_answer_is_given_only_once_its_state_is_saved_and_told(
    tmp_path: Path, store: str
):
    """A blocking send answered "completed" while that state was still being saved (a file store's
    save waits on a thread, and the waiter, woken by the move to working, read the live task's new
    status meanwhile): a caller was told what was not yet on disk nor on the bus. Every answer now
    finds its state saved and published."""
    from toolnexus.events import TaskEvent
    from toolnexus.protocol.dialects import Dialect
    from toolnexus.protocol.operations import OPERATIONS

    tk = await tn.create_toolkit(builtins=False)
    where = f"file:{tmp_path}" if store == "file" else "memory"
    async with tk.serve(
        client=tn.create_in_process_client(instant), a2a=tn.A2AConfig(name="told", store=where)
    ) as h:
        for i in range(30):
            params = {
                "configuration": {"blocking": True},
                "message": {
                    "kind": "message",
                    "messageId": f"m{i}",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "hi"}],
                },
            }
            out = await h.a2a.dispatch(OPERATIONS["send"], params, Dialect.V03, i, None)
            assert out["status"]["state"] == "completed"
            # at the moment of the answer, with no await in between: on the bus, and in the store
            told = [
                e for e in h.events.history() if isinstance(e, TaskEvent) and e.task_id == out["id"]
            ]
            assert [e.state.value for e in told][-1:] == ["completed"], (
                i,
                [e.state.value for e in told],
            )
            if store == "file":
                saved = json.loads((tmp_path / f"{out['id']}.json").read_text())
                assert "completed" in json.dumps(saved["status"])


class HeldStore(FileTaskStore):
    """The file store, its tasks' final saves held until a test lets them go (``held``; ``holding``
    says one waits), or refused as a store that is away (the next ``away`` of them; ``refused``
    says one was)."""

    def __init__(self, folder: Path) -> None:
        super().__init__(folder)
        self.held, self.holding, self.refused = asyncio.Event(), asyncio.Event(), asyncio.Event()
        self.away = 0

    async def save(self, task: Task) -> None:
        if task.state.terminal:
            if self.away:
                self.away -= 1
                self.refused.set()
                raise StoreUnavailableError()
            self.holding.set()
            await self.held.wait()
        await super().save(task)


async def instant(request: dict) -> dict:
    """A model that answers at once."""
    return {"content": "ok", "usage": {"prompt_tokens": 1, "completion_tokens": 1}}


async def test_a_blocking_send_whose_time_runs_out_during_a_save_answers_once_it_is_saved(
    tmp_path: Path,
):
    """The blocking wait's time may end while the task's move is saving (the live status already
    new): its answer waits for that save rather than tell what is not yet stored."""
    from toolnexus.protocol.dialects import Dialect
    from toolnexus.protocol.operations import OPERATIONS

    tk = await tn.create_toolkit(builtins=False)
    store = HeldStore(tmp_path)
    config = tn.A2AConfig(name="held", store=store, blocking_timeout=0.3)
    async with tk.serve(client=tn.create_in_process_client(instant), a2a=config) as h:
        params = {
            "configuration": {"blocking": True},
            "message": {
                "kind": "message",
                "messageId": "m1",
                "role": "user",
                "parts": [{"kind": "text", "text": "hi"}],
            },
        }
        answer = asyncio.ensure_future(
            h.a2a.dispatch(OPERATIONS["send"], params, Dialect.V03, 1, None)
        )
        try:
            await asyncio.sleep(
                1.0
            )  # the wait's time (0.3 s) is long up; the final save is still held
            assert not answer.done()
        finally:  # a save held for good would hold the server's stop too
            store.held.set()
        out = await asyncio.wait_for(answer, 5)
        assert out["status"]["state"] == "completed"
        assert (
            await FileTaskStore(tmp_path, read_only=True).get(out["id"])
        ).state is TaskState.COMPLETED


async def test_a_poll_during_a_quiet_tasks_last_save_is_answered_only_what_is_saved(tmp_path: Path):
    """A send answered at once writes ``submitted``; its run's ``working`` is written only when a
    caller is told of it. A poll that came while the run's last state was being saved answered the
    live task's ``working``, written nowhere (a kill then would take back what a caller saw); and
    when that save failed (the store away) the task was no longer known as unwritten. A poll now
    waits for the move under way, and a failed write leaves the task as it was."""
    from toolnexus.protocol.dialects import Dialect
    from toolnexus.protocol.operations import OPERATIONS

    tk = await tn.create_toolkit(builtins=False)
    store = HeldStore(tmp_path)
    async with tk.serve(
        client=tn.create_in_process_client(instant), a2a=tn.A2AConfig(name="held", store=store)
    ) as h:

        def send(i: int) -> dict:
            return {
                "configuration": {"blocking": False},
                "message": {
                    "kind": "message",
                    "messageId": f"m{i}",
                    "role": "user",
                    "parts": [{"kind": "text", "text": "hi"}],
                },
            }

        async def poll(task_id: str) -> str:
            out = await h.a2a.dispatch(OPERATIONS["get"], {"id": task_id}, Dialect.V03, 2, None)
            state = out["status"]["state"]
            # read after the answer: the run's retried save may land in between (the read awaits),
            # so what is saved is what was told or a later state, never an earlier one
            saved = (await FileTaskStore(tmp_path, read_only=True).get(task_id)).state.value
            order = ["submitted", "working", "completed"]
            assert order.index(saved) >= order.index(state)  # saved as told
            return state

        first = await h.a2a.dispatch(OPERATIONS["send"], send(1), Dialect.V03, 1, None)
        assert first["status"]["state"] == "submitted"
        try:
            await asyncio.wait_for(
                store.holding.wait(), 10
            )  # its run has ended; its last save is held
            polled = asyncio.ensure_future(poll(first["id"]))
            await asyncio.sleep(0.3)
            assert not polled.done()  # waits for the save under way
        finally:  # a save held for good would hold the server's stop too
            store.held.set()
        assert await asyncio.wait_for(polled, 5) == "completed"

        store.away = 3  # the next run's last save finds the store away three times (retried after 0.25, 0.5, 1 s)
        second = await h.a2a.dispatch(OPERATIONS["send"], send(2), Dialect.V03, 3, None)
        await asyncio.wait_for(store.refused.wait(), 10)
        assert await poll(second["id"]) == "working"  # written as it was told
        async with asyncio.timeout(5):
            while await poll(second["id"]) != "completed":
                await asyncio.sleep(0.05)


async def test_a_server_that_cannot_listen_fails_none_of_the_tasks_on_its_store(tmp_path: Path):
    """Two toolnexus-tui on one config folder start the same saved server, on one file store: the
    second cannot listen (the first holds the port), but it opened the store before it tried and
    failed every task the first was running, "interrupted by restart" (the look at issue 61). A
    server binds its port first now: one that cannot listen never touches its store."""
    spec = f"file:{tmp_path / 'tasks'}"
    kept = open_store(spec)
    await kept.save(Task(id="t1", context_id="c1", status=TaskStatus(TaskState.WORKING)))
    await close(kept)
    tk = await tn.create_toolkit(builtins=False)
    with socket.socket() as held:
        held.bind(("127.0.0.1", 0))
        held.listen()
        port = held.getsockname()[1]
        with pytest.raises(OSError):
            await tk.serve(
                f"127.0.0.1:{port}", client=tn.demo_client(), a2a=tn.A2AConfig(store=spec)
            )
    again = open_store(spec)
    task = await again.get("t1")
    await close(again)
    assert task is not None and task.state is TaskState.WORKING


async def test_a_second_server_on_a_file_store_in_use_fails_before_touching_it(tmp_path: Path):
    """Two servers a user points at one folder of tasks (two ``serve --store file:DIR``, two
    windows' servers edited to one folder): the second's start failed the first's running tasks,
    "interrupted by restart" (the look at issue 61). The first owns the folder now: the second
    fails before it reads anything, saying which folder and which process holds it, and once the
    first stops the folder opens again."""
    folder = tmp_path / "tasks"
    spec = f"file:{folder}"
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(store=spec)) as first:
        assert first.runner is not None
        await first.runner.store.save(
            Task(id="t1", context_id="c1", status=TaskStatus(TaskState.WORKING))
        )
        with pytest.raises(tn.ConfigError) as refused:
            await tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(store=spec))
        assert str(refused.value).startswith(
            f"the task store {folder} is in use by another server of this process (pid {os.getpid()})"
        )
        with pytest.raises(tn.ConfigError, match="in use by another server of this process"):
            FileTaskStore(folder)  # from Python, as from a server
        seen = await FileTaskStore(folder, read_only=True).get("t1")  # a look needs no lock
        assert seen is not None and seen.state is TaskState.WORKING
    again = open_store(spec)  # let go at the first's stop
    try:
        assert (await again.get("t1")) is not None
    finally:
        await close(again)


def test_a_second_serve_on_a_file_store_in_use_exits_naming_the_holder(tmp_path: Path):
    """The command: a second ``toolnexus serve`` on the folder another serves exits with the
    error, one line, no traceback, and the first's task is left as it was."""
    folder = tmp_path / "tasks"
    with started_cli("serve", "--store", f"file:{folder}", "--port", "0", "--json") as first:
        url = next(e["url"] for e in read_until(first, "ready") if "url" in e)
        slow = {"message": v03_message("slow 60"), "configuration": {"blocking": False}}
        answer = httpx.post(
            url.rstrip("/") + "/",
            json={"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": slow},
            timeout=30,
        ).json()
        task_id = answer["result"]["id"]
        second = run_cli("serve", "--store", f"file:{folder}", "--port", "0")
        assert second.returncode != 0
        assert f"the task store {folder} is in use by another process (pid {first.pid})" in (
            second.stderr
        ), second.stderr
        assert "Traceback" not in second.stderr
        assert first.poll() is None  # the first serves on
        kept = asyncio.run(FileTaskStore(folder, read_only=True).get(task_id))
        assert kept is not None and not kept.state.terminal, kept
