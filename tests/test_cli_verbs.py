"""The command does what the TUI does (issue 61 item 7): ``toolnexus task get|cancel|list|
resubscribe``, ``toolnexus push set|get|list|delete``, and ``send --continue --data
--save-artifacts --no-wait``, ``--json`` a line per event; run as a user runs them, against our
server and the official a2a-sdk 1.3 server."""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shlex
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

import toolnexus as tn
from toolnexus.cli import _parser

from .conftest import EXAMPLE_SKILLS
from .helpers import arun_cli
from .peers.sdk_server import sdk_server


@contextlib.asynccontextmanager
async def demo_agent() -> AsyncIterator[str]:
    """The example skills on the demo model, served on a loopback port: its URL."""
    tk = await tn.create_toolkit([str(EXAMPLE_SKILLS)], builtins=False)
    async with tk.serve(client=tn.demo_client(), a2a=tn.A2AConfig(name="desk")) as handle:
        yield handle.url


JSON = "application/json"


def lines(out: str) -> list[dict]:
    """Every line of ``out``, each one JSON object."""
    return [json.loads(line) for line in out.splitlines()]


async def test_continue_answers_the_question_then_goes_on_in_the_same_context(tmp_path: Path):
    env = {**os.environ, "TOOLNEXUS_STATE_DIR": str(tmp_path / "state")}
    async with demo_agent() as url:
        code, out, err = await arun_cli("send", url, "draft the weekly report", "--json", env=env)
        asked = lines(out)[-1]["task"]
        assert code == 0 and asked["status"]["state"] == "input-required", err
        code, out, err = await arun_cli("send", url, "yes", "--continue", env=env)
        assert code == 0, err
        assert out.startswith('Using the "report" skill: Request approved (yes).'), out
        assert f"[completed] task {asked['id']} context {asked['contextId']}" in err
        # the task it answered is over: the next one is new, in the same conversation
        code, out, err = await arun_cli("send", url, "greet Ada", "--continue", "--json", env=env)
        task = lines(out)[-1]["task"]
        assert code == 0 and task["contextId"] == asked["contextId"] and task["id"] != asked["id"]
        code, _, err = await arun_cli("send", "http://127.0.0.1:1", "hi", "--continue", env=env)
    assert code == 2 and err.strip() == (
        "toolnexus: --continue: nothing was sent to http://127.0.0.1:1 from here yet; send "
        "without it first"
    )


async def test_continue_answers_a_question_asked_after_a_send_that_did_not_wait(tmp_path: Path):
    """Issue 61 item 7 (the look at e1ba206): ``send --no-wait`` remembered its task as it was sent
    (submitted), so ``send yes --continue`` once it asked started a new task and the question was
    left waiting. ``--continue`` asks the peer how the task is now."""
    env = {**os.environ, "TOOLNEXUS_STATE_DIR": str(tmp_path / "state")}
    async with demo_agent() as url:
        code, out, err = await arun_cli(
            "send", url, "draft the weekly report", "--no-wait", env=env
        )
        asked = out.strip()
        assert code == 0 and "[submitted]" in err, err
        code, out, err = await arun_cli("task", "resubscribe", url, asked, "--json", env=env)
        assert code == 0 and lines(out)[-1]["task"]["status"]["state"] == "input-required", err
        code, out, err = await arun_cli("send", url, "yes", "--continue", env=env)
        assert code == 0 and out.startswith('Using the "report" skill: Request approved (yes).'), (
            out,
            err,
        )
        assert f"[completed] task {asked} " in err, err


