"""Deterministic pictures of the main screens: fixed servers, task ids, times and clock."""

from __future__ import annotations

import pytest

pytest.importorskip("textual")

from tui.app import ToolnexusApp  # noqa: E402

from .fakes import NOW, fixed_peers, fixed_traffic, fixed_workspace  # noqa: E402


def app(tmp: object = None) -> ToolnexusApp:
    import tempfile

    folder = tmp or tempfile.mkdtemp()
    return ToolnexusApp(fixed_workspace(), specs=[], now=lambda: NOW, peers=fixed_peers(folder))


async def settle(pilot) -> None:
    await pilot.pause(0.2)


def test_servers_screen(snap_compare):
    assert snap_compare(app(), terminal_size=(110, 32), run_before=settle)


def test_tasks_screen(snap_compare):
    assert snap_compare(app(), terminal_size=(110, 36), press=["2", "up"], run_before=settle)


def test_tasks_raw_and_telemetry(snap_compare):
    async def before(pilot) -> None:
        await pilot.pause(0.2)
        await pilot.press("2")
        await pilot.pause(0.1)
        pilot.app.screen.query_one("#tasks").move_cursor(row=0)
        pilot.app.screen.query_one("#detail").active = "d-telemetry"
        await pilot.pause(0.1)

    assert snap_compare(app(), terminal_size=(110, 36), run_before=before)


def test_new_server_form(snap_compare):
    async def before(pilot) -> None:
        await pilot.pause(0.2)
        await pilot.press("n")
        await pilot.pause(0.2)
        form = pilot.app.screen
        form.query_one("#f-skills").value = "examples/skills"  # no absolute path on screen

    assert snap_compare(app(), terminal_size=(110, 40), run_before=before)


def test_peers_screen(snap_compare, tmp_path):
    async def before(pilot) -> None:
        await pilot.pause(0.2)
        await pilot.press("3")
        await pilot.pause(0.1)
        pilot.app.screen.query_one("#peer-detail").active = "p-diag"
        while any(w.group == "peer-cost" and not w.is_finished for w in pilot.app.workers):
            await pilot.pause(0.05)  # the card's tokens counted (on a thread): the line is fixed
        await pilot.pause(0.1)

    assert snap_compare(app(tmp_path), terminal_size=(110, 36), run_before=before)


def test_chat_screen(snap_compare, tmp_path):
    from toolnexus import Conversation, Turn, TurnState
    from toolnexus.protocol.model import Task, TaskState, TaskStatus

    def task(state: TaskState) -> Task:
        return Task("77b00000", "81c00000-0000-4000-8000-000000000001", TaskStatus(state))

    async def before(pilot) -> None:
        await pilot.pause(0.2)
        pilot.app.conversation = Conversation(
            peer="http://127.0.0.1:9405",
            context_id="81c00000-0000-4000-8000-000000000001",
            waiting_task="77b00000",
            turns=[
                Turn("user", "hello"),
                Turn(
                    "agent", "echo: hello", state=TurnState.FINISHED, task=task(TaskState.COMPLETED)
                ),
                Turn("user", "a question"),
                Turn(
                    "agent",
                    "What is your favourite colour?",
                    state=TurnState.ASKED,
                    task=task(TaskState.INPUT_REQUIRED),
                ),
            ],
        )
        await pilot.press("4")
        await pilot.pause(0.2)

    assert snap_compare(app(tmp_path), terminal_size=(110, 30), run_before=before)


def test_wire_screen(snap_compare, tmp_path):
    async def before(pilot) -> None:
        await pilot.pause(0.2)
        fixed_traffic(pilot.app)
        await pilot.press("5")
        await pilot.pause(0.1)
        pilot.app.screen.query_one("#wire").move_cursor(row=1)
        await pilot.pause(0.1)

    assert snap_compare(app(tmp_path), terminal_size=(110, 40), run_before=before)


def test_tasks_at_80x24_with_the_answer_box_open(snap_compare):
    async def before(pilot) -> None:  # every column, and the answer box above the footer
        await pilot.pause(0.2)
        await pilot.press("2")
        await pilot.pause(0.1)
        table = pilot.app.screen.query_one("#tasks")
        waiting = next(
            i for i in range(table.row_count) if "input-re" in str(table.get_row_at(i)[0])
        )
        table.move_cursor(row=waiting)
        await pilot.pause(0.1)
        await pilot.press("a")
        await pilot.pause(0.2)

    assert snap_compare(app(), terminal_size=(80, 24), run_before=before)


def test_wire_at_80x24(snap_compare, tmp_path):
    async def before(pilot) -> None:
        await pilot.pause(0.2)
        fixed_traffic(pilot.app)
        await pilot.press("5")
        await pilot.pause(0.2)

    assert snap_compare(app(tmp_path), terminal_size=(80, 24), run_before=before)


def test_peer_auth_at_80x24(snap_compare, tmp_path):
    async def before(pilot) -> None:
        await pilot.pause(0.2)
        await pilot.press("3")
        await pilot.pause(0.1)
        await pilot.press("h")
        await pilot.pause(0.1)
        screen = pilot.app.screen
        screen.query_one("#auth-kind").value = "basic"
        screen.query_one("#auth-name").value = "ada"
        screen.query_one("#auth-secret").value = "${PEER_PASSWORD}"
        await pilot.pause(0.1)

    assert snap_compare(app(tmp_path), terminal_size=(80, 24), run_before=before)


def test_mcp_at_80x24(snap_compare, tmp_path, monkeypatch):
    """The MCP mode connects to the hosted server's /mcp as it opens; the fixed workspace's server
    does not listen, so its session is the fixed one below (the real sessions are tested in
    test_mcp_inspector.py against real servers)."""
    import tui.screens.mcp as mcp_screen
    from toolnexus.mcp import Page

    class FixedSession:
        protocol_version, modern = "2026-07-28", True
        server_name, server_version, instructions = "demo-desk", "0.1.0", ""
        capabilities = {"tools": {"listChanged": True}}
        offered, roots, oauth = ["roots", "elicitation", "sampling"], [], None
        notices: list = []
        subscribed: set = set()
        log_level, running, transport = None, {}, "http"

        def __init__(self, target, **_):
            self.target = target

        async def start(self):
            return self

        async def close(self):
            pass

        def watch(self, listener):
            return lambda: None

        async def tools(self):
            return [
                {
                    "name": "skill",
                    "description": "Load a skill's instructions by name.",
                    "input_schema": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {
                            "name": {"type": "string", "description": "the skill's name"},
                            "tags": {"type": "array", "items": {"type": "string"}},
                        },
                    },
                }
            ]

        async def listing(self, kind, cursor=None, limit=0):
            return Page(await self.tools() if kind == "tools" else [])

    monkeypatch.setattr(mcp_screen, "MCPSession", FixedSession)

    async def before(pilot) -> None:
        await pilot.pause(0.2)
        await pilot.press("6")
        await pilot.pause(0.2)
        pilot.app.screen.query_one("#mcp-headers").value = "X-Team: ${TEAM_KEY}"
        await pilot.pause(0.1)

    assert snap_compare(app(tmp_path), terminal_size=(80, 24), run_before=before)
