"""%toolnexus through a real IPython shell: every subcommand and every mistake."""

from __future__ import annotations

import asyncio
import html
import socket

import httpx
import pytest

pytest.importorskip("IPython")
pytest.importorskip("ipywidgets")

from cryptography.hazmat.primitives.asymmetric import ec  # noqa: E402
from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402
from starlette.applications import Starlette  # noqa: E402
from starlette.responses import JSONResponse  # noqa: E402
from starlette.routing import Route  # noqa: E402

import toolnexus as tn  # noqa: E402
from notebook_ext.session import NotebookSession  # noqa: E402
from notebook_ext.widgets import CardWidget, ChatWidget, ServerWidget  # noqa: E402
from toolnexus import TaskState, TurnState  # noqa: E402
from toolnexus.errors import ConfigError, MissingExtra, PeerError  # noqa: E402
from toolnexus.http.server import AsgiServer  # noqa: E402
from toolnexus.stores import STORE_FORMS  # noqa: E402

from ..helpers import arun_cli  # noqa: E402
from ..peers.sdk_server import sdk_server, takes_anything  # noqa: E402
from ..serve.wire import rpc, v03_message  # noqa: E402


class RaisingShell(InteractiveShell):
    """A shell whose cells raise instead of printing tracebacks (as jupysql tests magics)."""

    def run_cell(self, *args, **kwargs):
        result = super().run_cell(*args, **kwargs)
        result.raise_error()
        return result


@pytest.fixture
async def ip():
    shell = RaisingShell.instance()
    shell.run_line_magic("load_ext", "toolnexus")
    yield shell
    closing = (
        NotebookSession.shutdown()
    )  # on the test's loop, where its servers run: stopped, not cancelled
    if closing is not None:  # (None: the test shut the session down itself)
        await closing


async def wait_running(server, timeout=5.0):
    for _ in range(int(timeout / 0.02)):
        if server.state != "starting":
            return
        await asyncio.sleep(0.02)


async def test_serve_send_tasks_list_stop(ip):
    server = ip.run_line_magic("toolnexus", "serve --name m-desk --mcp")
    assert isinstance(server.widget, ServerWidget) and server.state == "starting"
    await wait_running(server)
    assert server.state == "running" and server.url.startswith("http://127.0.0.1:")
    sent = ip.run_line_magic("toolnexus", f"send {server.url} greet the shell")
    task = await sent.done()
    assert task.state.value == "completed" and sent.state == "completed"
    assert task.reply.startswith('Using the "greet" skill')
    cell = ip.run_cell_magic(
        "toolnexus", f"send {server.url} --context {task.context_id}", "second line\n"
    )
    second = await cell.done()
    assert second.context_id == task.context_id and second.reply.endswith(
        "(message 2 of this conversation)"
    )
    await asyncio.sleep(0.3)
    server.widget.refresh()
    assert [r["state"] for r in server.widget.rows] == ["completed", "completed"]
    server.widget.pick.value = task.id
    assert (
        "greet the shell" in server.widget.detail.value and "<table>" in server.widget.detail.value
    )
    listing = ip.run_line_magic("toolnexus", "list")
    assert "m-desk" in listing.data and "running" in listing.data
    tasks = ip.run_line_magic("toolnexus", "tasks m-desk")
    assert tasks.data.count('data-state="completed"') == 2
    ip.run_line_magic("toolnexus", "stop m-desk")
    await asyncio.sleep(0.3)
    assert server.state == "stopped"


async def test_a_server_served_again_right_after_stop_keeps_its_own_widget_live(ip):
    """ "stop" then "serve" of one name in a row: the first server's "stopped" comes after the new
    widget began; it is the old run's, and the new widget keeps showing its own server's tasks."""
    first = ip.run_line_magic("toolnexus", "serve --name again")
    await wait_running(first)
    ip.run_line_magic("toolnexus", "stop again")
    second = ip.run_line_magic("toolnexus", "serve --name again")  # before the stop has run
    await wait_running(second)
    assert first.url != second.url and second.state == "running"
    task = await ip.run_line_magic("toolnexus", f"send {second.url} greet the shell").done()
    for _ in range(50):
        await asyncio.sleep(0.05)
        second.widget.refresh()
        if second.widget.rows:
            break
    assert [(r["id"], r["state"]) for r in second.widget.rows] == [(task.id, "completed")]
    assert second.widget.status == "running"
    ip.run_line_magic("toolnexus", "stop again")


