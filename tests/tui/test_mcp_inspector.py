"""The MCP mode as an inspector, driven by the keyboard alone against real MCP servers: the
official Python SDK's (2026-07-28, over stdio) and TypeScript SDK's (the handshake era, over
HTTP) servers written for the tests, and the Python one behind OAuth with the authorization server
written for the tests. What the official MCP Inspector does with a server, done here by keys:
what was negotiated; tools (a form, a structured result); resources and templates (a blob's MIME
type, a template filled in, a subscription and its update); prompts (arguments, messages); the
server's notifications; its elicitation answered in a form, its sampling approved and answered by
the toolkit's model (and refused); the roots we declare; an OAuth sign-in; every exchange in the
Wire, no token anywhere."""

from __future__ import annotations

import asyncio
import shlex
from typing import Any

import httpx
import pytest

pytest.importorskip("textual")

from textual.widgets import DataTable, Input, Select  # noqa: E402

import toolnexus as tn  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.screens.mcp_dialogs import ElicitDialog, SamplingDialog, SignInDialog  # noqa: E402

from ..peers import mcp_peers  # noqa: E402
from .test_handler_errors_and_streams import shown  # noqa: E402
from .test_pilot import until  # noqa: E402


def table(app: ToolnexusApp, selector: str) -> DataTable[Any]:
    return app.screen.query_one(selector, DataTable)


def column(app: ToolnexusApp, selector: str, index: int) -> list[str]:
    t = table(app, selector)
    return [str(t.get_row_at(i)[index]) for i in range(t.row_count)]


async def focus_row(app: ToolnexusApp, pilot, selector: str, text: str, index: int = 0) -> None:
    """Move the cursor of a list to the row whose column ``index`` reads ``text``, by keys."""
    t = table(app, selector)
    await until(pilot, lambda: app.focused is t)
    target = column(app, selector, index).index(text)
    step = "down" if target > t.cursor_row else "up"
    await pilot.press(*([step] * abs(target - t.cursor_row)))
    await until(pilot, lambda: t.cursor_row == target)


async def connect(app: ToolnexusApp, pilot, endpoint: str) -> None:
    """Type an endpoint (a URL or a command line) into the box and press enter."""
    await pilot.press("alt+6")
    await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
    box = app.screen.query_one("#mcp-url", Input)
    box.focus()
    await until(pilot, lambda: app.focused is box)
    box.value = endpoint
    await pilot.press("enter")


