"""Benchmark: is a typed decoder (msgspec) worth it for the request's parse and the answer's render?

Issue 33 item 4 asked for msgspec measured against today's. What a blocking send parses and
renders, one call at a time, without HTTP (``pip install msgspec`` first; toolnexus does not
depend on it):

- parse, today: the JSON-RPC body through ``_json.loads`` (orjson, the ``fast`` extra) and
  ``parse_message`` (every check the bindings make: ids, role, parts, depth);
- parse, msgspec: ``msgspec.json.decode`` into typed structs of the 0.3 wire (a tagged union of
  parts), then our ``Message`` made from them (the rest of toolnexus speaks ``Message``); and that
  decode alone, as if the structs were the model (the most any rewrite could win; it makes none of
  our id and depth checks, so it is a bound, not a like-for-like);
- render, today: ``render_send_result`` of a completed task (the blocking send's answer) in its
  JSON-RPC envelope through ``_json.dumps``;
- render, msgspec: the same dict through ``msgspec.json.encode``; and structs of the wire made from
  the task and encoded (what a typed renderer would do).

Each figure is the median of ``--rounds`` rounds (the candidates interleaved within a round), each
round the best of 5 timings of ``--calls`` calls. Run: python bench/parse_bench.py
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import uuid
from pathlib import Path
from typing import Any, Literal

import msgspec

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from toolnexus import _json  # noqa: E402
from toolnexus.protocol.dialects import Dialect, parse_message, render_send_result  # noqa: E402
from toolnexus.protocol.model import Artifact, Message, Part, Task, TaskState, TaskStatus, now_iso  # noqa: E402

# -- the 0.3 wire as structs --------------------------------------------------------------------


class TextPart(msgspec.Struct, tag="text", tag_field="kind", omit_defaults=True):
    text: str
    metadata: dict[str, Any] | None = None


class DataPart(msgspec.Struct, tag="data", tag_field="kind", omit_defaults=True):
    data: dict[str, Any]
    metadata: dict[str, Any] | None = None


WirePart = TextPart | DataPart


class WireMessage(
    msgspec.Struct, rename="camel", omit_defaults=True, tag="message", tag_field="kind"
):
    message_id: str
    role: Literal["user", "agent"]
    parts: list[WirePart]
    context_id: str | None = None
    task_id: str | None = None
    metadata: dict[str, Any] | None = None
    reference_task_ids: list[str] | None = None


class Configuration(msgspec.Struct, rename="camel", omit_defaults=True):
    blocking: bool = False
    history_length: int | None = None


class SendParams(msgspec.Struct):
    message: WireMessage
    configuration: Configuration | None = None


class SendRequest(msgspec.Struct):
    jsonrpc: Literal["2.0"]
    method: str
    params: SendParams
    id: int | str | None = None


class WireStatus(msgspec.Struct, omit_defaults=True):
    state: str
    message: WireMessage | None = None
    timestamp: str | None = None


class WireArtifact(msgspec.Struct, rename="camel", omit_defaults=True):
    artifact_id: str
    parts: list[WirePart]
    name: str | None = None


class WireTask(msgspec.Struct, rename="camel", omit_defaults=True, tag="task", tag_field="kind"):
    id: str
    context_id: str
    status: WireStatus
    artifacts: list[WireArtifact] | None = None
    history: list[WireMessage] | None = None


class Answer(msgspec.Struct):
    jsonrpc: str
    id: int | str | None
    result: WireTask


_DECODER = msgspec.json.Decoder(SendRequest)
_ENCODER = msgspec.json.Encoder()

# -- the work -----------------------------------------------------------------------------------


def body() -> bytes:
    return _json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "message/send",
            "params": {
                "configuration": {"blocking": True},
                "message": {
                    "kind": "message",
                    "messageId": str(uuid.uuid4()),
                    "role": "user",
                    "parts": [{"kind": "text", "text": "hello bench"}],
                },
            },
        }
    )


def parse_today(raw: bytes) -> Message:
    data = _json.loads(raw)
    return parse_message(data["params"]["message"])


def _message(m: WireMessage) -> Message:
    return Message(
        m.role,
        [
            Part.of_text(p.text) if isinstance(p, TextPart) else Part.of_data(p.data)
            for p in m.parts
        ],
        m.message_id,
        m.context_id,
        m.task_id,
        m.metadata,
        m.reference_task_ids,
    )


def parse_msgspec(raw: bytes) -> Message:
    return _message(_DECODER.decode(raw).params.message)


def decode_only(raw: bytes) -> Any:
    return _DECODER.decode(raw)


def completed_task() -> Task:
    request = parse_today(body())
    task = Task(
        str(uuid.uuid4()), str(uuid.uuid4()), TaskStatus(TaskState.SUBMITTED), history=[request]
    )
    for state in (TaskState.WORKING, TaskState.COMPLETED):
        extra: dict[str, Any] = {}
        if state is TaskState.COMPLETED:
            reply = Message.agent(
                "Hello! This is the demo model answering: hello bench", task.context_id, task.id
            )
            extra = {
                "history": [reply],
                "artifacts": [Artifact([Part.of_text(reply.text)], name="reply")],
            }
        task = task.moved(TaskStatus(state, None, now_iso()), **extra)
    return task


def render_today(task: Task) -> bytes:
    return _json.dumps({"jsonrpc": "2.0", "id": 1, "result": render_send_result(task, Dialect.V03)})


def render_dict_msgspec(task: Task) -> bytes:
    return _ENCODER.encode(
        {"jsonrpc": "2.0", "id": 1, "result": render_send_result(task, Dialect.V03)}
    )


def _wire_message(m: Message) -> WireMessage:
    return WireMessage(
        m.message_id,
        m.role,
        [TextPart(p.text or "") for p in m.parts],
        m.context_id,
        m.task_id,
        m.metadata or None,
        m.reference_task_ids or None,
    )


def render_structs(task: Task) -> bytes:
    wire = WireTask(
        task.id,
        task.context_id,
        WireStatus(task.status.state.value, None, task.status.timestamp),
        [
            WireArtifact(a.artifact_id, [TextPart(p.text or "") for p in a.parts], a.name)
            for a in task.artifacts
        ]
        or None,
        [_wire_message(m) for m in task.history] or None,
    )
    return _ENCODER.encode(Answer("2.0", 1, wire))


def _best(fn: Any, arg: Any, calls: int) -> float:
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn(arg)
        best = min(best, time.perf_counter() - t0)
    return best / calls * 1e6


def main(rounds: int, calls: int) -> None:
    raw, task = body(), completed_task()
    # the candidates agree on what they read and write
    assert parse_today(raw).text == parse_msgspec(raw).text == "hello bench"
    assert (
        _json.loads(render_today(task))
        == _json.loads(render_dict_msgspec(task))
        == _json.loads(render_structs(task))
    )
    cases = {
        "parse: orjson + parse_message (today)": (parse_today, raw),
        "parse: msgspec typed decode + Message": (parse_msgspec, raw),
        "parse: msgspec typed decode alone (bound)": (decode_only, raw),
        "render: render_send_result + orjson (today)": (render_today, task),
        "render: render_send_result + msgspec encode": (render_dict_msgspec, task),
        "render: wire structs + msgspec encode": (render_structs, task),
    }
    figures: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(rounds):
        for name, (fn, arg) in cases.items():
            figures[name].append(_best(fn, arg, calls))
    print(
        f"µs per call, median of {rounds} rounds (each the best of 5 x {calls} calls); "
        f"msgspec {msgspec.__version__}, JSON by {'orjson' if _json.dumps.__module__ != 'json' else 'json'}"
    )
    for name, runs in figures.items():
        print(
            f"  {name:48} {statistics.median(runs):6.2f}  (min {min(runs):.2f}, max {max(runs):.2f})"
        )


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20_000)
    a = ap.parse_args()
    main(a.rounds, a.calls)