async def test_threaded_server_serves_blocking_cells(ip):
    handle = ip.run_line_magic("toolnexus", "serve --name t-desk --thread")
    r = httpx.post(
        handle.url + "/",
        json={
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {"message": v03_message("from a blocking cell")},
        },
        timeout=10,
    )
    assert r.json()["result"]["status"]["state"] == "completed"  # a blocking call did not freeze it
    await asyncio.sleep(0.3)
    handle.widget.refresh()
    assert [row["state"] for row in handle.widget.rows] == ["completed"]
    ip.run_line_magic("toolnexus", "stop --all")
    assert "t-desk" not in NotebookSession.get().threaded


async def test_threaded_server_is_built_like_a_workspace_one(ip, monkeypatch):
    """Thread servers take their profiles from the same place as the workspace's: auth, description."""
    from toolnexus.hosting import ServerSpec

    monkeypatch.setenv("TN_NB_TOKEN", "nb-s3cret")
    session = NotebookSession.get()
    handle = session.start_thread(
        ServerSpec(
            name="locked", mcp=True, description="a locked desk", auth_token_env="TN_NB_TOKEN"
        )
    )
    try:
        assert httpx.post(handle.url + "/", json={}, timeout=10).status_code == 401
        assert httpx.post(handle.url + "/mcp", json={}, timeout=10).status_code == 401
        async with httpx.AsyncClient(timeout=10) as http:
            reply = await rpc(
                http,
                handle.url,
                "message/send",
                {"message": v03_message("let me in")},
                headers={"Authorization": "Bearer nb-s3cret"},
            )
        assert reply["result"]["status"]["state"] == "completed"
        card = httpx.get(handle.url + "/.well-known/agent-card.json", timeout=10).json()
        assert card["description"] == "a locked desk"
    finally:
        await session.stop("locked")
    monkeypatch.delenv("TN_NB_TOKEN")
    with pytest.raises(ConfigError, match="TN_NB_TOKEN is not set"):
        session.start_thread(ServerSpec(name="locked", auth_token_env="TN_NB_TOKEN"))
    assert "locked" not in session.threaded


@pytest.mark.parametrize(
    "line, needle",
    [
        ("", "%toolnexus serve"),
        ("nonsense", "invalid choice: 'nonsense'"),
        ("serve --port x", "argument --port: invalid int value"),
        ("serve --skills /no/such/folder", "skills folder not found"),
        ("serve --model gpt4", "model must be demo"),
        ("stop", "%toolnexus stop NAME | --all"),
        ("stop nobody", "no server named 'nobody'"),
        ("tasks nobody", "no server named 'nobody'"),
        ("send", "the following arguments are required"),
        ("send 'unclosed", "No closing quotation"),
    ],
)
async def test_mistakes_are_one_line_usage_errors(ip, line, needle):
    with pytest.raises(UsageError, match=needle.replace("(", r"\(").replace("|", r"\|")):
        ip.run_line_magic("toolnexus", line)


async def test_port_in_use_and_duplicate_names(ip):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        with pytest.raises(UsageError, match="cannot listen on 127.0.0.1"):
            ip.run_line_magic("toolnexus", f"serve --name busy --port {s.getsockname()[1]}")
    server = ip.run_line_magic("toolnexus", "serve --name twice")
    await wait_running(server)
    again = ip.run_line_magic("toolnexus", "serve --name twice")  # run again: the same server
    assert again.server is server.server and again.widget is server.widget
    with pytest.raises(UsageError, match="%%toolnexus takes send"):
        ip.run_cell_magic("toolnexus", "list", "a body")


