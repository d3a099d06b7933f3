"""What a user coming from a2a-handler expects of toolnexus-tui: file and data parts sent from
Chat and artifacts saved to disk, an auth panel per peer, MCP servers over stdio and with headers.
Every peer here is real: the official a2a-sdk server, toolnexus' own served agent, an MCP server
started as a subprocess."""

from __future__ import annotations

import base64
import json
import os
import shlex
from pathlib import Path

import pytest

pytest.importorskip("textual")

from textual.widgets import DataTable, Input  # noqa: E402

import toolnexus as tn  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.screens.chat import _label  # noqa: E402
from tui.screens.export import Prompt  # noqa: E402
from tui.widgets.safe import HangingStatic  # noqa: E402

from ..peers.sdk_server import sdk_server, takes_anything  # noqa: E402
from .test_handler_errors_and_streams import shown  # noqa: E402
from .test_pilot import chatting_with, open_chat, until  # noqa: E402


async def _answer(app: ToolnexusApp, pilot, text: str) -> None:
    await until(pilot, lambda: isinstance(app.screen, Prompt))
    box = app.screen.query_one(Input)
    box.value = text
    await pilot.press("enter")
    await until(pilot, lambda: not isinstance(app.screen, Prompt))


async def _chat_with(app: ToolnexusApp, pilot, url: str) -> None:
    """Add the peer at ``url``, wait until it is reachable, open Chat on it."""
    app.connect_peer(app.peer_book.add(url))
    await until(pilot, lambda: app.peer_book.peers[url].state == "reachable")
    await open_chat(app, pilot, url)


async def test_chat_sends_file_and_data_parts_and_saves_the_artifacts_safely(tmp_path: Path):
    report = tmp_path / "report.csv"
    report.write_bytes(b"city,temp\nOslo,-3\n\x00binary tail")
    out = tmp_path / "saved"
    app = ToolnexusApp(specs=[])
    async with sdk_server(shaped=takes_anything) as url, app.run_test(size=(120, 40)) as pilot:
        await _chat_with(app, pilot, url)
        # bad input first: a missing file and text that is not JSON are refused with the reason
        await pilot.press("ctrl+o")
        await _answer(app, pilot, str(tmp_path / "missing.pdf"))
        await pilot.press("ctrl+t")
        await _answer(app, pilot, "{city: Oslo")
        assert app.conversation.attachments == []
        notes = [n.message for n in app._notifications]
        assert any("missing.pdf" in n and "No such file" in n for n in notes), notes
        assert any(n.startswith("not JSON") for n in notes), notes
        await pilot.press("ctrl+o")
        await _answer(app, pilot, str(report))
        await pilot.press("ctrl+t")
        await _answer(app, pilot, '{"city": "Oslo", "days": [1, 2]}')
        assert "next message carries: file report.csv (text/csv, 30 B), data" in shown(
            app, "#chat-log"
        )
        app.screen.query_one("#chat-input", Input).value = "forecast please"
        await pilot.press("enter")
        await until(pilot, lambda: app.conversation.turns[-1].task_state is tn.TaskState.COMPLETED)
        assert app.conversation.attachments == []
        log = shown(app, "#chat-log")
        assert "echo: forecast please (+2 parts)" in log
        assert (
            "+ file escape.txt" not in log and "+ file ../../escape.txt" in log
        )  # shown as sent, saved safe
        assert "ctrl+s saves the artifacts" in log
        # the peer received the parts as sent: they come back byte for byte
        await pilot.press("ctrl+s")
        await _answer(app, pilot, str(out))
        files = sorted(p.name for p in out.iterdir())
        assert files == ["echoed-2.json", "escape.txt", "reply.txt", "report.csv"], files
        assert (out / "report.csv").read_bytes() == report.read_bytes()
        assert json.loads((out / "echoed-2.json").read_text()) == {"city": "Oslo", "days": [1, 2]}
        assert not (tmp_path / "escape.txt").exists()
        assert (out / "reply.txt").read_text() == "echo: forecast please (+2 parts)"
        assert any(
            n.startswith(f"saved 4 file(s) in {out}")
            for n in (m.message for m in app._notifications)
        )
        # saving again never overwrites
        await pilot.press("ctrl+s")
        await _answer(app, pilot, str(out))
        assert (out / "report-2.csv").read_bytes() == report.read_bytes()


