"""Peers, chat and the wire log against real peers: our served toolkit, the official a2a-sdk 1.x
server and a stub of the toolnexus legacy dialect."""

from __future__ import annotations

import asyncio
import contextlib
import json
import socket
import threading
from collections.abc import AsyncIterator
from dataclasses import replace
from pathlib import Path
from urllib.parse import urlsplit

import pytest

pytest.importorskip("textual")
pytest.importorskip("a2a")

from textual.widgets import DataTable, Input, Select, Static  # noqa: E402

import toolnexus as tn  # noqa: E402
from toolnexus.hosting import Workspace, demo_spec  # noqa: E402
from toolnexus.protocol.model import TaskState  # noqa: E402
from toolnexus.serve.app import ServeHandle  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.peers import PeerBook  # noqa: E402
from tui.widgets.rowtable import RowTable  # noqa: E402

from ..conftest import EXAMPLE_SKILLS  # noqa: E402
from ..peers.legacy_stub import legacy_stub  # noqa: E402
from ..peers.sdk_server import sdk_server  # noqa: E402
from ..serve.wire import rpc  # noqa: E402
from .test_pilot import chatting_with, until  # noqa: E402


def text_of(app: ToolnexusApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


def tool_names(app: ToolnexusApp) -> list[str]:
    """The MCP mode's tool list, as shown (its rows are keyed by position: a name is the peer's)."""
    table = app.screen.query_one("#mcp-tools", DataTable)
    return [str(table.get_row_at(i)[0]) for i in range(table.row_count)]


def footer_of(app: ToolnexusApp) -> str:
    """The keys the footer shows now: their descriptions, one string."""
    return " ".join(
        b.binding.description for b in app.active_bindings.values() if b.binding.show and b.enabled
    )


async def chat(app: ToolnexusApp, pilot, message: str) -> dict:
    box = app.screen.query_one("#chat-input", Input)
    box.value = message
    count = len(app.conversation.turns)
    await pilot.press("enter")
    await until(
        pilot,
        lambda: (
            len(app.conversation.turns) == count + 2
            and app.conversation.turns[-1].text != "…"
            and not any(w.group == "chat" and not w.is_finished for w in app.workers)
        ),
    )
    return app.conversation.turns[-1]


async def test_the_peers_card_view_shows_a_signatures_verdict(tmp_path: Path):
    """The official SDK's signed card, its key set fetched from the jku it names; and the same
    card changed on its way (a peer that rewrites it): invalid, and why."""
    book = PeerBook(tmp_path / "config")
    app = ToolnexusApp(specs=[], peers=book, export_dir=tmp_path)
    async with sdk_server(compat=True, features=True) as url, app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await pilot.press("n")
        app.screen.query_one("#peer-url", Input).value = url
        await pilot.press("enter")
        await until(pilot, lambda: url in book.peers and book.peers[url].state == "reachable")
        table = app.screen.query_one("#peers", DataTable)
        table.move_cursor(row=table.get_row_index(url))
        await pilot.pause(0.1)
        view = text_of(app, "#card-view")
        assert (
            "signature valid: signature 1 (alg 'ES256', kid 'card-key-1') verified with a key "
            "from its jku"
        ) in view, view


async def test_peers_cards_chat_and_wire(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setenv("TN_TUI_TOKEN", "hunter2-token")
    book = PeerBook(tmp_path / "config")
    app = ToolnexusApp(specs=[demo_spec()], peers=book, export_dir=tmp_path)
    async with (
        sdk_server(compat=True) as sdk_url,
        legacy_stub() as legacy,
        app.run_test(size=(120, 40)) as pilot,
    ):
        await until(
            pilot, lambda: any(p.hosted and p.state == "reachable" for p in book.peers.values())
        )
        await pilot.press("3")
        await pilot.pause(0.1)
        table = app.screen.query_one("#peers", DataTable)
        hosted = next(url for url, p in book.peers.items() if p.hosted)
        assert hosted in table.rows  # hosted servers are peers on their own
        for url in (sdk_url, legacy.url):
            await pilot.press("n")
            app.screen.query_one("#peer-url", Input).value = url
            await pilot.press("enter")
        await until(pilot, lambda: all(p.state == "reachable" for p in book.peers.values()))
        table.move_cursor(row=table.get_row_index(sdk_url))
        await pilot.pause(0.1)
        assert "sdk-echo" in text_of(app, "#card-view") and "echo" in text_of(app, "#card-view")
        assert "signature unsigned" in text_of(app, "#card-view")
        app.screen.query_one("#peer-detail").active = "p-diag"
        await pilot.pause(0.1)
        diag = text_of(app, "#diag-view")
        assert (
            "offers 1.0 and 0.3: each official client line finds its own" in diag
            and "dialect in use: 1.0" in diag
        )
        table.move_cursor(row=table.get_row_index(legacy.url))
        await pilot.pause(0.1)
        assert "speaks 0.3" in text_of(app, "#diag-view")
        # headers: an env reference is saved, a literal secret is not
        table.move_cursor(row=table.get_row_index(sdk_url))
        await pilot.press("h")
        box = app.screen.query_one("#peer-headers", Input)
        box.value = "Authorization: Bearer ${TN_TUI_TOKEN}; X-Literal: s3cr3t"
        box.focus()
        await pilot.press("enter")
        await until(
            pilot, lambda: book.peers[sdk_url].state == "reachable" and book.peers[sdk_url].headers
        )
        saved = json.loads((tmp_path / "config" / "peers-v1.json").read_text())
        sdk_saved = next(p for p in saved["peers"] if p["url"] == sdk_url)
        assert sdk_saved["headers"] == {"Authorization": "Bearer ${TN_TUI_TOKEN}"}
        assert "s3cr3t" not in json.dumps(saved) and "hunter2" not in json.dumps(saved)

        # chat with the hosted demo: two turns in one context, and an input-required answer
        app.screen.query_one("#peers", DataTable).focus()
        table.move_cursor(row=table.get_row_index(hosted))
        await pilot.press("enter")
        await until(
            pilot,
            lambda: chatting_with(app, hosted),
        )
        first = await chat(app, pilot, "hello there")
        assert first.text == "You said: hello there"
        second = await chat(app, pilot, "and again")
        assert second.text == "You said: and again (message 2 of this conversation)"
        asked = await chat(app, pilot, "please confirm the order")
        assert (
            asked.task_state.value == "input-required"
            and app.conversation.waiting_task == asked.task_id
        )
        # the open question, shown with what the next message does about it: answer it, or (ctrl+f) a new task
        box = app.screen.query_one("#chat-input", Input)
        question = text_of(app, "#chat-question")
        assert f"task {asked.task_id[:8]} asks: {' '.join(asked.text.split())}" in question
        assert (
            "enter answers it" in question
            and box.has_class("answering")
            and "your answer" in box.placeholder
        )
        assert "New task" in footer_of(app) and "Answer it" not in footer_of(app)
        await pilot.press("ctrl+f")
        assert "the next message starts a new task" in text_of(
            app, "#chat-question"
        ) and not box.has_class("answering")
        assert "Answer it" in footer_of(app)
        aside = await chat(app, pilot, "and meanwhile")
        assert aside.task_id != asked.task_id and aside.text.startswith("You said: and meanwhile")
        assert app.conversation.waiting_task == asked.task_id and "asks:" in text_of(
            app, "#chat-question"
        )
        await pilot.press("ctrl+f")
        assert box.has_class("answering")
        answered = await chat(app, pilot, "yes")
        assert answered.task_id == asked.task_id and answered.text.startswith(
            "Request approved (yes)"
        )
        assert not app.screen.query_one("#chat-question").display and not box.has_class("answering")
        assert "ctx " in text_of(app, "#chat-context")
        await pilot.press("ctrl+n")
        assert app.conversation.context_id is None and app.conversation.turns == []

        # per-peer overrides: force the SDK peer to 0.3 (its compat transport) and blocking sends
        await pilot.press("escape", "3")
        await pilot.pause(0.1)
        peers_table = app.screen.query_one("#peers", DataTable)
        peers_table.focus()
        peers_table.move_cursor(row=peers_table.get_row_index(sdk_url))
        await pilot.press("v", "b")
        await until(
            pilot,
            lambda: (
                book.peers[sdk_url].state == "reachable"
                and book.peers[sdk_url].client.dialect
                and book.peers[sdk_url].client.dialect.value == "0.3"
            ),
        )
        assert book.peers[sdk_url].blocking
        saved = json.loads((tmp_path / "config" / "peers-v1.json").read_text())
        assert next(p for p in saved["peers"] if p["url"] == sdk_url)["dialect"] == "0.3"
        await pilot.press("4")
        await pilot.pause(0.1)
        app.screen.query_one("#chat-input", Input).focus()

        # chat with the official SDK server (now in 0.3, blocking) and the legacy stub
        for url, expect in ((sdk_url, "echo: hi sdk"), (legacy.url, "echo: what is 6*7")):
            app.chat_peer = url
            app.screen.on_screen_resume()
            await until(
                pilot,
                lambda: chatting_with(app, url),  # noqa: B023  # awaited here,
            )
            reply = await chat(app, pilot, "hi sdk" if url == sdk_url else "what is 6*7")
            assert reply.text == expect, reply

        # the wire: every exchange, the Authorization masked
        await pilot.press("escape", "5")
        await pilot.pause(0.2)
        wire = app.screen.query_one("#wire", RowTable)
        assert wire.row_count >= 10
        to_sdk = [e for e in app.book.traffic if e.url.startswith(sdk_url) and e.method == "POST"]
        assert to_sdk and all(e.request_headers["authorization"] == "Bearer ***" for e in to_sdk)
        assert all("hunter2" not in json.dumps(vars(e), default=str) for e in app.book.traffic)
        assert {"SendMessage", "message/send", "GetTask"} & {e.rpc_method for e in app.book.traffic}
        assert any(
            e.rpc_method == "message/send" and e.url.startswith(sdk_url) for e in app.book.traffic
        )
        app.screen.query_one("#wire-filter", Input).value = "method:GetTask"
        await pilot.pause(0.1)
        assert wire.row_count >= 1 and all(
            str(wire.get_row_at(i)[3]) == "GetTask" for i in range(wire.row_count)
        )
        app.screen.query_one("#wire-filter", Input).value = ""
        await pilot.pause(0.1)
        app.screen.query_one("#wire", RowTable).focus()
        wire.move_cursor(row=wire.row_count - 1)
        await pilot.pause(0.1)
        assert "POST" in text_of(app, "#exchange")
        await pilot.press("e")  # asks where, the export folder by default; enter writes there
        await pilot.pause(0.1)
        await pilot.press("enter")  # written in a thread, whole: there once complete
        await until(pilot, lambda: bool(list(tmp_path.glob("toolnexus-session-*.json"))))
        exported = list(tmp_path.glob("toolnexus-session-*.json"))
        assert exported and json.loads(exported[0].read_text())["wire"]
        await pilot.press("ctrl+q")


async def test_call_an_mcp_tool_through_the_form():
    @tn.tool
    def add(a: int, b: int = 2) -> int:
        """Add two integers."""
        return a + b

    tk = await tn.create_toolkit(builtins=False, tools=[add])
    app = ToolnexusApp(specs=[])
    async with tk.serve(mcp=True) as served, app.run_test(size=(120, 40)) as pilot:
        await pilot.press("6")
        await pilot.pause(0.1)
        app.screen.query_one("#mcp-url", Input).value = served.mcp_url
        app.screen.query_one("#mcp-url", Input).focus()
        await pilot.press("enter")
        await until(pilot, lambda: app.screen.query_one("#mcp-tools", DataTable).row_count == 1)
        await until(pilot, lambda: bool(app.screen.query("#arg-0")))
        app.screen.query_one("#arg-0", Input).value = "40"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: "42" in text_of(app, "#mcp-result"))
        assert app.screen.last_result.output == "42" and not app.screen.last_result.is_error
        # raw JSON arguments, and an error result
        await pilot.press("ctrl+j")
        app.screen.query_one("#mcp-raw-args").text = '{"a": "not a number"}'
        await pilot.press("ctrl+r")
        await until(pilot, lambda: app.screen.last_result.is_error)
        assert "invalid argument 'a'" in app.screen.last_result.output
        # the exchanges are in the wire log
        await until(pilot, lambda: any(e.rpc_method == "tools/call" for e in app.book.traffic))
        await pilot.press("ctrl+q")


async def test_chat_opens_on_the_server_the_hint_names():
    """The Servers hint says "4 chats with it": Chat opens on that hosted server, and a
    message goes to it (the picker was blank and Enter said "pick a peer first")."""
    app = ToolnexusApp(specs=[demo_spec()])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(
            pilot,
            lambda: any(p.hosted and p.state == "reachable" for p in app.peer_book.peers.values()),
        )
        hosted = next(url for url, p in app.peer_book.peers.items() if p.hosted)
        assert "4 chats with it" in text_of(app, "#server-detail")
        await pilot.press("4")
        await until(
            pilot,
            lambda: chatting_with(app, hosted),
        )
        app.screen.query_one("#chat-input", Input).value = "hello hint"
        await pilot.press("enter")
        await until(pilot, lambda: "You said: hello hint" in text_of(app, "#chat-log"))


def _hold_hosted_starts(monkeypatch: pytest.MonkeyPatch) -> threading.Event:
    """The hosted servers' starts held until the event is set (a slow start): set it at the end."""
    held = threading.Event()  # the hosted servers start on a thread of their own
    serve = Workspace._serve

    async def slow_serve(self, server, sock=None):
        await asyncio.to_thread(held.wait, 30)
        await serve(self, server, sock)

    monkeypatch.setattr(Workspace, "_serve", slow_serve)
    return held


@contextlib.asynccontextmanager
async def saved_agent(folder: Path, name: str) -> AsyncIterator[ServeHandle]:
    """A real agent named ``name`` served on loopback and saved as a peer in ``folder``: the
    saved peer a relaunch finds."""
    tk = await tn.create_toolkit([str(EXAMPLE_SKILLS)], builtins=False)
    async with tk, tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name=name)) as other:
        saved = PeerBook(folder)
        saved.add(other.url)
        saved.save(other.url.rstrip("/"))
        yield other