async def test_doctor_shows_an_html_report(ip):
    """The widget fills in as the findings come (shown while the peer holds its answers), a row
    per finding in the command's words and order, every peer string escaped."""
    import html
    import re

    from toolnexus.debug.report import entry_row

    from ..test_doctor import broken_peer

    server = ip.run_line_magic("toolnexus", "serve --name doc-desk")
    await wait_running(server)
    healthy = ip.run_line_magic("toolnexus", f"doctor {server.url} --send")
    report = await healthy.done()
    assert (
        not report.failed("error")
        and "JSONRPC 1.x" in healthy.view.value
        and "✔" in healthy.view.value
    )
    async with broken_peer("ansi-name") as url:
        evil = await ip.run_line_magic("toolnexus", f"doctor {url}").done()
    assert evil is not None and "\x1b" not in evil.html() and "&#x27;evil␛[2J" in evil.html()
    assert repr(healthy) == "<DoctorWidget (shown above)>"
    hold = asyncio.Event()
    async with broken_peer("wrong-not-found", hold) as url:
        live = ip.run_line_magic("toolnexus", f"doctor {url}")
        for _ in range(500):
            if "found at /.well-known/agent-card.json" in live.view.value:
                break
            await asyncio.sleep(0.02)
        assert "<b>checking…</b>" in live.view.value  # shown before the end
        hold.set()
        done = await live.done()  # drawn whole when done
    rows = re.findall(r"<tr data-severity=.*?</tr>", live.view.value)
    assert rows == [entry_row(e) for e in done.entries()] and len(rows) == len(done.findings)
    assert f"<b>{html.escape(done.summary)}</b>" in live.view.value


async def test_the_client_doctor_widget_judges_live(ip):
    """``%toolnexus doctor --client``: the widget says where to point a client and fills in as
    its requests come; ``await d.stop()`` ends it with what the client never tried."""
    import toolnexus as tn

    d = ip.run_line_magic("toolnexus", "doctor --client")
    for _ in range(500):
        if d.url:
            break
        await asyncio.sleep(0.02)
    assert d.url in d.head.value and not d.stop_button.disabled
    async with tn.A2AClient(d.url) as client:
        await client.send("hello", blocking=True)
    for _ in range(500):
        if "speaks 1.0" in d.view.value:
            break
        await asyncio.sleep(0.02)
    assert "<b>checking…</b>" in d.view.value  # live, before the end
    report = await d.stop()
    assert report.done and not report.failed("warning") and "not tried" in d.view.value
    assert repr(d) == "<ClientDoctorWidget (shown above)>"


async def test_the_card_widget_shows_a_signatures_verdict(ip):
    """The official SDK's signed card: verified through the key set its jku names."""
    async with sdk_server(compat=True, features=True) as url:
        card = ip.run_line_magic("toolnexus", f"card {url}")
        await card.done()
    assert card.card.signatures.valid
    assert (
        ">valid: signature 1 (alg &#x27;ES256&#x27;, kid &#x27;card-key-1&#x27;) verified with a "
        "key from its jku"
    ) in card.view.value, card.view.value


