"""What a hosted server's durable store keeps, as a daily user meets it (the look at issue 61):
its tasks come back into Tasks and the Servers counts at the next launch, and a store folder
another process serves is said in the server's row, not quietly taken over."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator
from pathlib import Path

import httpx
import pytest

pytest.importorskip("textual")

from textual.widgets import DataTable  # noqa: E402

from toolnexus import hosting  # noqa: E402
from toolnexus.hosting import EXAMPLE_SKILLS, KEPT_SHOWN, ServerSpec, Workspace  # noqa: E402
from toolnexus.protocol.model import Task, TaskState, TaskStatus  # noqa: E402
from toolnexus.stores import open_store  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.peers import PeerBook  # noqa: E402
from tui.saved import ServerBook  # noqa: E402
from tui.screens.servers import COUNTED  # noqa: E402
from tui.widgets.rowtable import RowTable  # noqa: E402

from ..helpers import Served  # noqa: E402
from ..serve.wire import v03_message  # noqa: E402
from .test_pilot import until  # noqa: E402


def _app(folder: Path, specs: list[ServerSpec]) -> ToolnexusApp:
    return ToolnexusApp(
        specs=specs, peers=PeerBook(folder), servers=ServerBook(folder), export_dir=folder
    )


def _completed(app: ToolnexusApp, name: str) -> str:
    """The Servers row's count of completed tasks, as drawn."""
    table = app.screen.query_one("#servers", DataTable)
    row = table.get_row(name)
    return str(row[6 + COUNTED.index(TaskState.COMPLETED)])


async def test_a_hosted_servers_kept_tasks_show_after_a_relaunch(tmp_path: Path):
    """A saved server on a file store ran tasks, toolnexus-tui quit and was launched again: the
    Servers row counted none and Tasks was empty (the book heard only live events), while
    ``toolnexus task list`` listed them. They come back now, counted in the row."""
    spec = ServerSpec(name="desk", skills=[str(EXAMPLE_SKILLS)], store=f"file:{tmp_path / 't'}")
    first = _app(tmp_path, [spec])
    sent: list[str] = []
    async with first.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: first.workspace.get("desk").state == "running", timeout=30)
        url = first.workspace.get("desk").url
        async with httpx.AsyncClient(timeout=30) as http:
            for who in ("Ada", "Bo"):
                params = {
                    "message": v03_message(f"greet {who}"),
                    "configuration": {"blocking": True},
                }
                body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": params}
                task = (await http.post(url + "/", json=body)).json()["result"]
                assert task["status"]["state"] == "completed"
                sent.append(task["id"])
        await until(pilot, lambda: _completed(first, "desk") == "2")
        await first.action_quit()

    again = _app(tmp_path, [spec])
    async with again.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: again.workspace.get("desk").state == "running", timeout=30)
        await until(pilot, lambda: set(sent) <= set(again.book.tasks), timeout=15)
        assert again.book.counts("desk")[TaskState.COMPLETED] == 2
        await until(pilot, lambda: _completed(again, "desk") == "2")
        await pilot.press("2")
        await until(pilot, lambda: again.current_mode == "tasks")
        table = again.screen.query_one("#tasks", RowTable)
        await until(pilot, lambda: table.row_count == 2)
        assert list(table.rows) == sent  # oldest first, as live tasks are listed
        await again.action_quit()


async def test_a_stores_kept_tasks_reach_a_front_end_bounded_newest_and_oldest_first(
    tmp_path: Path,
):
    """A store may hold 100,000 tasks: a front end gets the newest ``limit``, read a page at a
    time where the servers run, given oldest first (the order the bus tells tasks in)."""
    folder = f"file:{tmp_path / 't'}"
    store = open_store(folder)
    for i in range(12):
        created = f"2026-12-06T10:00:{i:02d}Z"
        await store.save(
            Task(
                id=f"t{i:02d}",
                context_id="c",
                status=TaskStatus(TaskState.COMPLETED),
                created=created,
            )
        )
    await store.aclose()  # type: ignore[attr-defined]
    workspace = Workspace(thread=True)
    try:
        await workspace.start(ServerSpec(name="desk", skills=[], mcp=False, store=folder))
        got = [t.id async for page in workspace.kept("desk", limit=5) for t in page]
        assert got == ["t07", "t08", "t09", "t10", "t11"]
        assert [t async for t in workspace.kept("nobody")] == []
    finally:
        await workspace.close()


