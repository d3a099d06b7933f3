"""The MCP mode's Tasks tab and a task that asks (issue 60, MCP tasks of 2025-11-25), by keyboard
against the TypeScript SDK's task server written for the tests (``tests/peers/js/mcp_tasks.mjs``
over stdio): ``k`` lists the server's tasks (``tasks/list``) a page at a time (``m``, as the other
lists), ``x`` cancels the highlighted task by its id (``tasks/cancel``), ctrl+r or enter fetches its
result (``tasks/result``); a task that needs an answer (the SDK's interactive example's tools) puts
its question to the user, and ends with the answer."""

from __future__ import annotations

import re
import shlex

import pytest

pytest.importorskip("textual")

from textual.widgets import Input  # noqa: E402

from tui.app import ToolnexusApp  # noqa: E402
from tui.screens.mcp import _clock  # noqa: E402
from tui.screens.mcp_dialogs import ElicitDialog, SamplingDialog  # noqa: E402

from ..peers import mcp_peers  # noqa: E402
from .test_handler_errors_and_streams import shown  # noqa: E402
from .test_mcp_inspector import column, connect, focus_row, table  # noqa: E402
from .test_pilot import until  # noqa: E402

TOOLS = 6
"""The task server's tools: brew, stall, doomed, confirm_delete, write_haiku, seed."""


async def test_the_servers_tasks_a_page_at_a_time_one_cancelled_by_id_and_a_result_fetched():
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(160, 44)) as pilot:
        await connect(app, pilot, shlex.join(mcp_peers.stdio("ts-tasks")))
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == TOOLS, timeout=30)
        assert "x" not in app.active_bindings  # only the Tasks tab cancels a task by x
        await focus_row(app, pilot, "#mcp-tools", "seed")
        await pilot.press("enter", "enter")  # into its one argument (12), and call
        await until(pilot, lambda: "seeded 12 tasks" in shown(app, "#mcp-result"), timeout=20)
        await pilot.press("escape")
        await focus_row(app, pilot, "#mcp-tools", "stall")
        await pilot.press("enter")  # no arguments: called, a task that works until cancelled
        await until(
            pilot, lambda: "stalling [until cancelled]" in shown(app, "#mcp-result"), timeout=20
        )

        await pilot.press("k")  # the server's tasks: a page of its store's 10, and a row for more
        tasks = table(app, "#mcp-tasks")
        await until(pilot, lambda: app.focused is tasks and tasks.row_count == 11, timeout=20)
        assert "m next page" in column(app, "#mcp-tasks", 2)[-1]
        assert app.active_bindings["x"].binding.description == "Cancel task"  # ? has its words
        assert set(column(app, "#mcp-tasks", 1)[:10]) == {"completed"}
        await pilot.press("m")
        await until(pilot, lambda: tasks.row_count == 13, timeout=20)
        ids, statuses = column(app, "#mcp-tasks", 0), column(app, "#mcp-tasks", 1)
        assert statuses == ["completed"] * 12 + ["working"] and len(set(ids)) == 13
        last = tasks.get_row_at(12)
        assert [str(c) for c in last[2:]][0] == "stalling [until cancelled]"  # text, not markup
        assert re.fullmatch(r"\d\d:\d\d:\d\d", str(last[3])) and str(last[5]) == "50 ms"
        assert str(last[6]) == "stall"

        await pilot.press("end")
        await until(pilot, lambda: tasks.cursor_row == 12)
        detail = shown(app, "#mcp-task")
        assert f"task {ids[12]}" in detail and "x cancels it" in detail and "created" in detail
        await pilot.press("x")  # tasks/cancel, by the highlighted task's id
        await until(pilot, lambda: column(app, "#mcp-tasks", 1)[12] == "cancelled", timeout=20)

        await pilot.press("home", "enter")  # the first task's result: tasks/result
        await until(pilot, lambda: "seeded 1 of 12" in shown(app, "#mcp-task"), timeout=20)
        assert "result (tasks/result)" in shown(app, "#mcp-task")
        await pilot.press("down", "ctrl+r")  # ctrl+r does the same
        await until(pilot, lambda: "seeded 2 of 12" in shown(app, "#mcp-task"), timeout=20)
        await pilot.press("x")  # a completed task: the server refuses, and says why
        await until(
            pilot,
            lambda: any("was not cancelled" in str(n.message) for n in app._notifications),
            timeout=20,
        )
        assert column(app, "#mcp-tasks", 1)[1] == "completed"