async def test_chat_waits_for_the_hosted_server_rather_than_take_a_saved_peer(
    tmp_path, monkeypatch
):
    """The look at f6e35d4: relaunched with a saved peer that answers (another agent), Chat talked
    to it, not to the hosted demo the Servers hint names (2 launches in 3): Chat, built ahead a
    second after launch, found the saved peer the only one reachable while the demo still started,
    took it, and kept it. A hosted server on its way is waited for. Its start is held here until
    Chat is shown, as a slow start would."""
    held = _hold_hosted_starts(monkeypatch)
    folder = tmp_path / "config"
    async with saved_agent(folder, "other"):
        app = ToolnexusApp(specs=[demo_spec()], peers=PeerBook(folder))
        try:
            async with app.run_test(size=(120, 40)) as pilot:
                await until(
                    pilot,
                    lambda: [p.state for p in app.peer_book.peers.values()] == ["reachable"],
                )
                await pilot.press("4")
                await until(pilot, lambda: type(app.screen).__name__ == "ChatScreen")
                held.set()
                await until(
                    pilot,
                    lambda: any(
                        p.hosted and p.state == "reachable" for p in app.peer_book.peers.values()
                    ),
                    timeout=30,
                )
                hosted = next(url for url, p in app.peer_book.peers.items() if p.hosted)
                await until(pilot, lambda: chatting_with(app, hosted))
        finally:
            held.set()


