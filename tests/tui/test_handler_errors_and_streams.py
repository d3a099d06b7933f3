"""Daily use of toolnexus-tui: no handler exception ends the app, MCP errors read as errors, and
every stream is on the wire log."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.widgets import DataTable, Input, Static  # noqa: E402

import toolnexus as tn  # noqa: E402
from toolnexus import TurnState  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.widgets.rowtable import RowTable  # noqa: E402

from .test_pilot import chatting_with, open_chat, until  # noqa: E402


def shown(app: ToolnexusApp, selector: str) -> str:
    return str(app.screen.query_one(selector, Static).render())


async def _tk(name: str) -> tn.Toolkit:
    def fn(a: int, b: int = 1) -> int:
        return a + b

    fn.__doc__ = f"The {name} tool."
    return await tn.create_toolkit(builtins=False, tools=[tn.tool(fn, name=name)])


async def test_listing_one_mcp_endpoint_after_another_never_mounts_a_form_twice():
    first, second = await _tk("first_tool"), await _tk("second_tool")
    app = ToolnexusApp(specs=[])
    async with (
        first.serve(mcp=True) as one,
        second.serve(mcp=True) as two,
        app.run_test(size=(120, 40)) as pilot,
    ):
        await pilot.press("6")
        await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
        box = app.screen.query_one("#mcp-url", Input)
        for _ in range(3):  # the listing's own form and the row highlight's raced: DuplicateIds
            for url in (one.mcp_url, two.mcp_url):
                box.value = url
                box.focus()
                await pilot.press("enter")
                await pilot.pause(0.05)
        await until(
            pilot,
            lambda: (
                app.screen.query_one("#mcp-tools", DataTable).row_count == 1
                and app.screen.tools
                and app.screen.tools[0]["name"] == "second_tool"
            ),
        )
        await until(pilot, lambda: len(app.screen.query("#arg-0")) == 1)
        assert app.is_running and not app.handler_errors


async def test_an_mcp_401_says_so_and_clears_the_last_endpoint():
    open_tk, locked_tk = await _tk("open_tool"), await _tk("locked_tool")
    app = ToolnexusApp(specs=[])
    locked_cfg = tn.MCPServeConfig(auth=tn.Auth.bearer("s3cret-token"))
    async with (
        open_tk.serve(mcp=True) as opened,
        locked_tk.serve(mcp=locked_cfg) as locked,
        app.run_test(size=(120, 40)) as pilot,
    ):
        await pilot.press("6")
        await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
        box = app.screen.query_one("#mcp-url", Input)
        box.value = opened.mcp_url
        box.focus()
        await pilot.press("enter")
        await until(pilot, lambda: app.screen.query_one("#mcp-tools", DataTable).row_count == 1)
        box.value = locked.mcp_url
        box.focus()
        await pilot.press("enter")
        await until(pilot, lambda: "HTTP 401" in shown(app, "#mcp-result"))
        assert "authentication required" in shown(app, "#mcp-result")
        assert "ExceptionGroup" not in shown(app, "#mcp-result") and "TaskGroup" not in shown(
            app, "#mcp-result"
        )
        assert app.screen.query_one("#mcp-tools", DataTable).row_count == 0  # no stale tools
        assert not app.screen.query("#arg-0")


async def test_an_exception_in_a_handler_is_shown_and_the_app_stays_up(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setattr(ToolnexusApp, "strict_handlers", False)
    tk = await tn.create_toolkit(builtins=False)
    app = ToolnexusApp(specs=[])
    async with (
        tk.serve(client=tn.demo_client(), a2a=True) as served,
        app.run_test(size=(120, 40)) as pilot,
    ):
        await pilot.pause(0.1)

        async def broken() -> None:
            raise RuntimeError("a bug in some handler")

        app.run_worker(broken())
        await until(pilot, lambda: bool(app.handler_errors))
        await pilot.pause(0.1)
        assert app.is_running and served.running
        assert any("a bug in some handler" in str(n.message) for n in app._notifications)
        await pilot.press("2")  # and it still works
        await pilot.pause(0.1)
        assert app.screen.query_one("#tasks", RowTable) is not None


async def test_a_stream_that_ends_normally_is_on_the_wire():
    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=True) as h:
        async with tn.A2AClient(h.url) as client:
            task = await client.send("slow 1")
            states = [ev.state async for ev in client.watch(task.id)]
            assert states[-1] is tn.TaskState.COMPLETED
            await asyncio.sleep(0)
        streamed = [
            e
            for e in client.traffic.events
            if e.rpc_method in ("SubscribeToTask", "tasks/resubscribe")
        ]
        assert (
            streamed
            and streamed[0].frames
            and streamed[0].status == 200
            and streamed[0].error is None
        )


async def test_a_hosted_servers_inbound_exchanges_are_on_the_wire_and_beside_the_task(tmp_path):
    import httpx

    from toolnexus.hosting import demo_spec

    from ..serve.wire import v10_message

    app = ToolnexusApp(specs=[demo_spec()], export_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: bool(app.workspace.running()))
        url = app.workspace.running()[0].url
        async with httpx.AsyncClient() as http:  # a client the TUI knows nothing about
            sent = (
                await http.post(
                    url,
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "SendMessage",
                        "params": {"message": v10_message("hello")},
                    },
                    headers={"A2A-Version": "1.0", "Authorization": "Bearer never-shown-1234"},
                )
            ).json()
            task_id = sent["result"]["task"]["id"]
            await asyncio.sleep(0.3)
            await http.post(
                url,
                json={"jsonrpc": "2.0", "id": 2, "method": "GetTask", "params": {"id": task_id}},
                headers={"A2A-Version": "1.0"},
            )
        await until(pilot, lambda: sum(1 for e in app.book.traffic if e.task_id == task_id) >= 2)
        inbound = [e for e in app.book.traffic if e.direction == "in" and e.task_id == task_id]
        assert [e.rpc_method for e in inbound] == ["SendMessage", "GetTask"]
        assert inbound[0].server == "demo-desk" and inbound[0].status == 200
        assert inbound[0].request_headers["authorization"] == "Bearer ***"
        from dataclasses import asdict

        assert all(
            "never-shown-1234" not in str(vars(e)) + str(asdict(e)) + repr(e)
            for e in app.book.traffic
        )
        # mode 5 shows them, mode 2 puts them on the task's timeline
        await pilot.press("5")
        await pilot.pause(0.2)
        app.screen.query_one("#wire-filter", Input).value = f"dir:in task:{task_id[:8]}"
        await pilot.pause(0.2)
        assert app.screen.query_one("#wire", RowTable).row_count == 2
        await pilot.press("escape", "2")
        await until(pilot, lambda: app.screen.query_one("#tasks", RowTable).row_count >= 1)
        table = app.screen.query_one("#tasks", RowTable)
        table.move_cursor(row=table.get_row_index(task_id))
        app.screen.query_one("#detail").active = "d-wire"
        await pilot.pause(0.2)
        wire = shown(app, "#task-wire")
        assert "← SendMessage 200" in wire and "← GetTask 200" in wire and "completed" in wire
        assert wire.index("submitted") < wire.index("← GetTask")


async def test_tasks_show_the_trace_tree_across_hosted_agents_live(tmp_path):
    from toolnexus.protocol.model import TaskState

    from ..serve.test_hops import chain

    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(120, 40)) as pilot:
        async with chain(tmp_path, events=app.workspace.events) as (a, b, c, _):
            async with tn.A2AClient(a.url) as caller:
                asked = await caller.send("please approve the plan", blocking=True)
                await pilot.press("2")
                await until(pilot, lambda: app.screen.query_one("#tasks", RowTable).row_count == 3)
                table = app.screen.query_one("#tasks", RowTable)
                table.move_cursor(row=table.get_row_index(asked.id))
                app.screen.query_one("#detail").active = "d-trace"
                # drawn once the cursor's move and the tab's activation are handled: waited for,
                # where a fixed 0.2 s found it not drawn yet at load 21 (IndexError at tree[2])
                await until(pilot, lambda: "◀ this task" in shown(app, "#task-trace"))
                tree = shown(app, "#task-trace").splitlines()
                assert (
                    tree[0].startswith("trace ")
                    and asked.id[:8] in tree[2]
                    and "◀ this task" in tree[2]
                )
                assert [line.split()[:2] for line in tree[2:]] == [
                    ["?", "input-required"],
                    ["→", "agent-b"],
                    ["?", "input-required"],
                    ["→", "agent-c"],
                    ["?", "input-required"],
                ]
                assert [len(line) - len(line.lstrip()) for line in tree[2:]] == [0, 2, 4, 6, 8]
                done = await caller.send(
                    "yes", task_id=asked.id, context_id=asked.context_id, blocking=True
                )
            assert done.state is TaskState.COMPLETED
            # live: C finishing redraws the open tree of A, two hops up
            await until(pilot, lambda: shown(app, "#task-trace").count("completed") == 5)
        await pilot.press("ctrl+q")


async def test_a_hosted_server_with_auth_is_called_with_its_own_token(
    monkeypatch: pytest.MonkeyPatch,
):
    from toolnexus.hosting import ServerSpec

    from .test_peers_chat_and_wire import chat

    monkeypatch.setenv("TN_OWN_TOKEN", "own-token-5678")
    spec = ServerSpec(
        name="locked-desk", skills=[], a2a=True, mcp=True, auth_token_env="TN_OWN_TOKEN"
    )
    app = ToolnexusApp(specs=[spec])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(
            pilot,
            lambda: any(p.hosted and p.state == "reachable" for p in app.peer_book.peers.values()),
        )
        url = next(u for u, p in app.peer_book.peers.items() if p.hosted)
        assert app.peer_book.peers[url].headers == {"Authorization": "Bearer ${TN_OWN_TOKEN}"}
        await open_chat(app, pilot, url)
        reply = await chat(app, pilot, "hello there")
        assert (
            "authentication required" not in reply.text
            and reply.task_state is tn.TaskState.COMPLETED
        )
        await pilot.press("escape", "6")  # the MCP mode lists the hosted server's /mcp on entry
        await until(
            pilot, lambda: "tool" in shown(app, "#mcp-result") or "✘" in shown(app, "#mcp-result")
        )
        assert "✘" not in shown(app, "#mcp-result")
        assert all("own-token-5678" not in str(vars(e)) for e in app.book.traffic)


async def test_the_palette_lists_every_action_with_its_key_before_anything_is_typed():
    from textual.command import CommandList, CommandPalette

    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("1")
        await pilot.pause(0.1)
        await pilot.press("ctrl+p")
        await until(
            pilot,
            lambda: (
                isinstance(app.screen, CommandPalette)
                and app.screen.query_one(CommandList).option_count > 8
            ),
        )
        listing = app.screen.query_one(CommandList)
        prompts = [str(listing.get_option_at_index(i).prompt) for i in range(listing.option_count)]
        text = "\n".join(prompts)
        for title in ("Servers", "Tasks", "Wire", "New server", "Export session"):
            assert title in text, title
        assert (
            "Start/stop" in text and "s in this mode" in text
        )  # a binding of the Servers mode, with its key
        await pilot.press("escape")


async def test_created_servers_come_back_on_their_ports_and_can_be_edited_and_deleted(tmp_path):
    import json

    from textual.widgets import Button

    from tui.peers import PeerBook
    from tui.screens.server_form import ServerForm

    folder = tmp_path / "config"
    app = ToolnexusApp(specs=[], peers=PeerBook(folder))
    async with app.run_test(size=(110, 44)) as pilot:
        await pilot.press("n")
        await pilot.pause(0.1)
        app.screen.query_one("#f-name", Input).value = "kept-desk"
        app.screen.query_one("#form-start", Button).press()
        await until(pilot, lambda: not isinstance(app.screen, ServerForm))
        port = app.workspace.get("kept-desk").handle.port
        await pilot.press("r")  # a restart keeps the port
        await until(
            pilot,
            lambda: (
                app.workspace.get("kept-desk").state == "running"
                and app.workspace.get("kept-desk").handle is not None
            ),
        )
        await pilot.pause(0.3)
        assert app.workspace.get("kept-desk").handle.port == port
        saved = json.loads((folder / "servers-v1.json").read_text())["servers"]
        assert [(s["name"], s["port"]) for s in saved] == [("kept-desk", port)]
        assert oct((folder / "servers-v1.json").stat().st_mode & 0o777) == "0o600"
        await pilot.press("ctrl+q")
    again = ToolnexusApp(specs=[], peers=PeerBook(folder))  # the next launch
    async with again.run_test(size=(110, 44)) as pilot:
        await until(
            pilot,
            lambda: (
                "kept-desk" in again.workspace.servers
                and again.workspace.get("kept-desk").state == "running"
            ),
        )
        assert again.workspace.get("kept-desk").url.endswith(f":{port}")
        # edit: rename it, turn MCP off; it restarts under the new name, the file follows
        await pilot.press("e")
        await pilot.pause(0.1)
        assert isinstance(again.screen, ServerForm)
        again.screen.query_one("#f-name", Input).value = "renamed-desk"
        again.screen.query_one("#form-start", Button).press()
        await until(pilot, lambda: not isinstance(again.screen, ServerForm))
        assert list(again.workspace.servers) == ["renamed-desk"]
        saved = json.loads((folder / "servers-v1.json").read_text())["servers"]
        assert [s["name"] for s in saved] == ["renamed-desk"] and saved[0]["port"] == port
        await pilot.press("d")  # it asks first
        await until(pilot, lambda: type(again.screen).__name__ == "Confirm")
        await pilot.press("y")
        await until(pilot, lambda: not again.workspace.servers)
        assert json.loads((folder / "servers-v1.json").read_text())["servers"] == []
        await pilot.press("ctrl+q")


async def test_exports_ask_where_and_say_where_they_went(tmp_path, monkeypatch: pytest.MonkeyPatch):
    from toolnexus.hosting import demo_spec
    from tui.screens.export import ExportPrompt

    monkeypatch.setenv("TOOLNEXUS_EXPORT_DIR", str(tmp_path / "default-exports"))
    monkeypatch.chdir(tmp_path)
    app = ToolnexusApp(
        specs=[demo_spec()]
    )  # no export_dir: the user's data folder (here overridden)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: bool(app.workspace.running()))
        await pilot.press("5")
        await pilot.pause(0.1)
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, ExportPrompt))
        box = app.screen.query_one("#export-path", Input)
        assert box.value.startswith(str(tmp_path / "default-exports" / "toolnexus-session-"))
        box.value = str(tmp_path / "chosen" / "my-session.json")
        await pilot.press("enter")
        await until(pilot, lambda: (tmp_path / "chosen" / "my-session.json").exists())
        assert any(
            str(tmp_path / "chosen" / "my-session.json") in str(n.message)
            for n in app._notifications
        )
        await pilot.press("e")
        await until(pilot, lambda: isinstance(app.screen, ExportPrompt))
        await pilot.press("escape")  # cancel: nothing written
        await pilot.pause(0.1)
    assert not list(tmp_path.glob("*.json")) and not (tmp_path / "default-exports").exists()


async def test_an_export_is_written_off_the_screens_loop_and_a_failure_is_said(tmp_path):

    from tui.screens.export import ExportPrompt

    app = ToolnexusApp(specs=[], export_dir=tmp_path)
    async with app.run_test(size=(100, 30)) as pilot:
        threads = []

        def write(path: Path) -> None:
            threads.append(threading.current_thread())
            path.write_text("x")

        app.ask_export("a thing", tmp_path / "thing.txt", write)
        await until(pilot, lambda: isinstance(app.screen, ExportPrompt))
        await pilot.press("enter")
        await until(pilot, lambda: any("exported to" in n.message for n in app._notifications))
        assert (tmp_path / "thing.txt").read_text() == "x" and threads[
            0
        ] is not threading.main_thread()
        (tmp_path / "a-file").write_text("not a folder")
        app.ask_export("a thing", tmp_path / "a-file" / "thing.txt", write)
        await until(pilot, lambda: isinstance(app.screen, ExportPrompt))
        await pilot.press("enter")
        await until(
            pilot,
            lambda: any(
                n.message.startswith("cannot write") and n.severity == "error"
                for n in app._notifications
            ),
        )
        await pilot.press("ctrl+q")


async def test_the_wire_saves_as_a_cassette_that_replays(tmp_path):
    from toolnexus.debug.cassette import load
    from toolnexus.debug.replay import ReplayPeer
    from toolnexus.hosting import demo_spec
    from tui.screens.export import ExportPrompt

    app = ToolnexusApp(specs=[demo_spec()], export_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(
            pilot,
            lambda: any(ev.rpc_method is None and ev.direction == "out" for ev in app.book.traffic),
        )
        url = next(iter(app.workspace.running())).url
        await pilot.press("5")
        await pilot.pause(0.1)
        await pilot.press("k")
        await until(pilot, lambda: isinstance(app.screen, ExportPrompt))
        box = app.screen.query_one("#export-path", Input)
        assert box.value.startswith(str(tmp_path / "toolnexus-session-")) and box.value.endswith(
            ".jsonl"
        )
        box.value = str(tmp_path / "wire.jsonl")
        await pilot.press("enter")
        await until(pilot, lambda: (tmp_path / "wire.jsonl").exists())
        await pilot.press("ctrl+q")
    tape = load(tmp_path / "wire.jsonl")
    assert {x.direction for x in tape} == {
        "in",
        "out",
    }  # what the app sent and what its server received
    async with ReplayPeer(tape, origin=url) as peer:
        assert (await tn.fetch_card(peer.url)).name == "demo-desk"


async def test_copy_as_curl_keeps_env_references_and_says_when_a_secret_is_masked(
    monkeypatch: pytest.MonkeyPatch,
):
    monkeypatch.setenv("TN_CURL_TOKEN", "curl-secret-42")
    tk = await tn.create_toolkit(builtins=False)
    app = ToolnexusApp(specs=[])
    async with (
        tk.serve(
            client=tn.demo_client(), a2a=tn.A2AConfig(auth=tn.Auth.bearer("curl-secret-42"))
        ) as h,
        app.run_test(size=(120, 40)) as pilot,
    ):
        app.connect_peer(app.peer_book.add(h.url, {"Authorization": "Bearer ${TN_CURL_TOKEN}"}))
        await until(pilot, lambda: app.peer_book.peers[h.url].state == "reachable")
        await pilot.press("5")
        await pilot.pause(0.2)
        wire = app.screen.query_one("#wire", RowTable)
        wire.focus()
        wire.move_cursor(row=0)
        await pilot.pause(0.1)
        await pilot.press("c")
        await pilot.pause(0.1)
        assert '"authorization: Bearer ${TN_CURL_TOKEN}"' in app.screen.last_curl
        assert "curl-secret-42" not in app.screen.last_curl


async def test_typed_text_goes_to_the_focused_box_and_escape_leaves_it():
    from toolnexus.hosting import demo_spec
    from tui.screens.server_form import ServerForm

    app = ToolnexusApp(specs=[demo_spec()])
    async with app.run_test(size=(120, 40)) as pilot:
        await until(
            pilot,
            lambda: any(p.hosted and p.state == "reachable" for p in app.peer_book.peers.values()),
        )
        await pilot.press("n")
        await until(pilot, lambda: isinstance(app.screen, ServerForm))
        assert app.focused is app.screen.query_one("#f-name", Input)  # the form opens ready to type
        await pilot.press("escape")
        for _ in range(2):  # chat, left and visited again: the message box has the keys
            await pilot.press("4")
            await until(pilot, lambda: app.current_mode == "chat")  # a loaded machine is slow
            box = app.screen.query_one("#chat-input", Input)
            assert app.focused is box
            box.value = ""
            await pilot.press("a", "c", "1", "2")
            assert box.value == "ac12" and app.current_mode == "chat"
            await pilot.press("escape", "1")
            await until(pilot, lambda: app.current_mode == "servers")
        await pilot.press("6")
        await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
        app.screen.query_one("#mcp-url", Input).focus()
        await pilot.press("5")  # typed into the URL box, not a mode switch
        assert app.current_mode == "mcp"
        await pilot.press("escape")
        assert app.focused is app.screen.query_one("#mcp-tools", DataTable)
        await pilot.press("1")
        await pilot.pause(0.1)
        assert app.current_mode == "servers"


async def test_a_lost_connection_is_its_own_state_and_ctrl_r_follows_the_task_again(tmp_path):
    import signal

    from ..helpers import Served

    store = f"file:{tmp_path / 'tasks'}"
    app = ToolnexusApp(specs=[])
    peer = Served("--store", store)  # a peer of its own process: it can die as peers do
    async with peer:
        url = (await peer.until(lambda lines: peer.events("started")))[0]["url"]
        async with app.run_test(size=(120, 40)) as pilot:
            app.connect_peer(app.peer_book.add(url))
            await until(pilot, lambda: app.peer_book.peers[url].state == "reachable")
            await open_chat(app, pilot, url)
            box = app.screen.query_one("#chat-input", Input)
            box.value = "slow 3"
            await pilot.press("enter")
            await until(
                pilot, lambda: app.conversation.turns and app.conversation.turns[-1].task_id
            )
            peer.proc.send_signal(
                signal.SIGKILL
            )  # the peer goes away mid-task, its connections cut
            await until(
                pilot, lambda: app.conversation.turns[-1].state is TurnState.LOST, timeout=15
            )
            assert "ctrl+r: follow the task again" in shown(app, "#chat-log")
            assert "connection lost" in shown(app, "#chat-log") and "✘" not in shown(
                app, "#chat-log"
            )
            await until(pilot, lambda: app.peer_book.peers[url].state == "unreachable")
            again = Served("--store", store, "--port", url.rsplit(":", 1)[1])
            async with again:
                await again.until(lambda lines: again.events("started"))
                await pilot.press(
                    "ctrl+r"
                )  # follow the same task again: the restart failed it, and says why
                await until(
                    pilot, lambda: app.conversation.turns[-1].task_state is tn.TaskState.FAILED
                )
                assert app.conversation.turns[-1].text == "interrupted by restart"


async def test_each_peer_keeps_its_conversation_and_a_running_task_can_be_cancelled():
    from textual.widgets import Select

    from .test_peers_chat_and_wire import chat

    one, two = await tn.create_toolkit(builtins=False), await tn.create_toolkit(builtins=False)
    app = ToolnexusApp(specs=[])
    async with (
        one.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="one")) as a,
        two.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="two")) as b,
        app.run_test(size=(120, 40)) as pilot,
    ):
        for h in (a, b):
            app.connect_peer(app.peer_book.add(h.url))
        await until(
            pilot, lambda: all(p.state == "reachable" for p in app.peer_book.peers.values())
        )
        await open_chat(app, pilot, a.url)
        first = await chat(app, pilot, "hello one")
        assert first.text == "You said: hello one"
        app.screen.query_one("#chat-peer", Select).value = b.url
        await until(
            pilot,
            lambda: chatting_with(app, b.url),
        )
        assert app.conversation.turns == []
        await chat(app, pilot, "hello two")
        app.screen.query_one("#chat-peer", Select).value = a.url
        await until(
            pilot,
            lambda: chatting_with(app, a.url),
        )
        assert [turn.text for turn in app.conversation.turns] == [
            "hello one",
            "You said: hello one",
        ]
        # cancel the running task of the last reply
        box = app.screen.query_one("#chat-input", Input)
        box.value = "slow 20"
        await pilot.press("enter")
        await until(pilot, lambda: app.conversation.turns[-1].task_state is tn.TaskState.WORKING)
        await pilot.press("ctrl+x")
        await until(pilot, lambda: app.conversation.turns[-1].task_state is tn.TaskState.CANCELED)


async def test_a_peers_tasks_are_listed_and_any_task_can_be_attached_to_by_id():
    import httpx

    from tui.screens.export import Prompt

    from ..serve.wire import v10_message

    tk = await tn.create_toolkit(builtins=False)
    app = ToolnexusApp(specs=[])
    async with (
        tk.serve(client=tn.demo_client(), a2a=True) as h,
        app.run_test(size=(120, 40)) as pilot,
    ):
        async with httpx.AsyncClient() as http:  # a task someone else started
            made = (
                await http.post(
                    h.url,
                    json={
                        "jsonrpc": "2.0",
                        "id": 1,
                        "method": "SendMessage",
                        "params": {"message": v10_message("slow 1")},
                    },
                    headers={"A2A-Version": "1.0"},
                )
            ).json()["result"]["task"]
        app.connect_peer(app.peer_book.add(h.url))
        await until(pilot, lambda: app.peer_book.peers[h.url].state == "reachable")
        await pilot.press("3")
        await pilot.pause(0.1)
        table = app.screen.query_one("#peers", DataTable)
        table.focus()
        table.move_cursor(row=table.get_row_index(h.url))
        await pilot.press("t")
        await until(pilot, lambda: made["id"] in shown(app, "#remote-tasks"))
        assert "1 task(s)" in shown(app, "#remote-tasks")
        await open_chat(app, pilot, h.url)
        await pilot.press("ctrl+g")
        await until(pilot, lambda: isinstance(app.screen, Prompt))
        app.screen.query_one("#prompt-text", Input).value = made["id"]
        await pilot.press("enter")
        await until(
            pilot,
            lambda: (
                app.conversation.turns
                and app.conversation.turns[-1].task_state is tn.TaskState.COMPLETED
            ),
        )
        assert app.conversation.turns[-1].task_id == made["id"]
        assert app.conversation.context_id == made["contextId"]


async def _launch_demo(folder) -> tuple[int, list[str]]:
    """One launch of the app with the demo: the demo's port, and what the app said of a new port."""
    from toolnexus.hosting import demo_spec
    from tui.peers import PeerBook

    app = ToolnexusApp(specs=[demo_spec()], peers=PeerBook(folder))
    async with app.run_test(size=(110, 34)) as pilot:
        await until(pilot, lambda: app.workspace.get("demo-desk").state == "running")
        port = app.workspace.get("demo-desk").handle.port
        said = [n.message for n in app._notifications if n.title == "New port"]
        await pilot.press("ctrl+q")
    return port, said


