"""A server edited, as a daily user does it (the look at issue 61 on aff1d33): the edit form keeps
what it does not show, an edit of the demo comes back at the next launch (on the demo's own port),
and an edit made in another toolnexus-tui (a second real process on the same config folder,
changing the file as a window does, through ServerBook) is said here."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

pytest.importorskip("textual")

from textual.widgets import Input  # noqa: E402

from toolnexus.hosting import DEMO_DESCRIPTION, EXAMPLE_SKILLS, ServerSpec  # noqa: E402
from toolnexus.protocol.model import Task, TaskState, TaskStatus  # noqa: E402
from toolnexus.stores import FileTaskStore  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.peers import PeerBook  # noqa: E402
from tui.saved import ServerBook, write_private  # noqa: E402
from tui.screens.server_form import ServerForm  # noqa: E402

from ..helpers import free_port  # noqa: E402
from .test_peers_two_windows import in_another_window  # noqa: E402
from .test_pilot import until  # noqa: E402


def _app(folder: Path, specs: list[ServerSpec] | None = None) -> ToolnexusApp:
    """A toolnexus-tui on ``folder``; ``specs`` None: started as ``toolnexus-tui`` is, the demo."""
    return ToolnexusApp(
        specs=specs, peers=PeerBook(folder), servers=ServerBook(folder), export_dir=folder
    )


async def _edit(app: ToolnexusApp, pilot, **fields: str) -> None:
    """``e`` on the selected server (the demo), each field ``f-<name>`` set, ``ctrl+s``: until it
    runs again."""
    await pilot.press("e")
    await until(pilot, lambda: isinstance(app.screen, ServerForm))
    for name, value in fields.items():
        app.screen.query_one(f"#f-{name.replace('_', '-')}", Input).value = value
    await pilot.press("ctrl+s")
    await until(pilot, lambda: not isinstance(app.screen, ServerForm), timeout=30)
    await until(pilot, lambda: app.workspace.get("demo-desk").state == "running", timeout=30)


async def test_an_edit_of_the_demo_keeps_what_the_form_does_not_show_and_comes_back(
    tmp_path: Path,
):
    """The demo's store set to a file with ``e``: the form built its spec from its fields alone, so
    the demo's description (not a field) was dropped from what was saved; and at the next launch
    the demo started as toolnexus-tui starts it, the saved edit passed over: memory again, the
    tasks kept in the file out of sight, nothing said. Now the edit comes back, whole, on the
    demo's own port (the one a copied curl line names)."""
    store = f"file:{tmp_path / 'tasks'}"
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.workspace.get("demo-desk").state == "running", timeout=30)
        port = app.workspace.get("demo-desk").spec.port
        await _edit(app, pilot, store=store)
        saved = ServerBook(tmp_path)
        saved.load()
        assert saved.specs["demo-desk"].store == store
        assert saved.specs["demo-desk"].description == DEMO_DESCRIPTION
        await app.action_quit()

    again = _app(tmp_path)
    async with again.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: again.workspace.get("demo-desk").state == "running", timeout=30)
        spec = again.workspace.get("demo-desk").spec
        assert (spec.store, spec.description, spec.port) == (store, DEMO_DESCRIPTION, port)
        await again.action_quit()


async def test_the_demo_edited_to_serve_other_skills_no_longer_says_it_is_the_demo(
    tmp_path: Path,
):
    """The form keeps what it does not show (7d79402), the demo's description too: the demo edited
    to serve one's own skills published, at every launch, "The toolnexus demo agent: greets,
    reports the weather ... on the embedded demo model" on its card. The demo's words go once
    what they describe (its skills, its model) is changed; the card's description is then the
    one serve builds from the skills (issue 61 item 8)."""
    skills = tmp_path / "skills"
    shutil.copytree(EXAMPLE_SKILLS / "greet", skills / "greet")
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.workspace.get("demo-desk").state == "running", timeout=30)
        await _edit(app, pilot, skills=str(skills))
        server = app.workspace.get("demo-desk")
        assert server.spec.skills == [str(skills)]
        async with httpx.AsyncClient() as http:
            card = (await http.get(f"{server.url}/.well-known/agent-card.json")).json()
        assert card["description"] and "demo agent" not in card["description"]
        saved = ServerBook(tmp_path)
        saved.load()
        assert saved.specs["demo-desk"].description == ""
        await app.action_quit()


async def test_a_port_typed_in_the_demos_form_is_its_port_at_the_next_launch(tmp_path: Path):
    """The demo comes back on its own port (the one its copied curl line names), not on the port
    its saved edit says, which another window's edit may have moved. A port the user typed in
    its form is the user's word: it was dropped at the next launch, the demo back on its old port."""
    port = free_port()
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.workspace.get("demo-desk").state == "running", timeout=30)
        await _edit(app, pilot, port=str(port))
        assert app.workspace.get("demo-desk").spec.port == port
        await app.action_quit()

    again = _app(tmp_path)
    async with again.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: again.workspace.get("demo-desk").state == "running", timeout=30)
        assert again.workspace.get("demo-desk").spec.port == port
        await again.action_quit()


async def test_the_demo_named_on_the_command_line_is_started_as_named(tmp_path: Path):
    """``toolnexus-tui --model ...`` (a spec given) starts what it names, a saved edit of the
    server of that name notwithstanding: the command line is the user's latest word."""
    write_private(
        tmp_path / "servers-v1.json",
        {"servers": [{"name": "demo-desk", "skills": [], "store": f"file:{tmp_path / 't'}"}]},
    )
    given = ServerSpec(name="demo-desk", skills=[], mcp=True)
    app = _app(tmp_path, [given])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.workspace.get("demo-desk").state == "running", timeout=30)
        assert app.workspace.get("demo-desk").spec.store == "memory"
        await app.action_quit()