async def test_chat_takes_the_saved_peer_once_the_hosted_server_it_waited_for_fails(
    tmp_path, monkeypatch
):
    """The review of a8a9204: Chat waits for a hosted server on its way, but only peers' changes
    made it choose again, and a start that fails changes no peer: Chat, shown while the demo
    started, stayed on no one, the saved peer the only one reachable. A server's change (its start
    failed) makes it choose again. The demo's start is held until Chat shows, then fails on a port
    another program holds."""
    held = _hold_hosted_starts(monkeypatch)
    folder = tmp_path / "config"
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        spec = replace(demo_spec(), port=taken.getsockname()[1])
        async with saved_agent(folder, "other"):
            app = ToolnexusApp(specs=[spec], peers=PeerBook(folder))
            try:
                async with app.run_test(size=(120, 40)) as pilot:
                    await until(
                        pilot,
                        lambda: [p.state for p in app.peer_book.peers.values()] == ["reachable"],
                    )
                    [saved_url] = app.peer_book.peers
                    await pilot.press("4")
                    await until(pilot, lambda: type(app.screen).__name__ == "ChatScreen")
                    assert not app.conversation.peer  # the demo is on its way
                    held.set()
                    await until(pilot, lambda: app.workspace.get(spec.name).state == "failed")
                    await until(pilot, lambda: chatting_with(app, saved_url))
            finally:
                held.set()


