"""The field (issue 58): the frameworks agents are built with, installed pinned from the package
registries (tests/peers/field.py), as real peers both ways: each framework's client against our
server (the demo model), and our client against each framework's server (the field's stub model).

Each test is one cell of :data:`CELLS`, and asserts what is observed today: a cell that ``works``;
one that fails because of our bug (``ours``: marked xfail, strict, with the issue item fixing it, so
it flips loudly when the fix lands: then make the cell ``works``); one where the framework is at
fault by the spec (``theirs``: the fault asserted precisely, so the test fails if the framework or
we change); one the framework does not do at all (``none``). docs/frameworks.md's matrix is
:func:`matrix` of the same table (``python -m tests.test_field`` prints it)."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import pytest

import toolnexus as tn

from .peers import field as peers

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "frameworks.md"

Side = Literal["client", "server"]
Verdict = Literal["works", "ours", "theirs", "none"]


@dataclass(frozen=True)
class Peer:
    name: str
    """As the page names it."""
    folder: str
    """Its folder under tests/peers."""
    opts: dict[str, Any] = field(default_factory=dict)
    """Its server script's options."""


PEERS = {
    "adk": Peer("Google ADK", "adk"),
    "strands": Peer("AWS Strands", "strands"),
    "strands-compliant": Peer(
        "AWS Strands, `enable_a2a_compliant_streaming`", "strands", {"compliant": True}
    ),
    "maf": Peer("Microsoft Agent Framework", "maf"),
    "fasta2a": Peer("pydantic fasta2a", "fasta2a"),
    "beeai": Peer("BeeAI", "beeai"),
    "crewai": Peer("CrewAI", "crewai"),
    "handler": Peer("a2a-handler", "handler"),
    "langgraph": Peer("LangGraph", "langgraph"),
    "gemini": Peer("Gemini CLI A2A server", "gemini"),
}

CAPABILITIES: dict[Side, tuple[str, ...]] = {
    "client": ("send", "multi-turn", "stream", "input-required", "failure"),
    "server": ("send", "stream", "multi-turn", "cancel"),
}


@dataclass(frozen=True)
class Cell:
    peer: str
    side: Side
    capability: str
    verdict: Verdict
    says: str
    """What is seen, whose fault it is by the spec, and what toolnexus does about it."""
    item: int = 0
    """For ``ours``: issue 58's item that fixes it."""


