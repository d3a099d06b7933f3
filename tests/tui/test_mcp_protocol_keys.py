"""The MCP mode's keys for what the official MCP Inspector does beyond lists and calls (issue 60
item 1), by keyboard against a real server on the official Python SDK (``tests/peers/mcp_paged.py``
over stdio: lists a page at a time, a tool that waits to be cancelled, a log line per level):
``m`` the next page (and Enter on the row that says there is more), ``M`` every page left,
``ctrl+x`` a call cancelled, ``l`` the log level, ``g`` ping; and how a connection goes: the
official SDK's server over the legacy HTTP+SSE transport (2024-11-05), found by ``auto`` or chosen
with ``ctrl+t``, and the era chosen with ``ctrl+o``."""

from __future__ import annotations

import shlex
import sys

import pytest

pytest.importorskip("textual")

from textual.widgets import Input  # noqa: E402

import toolnexus as tn  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402

from ..conftest import EXAMPLE_SKILLS  # noqa: E402
from ..peers import mcp_peers  # noqa: E402
from .test_handler_errors_and_streams import shown  # noqa: E402
from .test_mcp_inspector import column, connect, focus_row, table  # noqa: E402
from .test_pilot import until  # noqa: E402

PAGED = "PYTHONPATH={} {} -m tests.peers.mcp_paged stdio"


def paged() -> str:
    return PAGED.format(shlex.quote(mcp_peers.ENV["PYTHONPATH"]), shlex.quote(sys.executable))


async def test_pages_cancel_and_the_log_level_by_keys():
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(140, 44)) as pilot:
        await connect(app, pilot, paged())
        tools = table(app, "#mcp-tools")
        # the first page, and a row saying the server has more (highlighted: its cursor beside)
        await until(pilot, lambda: tools.row_count == 4, timeout=30)
        names = column(app, "#mcp-tools", 0)
        assert names == ["tool1", "tool2", "tool3", "…"]
        assert column(app, "#mcp-tools", 1)[-1] == "more: m next page, M all"
        await until(
            pilot,
            lambda: (
                "the server has more tools, resources and prompts: m reads the next page"
                in shown(app, "#mcp-result")
            ),
        )
        await until(pilot, lambda: app.focused is tools)
        await pilot.press("end")
        await until(pilot, lambda: "cursor tools-3" in shown(app, "#mcp-form SafeStatic"))
        await pilot.press("m")
        await until(pilot, lambda: tools.row_count == 7)
        assert column(app, "#mcp-tools", 0)[3:] == ["tool4", "tool5", "tool6", "…"]
        await pilot.press("end")
        await until(pilot, lambda: "cursor tools-6" in shown(app, "#mcp-form SafeStatic"))
        # the summary counts what is shown now (it said 3 tools after the next page was read)
        await until(pilot, lambda: shown(app, "#mcp-result").startswith("6 tools,"))
        await focus_row(app, pilot, "#mcp-tools", "…")
        await pilot.press("enter")  # the row that says there is more reads on
        await until(pilot, lambda: column(app, "#mcp-tools", 0)[-2:] == ["log", "…"])
        await pilot.press("M")  # every page left
        await until(pilot, lambda: column(app, "#mcp-tools", 0)[-1] == "cancelled")
        assert len(column(app, "#mcp-tools", 0)) == 10
        await until(
            pilot, lambda: shown(app, "#mcp-result").startswith("10 tools,")
        )  # and no "has more" for the tools
        # prompts: M from the first page reads every page left
        await pilot.press("p")
        assert column(app, "#mcp-prompts", 0) == ["prompt1", "prompt2", "…"]
        await pilot.press("M")
        await until(pilot, lambda: len(column(app, "#mcp-prompts", 0)) == 5)
        assert "…" not in column(app, "#mcp-prompts", 0)
        # resources: a page at a time too
        await pilot.press("r")
        assert column(app, "#mcp-resources", 1)[:2] == ["note://page/1", "note://page/2"]
        await pilot.press("m")
        await until(pilot, lambda: "note://page/4" in column(app, "#mcp-resources", 1))
        # an MCP App's resource, marked and said as what it is
        await pilot.press("M")
        await until(pilot, lambda: "ui://paged/app" in column(app, "#mcp-resources", 1))
        marks = dict(
            zip(column(app, "#mcp-resources", 1), column(app, "#mcp-resources", 0), strict=True)
        )
        assert marks["ui://paged/app"] == "A" and marks["note://page/1"] == ""
        await focus_row(app, pilot, "#mcp-resources", "ui://paged/app", 1)
        await pilot.press("enter")
        await until(pilot, lambda: "an MCP App: a ui:// resource" in shown(app, "#mcp-resource"))
        assert "text/html;profile=mcp-app" in shown(app, "#mcp-resource")

        # a call in flight, cancelled: the server is told, and it stopped the tool
        await pilot.press("t")
        await focus_row(app, pilot, "#mcp-tools", "wait")
        await pilot.press("enter")
        await until(pilot, lambda: "ctrl+x cancels" in shown(app, "#mcp-result"), timeout=20)
        await until(pilot, lambda: bool(app.screen.session.running))
        await pilot.pause(0.3)
        await pilot.press("ctrl+x")
        await until(
            pilot,
            lambda: "call wait: cancelled, the server was told" in shown(app, "#mcp-result"),
            timeout=20,
        )
        await focus_row(app, pilot, "#mcp-tools", "cancelled")
        await pilot.press("enter")
        await until(pilot, lambda: "cancelled 1 times" in shown(app, "#mcp-result"), timeout=20)

        # the log level: l goes round them (debug, info, notice, warning ...), each asked for
        await pilot.press("l", "l", "l", "l")
        await until(pilot, lambda: "log level warning" in shown(app, "#mcp-status"), timeout=20)
        await focus_row(app, pilot, "#mcp-tools", "log")
        await pilot.press("enter")
        await until(pilot, lambda: "logged" in shown(app, "#mcp-result"), timeout=20)
        await pilot.press("n")
        await until(pilot, lambda: "emergency: a emergency line" in column(app, "#mcp-notices", 3))
        logged = [w for w in column(app, "#mcp-notices", 3) if w.endswith(" line")]
        assert logged[0] == "warning: a warning line" and len(logged) == 5

        # ping: 2026-07-28 (the mode's default era over stdio) has none, and says so
        await pilot.press("g")
        await until(pilot, lambda: "has no ping" in " ".join(_toasts(app)), timeout=20)


