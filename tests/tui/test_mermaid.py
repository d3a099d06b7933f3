"""The TUI draws what the wire carried as ``toolnexus replay --mermaid`` draws a cassette (issue 64
item 4): ``m`` in Wire copies the exchanges shown, ``M`` in Tasks the selected task's trace, each
a Mermaid sequence diagram made by ``debug.diagram`` (a lane per agent; states, artifacts and
errors labelled). Real servers on port 0, our client, real pilots."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("textual")

from textual.widgets import Input  # noqa: E402

import toolnexus as tn  # noqa: E402
from toolnexus.hosting import demo_spec  # noqa: E402
from tui.app import ToolnexusApp  # noqa: E402
from tui.widgets.rowtable import RowTable  # noqa: E402

from ..helpers import arun_cli  # noqa: E402
from ..serve.test_hops import chain  # noqa: E402
from .test_pilot import until  # noqa: E402


def _arrows(source: str) -> list[str]:
    return [line for line in source.splitlines() if "->>" in line or "--" in line]


async def test_the_wire_is_copied_as_the_replays_diagram_of_the_same_session(tmp_path):
    """Our client talks to the hosted demo, recording a cassette and logging on the app's bus: the
    exchange the app sees twice (sent, and received by its server) is drawn once, and every arrow
    ``replay --mermaid`` draws from the client's own cassette is in the Wire's diagram, in order."""
    tape = tmp_path / "s.jsonl"
    app = ToolnexusApp(specs=[demo_spec()], export_dir=tmp_path)
    async with app.run_test(size=(120, 40)) as pilot:
        await until(pilot, lambda: bool(app.workspace.running()))
        url = app.workspace.running()[0].url
        async with tn.A2AClient(url, record=tape, bus=app.workspace.events) as client:
            [t async for t in client.stream("hello there")]
            with pytest.raises(tn.RPCError):
                await client.get("no-such-task")
        sent = sum(1 for ev in app.book.traffic if ev.direction == "out" and ev.rpc_method)
        await until(pilot, lambda: sum(1 for ev in app.book.traffic if ev.direction == "in") >= 3)
        await pilot.press("5")
        await until(pilot, lambda: app.screen.query_one("#wire", RowTable).row_count >= sent)
        await pilot.press("m")
        await until(pilot, lambda: app.last_copy is not None)
        what, source = app.last_copy
        app.screen.query_one("#wire-filter", Input).value = "method:nothing-so-named"
        await pilot.pause(0.2)
        app.last_copy = None
        await pilot.press("m")  # nothing shown: nothing drawn, and said
        await pilot.pause(0.2)
        assert app.last_copy is None
        await pilot.press("ctrl+q")
    code, replayed, err = await arun_cli("replay", str(tape), "--mermaid")
    assert code == 0, err
    assert what == "wire as a Mermaid diagram" and source.startswith("sequenceDiagram\n")
    assert f"    participant agent1 as {url}" in source.splitlines(), source
    assert not re.search(r"participant agent2", source), source  # one origin: one lane
    drawn = _arrows(source)
    assert (
        sum(1 for a in drawn if re.match(r"    client->>agent1: (SendStreaming|message/s)", a)) == 1
    )
    assert any(re.match(r"    agent1--x client: error -32001 ", a) for a in drawn), source
    assert any("status-update working" in a for a in drawn), source
    at = 0
    for arrow in _arrows(replayed):  # the replay's arrows, in the Wire's, in order
        assert arrow in drawn[at:], (arrow, source)
        at = drawn.index(arrow, at) + 1


async def test_a_tasks_trace_is_copied_with_each_agent_calling_the_next(tmp_path):
    """A -> B -> C hosted on the app's bus with their wire recorded: ``M`` on A's task draws the
    caller's request to A, A's call to B from A's lane and B's to C from B's."""
    app = ToolnexusApp(specs=[])
    async with app.run_test(size=(120, 40)) as pilot:
        async with chain(tmp_path, events=app.workspace.events, record_wire=True) as (a, b, c, _):
            async with tn.A2AClient(a.url) as caller:
                asked = await caller.send("please approve the plan", blocking=True)
            await pilot.press("2")
            await until(pilot, lambda: app.current_mode == "tasks")
            await until(pilot, lambda: app.screen.query_one("#tasks", RowTable).row_count == 3)
            table = app.screen.query_one("#tasks", RowTable)
            table.move_cursor(row=table.get_row_index(asked.id))
            await pilot.pause(0.1)
            await pilot.press("M")
            await until(pilot, lambda: app.last_copy is not None)
            what, source = app.last_copy
        await pilot.press("ctrl+q")
    lines = source.splitlines()
    assert what == "trace as a Mermaid diagram" and lines[0] == "sequenceDiagram", source
    lanes = dict(re.findall(r"^    participant (agent\d) as (\S+)$", source, re.M))
    assert set(lanes.values()) == {a.url, b.url, c.url}, source
    named = {url: lane for lane, url in lanes.items()}
    calls = [line.split(":")[0].strip() for line in _arrows(source) if "->>" in line]
    assert f"client->>{named[a.url]}" in calls, source
    assert f"{named[a.url]}->>{named[b.url]}" in calls, source
    assert f"{named[b.url]}->>{named[c.url]}" in calls, source
    assert any(
        line.startswith(f"    {named[c.url]}-->>{named[b.url]}: ") and "input-required" in line
        for line in lines
    ), source