async def test_card_and_chat(ip):
    server = ip.run_line_magic("toolnexus", "serve --name c-desk")
    await wait_running(server)
    card = ip.run_line_magic("toolnexus", f"card {server.url}")
    await card.done()
    assert card.card.name == "c-desk" and card.report.ok
    assert "offers 1.0 and 0.3" in card.view.value and not card.chat_button.disabled
    assert "<b>signature</b> <span" in card.view.value and ">unsigned</span>" in card.view.value
    code, out, err = await arun_cli("card", server.url, "--validate")  # the CLI's count, the same
    [cost] = [line.strip() for line in out.splitlines() if line.startswith("  cost: ")]
    assert code == 0 and "tokens (tiktoken" in cost, out + err
    assert f'<div class="toolnexus-muted">{html.escape(cost)}</div>' in card.view.value
    card.chat_button.click()
    assert isinstance(card.chat_area.children[0], ChatWidget)
    assert repr(card) == "<CardWidget (shown above)>"
    chat = ip.run_line_magic("toolnexus", f"chat {server.url}")
    await asyncio.sleep(0.2)
    chat.say("please confirm the refund")
    await chat.wait()
    assert chat.turns[-1].task_state is TaskState.INPUT_REQUIRED and chat.waiting_task
    assert chat.turns[-1].state is TurnState.ASKED and not chat.cancel_button.disabled
    asked = chat.turns[-1]
    assert (
        chat.answer_box.layout.display is None and chat.answer_box.value
    )  # shown, ticked: the answer
    assert (
        f"task {asked.task_id[:8]} asks" in chat.view.value
        and "your next message answers it" in chat.view.value
    )
    chat.answer_box.value = False  # a new task instead; the question stays open
    assert "starts a new task" in chat.view.value
    chat.say("meanwhile")
    await chat.wait()
    assert chat.turns[-1].task_id != asked.task_id and chat.waiting_task == asked.task_id
    chat.answer_box.value = True
    chat.say("yes")
    await chat.wait()
    assert chat.turns[-1].task_state is TaskState.COMPLETED and chat.cancel_button.disabled
    assert (
        chat.turns[-1].text.startswith("Request approved (yes)")
        and chat.turns[-1].task_id == asked.task_id
    )
    assert chat.answer_box.layout.display == "none" and "asks</b>" not in chat.view.value
    first_context = chat.context_id
    chat.say("and another")
    await chat.wait()
    assert (
        chat.context_id == first_context
        and "(message 2 of this conversation)" in chat.turns[-1].text
    )
    chat.new_conversation()
    chat.say("fresh")
    await chat.wait()
    assert chat.context_id != first_context and chat.turns[-1].text == "You said: fresh"
    async with httpx.AsyncClient() as http:  # the served agent saw all of it
        r = await rpc(http, server.url, "tasks/get", {"id": chat.turns[-1].task_id})
    assert r["result"]["status"]["state"] == "completed"


async def test_a_chat_whose_peer_is_down_is_retried_once_it_is_up(ip):
    with socket.socket() as s:  # a port nothing listens on yet
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    chat = ChatWidget(f"http://127.0.0.1:{port}")
    chat.say("hello there")
    await chat.wait()
    assert chat.turns[-1].state is TurnState.LOST and chat.conversation.lost is chat.turns[-1]
    assert "connection lost" in chat.view.value and not chat.retry_button.disabled
    server = ip.run_line_magic("toolnexus", f"serve --name late-desk --port {port}")
    await wait_running(server)
    chat.retry_button.click()
    await chat.wait()
    assert (
        chat.turns[-1].task_state is TaskState.COMPLETED
        and chat.turns[-1].text == "You said: hello there"
    )
    assert len(chat.turns) == 2 and chat.retry_button.disabled and chat.conversation.lost is None


async def test_unreachable_peer_shows_an_error_not_a_crash(ip):
    sent = ip.run_line_magic("toolnexus", "send http://127.0.0.1:1 hello")
    with pytest.raises(PeerError, match="cannot fetch the agent card") as caught:
        await sent.done()  # never None: the one-line reason
    assert caught.value._render_traceback_() == [
        f"PeerError: {caught.value}"
    ]  # one line in Jupyter
    assert sent.state == "error" and "cannot fetch the agent card" in sent.error
    card = ip.run_line_magic("toolnexus", "card http://127.0.0.1:1")
    assert await card.done() is None and "✘" in card.view.value
    assert card.chat_button.layout.display == "none"  # a failed card offers no chat


async def test_run_all_a_send_right_after_serve_waits_for_the_server(ip):
    """Run All: the cell after `serve` runs before the server does; its URL is known and it waits."""
    h = ip.run_line_magic("toolnexus", "serve --name ra-desk")
    assert h.state == "starting" and h.url.startswith("http://127.0.0.1:")
    sent = ip.run_line_magic("toolnexus", f"send {h.url} weather in Lisbon please")
    async with httpx.AsyncClient(
        timeout=10
    ) as http:  # any client: its connection waits in the backlog
        card = (await http.get(h.url + "/.well-known/agent-card.json")).json()
    assert card["name"] == "ra-desk"
    task = await sent.done()
    assert task.state.value == "completed" and task.reply.startswith('Using the "weather" skill')


@pytest.mark.parametrize(
    "line",
    [
        "send weather in Lisbon please",
        "send '' hello",
        "card nowhere",
        "chat ftp://x",
        "cancel abc not-a-url",
    ],
)
async def test_a_missing_or_malformed_url_is_a_one_line_error(ip, line):
    with pytest.raises(UsageError, match="is not an http\\(s\\) URL; the URL comes first"):
        ip.run_line_magic("toolnexus", line)