_OTHER_WINDOW = """
import sys
from dataclasses import replace
from pathlib import Path
from tui.saved import ServerBook

folder, name, store = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
book = ServerBook(folder)
book.load()
book.put(replace(book.specs[name], store=store), name)
print(book.pid)
"""


def other_window_edits(folder: Path, name: str, store: str) -> int:
    """Another toolnexus-tui edits the saved server ``name`` (its store), in a process of its own;
    its pid."""
    return in_another_window(_OTHER_WINDOW, str(folder), name, store)


def recorded(app: ToolnexusApp) -> list[str]:
    """Every message the app's toasts say from now on (a toast is gone after a few seconds)."""
    messages: list[str] = []
    notify = app.notify

    def recording(message: str, **kwargs: Any) -> None:
        messages.append(message)
        notify(message, **kwargs)

    app.notify = recording  # type: ignore[method-assign]
    return messages


async def test_a_server_edited_in_another_window_is_said_here(tmp_path: Path):
    """The README: a server added, edited or deleted in one window shows in the other, saying so.
    An edit was taken silently (a stopped server's spec replaced, a running one's not, and neither
    said). Now each says what happened and what it means here."""
    port = free_port()
    write_private(
        tmp_path / "servers-v1.json",
        {"servers": [{"name": "shared", "skills": [], "port": port}]},
    )
    app = _app(tmp_path, [])
    said = recorded(app)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.workspace.get("shared").state == "running", timeout=30)
        pid = other_window_edits(tmp_path, "shared", f"file:{tmp_path / 'a'}")
        running = (
            f"shared was edited in another toolnexus-tui (pid {pid}); here it runs as it was, "
            "the change applies at the next launch"
        )
        await until(pilot, lambda: running in said, timeout=30)
        assert app.workspace.get("shared").spec.store == "memory"  # as it runs

        await app.workspace.stop("shared")
        pid = other_window_edits(tmp_path, "shared", f"file:{tmp_path / 'b'}")
        stopped = f"shared was edited in another toolnexus-tui (pid {pid})"
        await until(pilot, lambda: stopped in said, timeout=30)
        assert app.workspace.get("shared").spec.store == f"file:{tmp_path / 'b'}"  # s starts it so
        await app.action_quit()


async def test_deleting_the_demo_says_it_comes_back_at_the_next_launch(tmp_path: Path):
    """``d`` on the demo said it would be forgotten "here and at the next launch"; toolnexus-tui
    starts it at every launch, so it came back. The question says what happens: its edits go,
    it comes back as at first."""
    app = _app(tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: app.workspace.get("demo-desk").state == "running", timeout=30)
        await _edit(app, pilot, store=f"file:{tmp_path / 'tasks'}")
        await pilot.press("d")
        await until(pilot, lambda: type(app.screen).__name__ == "Confirm")
        question = str(app.screen.query_one("#confirm-question").render())
        assert " ".join(question.split()) == (
            "Delete demo-desk? It stops and is forgotten, with its edits; toolnexus-tui starts "
            "it again at the next launch, as at first."
        )
        await pilot.press("y")
        await until(pilot, lambda: "demo-desk" not in app.workspace.servers, timeout=30)
        await app.action_quit()

    again = _app(tmp_path)
    async with again.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: again.workspace.get("demo-desk").state == "running", timeout=30)
        assert again.workspace.get("demo-desk").spec.store == "memory"  # as at first
        await again.action_quit()


async def test_a_second_window_starts_the_demo_as_at_first_while_the_first_serves_it_edited(
    tmp_path: Path,
):
    """Window A serves the demo as edited, on a file store. Window B started it as edited too, on
    another port, on the same store, and its start failed A's running tasks there ("interrupted
    by restart"). B starts the demo as at first now: A's edit, store and tasks are A's."""
    store = f"file:{tmp_path / 'tasks'}"
    kept = FileTaskStore(tmp_path / "tasks")
    await kept.save(Task(id="t1", context_id="c1", status=TaskStatus(TaskState.WORKING)))
    await kept.aclose()  # window A's server holds it (here: nobody; a real one, another process)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])
    try:
        with socket.socket() as held:  # window A's demo
            held.bind(("127.0.0.1", 0))
            held.listen()
            port = held.getsockname()[1]
            write_private(
                tmp_path / "servers-v1.json",
                {
                    "servers": [{"name": "demo-desk", "skills": [], "port": port, "store": store}],
                    "ports": {"demo-desk": port},
                    "running": [{"pid": other.pid, "port": port, "name": "demo-desk"}],
                },
            )
            app = _app(tmp_path)
            async with app.run_test(size=(120, 40)) as pilot:
                await until(
                    pilot, lambda: app.workspace.get("demo-desk").state == "running", timeout=30
                )
                spec = app.workspace.get("demo-desk").spec
                assert (spec.store, spec.description) == ("memory", DEMO_DESCRIPTION)
                assert spec.port != port
                await app.action_quit()
    finally:
        other.kill()
        other.wait()
    task = await FileTaskStore(tmp_path / "tasks", read_only=True).get("t1")
    assert task is not None and task.state is TaskState.WORKING
