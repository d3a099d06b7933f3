"""The MCP mode's keys as a daily user presses them (issue 60 item 3): nothing typed is lost or
lands elsewhere, the cursor and a call's result stay with their tool, by real pilots against real
MCP servers (a served toolkit's /mcp, our changing toolkit over stdio)."""

from __future__ import annotations

import shlex
import shutil
import sys
from pathlib import Path
from typing import Any, Literal

import pytest

pytest.importorskip("textual")

from textual.widgets import Input, TextArea  # noqa: E402

import toolnexus as tn  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402

from ..conftest import EXAMPLE_SKILLS  # noqa: E402
from ..peers import mcp_peers  # noqa: E402
from .test_handler_errors_and_streams import shown  # noqa: E402
from .test_mcp_inspector import column, connect, focus_row, table  # noqa: E402
from .test_pilot import until  # noqa: E402


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def highlighted(app: ToolnexusApp) -> str:
    t = table(app, "#mcp-tools")
    return str(t.get_row_at(t.cursor_row)[0])


async def test_the_first_keys_after_connecting_reach_the_list_and_its_form():
    """Issue 60's friction: the list took focus a moment after connecting (once every list was
    fetched), so the first keys went to the endpoint box, and the form was built after the rows
    showed, so Enter on the tool found no field and the call went out without its arguments
    (``fill in the required argument: b (nothing was sent)``)."""
    tk = await tn.create_toolkit(builtins=False, tools=[tn.tool(add)])
    app = ToolnexusApp(specs=[])
    async with tk.serve(mcp=True) as served, app.run_test(size=(140, 44)) as pilot:
        await connect(app, pilot, served.mcp_url)
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == 1)
        await pilot.press("enter", "4", "0", "enter", "2", "enter")
        await until(pilot, lambda: "ok" in shown(app, "#mcp-result"))
        assert app.screen.last_result.output == "42"
        assert app.screen.query_one("#mcp-url", Input).value == served.mcp_url


async def test_alt_digits_switch_modes_from_an_argument_field_and_the_raw_json():
    """Issue 60's friction: alt+1-6 (ESC then a digit, read as ¡™£¢∞§) typed those signs into an
    argument field instead of switching modes; what was typed stays."""
    tk = await tn.create_toolkit(builtins=False, tools=[tn.tool(add)])
    app = ToolnexusApp(specs=[])
    async with tk.serve(mcp=True) as served, app.run_test(size=(140, 44)) as pilot:
        await connect(app, pilot, served.mcp_url)
        await until(pilot, lambda: app.focused is table(app, "#mcp-tools"))
        await pilot.press("enter", "7")
        field = app.screen.query_one("#arg-0", Input)
        assert app.focused is field
        await pilot.press("trade_mark_sign")  # alt+2 as a terminal sends it
        await until(pilot, lambda: app.current_mode == "tasks")
        await pilot.press("section_sign")  # alt+6
        await until(pilot, lambda: app.current_mode == "mcp")
        assert field.value == "7"
        await pilot.press("ctrl+j")  # the raw JSON arguments
        raw = app.screen.query_one("#mcp-raw-args", TextArea)
        raw.focus()
        await until(pilot, lambda: app.focused is raw)
        before = raw.text
        await pilot.press("infinity")  # alt+5
        await until(pilot, lambda: app.current_mode == "wire")
        assert raw.text == before


async def test_the_cursor_and_a_result_stay_with_their_tool(tmp_path: Path):
    """Issue 60's friction: after a list-changed refresh the cursor jumped to the first tool and the
    last result showed under it; a call that ends after the cursor moved showed its result under
    the tool then highlighted."""
    skills = tmp_path / "skills"
    shutil.copytree(EXAMPLE_SKILLS, skills)
    command = " ".join(
        [
            "PYTHONPATH=" + shlex.quote(mcp_peers.ENV["PYTHONPATH"]),
            shlex.join([sys.executable, "-m", "tests.peers.mcp_changing", str(skills)]),
        ]
    )
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(140, 44)) as pilot:
        await connect(app, pilot, command)
        await until(pilot, lambda: "grow" in column(app, "#mcp-tools", 0), timeout=30)
        assert column(app, "#mcp-tools", 0).index("grow") > 0
        await focus_row(app, pilot, "#mcp-tools", "grow")
        await pilot.press("enter")  # no arguments: called at once; it adds a tool
        await until(pilot, lambda: "grown" in column(app, "#mcp-tools", 0), timeout=30)
        await pilot.pause()
        assert highlighted(app) == "grow"
        assert "grow {}" in shown(app, "#mcp-result")

        # a slow call, and the cursor moved while it runs
        results: dict[str, Any] = app.screen._results
        await focus_row(app, pilot, "#mcp-tools", "count")
        await pilot.press("enter", "2", "0", "enter")  # 3 s of counting
        await until(pilot, lambda: "count" in results)  # the call began
        await pilot.press("escape")
        await focus_row(app, pilot, "#mcp-tools", "grow")
        await until(pilot, lambda: "counted to 20" in str(results.get("count")), timeout=30)
        await pilot.pause()
        assert "count" not in shown(app, "#mcp-result")
        assert "grow {}" in shown(app, "#mcp-result")
        await focus_row(app, pilot, "#mcp-tools", "count")
        await until(pilot, lambda: "counted to 20" in shown(app, "#mcp-result"))
        await pilot.press("ctrl+q")


