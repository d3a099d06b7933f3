"""Servers for daily use (issue 61 item 5): `d` asks before it deletes, the new-server form fits
an 80x24 terminal with its own keys in the footer, and a copy's toast is short and soon gone."""

from __future__ import annotations

from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual import events  # noqa: E402
from textual.keys import _character_to_key  # noqa: E402
from textual.widgets import Button, Input  # noqa: E402

from toolnexus.hosting import demo_spec  # noqa: E402
from toolnexus.protocol.model import TaskState  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.peers import PeerBook  # noqa: E402
from tui.saved import ServerBook  # noqa: E402
from tui.screens.server_form import ServerForm  # noqa: E402
from tui.screens.servers import hello_curl  # noqa: E402
from tui.widgets.footer import ModeFooter  # noqa: E402

from .test_peers_chat_and_wire import footer_of  # noqa: E402
from .test_pilot import send, until  # noqa: E402


def _app(tmp_path: Path, specs: list | None = None) -> ToolnexusApp:
    return ToolnexusApp(
        specs=specs if specs is not None else [],
        peers=PeerBook(tmp_path),
        servers=ServerBook(tmp_path),
        export_dir=tmp_path,
    )


async def test_d_asks_before_it_deletes_a_server(tmp_path: Path):
    app = _app(tmp_path, [demo_spec()])
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.workspace.get("demo-desk").state == "running", timeout=30)
        await pilot.press("d")
        await until(pilot, lambda: type(app.screen).__name__ == "Confirm")
        assert "Delete demo-desk?" in str(app.screen.query_one("#confirm-question").render())
        assert app.workspace.get("demo-desk").state == "running"  # nothing done yet
        await pilot.press("n")
        await until(pilot, lambda: not type(app.screen).__name__ == "Confirm")
        await pilot.pause(0.2)
        assert app.workspace.get("demo-desk").state == "running"  # kept
        await pilot.press("d")
        await until(pilot, lambda: type(app.screen).__name__ == "Confirm")
        await pilot.press("y")
        await until(pilot, lambda: "demo-desk" not in app.workspace.servers, timeout=30)


async def test_the_delete_question_shows_its_own_keys_in_the_footer(tmp_path: Path):
    """While "Delete X?" is up, the bottom line says y and n, not the Servers keys under it."""
    app = _app(tmp_path, [demo_spec()])
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.workspace.get("demo-desk").state == "running", timeout=30)
        await pilot.press("d")
        await until(pilot, lambda: type(app.screen).__name__ == "Confirm")
        await pilot.pause(0.1)
        footers = app.screen.query(ModeFooter)
        assert footers, "the question has no footer of its own: the Servers keys show under it"
        footer = footers.first()
        assert footer.region.bottom == app.screen.region.bottom  # the bottom line
        shown = [getattr(key, "description", "") for key in footer.query("FooterKey")]
        assert shown == ["Yes", "No"]
        await pilot.press("n")


async def test_the_new_server_form_fits_80x24_and_its_footer_shows_its_keys(tmp_path: Path):
    app = _app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, ServerForm))
        await pilot.pause(0.1)
        form = app.screen
        screen = form.region
        footer_row = screen.bottom - 1
        for widget in [*form.query(Input), *form.query(Button)]:  # every field and button shown
            box = widget.region
            assert box.height > 0 and box.bottom <= footer_row and box.right <= screen.right, (
                widget.id,
                box,
            )
        shown = footer_of(app)
        assert "Start" in shown and "Cancel" in shown
        assert "New server" not in shown and "Delete" not in shown  # not the Servers keys
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, ServerForm))


async def test_a_copys_toast_is_short_and_soon_gone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.delenv("TMUX", raising=False)  # no doubt to add: the copy's own words only
    monkeypatch.delenv("STY", raising=False)
    app = _app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        curl = hello_curl("http://127.0.0.1:43211")
        app.copy_text(curl, "curl command")
        await until(pilot, lambda: any("copied the" in n.message for n in app._notifications))
        said = next(n for n in app._notifications if "copied the" in n.message)
        assert said.message == (
            "copied the curl command: curl -s http://127.0.0.1:43211/ \\ (+4 lines)"
        )
        assert said.timeout <= 5
        assert app.clipboard == curl  # the whole of it, where it is wanted


