"""The auditor (issue 64 item 1): a stream's contents checked, offline over a cassette
(``toolnexus audit``) and as our client receives (``send --stream`` against a replay playing it).
Each cassette is a real stream recorded from our server, in 1.0's and 0.3's shapes, with one fault
planted in its frames."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import toolnexus as tn
from toolnexus.debug.audit import audit
from toolnexus.debug.replay import ReplayPeer
from toolnexus.protocol.stream import FAULTS

from .helpers import arun_cli
from .peers.js_peer import js_server
from .peers.sdk03_server import sdk03_server
from .peers.sdk_server import sdk_server
from .test_replay import serve_demo


def _status(dialect: str, state: str, task: str = "task-1", context: str = "context-1") -> dict:
    body: dict[str, Any] = {"taskId": task, "contextId": context}
    if dialect == "1.0":
        body["status"] = {"state": "TASK_STATE_" + state.upper().replace("-", "_")}
        return {"statusUpdate": body}
    return {"kind": "status-update", **body, "status": {"state": state}, "final": False}


def _chunk(dialect: str, text: str, append: bool = True, last: bool = False) -> dict:
    body = {
        "taskId": "task-1",
        "contextId": "context-1",
        "artifact": {"artifactId": "artifact-1", "parts": [{"text": text}]},
        "append": append,
        "lastChunk": last,
    }
    if dialect == "1.0":
        return {"artifactUpdate": body}
    body["artifact"]["parts"][0]["kind"] = "text"
    return {"kind": "artifact-update", **body}


def _planted(dialect: str, fault: str) -> list[dict]:
    """The frames after the task's first (submitted): working, the reply, completed, with
    ``fault`` planted."""
    s, c = (lambda *a, **k: _status(dialect, *a, **k)), (lambda *a, **k: _chunk(dialect, *a, **k))
    reply = [c("You said: ", append=False), c("hello"), c(" there", last=True)]
    frames = [s("working"), *reply, s("completed")]
    if fault == "unopened":
        frames = [s("working"), c("You said: "), *reply[1:], s("completed")]
    elif fault == "after-last":
        frames = [s("working"), *reply, c(" extra"), s("completed")]
    elif fault == "duplicate":
        frames = [s("working"), reply[0], c("hello"), c("hello"), reply[2], s("completed")]
    elif fault == "unclosed":
        frames = [s("working"), reply[0], reply[1], c(" there"), s("completed")]
    elif fault == "after-terminal":
        frames = [*frames, s("working")]
    elif fault == "illegal":
        frames = [s("working"), *reply, s("submitted"), s("completed")]
    elif fault == "task-changed":
        frames = [s("working"), *reply, s("completed", task="task-99")]
    elif fault == "context-changed":
        frames = [s("working"), *reply, s("completed", context="context-99")]
    elif fault == "issue":  # the issue's: a chunk after the last one, then working after completed
        frames = [s("working"), *reply, c(" extra"), s("completed"), s("working")]
    return frames


async def _recorded(tmp_path: Path, dialect: str, send: bool = False) -> Path:
    """A real stream from our server, recorded in ``dialect`` (after a blocking send: what the
    doctor sends first)."""
    server = await serve_demo()
    tape = tmp_path / f"{dialect}.jsonl"
    try:
        async with tn.A2AClient(server.url, record=tape, dialect=dialect) as client:
            if send:
                await client.send("hello there", blocking=True)
            [t async for t in client.stream("hello there")]
    finally:
        await server.stop()
    return tape


def _cassette(clean: Path, dialect: str, fault: str) -> Path:
    """The recorded stream ``clean`` with its frames after the first replaced by the planted ones."""
    tape = clean.with_name(f"{dialect}-{fault}.jsonl")
    lines = clean.read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    for row in rows[1:]:
        if "frames" in row.get("response", {}):
            first = row["response"]["frames"][0]
            envelope = {k: v for k, v in first.items() if k != "result"}
            task = first["result"].get("task", first["result"])  # the recorded ids, planted
            planted = json.dumps(_planted(dialect, fault))
            planted = planted.replace('"task-1"', json.dumps(task["id"]))
            planted = planted.replace('"context-1"', json.dumps(task["contextId"]))
            row["response"]["frames"] = [first] + [
                {**envelope, "result": r} for r in json.loads(planted)
            ]
    tape.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    return tape


@pytest.mark.parametrize("dialect", ["1.0", "0.3"])
async def test_audit_names_each_planted_fault_and_a_clean_stream_is_clean(tmp_path, dialect):
    clean = await _recorded(tmp_path, dialect)
    code, out, err = await arun_cli("audit", str(clean))
    assert code == 0, out + err
    assert "no fault" in out and "stream:" in out and "✘" not in out and "!" not in out
    for fault, name in FAULTS.items():
        tape = _cassette(clean, dialect, fault)
        report = audit(tape)
        named = {f.check for f in report.findings if f.severity in ("warning", "error")}
        assert named & {f"stream: {n}" for n in FAULTS.values()} == {f"stream: {name}"}, (
            fault,
            report.text(),
        )
        code, out, _ = await arun_cli("audit", str(tape), "--fail-on", "warning")
        assert code == 1 and f"stream: {name}" in out, out
        code, out, _ = await arun_cli("audit", str(tape), "--json")
        data = json.loads(out)
        assert data["doctor"] == "audit"
        assert f"stream: {name}" in {f["check"] for f in data["findings"]}


async def test_audit_says_how_adk_and_crewai_read_a_chunked_stream(tmp_path):
    """By the doctor's own rules and words: ADK's is the peer's to fix (a warning), CrewAI's is
    CrewAI's doing (info)."""
    report = audit(_cassette(await _recorded(tmp_path, "1.0"), "1.0", "unopened"))
    said = {f.check: f for f in report.findings}
    assert "'You said: hello there'" in said["stream: read as"].message
    adk, crew = said["client: Google ADK"], said["client: CrewAI"]
    assert adk.severity == "warning" and adk.message.startswith("breaks: records only the last")
    assert "reads ' there'" in adk.message and adk.breaks == ["Google ADK"]
    assert crew.severity == "info" and crew.message.startswith("breaks: joins the chunks")
    assert "reads 'You said:  hello  there'" in crew.message