CELLS = [
    # its client -> our server
    Cell("adk", "client", "send", "works", "the reply, as sent"),
    Cell("adk", "client", "multi-turn", "works", "one ADK session is one context"),
    Cell(
        "adk",
        "client",
        "stream",
        "works",
        "ADK keeps only the artifact update marked `lastChunk`, reading it as the whole artifact; "
        "since issue 58 item 1 we close a stream with `append: false, lastChunk: true` and the "
        "whole text (as ADK's and fasta2a's servers do), which every reader takes as the whole",
    ),
    Cell(
        "adk",
        "client",
        "input-required",
        "works",
        "the question as ADK's human-in-the-loop form, a long-running "
        "`mock_function_call_for_required_user_input` call (no text: the turn's reply is empty); "
        "the answer, sent in the same session, goes with the task's id and continues it. ADK opens "
        "the answer's turn with the question again, marked `thought`: it reads the text of a "
        "stream's first frame, a `working` task with no artifact or status message, from the "
        "history's last agent message (the question, one turn old); by the spec the history is "
        "the task's past, not this frame's output, and dropping it would change every client's "
        "task: theirs, left as is",
    ),
    Cell(
        "strands",
        "client",
        "send",
        "works",
        "Strands joins an artifact's parts with newlines: before issue 58 item 1 each of our "
        "appends was a part of a word or two (`You \\nsaid: \\nhello`); the closing whole text "
        "makes it one",
    ),
    Cell(
        "strands",
        "client",
        "multi-turn",
        "theirs",
        "Strands' A2AAgent never sends `contextId` or `taskId` (optional in the spec, but a "
        "conversation needs them): each message is a conversation of its own; the doctor names it",
    ),
    Cell(
        "strands",
        "client",
        "input-required",
        "theirs",
        "without a `taskId` its answer starts a new task: the question is never answered; the "
        "doctor names it",
    ),
    Cell("adk", "client", "failure", "works", "the failure's message, as the reply"),
    Cell("strands", "client", "stream", "works", "it streams, and keeps the whole reply"),
    Cell("strands", "client", "failure", "works", "the failure's message, as the reply"),
    Cell("maf", "client", "send", "works", "the reply, as sent"),
    Cell("maf", "client", "multi-turn", "works", "one AgentSession is one context"),
    Cell(
        "maf",
        "client",
        "stream",
        "none",
        "its A2AAgent holds a task's updates until the task settles: one update with the whole "
        "reply",
    ),
    Cell(
        "maf",
        "client",
        "input-required",
        "works",
        "the question as a user-input request; the answer, sent in the same session, continues the task",
    ),
    Cell(
        "maf",
        "client",
        "failure",
        "works",
        "MAF reads a task's text from its artifacts, else the last history message, never "
        "`status.message`: since issue 58 item 3 our failure's message is also the history's last",
    ),
    Cell(
        "fasta2a",
        "client",
        "send",
        "works",
        "fasta2a's client requires each skill's `inputModes` and `outputModes` (ours names them "
        "since issue 58 item 4), sends 0.3 method names with 1.0-style parts and reads the "
        'answer as 1.0 (`{"task": ...}`) with 0.3\'s lowercase states: ours answers it so, told '
        "from what it sends (item 4; before, it found no task in ours)",
    ),
    Cell("fasta2a", "client", "multi-turn", "works", "the context it sends is kept"),
    Cell(
        "fasta2a", "client", "stream", "works", "the task, then its states and the words as appends"
    ),
    Cell(
        "fasta2a", "client", "input-required", "works", "the answer, sent on the task, continues it"
    ),
    Cell("fasta2a", "client", "failure", "works", "the reason, in the status message"),
    Cell("beeai", "client", "send", "works", "the reply"),
    Cell("beeai", "client", "multi-turn", "works", "its A2AAgent keeps the context"),
    Cell("beeai", "client", "stream", "works", "it streams, and keeps the task's whole artifact"),
    Cell(
        "beeai",
        "client",
        "input-required",
        "works",
        "it keeps an unfinished task's id: the next run answers it",
    ),
    Cell("beeai", "client", "failure", "works", "the failure's message, as its error"),
    Cell(
        "crewai",
        "client",
        "send",
        "theirs",
        "CrewAI joins the text of every artifact update with spaces, ignoring `append` and "
        "`lastChunk`: our word deltas and then the closing whole text (`You  said:  You said: "
        "hello`); no stream shape fixes it while words stream as deltas; the doctor names it",
    ),
    Cell(
        "crewai",
        "client",
        "multi-turn",
        "works",
        "the context is kept (`message 2 of this conversation`); the reply as garbled as in send",
    ),
    Cell(
        "crewai",
        "client",
        "stream",
        "theirs",
        "its delegation streams when the card says it can: the garbled join of send",
    ),
    Cell(
        "crewai",
        "client",
        "input-required",
        "works",
        "the question (sent whole, in the status message); the answer, with the task's id, "
        "continues it (the reply as garbled as in send)",
    ),
    Cell("crewai", "client", "failure", "works", "the failure's message, as its error"),
    Cell("handler", "client", "send", "works", "the reply"),
    Cell("handler", "client", "multi-turn", "works", "`--continue` keeps the context"),
    Cell("handler", "client", "stream", "works", "`--stream` prints the events and the reply"),
    Cell(
        "handler",
        "client",
        "input-required",
        "none",
        "the question is shown, but `--continue` does not answer it: the answer goes out as a "
        "new task in a new conversation (`You said: yes`); its `--task-id` would take the task, "
        "whose id its text output does not show",
    ),
    Cell(
        "handler",
        "client",
        "failure",
        "works",
        "a2a-handler prints artifacts, else agent messages in the history: since issue 58 item 3 "
        "our failure's message is also the history's last, and it shows it",
    ),
    # our client -> its server
    Cell("strands", "server", "send", "works", "the reply (its artifact ends with a newline)"),
    Cell(
        "strands",
        "server",
        "stream",
        "works",
        "its words come as `working` status-message deltas, then one whole artifact: since issue "
        "58 item 2 our client joins the deltas and shows them as they come (it showed only the "
        "last word until the end), then the artifact, once",
    ),
    Cell("strands", "server", "multi-turn", "works", "one agent per context (its agent_factory)"),
    Cell("strands", "server", "cancel", "works", "canceled; the next task is answered"),
    Cell("strands-compliant", "server", "send", "works", "the reply"),
    Cell(
        "strands-compliant",
        "server",
        "stream",
        "works",
        "artifact appends while the task is still `submitted` (never `working`), closed by an "
        "empty `lastChunk`: shown as they come in any unfinished state, by `toolnexus send "
        "--stream` too since issue 58 item 2 (it waited for `working`)",
    ),
    Cell("strands-compliant", "server", "multi-turn", "works", "one agent per context"),
    Cell("strands-compliant", "server", "cancel", "works", "canceled; the next task is answered"),
    Cell("maf", "server", "send", "works", "the reply"),
    Cell("maf", "server", "stream", "works", "artifact appends while `working`"),
    Cell(
        "maf",
        "server",
        "multi-turn",
        "none",
        "its A2AExecutor makes a new AgentSession for every task (`create_session(session_id="
        "contextId)`): as its docstring sets it up, the model never sees the turn before",
    ),
    Cell("maf", "server", "cancel", "works", "canceled; the next task is answered"),
    Cell("adk", "server", "send", "works", "the reply"),
    Cell(
        "adk",
        "server",
        "stream",
        "none",
        "its server calls the model with `stream=False`: the reply comes whole, in one frame",
    ),
    Cell("adk", "server", "multi-turn", "works", "its session is the context"),
    Cell("adk", "server", "cancel", "works", "canceled; the next task is answered"),
    Cell(
        "fasta2a",
        "server",
        "send",
        "works",
        "a blocking send is answered `submitted` (it does not block): the reply by reading the "
        "task again, as our client's `follow` and `toolnexus send` do",
    ),
    Cell("fasta2a", "server", "stream", "works", "artifact appends while `working`"),
    Cell("fasta2a", "server", "multi-turn", "works", "the context's history"),
    Cell(
        "fasta2a",
        "server",
        "cancel",
        "theirs",
        "its in-memory broker hands operations to one worker, one at a time: a cancel waits "
        "behind the task it cancels, and so does every later send (our client gives up after its "
        "timeout)",
    ),
    Cell(
        "beeai", "server", "send", "works", "the reply (its agent asks the model `Your task: ...`)"
    ),
    Cell(
        "beeai",
        "server",
        "stream",
        "none",
        "no word stream: the whole reply in the `completed` status message",
    ),
    Cell("beeai", "server", "multi-turn", "works", "its memory per context"),
    Cell(
        "beeai",
        "server",
        "cancel",
        "theirs",
        "a cancel of a `working` task is refused (-32002), yet it aborts a controller every task "
        "shares: every later task fails `Action has been aborted`; the doctor names it",
    ),
    Cell("langgraph", "server", "send", "works", "the reply"),
    Cell(
        "langgraph",
        "server",
        "stream",
        "works",
        "the first frame 1.0-wrapped, the rest 0.3-shaped with 1.0 enum names, words as "
        "cumulative `working` status-message snapshots, then an artifact: mixed dialects (a2a-sdk "
        "1.3 and the JS SDK cannot read frames 2 on); our client reads them",
    ),
    Cell("langgraph", "server", "multi-turn", "works", "the context is its thread"),
    Cell(
        "langgraph",
        "server",
        "cancel",
        "none",
        "a send with `blocking: false` is answered only when the run ends (not within our "
        "client's 10 s while the model waits): no task to cancel, and the next send waits too",
    ),
    Cell(
        "gemini",
        "server",
        "send",
        "works",
        "its words come only as `working` status-message deltas, the turn ending `input-required` "
        "with no message and no artifact, each delta kept in its history: since issue 58 item 2 "
        "the turn's reply is the deltas joined (it was the last one)",
    ),
    Cell(
        "gemini",
        "server",
        "stream",
        "works",
        "as for send: since issue 58 item 2 the words show as they come, joined (each showed "
        "alone), and the turn ends asking with them as its reply",
    ),
    Cell(
        "gemini",
        "server",
        "multi-turn",
        "works",
        "every turn ends `input-required`: the next message goes to the same task, which the "
        "server continues; its reply is as for send",
    ),
    Cell("gemini", "server", "cancel", "works", "canceled (`Task canceled by user request.`)"),
]
_BY_KEY = {(c.peer, c.side, c.capability): c for c in CELLS}
TESTED: dict[tuple[str, str, str], str] = {}


