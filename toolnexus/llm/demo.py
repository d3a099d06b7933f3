"""The demo model: the embedded default, deterministic and offline.

Its script, read from the last user message (words match whole and case-blind):

1. ``fail`` anywhere: the model raises ``ModelError("demo model: asked to fail")``.
2. ``slow N`` (N seconds, up to 600): it waits N seconds first; cancelling the run cancels the wait.
3. ``approve`` or ``confirm``: it calls its ``ask_approval`` tool, which suspends the run with a
   question (a Request of kind ``confirm``). An answer starting with no / decline / reject / deny
   declines; anything else approves. The reply says which.
4. A skill matches when its name, or a word of six letters or more from its description, appears
   in the prompt: the model first loads that skill through the ``skill`` tool, then answers
   naming it.
5. Otherwise it answers plainly: ``You said: <prompt>``; from the second message of a
   conversation on, it adds ``(message N of this conversation)``.

Usage is estimated from text length (four characters a token), so telemetry has real numbers.
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import uuid
from typing import Any

from ..errors import ModelError
from ..tools import Request, Tool, ToolContext, ToolResult

__all__ = ["demo_generate", "approval_tool", "DEMO_MODEL"]

DEMO_MODEL = "toolnexus-demo"
_WORD = re.compile(r"[a-z0-9][a-z0-9_-]*")
_DECLINE = re.compile(
    r"^\s*(no|nope|decline|declined|reject|rejected|deny|denied)\b", re.IGNORECASE
)


def approval_tool() -> Tool:
    """``ask_approval {question}``: suspends until the caller answers; says approved or declined."""

    async def ask(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        question = args["question"]
        if ctx.answer is None:
            request = Request(id="req_" + uuid.uuid4().hex[:12], kind="confirm", prompt=question)
            return ToolResult(
                f"waiting for an answer to: {question}", metadata={"pending": request}
            )
        text = ctx.answer.data if isinstance(ctx.answer.data, str) else json.dumps(ctx.answer.data)
        if not ctx.answer.ok or _DECLINE.match(text or ""):
            return ToolResult(f"declined: {text}")
        return ToolResult(f"approved: {text}")

    schema = {
        "type": "object",
        "properties": {"question": {"type": "string", "description": "What to ask the requester"}},
        "required": ["question"],
        "additionalProperties": False,
    }
    return Tool(
        "ask_approval",
        "Ask the requester to approve something and wait for the answer.",
        schema,
        ask,
        source="builtin",
    )


def _tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4)) if text else 0


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return ""


def _skills_from_prompt(system: str) -> dict[str, str]:
    return dict(re.findall(r"^- \*\*(.+?)\*\*: (.*)$", system, re.MULTILINE))


def _matching_skill(prompt: str, skills: dict[str, str]) -> str | None:
    words = set(_WORD.findall(prompt.lower()))
    for name in sorted(skills):
        if name.lower() in words:
            return name
    for name in sorted(skills):
        keys = {w for w in _WORD.findall(skills[name].lower()) if len(w) >= 6}
        if keys & words:
            return name
    return None


async def demo_generate(request: dict[str, Any]) -> dict[str, Any]:
    messages: list[dict[str, Any]] = request["messages"]
    system = next((_text(m["content"]) for m in messages if m.get("role") == "system"), "")
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        raise ModelError("demo model: there is no user message to answer")
    last = users[-1]
    prompt = _text(messages[last]["content"]).strip()
    since = messages[last + 1 :]
    results = [_text(m.get("content")) for m in since if m.get("role") == "tool"]
    called = [c["function"]["name"] for m in since for c in m.get("tool_calls") or []]
    tools = {t["function"]["name"] for t in request.get("tools") or []}
    lower = prompt.lower()
    words = set(_WORD.findall(lower))

    def reply(out: dict[str, Any]) -> dict[str, Any]:
        sent = sum(_tokens(_text(m.get("content"))) for m in messages)
        made = _tokens(out.get("content", "")) + _tokens(
            json.dumps(out.get("tool_calls", "")) if "tool_calls" in out else ""
        )
        out["usage"] = {
            "prompt_tokens": sent,
            "completion_tokens": made,
            "total_tokens": sent + made,
        }
        return out

    def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
        return reply(
            {
                "tool_calls": [
                    {"id": "call_" + uuid.uuid4().hex[:12], "name": name, "arguments": args}
                ]
            }
        )

    if not since:  # the first turn for this prompt
        if "fail" in words:
            raise ModelError("demo model: asked to fail")
        slow = re.search(r"\bslow\s+(\d+(?:\.\d+)?)\b", lower)
        if slow:
            await asyncio.sleep(min(float(slow.group(1)), 600.0))
    skills = _skills_from_prompt(system) if "skill" in tools else {}
    skill = _matching_skill(prompt, skills)
    if skill and "skill" not in called:
        return call("skill", {"name": skill})
    wants_approval = bool(words & {"approve", "confirm"}) and "ask_approval" in tools
    if wants_approval and "ask_approval" not in called:
        return call("ask_approval", {"question": f"Do you approve: {prompt}?"})

    parts = []
    if skill:
        parts.append(f'Using the "{skill}" skill ({skills[skill]}).')
    decision = next((r for r in results if r.startswith(("approved:", "declined:"))), None)
    if decision is not None:
        verdict, _, answer = decision.partition(":")
        parts.append(f"Request {verdict} ({answer.strip()}).")
        if verdict == "declined":
            parts.append("Nothing was done.")
            return reply({"content": " ".join(parts)})
    nth = len(users)
    tail = f" (message {nth} of this conversation)" if nth > 1 else ""
    parts.append(f"You said: {prompt}{tail}")
    return reply({"content": " ".join(parts)})
