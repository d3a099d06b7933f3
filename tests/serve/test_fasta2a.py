"""pydantic's fasta2a client (``fasta2a`` 2.1.1, its own venv: tests/peers/fasta2a) against ours.

It speaks a dialect of its own: 0.3's method names (``message/send``) with 1.0's objects (parts
without ``kind``) and reads 1.0's answers (``{"task": ...}``, events as ``statusUpdate`` and
``artifactUpdate``) with 0.3's lowercase enums (``completed``, ``agent``); and it refuses a card
whose skills lack ``inputModes`` or ``outputModes``. Ours answers such a caller in its shapes,
told from what it sends, and every skill of the served card names its modes; a 0.3 caller that
sends ``kind`` is answered 0.3 as before."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest

import toolnexus as tn

from ..helpers import write_skill
from ..peers import field


@pytest.fixture
async def demo(tmp_path):
    write_skill(tmp_path / "skills" / "weather", "weather", description="The weather in a city")
    tk = await tn.create_toolkit(tmp_path / "skills", builtins=False)
    handle = await tk.serve(client=tn.demo_client(pace=0.02), a2a=tn.A2AConfig(name="demo-desk"))
    yield handle
    await handle.stop()


@pytest.mark.parametrize("stream", [False, True], ids=["send", "stream"])
async def test_fasta2a_takes_our_card_and_reads_every_answer(demo, stream):
    got = await field.client(
        "fasta2a", demo.url, ["hello", "approve the budget", "yes"], stream=stream
    )
    assert got["card"] is None, got  # it took the card
    replies, states = got["replies"], got["states"]
    assert all(s and "Error" not in str(r) for s, r in zip(states, replies, strict=True)), got
    assert states[0][-1] == "completed" and states[1][-1] == "input-required", states
    assert states[2][-1] == "completed", states  # the answer, on the same task
    if stream:  # the task first, then each state and the words as they came
        assert states[0][:2] == ["submitted", "working"] and "artifact" in states[0], states
    else:
        assert replies[0] == "You said: hello" and "approve" in replies[1], replies
        assert "approved" in replies[2].lower(), replies


async def rpc(http: httpx.AsyncClient, method: str, params: dict[str, Any]) -> Any:
    body = {"jsonrpc": "2.0", "id": str(uuid.uuid4()), "method": method, "params": params}
    answer = (await http.post("/", json=body)).json()
    assert "result" in answer, answer
    return answer["result"]


def message(*parts: dict[str, Any]) -> dict[str, Any]:
    return {"messageId": str(uuid.uuid4()), "role": "user", "parts": list(parts)}


async def test_a_hybrid_caller_is_answered_in_its_shapes_and_a_0_3_caller_as_before(demo):
    """Told apart by what each sends: parts without ``kind`` on a 0.3 method, and then the tasks
    such a send made; a 0.3 caller's parts have ``kind`` (every 0.3 SDK's do)."""
    async with httpx.AsyncClient(base_url=demo.url, timeout=30) as http:
        hybrid = await rpc(http, "message/send", {"message": message({"text": "hello"})})
        task = hybrid["task"]
        assert "kind" not in task and task["status"]["state"] == "completed"
        assert task["history"][-1]["role"] == "agent"
        assert task["artifacts"][0]["parts"] == [{"text": "You said: hello"}]
        got = await rpc(http, "tasks/get", {"id": task["id"]})
        assert got["status"]["state"] == "completed" and "kind" not in got
        old = await rpc(
            http,
            "message/send",
            {"message": {**message({"kind": "text", "text": "hello"}), "kind": "message"}},
        )
        assert old["kind"] == "task" and old["status"]["state"] == "completed"
        assert old["artifacts"][0]["parts"] == [{"kind": "text", "text": "You said: hello"}]
        got = await rpc(http, "tasks/get", {"id": old["id"]})
        assert got["kind"] == "task" and got["history"][0]["kind"] == "message"


async def test_every_skill_of_the_card_names_its_modes(demo):
    async with httpx.AsyncClient(base_url=demo.url) as http:
        card = (await http.get("/.well-known/agent-card.json")).json()
    assert card["skills"], card
    for skill in card["skills"]:  # its own (the weather skill takes JSON too), else the defaults
        assert set(card["defaultInputModes"]) <= set(skill["inputModes"]), skill
        assert skill["outputModes"] == card["defaultOutputModes"], skill
