"""A session as a Mermaid sequence diagram (issue 64 item 4): ``toolnexus replay FILE --mermaid``
over a real session recorded against our server and the official a2a-sdk server in one cassette
(a lane each), states, artifacts and an error labelled, and a peer's text never passed through."""

from __future__ import annotations

import json
import re

import toolnexus as tn
from toolnexus.debug.cassette import CassetteWriter
from toolnexus.debug.diagram import Diagram

from .conftest import ROOT
from .helpers import arun_cli, run_cli
from .peers.sdk_server import sdk_server
from .test_replay import serve_demo

_STATEMENT = re.compile(
    r"^    (participant agent\d+ as \S+|participant client as client|client->>agent\d+: .+"
    r"|agent\d+-->>client: .+|agent\d+--x client: .+)$"
)


async def test_a_recorded_session_is_drawn_a_lane_per_agent(tmp_path):
    tape = tmp_path / "s.jsonl"
    writer = CassetteWriter(tape)
    server = await serve_demo()
    try:
        async with sdk_server() as sdk_url:
            async with tn.A2AClient(server.url, record=writer) as ours:
                await ours.send("weather in Lisbon please", blocking=True)
                [t async for t in ours.stream("hello there")]
                try:
                    await ours.get("no-such-task")
                except tn.RPCError:
                    pass
            async with tn.A2AClient(sdk_url, record=writer) as theirs:
                await theirs.send("hello", blocking=True)
    finally:
        writer.close()
        await server.stop()
    code, out, err = await arun_cli("replay", str(tape), "--mermaid")
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "sequenceDiagram"
    assert all(_STATEMENT.match(line) for line in lines[1:]), out
    assert [line for line in lines if line.startswith("    participant agent")] == [
        f"    participant agent1 as {server.url}",
        f"    participant agent2 as {sdk_url}",
    ]
    assert "    agent1-->>client: card demo-desk" in lines
    assert "    agent1-->>client: task completed artifacts reply" in lines  # the blocking send
    assert "    agent1-->>client: status-update working" in lines  # the stream, frame by frame
    assert any(re.match(r"    agent1--x client: error -32001 ", line) for line in lines), out
    assert "    agent2-->>client: task completed artifacts reply" in lines or any(
        line.startswith("    agent2-->>client: task completed") for line in lines
    ), out
    assert Diagram.of(tape)._repr_markdown_() == f"```mermaid\n{out}```\n"


def test_a_peers_text_cannot_write_the_diagram(tmp_path):
    """A recorded card's name and an error's message carrying Mermaid's statement separator, a
    directive, a comment and a line break come out as words."""
    tape = tmp_path / "hostile.jsonl"
    hostile = "x;\n%%{init: {}}%% #9829; participant evil"
    rows = [
        {"toolnexus_cassette": 1},
        {
            "seq": 1,
            "direction": "out",
            "method": "GET",
            "url": "http://peer.test/.well-known/agent-card.json",
            "rpc_method": None,
            "request": {},
            "response": {"status": 200, "json": {"name": hostile, "skills": []}},
        },
        {
            "seq": 2,
            "direction": "out",
            "method": "POST",
            "url": "http://peer.test/",
            "rpc_method": "SendMessage",
            "request": {"json": {}},
            "response": {
                "status": 200,
                "json": {"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": hostile}},
            },
        },
    ]
    tape.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    source = Diagram.of(tape).source
    lines = source.splitlines()
    assert len(lines) == 7 and "%%" not in source and ";" not in source, source
    assert "#" not in source and sum(line.startswith("    participant") for line in lines) == 2
    assert all(_STATEMENT.match(line) for line in lines[1:]), source


def test_the_guides_diagram_is_what_replay_prints_for_the_demo_cassette():
    """The diagram docs/guide.md shows is ``replay --mermaid``'s output for the cassette it names,
    whole: a change to the drawing, or to the page, shows here."""
    guide = (ROOT / "docs" / "guide.md").read_text(encoding="utf-8")
    (shown,) = re.findall(r"```mermaid\n(sequenceDiagram\n.*?)```", guide, re.DOTALL)
    assert "`tests/cassettes/demo-desk.jsonl`" in guide.split(shown)[0].rsplit("\n- ", 1)[1]
    done = run_cli("replay", str(ROOT / "tests" / "cassettes" / "demo-desk.jsonl"), "--mermaid")
    assert done.returncode == 0, done.stderr
    assert shown == done.stdout