async def test_a_server_started_again_under_its_name_starts_with_an_empty_table(ip):
    first = ip.run_line_magic("toolnexus", "serve --name again")
    await (ip.run_line_magic("toolnexus", f"send {first.url} hello one")).done()
    ip.run_line_magic("toolnexus", "stop again")
    await asyncio.sleep(0.3)
    second = ip.run_line_magic("toolnexus", "serve --name again")
    await (ip.run_line_magic("toolnexus", f"send {second.url} hello two")).done()
    await asyncio.sleep(0.3)
    second.refresh()
    first.refresh()
    assert [r["request"] for r in second.widget.rows] == ["hello two"]
    assert [r["request"] for r in first.widget.rows] == [
        "hello one"
    ]  # the old handle keeps its own


async def test_cancel_from_the_magic_the_send_and_the_server_widget(ip):
    h = ip.run_line_magic("toolnexus", "serve --name c-desk")
    asking = ip.run_line_magic("toolnexus", f"send {h.url} please confirm the order")
    question = await asking.done()
    assert question.state.value == "input-required" and not asking.cancel_button.disabled
    await asyncio.sleep(0.3)
    h.refresh()
    h.widget.pick.value = question.id
    assert "input-required" in h.widget.pick.label and not h.widget.cancel_button.disabled
    shown = ip.run_line_magic(
        "toolnexus", f"cancel {question.id}"
    )  # found among the notebook's servers
    canceled = await shown.done
    assert canceled.state.value == "canceled"
    for _ in range(100):  # the send widget still follows it: canceled elsewhere shows here
        if asking.state == "canceled":
            break
        await asyncio.sleep(0.1)
    assert asking.state == "canceled" and asking.cancel_button.layout.display == "none"
    await asyncio.sleep(0.3)
    h.refresh()
    assert h.widget.pick.label.startswith("canceled") and h.widget.cancel_button.disabled
    second = ip.run_line_magic("toolnexus", f"send {h.url} please confirm the refund")
    await second.done()
    assert (await second.cancel()).state.value == "canceled"
    third = await (ip.run_line_magic("toolnexus", f"send {h.url} please confirm the trip")).done()
    await asyncio.sleep(0.3)
    h.refresh()
    h.widget.pick.value = third.id
    h.widget.cancel_button.click()
    await asyncio.sleep(0.5)
    h.refresh()
    assert h.widget.book.tasks[third.id].state.value == "canceled"
    again = ip.run_line_magic("toolnexus", f"cancel {question.id} {h.url}")
    assert await again.done is None and "✘" in again.value  # already canceled: the peer's reason
    nobody = ip.run_line_magic("toolnexus", "cancel no-such-task")
    assert await nobody.done is None and "name its agent" in nobody.value


@pytest.mark.parametrize(
    "line, needle",
    [
        ("help", "e.g. h = %toolnexus serve --name desk --mcp"),
        ("--help", "%toolnexus cancel TASK_ID [URL]"),
        ("serve --help", f"STORE: {STORE_FORMS} (default memory)"),
        ("help send", "s.cancel()"),
    ],
)
async def test_help_shows_every_subcommand_with_an_example(ip, capsys, line, needle):
    ip.run_line_magic("toolnexus", line)
    out = capsys.readouterr().out
    assert needle in out
    if line in ("help", "--help"):
        from notebook_ext.magics import HELP

        assert out.count("e.g.") == len(HELP) == 12  # every subcommand
    if line == "serve --help":
        assert "%toolnexus send" not in out  # only serve's
    doc = ip.find_line_magic("toolnexus").__doc__  # what %toolnexus? shows
    assert "e.g. %toolnexus export desk tasks.csv" in doc


