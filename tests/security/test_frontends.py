"""Nothing a peer sends is ever interpreted: a card and tasks full of markup, ANSI escapes, control
characters and 1 MB strings go through every view of the TUI, the CLI and the notebook's HTML."""

from __future__ import annotations

from pathlib import Path

import httpx
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

import toolnexus as tn
from toolnexus.http.server import AsgiServer

from ..helpers import run_cli
from ..serve.wire import v03_message

EVIL = "[/bold]evil[link=http://x.example]click[/link][/] \x1b[2J\x1b]0;pwned\x07 \u202eright-to-left\x00 <script>x</script>"
HUGE = "H" * 1_000_000


def evil_card(url: str) -> dict:
    return {
        "name": EVIL,
        "description": EVIL + HUGE,
        "version": "[red]1[/red]",
        "url": url,
        "protocolVersion": "0.3.0",
        "capabilities": {"streaming": False},
        "provider": {"organization": EVIL, "url": "[link=x]"},
        "defaultInputModes": ["text"],
        "defaultOutputModes": ["text"],
        "skills": [
            {
                "id": "[/]",
                "name": EVIL,
                "description": HUGE,
                "tags": ["[b]", "\x1b[31m"],
                "examples": [EVIL],
            }
        ],
    }


def evil_task(task_id: str = "t-[/]") -> dict:
    message = {
        "kind": "message",
        "role": "agent",
        "messageId": "m[/]",
        "parts": [{"kind": "text", "text": EVIL}],
    }
    return {
        "kind": "task",
        "id": task_id,
        "contextId": "c[/b]",
        "status": {"state": "completed", "message": message},
        "history": [message],
        "artifacts": [
            {"artifactId": "a[/]", "name": EVIL, "parts": [{"kind": "text", "text": EVIL + HUGE}]}
        ],
    }


class EvilPeer:
    def __init__(self) -> None:
        async def card(request: Request):
            return JSONResponse(evil_card(self.server.url + "/"))

        async def rpc(request: Request):
            body = await request.json()
            return JSONResponse({"jsonrpc": "2.0", "id": body.get("id"), "result": evil_task()})

        self.server = AsgiServer(
            Starlette(
                routes=[
                    Route("/.well-known/agent-card.json", card),
                    Route("/", rpc, methods=["POST"]),
                ]
            )
        )

    async def __aenter__(self) -> str:
        await self.server.start()
        return self.server.url

    async def __aexit__(self, *exc) -> None:
        await self.server.stop()


def _shown(app, selector: str) -> str:
    from textual.widgets import Static

    return str(app.screen.query_one(selector, Static).render())