def picker_shows(app: ToolnexusApp) -> str:
    """What Chat's closed peer picker shows on screen (cut to its width, as the eye reads it)."""
    picker = app.screen.query_one("#chat-peer", Select)
    box = picker.region
    line = app.screen._compositor.render_strips()[box.y].text  # noqa: SLF001
    return line[box.x : box.right]


@pytest.mark.parametrize("size", [(80, 24), (120, 40)])
async def test_chats_picker_tells_apart_two_peers_of_one_name(tmp_path, size):
    """The look at f6e35d4: the hosted demo and a saved peer both named demo-desk; at 80 columns,
    a context id beside it, the picker showed the name alone for either, which hid that Chat
    talked to the other agent. Each shows what tells it apart: 'hosted', or its port."""
    folder = tmp_path / "config"
    async with saved_agent(folder, "demo-desk") as other:
        app = ToolnexusApp(specs=[demo_spec()], peers=PeerBook(folder))
        async with app.run_test(size=size) as pilot:
            peers = app.peer_book.peers
            await until(
                pilot, lambda: [p.state for p in peers.values()].count("reachable") == 2, timeout=30
            )
            hosted = next(url for url, p in peers.items() if p.hosted)
            await pilot.press("4")
            await until(pilot, lambda: chatting_with(app, hosted))
            await chat(app, pilot, "greet Ada")  # a context id beside the picker: its least room
            context = app.conversation.context_id
            await until(pilot, lambda: f"ctx {context}" in text_of(app, "#chat-context"))
            port = f":{urlsplit(other.url).port}"
            await until(pilot, lambda: "hosted" in picker_shows(app))
            assert port not in picker_shows(app)
            app.screen.query_one("#chat-peer", Select).value = other.url
            await until(pilot, lambda: chatting_with(app, other.url))
            await until(pilot, lambda: port in picker_shows(app))
            assert "hosted" not in picker_shows(app)
            assert picker_shows(app).startswith("demo-")  # the name still first
            await pilot.press("escape", "ctrl+l")  # the list open: each entry says which it is
            picker = app.screen.query_one("#chat-peer", Select)
            await until(pilot, lambda: picker.expanded)
            await pilot.pause(0.1)
            lines = [s.text for s in app.screen._compositor.render_strips()]  # noqa: SLF001
            listed = lines[picker.region.bottom : picker.region.bottom + 4]
            assert any("hosted" in row for row in listed), listed
            assert any(port in row and "hosted" not in row for row in listed), listed
            await pilot.press("escape")