async def test_data_to_analyse_dataframe_export_chart_and_the_wire(ip, tmp_path, monkeypatch):
    h = ip.run_line_magic("toolnexus", "serve --name data-desk")
    assert "no tasks yet" in h.widget.table.value  # the empty state
    for text in ("greet the data", "weather in Porto please"):
        await (ip.run_line_magic("toolnexus", f"send {h.url} {text}")).done()
    for _ in range(
        100
    ):  # the chart draws at most once a second, off the loop: wait for it, 10 s at most
        h.refresh()
        if h.widget.chart.value[:4] == b"\x89PNG":
            break
        await asyncio.sleep(0.1)
    df = h.to_dataframe()
    assert list(df["request"]) == ["greet the data", "weather in Porto please"]
    assert str(df["duration_s"].dtype) == "float64" and (df["duration_s"] >= 0).all()
    assert str(df["tokens"].dtype) == "Int64" and str(df["created"].dtype).startswith("datetime64")
    assert set(df["state"]) == {"completed"} and list(df["skill"]) == ["greet", "weather"]
    assert "<th>request</th><th>started (UTC)</th>" in h.widget.table.value
    h.widget.filter.value = "porto"
    assert [r["request"] for r in h.widget.rows] == ["weather in Porto please"]
    h.widget.filter.value = "state:failed"
    assert "no task matches" in h.widget.table.value
    h.widget.filter.value = ""
    assert h.widget.chart.value[:4] == b"\x89PNG" and h.widget.chart.layout.display is None
    # the selected task: its states and the wire that carried it, on one timeline
    h.widget.pick.value = df["task"][0]
    detail = h.widget.detail.value
    assert "← in" in detail and "POST SendMessage" in detail and "greet the data" in detail, detail
    saved = ip.run_line_magic("toolnexus", f"export data-desk {tmp_path / 'tasks.csv'}")
    lines = saved.read_text().splitlines()
    assert (
        lines[0].startswith("task,context,server,skill,request,state,created") and len(lines) == 3
    )
    whole = h.export(tmp_path / "session.json")
    import json

    data = json.loads(whole.read_text())
    assert len(data["tasks"]) == 2 and any(ev["rpc_method"] == "SendMessage" for ev in data["wire"])
    # its wire as a cassette: replayed, it answers as data-desk did
    from toolnexus.debug.cassette import load
    from toolnexus.debug.replay import ReplayPeer

    tape = load(ip.run_line_magic("toolnexus", f"export data-desk {tmp_path / 'session.jsonl'}"))
    sends = [x for x in tape if x.rpc_method == "SendMessage"]
    assert {x.direction for x in tape} == {"in"} and len(sends) == 2
    assert sends[0].request["json"]["params"]["message"]["parts"][0]["text"] == "greet the data"
    async with ReplayPeer(tape) as peer:
        from toolnexus import fetch_card

        assert (await fetch_card(peer.url)).name == "data-desk"
    with pytest.raises(UsageError, match="must end in .json, .csv or .jsonl"):
        ip.run_line_magic("toolnexus", f"export data-desk {tmp_path / 'x.txt'}")
    monkeypatch.setitem(__import__("sys").modules, "pandas", None)  # pandas not installed
    with pytest.raises(MissingExtra, match="pip install 'toolnexus\\[notebook\\]'") as caught:
        h.to_dataframe()
    assert len(caught.value._render_traceback_()) == 1


async def test_widgets_look_finished_theme_colours_plurals_and_disconnect(ip):
    h = ip.run_line_magic("toolnexus", "serve --name look-desk")
    sent = ip.run_line_magic("toolnexus", f"send {h.url} greet the looks")
    task = await sent.done()
    import re

    html_out = sent.value + h.widget.header.value + h.widget.table.value
    fixed = re.findall(r"color:\s*#[0-9a-f]{3,6}", html_out)
    assert not fixed, fixed  # theme variables (with fallbacks), never fixed colours
    assert (
        "var(--jp-success-color1" in sent.value
        and "var(--jp-content-link-color" in h.widget.header.value
    )
    assert "1 message<" in sent.value or "2 messages<" in sent.value
    assert (
        "</pre></div></div>" in sent.value or "</pre></div><div>" in sent.value
    )  # nothing trails the reply
    chat = ip.run_line_magic("toolnexus", "chat http://127.0.0.1:1")
    chat.say("anyone?")
    await chat.wait()
    assert "toolnexus-error" in chat.view.value and "var(--jp-error-color1" in chat.view.value
    closing = NotebookSession.shutdown()  # what the kernel does when it stops or restarts
    assert closing is not None
    await closing
    assert h.widget.status == "disconnected" and h.widget.stop_button.disabled
    assert "kernel that ran this server stopped" in h.widget.header.value
    assert task.state.value == "completed"