async def test_everything_by_keyboard_against_the_python_sdk_server_over_stdio():
    app = ToolnexusApp(specs=[])
    command = (
        "PYTHONPATH="
        + shlex.quote(mcp_peers.ENV["PYTHONPATH"])
        + " "
        + shlex.join(mcp_peers.stdio("py"))
    )
    async with app.run_test(size=(140, 44)) as pilot:
        await connect(app, pilot, command)
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == 7, timeout=30)
        status = shown(app, "#mcp-status")
        assert "everything-py 1.0.0" in status and "MCP 2026-07-28" in status
        assert "we offer roots, elicitation, sampling" in status

        # a tool with a structured result: its arguments typed into the form made from its schema
        await focus_row(app, pilot, "#mcp-tools", "add")
        await pilot.press("enter")  # into its first argument
        await until(pilot, lambda: app.focused is app.screen.query_one("#arg-0", Input))
        await pilot.press("2", "tab", "3", "ctrl+r")
        await until(pilot, lambda: "structured content" in shown(app, "#mcp-result"), timeout=20)
        assert '"total": 5' in shown(app, "#mcp-result")

        # the server asks who we are (elicitation): answered in its form, by keys
        await pilot.press("escape")  # back to the tool list
        await focus_row(app, pilot, "#mcp-tools", "greet")
        await pilot.press("enter")  # a tool without arguments is called at once
        await until(pilot, lambda: isinstance(app.screen, ElicitDialog), timeout=20)
        assert "Who are you?" in shown(app, "#elicit-message")
        await pilot.press("ctrl+r")  # the required name left empty: said, nothing sent
        await until(
            pilot, lambda: "fill in the required argument: name" in shown(app, "#elicit-error")
        )
        # name, age kept, then the colour's choice (an enum: chosen, never typed) opened and red
        # chosen from blue, and ctrl+r accepts
        await pilot.press(*"Ada", "enter", "enter")
        colour = app.screen.query_one("#elicit-2", Select)
        await until(pilot, lambda: app.focused is colour)
        await pilot.press("enter")
        await until(pilot, lambda: colour.expanded)
        await pilot.press("up", "up", "enter")
        await until(pilot, lambda: colour.value == 0)
        await pilot.press("ctrl+r")
        await until(
            pilot, lambda: "Hello Ada, 30, who likes red!" in shown(app, "#mcp-result"), timeout=20
        )

        # the server asks our model (sampling): approved, the demo model answers
        await focus_row(app, pilot, "#mcp-tools", "haiku")
        await pilot.press("enter", *"sea", "ctrl+r")
        await until(pilot, lambda: isinstance(app.screen, SamplingDialog), timeout=20)
        assert "A haiku about sea" in shown(app, "#sampling-view")
        assert "You are a poet." in shown(app, "#sampling-view")
        await pilot.press("y")
        await until(
            pilot, lambda: "You said: A haiku about sea" in shown(app, "#mcp-result"), timeout=20
        )
        # refused: the call fails, and says so
        await pilot.press("ctrl+r")
        await until(pilot, lambda: isinstance(app.screen, SamplingDialog), timeout=20)
        await pilot.press("n")
        await until(pilot, lambda: "refused" in shown(app, "#mcp-result"), timeout=20)

        # resources: a blob with its MIME type, a template filled in, a subscription and its update
        await pilot.press("escape", "r")
        await until(pilot, lambda: app.focused is table(app, "#mcp-resources"))
        assert "note://items/{item}" in column(app, "#mcp-resources", 1)
        await focus_row(app, pilot, "#mcp-resources", "note://logo", 1)
        await pilot.press("enter")
        await until(pilot, lambda: "image/png, 70 bytes" in shown(app, "#mcp-resource"), timeout=20)
        assert "binary: 89 50 4e 47" in shown(app, "#mcp-resource")
        await focus_row(app, pilot, "#mcp-resources", "note://items/{item}", 1)
        await until(pilot, lambda: bool(app.screen.query("#tvar-0")))
        await pilot.press("enter", *"bolt", "enter")
        await until(pilot, lambda: "item bolt" in shown(app, "#mcp-resource"), timeout=20)
        await pilot.press("escape")
        await focus_row(app, pilot, "#mcp-resources", "note://counter", 1)
        await pilot.press("enter")
        await until(pilot, lambda: '"counter": 0' in shown(app, "#mcp-resource"), timeout=20)
        await pilot.press("s")
        await until(pilot, lambda: column(app, "#mcp-resources", 0)[2] == "●", timeout=20)
        await pilot.press("t")
        await focus_row(app, pilot, "#mcp-tools", "touch")
        await pilot.press("enter")
        await until(pilot, lambda: "counter is 1" in shown(app, "#mcp-result"), timeout=20)
        await until(pilot, lambda: '"counter": 1' in shown(app, "#mcp-resource"), timeout=20)
        assert "updated just now" in shown(app, "#mcp-resource")

        # prompts: the arguments filled in, the messages shown
        await pilot.press("p")  # from the tool list (escape there goes to the endpoint)
        await until(pilot, lambda: app.focused is table(app, "#mcp-prompts"))
        await pilot.press("enter", *"x = 1", "enter", *"go", "enter")
        await until(
            pilot,
            lambda: "Please review this go code" in shown(app, "#mcp-prompt-view"),
            timeout=20,
        )
        assert "I will look at it." in shown(app, "#mcp-prompt-view")

        # the roots we declare reach the server when it asks
        await pilot.press("escape", "i", "tab")  # the tab's view, then its roots box
        roots = app.screen.query_one("#mcp-roots", Input)
        await until(pilot, lambda: app.focused is roots)
        await pilot.press(*"/tmp/project", "enter")
        await until(pilot, lambda: "file:///tmp/project" in shown(app, "#mcp-server"))
        assert '"tools"' in shown(app, "#mcp-server") and "every MCP feature" in shown(
            app, "#mcp-server"
        )
        await pilot.press("escape", "t")  # from the roots box to the tab strip, then Tools
        await focus_row(app, pilot, "#mcp-tools", "where")
        await pilot.press("enter")
        await until(pilot, lambda: "file:///tmp/project" in shown(app, "#mcp-result"), timeout=20)

        # everything the server told and asked, in order
        await pilot.press("n")
        methods = column(app, "#mcp-notices", 2)
        for method in (
            "elicitation/create",
            "sampling/createMessage",
            "roots/list",
            "notifications/resources/updated",
            "notifications/progress",
        )[:4]:
            assert method in methods, methods
        # and the Wire has each JSON-RPC message of the stdio session
        stdio = {e.rpc_method for e in app.book.traffic if e.method == "STDIO"}
        assert {"server/discover", "tools/call", "resources/read", "prompts/get"} <= stdio