def summarize(text: str) -> str:
    """Summarize a text in a few words for the reader in a hurry."""
    return text[:10]


async def test_at_80_columns_every_tab_and_a_tools_description_show():
    """Issue 61 item 6: at 80 columns the tab strip was cut (``Server (i``) and a tool's
    description got 9 characters."""
    tk = await tn.create_toolkit(builtins=False, tools=[tn.tool(summarize)])
    app = ToolnexusApp(specs=[])
    async with tk.serve(mcp=True) as served, app.run_test(size=(80, 24)) as pilot:
        await connect(app, pilot, served.mcp_url)
        tools = table(app, "#mcp-tools")
        await until(pilot, lambda: tools.row_count == 1)
        await pilot.pause()
        tabs = list(app.screen.query("#mcp-tabs ContentTab"))
        assert tabs and all(t.region.right <= 80 for t in tabs), [
            (str(t.label), t.region.right) for t in tabs
        ]
        row = "".join(segment.text for segment in tools.render_line(1))
        assert "summarize" in row and "Summarize a text in a few" in row, row  # 9 before


async def test_enter_in_the_endpoint_asks_before_it_closes_the_session():
    """Issue 60's friction: letters meant for the tabs were typed into the endpoint, and Enter
    there reconnected, losing the session. With a session open, Enter on its endpoint with letters
    added, or unchanged, asks; no puts the endpoint back and returns to the list, yes connects
    again."""
    from tui.screens.export import Confirm

    tk = await tn.create_toolkit(builtins=False, tools=[tn.tool(add)])
    app = ToolnexusApp(specs=[])
    async with tk.serve(mcp=True) as served, app.run_test(size=(140, 44)) as pilot:
        await connect(app, pilot, served.mcp_url)
        tools = table(app, "#mcp-tools")
        await until(pilot, lambda: app.focused is tools)
        first = app.screen.session
        box = app.screen.query_one("#mcp-url", Input)
        await pilot.press("u", "end", "r", "n", "enter")
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        assert "added: typed there by mistake?" in str(
            app.screen.query_one("#confirm-question").render()
        )
        await pilot.press("n")
        await until(pilot, lambda: not isinstance(app.screen, Confirm))
        assert app.screen.session is first and box.value == served.mcp_url
        assert app.focused is tools
        await pilot.press("u", "enter")  # the same endpoint: again?
        await until(pilot, lambda: isinstance(app.screen, Confirm))
        assert "again?" in str(app.screen.query_one("#confirm-question").render())
        await pilot.press("y")
        await until(pilot, lambda: app.screen.session not in (None, first), timeout=30)
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == 1)


def paint(colour: Literal["red", "green", "blue"], glossy: bool, dry: bool = True) -> str:
    """Paint in a colour."""
    return f"{colour} glossy={glossy} dry={dry}"


async def test_a_boolean_is_a_checkbox_and_an_enum_a_choice_in_the_argument_form():
    """Issue 60's friction: every form field was a text box, booleans typed as ``false`` and
    enums as free text."""
    from textual.widgets import Checkbox, Select

    tk = await tn.create_toolkit(builtins=False, tools=[tn.tool(paint)])
    app = ToolnexusApp(specs=[])
    async with tk.serve(mcp=True) as served, app.run_test(size=(140, 44)) as pilot:
        await connect(app, pilot, served.mcp_url)
        await until(pilot, lambda: app.focused is table(app, "#mcp-tools"))
        colour = app.screen.query_one("#arg-0", Select)
        glossy = app.screen.query_one("#arg-1", Checkbox)
        dry = app.screen.query_one("#arg-2", Checkbox)
        assert not glossy.value and dry.value  # the default, checked
        await pilot.press("enter")  # into the form: the choice
        assert app.focused is colour
        await pilot.press("enter")  # its options
        await until(pilot, lambda: colour.expanded)
        await pilot.press("down", "down", "enter")
        await until(pilot, lambda: not colour.expanded)
        assert colour.value == 1
        await pilot.press("tab", "space", "tab", "space")  # glossy on, dry off
        assert app.focused is dry and glossy.value and not dry.value
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "ok" in shown(app, "#mcp-result"))
        assert app.screen.last_result.output == "green glossy=True dry=False"