async def test_every_tui_view_shows_hostile_text_as_text(tmp_path: Path):
    pytest.importorskip("textual")
    from textual.widgets import DataTable, Input

    from toolnexus.hosting import demo_spec
    from tui.app import ToolnexusApp
    from tui.peers import PeerBook
    from tui.widgets.rowtable import RowTable

    from ..tui.test_peers_chat_and_wire import chat
    from ..tui.test_pilot import chatting_with, until

    @tn.tool(name="evil_tool", description=EVIL)
    def evil_tool(x: str = "") -> str:
        return EVIL

    mcp_tk = await tn.create_toolkit(builtins=False, tools=[evil_tool])
    evil_tool.input_schema["properties"]["[/]bad id!"] = {"type": "string", "description": EVIL}
    book = PeerBook(tmp_path / "config")
    app = ToolnexusApp(specs=[demo_spec()], peers=book, export_dir=tmp_path)
    async with (
        EvilPeer() as evil,
        mcp_tk.serve(mcp=True) as mcp_served,
        app.run_test(size=(120, 40)) as pilot,
    ):
        await until(
            pilot, lambda: any(p.hosted and p.state == "reachable" for p in book.peers.values())
        )
        # a task with hostile text on the hosted server: Tasks mode
        hosted_url = next(url for url, p in book.peers.items() if p.hosted)
        async with httpx.AsyncClient() as http:
            await http.post(
                hosted_url,
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "message/send",
                    "params": {"message": v03_message(EVIL)},
                },
            )
        await pilot.press("2")
        await until(pilot, lambda: app.screen.query_one("#tasks", RowTable).row_count >= 1)
        app.screen.query_one("#tasks", RowTable).move_cursor(row=0)
        await pilot.pause(0.3)
        assert "[/bold]evil" in _shown(app, "#messages") and "␛[2J" in _shown(app, "#messages")
        for tab in ("d-raw", "d-artifacts", "d-telemetry", "d-timeline"):
            app.screen.query_one("#detail").active = tab
            await pilot.pause(0.05)
        assert "\x1b" not in _shown(app, "#raw") and "\x1b" not in _shown(app, "#artifacts")
        # Peers mode: the card, its diagnostics, its raw JSON
        await pilot.press("3")
        await pilot.pause(0.1)
        await pilot.press("n")
        app.screen.query_one("#peer-url", Input).value = evil
        await pilot.press("enter")
        await until(pilot, lambda: book.peers[evil].state == "reachable")
        table = app.screen.query_one("#peers", DataTable)
        table.move_cursor(row=table.get_row_index(evil))
        await pilot.pause(0.2)
        card_view = _shown(app, "#card-view")
        assert "[/bold]evil[link=http://x.example]" in card_view and "\x1b" not in card_view
        assert "␛[2J" in card_view and "more characters" in card_view  # 1 MB cut, said so
        for tab in ("p-diag", "p-raw"):
            app.screen.query_one("#peer-detail").active = tab
            await pilot.pause(0.1)
        assert "\x1b" not in _shown(app, "#raw-view")
        # Chat with it
        table.focus()
        await pilot.press("enter")
        await until(
            pilot,
            lambda: chatting_with(app, evil),
        )
        reply = await chat(app, pilot, "hello")
        assert "[/bold]evil" in reply.text
        assert "\x1b" not in _shown(app, "#chat-log")
        # the Wire: every exchange with it, selected one by one
        await pilot.press("escape", "5")
        await pilot.pause(0.2)
        wire = app.screen.query_one("#wire", RowTable)
        wire.focus()
        for row in range(wire.row_count):
            wire.move_cursor(row=row)
            await pilot.pause(0.02)
        assert "\x1b" not in _shown(app, "#exchange")
        # MCP: a tool whose name, description and argument names are the peer's text
        await pilot.press("6")
        await pilot.pause(0.1)
        app.screen.query_one("#mcp-url", Input).value = mcp_served.mcp_url
        app.screen.query_one("#mcp-url", Input).focus()
        await pilot.press("enter")
        await until(pilot, lambda: app.screen.query_one("#mcp-tools", DataTable).row_count == 1)
        await until(pilot, lambda: bool(app.screen.query("#arg-1")))
        await pilot.press("ctrl+r")
        await pilot.pause(0.5)
        assert app.is_running and app.return_code is None
        await pilot.press("ctrl+q")
    assert app.return_code in (None, 0)


def test_the_cli_prints_a_hostile_card_without_obeying_it():
    from toolnexus.http.server import LoopThread

    thread = LoopThread()
    peer = EvilPeer()
    url = thread.run(peer.__aenter__(), 10)
    try:
        card = run_cli("card", url, "--validate")
        sent = run_cli("send", url, "hi")
    finally:
        thread.run(peer.__aexit__(), 10)
        thread.close()
    for out in (card, sent):
        text = out.stdout + out.stderr
        assert "[/bold]evil" in text and "␛[2J" in text
        assert (
            "\x1b" not in text
            and "\x07" not in text
            and "\u202e" not in text
            and "\x00" not in text
        )


async def test_the_notebook_html_escapes_hostile_text():
    from toolnexus.protocol.card import AgentCard, card_html
    from toolnexus.protocol.dialects import parse_task
    from toolnexus.protocol.model import task_html, tasks_html

    card = AgentCard(
        evil_card("http://127.0.0.1:1/"), "http://127.0.0.1:1/.well-known/agent-card.json"
    )
    task = parse_task(evil_task())
    for html in (
        card_html(card, tn.validate_card(card)),
        task_html(task),
        tasks_html([task], EVIL),
    ):
        assert "<script>" not in html and "&lt;script&gt;" in html


async def test_a_relative_skills_folder_is_reported_as_its_canonical_path(
    tmp_path: Path, monkeypatch
):
    from ..helpers import write_skill

    write_skill(tmp_path / "skills" / "hello", "hello", description="says hello")
    (tmp_path / "work").mkdir()
    monkeypatch.chdir(tmp_path / "work")
    tk = await tn.create_toolkit("../skills", builtins=False)
    out = (await tk.execute("skill", {"name": "hello"})).output
    expected = (tmp_path / "skills" / "hello").resolve()
    assert f"Base directory for this skill: file://{expected}" in out and ".." not in out