async def test_the_summary_speaks_of_its_lists_and_the_tasks_more_is_the_tasks_tabs():
    """Issue 60's closing walk: the Tools tab's summary ("6 tools, ... (the server has more: m
    reads the next page)") lit when only the server's tasks had another page, and m there said
    the list had no more. The server's tasks outlive a session over HTTP (one store): seeded in
    one, they are paged in the next, whose summary counts no task."""
    app = ToolnexusApp(specs=[])
    with mcp_peers.http_server("ts-tasks") as said:
        async with app.run_test(size=(160, 44)) as pilot:
            await connect(app, pilot, said["MCP"])
            await until(pilot, lambda: table(app, "#mcp-tools").row_count == TOOLS, timeout=30)
            await focus_row(app, pilot, "#mcp-tools", "seed")
            await pilot.press("enter", "enter")  # into its one argument (12), and call
            await until(pilot, lambda: "seeded 12 tasks" in shown(app, "#mcp-result"), timeout=20)
            await pilot.press("escape", "ctrl+l")  # a new session on the same server
            await until(pilot, lambda: shown(app, "#mcp-result").startswith("6 tools,"), timeout=30)
            assert "has more" not in shown(app, "#mcp-result")
            await pilot.press("m")  # the tools have no more, and say so
            await until(pilot, lambda: any("no more" in str(n.message) for n in app._notifications))
            await pilot.press("k")  # the tasks' next page is the Tasks tab's
            tasks = table(app, "#mcp-tasks")
            await until(pilot, lambda: tasks.row_count == 11, timeout=20)
            assert "m next page" in "".join(str(c) for c in tasks.get_row_at(10))


async def test_a_task_that_asks_brings_its_question_to_the_user_and_ends_with_the_answer():
    """The TypeScript SDK's interactive task example's tools (simpleTaskInteractive): the task
    goes input_required, its question (an elicitation, then a sampling request) comes with the
    result's fetch, names the task, is answered here, and the task completes with the answer."""
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(160, 44)) as pilot:
        await connect(app, pilot, shlex.join(mcp_peers.stdio("ts-tasks")))
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == TOOLS, timeout=30)
        inspector = app.screen
        await focus_row(app, pilot, "#mcp-tools", "confirm_delete")
        await pilot.press("enter")  # into its one argument, the file name
        name = inspector.query_one("#arg-0", Input)
        await until(pilot, lambda: app.focused is name)
        name.value = ""
        await pilot.press(*"a [b].txt", "enter")
        await until(pilot, lambda: isinstance(app.screen, ElicitDialog), timeout=20)
        said = shown(app, "#elicit-message")
        assert said == "Are you sure you want to delete 'a [b].txt'?"
        [state] = inspector.session.tasks.values()
        assert state.status == "input_required" and state.tool == "confirm_delete"
        assert f"for its task {state.task_id} (input_required" in str(
            app.screen.query("Static").first().render()
        )
        await pilot.press("space", "ctrl+r")  # the one field, a checkbox: ticked, accepted
        await until(pilot, lambda: "Deleted 'a [b].txt'" in shown(inspector, "#mcp-result"))
        assert re.search(r"ran as task \w+: completed", shown(inspector, "#mcp-result"))

        await pilot.press("escape")
        await focus_row(app, pilot, "#mcp-tools", "write_haiku")
        await pilot.press("enter", "enter")  # the topic as it is (nature), and call
        await until(pilot, lambda: isinstance(app.screen, SamplingDialog), timeout=20)
        assert "Write a haiku about nature" in shown(app, "#sampling-view")
        assert "for its task " in shown(app, "#sampling-view")
        await pilot.press("w", *"an old pond", "escape", "ctrl+r")
        await until(
            pilot, lambda: "Haiku:\nan old pond" in shown(inspector, "#mcp-result"), timeout=20
        )
        await pilot.press("k")
        tasks = table(app, "#mcp-tasks")
        await until(pilot, lambda: tasks.row_count == 2, timeout=20)
        assert column(app, "#mcp-tasks", 1) == ["completed", "completed"]
        assert column(app, "#mcp-tasks", 6) == ["confirm_delete", "write_haiku"]


def test_a_tasks_time_out_of_the_clocks_range_is_shown_as_it_came():
    """A server's createdAt is its own: one the local clock cannot hold raised OverflowError in
    the worker that draws the rows (a worker's error ends the app)."""
    assert _clock("9999-12-31T23:59:59-05:00") == "9999-12-31T23:59:59-05:00"
    assert _clock("[b]soon[/b]") == "[b]soon[/b]"  # a cell is text, never markup
    assert re.fullmatch(r"\d\d:\d\d:\d\d", _clock("2026-12-06T09:32:08.659Z"))