async def test_no_wait_returns_the_task_and_the_task_verbs_read_list_cancel_and_follow_it():
    async with demo_agent() as url:
        code, out, err = await arun_cli("send", url, "slow 60", "--no-wait")
        task_id = out.strip()
        assert code == 0 and "[submitted]" in err and len(task_id) == 36, (out, err)
        code, _, err = await arun_cli("task", "get", url, task_id)
        assert code == 0 and f"task {task_id} working" in err, err
        code, out, err = await arun_cli("task", "list", url, "--state", "working", "--json")
        assert code == 0 and [t["id"] for t in lines(out)[0]["tasks"]] == [task_id], err
        code, out, _ = await arun_cli("task", "list", url)
        assert out.split()[:2] == ["working", task_id]
        code, _, err = await arun_cli("task", "cancel", url, task_id)
        assert code == 0 and f"[canceled] task {task_id}" in err, err
        code, _, err = await arun_cli("task", "get", url, task_id)
        assert code == 1 and f"task {task_id} canceled" in err  # as send: a canceled task is 1
        # nothing to follow: said, and the task read instead
        code, out, err = await arun_cli("task", "resubscribe", url, task_id, "--json")
        assert code == 1 and "already canceled" in err and "read with GetTask instead" in err
        assert lines(out)[-1]["task"]["status"]["state"] == "canceled"
        # a running one is followed to its end, a JSON line per event
        code, out, _ = await arun_cli("send", url, "slow 1", "--no-wait")
        code, out, err = await arun_cli("task", "resubscribe", url, out.strip(), "--json")
    events = lines(out)
    assert code == 0, err
    assert [e["state"] for e in events if e["event"] == "state"][-1] == "completed"
    assert events[-1]["event"] == "task" and events[-1]["task"]["status"]["state"] == "completed"
    assert "".join(e["text"] for e in events if e["event"] == "text") == "You said: slow 1"


async def test_stream_json_is_a_line_per_event_then_the_task():
    async with demo_agent() as url:
        code, out, err = await arun_cli("send", url, "greet Ada", "--stream", "--json")
    events = lines(out)
    assert code == 0, err
    states = [e["state"] for e in events if e["event"] == "state"]
    assert states[-1] == "completed" and "working" in states
    final = events[-1]
    assert final["event"] == "task" and final["binding"] == "JSONRPC"
    text = "".join(e["text"] for e in events if e["event"] == "text")
    assert text == final["task"]["artifacts"][0]["parts"][0]["text"]
    assert text.startswith('Using the "greet" skill: Hello, Ada!')
    assert {e["task"] for e in events[:-1]} == {final["task"]["id"]}


@pytest.mark.parametrize("peer", ["toolnexus", "a2a-sdk"])
async def test_push_configs_are_set_read_listed_and_deleted(peer: str):
    env = {**os.environ, "HOOK_TOKEN": "hook-secret-42"}
    served = demo_agent() if peer == "toolnexus" else sdk_server(push=True)
    async with served as url:
        code, out, _ = await arun_cli("send", url, "slow 60", "--no-wait")
        task_id = out.strip()
        hook = "http://127.0.0.1:9/hook"
        code, out, err = await arun_cli(
            "push", "set", url, task_id, hook, "--id", "c1", "--token-env", "HOOK_TOKEN", env=env
        )
        assert code == 0 and out == f"c1  {hook}  (token set)\n", err
        assert "hook-secret-42" not in out + err
        code, out, err = await arun_cli("push", "list", url, task_id, "--json")
        assert code == 0 and lines(out) == [
            {"configs": [{"id": "c1", "task": task_id, "url": hook, "token": True, "scheme": None}]}
        ], err
        code, out, _ = await arun_cli("push", "get", url, task_id, "c1")
        assert out.startswith(f"c1  {hook}")
        code, out, err = await arun_cli("push", "delete", url, task_id, "c1")
        assert code == 0 and out == f"deleted push config c1 of task {task_id}\n", err
        code, out, err = await arun_cli("push", "list", url, task_id)
        assert code == 0 and out == "" and "has no push config" in err
        code, _, err = await arun_cli("push", "get", url, "no-such-task")
        assert code == 1 and err.startswith("toolnexus: ") and len(err.splitlines()) == 1
        await arun_cli("task", "cancel", url, task_id)


