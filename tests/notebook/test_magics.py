"""%toolnexus through a real IPython shell: every subcommand and every mistake."""

from __future__ import annotations

import asyncio
import socket

import httpx
import pytest

pytest.importorskip("IPython")
pytest.importorskip("ipywidgets")

from IPython.core.error import UsageError  # noqa: E402
from IPython.core.interactiveshell import InteractiveShell  # noqa: E402

from notebook_ext.session import NotebookSession  # noqa: E402
from toolnexus.errors import ConfigError  # noqa: E402
from notebook_ext.widgets import ChatWidget, ServerWidget  # noqa: E402

from ..serve.wire import rpc, v03_message  # noqa: E402


class RaisingShell(InteractiveShell):
    """A shell whose cells raise instead of printing tracebacks (as jupysql tests magics)."""

    def run_cell(self, *args, **kwargs):
        result = super().run_cell(*args, **kwargs)
        result.raise_error()
        return result


@pytest.fixture
def ip():
    shell = RaisingShell.instance()
    shell.run_line_magic("load_ext", "toolnexus")
    yield shell
    NotebookSession.shutdown()


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
    cell = ip.run_cell_magic("toolnexus", f"send {server.url} --context {task.context_id}", "second line\n")
    second = await cell.done()
    assert second.context_id == task.context_id and second.reply.endswith("(message 2 of this conversation)")
    await asyncio.sleep(0.3)
    server.widget.refresh()
    assert [r["state"] for r in server.widget.rows] == ["completed", "completed"]
    server.widget.pick.value = task.id
    assert "greet the shell" in server.widget.detail.value and "<table>" in server.widget.detail.value
    listing = ip.run_line_magic("toolnexus", "list")
    assert "m-desk" in listing.data and "running" in listing.data
    tasks = ip.run_line_magic("toolnexus", "tasks m-desk")
    assert tasks.data.count("data-state=\"completed\"") == 2
    ip.run_line_magic("toolnexus", "stop m-desk")
    await asyncio.sleep(0.3)
    assert server.state == "stopped"


async def test_threaded_server_serves_blocking_cells(ip):
    handle = ip.run_line_magic("toolnexus", "serve --name t-desk --thread")
    r = httpx.post(handle.url + "/", json={"jsonrpc": "2.0", "id": 1, "method": "message/send",
                                           "params": {"message": v03_message("from a blocking cell")}}, timeout=10)
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
    handle = session.start_thread(ServerSpec(name="locked", mcp=True, description="a locked desk",
                                             auth_token_env="TN_NB_TOKEN"))
    try:
        assert httpx.post(handle.url + "/", json={}, timeout=10).status_code == 401
        assert httpx.post(handle.url + "/mcp", json={}, timeout=10).status_code == 401
        async with httpx.AsyncClient(timeout=10) as http:
            reply = await rpc(http, handle.url, "message/send", {"message": v03_message("let me in")},
                              headers={"Authorization": "Bearer nb-s3cret"})
        assert reply["result"]["status"]["state"] == "completed"
        card = httpx.get(handle.url + "/.well-known/agent-card.json", timeout=10).json()
        assert card["description"] == "a locked desk"
    finally:
        await session.stop("locked")
    monkeypatch.delenv("TN_NB_TOKEN")
    with pytest.raises(ConfigError, match="TN_NB_TOKEN is not set"):
        session.start_thread(ServerSpec(name="locked", auth_token_env="TN_NB_TOKEN"))
    assert "locked" not in session.threaded


@pytest.mark.parametrize("line, needle", [
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
])
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
    with pytest.raises(UsageError, match="already running"):
        ip.run_line_magic("toolnexus", "serve --name twice")
    with pytest.raises(UsageError, match="%%toolnexus takes send"):
        ip.run_cell_magic("toolnexus", "list", "a body")


async def test_card_and_chat(ip):
    server = ip.run_line_magic("toolnexus", "serve --name c-desk")
    await wait_running(server)
    card = ip.run_line_magic("toolnexus", f"card {server.url}")
    await card.done()
    assert card.card.name == "c-desk" and card.report.ok
    assert "speaks 1.0 and 0.3" in card.view.value and not card.chat_button.disabled
    card.chat_button.click()
    assert isinstance(card.chat_area.children[0], ChatWidget)
    assert repr(card) == "<CardWidget (shown above)>"
    chat = ip.run_line_magic("toolnexus", f"chat {server.url}")
    await asyncio.sleep(0.2)
    chat.say("please confirm the refund")
    await chat.wait()
    assert chat.messages[-1]["state"] == "input-required" and chat.waiting_task
    chat.say("yes")
    await chat.wait()
    assert chat.messages[-1]["state"] == "completed"
    assert chat.messages[-1]["text"].startswith("Request approved (yes)")
    first_context = chat.context_id
    chat.say("and another")
    await chat.wait()
    assert chat.context_id == first_context and "(message 2 of this conversation)" in chat.messages[-1]["text"]
    chat.new_conversation()
    chat.say("fresh")
    await chat.wait()
    assert chat.context_id != first_context and chat.messages[-1]["text"] == "You said: fresh"
    async with httpx.AsyncClient() as http:  # the served agent saw all of it
        r = await rpc(http, server.url, "tasks/get", {"id": chat.messages[-1]["task"]})
    assert r["result"]["status"]["state"] == "completed"


async def test_unreachable_peer_shows_an_error_not_a_crash(ip):
    sent = ip.run_line_magic("toolnexus", "send http://127.0.0.1:1 hello")
    assert await sent.done() is None
    assert sent.state == "error" and "cannot fetch the agent card" in sent.error
    card = ip.run_line_magic("toolnexus", "card http://127.0.0.1:1")
    assert await card.done() is None and "✘" in card.view.value