async def test_the_typescript_sdk_server_over_http_in_the_handshake_era():
    """Decline a question, refuse a sampling, see its log line; every exchange on the Wire."""
    with mcp_peers.http_server("ts") as said:
        app = ToolnexusApp(specs=[])
        async with app.run_test(size=(140, 44)) as pilot:
            await connect(app, pilot, said["MCP"])
            await until(pilot, lambda: table(app, "#mcp-tools").row_count == 7, timeout=30)
            assert "MCP 2025-11-25 (initialize handshake)" in shown(app, "#mcp-status")
            assert "logging" in shown(app, "#mcp-status")
            await focus_row(app, pilot, "#mcp-tools", "greet")
            await pilot.press("enter")
            await until(pilot, lambda: isinstance(app.screen, ElicitDialog), timeout=20)
            await pilot.press("ctrl+d")  # declined
            await until(
                pilot, lambda: "you chose to decline" in shown(app, "#mcp-result"), timeout=20
            )
            await focus_row(app, pilot, "#mcp-tools", "slow")
            await pilot.press("enter", "3", "ctrl+r")
            await until(pilot, lambda: "done in 3 steps" in shown(app, "#mcp-result"), timeout=20)
            await pilot.press("escape", "n")
            await until(
                pilot, lambda: "info: slow starts: 3 steps" in column(app, "#mcp-notices", 3)
            )
            assert column(app, "#mcp-notices", 2).count("notifications/progress") == 3
            posted = [e for e in app.book.traffic if e.url == said["MCP"] and e.method == "POST"]
            assert {"initialize", "tools/list", "tools/call"} <= {e.rpc_method for e in posted}
            # the doctor on the same endpoint, its findings as they come
            await pilot.press("d")
            await until(
                pilot, lambda: "error" in shown(app, "#mcp-doctor").split("\n")[0], timeout=60
            )
            assert "origin at " + said["MCP"] in shown(app, "#mcp-doctor")
            assert "an unknown tool is answered with a tool error" in shown(app, "#mcp-doctor")


async def test_an_oauth_server_gets_its_sign_in_and_no_token_is_shown():
    with mcp_peers.http_server("py", oauth=True) as said:
        app = ToolnexusApp(specs=[])
        async with app.run_test(size=(140, 44)) as pilot:
            # given up: the sign-in dialog closed with escape says why, nothing is listed
            await connect(app, pilot, said["MCP"])
            await until(pilot, lambda: isinstance(app.screen, SignInDialog), timeout=30)
            await pilot.press("escape")
            await until(
                pilot, lambda: "the sign-in was canceled" in shown(app, "#mcp-result"), timeout=30
            )
            assert table(app, "#mcp-tools").row_count == 0
            # signed in: the address shown is followed (the test's authorization server signs
            # the user in at once and sends the browser back to our loopback listener)
            await connect(app, pilot, said["MCP"])
            await until(pilot, lambda: isinstance(app.screen, SignInDialog), timeout=30)
            address = app.screen.url
            assert address.startswith(said["AS"] + "/authorize?") and address in shown(
                app, "#signin-url"
            )
            async with httpx.AsyncClient(follow_redirects=True) as browser:
                page = await browser.get(address)
            assert page.status_code == 200 and "Signed in" in page.text
            await until(pilot, lambda: not isinstance(app.screen, SignInDialog), timeout=30)
            await until(pilot, lambda: table(app, "#mcp-tools").row_count == 7, timeout=30)
            assert "OAuth: signed in" in shown(app, "#mcp-status")
            await pilot.press("i")
            await until(pilot, lambda: "the token is never shown" in shown(app, "#mcp-server"))
            wire = [e for e in app.book.traffic if e.url.startswith((said["MCP"], said["AS"]))]
            assert any(e.url.endswith("/token") for e in wire)
            assert "tok-" not in repr(wire) and "tok-" not in shown(app, "#mcp-server")
            await asyncio.sleep(0)