async def test_the_demo_keeps_its_port_across_launches(tmp_path):
    """A curl line copied from the demo still works after a restart of the app: the demo starts on
    the port it had last time (one launch per test: a second Textual app in the same test left the
    first one's message pumps to the collector under a loaded suite)."""
    import json

    from tui.saved import write_private

    from ..helpers import free_port

    folder = tmp_path / "config"
    last = free_port()  # a port free now, as the last launch's would be
    write_private(folder / "servers-v1.json", {"servers": [], "ports": {"demo-desk": last}})
    port, said = await _launch_demo(folder)
    assert port == last and not said
    assert json.loads((folder / "servers-v1.json").read_text())["ports"] == {"demo-desk": last}


async def test_the_demo_starts_elsewhere_when_its_port_is_taken_and_says_so(tmp_path):
    import json
    import socket

    from tui.saved import write_private

    folder = tmp_path / "config"
    holder = socket.socket()
    holder.bind(("127.0.0.1", 0))  # another program has the demo's port of last time
    holder.listen()
    taken = holder.getsockname()[1]
    write_private(folder / "servers-v1.json", {"servers": [], "ports": {"demo-desk": taken}})
    try:
        port, said = await _launch_demo(folder)
    finally:
        holder.close()
    assert port != taken
    assert said and f"port {taken}" in said[0]
    assert json.loads((folder / "servers-v1.json").read_text())["ports"] == {"demo-desk": port}