async def test_data_parts_go_out_and_artifacts_are_saved_safely_and_never_over_a_file(
    tmp_path: Path,
):
    """The official server (its card taking JSON) echoes the data part as an artifact, and adds
    a file named ``../../escape.txt``: each is written inside the folder, a name already there is
    given another and said. An agent that takes only text is sent the text, and told why not."""
    folder = tmp_path / "deep" / "out"
    folder.mkdir(parents=True)
    (folder / "reply.txt").write_text("mine")
    async with sdk_server(shaped=lambda card: card.default_input_modes.append(JSON)) as url:
        code, out, err = await arun_cli(
            "send", url, "here", "--data", '{"city": "Oslo"}', "--save-artifacts", str(folder)
        )
        assert code == 0 and out.startswith("echo: here (+1 parts)"), err
        assert "saved 3 file(s) in" in err and "none overwritten: reply.txt as reply-2.txt" in err
        code, out, err = await arun_cli(
            "send", url, "again", "--data", "[1, 2]", "--save-artifacts", str(folder), "--json"
        )
    saved = lines(out)[-1]["saved"]
    assert code == 0, err
    assert (folder / "reply.txt").read_text() == "mine"
    assert json.loads((folder / "echoed.json").read_text()) == {"city": "Oslo"}
    assert saved["renamed"] == [
        "echoed.json as echoed-2.json",
        "escape.txt as escape-2.txt",
        "reply.txt as reply-3.txt",
    ]
    assert json.loads((folder / "echoed-2.json").read_text()) == [1, 2]
    assert sorted(p.name for p in folder.iterdir()) == [
        "echoed-2.json",
        "echoed.json",
        "escape-2.txt",
        "escape.txt",
        "reply-2.txt",
        "reply-3.txt",
        "reply.txt",
    ]
    assert sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("escape*")) == [
        "deep/out/escape-2.txt",
        "deep/out/escape.txt",
    ]
    async with sdk_server() as url:  # its card takes text only
        code, out, err = await arun_cli("send", url, "x", "--data", "1")
    assert code == 0 and out == "echo: x\n", err
    assert "warning: the agent takes text/plain: data 1 (application/json) is not sent" in err


async def test_the_sdk_server_lists_cancels_and_streams_a_task_to_the_verbs():
    async with sdk_server() as url:  # its "slow" works 30 s: followed and canceled before
        code, out, _ = await arun_cli("send", url, "slow", "--no-wait")
        task_id = out.strip()
        code, out, err = await arun_cli(
            "task", "resubscribe", url, task_id, "--json", "--timeout", "2"
        )
        assert code == 1 and "the task was still working after 2s" in err, err
        events = lines(out)  # followed, no reply yet; then the task as it was last seen
        assert [e["event"] for e in events] == ["state", "task"]
        assert events[0]["state"] == events[1]["task"]["status"]["state"] == "working"
        code, _, err = await arun_cli("task", "cancel", url, task_id)
        assert code == 0 and f"[canceled] task {task_id}" in err, err
        code, out, err = await arun_cli("task", "list", url, "--json")
        assert code == 0 and task_id in [t["id"] for t in lines(out)[0]["tasks"]], err
        # a task that asks: followed until it asks (the server keeps the subscription open)
        code, out, _ = await arun_cli("send", url, "a question please", "--json")
        asked = lines(out)[-1]["task"]["id"]
        code, out, err = await arun_cli("task", "resubscribe", url, asked, "--json")
        assert code == 0 and lines(out)[-1]["task"]["status"]["state"] == "input-required", err


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["send", "URL"], "send needs the message's TEXT (or --data or --file)"),
        (["send", "URL", "hi", "--data", "{nope"], "--data {nope: not JSON"),
        (["send", "URL", "hi", "--continue", "--task", "t"], "--continue goes on with"),
        (["send", "URL", "hi", "--no-wait", "--stream"], "--no-wait returns at once"),
        (["send", "URL", "hi", "--save-artifacts", "FILE"], "that is a file, not a folder"),
        (["push", "set", "URL", "t", "ftp://x"], "the webhook must be an http:// or https://"),
        (["push", "set", "URL", "t", "http://h/", "--token-env", "UNSET_VAR_X"], "is not set"),
        (["task", "list", "not a url"], "not a"),
    ],
)
async def test_a_mistake_is_one_line_and_exit_2(args: list[str], said: str, tmp_path: Path):
    (tmp_path / "FILE").write_text("x")
    argv = [
        "http://127.0.0.1:1" if a == "URL" else str(tmp_path / "FILE") if a == "FILE" else a
        for a in args
    ]
    code, out, err = await arun_cli(*argv)
    assert code == 2 and out == "" and len(err.splitlines()) == 1, (code, out, err)
    assert said in err