async def test_send_push_puts_the_peers_notifications_on_the_tasks_timeline(ip):
    h = ip.run_line_magic("toolnexus", "serve --name push-desk")
    sent = ip.run_line_magic("toolnexus", f"send {h.url} hello with push --push")
    task = await sent.done()
    assert task.state.value == "completed"
    webhook = sent.webhook
    assert webhook is not None and webhook.url.startswith("http://127.0.0.1:")
    got = [n.state.value for n in webhook.received(task.id) if n.state is not None]
    assert got == ["submitted", "working", "completed"]
    # beside the send's own exchanges, on one timeline, oldest first
    wire = sent.wire.value
    assert wire.count("POST push") == 4 and "SendMessage" in wire
    assert wire.index("SendMessage") < wire.rindex("POST push")
    plain = ip.run_line_magic("toolnexus", f"send {h.url} hello without")
    await plain.done()
    assert plain.webhook is None and "POST push" not in plain.wire.value
    ip.run_line_magic("toolnexus", "stop --all")
    await asyncio.sleep(0.3)
    assert h.state == "stopped" and not webhook.running


async def test_a_servers_task_view_shows_its_trace_across_the_agents_of_the_notebook(ip, tmp_path):
    """A -> B -> C served on the notebook session's bus: A's widget shows the tree of A's task."""
    from toolnexus import A2AClient

    from ..serve.test_hops import chain

    session = NotebookSession.get()
    async with chain(tmp_path, events=session.workspace.events) as (a, b, c, _):
        widget = ServerWidget(
            "agent-a",
            session.workspace.events,
            lambda: ("running", a.url, ["A2A"], ""),
            lambda: None,
        )
        async with A2AClient(a.url) as caller:
            asked = await caller.send("please approve the move", blocking=True)
            for _ in range(100):
                await asyncio.sleep(0.05)
                if asked.id in {o[1] for o in widget.pick.options}:
                    break
            widget.pick.value = asked.id
            detail = widget.detail.value
            assert detail.startswith("<div class='toolnexus-trace'>") and "◀ this task" in detail
            assert (
                detail.index("agent-a task")
                < detail.index("→ agent-b")
                < detail.index("agent-b task")
                < detail.index("→ agent-c")
                < detail.index("agent-c task")
            )
            assert [b.id for b in widget.book.tasks.values()] == [
                asked.id
            ]  # its table: its own tasks only
            await caller.send("yes", task_id=asked.id, context_id=asked.context_id, blocking=True)

        def tree() -> str:
            return widget.detail.value.split("<table")[0]  # the trace, before the timeline's table

        for _ in range(100):
            await asyncio.sleep(0.05)
            widget._draw_detail()
            if tree().count('data-state="completed"') == 5:
                break
        assert tree().count('data-state="completed"') == 5  # three tasks and two calls, all done


async def test_the_chat_fills_in_as_the_words_come(ip, monkeypatch):
    monkeypatch.setenv("TOOLNEXUS_DEMO_PACE", "0.15")  # the served demo's words, 0.15 s apart
    server = ip.run_line_magic("toolnexus", "serve --name stream-desk")
    await wait_running(server)
    chat = ip.run_line_magic("toolnexus", f"chat {server.url}")
    prompt = "one two three four five six seven eight"
    chat.say(prompt)
    shown: list[str] = []
    for _ in range(400):
        view = chat.view.value
        if not shown or shown[-1] != view:
            shown.append(view)
        if chat.turns[-1].task_state is TaskState.COMPLETED:
            break
        await asyncio.sleep(0.02)
    await chat.wait()
    whole = html.escape("You said: " + prompt)
    partial = [v for v in shown if "You said" in v and whole not in v]
    assert len(partial) >= 3, len(shown)  # the reply filled in, a few words at a time
    assert whole in chat.view.value