async def listed(app: ToolnexusApp, pilot, url: str, rows: int) -> DataTable[Any]:
    """Connected to ``url``, its ``rows`` tools listed, the list focused."""
    await connect(app, pilot, url)
    tools = table(app, "#mcp-tools")
    await until(pilot, lambda: tools.row_count == rows, timeout=30)
    tools.focus()
    await until(pilot, lambda: app.focused is tools)
    return tools


async def test_escape_in_a_list_keeps_the_session_and_tab_letters_out_of_the_endpoint():
    """Issue 60's friction: Esc in a list went to the endpoint, where the next tab letters were
    typed (``…/mcprn``) and Enter reconnected. With a session open Esc stays in the list; u goes to
    the endpoint, Esc from there back to the list."""
    tk = await tn.create_toolkit(builtins=False, tools=[tn.tool(lambda a, b: a + b, name="add")])
    app = ToolnexusApp(specs=[])
    async with tk.serve(mcp=True) as served, app.run_test(size=(140, 44)) as pilot:
        tools = await listed(app, pilot, served.mcp_url, 1)
        box = app.screen.query_one("#mcp-url", Input)
        await pilot.press("escape")
        assert app.focused is tools
        await pilot.press("r", "n")
        assert box.value == served.mcp_url
        assert app.focused is table(app, "#mcp-notices")
        await pilot.press("u")
        assert app.focused is box and box.value == served.mcp_url
        await pilot.press("escape")
        assert app.focused is table(app, "#mcp-notices")
        assert app.screen.session is not None


async def in_the_tool_list(app: ToolnexusApp, pilot) -> None:
    """The MCP mode, no session, the (empty) tool list focused."""
    await pilot.press("alt+6")
    await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
    table(app, "#mcp-tools").focus()


async def test_help_has_words_for_every_key_of_the_mcp_mode():
    """Issue 60's friction: ``?`` listed d t r p n i, tab, shift+tab and esc with no words."""
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(140, 44)) as pilot:
        await in_the_tool_list(app, pilot)
        await pilot.press("question_mark")
        await until(pilot, lambda: bool(app.screen.query("HelpPanel")))
        keys = ("d", "t", "r", "p", "k", "n", "i", "u", "tab", "shift+tab", "escape")
        bound = app.active_bindings
        words = {k: bound[k].binding.description for k in keys if k in bound}
        assert set(words) == set(keys), words
        assert all(words.values()), words
        assert words["t"] == "Tools tab" and words["u"] == "Endpoint" and words["k"] == "Tasks tab"


async def test_ctrl_c_says_how_to_quit_in_words_not_markup():
    """Issue 60's friction: ctrl+c showed ``Press [b]ctrl+q[/b] to quit``."""
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(140, 44)) as pilot:
        await in_the_tool_list(app, pilot)
        await pilot.press("ctrl+c")
        await until(pilot, lambda: bool(list(app._notifications)))
        [said] = [n.message for n in app._notifications]
        assert said == "Press ctrl+q to quit"
        assert app.is_running


async def test_home_and_end_go_to_a_lists_first_and_last_row():
    """Issue 60's friction: Home did not go to the top of a list (only ctrl+home did)."""
    made = [tn.tool(lambda x: x, name=f"tool_{i}") for i in range(5)]
    tk = await tn.create_toolkit(builtins=False, tools=made)
    app = ToolnexusApp(specs=[])
    async with tk.serve(mcp=True) as served, app.run_test(size=(140, 44)) as pilot:
        tools = await listed(app, pilot, served.mcp_url, 5)
        await pilot.press("end")
        await until(pilot, lambda: tools.cursor_row == 4)
        await pilot.press("home")
        await until(pilot, lambda: tools.cursor_row == 0)
        box = app.screen.query_one("#mcp-url", Input)
        await pilot.press("u", "home")  # in a text box, its own Home
        assert app.focused is box and box.cursor_position == 0


async def test_tab_leaves_a_form_of_one_field():
    """Issue 60's friction: Tab never left a one-field form (it went round to the same field)."""
    tk = await tn.create_toolkit(builtins=False, tools=[tn.tool(lambda x: x, name="echo")])
    app = ToolnexusApp(specs=[])
    async with tk.serve(mcp=True) as served, app.run_test(size=(140, 44)) as pilot:
        tools = await listed(app, pilot, served.mcp_url, 1)
        await until(pilot, lambda: bool(app.screen.query("#arg-0")))
        await pilot.press("enter")
        await until(pilot, lambda: app.focused is app.screen.query_one("#arg-0", Input))
        await pilot.press("tab")
        assert app.focused is tools