async def test_the_palette_has_the_new_ways_in_and_the_copied_mcp_config_runs():
    """ctrl+p lists the desktop MCP config, the metrics URL and the browser for each hosted server;
    the copied config, run as a desktop host would (the official MCP client over stdio), serves it."""
    import os

    from mcp import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    spec = demo_spec()
    spec.metrics = True
    app = ToolnexusApp(specs=[spec])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: bool(app.workspace.running()))
        titles = {title: help_ for title, help_, _ in app.palette_commands()}
        assert "Copy desktop MCP config for demo-desk" in titles and "Open in a browser" in titles
        metrics = titles["Copy metrics URL of demo-desk"]
        assert metrics == app.workspace.running()[0].url + "/metrics"
        app.copy_mcp_config("demo-desk")
        entry = json.loads(app.clipboard)["mcpServers"]["demo-desk"]
    assert entry["args"][:2] == ["mcp", "--skills"] and Path(entry["args"][2]).is_absolute()
    params = StdioServerParameters(
        command=entry["command"], args=entry["args"], env=dict(os.environ)
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
        await client.initialize()
        assert [t.name for t in (await client.list_tools()).tools] == ["skill"]


async def test_escape_closes_the_help_panel_and_is_the_modes_own_key_otherwise():
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("question_mark")
        await until(pilot, lambda: bool(app.screen.query("HelpPanel")))
        await pilot.press("escape")
        await until(pilot, lambda: not app.screen.query("HelpPanel"))
        await pilot.press("4")  # Chat, its message box focused: Escape is its own key again
        await until(pilot, lambda: app.focused is not None and app.focused.id == "chat-input")
        await pilot.press("escape")
        await until(pilot, lambda: app.focused is not None and app.focused.id == "chat-scroll")


async def test_dialing_a_peer_again_while_it_dials_closes_every_client():
    """``v`` pressed three times fast dials three times at once: each dial waits for the one
    before, the last asked-for binding wins, and no client is left open for the collector (the
    unclosed-socket warning that made a TUI test fail now and then)."""
    import asyncio
    import gc
    import warnings

    import toolnexus as tn
    from tui.peers import Peer

    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="dialed")) as handle:
        peer = Peer(handle.url)

        async def dial(dialect: str) -> None:
            peer.dialect = dialect
            await peer.connect(None)

        await asyncio.gather(dial("0.3"), dial("1.0"), dial("rest"))
        assert (
            peer.state == "reachable"
            and peer.client is not None
            and peer.client.binding == "HTTP+JSON"
        )
        await peer.client.aclose()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gc.collect()
    assert not [str(w.message) for w in caught if issubclass(w.category, ResourceWarning)]