def test_save_artifacts_lists_links_skips_bad_bytes_and_never_follows_a_link(tmp_path: Path):
    from toolnexus.protocol.model import Artifact, Part, Task, TaskStatus

    target = tmp_path / "victim.txt"
    target.write_text("keep me")
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "reply.txt").symlink_to(target)
    task = Task(
        "t1",
        "c1",
        TaskStatus(tn.TaskState.COMPLETED),
        artifacts=[
            Artifact([Part.of_text("the answer")], name="reply"),
            Artifact(
                [
                    Part(
                        "file",
                        url="https://elsewhere.example/x.pdf",
                        filename="x.pdf",
                        media_type="application/pdf",
                    ),
                    Part("file", raw="not base64!!", filename="broken.bin"),
                ],
                name="files",
            ),
        ],
    )
    saved = task.save_artifacts(folder)
    assert target.read_text() == "keep me"
    assert (folder / "reply-2.txt").read_text() == "the answer"
    assert (
        folder / "links.txt"
    ).read_text() == "x.pdf\tapplication/pdf\thttps://elsewhere.example/x.pdf\n"
    assert saved.skipped == ["artifact 2 part 2: its bytes are not valid base64"]
    assert "1 linked file(s) listed in links.txt, not downloaded" in saved.summary()


async def test_chat_says_which_parts_the_agents_card_does_not_take(tmp_path: Path):
    """The echo agent's card takes text only: the data part is not sent (the SDK would refuse
    it), and the chat says so under the turn, not silently."""
    app = ToolnexusApp(specs=[])
    async with sdk_server() as url, app.run_test(size=(120, 40)) as pilot:
        await _chat_with(app, pilot, url)
        await pilot.press("ctrl+t")
        await _answer(app, pilot, '{"city": "Oslo"}')
        app.screen.query_one("#chat-input", Input).value = "forecast please"
        await pilot.press("enter")
        await until(pilot, lambda: app.conversation.turns[-1].task_state is tn.TaskState.COMPLETED)
        log = shown(app, "#chat-log")
        assert "echo: forecast please" in log and "(+" not in log  # the text alone arrived
        assert (
            '⚠ the agent takes text/plain: data {"city": "Oslo"} (application/json) is not sent'
            in log
        )


