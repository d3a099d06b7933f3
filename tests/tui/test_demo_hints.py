"""The demo says what it can do: the first screens (Servers, Chat) say what to type to see a task
ask a question, and typed in Chat, it asks."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual.widgets import Input, Static  # noqa: E402

from toolnexus.hosting import DEMO_ASK, DEMO_TRY, demo_spec  # noqa: E402
from toolnexus.protocol.model import TaskState  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402

from .test_pilot import chat_with_hosted, until  # noqa: E402


def shown(app: ToolnexusApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def test_servers_and_chat_say_what_to_type_and_the_demo_asks():
    app = ToolnexusApp(specs=[demo_spec()])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: bool(app.workspace.running()))
        await until(pilot, lambda: DEMO_TRY in shown(app, "#server-detail"))
        await chat_with_hosted(app, pilot)
        await until(pilot, lambda: DEMO_TRY in shown(app, "#chat-log"))
        app.screen.query_one("#chat-input", Input).value = DEMO_ASK
        await pilot.press("enter")
        await until(
            pilot,
            lambda: (
                bool(app.conversation.turns)
                and app.conversation.turns[-1].task_state is TaskState.INPUT_REQUIRED
            ),
        )
        await until(  # the draft, asked once (the request is not said back)
            pilot,
            lambda: (
                "asks: Publish this report? Weekly report - Done:" in shown(app, "#chat-question")
            ),
        )
        await pilot.press("ctrl+q")