async def test_wire_rows_are_in_the_order_the_exchanges_began_and_keep_coming_past_the_logs_end():
    """A slow blocking send that began first is logged after the card GETs that began later (an
    exchange is logged when it ends); its row comes first all the same, stamped with its start.
    And once the wire log is full (it keeps the last N), new exchanges still appear, the oldest go."""
    import asyncio
    import collections

    import httpx

    from .test_pilot import send

    app = ToolnexusApp(specs=[demo_spec()])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: bool(app.workspace.running()))
        url = app.workspace.running()[0].url
        await until(
            pilot,
            lambda: url in app.peer_book.peers and app.peer_book.peers[url].state == "reachable",
        )
        app.book.traffic = collections.deque(maxlen=8)
        await pilot.press("5")
        app.screen.query_one(
            "#wire-filter", Input
        ).value = "dir:in"  # what the server received: ours only
        table = app.screen.query_one("#wire", RowTable)

        def rows() -> list[tuple[str, str, str]]:  # (start, method, url) of each row, top to bottom
            return [
                (str(r[0]), str(r[3]), str(r[6]))
                for r in (table.get_row_at(i) for i in range(table.row_count))
            ]

        # the slow send's task is working (its exchange began) before the GETs begin, and it is
        # canceled once they ended (its exchange ends after theirs): a fixed 0.2 s and a 0.6 s run
        # ordered them, which a loaded machine's late sends and slow GETs need not keep
        slow = asyncio.ensure_future(send(url, "slow 30", blocking=True, timeout=30))
        await until(
            pilot, lambda: any(v.state is TaskState.WORKING for v in app.book.tasks.values())
        )
        async with httpx.AsyncClient() as http:
            for i in range(3):
                assert (
                    await http.get(url + f"/.well-known/agent-card.json?early={i}")
                ).status_code == 200
            (task_id,) = app.book.tasks
            await rpc(http, url, "tasks/cancel", {"id": task_id})
        assert (await asyncio.wait_for(slow, 10))["status"]["state"] == "canceled"
        await until(
            pilot,
            lambda: (
                [m for _, m, _ in rows()].count("GET") >= 3
                and "message/send" in [m for _, m, _ in rows()]
            ),
        )
        ours = [(at, m, u) for at, m, u in rows() if m == "message/send" or "?early=" in u]
        assert [m for _, m, _ in ours] == ["message/send", "GET", "GET", "GET"]
        assert [at for at, _, _ in ours] == sorted(
            at for at, _, _ in ours
        )  # start times, ascending
        logged = [e for e in app.book.traffic if e.direction == "in"]
        assert logged.index(
            next(e for e in logged if e.rpc_method == "message/send")
        ) > logged.index(
            next(e for e in logged if "?early=0" in e.url)
        )  # logged after: it ended after
        async with httpx.AsyncClient() as http:  # past the log's end: it keeps 8
            for i in range(10):
                await http.get(url + f"/.well-known/agent-card.json?n={i}")
        await until(pilot, lambda: bool(rows()) and rows()[-1][2].endswith("?n=9"))
        assert len(rows()) <= 8
        late = [u[-4:] for _, _, u in rows() if "?n=" in u]
        assert (
            late == [f"?n={i}" for i in range(10 - len(late), 10)] and len(late) >= 6
        )  # the newest, in order
        await pilot.press("ctrl+q")