def cell(peer: str, side: Side, capability: str) -> Callable[[Any], Any]:
    """Mark a test as the cell (peer, side, capability): an ``ours`` cell is a strict xfail; the
    framework's cells are an xdist group."""
    found = _BY_KEY[(peer, side, capability)]

    def mark(test: Any) -> Any:
        TESTED[(peer, side, capability)] = test.__name__
        # one worker for a framework's cells (with --dist loadgroup): one start of it, not one a worker
        test = pytest.mark.xdist_group(f"field-{PEERS[peer].folder}")(test)
        if found.verdict == "ours":
            reason = f"issue 58 item {found.item}: {found.says}"
            return pytest.mark.xfail(strict=True, reason=reason)(test)
        return test

    return mark


# -- its client -> our server ------------------------------------------------------------------

_talks: dict[str, list[dict[str, Any]]] = {}


async def talk(folder: str, texts: list[str], **opts: Any) -> dict[str, Any]:
    """What the framework's client returned sending ``texts`` (one conversation) to our server,
    the demo model behind it. Every conversation of :data:`TALKS` is had in one run of the
    framework's client (one start: some take seconds to import), once per worker and ``opts``."""
    key = json.dumps([folder, opts])
    if key not in _talks:
        peers.need(folder)
        tk = await tn.create_toolkit(builtins=False)
        async with tk.serve(client=tn.demo_client(pace=DEMO_PACE), a2a=DESK) as served:
            _talks[key] = await peers.conversations(folder, served.url, TALKS, **opts)
    return _talks[key][TALKS.index(texts)]