async def test_the_auth_panel_sets_basic_and_api_key_credentials_and_saves_only_references(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    from textual.widgets import DataTable, Select

    from tui.peers import PeerBook

    from .test_peers_chat_and_wire import chat

    monkeypatch.setenv("TN_BASIC_PW", "pa55-w0rd")
    book = PeerBook(tmp_path / "config")
    tk = await tn.create_toolkit(builtins=False)
    app = ToolnexusApp(specs=[], peers=book)
    keyed = tk.serve(
        client=tn.demo_client(),
        a2a=tn.A2AConfig(name="keyed", auth={"apiKey": ["k-123456"], "header": "X-Team-Key"}),
    )
    async with (
        sdk_server(basic=("ada", "pa55-w0rd")) as sdk_url,
        keyed as h,
        app.run_test(size=(120, 40)) as pilot,
    ):
        for url in (sdk_url, h.url):
            app.connect_peer(book.add(url))
        await until(pilot, lambda: all(p.state == "reachable" for p in book.peers.values()))
        await open_chat(app, pilot, sdk_url)
        refused = await chat(app, pilot, "hello")
        assert "401" in refused.text, refused
        # the Auth tab offers what the card asks for: basic
        await pilot.press("escape", "3")  # escape leaves the message box, where 3 would be typed
        await until(pilot, lambda: type(app.screen).__name__ == "PeersScreen")
        table = app.screen.query_one("#peers", DataTable)
        table.focus()
        table.move_cursor(row=table.get_row_index(sdk_url))
        await pilot.press("h")
        await until(pilot, lambda: app.screen.query_one("#auth-kind", Select).value == "basic")
        assert "The card asks for: basic" in shown(app, "#auth-help")
        app.screen.query_one("#auth-name", Input).value = "ada"
        secret = app.screen.query_one("#auth-secret", Input)
        secret.value = "${TN_BASIC_PW}"
        secret.focus()
        await pilot.press("enter")
        await until(
            pilot,
            lambda: (
                book.peers[sdk_url].auth.kind == "basic"
                and book.peers[sdk_url].state == "reachable"
            ),
        )
        await pilot.press("4")
        await until(
            pilot,
            lambda: chatting_with(app, sdk_url),
        )
        ok = await chat(app, pilot, "hello again")
        assert ok.text == "echo: hello again"
        # the API key peer: its card names the header; a literal key works and is never saved
        await pilot.press("escape", "3")  # escape leaves the message box, where 3 would be typed
        await until(pilot, lambda: type(app.screen).__name__ == "PeersScreen")
        table = app.screen.query_one("#peers", DataTable)
        table.move_cursor(row=table.get_row_index(h.url))
        await pilot.press("h")
        await until(
            pilot, lambda: app.screen.query_one("#auth-name", Input).value.lower() == "x-team-key"
        )
        assert app.screen.query_one("#auth-kind", Select).value == "apikey"
        secret = app.screen.query_one("#auth-secret", Input)
        secret.focus()
        await pilot.press("enter")  # no secret yet: refused with the reason, nothing applied
        assert book.peers[h.url].auth.kind == "none"
        assert any("the secret is empty" in n.message for n in app._notifications)
        secret.value = "k-123456"
        secret.focus()
        await pilot.press("enter")
        await until(
            pilot,
            lambda: (
                book.peers[h.url].auth.kind == "apikey" and book.peers[h.url].state == "reachable"
            ),
        )
        assert any("kept for this session only" in n.message for n in app._notifications)
        await open_chat(app, pilot, h.url)
        assert (await chat(app, pilot, "keyed hello")).text == "You said: keyed hello"
        # the file keeps the reference and the key's header name, never a literal secret
        saved = (tmp_path / "config" / "peers-v1.json").read_text()
        entries = {e["url"]: e for e in json.loads(saved)["peers"]}
        assert entries[sdk_url]["auth"] == {
            "kind": "basic",
            "name": "ada",
            "secret": "${TN_BASIC_PW}",
        }
        assert entries[h.url]["auth"] == {"kind": "apikey", "name": "x-team-key", "secret": ""}
        assert "pa55" not in saved and "k-123456" not in saved
        # and the wire never shows either secret
        from dataclasses import asdict

        wire = json.dumps([asdict(e) for e in app.book.traffic])
        sends = [
            e.status
            for e in app.book.traffic
            if e.peer == "sdk-echo" and e.rpc_method == "SendMessage"
        ]
        assert sends[:2] == [401, 200], sends  # refused without the credential, answered with it
        basic = base64.b64encode(b"ada:pa55-w0rd").decode()
        assert "pa55-w0rd" not in wire and "k-123456" not in wire and basic not in wire


async def test_mcp_mode_starts_a_stdio_server_from_a_command_and_sends_headers_to_an_http_one(
    monkeypatch: pytest.MonkeyPatch,
):
    import shlex

    from textual.widgets import DataTable

    from ..test_mcp import NOTES

    monkeypatch.setenv("TN_MCP_TOKEN", "mcp-s3cret-token")
    tk = await tn.create_toolkit(builtins=False, tools=[tn.tool(lambda a, b: a * b, name="times")])
    app = ToolnexusApp(specs=[])
    served = tk.serve(mcp=tn.MCPServeConfig(auth=tn.Auth.bearer("mcp-s3cret-token")))
    async with served as h, app.run_test(size=(120, 40)) as pilot:
        await pilot.press("6")
        await until(pilot, lambda: type(app.screen).__name__ == "MCPScreen")
        url_box = app.screen.query_one("#mcp-url", Input)
        tools = app.screen.query_one("#mcp-tools", DataTable)
        # a stdio server from a command line: listed, called, and every message on the Wire
        url_box.value = shlex.join(NOTES)
        url_box.focus()
        await pilot.press("enter")
        await until(pilot, lambda: tools.row_count == 6, timeout=20)
        await until(pilot, lambda: bool(app.screen.query("#arg-1")))
        await pilot.pause(0.2)  # the listing and the first row's highlight both build the form
        app.screen.query_one("#arg-0", Input).value = "2"
        app.screen.query_one("#arg-1", Input).value = "3"
        await pilot.press("ctrl+r")
        await until(pilot, lambda: getattr(app.screen, "last_result", None) is not None, timeout=20)
        assert app.screen.last_result.output == "5", app.screen.last_result
        stdio = [e for e in app.book.traffic if e.method == "STDIO"]
        assert {"tools/list", "tools/call"} <= {e.rpc_method for e in stdio}
        call = next(e for e in stdio if e.rpc_method == "tools/call")
        assert '"arguments":{"a":2,"b":3}' in call.request_body and '"5"' in call.response_body
        assert call.peer.startswith("stdio: ") and "notes_server.py" in call.peer
        # a command that fails says why, with what the server wrote on stderr
        url_box.value = shlex.join([NOTES[0], "-c", "import sys; sys.exit('no config file')"])
        url_box.focus()
        await pilot.press("enter")
        await until(pilot, lambda: "✘" in shown(app, "#mcp-result"), timeout=20)
        assert "no config file" in shown(app, "#mcp-result") and tools.row_count == 0
        # an HTTP endpoint that wants a token: refused without, listed with the header (an env reference)
        url_box.value = h.mcp_url
        url_box.focus()
        await pilot.press("enter")
        await until(pilot, lambda: "HTTP 401" in shown(app, "#mcp-result"), timeout=20)
        headers = app.screen.query_one("#mcp-headers", Input)
        headers.value = "Authorization: Bearer ${TN_MCP_TOKEN}"
        headers.focus()
        await pilot.press("enter")
        await until(pilot, lambda: tools.row_count == 1, timeout=20)
        sent = [e for e in app.book.traffic if e.url.startswith(h.mcp_url) and e.status == 200]
        assert sent and all(e.request_headers.get("authorization") == "Bearer ***" for e in sent)
        assert "mcp-s3cret-token" not in repr(app.book.traffic)


async def test_chat_turns_push_notifications_on_with_one_key_and_shows_them_on_the_timeline():
    from toolnexus.hosting import demo_spec
    from tui.screens.tasks import _wire

    app = ToolnexusApp(specs=[demo_spec("push-desk")])
    async with sdk_server() as plain, app.run_test(size=(120, 40)) as pilot:
        # a peer whose card offers no push notifications: the key says so, nothing is started
        await _chat_with(app, pilot, plain)
        await pilot.press("ctrl+y")
        await until(
            pilot, lambda: any("does not offer push" in n.message for n in app._notifications)
        )
        assert app.webhook is None and not app.conversation.push
        # the hosted demo agent does: on, then a message's every state arrives at the app's webhook
        hosted = await _hosted_url(app, pilot)
        app.chat_peer = hosted
        app.screen._peers()
        await until(
            pilot,
            lambda: chatting_with(app, hosted),
        )
        await pilot.press("ctrl+y")
        await until(pilot, lambda: app.conversation.push)
        assert "push on" in shown(app, "#chat-context")
        app.screen.query_one("#chat-input", Input).value = "hello with push"
        await pilot.press("enter")
        await until(pilot, lambda: app.conversation.turns[-1].task_state is tn.TaskState.COMPLETED)
        task_id = app.conversation.turns[-1].task_id
        await app.webhook.wait(task_id, state=tn.TaskState.COMPLETED)
        await until(pilot, lambda: "submitted → working → completed" in shown(app, "#chat-log"))
        assert "completed (unsigned)" in shown(app, "#chat-log")  # its card is not signed
        # on the task's own timeline, beside its other exchanges: both sides of each delivery, the
        # hosted agent's POST (→) and the webhook's receipt (←)
        await until(
            pilot,
            lambda: (
                sum(ev.rpc_method == "push" and ev.task_id == task_id for ev in app.book.traffic)
                >= 8
            ),
        )
        timeline = _wire(app.book.tasks[task_id], app.book.traffic).plain
        # submitted, working, the reply (an artifact update), completed
        assert timeline.count("← push 200") == 4 and timeline.count("→ push 200") == 4, timeline


async def test_a_signed_agents_push_notifications_show_their_verdict(tmp_path: Path):
    """A hosted agent with a signing key (its config file's a2a.signingKey): its card verified
    when dialled, its keys given to the webhook, each notification's signature checked and said."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import ec

    from toolnexus.hosting import demo_spec

    key = ec.generate_private_key(ec.SECP256R1())
    pem = tmp_path / "agent-key.pem"
    pem.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )
    )
    config = tmp_path / "toolnexus.json"
    config.write_text(json.dumps({"a2a": {"signingKey": str(pem)}}))
    spec = demo_spec("signed-desk")
    spec.config = str(config)
    kid = tn.SigningKey.load(pem.read_bytes()).kid
    app = ToolnexusApp(specs=[spec])
    async with app.run_test(size=(120, 40)) as pilot:
        hosted = await _hosted_url(app, pilot)
        card = app.peer_book.peers[hosted].client.card
        assert card.signatures is not None and card.signatures.valid, card.signatures
        await open_chat(app, pilot, hosted)
        await pilot.press("ctrl+y")
        await until(pilot, lambda: app.conversation.push)
        app.screen.query_one("#chat-input", Input).value = "hello with push"
        await pilot.press("enter")
        await until(pilot, lambda: app.conversation.turns[-1].task_state is tn.TaskState.COMPLETED)
        task_id = app.conversation.turns[-1].task_id
        await app.webhook.wait(task_id, state=tn.TaskState.COMPLETED)
        await until(
            pilot, lambda: f"completed (signed by '{kid}' (ES256))" in shown(app, "#chat-log")
        )
        assert app.webhook.refused_for(task_id) == []


async def _hosted_url(app: ToolnexusApp, pilot) -> str:
    await until(
        pilot,
        lambda: any(p.hosted and p.state == "reachable" for p in app.peer_book.peers.values()),
    )
    return next(url for url, p in app.peer_book.peers.items() if p.hosted)


async def test_a_rest_only_peer_is_chatted_with_and_any_peer_can_be_forced_to_rest():
    from toolnexus.hosting import demo_spec

    app = ToolnexusApp(specs=[demo_spec()])
    async with sdk_server(binding="HTTP+JSON") as url, app.run_test(size=(120, 40)) as pilot:
        await _chat_with(app, pilot, url)  # its card offers only HTTP+JSON: picked by itself
        assert app.peer_book.peers[url].client.binding == "HTTP+JSON"
        assert "[rest]" in _label(app.peer_book.peers[url], url)
        app.screen.query_one("#chat-input", Input).value = "hello over rest"
        await pilot.press("enter")
        await until(pilot, lambda: "echo: hello over rest" in shown(app, "#chat-log"))
        assert any(
            e.url == url + "/message:send" and e.rpc_method == "SendMessage"
            for e in app.book.traffic
        )

        # the hosted demo server speaks both: v three times (auto, 0.3, 1.0, rest) forces HTTP+JSON
        await until(pilot, lambda: bool(app.workspace.running()))
        hosted = app.workspace.running()[0].url
        await until(pilot, lambda: hosted in app.peer_book.peers)
        await pilot.press("escape", "3")
        await pilot.pause(0.1)
        table = app.screen.query_one("#peers", DataTable)
        table.focus()
        table.move_cursor(row=table.get_row_index(hosted))
        await pilot.press("v", "v", "v")
        peer = app.peer_book.peers[hosted]
        await until(
            pilot,
            lambda: (
                peer.dialect == "rest"
                and peer.state == "reachable"
                and peer.client.binding == "HTTP+JSON"
            ),
        )
        assert "rest!" in str(table.get_row(hosted)[3])
        await open_chat(app, pilot, hosted)
        app.screen.query_one("#chat-input", Input).value = "hi rest"
        await pilot.press("enter")
        await until(pilot, lambda: "You said: hi rest" in shown(app, "#chat-log"))
        # both sides of that exchange on the one wire: our request out, the hosted server's in
        sent = [e for e in app.book.traffic if e.url == hosted + "/message:send"]
        assert {e.direction for e in sent} == {"out", "in"}
        # once more: grpc, which this server does not serve: said so, not a crash
        await pilot.press("escape", "3")
        await pilot.pause(0.1)
        table = app.screen.query_one("#peers", DataTable)
        table.focus()
        table.move_cursor(row=table.get_row_index(hosted))
        await pilot.press("v")
        await until(pilot, lambda: peer.dialect == "grpc" and peer.state == "unreachable")
        assert "no gRPC interface" in peer.error


async def test_doctor_on_a_peer_with_one_key():
    """``o`` runs the doctor; the Doctor tab fills in as the findings come (shown while the peer
    holds its answers) and ends with the very lines the command prints, the verdict first."""
    import asyncio
    import re

    from ..test_doctor import broken_peer

    hold = asyncio.Event()
    app = ToolnexusApp(specs=[])
    async with broken_peer("wrong-not-found", hold) as url, app.run_test(size=(120, 40)) as pilot:
        app.connect_peer(app.peer_book.add(url))
        await until(pilot, lambda: app.peer_book.peers[url].state == "reachable")
        await pilot.press("3")
        await pilot.pause(0.1)
        table = app.screen.query_one("#peers", DataTable)
        table.focus()
        table.move_cursor(row=table.get_row_index(url))
        await pilot.press("o")
        await until(pilot, lambda: "✔ card: found at" in shown(app, "#doctor-view"))
        assert shown(app, "#doctor-view").startswith("checking … ")  # live, before the end
        hold.set()
        await until(pilot, lambda: "warning" in shown(app, "#doctor-view"))
        report = str(app.screen.query_one("#doctor-view", HangingStatic).whole)  # unwrapped
        assert report.startswith("0 errors, 2 warnings")
        assert "not TaskNotFound (-32001)" in report and "fix: answer TaskNotFoundError" in report
        assert any(title == "Doctor" for title, _, _ in app.palette_commands())
        cli = (await tn.doctor(url)).text().splitlines()[1:-1]  # the same peer, as the CLI says it
    ids = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")
    assert ids.sub("ID", report).splitlines()[2:] == [ids.sub("ID", line) for line in cli]


async def test_thousands_of_artifacts_are_saved_off_the_ui_loop_with_progress(
    tmp_path: Path, monkeypatch
):
    """3,000 parts called a.txt, hostile names and a links.txt from the official SDK's agent: saved in
    a worker thread (the screen keeps answering keys meanwhile), a progress line while it runs, every
    name safe for a shell, the list of links under its own name."""
    import threading

    from toolnexus.protocol import files

    from ..peers.sdk_server import HOSTILE_NAMES

    out = tmp_path / "saved"
    where: list[bool] = []
    lines: list[str] = []
    real_save = files.save_artifacts

    def watched(artifacts, folder, progress=None):  # type: ignore[no-untyped-def]
        where.append(threading.current_thread() is threading.main_thread())

        def told(done: int, total: int) -> None:
            progress(done, total)
            if done in (1, total):  # what the line said, read back once the UI has drawn it
                lines.append(f"{done}/{total}")

        return real_save(artifacts, folder, told)

    monkeypatch.setattr(files, "save_artifacts", watched)
    app = ToolnexusApp(specs=[])
    async with sdk_server() as url, app.run_test(size=(120, 40)) as pilot:
        await _chat_with(app, pilot, url)
        app.screen.query_one("#chat-input", Input).value = "many files 3000"
        await pilot.press("enter")
        await until(
            pilot,
            lambda: app.conversation.turns[-1].task_state is tn.TaskState.COMPLETED,
            timeout=30,
        )
        await pilot.press("ctrl+s")
        await _answer(app, pilot, str(out))
        saving = app.screen.query_one("#chat-saving")
        await until(
            pilot,
            lambda: any(n.message.startswith("saved ") for n in app._notifications),
            timeout=60,
        )
        assert where == [False]  # the worker's thread, never the UI loop's
        assert not saving.has_class("busy")  # the line goes once it is done ...
        total = 3000 + len(HOSTILE_NAMES) + 2  # ... having said how far it got
        assert lines == ["1/" + str(total), f"{total}/{total}"]
        assert f"{total:,} / {total:,} parts" in shown(app, "#chat-saving")
        names = os.listdir(out)
        assert len([n for n in names if n.startswith("a")]) >= 3000
        assert all(shlex.quote(n) == n and not n.startswith("-") for n in names), names
        assert (
            out / "links.txt"
        ).read_text() == "x.pdf\tapplication/pdf\thttps://elsewhere.example/x.pdf\n"
        assert (out / "links-2.txt").read_text() == "links.txt"  # the peer's own file of that name
        note = next(n.message for n in app._notifications if n.message.startswith("saved "))
        assert note.startswith(
            f"saved {total} file(s) in {out}"
        )  # the link is one line of links.txt, the reply one file and "listed in links.txt" in note


async def test_the_client_doctor_is_one_key_and_judges_live():
    """``O`` in Peers starts the client doctor: the Doctor tab says where to point a client, then
    each request's findings as they come (a fault named before the doctor stops); ``O`` again stops
    it and the report ends with what the client never tried."""
    import httpx

    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("3")
        await pilot.pause(0.1)
        await pilot.press("O")
        await until(pilot, lambda: "point your A2A client at http" in shown(app, "#doctor-view"))
        url = shown(app, "#doctor-view").split("point your A2A client at ")[1].split()[0]
        async with httpx.AsyncClient(timeout=30) as http:  # a 1.0 call without its version header
            message = {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "hi"}]}
            await http.post(
                url + "/",
                json={
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "SendMessage",
                    "params": {"message": message},
                },
            )
        await until(pilot, lambda: "✘ version header" in shown(app, "#doctor-view"))
        assert "checking …" in shown(app, "#doctor-view")  # live: the report is not done
        await pilot.press("O")
        await until(pilot, lambda: "not tried: a stream" in shown(app, "#doctor-view"))
        report = shown(app, "#doctor-view")
        assert "client doctor (stopped)" in report and "1 error" in report


async def test_the_auth_panel_asks_a_peer_for_extensions_and_saves_them(tmp_path: Path):
    """A peer that requires an extension refuses the chat (-32008) until the extension is typed
    in the Auth tab: then every call asks for it (A2A-Extensions), and the peer book keeps it."""
    from textual.widgets import DataTable

    from tui.peers import PeerBook

    from .test_peers_chat_and_wire import chat

    uri = "https://toolnexus.example/ext/depth/v1"
    book = PeerBook(tmp_path / "config")
    tk = await tn.create_toolkit(builtins=False)
    app = ToolnexusApp(specs=[], peers=book)
    strict = tk.serve(
        client=tn.demo_client(),
        a2a=tn.A2AConfig(name="strict", extensions=[{"uri": uri, "required": True}]),
    )
    async with strict as h, app.run_test(size=(120, 40)) as pilot:
        app.connect_peer(book.add(h.url))
        await until(pilot, lambda: book.peers[h.url].state == "reachable")
        await open_chat(app, pilot, h.url)
        refused = await chat(app, pilot, "hello")
        assert "-32008" in refused.text or "requires" in refused.text, refused
        await pilot.press("escape", "3")
        await until(pilot, lambda: type(app.screen).__name__ == "PeersScreen")
        table = app.screen.query_one("#peers", DataTable)
        table.focus()
        table.move_cursor(row=table.get_row_index(h.url))
        await pilot.press("h")
        box = app.screen.query_one("#peer-extensions", Input)
        box.value = f"{uri}, {uri}"
        box.focus()
        await pilot.press("enter")
        await until(
            pilot,
            lambda: (
                book.peers[h.url].extensions == [uri] and book.peers[h.url].state == "reachable"
            ),
        )
        await pilot.press("4")
        await until(
            pilot,
            lambda: chatting_with(app, h.url),
        )
        assert (await chat(app, pilot, "hello again")).text == "You said: hello again"
        saved = json.loads((tmp_path / "config" / "peers-v1.json").read_text())
        assert [e.get("extensions") for e in saved["peers"]] == [[uri]]
        reloaded = PeerBook(tmp_path / "config")
        reloaded.load()
        assert reloaded.peers[h.url].extensions == [uri]


async def test_peers_shows_the_extended_card_the_peers_credentials_get(tmp_path: Path):
    """A peer whose card declares an extended card: the Card tab says why it is not shown (401)
    until the Auth tab holds a credential, then lists the skills only it has."""
    from textual.widgets import DataTable, Select

    from tui.peers import PeerBook

    book = PeerBook(tmp_path / "config")
    tk = await tn.create_toolkit(
        builtins=False,
        skills=[
            tn.SkillDef("greet", "Says hello"),
            tn.SkillDef("ledger", "Signed-in callers only"),
        ],
    )
    app = ToolnexusApp(specs=[], peers=book)
    served = tk.serve(
        client=tn.demo_client(),
        a2a=tn.A2AConfig(
            name="books", auth=tn.Auth.bearer("b00ks-token"), extended_skills=["ledger"]
        ),
    )
    async with served as h, app.run_test(size=(120, 40)) as pilot:
        app.connect_peer(book.add(h.url))
        await until(pilot, lambda: book.peers[h.url].state == "reachable")
        await pilot.press("3")
        await until(pilot, lambda: type(app.screen).__name__ == "PeersScreen")
        table = app.screen.query_one("#peers", DataTable)
        table.focus()
        table.move_cursor(row=table.get_row_index(h.url))
        await until(pilot, lambda: "extended card: declared" in shown(app, "#card-view"))
        assert "401" in shown(app, "#card-view") and "ledger" not in shown(app, "#card-view")
        await pilot.press("h")
        app.screen.query_one("#auth-kind", Select).value = "bearer"
        secret = app.screen.query_one("#auth-secret", Input)
        secret.value = "b00ks-token"
        secret.focus()
        await pilot.press("enter")
        await until(pilot, lambda: book.peers[h.url].extended is not None)
        app.screen.query_one("#peer-detail").active = "p-card"
        await until(pilot, lambda: "ledger" in shown(app, "#card-view"))
        assert "extended card (with this peer's credentials)" in shown(app, "#card-view")
