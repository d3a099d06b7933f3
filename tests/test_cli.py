"""The toolnexus command, run as a newcomer runs it."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import http.server
import json
import os
import pty
import re
import select
import shlex
import signal
import socket
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest

import toolnexus as tn
from toolnexus.cli import _parser, following, output
from toolnexus.cli.serve_flags import SERVE_FLAGS
from toolnexus.http.server import accept_queue
from toolnexus.stores import STORE_FORMS, kind_of, kinds_with
from toolnexus.stores.base import KeepsEnded
from toolnexus.toolkit import CONFIG_KEYS

from .helpers import MCP_INIT, ROOT, Served, arun_cli, cli, read_until, run_cli, started_cli

BAD_STORE = "nosuch:x"
KEEPERS = [kind.name for kind in kinds_with(KeepsEnded)]
"""The kinds of store that keep every task, as the registry says."""
"""A store string of no kind, for the usage test (``sqlite:x`` was, until a SQLite store made it
valid: the test then served, hung for its timeout and wrote a database where it ran)."""


def test_serve_with_no_flags_runs_the_demo_and_stops_on_ctrl_c():
    with started_cli("serve", "--json") as proc:
        lines = read_until(proc, "ready")
        started = lines[0]
        assert (
            started["name"] == "demo-desk"
            and started["profiles"] == ["A2A"]
            and started["model"] == "demo"
        )
        assert started["loop"] == "uvloop"  # the fast extra's loop, installed with the test extra
        url = started["url"]
        card = httpx.get(url + "/.well-known/agent-card.json").json()
        assert {s["id"] for s in card["skills"]} == {"greet", "report", "weather"}
        assert card["description"]
        r = httpx.post(
            url + "/",
            json={
                "jsonrpc": "2.0",
                "id": 1,
                "method": "message/send",
                "params": {
                    "message": {
                        "kind": "message",
                        "messageId": "m1",
                        "role": "user",
                        "parts": [{"kind": "text", "text": "greet Ada"}],
                    }
                },
            },
            timeout=10,
        )
        assert r.json()["result"]["status"]["state"] == "completed"
        events = read_until(proc, "task")
        events += [json.loads(proc.stdout.readline()) for _ in range(2)]
        assert [e["state"] for e in events if e["event"] == "task"] == [
            "submitted",
            "working",
            "completed",
        ]
        assert events[-1]["skill"] == "greet" and events[-1]["usage"]["total_tokens"] > 0
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0
        assert json.loads(proc.stdout.read().strip().splitlines()[-1]) == {"event": "stopped"}
        port = int(url.rsplit(":", 1)[1])
        with socket.socket() as s:  # closed (a listener refuses even with SO_REUSEADDR)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            s.bind(("127.0.0.1", port))


def test_serve_with_grpc_and_send_over_it():
    with started_cli("serve", "--json", "--grpc", "127.0.0.1:0") as proc:
        lines = read_until(proc, "ready")
        url = lines[0]["url"]
        [grpc_line] = [line for line in lines if line["event"] == "grpc"]
        assert grpc_line["target"].startswith("127.0.0.1:")
        card = httpx.get(url + "/.well-known/agent-card.json").json()
        assert {
            "url": grpc_line["target"],
            "protocolBinding": "GRPC",
            "protocolVersion": "1.0",
        } in card["supportedInterfaces"]
        data = json.loads(run_cli("send", url, "greet Ada", "--binding", "grpc", "--json").stdout)
        assert data["binding"] == "GRPC" and data["task"]["status"]["state"] == "completed"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


def test_serve_with_mcp():
    with started_cli("serve", "--json", "--mcp") as proc:
        lines = read_until(proc, "ready")
        assert lines[0]["profiles"] == ["A2A", "MCP"]
        mcp_url = next(line["url"] for line in lines if line["event"] == "mcp")
        assert mcp_url == lines[0]["url"] + "/mcp"
        accept = {"accept": "application/json, text/event-stream"}
        with httpx.Client(timeout=10) as http:  # the handshake era: initialize opens a session
            opened = http.post(mcp_url, json=MCP_INIT, headers=accept)
            assert opened.status_code == 200
            session = {"mcp-session-id": opened.headers["mcp-session-id"], **accept}
            ready = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            assert http.post(mcp_url, json=ready, headers=session).status_code == 202
            listed = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
            r = http.post(mcp_url, json=listed, headers=session)
        assert r.status_code == 200 and '"skill"' in r.text
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


def test_a_stream_that_breaks_says_so_on_its_own_line_after_the_reply(monkeypatch):
    """Issue 61 item 6 (the look at e1ba206, 4 runs in 4): against ``serve --quirks drop-streams``
    the fall-back warning ("... the task followed by polling instead") was printed into the
    streamed reply's line (``Using toolnexus: warning: ...``), stdout and stderr being one
    terminal. The reply's line is whole, and the warning follows on its own. The demo speaks a
    word every 0.3 s, so that the polling that follows the cut stream prints the reply's first
    words before it ends."""
    monkeypatch.setenv("TOOLNEXUS_DEMO_PACE", "0.3")
    with started_cli("serve", "--json", "--quirks", "drop-streams") as server:
        url = read_until(server, "ready")[0]["url"]
        said = subprocess.run(
            cli("send", "--stream", url, "greet Ada"),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,  # one stream, as a terminal shows them
            text=True,
            timeout=60,
        )
    lines = said.stdout.splitlines()
    assert said.returncode == 0, said.stdout
    assert 'Using the "greet" skill: Hello, Ada! I hope your day is going well.' in lines, lines
    [warning] = [line for line in lines if "polling instead" in line]
    assert warning.startswith("toolnexus: warning: "), lines


def test_the_help_names_every_exit_code_the_command_ends_with():
    """``toolnexus --help`` says what each exit code means: one the command ends with and the
    help leaves out (130, Ctrl-C, when a2d6d77 made it) fails here."""
    said = " ".join(_parser().format_help().split())
    codes = re.search(r"Exit codes: (.*?)\.", said)
    assert codes is not None, said
    named = {int(n) for n in re.findall(r"\b(\d+) ", codes[1])}
    ended = {v for k, v in vars(output).items() if k.startswith("EXIT_")}
    assert named == ended, (named, ended)


def test_a_reply_cut_by_ctrl_c_still_says_the_warnings_it_held(capsys):
    """A warning held back while the reply's line is unfinished (the stream's fall-back, said once
    the reply ends) is said when following stops with no report (Ctrl-C: ``_talking`` cuts the
    reply): it was lost (the review of e1fa082). The reply's line ends first."""
    live = following._LiveReply(lambda text: text, ())
    live.show("Hello, A")
    live.tell("toolnexus: warning: the stream broke off; polling instead")
    assert capsys.readouterr() == ("Hello, A", "")  # held: the reply is mid-line
    live.cut()
    assert capsys.readouterr() == (
        "\n",
        "toolnexus: warning: the stream broke off; polling instead\n",
    )
    live.tell("toolnexus: warning: another")  # the reply has ended: said at once
    assert capsys.readouterr().err == "toolnexus: warning: another\n"