async def _stored(folder: Path, count: int) -> list[str]:
    """A file store of ``count`` completed tasks, a second apart, oldest first; their ids."""
    store = open_store(f"file:{folder}")
    ids = [f"kept{i}" for i in range(count)]
    for i, task_id in enumerate(ids):
        created = f"2026-01-01T10:00:{i:02d}Z"
        status = TaskStatus(TaskState.COMPLETED, timestamp=created)
        await store.save(Task(id=task_id, context_id="c", status=status, created=created))
    await store.aclose()  # type: ignore[attr-defined]
    return ids


async def test_a_task_sent_while_the_kept_ones_are_read_lists_after_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    """At a launch a server's kept tasks are read a page at a time while it already answers: a
    task sent then was listed above the older kept tasks read after it (the book listed them as
    it heard of them). The list is in the tasks' own order, the newest last, whichever came first.
    Here the first page is in, then a task is sent and listed, then the other pages come."""
    folder = tmp_path / "t"
    kept = await _stored(folder, 5)
    monkeypatch.setattr(hosting, "KEPT_PAGE", 2)  # given as [kept0], [kept1, kept2], [kept3, ...]
    spec = ServerSpec(name="desk", skills=[str(EXAMPLE_SKILLS)], store=f"file:{folder}")
    app = _app(tmp_path, [spec])
    sent = asyncio.Event()
    read = app.workspace.kept

    async def first_page_then_wait(
        name: str, limit: int = KEPT_SHOWN
    ) -> AsyncGenerator[list[Task]]:
        async for tasks in read(name, limit):
            yield tasks
            await sent.wait()

    monkeypatch.setattr(app.workspace, "kept", first_page_then_wait)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.workspace.get("desk").state == "running", timeout=30)
        await pilot.press("2")
        await until(pilot, lambda: app.current_mode == "tasks")
        table = app.screen.query_one("#tasks", RowTable)
        await until(pilot, lambda: list(table.rows) == kept[:1])
        async with httpx.AsyncClient(timeout=30) as http:
            params = {"message": v03_message("greet Ada"), "configuration": {"blocking": True}}
            body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": params}
            live = (await http.post(app.workspace.get("desk").url + "/", json=body)).json()
        await until(pilot, lambda: list(table.rows) == [*kept[:1], live["result"]["id"]])
        sent.set()
        await until(pilot, lambda: table.row_count == 6)
        assert list(table.rows) == [*kept, live["result"]["id"]]
        assert list(app.book.tasks) == list(table.rows)
        assert table.cursor_key == live["result"]["id"]  # the newest, followed
        await app.action_quit()


async def test_a_server_on_a_task_folder_another_process_serves_fails_saying_so(tmp_path: Path):
    """Two servers pointed at one folder of tasks: the second's start failed the first's running
    tasks ("interrupted by restart"). The second fails now, its row saying who holds the folder."""
    folder = tmp_path / "t"
    holder = Served("--store", f"file:{folder}")
    async with holder:
        await holder.until(lambda lines: holder.events("started"))
        assert holder.proc is not None
        app = _app(tmp_path, [ServerSpec(name="desk", skills=[], store=f"file:{folder}")])
        async with app.run_test(size=(120, 40)) as pilot:
            await until(pilot, lambda: app.workspace.get("desk").state == "failed", timeout=30)
            said = f"the task store {folder} is in use by another process (pid {holder.proc.pid})"
            assert app.workspace.get("desk").error.startswith(said)
            detail = app.screen.query_one("#server-detail")
            await until(pilot, lambda: said in str(detail.render()).replace("\n", ""))
            await app.action_quit()
