"""What the protocol costs in model tokens (issue 64 item 2): a card's size and a stream's
wrapping share, counted with tiktoken's o200k_base and named, in ``card --validate``, the doctor
and ``audit``; a clear sentence when tiktoken is absent. Real server on port 0, real cassettes;
tiktoken reads its file from the copy bpe-openai ships (tests/conftest.py)."""

from __future__ import annotations

import json
import subprocess
import sys

import httpx
import tiktoken

import toolnexus as tn

from .helpers import arun_cli
from .test_replay import serve_demo

BY = f"tiktoken {tiktoken.__version__} o200k_base"


def _tokens(text: str) -> int:
    return len(tiktoken.get_encoding("o200k_base").encode(text))


async def test_the_cards_size_in_tokens_is_said_with_its_tokenizer():
    server = await serve_demo()
    try:
        async with httpx.AsyncClient() as http:
            served = (await http.get(server.url + "/.well-known/agent-card.json")).json()
        code, out, err = await arun_cli("card", server.url, "--validate")
        _, as_json, _ = await arun_cli("card", server.url, "--validate", "--json")
        _, doctored, _ = await arun_cli("doctor", server.url, "--send", "--json")
    finally:
        await server.stop()
    expected = _tokens(json.dumps(served, separators=(",", ":"), ensure_ascii=False))
    assert expected > 100
    assert code == 0 and f"  cost: {expected:,} tokens ({BY})" in out.splitlines(), out + err
    assert json.loads(as_json)["cost"] == f"{expected:,} tokens ({BY})"
    said = {(f["check"], f.get("at", "")): f["message"] for f in json.loads(doctored)["findings"]}
    assert said[("cost: card", "")] == f"{expected:,} tokens ({BY})"
    streams = [m for (check, _), m in said.items() if check == "cost: stream"]
    assert streams and all("of them protocol" in m and BY in m for m in streams), said


async def test_a_recorded_streams_protocol_share_is_counted(tmp_path):
    server = await serve_demo()
    tape = tmp_path / "s.jsonl"
    try:
        async with tn.A2AClient(server.url, record=tape, dialect="0.3") as client:
            [t async for t in client.stream("hello there")]
    finally:
        await server.stop()
    code, out, _ = await arun_cli("audit", str(tape), "--json")
    [cost] = [f for f in json.loads(out)["findings"] if f["check"] == "cost: stream"]
    [row] = [json.loads(line) for line in tape.read_text().splitlines() if '"frames"' in line]
    frames = [
        json.dumps(f, separators=(",", ":"), ensure_ascii=False) for f in row["response"]["frames"]
    ]
    total = sum(map(_tokens, frames))
    words = sum(
        _tokens(p["text"])
        for f in row["response"]["frames"]
        for holder in _holders(f["result"])
        for p in holder.get("parts", ())
        if "text" in p
    )
    assert 0 < words < total
    assert cost["message"] == (
        f"{total:,} tokens, {total - words:,} of them protocol "
        f"({(total - words) / total:.0%}) and {words:,} the words carried ({BY})"
    ), cost


def _holders(result: dict) -> list[dict]:
    """What of a 0.3 stream result holds parts: an artifact update's artifact, a status's message,
    a task's artifacts and history."""
    if result.get("kind") == "artifact-update":
        return [result["artifact"]]
    message = (result.get("status") or {}).get("message")
    return [
        *([message] if message else []),
        *result.get("artifacts", ()),
        *result.get("history", ()),
    ]


def test_without_tiktoken_the_count_says_what_to_install():
    """tiktoken hidden from a fresh interpreter (as if not installed): the count is a finding
    that says what to install, not an error."""
    script = (
        "import sys; sys.modules['tiktoken'] = None\n"
        "from toolnexus.debug.cost import card_cost\n"
        "from toolnexus.debug.doctor import costs\n"
        "print(costs('cost: card', lambda: card_cost({'name': 'x'})).message)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == (
        "not counted: counting tokens needs tiktoken: pip install 'toolnexus[tokens]'"
    ), done.stderr