def typed_at_once(app: ToolnexusApp, keys: list[str]) -> None:
    """``keys`` as a terminal sends them typed fast (or pasted by tmux send-keys): all in the
    app's queue before the first is answered (``pilot.press`` waits for each to be answered)."""
    for key in keys:
        char = key if len(key) == 1 else None
        event = events.Key(key if key.isalnum() or len(key) > 1 else _character_to_key(key), char)
        event.set_sender(app)
        app._driver.send_message(event)  # noqa: SLF001 (what the terminal's reader does)


async def test_a_name_typed_right_after_n_goes_to_the_new_server_form(tmp_path: Path):
    """``n`` then a name, typed before the form is there: every letter lands in its name box
    (the first replaces the name proposed), none in the Servers list behind it (``d`` there
    asks to delete) nor nowhere (the form not focused yet). The tmux two-window test lost a name
    so, twice. Then ``n`` again and ctrl+s at once start the server with the name proposed."""
    app = _app(tmp_path, [demo_spec()])
    async with app.run_test(size=(100, 30)) as pilot:
        await until(pilot, lambda: app.workspace.get("demo-desk").state == "running", timeout=30)
        typed_at_once(app, ["n", *"desk-3"])
        await until(pilot, lambda: isinstance(app.screen, ServerForm))
        name = app.screen.query_one("#f-name", Input)
        await until(pilot, lambda: name.value == "desk-3")
        await pilot.pause(0.2)
        assert [type(s).__name__ for s in app.screen_stack] == ["ServersScreen", "ServerForm"]
        assert name.value == "desk-3" and app.focused is name
        typed_at_once(app, ["ctrl+s"])
        await until(pilot, lambda: "desk-3" in app.workspace.servers, timeout=20)
        await until(pilot, lambda: not isinstance(app.screen, ServerForm), timeout=20)


async def test_a_url_typed_right_after_n_in_peers_goes_to_the_url_box(tmp_path: Path):
    """In Peers, ``n`` then a URL and enter typed at once add the peer: ``h`` of ``http`` went to
    the peers list (the Auth tab) while the URL box was being focused."""
    app = _app(tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("3")
        await until(pilot, lambda: type(app.screen).__name__ == "PeersScreen")
        typed_at_once(app, ["n", *"http://127.0.0.1:9", "enter"])
        await until(pilot, lambda: "http://127.0.0.1:9" in app.peer_book.peers)
        assert app.screen.query_one("#peer-detail").active == "p-card"  # no h, t... as keys
        assert app.screen.query_one("#peer-url", Input).value == ""


async def test_a_new_server_is_not_offered_a_deleted_ones_name_and_its_tasks(tmp_path: Path):
    """The look at f6e35d4 (issue 61): desk-1 served a task, was deleted (``d`` ``y``), and ``n``
    proposed desk-1 again; the new desk-1 showed ✔ 1 at once, the old task's (the book counts a
    server's tasks by its name, and keeps a deleted server's). The form now proposes a name no
    server and no task of the book has, and a name typed that tasks were seen under says so."""
    app = _app(tmp_path)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, ServerForm))
        assert app.screen.query_one("#f-name", Input).value == "desk-1"
        await pilot.press("ctrl+s")
        await until(pilot, lambda: app.workspace.get("desk-1").state == "running", timeout=30)
        await until(pilot, lambda: not isinstance(app.screen, ServerForm))
        await send(app.workspace.get("desk-1").url, "greet Ada", blocking=True)
        await until(pilot, lambda: app.book.counts("desk-1")[TaskState.COMPLETED] == 1)
        await pilot.press("d")
        await until(pilot, lambda: type(app.screen).__name__ == "Confirm")
        await pilot.press("y")
        await until(pilot, lambda: "desk-1" not in app.workspace.servers, timeout=30)
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, ServerForm))
        form = app.screen
        name = form.query_one("#f-name", Input)
        assert name.value == "desk-2"  # before: desk-1, with the deleted one's task
        note = form.query_one("#form-note")
        assert not note.display  # no line taken
        name.value = "desk-1"  # chosen on purpose: said before it starts
        await until(pilot, lambda: "1 task seen under desk-1 shows with it" in str(note.render()))
        start = form.query_one("#form-start", Button)  # the form fits 80x24 with it
        assert 0 < note.region.height and note.region.bottom <= start.region.y
        assert start.region.height > 0 and start.region.bottom <= form.region.bottom - 1
        name.value = "desk-9"
        await until(pilot, lambda: str(note.render()) == "" and not note.display)
        await pilot.press("escape")