async def test_the_server_tab_leaves_the_tab_keys_to_the_tabs():
    """Issue 60's walk: ``i`` put the focus in the Server tab's roots box, so the next tab's
    letter (``t``) was typed into it and Enter declared ``file://…/t`` as a root. The tab opens on
    its view, where the mode keys work; Tab goes on into the roots box."""
    tk = await tn.create_toolkit(builtins=False, tools=[tn.tool(add)])
    app = ToolnexusApp(specs=[])
    async with tk.serve(mcp=True) as served, app.run_test(size=(120, 40)) as pilot:
        await connect(app, pilot, served.mcp_url)
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == 1)
        roots = app.screen.query_one("#mcp-roots", Input)
        await pilot.press("i")
        await until(pilot, lambda: app.screen._tab() == "mcp-tab-server")
        await pilot.press("t")
        await until(pilot, lambda: app.screen._tab() == "mcp-tab-tools")
        assert roots.value == ""
        await pilot.press("i", "tab")
        await until(pilot, lambda: app.focused is roots)


def test_a_checkbox_shows_the_servers_field_name_as_text_never_markup():
    """A boolean's checkbox is labelled with the field's name, the server's text (a tool's
    argument, an elicitation's field): a Checkbox parses a string label as markup, so a name such
    as ``[@click=app.quit]ok[/]`` drew ``ok`` and quit the app when clicked."""
    from textual.widgets import Checkbox

    from toolnexus.mcp import Field
    from tui.screens.mcp_dialogs import field_widget

    name = "[b]sure[/b] [@click=app.quit]ok[/]"
    box = field_widget(Field(name, {"type": "boolean"}, required=True), "f")
    assert isinstance(box, Checkbox)
    assert box.label.plain == name and not box.label.spans


async def test_a_new_session_starts_clean_in_every_tab():
    """Issue 60's closing walk: after connecting to another server the Resources tab still showed
    the last session's read. What one session showed (a read, a prompt's messages, a notice, the
    doctor's report, a ping's round trip) is gone when another server is connected."""
    from .test_mcp_protocol_keys import paged

    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(140, 44)) as pilot:
        await pilot.press("alt+6")
        await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
        inspector = app.screen
        await pilot.pause()
        await pilot.press("ctrl+o")  # the handshake era, which has ping
        await until(pilot, lambda: inspector.era == "legacy")
        await connect(app, pilot, paged())
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == 4, timeout=30)
        await until(pilot, lambda: app.focused is table(app, "#mcp-tools"))
        await pilot.press("g")
        await until(pilot, lambda: " ms" in shown(app, "#mcp-status").split("ping ")[-1])
        await pilot.press("r", "enter")  # note://page/1 read
        await until(pilot, lambda: "bytes" in shown(app, "#mcp-resource"), timeout=20)
        await pilot.press("p", "enter")  # prompt1, which takes no argument
        await until(pilot, lambda: "prompt1" in shown(app, "#mcp-prompt-view"), timeout=20)
        await pilot.press("n", "home")
        await until(pilot, lambda: shown(app, "#mcp-notice") != "")
        await pilot.press("d")
        await until(pilot, lambda: "mcp_paged" in shown(app, "#mcp-doctor"), timeout=20)
        await until(pilot, lambda: "probing" not in shown(app, "#mcp-doctor"), timeout=60)
        views = ("#mcp-resource", "#mcp-prompt-view", "#mcp-notice", "#mcp-doctor", "#mcp-server")
        before = {v: shown(app, v) for v in views}

        command = "PYTHONPATH={} {}".format(
            shlex.quote(mcp_peers.ENV["PYTHONPATH"]), shlex.join(mcp_peers.stdio("py"))
        )
        await connect(app, pilot, command)
        await until(pilot, lambda: "everything-py" in shown(app, "#mcp-status"), timeout=30)
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == 7, timeout=30)
        await pilot.pause()
        assert "ping" not in shown(app, "#mcp-status")  # none sent in this session
        assert shown(app, "#mcp-resource") == "" and shown(app, "#mcp-prompt-view") == ""
        for view in views:
            now = shown(app, view)
            assert "paged" not in now and now != before[view], (view, now)


