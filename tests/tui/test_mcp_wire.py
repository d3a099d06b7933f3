"""The Wire shows an MCP session both ways (issue 60 item 2): what the client sent (→) and what the
server sent of its own (←: its notifications, its questions), and the client's answer to a question
named after it, by real pilots against the official Python SDK's server in the handshake era, over
stdio and over streamable HTTP."""

from __future__ import annotations

import shlex

import pytest

pytest.importorskip("textual")

from textual.widgets import Static  # noqa: E402

from tui.app import ToolnexusApp  # noqa: E402
from tui.screens.mcp_dialogs import ElicitDialog  # noqa: E402
from tui.widgets.rowtable import RowTable  # noqa: E402

from ..peers import mcp_peers  # noqa: E402
from .test_handler_errors_and_streams import shown  # noqa: E402
from .test_mcp_inspector import connect, focus_row, table  # noqa: E402
from .test_pilot import until  # noqa: E402


def rows(app: ToolnexusApp) -> list[tuple[str, str]]:
    """The Wire's rows as (arrow, method)."""
    wire = app.screen.query_one("#wire", RowTable)
    return [(str(r[1]), str(r[3])) for r in map(wire.get_row_at, range(wire.row_count))]


async def walk(app: ToolnexusApp, pilot, endpoint: str) -> None:
    """In the handshake era (ctrl+o), connect, answer the server's question (greet), open the Wire."""
    await pilot.press("alt+6")
    await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
    await pilot.press("ctrl+o")
    await until(pilot, lambda: app.screen.era == "legacy")
    await connect(app, pilot, endpoint)
    await until(pilot, lambda: table(app, "#mcp-tools").row_count == 7, timeout=30)
    assert "initialize handshake" in shown(app, "#mcp-status")
    await focus_row(app, pilot, "#mcp-tools", "greet")
    await pilot.press("enter")
    await until(pilot, lambda: isinstance(app.screen, ElicitDialog), timeout=20)
    await pilot.press(*"Ada", "enter", "enter", "ctrl+r")  # the colour a choice: ctrl+r accepts
    await until(pilot, lambda: "Hello Ada" in shown(app, "#mcp-result"), timeout=20)
    await pilot.press("alt+5")
    await until(pilot, lambda: type(app.screen).__name__ == "WireScreen")


async def test_the_wire_shows_a_stdio_session_both_ways():
    command = "PYTHONPATH={} {}".format(
        shlex.quote(mcp_peers.ENV["PYTHONPATH"]), shlex.join(mcp_peers.stdio("py"))
    )
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(140, 44)) as pilot:
        await walk(app, pilot, command)
        await until(pilot, lambda: ("→", "tools/call") in rows(app))
        seen = rows(app)
        assert ("→", "initialize") in seen and ("→", "notifications/initialized") in seen
        assert ("←", "elicitation/create") in seen  # the server's question, inbound
        answers = [m for arrow, m in seen if m.startswith("answer to")]
        assert answers and answers[0].startswith("answer to elicitation/create #")
        assert ("→", answers[0]) in seen
        wire = app.screen.query_one("#wire", RowTable)
        wire.focus()
        wire.move_cursor(row=seen.index(("←", "elicitation/create")))
        await until(pilot, lambda: "the MCP server's own message" in shown(app, "#exchange"))
        assert "Who are you?" in str(app.screen.query_one("#exchange", Static).render())
        await pilot.press("ctrl+q")


async def test_the_wire_names_the_answer_to_a_question_asked_over_http():
    with mcp_peers.http_server("py") as said:
        app = ToolnexusApp(specs=[])
        async with app.run_test(size=(140, 44)) as pilot:
            await walk(app, pilot, said["MCP"])
            await until(pilot, lambda: ("→", "tools/call") in rows(app))
            seen = rows(app)
            assert any(arrow == "→" and m.startswith("answer to #") for arrow, m in seen), seen
            call = next(
                e for e in app.book.traffic if e.rpc_method == "tools/call" and e.frames
            )  # the question came in the call's stream, inbound
            assert any("elicitation/create" in f for f in call.frames)
            await pilot.press("ctrl+q")