async def test_the_mcp_form_lists_on_entry_keeps_focus_and_the_endpoint_and_refuses_a_call_missing_arguments():
    import toolnexus as tn

    @tn.tool
    def add(a: int, b: int = 2) -> int:
        """Add two integers."""
        return a + b

    app = ToolnexusApp(specs=[demo_spec()])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: bool(app.workspace.running()))
        await pilot.press("6")  # the hosted demo's /mcp: listed on entering, no key needed
        await until(pilot, lambda: app.screen.query_one("#mcp-tools", DataTable).row_count >= 1)
        assert "skill" in tool_names(app)

        tk = await tn.create_toolkit(builtins=False, tools=[add])
        async with tk.serve(mcp=True) as served:
            url = app.screen.query_one("#mcp-url", Input)
            url.value = served.mcp_url
            url.focus()
            await pilot.press("enter")
            await until(pilot, lambda: tool_names(app) == ["add"])
            await until(pilot, lambda: bool(app.screen.query("#arg-1")))
            form = str(app.screen.query_one("#mcp-form").query(Static).nodes[1].render())
            assert "a  integer  required" in form
            assert (
                app.screen.query_one("#arg-1", Input).placeholder
                == "integer, optional: empty leaves it out"
            )
            # Tab goes round the form's fields, never out to the endpoint
            app.screen.query_one("#arg-0", Input).focus()
            await pilot.press("tab")
            assert app.focused is app.screen.query_one("#arg-1", Input)
            await pilot.press("tab")
            assert app.focused is app.screen.query_one("#arg-0", Input)
            await pilot.press("shift+tab")
            assert app.focused is app.screen.query_one("#arg-1", Input)
            # a required argument left empty: said, and nothing is sent
            calls = sum(e.rpc_method == "tools/call" for e in app.book.traffic)
            await pilot.press("ctrl+r")
            await until(
                pilot, lambda: "fill in the required argument: a" in text_of(app, "#mcp-result")
            )
            await pilot.pause(0.2)
            assert sum(e.rpc_method == "tools/call" for e in app.book.traffic) == calls
            # focusing the endpoint does not select it: a keystroke adds to it, does not replace it
            url.focus()
            await pilot.press("x")
            assert url.value == served.mcp_url + "x"
        await pilot.press("ctrl+q")


async def test_every_footer_fits_80_columns_and_the_chat_picker_is_a_key_and_a_palette_command_away():
    from textual.widgets import Footer, Select

    app = ToolnexusApp(specs=[demo_spec()])
    async with app.run_test(size=(80, 24)) as pilot:
        await until(pilot, lambda: bool(app.workspace.running()))
        hosted = app.workspace.running()[0].url
        await until(
            pilot,
            lambda: (
                hosted in app.peer_book.peers and app.peer_book.peers[hosted].state == "reachable"
            ),
        )
        for key in "123456":  # alt+digit: MCP's Esc walks out to its endpoint box, where 3 types
            await pilot.press("escape", f"alt+{key}")
            await pilot.pause(0.2)
            footer = app.screen.query_one(Footer)
            keys = [k for k in footer.query("FooterKey") if not k.has_class("-command-palette")]
            palette = footer.query_one(
                ".-command-palette"
            ).region.x  # docked right, over what reaches it
            assert all(k.region.right <= palette for k in keys), (
                key,
                palette,
                " ".join(f"{k.description}:{k.region.right}" for k in keys),
            )
        # the hints the footer leaves out are in ? (Peers: Auth, Remove, Blocking, Its tasks)
        await pilot.press("escape", "alt+3")
        await pilot.pause(0.1)
        assert "Chat" in [k.description for k in app.screen.query_one(Footer).query("FooterKey")]
        await pilot.press("question_mark")
        await until(pilot, lambda: bool(app.screen.query("HelpPanel")))
        import io

        from rich.console import Console

        shown = Console(width=120, record=True, file=io.StringIO())
        for table in app.screen.query("HelpPanel BindingsTable"):
            shown.print(table.render())
        panel = shown.export_text()
        assert all(word in panel for word in ("Auth", "Remove", "Blocking", "Its tasks"))
        await pilot.press("escape")
        # the picker: ctrl+l from Chat opens it; ctrl+p → "Chat with demo-desk" opens Chat on it
        titles = {title: run for title, _, run in app.palette_commands()}
        titles["Chat with demo-desk"]()
        await until(
            pilot,
            lambda: chatting_with(app, hosted),
        )
        await pilot.press("ctrl+l")
        await pilot.pause(0.1)
        picker = app.screen.query_one("#chat-peer", Select)
        assert picker.expanded and picker.value == hosted
        await pilot.press("escape")
        # a question open: its key (ctrl+f) joins Chat's footer, which still fits
        asked = app.conversation.say("a question")
        asked.text, app.conversation.waiting_task = "Which colour?", "77b00000"
        app.conversation.turns[-1].follow = "77b00000"
        app.screen._draw()
        await pilot.pause(0.1)
        keys = list(app.screen.query_one(Footer).query("FooterKey"))
        palette = app.screen.query_one(Footer).query_one(".-command-palette").region.x
        assert "New task" in [k.description for k in keys] and all(
            k.region.right <= palette for k in keys if not k.has_class("-command-palette")
        ), " ".join(f"{k.description}:{k.region.right}" for k in keys)
        await pilot.press("ctrl+q")