def drawn(app: ToolnexusApp, widget: Any) -> str:
    """What the screen shows of ``widget`` (what its containers clip off is not), its rows joined
    (runs of spaces as one)."""
    place = app.screen.find_widget(widget)
    box = place.region.intersection(place.clip)
    lines = [strip.text for strip in app.screen._compositor.render_strips()]
    rows = (lines[y][box.x : box.right] for y in range(box.y, box.bottom))
    return " ".join(" ".join(rows).split())


def said(widget: Any) -> str:
    """What ``widget`` has to say, whole (runs of spaces as one)."""
    return " ".join(str(widget.render()).split())


@pytest.mark.parametrize("size", [(120, 40), (80, 24)])
async def test_the_status_line_a_lists_cursor_and_the_saved_servers_keys_fit(size):
    """Issue 60's closing walk, at 120 columns: the handshake era's status line lost what we
    offer, the log level and ping; the row saying the server has more lost its cursor (in the
    Resources tab most of its words); the saved servers' key line lost its end (at 80 the dialog
    its right edge). Each is drawn whole at 120 and at 80 columns."""
    from textual.widgets import Label

    from .test_mcp_protocol_keys import paged

    app = ToolnexusApp(specs=[])
    async with app.run_test(size=size) as pilot:
        await pilot.press("alt+6")
        await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
        inspector = app.screen
        await pilot.pause()
        await pilot.press("ctrl+o")  # the handshake era: the longest line (logging, ping)
        await until(pilot, lambda: inspector.era == "legacy")
        await connect(app, pilot, paged())
        tools = table(app, "#mcp-tools")
        await until(pilot, lambda: tools.row_count == 4, timeout=30)
        await until(pilot, lambda: app.focused is tools)
        await pilot.press("g")
        status = inspector.query_one("#mcp-status")
        await until(pilot, lambda: " ms" in said(status).split("ping ")[-1], timeout=20)
        await pilot.pause()
        assert "we offer roots, elicitation, sampling · ping" in said(status)
        assert drawn(app, status) == said(status)

        for tab, listing, cursor in (
            ("t", "#mcp-tools", "tools-3"),
            ("r", "#mcp-resources", "resources-2"),
            ("p", "#mcp-prompts", "prompts-2"),
        ):
            await pilot.press(tab, "end")
            rows = table(app, listing)
            await until(pilot, lambda rows=rows: rows.cursor_row == rows.row_count - 1)
            await pilot.pause()
            assert "more: m next page, M all" in drawn(app, rows), (listing, drawn(app, rows))
            note = inspector.query_one(
                {"t": "#mcp-form", "r": "#mcp-template-form", "p": "#mcp-prompt-form"}[tab]
            ).query_one("SafeStatic")
            assert f"cursor {cursor} enter or m reads the next page" in drawn(app, note), drawn(
                app, note
            )
            assert drawn(app, note) == said(note)

        await pilot.press("o")  # the saved servers
        await until(pilot, lambda: type(app.screen).__name__ == "SavedServersDialog")
        await pilot.pause()
        keys = app.screen.query_one(".keys", Label)
        assert "e export (mcpServers JSON) · escape close" in drawn(app, keys)
        assert drawn(app, keys) == said(keys)
        assert app.screen.query_one("#saved-servers").region.right <= size[0]


async def test_an_endpoint_typed_while_connecting_keeps_the_box(tmp_path: Path):
    """The list takes the focus from the endpoint box as the tools show (the first keys after
    connecting are the list's), but not from a user typing another endpoint meanwhile: their Enter
    went to the list (seen in a full run: the next Enter on the box asked to connect "again").
    The server starts only once the keys are typed: ``pilot.press`` waits until the app is idle,
    which under load was as long as the server's start, so the keys came as the tools showed
    (3 runs in 12 with two busy loops: "end" to the box, the list focused, "x" to the list)."""
    gate = tmp_path / "typed"
    started = f"while [ ! -e {shlex.quote(str(gate))} ]; do sleep 0.05; done; exec " + shlex.join(
        [sys.executable, "-m", "tests.peers.mcp_paged", "stdio"]
    )
    endpoint = f"PYTHONPATH={shlex.quote(mcp_peers.ENV['PYTHONPATH'])} sh -c {shlex.quote(started)}"
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(120, 40)) as pilot:
        await connect(app, pilot, endpoint)
        box = app.screen.query_one("#mcp-url", Input)
        await pilot.press("end", "x")  # typed on while the server starts
        gate.touch()
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == 4, timeout=30)
        await pilot.pause()
        assert app.focused is box and box.value == endpoint + "x"