DESK = tn.A2AConfig(name="demo-desk")
DEMO_PACE = 0.05
"""The demo model's pace here (the suite's is 0): a word a frame, as a model streams."""
HELLO = ["hello", "again"]
FAIL = ["please fail"]
STREAM = ["stream these words"]
ASK = ["please approve the budget", "yes"]
TALKS = [HELLO, ASK, FAIL, STREAM]
QUESTION = "Do you approve: please approve the budget?"
APPROVED = "Request approved (yes). You said: please approve the budget"


@cell("adk", "client", "send")
async def test_adk_client_sends():
    assert (await talk("adk", HELLO))["replies"][0] == "You said: hello"


@cell("adk", "client", "multi-turn")
async def test_adk_client_keeps_the_conversation():
    replies = (await talk("adk", HELLO))["replies"]
    assert replies[1] == "You said: again (message 2 of this conversation)"


@cell("adk", "client", "stream")
async def test_adk_client_keeps_a_whole_streamed_reply():
    assert (await talk("adk", ["stream these words"]))["replies"] == [
        "You said: stream these words"
    ]


@cell("adk", "client", "input-required")
async def test_adk_client_answers_a_question():
    seen = await talk("adk", ASK)
    assert seen["asked"] == [[QUESTION], []] and seen["replies"] == ["", APPROVED], seen
    # ADK's misreading of the answer's first frame: the question again, from the task's history
    assert seen["thoughts"] == [[], [QUESTION]], seen


@cell("strands", "client", "send")
async def test_strands_client_sends():
    assert (await talk("strands", HELLO))["replies"][0] == "You said: hello"


@cell("strands", "client", "multi-turn")
async def test_strands_client_starts_a_conversation_for_every_message():
    seen = await talk("strands", HELLO)
    assert "message 2" not in seen["replies"][1]
    assert seen["contexts"][0] != seen["contexts"][1]


@cell("strands", "client", "input-required")
async def test_strands_client_cannot_answer_a_question():
    seen = await talk("strands", ASK)
    assert seen["states"][0][-1] == "input-required"
    # "yes" went out without the task's id: a new task, which asks nothing and approves nothing
    assert seen["states"][1][-1] == "completed" and "approved" not in seen["replies"][1]


@cell("adk", "client", "failure")
async def test_adk_client_reads_why_a_task_failed():
    assert (await talk("adk", FAIL))["replies"] == ["model error: demo model: asked to fail"]


@cell("strands", "client", "stream")
async def test_strands_client_keeps_a_whole_streamed_reply():
    seen = await talk("strands", STREAM)
    assert seen["replies"] == ["You said: stream these words"]
    assert seen["states"] == [["submitted", "working", "completed"]]


@cell("strands", "client", "failure")
async def test_strands_client_reads_why_a_task_failed():
    seen = await talk("strands", FAIL)
    assert seen["replies"] == ["model error: demo model: asked to fail"]
    assert seen["states"][0][-1] == "failed"


@cell("maf", "client", "send")
async def test_maf_client_sends():
    assert (await talk("maf", HELLO))["replies"][0] == "You said: hello"


@cell("maf", "client", "multi-turn")
async def test_maf_client_keeps_the_conversation():
    replies = (await talk("maf", HELLO))["replies"]
    assert replies[1] == "You said: again (message 2 of this conversation)"