def test_the_demo_says_what_to_type_to_see_a_question_and_its_skills_do_their_job():
    """``toolnexus serve``'s first lines say what to send to see an input-required question; sent
    as printed, it asks; the weather comes from the skill's table, offline."""
    with started_cli("serve") as proc:
        lines, watchdog = [], threading.Timer(20, proc.kill)
        watchdog.start()
        for line in proc.stdout:  # its first lines, to "press Ctrl-C to stop"
            lines.append(line)
            if line.startswith("press Ctrl-C"):
                break
        watchdog.cancel()
        tried = next((line for line in lines if line.startswith("try ")), None)
        assert tried is not None, lines
        command = shlex.split(tried.removeprefix("try").split("  (")[0])
        assert command[:2] == ["toolnexus", "send"] and "input-required" in tried
        asked = run_cli(*command[1:])
        assert asked.returncode == 0, asked.stderr
        assert (
            "Publish this report?\n\nWeekly report\n- Done:" in asked.stdout
            and "[input-required]" in asked.stderr
        )
        weather = run_cli("send", command[2], "what's the weather in Oslo?")
        assert weather.stdout.strip() == 'Using the "weather" skill: Oslo: light snow, -3°C.'


def test_text_output_and_sigterm():
    with started_cli("serve", "--name", "plain-desk") as proc:
        first = proc.stdout.readline()
        assert first.startswith("serving plain-desk at http://127.0.0.1:")
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--model", "gpt4"], "model must be demo, openai:MODEL or anthropic:MODEL"),
        (["--config", "/no/such/file.json"], "config file not found"),
        (["--store", BAD_STORE], f"store must be one of {STORE_FORMS}, or a TaskStore object"),
        (["--no-a2a"], "--no-a2a needs --mcp"),
        (
            ["--sign-key", "/no/such/key.pem"],
            "--sign-key: signing key '/no/such/key.pem': No such file or directory",
        ),
        (["--model", "openai:gpt-x", "--api-key-env", "TOOLNEXUS_TEST_UNSET_VAR"], "is not set"),
        (
            ["--keep-tasks", "-1"],
            "keep_tasks (the finished tasks the memory store keeps) must be a whole number >= 0",
        ),
        (
            ["--keep-for", "0"],
            "keep_for (seconds the memory store keeps a finished task) must be a number > 0",
        ),
        (["--keep-for", "nan"], "must be a number > 0"),
        (
            ["--keep-tasks", "5", "--store", "file:tasks"],
            f"the {', '.join(KEEPERS[:-1])} and {KEEPERS[-1]} stores keep every task"
            if len(KEEPERS) > 1
            else f"the {KEEPERS[0]} stores keep every task",
        ),
    ],
)
def test_usage_errors_are_one_line_and_exit_2(args, needle, tmp_path):
    """Each refused before anything starts or is written (run in a folder of its own: a mistake
    that served would be killed within CLI_WAIT and leave nothing behind in the repository)."""
    done = run_cli("serve", *args, cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert needle in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert list(tmp_path.iterdir()) == []


def test_the_bad_store_of_the_usage_test_is_of_no_kind():
    assert kind_of(BAD_STORE) is None


def test_serve_keeps_only_the_newest_finished_tasks_it_is_told_to():
    """A long-running `toolnexus serve` bounds what it keeps: --keep-tasks 2 keeps the newest two."""
    with started_cli("serve", "--json", "--keep-tasks", "2") as proc:
        url = read_until(proc, "ready")[0]["url"]
        ids = []
        for i in range(4):
            r = httpx.post(
                url + "/",
                json={
                    "jsonrpc": "2.0",
                    "id": i,
                    "method": "message/send",
                    "params": {
                        "message": {
                            "kind": "message",
                            "messageId": f"m{i}",
                            "role": "user",
                            "parts": [{"kind": "text", "text": "greet Ada"}],
                        }
                    },
                },
                timeout=10,
            )
            assert r.json()["result"]["status"]["state"] == "completed"
            ids.append(r.json()["result"]["id"])
        for i, tid in enumerate(ids):
            got = httpx.post(
                url + "/",
                json={"jsonrpc": "2.0", "id": 9, "method": "tasks/get", "params": {"id": tid}},
                timeout=10,
            ).json()
            if i < 2:
                assert got["error"]["code"] == -32001, got
            else:
                assert got["result"]["status"]["state"] == "completed"
        proc.send_signal(signal.SIGINT)
        assert proc.wait(10) == 0


def test_port_in_use_exits_2():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        done = run_cli("serve", "--port", str(s.getsockname()[1]))
    assert done.returncode == 2 and "cannot listen on 127.0.0.1" in done.stderr
    assert "Traceback" not in done.stderr


@pytest.fixture
def served_demo():
    """The demo agent from ``toolnexus serve``; a slow task a test left running is drained for 30 s
    at its stop, so a second Ctrl-C follows the first (``started_cli``)."""
    with started_cli("serve", "--json") as proc:
        yield read_until(proc, "ready")[0]["url"]


def test_card_and_validate(served_demo):
    out = run_cli("card", served_demo, "--validate")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("demo-desk 0.1.0")
    assert "verdict: offers 1.0 and 0.3: each official client line finds its own" in out.stdout
    data = json.loads(
        run_cli("card", served_demo + "/.well-known/agent-card.json", "--json", "--validate").stdout
    )
    assert data["card"]["name"] == "demo-desk" and data["validation"]["ok"] is True
    assert run_cli("card", "http://127.0.0.1:1").returncode == 1


def test_send_follows_the_task_and_answers_input(served_demo):
    out = run_cli("send", served_demo, "hello from the cli")
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "You said: hello from the cli"
    assert "[completed]" in out.stderr
    for dialect in ("0.3", "legacy", "1.0"):
        data = json.loads(run_cli("send", served_demo, "hi", "--dialect", dialect, "--json").stdout)
        assert data["dialect"] == dialect and data["task"]["status"]["state"] == "completed"
    slow = run_cli(
        "send", served_demo, "slow 30", "--stream", "--timeout", "1"
    )  # a stream is bounded too
    assert slow.returncode == 1 and "still working after 1s" in slow.stderr, slow.stderr
    streamed = run_cli("send", served_demo, "streamed", "--stream")
    assert streamed.stdout.strip() == "You said: streamed" and "[working]" in streamed.stderr
    asked = run_cli("send", served_demo, "please confirm the order", "--json")
    task = json.loads(asked.stdout)["task"]
    assert task["status"]["state"] == "input-required"
    answered = run_cli(
        "send", served_demo, "yes", "--task", task["id"], "--context", task["contextId"]
    )
    assert answered.stdout.strip() == "Request approved (yes). You said: please confirm the order"
    failed = run_cli("send", served_demo, "please fail")
    assert failed.returncode == 1 and "failed: model error" in failed.stderr
    traced = run_cli(
        "send", served_demo, "trace me", "--trace", "--header", "Authorization: Bearer abc123"
    )
    assert "--> POST" in traced.stderr and "authorization: Bearer ***" in traced.stderr
    assert "abc123" not in traced.stderr
    assert run_cli("send", served_demo, "x", "--header", "nocolon").returncode == 2


def test_version():
    done = run_cli("--version")
    assert done.returncode == 0 and done.stdout.strip() == f"toolnexus {tn.__version__}"


@pytest.mark.parametrize(
    "args",
    [("card", "{url}", "--json"), ("send", "{url}", "hi", "--json")],
    ids=["card", "send"],
)
def test_a_reader_that_leaves_ends_the_command_as_unix_tools_do(served_demo, args):
    """``toolnexus card URL | head -1``: the reader has gone before the output is written (its end
    of the pipe closed at once, every time). The command ends by SIGPIPE, as ``cat`` does, and
    prints no traceback."""
    proc = subprocess.Popen(
        cli(*(a.format(url=served_demo) for a in args)),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
    )
    assert proc.stdout is not None
    proc.stdout.close()  # the reader left
    _, err = proc.communicate(timeout=20)
    assert "Traceback" not in err.decode() and "BrokenPipeError" not in err.decode(), err
    assert proc.returncode == -signal.SIGPIPE


def test_send_over_the_http_json_binding(served_demo):
    data = json.loads(
        run_cli("send", served_demo, "over rest", "--binding", "http+json", "--json").stdout
    )
    assert data["binding"] == "HTTP+JSON" and data["dialect"] == "1.0"
    assert data["task"]["status"]["state"] == "completed"
    traced = run_cli(
        "send", served_demo, "over rest", "--binding", "http+json", "--trace", "--stream"
    )
    assert traced.stdout.strip() == "You said: over rest"
    assert f"--> POST {served_demo}/message:stream SendStreamingMessage [200]" in traced.stderr
    refused = run_cli("send", served_demo, "x", "--binding", "http+json", "--dialect", "legacy")
    assert refused.returncode == 2 and "1.0 and 0.3 only" in refused.stderr
    old = json.loads(
        run_cli(
            "send",
            served_demo,
            "over 0.3 rest",
            "--binding",
            "http+json",
            "--dialect",
            "0.3",
            "--json",
        ).stdout
    )
    assert (old["binding"], old["dialect"], old["task"]["status"]["state"]) == (
        "HTTP+JSON",
        "0.3",
        "completed",
    )
    assert "over JSONRPC" in run_cli("card", served_demo).stdout


@pytest.mark.parametrize("command", ["card", "doctor", "send"])
@pytest.mark.parametrize("url", ["htp:/bad", "not a url", "http://", "ftp://example.com/"])
def test_a_url_that_names_no_peer_is_a_usage_error(command, url):
    run = run_cli(command, url, *(["hi"] if command == "send" else []))
    assert run.returncode == 2, run.stderr
    assert (
        run.stderr.strip()
        == f"toolnexus: not an http(s) URL: {url!r} (give the agent's base URL or card URL, "
        "such as http://127.0.0.1:8000)"
    )


async def test_a_plain_web_page_is_no_card_and_both_paths_are_named():
    from starlette.applications import Starlette
    from starlette.responses import HTMLResponse, PlainTextResponse
    from starlette.routing import Route

    import toolnexus as tn

    from .peers import on_loopback

    async def page(request):
        if request.url.path.endswith("agent-card.json"):
            return PlainTextResponse("Not Found", 404)
        return HTMLResponse("<html>a blog</html>")

    async with on_loopback(Starlette(routes=[Route("/{path:path}", page)])) as url:
        with pytest.raises(tn.PeerError) as caught:
            await tn.fetch_card(url)
    assert str(caught.value) == (
        f"no agent card at {url}/.well-known/agent-card.json (404), and the agent card at "
        f"{url}/.well-known/agent.json is not JSON"
    )


async def test_a_reply_streamed_as_appends_prints_the_same_sent_or_streamed():
    """The official SDK server streams one reply as three appends to one artifact, which it keeps as
    three text parts: a plain send prints them as one text, as --stream does (it printed a line per
    part: "echo: chu" / "nked repl" / "y please")."""
    from .peers.sdk_server import sdk_server

    printed = []
    async with sdk_server() as url:
        for extra in ([], ["--stream"]):
            code, out, err = await arun_cli("send", url, "chunked reply please", *extra)
            assert code == 0, err
            printed.append(out)
    assert printed == ["echo: chunked reply please\n"] * 2


@pytest.mark.parametrize("stream", [False, True])
async def test_send_to_a_hybrid_gets_the_reply_whole_sent_or_streamed(stream):
    """0.3's method names, 1.0's shapes, and a stream that ends without the artifact (as fasta2a
    2.1 was seen): the reply is printed either way (the stream is followed by a get)."""
    from .peers.hybrid_stub import hybrid_stub

    async with hybrid_stub() as stub:
        code, out, err = await arun_cli(
            "send", stub.url, "hi there", *(["--stream"] if stream else [])
        )
    assert code == 0, err
    assert out == "echo: hi there\n" and "[completed]" in err
    # the stream (or the send's, followed over SubscribeToTask) ended without the artifact: a get
    assert stub.methods[-1] == "GetTask"
    assert ("SendStreamingMessage" in stub.methods) is stream


async def test_send_stream_to_a_peer_that_cannot_stream_is_answered_and_says_so():
    """An upstream toolnexus port answers message/stream with -32601: --stream still gets the reply."""
    from .peers.legacy_stub import legacy_stub

    async with legacy_stub() as stub:
        code, out, err = await arun_cli("send", stub.url, "what is 6*7?", "--stream")
    assert code == 0, err
    assert out.strip() == "echo: what is 6*7?"
    assert "warning:" in err and "blocking send instead of a stream" in err
    assert stub.methods[:3] == ["message/stream", "message/send", "SendMessage"]


async def test_send_stream_prints_each_piece_as_the_peer_streams_it_through_a_pipe():
    """Each piece comes out as the model says it, not at the end, through a pipe as on a terminal;
    a hostile piece (ANSI, BEL) is shown, never obeyed; the finished reply ends the line. The model
    says its second piece only once the first came out of the pipe (a command that held it to the
    end never gets there, and fails): the first word's arrival was timed against the model's last
    word, 1.2 s later, which a child process a loaded machine holds back need not keep."""
    import asyncio

    import toolnexus as tn
    from toolnexus.display import printable

    words = ["Hello ", "\x1b[31mred\x1b[0m ", "there\x07 ", "friend."]
    out = asyncio.Event()  # the first piece came out of the pipe

    async def model(request):
        for i, word in enumerate(words):
            if i == 1:
                await asyncio.wait_for(out.wait(), 30)
            elif i:
                await asyncio.sleep(0.4)
            yield word

    tk = await tn.create_toolkit(builtins=False)
    async with tk.serve(
        client=tn.create_in_process_client(model), a2a=tn.A2AConfig(name="d")
    ) as handle:
        proc = await asyncio.create_subprocess_exec(
            *cli("send", handle.url, "hi", "--stream"),
            stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
        )
        assert proc.stdout is not None
        got = b""
        while chunk := await asyncio.wait_for(proc.stdout.read(1024), 60):
            got += chunk
            if len(got) >= len("Hello "):
                out.set()
        err = await proc.stderr.read() if proc.stderr else b""
        assert await proc.wait() == 0, err
    assert got.decode() == printable("".join(words)) + "\n"
    assert "\x1b" not in got.decode() and "\x07" not in got.decode()


def test_a_served_agent_describes_itself_and_validate_fails_an_empty_description(tmp_path):
    """Issue 61 item 8: `toolnexus serve` without --description published "" (A2A linters fail
    such a card: a2a lint grades it D and exits 1) and `card --validate` only warned. The card now
    says what the agent's skills do, and --validate fails (exit 1) a card whose description is
    empty, as those linters do."""
    skills = str(ROOT / "examples" / "skills")
    with started_cli("serve", "--json", "--skills", skills, "--name", "desk") as proc:
        url = read_until(proc, "ready")[0]["url"]
        out = run_cli("card", url, "--json", "--validate")
    assert out.returncode == 0, out.stdout
    data = json.loads(out.stdout)
    described = data["card"]["description"]
    assert described.startswith("An A2A agent with 3 skills: greet (") and "weather (" in described
    assert data["validation"]["ok"] is True

    blank = {**data["card"], "description": ""}  # the same card, as an agent without one serves it
    (tmp_path / ".well-known").mkdir()
    (tmp_path / ".well-known" / "agent-card.json").write_text(json.dumps(blank))
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(tmp_path))
    with http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler) as files:
        threading.Thread(target=files.serve_forever, daemon=True).start()
        try:
            out = run_cli("card", f"http://127.0.0.1:{files.server_address[1]}", "--validate")
        finally:
            files.shutdown()
    assert out.returncode == 1, out.stdout
    assert "error   $.description: description is empty" in out.stdout


