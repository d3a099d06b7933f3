"""What the MCP mode does beside the calls (issue 60 item 2), by real pilots against the official
SDK's server written for the tests (tests/peers/mcp_everything.py): a sampling request answered
by a reply the user writes; an OAuth sign-in with a static client id; a stdio server's stderr
as it comes."""

from __future__ import annotations

import shlex
import sys

import httpx
import pytest

pytest.importorskip("textual")

from textual.widgets import Log  # noqa: E402

from tui.app import ToolnexusApp  # noqa: E402
from tui.screens.mcp_dialogs import SamplingDialog, SignInDialog  # noqa: E402

from ..peers import mcp_peers  # noqa: E402
from .test_handler_errors_and_streams import shown  # noqa: E402
from .test_mcp_inspector import connect, focus_row, table  # noqa: E402
from .test_pilot import until  # noqa: E402

EVERYTHING = (
    "PYTHONPATH="
    + shlex.quote(mcp_peers.ENV["PYTHONPATH"])
    + " "
    + shlex.join(mcp_peers.stdio("py"))
)
"""The Python SDK's server over stdio, as typed into the endpoint box."""


async def test_the_user_writes_the_sampling_reply():
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(140, 44)) as pilot:
        await connect(app, pilot, EVERYTHING)
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == 7, timeout=30)
        await focus_row(app, pilot, "#mcp-tools", "haiku")
        await pilot.press("enter", *"frog", "ctrl+r")
        await until(pilot, lambda: isinstance(app.screen, SamplingDialog), timeout=20)
        await pilot.press("ctrl+r")  # nothing written yet: said, and the dialog stays
        await until(pilot, lambda: "nothing written" in shown(app, "#sampling-error"))
        assert isinstance(app.screen, SamplingDialog)
        await pilot.press("w", *"Old pond, a frog", "escape")  # out of the box: the text stays
        assert isinstance(app.screen, SamplingDialog)
        await pilot.press("ctrl+r")
        await until(
            pilot,
            lambda: "the model user said: Old pond, a frog" in shown(app, "#mcp-result"),
            timeout=20,
        )
        assert any(
            n.summary == "answered by the user: Old pond, a frog"
            for n in app.screen.session.notices
        )


async def test_an_oauth_server_that_registers_no_client_is_signed_in_with_a_static_client_id():
    from ..peers.mcp_everything import STATIC_CLIENT

    with mcp_peers.http_server("py", oauth=True, static=True) as said:
        app = ToolnexusApp(specs=[])
        async with app.run_test(size=(140, 44)) as pilot:
            await connect(app, pilot, said["MCP"])
            await until(
                pilot, lambda: "registers no client" in shown(app, "#mcp-result"), timeout=30
            )
            assert "the Server tab has the OAuth client id box" in shown(app, "#mcp-result")
            await pilot.press("escape", "i", "tab")  # the tab's view, then its roots box
            await until(pilot, lambda: app.focused is app.screen.query_one("#mcp-roots"))
            await pilot.press("tab", *STATIC_CLIENT, "enter")
            await until(pilot, lambda: isinstance(app.screen, SignInDialog), timeout=30)
            async with httpx.AsyncClient(follow_redirects=True) as browser:
                page = await browser.get(app.screen.url)
            assert page.status_code == 200 and "Signed in" in page.text
            await until(pilot, lambda: not isinstance(app.screen, SignInDialog), timeout=30)
            await until(pilot, lambda: table(app, "#mcp-tools").row_count == 7, timeout=30)
            assert "OAuth: signed in" in shown(app, "#mcp-status")
            await pilot.press("ctrl+q")


async def test_a_stdio_servers_stderr_shows_as_it_comes_while_the_session_lives():
    """Issue 60 item 2: a stdio server's stderr was read only when it failed; the Stderr tab (e)
    shows it as it comes, a line at start and the SDK's report of a tool that raised, while the
    session stays open."""
    command = (
        "PYTHONPATH="
        + shlex.quote(mcp_peers.ENV["PYTHONPATH"])
        + " "
        + shlex.join(
            [
                sys.executable,
                "-c",
                "import runpy, sys; print('booting the test server', file=sys.stderr, flush=True);"
                " runpy.run_module('tests.peers.mcp_everything', run_name='__main__',"
                " alter_sys=True)",
                "stdio",
            ]
        )
    )
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(140, 44)) as pilot:
        await connect(app, pilot, command)
        await until(pilot, lambda: table(app, "#mcp-tools").row_count == 7, timeout=30)
        console = app.screen.query_one("#mcp-stderr", Log)
        said = lambda: "\n".join(console.lines)  # noqa: E731
        await until(pilot, lambda: "booting the test server" in said())
        await focus_row(app, pilot, "#mcp-tools", "fail")
        await pilot.press("enter", *"on purpose", "enter")
        await until(pilot, lambda: "Tool 'fail' raised" in said(), timeout=20)
        await pilot.press("escape", "e")
        await until(pilot, lambda: app.focused is console)
        assert app.screen.session is not None and app.screen.session.status == "connected"
        assert "Tool 'fail' raised" in "\n".join(app.screen.session.console)
        await pilot.press("ctrl+q")