@cell("maf", "client", "stream")
async def test_maf_client_streams_one_whole_update():
    seen = await talk("maf", ["stream these words"], stream=True)
    assert seen["updates"] == [["You said: stream these words"]]


@cell("maf", "client", "input-required")
async def test_maf_client_answers_a_question():
    seen = await talk("maf", ASK)
    assert seen["asked"][0] == [QUESTION]
    assert seen["replies"][1].startswith(APPROVED)


@cell("maf", "client", "failure")
async def test_maf_client_reads_why_a_task_failed():
    seen = await talk("maf", ["please fail"])
    assert "asked to fail" in seen["replies"][0], seen


@cell("fasta2a", "client", "send")
async def test_fasta2a_client_sends():
    seen = await talk("fasta2a", HELLO)
    assert seen["card"] is None and seen["replies"][0] == "You said: hello", seen


@cell("fasta2a", "client", "multi-turn")
async def test_fasta2a_client_keeps_the_conversation():
    replies = (await talk("fasta2a", HELLO))["replies"]
    assert replies[1] == "You said: again (message 2 of this conversation)", replies


@cell("fasta2a", "client", "stream")
async def test_fasta2a_client_streams():
    seen = await talk("fasta2a", STREAM, stream=True)
    assert seen["replies"] == ["You said: stream these words"] and "working" in seen["states"][0]


@cell("fasta2a", "client", "input-required")
async def test_fasta2a_client_answers_a_question():
    seen = await talk("fasta2a", ASK)
    assert seen["states"][0] == ["input-required"] and seen["replies"][0] == QUESTION, seen
    assert seen["replies"][1].startswith(APPROVED), seen


@cell("fasta2a", "client", "failure")
async def test_fasta2a_client_reads_why_a_task_failed():
    seen = await talk("fasta2a", FAIL)
    assert seen["states"] == [["failed"]] and "asked to fail" in seen["replies"][0], seen


@cell("beeai", "client", "send")
async def test_beeai_client_sends():
    assert (await talk("beeai", HELLO))["replies"][0] == "You said: hello"


@cell("beeai", "client", "multi-turn")
async def test_beeai_client_keeps_the_conversation():
    replies = (await talk("beeai", HELLO))["replies"]
    assert replies[1] == "You said: again (message 2 of this conversation)"


@cell("beeai", "client", "stream")
async def test_beeai_client_keeps_a_whole_streamed_reply():
    assert (await talk("beeai", STREAM))["replies"] == ["You said: stream these words"]


@cell("beeai", "client", "input-required")
async def test_beeai_client_answers_a_question():
    seen = await talk("beeai", ASK)
    assert seen["states"] == ["input-required", "completed"]
    assert seen["replies"][0] == QUESTION and seen["replies"][1].startswith(APPROVED)


@cell("beeai", "client", "failure")
async def test_beeai_client_reads_why_a_task_failed():
    seen = await talk("beeai", FAIL)
    assert seen["states"] == ["failed"] and "asked to fail" in seen["replies"][0]


@cell("crewai", "client", "send")
async def test_crewai_client_joins_every_update_with_spaces():
    assert (await talk("crewai", HELLO))["replies"][0] == "You  said:  You said: hello"


@cell("crewai", "client", "multi-turn")
async def test_crewai_client_keeps_the_conversation():
    reply = (await talk("crewai", HELLO))["replies"][1]
    assert reply.endswith("You said: again (message 2 of this conversation)"), reply


@cell("crewai", "client", "stream")
async def test_crewai_client_joins_a_stream_with_spaces():
    reply = (await talk("crewai", STREAM))["replies"][0]
    assert reply == "You  said:  stream  these  You said: stream these words", reply


@cell("crewai", "client", "input-required")
async def test_crewai_client_answers_a_question():
    seen = await talk("crewai", ASK)
    assert seen["states"] == ["input-required", "completed"]
    assert seen["replies"][0] == QUESTION and APPROVED in seen["replies"][1]


@cell("crewai", "client", "failure")
async def test_crewai_client_reads_why_a_task_failed():
    seen = await talk("crewai", FAIL)
    assert seen["states"] == ["failed"] and "asked to fail" in seen["replies"][0]


@cell("handler", "client", "send")
async def test_handler_client_sends():
    assert (await talk("handler", HELLO))["shown"][0] == "You said: hello"