def test_mcp_run_by_hand_says_what_it_is_for_and_ctrl_c_stops_it_while_it_reads(tmp_path):
    """Issue 61 item 6: `toolnexus mcp` typed at a terminal (stdin a tty) waited silently; it says
    on stderr that it is for a desktop MCP host and that Ctrl-C stops it. stdout stays the
    protocol's alone. And Ctrl-C does stop it once it is reading the terminal (after a host's
    `initialize` is answered): it waited, after Ctrl-C, for a line or end of file on its stdin
    thread (it ended only on Enter, exit 0); now exit 130, as a shell reports Ctrl-C, no
    traceback."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        cli("mcp", "--skills", str(ROOT / "examples" / "skills")),
        stdin=follower,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        # Ctrl-C as a terminal's shell hands it on: an ignored SIGINT is inherited through exec,
        # and this test process may be ignoring it (an earlier test's library set it so)
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    os.close(follower)
    said = out = ""

    def read(stream, until: str, deadline: float) -> str:
        got = ""
        while until not in got:
            left = deadline - time.monotonic()
            assert left > 0, (said, got)
            if select.select([stream], [], [], left)[0]:  # the fd: no buffer hides a line
                chunk = os.read(stream.fileno(), 65536).decode("utf-8", "replace")
                assert chunk, (said, got)  # it ended
                got += chunk
        return got

    try:
        deadline = time.monotonic() + 20
        said = read(proc.stderr, "Ctrl-C stops it", deadline)
        os.write(leader, json.dumps(MCP_INIT).encode() + b"\n")  # typed, as a host would write it
        out = read(proc.stdout, "\n", deadline)  # answered: it reads the terminal for the next
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            rest, err = proc.communicate(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()  # not left running into the next test
            proc.communicate()
            raise AssertionError(
                f"toolnexus mcp did not end on Ctrl-C (SIGINT here: {signal.getsignal(signal.SIGINT)})"
            ) from None
        finally:
            os.close(leader)
    assert "for a desktop MCP host" in said
    assert json.loads(out)["result"]["serverInfo"]["name"] == "toolnexus"
    assert rest == ""  # nothing but the protocol on stdout
    assert proc.returncode == 130 and "Traceback" not in err, (proc.returncode, err)


def test_a_config_files_extended_card_is_served_with_the_command_lines_auth(tmp_path, monkeypatch):
    """Issue 62 item 5: the config is checked once every flag is applied, so ``--auth-token-env``
    is the auth an ``a2a.extendedSkills`` card needs (it was refused, with a traceback)."""
    (tmp_path / "c.json").write_text(json.dumps({"a2a": {"extendedSkills": ["weather"]}}))
    monkeypatch.setenv("TN_TEST_TOKEN", "s3cret-token")
    skills = str(ROOT / "examples" / "skills")
    args = ("serve", "--json", "--config", "c.json", "--skills", skills)
    with started_cli(*args, "--auth-token-env", "TN_TEST_TOKEN", cwd=tmp_path) as proc:
        url = read_until(proc, "ready")[0]["url"]
        public = httpx.get(url + "/.well-known/agent-card.json").json()
        assert public["capabilities"]["extendedAgentCard"] is True
        assert "weather" not in {s["id"] for s in public["skills"]}
        bearer = {"Authorization": "Bearer s3cret-token", "A2A-Version": "1.0"}
        extended = httpx.get(url + "/extendedAgentCard", headers=bearer).json()
        assert "weather" in {s["id"] for s in extended["skills"]}


@pytest.mark.parametrize(
    ("command", "config", "needle"),
    [
        ("serve", {"a2a": {"extendedSkills": ["x"]}}, "extended agent card is for authenticated"),
        ("serve", {"a2a": {"bogus": 1}}, "a2a.bogus is not a known option"),
        ("serve", {"a2a": {"tenants": ["v1"]}}, "a2a.tenants: 'v1'"),
        ("mcp", {"mcpServer": {"bogus": 1}}, "mcpServer.bogus is not a known option"),
    ],
)
def test_a_config_that_cannot_be_used_is_a_usage_error(command, config, needle, tmp_path):
    """Every ConfigError from serve and mcp: one line, exit 2, no traceback (issue 62 item 5)."""
    (tmp_path / "c.json").write_text(json.dumps(config))
    done = run_cli(command, "--config", "c.json", cwd=tmp_path)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert needle in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1


def test_each_serve_flag_names_a_config_key_that_exists_and_the_guide_lists_it():
    """``SERVE_FLAGS`` is the one table of serve flags and config keys: each key it names is a field
    of the block it names, and the guide's table says the same pairs (a renamed field, or a flag
    given a key, fails here)."""
    fields = {f.name for f in dataclasses.fields(tn.A2AConfig)}
    keyed = [flag for flag in SERVE_FLAGS if flag.key is not None]
    assert keyed and all(
        flag.key in CONFIG_KEYS or flag.key.removeprefix("a2a.") in fields for flag in keyed
    )
    guide = (ROOT / "docs" / "guide.md").read_text()
    rows = {
        (name, key.strip("` ").split("`")[0])
        for line in guide.splitlines()
        if line.startswith("| `--")
        and ("| `a2a." in line or "| `mcpServer`" in line or "| `maxConnections`" in line)
        for names, key in [line.strip("|").split("|")[:2]]
        for name in re.findall(r"`(--[a-z0-9-]+)`", names)
    }
    assert rows == {(flag.name, flag.key) for flag in keyed}


async def _at_the_limit(url: str, held: int) -> tuple[int, str]:
    """Hold ``held`` connections (each a request head never ended), then send one request more on
    a fresh connection: its status and body; the connections are closed after."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    writers = []
    try:
        for _ in range(held):
            _, writer = await asyncio.open_connection(host, int(port))
            writer.write(b"GET / HTTP/1.1\r\n")
            await writer.drain()
            writers.append(writer)
        async with httpx.AsyncClient(timeout=30) as http:
            r = await http.get(url + "/.well-known/agent-card.json")
        return r.status_code, r.text
    finally:
        for writer in writers:
            writer.close()


