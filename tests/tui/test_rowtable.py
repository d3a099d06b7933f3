"""The Tasks mode's table: every task, lines drawn only when on screen, keys, mouse, peer text kept inert."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("textual")

from rich.text import Text  # noqa: E402
from textual.app import App, ComposeResult  # noqa: E402

from toolnexus.events import TaskEvent  # noqa: E402
from toolnexus.protocol.model import Message, Task, TaskState, TaskStatus  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.widgets.rowtable import RowTable  # noqa: E402

from .test_pilot import until  # noqa: E402

COLUMNS = [("name", "name", 24), ("n", "n", 6)]


class TableApp(App[None]):
    def __init__(self, rows: int) -> None:
        super().__init__()
        self.asked: list[str] = []
        self.told: list[str | None] = []
        self.rows = rows

    def cells(self, key: str) -> list[object]:
        self.asked.append(key)
        if key == "k5":
            return [
                Text("[bold]x[/bold]\x1b[2J", "red"),
                "5",
            ]  # a peer's text: shown, never interpreted
        return [f"row {key}", key[1:]]

    def compose(self) -> ComposeResult:
        yield RowTable(self.cells, id="t")

    def on_mount(self) -> None:
        table = self.query_one(RowTable)
        table.set_columns(COLUMNS)
        table.set_rows(f"k{i}" for i in range(self.rows))
        table.focus()

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        self.told.append(event.key)


async def test_ten_thousand_rows_only_the_lines_on_screen_are_made():
    app = TableApp(10_000)
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(RowTable)
        await pilot.pause()
        assert table.row_count == 10_000 and table.cursor_key == "k0"
        assert len(set(app.asked)) <= 12  # the lines on screen, not 10,000 rows
        app.asked.clear()
        await pilot.press("end")
        await pilot.pause()
        assert table.cursor_key == "k9999" and set(app.asked) <= {
            f"k{i}" for i in range(9980, 10_000)
        }
        await pilot.press("home", "down", "down")
        assert table.cursor_key == "k2"
        await pilot.press("pagedown")
        assert table.cursor_row == 2 + 11  # a page: the 11 lines under the header
        await pilot.press("pageup", "up", "up", "up")
        assert table.cursor_row == 0  # never above the first
        await pilot.pause()
        assert app.told[-1] == "k0" and "k9999" in app.told
        # a click picks the row under it (the header is line 0)
        await pilot.click(RowTable, offset=(3, 4))
        assert table.cursor_key == "k3"
        # a change to rows off screen draws nothing; one on screen draws its line
        app.asked.clear()
        table.refresh_rows(["k5000"])
        await pilot.pause()
        assert app.asked == []
        table.refresh_rows(["k4"])
        await pilot.pause()
        assert "k4" in app.asked and "k5000" not in app.asked
        # the peer's markup and escape are characters on the screen, not styles or terminal control
        line = "".join(s.text for s in table.render_line(6))
        assert "[bold]x[/bold]␛[2J" in line and "\x1b" not in line


async def test_a_line_is_drawn_again_only_when_its_cells_or_its_place_change():
    """Issue 61 item 9: the Tasks table is redrawn whole as the clock ticks and as rows move (a
    switch to Tasks under load drew its lines three or four times, each cell made into styled
    segments again). A line whose cells, widths and cursor are unchanged is drawn once; a changed
    cell, the cursor moving and a restyle (focus) draw it again, and what is shown is the new."""
    app = TableApp(30)
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(RowTable)
        await pilot.pause()
        drawn: list[str] = []
        draw = table._draw  # noqa: SLF001
        table._draw = lambda cells, widths: (drawn.append(str(cells[0])), draw(cells, widths))[1]  # type: ignore[method-assign]  # noqa: SLF001
        lines = [table.render_line(y) for y in range(11)]
        assert drawn == []  # drawn when the screen first showed them: kept
        assert [table.render_line(y) for y in range(11)] == lines and drawn == []
        table.move_cursor(row=3)  # two lines change colours: those two are drawn
        [table.render_line(y) for y in range(11)]
        assert sorted(drawn) == ["row k0", "row k3"]
        drawn.clear()
        app.cells = lambda key: [f"now {key}", "9"] if key == "k6" else TableApp.cells(app, key)  # type: ignore[method-assign]
        table._cells = app.cells  # noqa: SLF001 (a row's cells changed)
        assert "now k6" in "".join(s.text for s in table.render_line(7))
        assert drawn == ["now k6"]
        drawn.clear()
        table.blur()  # the cursor's colours follow the focus: every line drawn again
        await pilot.pause()
        assert {"name", "row k0", "row k3", "now k6"} <= set(drawn) and len(drawn) >= 11


async def test_the_cursor_moving_on_screen_draws_its_two_lines_and_shows_what_a_full_redraw_shows():
    """Issue 61 item 9: up or down in Tasks drew all of the table's lines again; the cursor moving
    within the lines on view draws the line it leaves and the one it reaches (what is then shown
    is what a whole redraw shows); moving off them scrolls, and every line is drawn."""
    app = TableApp(30)
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(RowTable)
        table.move_cursor(row=3)
        await pilot.pause()

        def on_view() -> list[str]:
            return [s.text for s in app.screen._compositor.render_strips()]  # noqa: SLF001

        table.move_cursor(row=6)
        dirty = set(table._repaint_regions)  # noqa: SLF001
        assert {(r.y, r.height) for r in dirty} == {
            (4, 1),
            (7, 1),
        }  # rows 3 and 6, under the header
        await pilot.pause()
        moved = on_view()
        table.refresh()
        await pilot.pause()
        assert on_view() == moved and "row k6" in moved[7]
        table.move_cursor(row=25)  # off the lines on view: scrolled, all drawn
        assert table.scroll_offset.y > 0
        assert [(r.y, r.height) for r in table._repaint_regions] == [(0, 12)]  # noqa: SLF001
        await pilot.pause()
        assert any("row k25" in line for line in on_view())


async def test_set_and_remove_rows_keep_the_cursor_on_its_row():
    app = TableApp(50)
    async with app.run_test(size=(40, 12)) as pilot:
        table = app.query_one(RowTable)
        table.move_cursor(row=table.get_row_index("k30"))
        table.set_rows(f"k{i}" for i in range(20, 50))  # the filter narrowed: k30 is still there
        assert table.cursor_key == "k30" and table.cursor_row == 10
        table.remove_rows(["k20", "k21", "nope"])
        assert table.cursor_key == "k30" and table.row_count == 28
        table.remove_rows(["k30"])
        assert table.cursor_key == "k31"
        table.add_rows(["k31", "new"])  # a key already shown stays where it is
        assert table.row_count == 28 and table.get_row_index("new") == 27
        table.set_rows([])
        await pilot.press("down", "end", "pagedown")  # an empty table: nothing to move, no error
        assert table.cursor_key is None and table.row_count == 0
        await pilot.pause()
        assert app.told[-1] is None


def _event(i: int) -> TaskEvent:
    task = Task(
        f"task-{i:05d}",
        "ctx",
        TaskStatus(TaskState.COMPLETED, None, "2026-12-02T10:00:00.000000Z"),
        history=[Message.agent(f"answer {i}", "ctx", f"task-{i:05d}")],
        request=f"q{i}",
    )
    return TaskEvent(
        task.id,
        "ctx",
        None,
        None,
        TaskState.COMPLETED,
        task,
        "hosted",
        None,
        "2026-12-02T10:00:00.000000Z",
    )


async def test_the_tasks_mode_shows_every_task_not_the_newest_500():
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(110, 34)) as pilot:
        await pilot.press("2")
        for i in range(1200):  # on the real bus, as a hosted server's transitions arrive
            app.workspace.events.publish(_event(i))
        table = app.screen.query_one("#tasks", RowTable)
        await until(pilot, lambda: table.row_count == 1200)
        assert table.cursor_key == "task-01199"  # follow: the newest
        await pilot.press("F", "home")
        assert table.cursor_key == "task-00000"
        await until(pilot, lambda: "answer 0\n" in str(app.screen.query_one("#messages").render()))
        app.screen.query_one("#filter").value = "q11"
        await until(pilot, lambda: table.row_count == 111)  # q11, q110-q119, q1100-q1199
        app.screen.query_one("#filter").value = ""
        await until(pilot, lambda: table.row_count == 1200)
        await pilot.press("ctrl+q")


def test_the_app_runs_the_collector_between_keys_and_sets_the_book_aside():
    """``toolnexus-tui`` (``tune_gc``) runs the collector itself, on its own thread: while another
    thread makes cyclic garbage (as the hosted servers' does, which used to run the collections it
    set off, holding the interpreter), no collection starts from a key to its frame, none in any
    other thread, the garbage is still collected, the book is set aside as it grows, and what was
    set aside and died in a cycle is found once keys are quiet. In a fresh interpreter, as the
    test process keeps Python's collector."""
    code = textwrap.dedent("""
        import asyncio, gc, threading, time, weakref
        import tui.app as tapp
        from tests.tui.answering import Answering
        from tests.tui.test_rowtable import _event

        class Litter:
            pass

        async def main():
            app = tapp.ToolnexusApp(specs=[], tune_gc=True)
            async with app.run_test() as pilot:
                while gc.get_threshold()[0] == 700:  # the app's settings taken
                    await pilot.pause(0.05)
                await pilot.pause(0.2)
                frozen = gc.get_freeze_count()
                stop, first = threading.Event(), []

                def litter():  # ~100,000 objects a second, each in a cycle
                    while not stop.is_set():
                        for _ in range(500):
                            one = Litter()
                            one.me = one
                            if not first:
                                first.append(weakref.ref(one))
                        time.sleep(0.005)

                inside, by_app = [], []
                answering = Answering(app)

                def watch(phase, info):
                    if phase == "start":
                        by_app.append(threading.current_thread() is threading.main_thread())
                        if answering.now:
                            inside.append(info["generation"])

                gc.callbacks.append(watch)
                thread = threading.Thread(target=litter)
                thread.start()
                for i in range(150):
                    app.workspace.events.publish(_event(i))
                for i in range(60):
                    await pilot.press("2" if i % 2 else "1")
                    await pilot.pause(0.02)
                gc.callbacks.remove(watch)
                for _ in range(600):  # 30 s at most: the book's 150 tasks set aside
                    if gc.get_freeze_count() > frozen + 150 * 10:
                        break
                    await pilot.pause(0.05)
                ghost = Litter()  # in a cycle, alive when set aside (as the app does), dead after
                ghost.me = ghost
                gone = weakref.ref(ghost)
                gc.freeze()
                del ghost
                tapp.FULL_IDLE, tapp.FULL_GROWTH = 0.5, 1.001  # a full collection, keys quiet
                for _ in range(600):
                    if gone() is None:
                        break
                    await pilot.pause(0.05)
                stop.set()
                thread.join()
                print(len(app.book.tasks), len(by_app) > 0, all(by_app), inside,
                      first[0]() is None, gc.get_freeze_count() > frozen + 150 * 10, gone() is None)
                await pilot.press("ctrl+q")

        asyncio.run(main())
    """)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.split() == ["150", "True", "True", "[]", "True", "True", "True"], (
        out.stdout + out.stderr[-2000:]
    )


@pytest.mark.parametrize("width", [80, 100, 108, 130])
async def test_every_task_column_shows_at_any_width_from_80(width):
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(width, 30)) as pilot:
        await pilot.press("2")
        app.workspace.events.publish(_event(1))
        table = app.screen.query_one("#tasks", RowTable)
        await until(pilot, lambda: table.row_count == 1)
        await pilot.pause()
        header = "".join(s.text for s in table.render_line(0))
        row = "".join(s.text for s in table.render_line(1))
        wide = ["context"] if width >= 118 else []  # narrower, the context is the detail's
        assert header.split() == [
            "state",
            "task",
            "server",
            "skill",
            "request",
            *wide,
            "age",
            "took",
            "tokens",
            "tools",
        ]
        assert row.rstrip().endswith("—") and "task-000…" in row
        await pilot.press("ctrl+q")