async def test_a_copy_is_shown_as_it_is_and_can_be_saved_to_a_file(
    tmp_path, monkeypatch: pytest.MonkeyPatch
):
    """What was copied is shown (never read as markup: a peer's text may hold [brackets]); the last
    copy saves to a file from the palette, for a terminal that did not take it; GNU screen is named."""
    from tui.screens.export import ExportPrompt

    monkeypatch.delenv("TMUX", raising=False)
    monkeypatch.setenv("STY", "1234.pts-0.host")
    app = ToolnexusApp(specs=[], export_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        app.ask_save_copy()
        await pilot.pause(0.1)
        assert any(n.message == "nothing copied yet" for n in app._notifications)
        text = 'curl -d \'{"a": "[bold]x[/bold] [link=http://evil]y[/link]"}\' http://127.0.0.1:1/'
        app.copy_text(text, "exchange as curl")
        await until(
            pilot,
            lambda: any("copied the exchange as curl" in n.message for n in app._notifications),
        )
        said = next(n for n in app._notifications if "copied the exchange as curl" in n.message)
        assert text in said.message and not said.markup and "GNU screen" in said.message
        assert app.clipboard == text
        titles = {title: run for title, _, run in app.palette_commands()}
        titles["Save the last copy to a file"]()
        await until(pilot, lambda: isinstance(app.screen, ExportPrompt))
        await pilot.press("enter")
        await until(pilot, lambda: bool(list(tmp_path.glob("toolnexus-copy-*.txt"))))
        (saved,) = tmp_path.glob("toolnexus-copy-*.txt")
        assert saved.read_text(encoding="utf-8") == text + "\n"
        await pilot.press("ctrl+q")


async def test_a_worker_awaiting_its_server_as_the_app_closes_leaves_no_traceback(monkeypatch):
    """Textual removes a screen's widgets before it cancels the screen's workers: the MCP listing,
    awaiting its server as the app closed, resumed among removed widgets (NoMatches '#mcp-result'
    or '#mcp-prompts', a failed worker at the exit; seen in MCP key tests ending on the first rows
    while the listing went on). Here the listing's last step is held until its pane is removed."""
    from tui.screens.mcp import MCPScreen

    from .test_mcp_inspector import connect, table

    gate = asyncio.Event()
    page = MCPScreen._task_page

    async def held(self, **kwargs):
        await gate.wait()
        return await page(self, **kwargs)

    monkeypatch.setattr(MCPScreen, "_task_page", held)
    tk = await _tk("only_tool")
    app = ToolnexusApp(specs=[])
    async with tk.serve(mcp=True) as served:
        async with app.run_test(size=(120, 40)) as pilot:
            await connect(app, pilot, served.mcp_url)
            await until(pilot, lambda: table(app, "#mcp-tools").row_count == 1)
            pane = app.screen.query_one("#mcp-result", Static)

            async def open_when_removed() -> None:
                while pane.is_attached:
                    await asyncio.sleep(0)
                gate.set()

            opener = asyncio.ensure_future(open_when_removed())
        opener.cancel()
    assert gate.is_set() and app.return_code in (None, 0) and not app.handler_errors