def _parsers(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()):
    """Every command's parser, and each verb's (``task get``), with the words that reach it."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def test_every_help_ends_with_examples_that_the_command_takes():
    """Each ``--help`` (the command's, every subcommand's and verb's) ends with examples, and each
    ``toolnexus ...`` in them parses: an example naming a flag that is gone fails here."""
    seen = 0
    for path, parser in _parsers(_parser()):
        epilog = parser.epilog or ""
        assert epilog.startswith("examples:\n  "), f"toolnexus {' '.join(path)} --help"
        for typed in re.findall(r"toolnexus [^|&)#>\n]*", epilog):
            try:
                _parser().parse_args(shlex.split(typed)[1:])
            except SystemExit:
                pytest.fail(f"toolnexus {' '.join(path)} --help shows {typed!r}, refused")
            seen += 1
    assert seen >= 40


async def test_the_help_s_data_example_works_and_a_message_left_empty_is_not_sent():
    """Issue 61 item 7 (the look at e1ba206): ``send --data '{"city": "Oslo"}' --skill weather``,
    ``send --help``'s own example, left the data out (the skill took text only), sent an empty
    message and printed the server's error, exit 1. The demo's weather skill takes JSON naming its
    arguments, so the example answers; data to a skill that takes none is refused here, in one
    line, exit 2, and nothing goes out."""
    async with demo_agent() as url:
        code, out, err = await arun_cli(
            "send", url, "--data", '{"city": "Oslo"}', "--skill", "weather"
        )
        assert code == 0 and out.startswith('Using the "weather" skill: Oslo: '), (out, err)
        assert "warning" not in err, err
        code, out, err = await arun_cli(
            "send", url, "--data", '{"name": "Ada"}', "--skill", "greet"
        )
        assert code == 2 and out == "", (out, err)
        assert err.splitlines() == [
            'toolnexus: warning: the skill greet takes text/plain: data {"name": "Ada"} '
            "(application/json) is not sent",
            "toolnexus: nothing left to send: the skill greet takes none of the parts; nothing sent",
        ]
        code, out, _ = await arun_cli("task", "list", url, "--json")
    assert code == 0 and len(lines(out)[0]["tasks"]) == 1  # the weather's: none for greet


async def test_the_message_may_be_typed_unquoted_and_words_cut_by_a_flag_are_said_how_to_type():
    """Issue 61 (the look at e1ba206): ``toolnexus send URL weather in Oslo`` printed the top-level
    usage and ``unrecognized arguments: in Oslo``. Its words are the message, joined, as
    ``%toolnexus send URL greet Ada`` takes them in a notebook (and as ``ollama run`` and
    ``aichat`` take a prompt); words that a flag cuts in two are a mistake that says the quoted
    form."""
    async with demo_agent() as url:
        code, out, err = await arun_cli("send", url, "weather", "in", "Oslo")
        assert code == 0 and out.startswith('Using the "weather" skill: Oslo: '), (out, err)
        code, out, err = await arun_cli("send", url, "weather", "--json", "in", "Oslo")
    assert code == 2 and out == "", (out, err)
    assert err.splitlines()[-1] == (
        "toolnexus: error: unrecognized arguments: in Oslo; the message's words go together, "
        'quoted: "weather in Oslo"'
    )


async def test_the_message_after_the_flags_is_the_message():
    """The look at f6e35d4: ``toolnexus send URL --stream "greet Ada"``, the message quoted after
    a flag, exited 2 with ``unrecognized arguments: greet Ada; the message's words go together,
    quoted: "greet Ada"`` (argparse gives the words nothing as it reads the URL, and then finds
    them unknown). Words after the flags, one run of them, are the message; words a flag cuts in
    two still say the quoted form."""
    async with demo_agent() as url:
        code, out, err = await arun_cli("send", url, "--stream", "greet Ada")
        assert code == 0 and out.startswith('Using the "greet" skill: Hello, Ada!'), (out, err)
        code, out, err = await arun_cli("send", url, "--json", "--skill", "weather", "in", "Oslo")
        task = lines(out)[-1]["task"]
        assert code == 0 and task["history"][0]["parts"][0]["text"] == "in Oslo", (out, err)
        code, out, err = await arun_cli("send", url, "--json", "weather", "--skill", "x", "Oslo")
    assert code == 2 and out == "", (out, err)
    assert err.splitlines()[-1] == (
        "toolnexus: error: unrecognized arguments: weather Oslo; the message's words go together, "
        'quoted: "weather Oslo"'
    )
