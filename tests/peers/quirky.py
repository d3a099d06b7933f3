"""Peers from the field for the tests: our own server answering as one of the quirks of
:mod:`toolnexus.serve.quirks` (the legacy port, the hybrid, a slow peer, ...) does, run on a
scripted model, so that the shapes a quirk serves have one home (the library's) for the tests and
for the users who test their clients against ``toolnexus serve --quirks``.

The script, read from the message: "6*7" answers ``42``; "question" asks "Which colour?" (the
task goes input-required) and the answer on the same task completes it with
``answered: <answer>``; "fail" fails the task ("model error: no can do"); "slow" never finishes;
anything else answers ``echo: <text>`` (the message's last paragraph: a served agent names the
skill asked for before it).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import Any

import toolnexus as tn
from toolnexus.errors import ModelError
from toolnexus.llm.demo import approval_tool


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


async def script(request: dict[str, Any]) -> dict[str, Any]:
    """The scripted model (an in-process ``generate``): see the module docstring."""
    messages = request["messages"]
    last = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    answers = [_text(m["content"]) for m in messages[last + 1 :] if m.get("role") == "tool"]
    if answers:  # the question was answered: "approved: <answer>"
        return {"content": f"answered: {answers[-1].split(': ', 1)[-1]}"}
    text = _text(messages[last]["content"]).strip().split("\n\n")[-1]  # after a skill's name
    if "fail" in text:
        raise ModelError("no can do")
    if "slow" in text:
        await asyncio.sleep(3600)
    if "question" in text:
        return {
            "tool_calls": [{"name": "ask_approval", "arguments": {"question": "Which colour?"}}]
        }
    return {"content": "42" if "6*7" in text else f"echo: {text}"}


class QuirkyPeer:
    """A running quirk peer: its ``url``, the JSON-RPC ``methods`` and ``headers`` its callers
    sent (in order, as they sent them), and its server's ``handle``."""

    def __init__(self, handle: Any) -> None:
        self.handle = handle
        self.url: str = handle.url

    @property
    def methods(self) -> list[str]:
        return [a.method for a in self.handle.quirks.asked]

    @property
    def headers(self) -> list[dict[str, str]]:
        return [a.headers for a in self.handle.quirks.asked]

    async def tasks(self) -> list[Any]:
        return await self.handle.tasks()


@contextlib.asynccontextmanager
async def quirky(
    *quirks: str, name: str, skill: str, description: str
) -> AsyncIterator[QuirkyPeer]:
    """Our server as the peer ``quirks`` name (on the script model), on 127.0.0.1; its card is
    called ``name`` and offers one skill, ``skill``."""
    tk = await tn.create_toolkit(
        builtins=False, skills=[tn.SkillDef(skill, description, tags=[skill])]
    )
    model = tn.create_in_process_client(script, tools=[approval_tool()])
    config = tn.A2AConfig(name=name, description=description, quirks=quirks)
    async with tk, tk.serve(client=model, a2a=config) as handle:
        yield QuirkyPeer(handle)