@pytest.mark.parametrize("given", ["flag", "config"])
async def test_the_connection_limit_is_given_said_at_start_and_the_next_request_gets_503(
    given, tmp_path
):
    """``serve --max-connections N`` (or the config's ``maxConnections``): the start says N, N
    connections are held and the one after gets 503 (issue 65 item 3). The server raised its
    open-file limit to the hard limit (started here with 256 of 4,096) and says so."""
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"maxConnections": 5}))
    args = ("--max-connections", "5") if given == "flag" else ("--config", str(config))
    async with Served(*args, inside=["prlimit", "--nofile=256:4096", "--"]) as served:
        await served.until(lambda lines: served.events("ready"), timeout=60)
        [said] = served.events("connections")
        assert said == {
            "event": "connections",
            "max": 5,
            "open_files": 4096,
            "raised_from": 256,
            "accept_queue": accept_queue(),
        }
        url = served.events("started")[0]["url"]
        assert (await _at_the_limit(url, 4))[0] == 200
        assert await _at_the_limit(url, 5) == (503, "Service Unavailable")


async def test_by_default_the_limit_is_sized_from_the_open_file_limit():
    """With no flag nor key, the limit is what the open-file limit leaves for connections
    (``http.server.connections_for``: 200 files, 64 kept, halved: 68), said at start and held."""
    async with Served(inside=["prlimit", "--nofile=200:200", "--"]) as served:
        await served.until(lambda lines: served.events("ready"), timeout=60)
        [said] = served.events("connections")
        assert said == {
            "event": "connections",
            "max": 68,
            "open_files": 200,
            "raised_from": 200,
            "accept_queue": accept_queue(),
        }
        url = served.events("started")[0]["url"]
        assert (await _at_the_limit(url, 67))[0] == 200
        assert await _at_the_limit(url, 68) == (503, "Service Unavailable")


async def test_the_accept_queue_is_as_deep_as_the_machine_allows():
    """New connections wait in the kernel's accept queue until the server takes them; a burst
    that overflows it is dropped (resets). uvicorn listened with its own 2,048, half of what this
    machine allows (Linux's net.core.somaxconn): the server listens with all of it, and says so."""
    async with Served() as served:
        await served.until(lambda lines: served.events("ready"), timeout=60)
        port = served.events("started")[0]["url"].rsplit(":", 1)[1]
        listening = subprocess.run(
            ["ss", "-ltnH", f"sport = :{port}"], capture_output=True, text=True, check=True
        ).stdout.split()
        machine = int(Path("/proc/sys/net/core/somaxconn").read_text())
        assert int(listening[2]) == accept_queue() == machine  # its Send-Q: the queue's length
        assert served.events("connections")[0]["accept_queue"] == machine