def _toasts(app: ToolnexusApp) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_the_legacy_sse_transport_and_the_era_chosen_by_keys():
    app = ToolnexusApp(specs=[])
    with mcp_peers.http_server("py", sse=True) as said:
        async with app.run_test(size=(140, 44)) as pilot:
            # auto: streamable HTTP refused (405), then HTTP+SSE, as the spec has a client do
            await connect(app, pilot, said["MCP"])
            await until(pilot, lambda: table(app, "#mcp-tools").row_count == 7, timeout=30)
            status = shown(app, "#mcp-status")
            assert "MCP 2025-11-25 (initialize handshake)  over HTTP+SSE" in status
            await until(pilot, lambda: app.focused is table(app, "#mcp-tools"))
            await focus_row(app, pilot, "#mcp-tools", "add")
            await pilot.press("enter", "ctrl+r")
            await until(pilot, lambda: '"total": 5' in shown(app, "#mcp-result"), timeout=20)
            await pilot.press("escape", "g")  # from the form to the list, where g pings
            await until(pilot, lambda: " ms" in shown(app, "#mcp-status").split("ping ")[-1])
            # streamable HTTP chosen: this server has none, said as the HTTP status
            await pilot.press("ctrl+t")
            assert app.screen.transport == "http"
            await pilot.press("ctrl+l")
            await until(pilot, lambda: "HTTP 405" in shown(app, "#mcp-status"), timeout=30)
            await pilot.press("ctrl+t")  # sse, chosen
            await pilot.press("ctrl+l")
            await until(pilot, lambda: "over HTTP+SSE" in shown(app, "#mcp-status"), timeout=30)

    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(140, 44)) as pilot:
        # the era: auto speaks 2026-07-28 with this server; ctrl+o chooses the handshake
        await pilot.press("alt+6")
        await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
        await pilot.press("ctrl+o")
        await until(pilot, lambda: "era legacy (ctrl+o)" in shown(app, "#mcp-status"))
        await connect(app, pilot, paged())
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == 4, timeout=30)
        assert "MCP 2025-11-25 (initialize handshake)" in shown(app, "#mcp-status")
        await until(pilot, lambda: app.focused is table(app, "#mcp-tools"))
        await pilot.press("g")
        await until(pilot, lambda: "ping answered in" in " ".join(column(app, "#mcp-notices", 3)))
        assert " ms" in shown(app, "#mcp-status").split("ping ")[-1]


