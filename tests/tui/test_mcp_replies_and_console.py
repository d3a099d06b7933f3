"""What the MCP mode does beside the calls (issue 60 item 2), by real pilots against the official
SDK's server written for the tests (tests/peers/mcp_everything.py): a sampling request answered
by a reply the user writes."""

from __future__ import annotations

import shlex

import pytest

pytest.importorskip("textual")

from tui.app import ToolnexusApp  # noqa: E402
from tui.screens.mcp_dialogs import SamplingDialog  # noqa: E402

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