@cell("handler", "client", "multi-turn")
async def test_handler_client_keeps_the_conversation():
    shown = (await talk("handler", HELLO))["shown"]
    assert shown[1] == "You said: again (message 2 of this conversation)"


@cell("handler", "client", "stream")
async def test_handler_client_streams():
    shown = (await talk("handler", STREAM, stream=True))["shown"][0]
    assert "event: task working" in shown and "You said: stream these words" in shown


@cell("handler", "client", "input-required")
async def test_handler_client_answers_in_a_new_task():
    shown = (await talk("handler", ASK))["shown"]
    assert shown == [QUESTION, "You said: yes"]


@cell("handler", "client", "failure")
async def test_handler_client_shows_why_a_task_failed():
    shown = (await talk("handler", FAIL))["shown"][0]
    assert "asked to fail" in shown, shown


# -- our client -> its server ------------------------------------------------------------------


_probes: dict[str, dict[str, Any]] = {}


async def probe(peer: str) -> dict[str, Any]:
    """Our client on the framework's server (its model: the field's echo stub), once per worker:
    ``send`` (``hello there``, blocking: a task answered unfinished is then read until it is),
    ``stream`` ((state, reply) after every frame of a stream of ``hello there``), ``multi``
    (``again`` in the context of ``hello``, in its task when that asks), ``waiting`` (a task waiting on the model, sent without
    blocking), ``cancel`` (it canceled),
    ``after`` (the next task then: these three with 10 s to answer, the others 60 s); a step
    that raised is the error, as text."""
    if peer not in _probes:
        found = PEERS[peer]
        async with (
            peers.server(found.folder, **found.opts) as url,
            tn.A2AClient(url, timeout=60) as client,
            tn.A2AClient(url, timeout=10) as impatient,
        ):
            sent = await attempt(client.send("hello there", blocking=True))
            seen: dict[str, Any] = {"send": await settle(client, sent)}
            seen["blocked"] = isinstance(sent, tn.Task) and sent.state.terminal
            seen["stream"] = await attempt(frames(client.stream("hello there")))
            first = await settle(client, await attempt(client.send("hello", blocking=True)))
            if isinstance(first, tn.Task):
                asks = first.state.interrupted  # the Gemini CLI's every turn ends input-required
                again = client.send(
                    "again",
                    context_id=first.context_id,
                    task_id=first.id if asks else None,
                    blocking=True,
                )
                seen["multi"] = await settle(client, await attempt(again))
            waiting = seen["waiting"] = await attempt(impatient.send("be slow", blocking=False))
            if isinstance(waiting, tn.Task):
                seen["cancel"] = await attempt(impatient.cancel(waiting.id))
            after = await attempt(impatient.send("after", blocking=True))
            seen["after"] = await settle(client, after)
        _probes[peer] = seen
    return _probes[peer]


async def settle(client: tn.A2AClient, task: Any) -> Any:
    """``task`` once it is finished or asks (read again, within 20 s), as a user waiting on it
    sees it; an error as it came."""
    for _ in range(100):
        if not isinstance(task, tn.Task) or task.state.terminal or task.state.interrupted:
            break
        await asyncio.sleep(0.2)
        task = await attempt(client.get(task.id))
    return task


async def attempt(step: Awaitable[Any]) -> Any:
    """What ``step`` returns, or the error it raises as ``"Type: message"``."""
    try:
        return await step
    except Exception as exc:  # noqa: BLE001 - a cell asserts what happened
        return f"{type(exc).__name__}: {exc}"


async def frames(stream: AsyncIterator[tn.Task]) -> list[tuple[str, str]]:
    return [(t.state.value, t.reply) async for t in stream]


def live(frames: list[tuple[str, str]], whole: str, end: str = "completed") -> bool:
    """The words showed as they came: the reply grew through the frames before the last, each a
    beginning of the whole, which the last frame (``end``) holds."""
    before = [reply for _, reply in frames[:-1] if reply]
    return (
        frames[-1] == (end, whole)
        and len(set(before)) >= 2
        and all(whole.startswith(r) for r in before)
    )


def answered(task: tn.Task | str) -> tuple[str, str]:
    assert isinstance(task, tn.Task), task  # a step that raised: its error, as text
    return task.state.value, task.reply


@cell("strands", "server", "send")
async def test_strands_server_answers():
    assert answered((await probe("strands"))["send"]) == ("completed", "echo: hello there\n")


@cell("strands", "server", "stream")
async def test_strands_server_streams_words():
    assert live((await probe("strands"))["stream"], "echo: hello there\n")