async def test_a_chat_lists_the_files_sent_and_those_of_the_reply(tmp_path):
    """The official SDK's agent echoes a file back: the chat names it (name, type, size) on both
    sides and never shows what is in it."""
    from toolnexus.protocol.model import Part

    (tmp_path / "notes.html").write_text("<script>alert(1)</script>")
    async with sdk_server(shaped=takes_anything) as url:
        chat = ChatWidget(url)
        chat.conversation.attachments.append(Part.of_file(tmp_path / "notes.html"))
        chat.say("keep this")
        await chat.wait()
    assert chat.turns[-1].task_state is TaskState.COMPLETED
    shown = chat.view.value
    assert shown.count("+ file notes.html (text/html, 25 B)") == 2  # sent, and echoed back
    assert "<script>" not in shown and "alert" not in shown


async def test_the_card_widget_shows_the_extended_card_its_credentials_get(ip, monkeypatch):
    monkeypatch.setenv("TN_NB_BOOKS", "nb-books-token")
    tk = await tn.create_toolkit(
        builtins=False,
        skills=[tn.SkillDef("greet", "Says hello"), tn.SkillDef("ledger", "Signed-in only")],
    )
    config = tn.A2AConfig(
        name="nb-books", auth=tn.Auth.bearer("nb-books-token"), extended_skills=["ledger"]
    )
    async with tk.serve(client=tn.demo_client(), a2a=config) as h:
        public = ip.run_line_magic("toolnexus", f"card {h.url}")
        await public.done()
        assert "ledger" not in public.view.value
        line = f"card {h.url} --extended --header 'Authorization: Bearer ${{TN_NB_BOOKS}}'"
        extended = ip.run_line_magic("toolnexus", line)
        await extended.done()
        assert "ledger" in extended.view.value and extended.card.extended
        refused = ip.run_line_magic("toolnexus", f"card {h.url} --extended")
        await refused.done()
        assert "401" in refused.view.value and refused.card is None


async def test_the_card_widget_offers_no_chat_with_a_card_whose_signature_fails():
    """Issue 59 item 6: the notebook's card view verified a card and still offered to chat with
    one whose signature failed (signed, and changed since)."""
    key = tn.SigningKey(ec.generate_private_key(ec.SECP256R1()), kid="k1")
    tk = await tn.create_toolkit([], builtins=False)
    agent = await tk.serve(
        "127.0.0.1:0", client=tn.demo_client(), a2a=tn.A2AConfig(name="signed", signing_key=key)
    )
    async with httpx.AsyncClient() as http:
        signed = (await http.get(agent.card_url)).json()
    changed = {**signed, "name": "evil"}  # its jku still names the agent's real key set
    forger = AsgiServer(
        Starlette(routes=[Route("/.well-known/agent-card.json", lambda r: JSONResponse(changed))])
    )
    await forger.start()
    try:
        good, bad = CardWidget(agent.url, None), CardWidget(forger.url, None)
        await good.done()
        await bad.done()
    finally:
        await forger.stop()
        await agent.stop()
    assert not good.chat_button.disabled and good.card.signatures.valid
    assert bad.card.signatures.state == "invalid" and bad.chat_button.disabled
    assert bad.chat_button.layout.display == "none"
    assert "no chat with a card that may be forged" in bad.view.value


async def test_a_thread_servers_kept_tasks_end_quietly_when_it_stops_while_they_are_read(
    ip, tmp_path
):
    """A ``--thread`` server's widget reads what its store kept a page at a time, each on the
    server's loop (``NotebookSession.kept``); the server stopped meanwhile (``%toolnexus stop``, a
    cell run again with other options): the reading ends, nothing more to show. It raised
    RuntimeError('Event loop is closed') into the kernel's loop, its listing never awaited."""
    session = NotebookSession.get()
    handle = ip.run_line_magic("toolnexus", f"serve --name kept-t --store file:{tmp_path} --thread")
    await (ip.run_line_magic("toolnexus", f"send {handle.url} hello kept")).done()
    running = [page async for page in session.kept("kept-t")]
    assert [[t.state for t in page] for page in running] == [[TaskState.COMPLETED]]
    pages = session.kept("kept-t")  # read once the server stopped
    await session.stop("kept-t")
    assert [page async for page in pages] == []