async def _streams_from(url: str, tape: Path, dialect: str = "auto") -> None:
    """A reply, a question and its answer, each streamed, recorded from the server at ``url``."""
    async with tn.A2AClient(url, record=tape, dialect=dialect) as client:
        [t async for t in client.stream("hello there")]
        *_, asked = [t async for t in client.stream("ask me a question")]
        if asked.state.interrupted:  # the a2a-sdk 0.3 agent echoes it
            [t async for t in client.stream("blue", task_id=asked.id, context_id=asked.context_id)]
        assert client.warnings == [], client.warnings


async def test_streams_recorded_from_the_official_servers_come_out_clean(tmp_path):
    """Streams recorded from the official a2a-sdk 1.x server (in 1.0 and, with its compat, 0.3),
    the a2a-sdk 0.3 server and the JS SDK's server (1.0 and 0.3) carry no fault and read the same
    to every reader. The JS SDK's agent asks its question straight from submitted (no working): the
    protocol names no order between unfinished states, so that is no fault. The SDK server that
    streams each reply in three appends closing with append: true, lastChunk: true is read
    otherwise by ADK (a warning, the peer's to fix) and CrewAI (info): no stream fault either."""
    tapes = {}
    async with sdk_server() as url:
        await _streams_from(url, tapes.setdefault("sdk", tmp_path / "sdk.jsonl"))
    async with sdk_server(compat=True) as url:
        await _streams_from(url, tapes.setdefault("sdk-0.3", tmp_path / "sdk-0.3.jsonl"), "0.3")
    async with sdk03_server() as url:
        await _streams_from(url, tapes.setdefault("sdk03", tmp_path / "sdk03.jsonl"))
    async with js_server() as url:
        await _streams_from(url, tapes.setdefault("js", tmp_path / "js.jsonl"))
    async with js_server(compat=True) as url:
        await _streams_from(url, tapes.setdefault("js-0.3", tmp_path / "js-0.3.jsonl"), "0.3")
    async with sdk_server(chunked=True) as url:
        await _streams_from(url, chunked := tmp_path / "chunked.jsonl")
    for name, tape in tapes.items():
        report = audit(tape)
        streams = [f for f in report.findings if f.check == "stream"]
        assert len(streams) >= 2 and all(f.severity == "ok" for f in streams), report.text()
        assert report.verdict.startswith("verdict: healthy"), (name, report.text())
    report = audit(chunked)
    said = {  # what it costs in tokens is said of every stream (test_cost)
        f.check: f.severity
        for f in report.findings
        if f.severity != "ok" and not f.check.startswith("cost")
    }
    assert said == {
        "stream: read as": "info",
        "client: Google ADK": "warning",
        "client: CrewAI": "info",
    }, report.text()


@pytest.mark.parametrize("dialect", ["1.0", "0.3"])
async def test_send_stream_warns_of_each_fault_as_it_receives(tmp_path, dialect):
    clean = await _recorded(tmp_path, dialect)
    for fault, name in {**FAULTS, "issue": "chunk after lastChunk"}.items():
        tape = _cassette(clean, dialect, fault)
        async with ReplayPeer(tape, match="method") as peer:
            code, out, err = await arun_cli(
                "send", peer.url, "hello there", "--stream", "--dialect", dialect
            )
        assert "toolnexus: warning: " in err and name in err, (fault, out, err)
        if fault in ("issue", "after-terminal"):  # the late working is said, and not taken
            assert "update after a terminal state" in err, err
            # it ends completed (exit 0, the reply), not "task ... working" (exit 1)
            assert code == 0 and err.splitlines()[-1].startswith("[completed]"), (out, err)


async def test_the_doctors_live_stream_probe_names_each_fault(tmp_path):
    """The doctor --send against a replay playing each planted stream: its stream probe names the
    fault (and nothing of the kind for the stream as recorded). The replayed card says no push: a
    replay never pushes, and the doctor's push probe waited 10 s for it in each of the 9 runs,
    half of the 20 s a command is given (a full run at load 18 killed one; 20-28 s each at load 8)."""
    clean = await _recorded(tmp_path, "1.0", send=True)
    rows = [json.loads(line) for line in clean.read_text().splitlines()]
    for row in rows:
        if str(row.get("url", "")).endswith("/.well-known/agent-card.json"):
            row["response"]["json"]["capabilities"]["pushNotifications"] = False
    clean.write_text("\n".join(json.dumps(row) for row in rows) + "\n")
    for fault, name in {None: None, **FAULTS}.items():
        tape = clean if fault is None else _cassette(clean, "1.0", fault)
        async with ReplayPeer(tape, match="method") as peer:
            _, out, _ = await arun_cli("doctor", peer.url, "--send", "--json")
        named = {
            f["check"] for f in json.loads(out)["findings"] if f["check"].startswith("stream: ")
        }
        assert named == ({f"stream: {name}"} if name else set()), (fault, named)