@cell("strands", "server", "multi-turn")
async def test_strands_server_keeps_the_conversation():
    assert (await probe("strands"))["multi"].reply == "echo: again (turn 2)\n"


@cell("strands", "server", "cancel")
async def test_strands_server_cancels():
    seen = await probe("strands")
    assert seen["cancel"].state.value == "canceled"
    assert answered(seen["after"]) == ("completed", "echo: after\n")


@cell("strands-compliant", "server", "send")
async def test_strands_compliant_server_answers():
    assert answered((await probe("strands-compliant"))["send"]) == (
        "completed",
        "echo: hello there",
    )


@cell("strands-compliant", "server", "stream")
async def test_strands_compliant_server_streams_words():
    frames = (await probe("strands-compliant"))["stream"]
    assert live(frames, "echo: hello there")
    assert {state for state, _ in frames[:-1]} == {"submitted"}  # never working


@cell("strands-compliant", "server", "multi-turn")
async def test_strands_compliant_server_keeps_the_conversation():
    assert (await probe("strands-compliant"))["multi"].reply == "echo: again (turn 2)"


@cell("strands-compliant", "server", "cancel")
async def test_strands_compliant_server_cancels():
    seen = await probe("strands-compliant")
    assert seen["cancel"].state.value == "canceled"
    assert answered(seen["after"]) == ("completed", "echo: after")


@cell("maf", "server", "send")
async def test_maf_server_answers():
    assert answered((await probe("maf"))["send"]) == ("completed", "echo: hello there")


@cell("maf", "server", "stream")
async def test_maf_server_streams_words():
    assert live((await probe("maf"))["stream"], "echo: hello there")


@cell("maf", "server", "multi-turn")
async def test_maf_server_forgets_the_turn_before():
    assert (await probe("maf"))["multi"].reply == "echo: again"


@cell("maf", "server", "cancel")
async def test_maf_server_cancels():
    seen = await probe("maf")
    assert seen["cancel"].state.value == "canceled"
    assert answered(seen["after"]) == ("completed", "echo: after")


@cell("adk", "server", "send")
async def test_adk_server_answers():
    assert answered((await probe("adk"))["send"]) == ("completed", "echo: hello there")


@cell("adk", "server", "stream")
async def test_adk_server_streams_the_reply_whole():
    replies = {reply for _, reply in (await probe("adk"))["stream"] if reply}
    assert replies == {"echo: hello there"}


@cell("adk", "server", "multi-turn")
async def test_adk_server_keeps_the_conversation():
    assert (await probe("adk"))["multi"].reply == "echo: again (turn 2)"


@cell("adk", "server", "cancel")
async def test_adk_server_cancels():
    seen = await probe("adk")
    assert seen["cancel"].state.value == "canceled"
    assert answered(seen["after"]) == ("completed", "echo: after")


@cell("fasta2a", "server", "send")
async def test_fasta2a_server_answers_later():
    seen = await probe("fasta2a")
    assert answered(seen["send"]) == ("completed", "echo: hello there")
    assert not seen["blocked"]


@cell("fasta2a", "server", "stream")
async def test_fasta2a_server_streams_words():
    assert live((await probe("fasta2a"))["stream"], "echo: hello there")


@cell("fasta2a", "server", "multi-turn")
async def test_fasta2a_server_keeps_the_conversation():
    assert (await probe("fasta2a"))["multi"].reply == "echo: again (turn 2)"


@cell("fasta2a", "server", "cancel")
async def test_fasta2a_server_cancel_waits_behind_the_task():
    seen = await probe("fasta2a")
    assert "CancelTask failed: AnswerTooSlow" in seen["cancel"]
    assert "SendMessage failed: AnswerTooSlow" in seen["after"]


@cell("beeai", "server", "send")
async def test_beeai_server_answers():
    assert answered((await probe("beeai"))["send"]) == ("completed", "echo: Your task: hello there")


@cell("beeai", "server", "stream")
async def test_beeai_server_sends_the_reply_whole():
    frames = (await probe("beeai"))["stream"]
    assert [reply for _, reply in frames if reply] == ["echo: Your task: hello there"]


@cell("beeai", "server", "multi-turn")
async def test_beeai_server_keeps_the_conversation():
    assert (await probe("beeai"))["multi"].reply == "echo: Your task: again (turn 2)"