async def test_an_argument_is_completed_as_it_is_typed():
    """The server's completion/complete as a suggestion after the text (our /mcp serves the
    weather skill's cities from its table): → takes it."""
    tk = await tn.create_toolkit(EXAMPLE_SKILLS, builtins=False)
    app = ToolnexusApp(specs=[])
    async with await tk.serve(mcp=True) as served, app.run_test(size=(140, 44)) as pilot:
        await connect(app, pilot, served.mcp_url)
        await until(pilot, lambda: "weather" in column(app, "#mcp-prompts", 0), timeout=30)
        await until(pilot, lambda: app.focused is table(app, "#mcp-tools"))
        await pilot.press("p")
        await focus_row(app, pilot, "#mcp-prompts", "weather")
        await pilot.press("enter")  # into its first argument, the city
        city = app.screen.query_one("#parg-0", Input)
        await until(pilot, lambda: app.focused is city)
        await pilot.press("L", "i")
        await until(pilot, lambda: city._suggestion == "Lisbon", timeout=20)
        await pilot.press("right")
        assert city.value == "Lisbon"
        await pilot.press("enter", "f")  # the unit: celsius or fahrenheit
        unit = app.screen.query_one("#parg-1", Input)
        await until(pilot, lambda: unit._suggestion == "fahrenheit", timeout=20)
        await pilot.press("end", "enter")
        await until(pilot, lambda: "Lisbon" in shown(app, "#mcp-prompt-view"), timeout=20)
        assert "fahrenheit" in shown(app, "#mcp-prompt-view")
        # a template's variable: the skill's files
        await pilot.press("escape", "r")
        await focus_row(app, pilot, "#mcp-resources", "skill://weather/{+path}", 1)
        await pilot.press("enter", "r", "e", "f")
        path = app.screen.query_one("#tvar-0", Input)
        await until(pilot, lambda: (path._suggestion or "").startswith("reference/"), timeout=20)


async def test_a_tool_run_as_an_mcp_task_shows_its_states_and_ctrl_x_cancels_it():
    """The TypeScript SDK's server whose tools run as MCP tasks: a call shows the task's state
    (its status message as text, never markup) and ends with its result and final state; ctrl+x
    cancels a task in flight (tasks/cancel) and says it was cancelled."""
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(140, 44)) as pilot:
        await connect(app, pilot, shlex.join(mcp_peers.stdio("ts-tasks")))
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == 6, timeout=30)
        assert "tasks" in shown(app, "#mcp-status")
        await focus_row(app, pilot, "#mcp-tools", "brew")
        await pilot.press("enter", "enter")  # into its one argument (3 steps), and call
        await until(pilot, lambda: "brewed in 3 steps" in shown(app, "#mcp-result"), timeout=20)
        result = shown(app, "#mcp-result")
        assert "ran as task " in result and ": completed: step 3 of [b]3[/b]" in result
        assert "task" in column(app, "#mcp-notices", 1)

        await pilot.press("escape")  # out of the form, back to the list
        await focus_row(app, pilot, "#mcp-tools", "stall")
        await pilot.press("enter")
        await until(
            pilot,
            lambda: (
                "working: stalling [until cancelled] (ctrl+x cancels)" in shown(app, "#mcp-result")
            ),
            timeout=20,
        )
        await pilot.press("ctrl+x")
        await until(
            pilot,
            lambda: "cancelled, the server was told (tasks/cancel)" in shown(app, "#mcp-result"),
            timeout=20,
        )
        await until(pilot, lambda: ": cancelled: " in shown(app, "#mcp-result"), timeout=20)


async def test_at_80_columns_the_tab_strip_with_tasks_fits():
    """Issue 60: with the Tasks tab (a server that lists its tasks) the MCP mode's tab strip
    needed 89 columns: at 80 it scrolled and ``e Stderr`` was out of sight."""
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(80, 24)) as pilot:
        await connect(app, pilot, shlex.join(mcp_peers.stdio("ts-tasks")))
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == 6, timeout=30)

        def shown_tabs() -> list:
            return [t for t in app.screen.query("#mcp-tabs ContentTab") if t.display]

        await until(pilot, lambda: any("Tasks" in str(t.label) for t in shown_tabs()))
        await pilot.pause()
        tabs = shown_tabs()
        assert len(tabs) == 8 and all(t.region.right <= 80 for t in tabs), [
            (str(t.label), t.region) for t in tabs
        ]
