"""The TUI shows a reply as the model says it: the Chat's reply fills in word by word, and a
hosted task's detail shows the text so far while it works, then its artifact."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from textual.widgets import Input, Static  # noqa: E402

import toolnexus as tn  # noqa: E402
from toolnexus.client.conversation import TurnState  # noqa: E402
from toolnexus.events import TextEvent  # noqa: E402
from toolnexus.hosting import demo_spec  # noqa: E402
from toolnexus.monitor import TaskBook, TaskView  # noqa: E402
from toolnexus.protocol.model import TaskState  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.screens.chat import ChatScreen  # noqa: E402
from tui.widgets.rowtable import RowTable  # noqa: E402

from ..conftest import EXAMPLE_SKILLS  # noqa: E402
from ..test_client_field import WHOLE, WORDS, peer  # noqa: E402
from .test_parts_auth_and_stdio_mcp import _chat_with  # noqa: E402
from .test_pilot import chat_with_hosted, until  # noqa: E402

PROMPT = "tell me about one two three four five six seven eight"
REPLY = "You said: " + PROMPT


async def test_the_chat_and_the_tasks_detail_fill_in_as_the_words_come(
    monkeypatch: pytest.MonkeyPatch,
):
    """Every drawing of the chat's log and every change of the book's text is kept as it is made:
    looked at every 50 ms instead, a loaded machine's late looks saw two of the reply's eleven
    words (a full run at load 18 failed so)."""
    monkeypatch.setenv("TOOLNEXUS_DEMO_PACE", "0.15")  # the demo's words, a person's pace apart
    shown: list[str] = []  # what the chat's log showed of the reply, each time it was drawn
    live: list[str] = []  # what the book held of the hosted task's reply, each time it changed
    draw, words = ChatScreen._draw, TaskBook.words

    def drawn(screen: ChatScreen) -> None:
        draw(screen)
        log = str(screen.query_one("#chat-log", Static).render())
        line = next((x for x in log.splitlines() if x.startswith("agent")), "")
        if not shown or shown[-1] != line:
            shown.append(line)

    def heard(book: TaskBook, event: TextEvent) -> TaskView | None:
        view = words(book, event)
        if view is not None and view.live and (not live or live[-1] != view.live):
            live.append(view.live)
        return view

    monkeypatch.setattr(ChatScreen, "_draw", drawn)
    monkeypatch.setattr(TaskBook, "words", heard)
    app = ToolnexusApp(specs=[demo_spec()])
    async with app.run_test(size=(120, 40)) as pilot:
        await chat_with_hosted(app, pilot)
        app.screen.query_one("#chat-input", Input).value = PROMPT
        await pilot.press("enter")
        await until(
            pilot,
            lambda: any(v.state is TaskState.COMPLETED for v in app.book.tasks.values()),
            timeout=20,
        )
        await until(pilot, lambda: bool(shown) and REPLY in shown[-1], timeout=10)
        partial = [s for s in shown if "You said" in s and REPLY not in s]
        assert len(partial) >= 3, shown  # the reply filled in, word by word
        assert len(live) >= 3 and all(REPLY.startswith(t) for t in live), live
        (view,) = app.book.tasks.values()
        assert view.live == ""  # settled: its artifact is the answer
        await pilot.press("escape", "2")
        await until(pilot, lambda: view.id in app.screen.query_one("#tasks", RowTable).rows)
        table = app.screen.query_one("#tasks", RowTable)
        table.move_cursor(row=table.get_row_index(view.id))
        app.screen.query_one("#detail").active = "d-artifacts"
        await until(
            pilot, lambda: REPLY in str(app.screen.query_one("#artifacts", Static).render())
        )
        assert "as it comes" not in str(app.screen.query_one("#artifacts", Static).render())
        await pilot.press("ctrl+q")


async def test_ctrl_x_mid_reply_cancels_the_task_cleanly(monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TOOLNEXUS_DEMO_PACE", "0.3")
    app = ToolnexusApp(specs=[demo_spec()])
    async with app.run_test(size=(120, 40)) as pilot:
        await chat_with_hosted(app, pilot)
        app.screen.query_one("#chat-input", Input).value = PROMPT
        await pilot.press("enter")
        await until(
            pilot,
            lambda: (
                (reply := app.conversation.last_reply) is not None
                and reply.text.startswith("You said")
            ),
        )
        await pilot.press("ctrl+x")
        reply = app.conversation.last_reply
        assert reply is not None
        await until(pilot, lambda: reply.task_state is TaskState.CANCELED)
        (view,) = app.book.tasks.values()
        await until(pilot, lambda: view.state is TaskState.CANCELED)
        assert REPLY not in reply.text and view.live == ""  # never finished, nothing left live
        await pilot.pause(1.0)  # the demo's next words would have come by now: none is told
        assert reply.task_state is TaskState.CANCELED and view.state is TaskState.CANCELED
        await pilot.press("ctrl+q")


@pytest.mark.parametrize("quirk", ["strands-compliant", "gemini-cli"])
async def test_the_chat_shows_words_a_field_server_says_as_status_messages_or_while_submitted(
    quirk: str,
):
    """Chat with a framework's server (issue 58 item 2: its quirk peer): Strands' compliant
    stream says its words while the task is submitted, the Gemini CLI's as status messages only,
    ending its turn asking with no message. The first word shows while the peer still holds the
    rest, and the turn ends with the whole reply (the Gemini CLI's: its words, the question open)."""

    async with peer(quirk) as (url, shown):
        app = ToolnexusApp(specs=[])
        async with app.run_test(size=(120, 40)) as pilot:
            await _chat_with(app, pilot, url)
            app.screen.query_one("#chat-input", Input).value = "hi"
            await pilot.press("enter")

            def log() -> str:
                return str(app.screen.query_one("#chat-log", Static).render())

            def first_word() -> bool:
                if WORDS[0].strip() in log():
                    shown.set()
                return shown.is_set()

            await until(pilot, first_word, timeout=30)
            await until(pilot, lambda: WHOLE in log(), timeout=30)
            reply = app.conversation.last_reply
            assert reply is not None and reply.text == WHOLE
            assert (app.conversation.waiting_task is not None) is (quirk == "gemini-cli")


async def test_a_stream_cut_under_a_reply_is_said_beneath_it(monkeypatch: pytest.MonkeyPatch):
    """The look at f6e35d4 (issue 61 item 6, in Chat): against a peer that cuts every stream
    (``serve --quirks drop-streams``) the reply came whole, followed by polling, and Chat said
    nothing of the stream lost, where the command says it on a line of its own. What the client
    warned of while the reply ran is now a note beneath it, as a part not sent is."""
    monkeypatch.setenv("TOOLNEXUS_DEMO_PACE", "0.2")  # the stream is cut while the words come
    tk = await tn.create_toolkit([str(EXAMPLE_SKILLS)], builtins=False)
    config = tn.A2AConfig(name="cut", quirks=("drop-streams",))
    app = ToolnexusApp(specs=[])
    async with (
        tk.serve(client=tn.demo_client(), a2a=config) as cut,
        app.run_test(size=(120, 40)) as pilot,
    ):
        url = cut.url.rstrip("/")
        await _chat_with(app, pilot, url)
        app.screen.query_one("#chat-input", Input).value = "greet Ada"
        await pilot.press("enter")
        await until(
            pilot, lambda: app.conversation.turns[-1].state is TurnState.FINISHED, timeout=30
        )
        reply = app.conversation.turns[-1]
        assert reply.text.startswith('Using the "greet" skill: Hello, Ada!'), reply.text
        assert reply.task_state is TaskState.COMPLETED
        await until(pilot, lambda: "followed by polling instead" in " ".join(reply.notes))
        await until(
            pilot,
            lambda: (
                "the task followed by polling instead"
                in str(app.screen.query_one("#chat-log", Static).render())
            ),
        )