@cell("beeai", "server", "cancel")
async def test_beeai_server_breaks_after_a_cancel():
    seen = await probe("beeai")
    assert "cannot be canceled" in seen["cancel"] and "working" in seen["cancel"]
    assert answered(seen["after"]) == ("failed", "Action has been aborted")


@cell("langgraph", "server", "send")
async def test_langgraph_server_answers():
    assert answered((await probe("langgraph"))["send"]) == ("completed", "echo: hello there")


@cell("langgraph", "server", "stream")
async def test_langgraph_server_streams_words():
    assert live((await probe("langgraph"))["stream"], "echo: hello there")


@cell("langgraph", "server", "multi-turn")
async def test_langgraph_server_keeps_the_conversation():
    assert (await probe("langgraph"))["multi"].reply == "echo: again (turn 2)"


@cell("langgraph", "server", "cancel")
async def test_langgraph_server_answers_a_non_blocking_send_late():
    seen = await probe("langgraph")
    assert "SendMessage failed: AnswerTooSlow" in seen["waiting"] and "cancel" not in seen


@cell("gemini", "server", "send")
async def test_gemini_server_answers():
    # the Gemini CLI opens each conversation with a message of its own: this is turn 2
    assert (await probe("gemini"))["send"].reply == "echo: hello there (turn 2)"


@cell("gemini", "server", "stream")
async def test_gemini_server_streams_words():
    frames = (await probe("gemini"))["stream"]
    assert live(frames, "echo: hello there (turn 2)", "input-required")


@cell("gemini", "server", "multi-turn")
async def test_gemini_server_keeps_the_conversation():
    assert (await probe("gemini"))["multi"].reply == "echo: again (turn 3)"


@cell("gemini", "server", "cancel")
async def test_gemini_server_cancels():
    assert answered((await probe("gemini"))["cancel"]) == (
        "canceled",
        "Task canceled by user request.",
    )


# -- the page ----------------------------------------------------------------------------------

_MARK = {"works": "yes", "ours": "no: ours", "theirs": "no: theirs", "none": "—"}
_HEAD = {"client": "Its client → toolnexus' server", "server": "toolnexus' client → its server"}


def _pins(folder: str) -> str:
    """The top-level pins of a peer's folder, as installed."""
    path = ROOT / "tests" / "peers" / folder
    if (path / "package.json").exists():
        deps = json.loads((path / "package.json").read_text())["dependencies"]
        return ", ".join(f"`{k}@{v}`" for k, v in deps.items())
    lines = (path / "requirements.in").read_text().splitlines()
    pins = [re.sub(r"\s*#.*", "", line) for line in lines if "==" in line and line[0] != "#"]
    return ", ".join(f"`{p}`" for p in pins)


def matrix() -> str:
    """docs/frameworks.md's matrix: for each side, a row per framework, a column per capability,
    then what each cell means; then the pins."""
    out = []
    for side in ("client", "server"):
        caps = CAPABILITIES[side]
        out += [f"### {_HEAD[side]}", "", "| framework | " + " | ".join(caps) + " |"]
        out.append("|---|" + "---|" * len(caps))
        names = dict.fromkeys(c.peer for c in CELLS if c.side == side)
        notes = []
        for peer in names:
            row = []
            for cap in caps:
                found = _BY_KEY.get((peer, side, cap))
                if found is None:
                    row.append("not tested")
                    continue
                mark = _MARK[found.verdict] + (f" (item {found.item})" if found.item else "")
                row.append(mark)
                if found.says:
                    notes.append(f"- **{PEERS[peer].name}, {cap}**: {found.says}.")
            out.append(f"| {PEERS[peer].name} | " + " | ".join(row) + " |")
        out += ["", *notes, ""]
    out += ["### Versions", "", "| framework | pinned |", "|---|---|"]
    folders = dict.fromkeys(p.folder for p in PEERS.values())
    for folder in folders:
        name = next(p.name for p in PEERS.values() if p.folder == folder)
        out.append(f"| {name} | {_pins(folder)} |")
    return "\n".join(out) + "\n"


_BEGIN, _END = "<!-- matrix: python -m tests.test_field -->\n", "<!-- /matrix -->"


def test_every_cell_is_a_test_and_every_test_a_cell():
    assert set(TESTED) == set(_BY_KEY)


def test_the_page_is_the_table():
    page = PAGE.read_text()
    shown = page[page.index(_BEGIN) + len(_BEGIN) : page.index(_END)]
    assert shown == matrix(), "docs/frameworks.md: paste python -m tests.test_field's output"


if __name__ == "__main__":
    print(matrix(), end="")