async def test_alt_digits_switch_modes_from_the_chat_box_where_digits_type():
    app = ToolnexusApp(specs=[demo_spec()])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: bool(app.workspace.running()))
        await pilot.press("4")
        box = app.screen.query_one("#chat-input", Input)
        box.focus()
        await pilot.press("1", "2")  # digits type into the message
        assert box.value == "12" and app.current_mode == "chat"
        await pilot.press("alt+2")
        await until(pilot, lambda: app.current_mode == "tasks")
        await pilot.press("alt+4")
        await until(pilot, lambda: app.current_mode == "chat")
        app.screen.query_one("#chat-input", Input).focus()
        await pilot.press(
            "trade_mark_sign"
        )  # what ESC 2 (alt+2, escape then 2) arrives as from tmux or a browser
        await until(pilot, lambda: app.current_mode == "tasks")
        app.screen.query_one("#filter", Input).focus()  # every mode's text box lets them through
        await pilot.press("cent_sign")  # ESC 4
        await until(pilot, lambda: app.current_mode == "chat")
        assert app.screen.query_one("#chat-input", Input).value == "12"  # nothing lost on the way
        assert "alt+1-6" in app.screen.query_one("#chat-input", Input).placeholder
        await pilot.press("ctrl+q")


async def test_the_palette_shows_a_peers_name_as_sent_never_as_markup():
    """A card's name reaches the palette ("Chat with NAME"), which reads its lines as markup: a
    hostile name shows as written, brackets and control characters included, and runs nothing."""
    from textual.command import CommandPalette
    from textual.widgets import OptionList

    import toolnexus as tn

    hostile = "[b]evil[/b] [link=http://example.invalid]x[/link]\x1b[31m"
    tk = await tn.create_toolkit(builtins=False)
    app = ToolnexusApp(specs=[])
    async with (
        tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name=hostile)) as served,
        app.run_test(size=(120, 40)) as pilot,
    ):
        app.connect_peer(app.peer_book.add(served.url))
        await until(pilot, lambda: app.peer_book.peers[served.url].state == "reachable")
        await pilot.press("ctrl+p")
        await until(pilot, lambda: isinstance(app.screen, CommandPalette))
        await pilot.press(*"chat with")
        options = app.screen.query_one(OptionList)
        await until(pilot, lambda: options.option_count >= 1)
        await pilot.pause(0.2)
        shown = [str(options.get_option_at_index(i).prompt) for i in range(options.option_count)]
        line = next(s for s in shown if "Chat with" in s)
        assert "[b]evil[/b] [link=http://example.invalid]x[/link]" in line and "\x1b" not in line
        await pilot.press("escape")
        await pilot.press("ctrl+q")


async def test_the_mcp_mode_is_reached_by_keyboard_alone():
    """From the tool list, Tab and Enter reach the argument form, Esc the endpoint; a call made
    with keys only is sent (focus stayed in the tool list, and ctrl+r said "fill in the required
    argument")."""
    app = ToolnexusApp(specs=[demo_spec()])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: bool(app.workspace.running()))
        await pilot.press("6")
        tools = app.screen.query_one("#mcp-tools", DataTable)
        # listed on entering, and the list takes the focus (applied after the listing's own turn)
        await until(
            pilot,
            lambda: (
                tools.row_count >= 1 and bool(app.screen.query("#arg-0")) and app.focused is tools
            ),
        )
        assert str(tools.get_row_at(0)[0]) == "skill"
        await pilot.press("tab")
        assert app.focused is app.screen.query_one("#arg-0", Input)
        await pilot.press(*"greet", "ctrl+r")
        await until(pilot, lambda: "<skill_content" in text_of(app, "#mcp-result"))
        await pilot.press("escape")
        assert app.focused is tools
        await pilot.press("u")  # Esc stays in the list while the session is open
        assert app.focused is app.screen.query_one("#mcp-url", Input)
        await pilot.press("tab")
        assert app.focused is app.screen.query_one("#mcp-headers", Input)
        await pilot.press("tab")
        assert app.focused is tools
        await pilot.press("enter")  # Enter on a tool: into its first argument
        assert app.focused is app.screen.query_one("#arg-0", Input)
        await pilot.press("escape", "shift+tab")
        assert app.focused is app.screen.query_one("#mcp-headers", Input)
        await pilot.press("ctrl+q")
