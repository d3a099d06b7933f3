"""The demo model: the embedded default, deterministic and offline.

Its script, read from the last user message (words match whole and case-blind):

1. ``fail`` anywhere: the model raises ``ModelError("demo model: asked to fail")``.
2. ``slow N`` (N seconds, up to 600): it waits N seconds first; cancelling the run cancels the wait.
3. A skill matches when its name, or a word of six letters or more from its description, appears
   in the prompt: the model first loads that skill through the ``skill`` tool, then does the
   skill's job, as the example skills (``examples/skills``) describe it:

   - a skill with a table among its files (``reference/*.csv``): it reads the table with its
     ``read_skill_file`` tool and answers from the row the prompt names (the weather skill:
     ``Oslo: light snow, -3°C``; ``fahrenheit`` in the prompt converts; a city not in the table
     gets the cities that are);
   - ``greet``: ``Hello, Ada!`` and a kind remark (the name: a capitalised word of the prompt
     after its first, else ``friend``);
   - ``report``, when the prompt says "report": drafts the report (a title from the request, then
     what was done: the items it lists after a colon, what is next, what blocks) and asks the
     requester ``Publish this report?`` with the draft under it (the ``ask_approval`` tool, as in
     4: the task goes ``input-required``), then answers ``Request approved (...). Published:`` and
     the draft, or ``Request declined (...). Not published.``;
   - any other skill: it answers naming the skill and its description, as in 5.

   The answer starts ``Using the "NAME" skill``.
4. ``approve`` or ``confirm``: it calls its ``ask_approval``
   tool, which suspends the run with a question (a Request of kind ``confirm``). An answer starting
   with no / decline / reject / deny declines; anything else approves. The reply says which.
5. Otherwise it answers plainly: ``You said: <prompt>``; from the second message of a
   conversation on, it adds ``(message N of this conversation)``.

Its answers stream word by word, ``pace`` seconds apart (:data:`DEMO_PACE`, or the
``TOOLNEXUS_DEMO_PACE`` environment variable; 0: no pause, still in pieces), as a model's do.
Usage is estimated from text length (four characters a token), so telemetry has real numbers.
"""

from __future__ import annotations

import asyncio
import csv
import io
import json
import math
import os
import re
import uuid
from collections.abc import AsyncGenerator
from typing import Any

from ..errors import ModelError, ToolnexusError
from ..tools import Request, Tool, ToolContext, ToolResult

__all__ = [
    "demo_generate",
    "approval_tool",
    "skill_file_tool",
    "DEMO_MODEL",
    "DEMO_PACE",
    "demo_pace",
]

DEMO_MODEL = "toolnexus-demo"
DEMO_PACE = 0.05
"""Seconds between the words of a demo answer: about a model's pace, slow enough to watch."""
_WORD_START = re.compile(r"(?<=\s)(?=\S)")
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


def skill_file_tool() -> Tool:
    """``read_skill_file {skill, path}``: the text of one file of a skill of the run's toolkit,
    confined to the skill's folder and bounded as its MCP resources are (``SkillDef.read``)."""

    async def read(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        skills = {s.name: s for s in ctx.toolkit.skills()} if ctx.toolkit is not None else {}
        skill = skills.get(args["skill"])
        if skill is None:
            return ToolResult.error(f"no skill named {args['skill']!r} here")
        try:
            data = await asyncio.to_thread(skill.read, args["path"])
        except ToolnexusError as exc:
            return ToolResult.error(str(exc))
        return ToolResult(data.decode("utf-8", "replace"))

    schema = {
        "type": "object",
        "properties": {
            "skill": {"type": "string", "description": "The skill's name"},
            "path": {"type": "string", "description": "A file of its folder, e.g. reference/x.csv"},
        },
        "required": ["skill", "path"],
        "additionalProperties": False,
    }
    return Tool(
        "read_skill_file",
        "Read one file of a skill's folder (a table, a reference) by its relative path.",
        schema,
        read,
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


def demo_pace(pace: float | None = None) -> float:
    """``pace``, else ``TOOLNEXUS_DEMO_PACE`` (seconds), else :data:`DEMO_PACE`.

    Raises:
        ValueError: the environment variable is not a number of seconds from 0 to 10.
    """
    if pace is None:
        given = os.environ.get("TOOLNEXUS_DEMO_PACE", "").strip()
        try:
            pace = float(given) if given else DEMO_PACE
        except ValueError:
            raise ValueError(
                f"TOOLNEXUS_DEMO_PACE must be seconds between words, such as 0.05, not {given!r}"
            ) from None
    if not 0 <= pace <= 10:
        raise ValueError(f"the demo's pace must be from 0 to 10 seconds, not {pace:g}")
    return pace


async def _spoken(turn: dict[str, Any], pace: float) -> AsyncGenerator[Any, None]:
    """An answer said word by word (each word with the space after it), ``pace`` seconds apart."""
    words = _WORD_START.split(turn.pop("content", ""))
    for i, word in enumerate(words):
        if i and pace:
            await asyncio.sleep(pace)
        yield word
    yield turn  # the rest of the turn: its usage


def _reply(messages: list[dict[str, Any]], out: dict[str, Any]) -> dict[str, Any]:
    """``out`` with its usage: the tokens of ``messages`` sent, and of what it says or calls."""
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


def _call(messages: list[dict[str, Any]], name: str, args: dict[str, Any]) -> dict[str, Any]:
    """A turn that calls the tool ``name`` with ``args``."""
    call = {"id": "call_" + uuid.uuid4().hex[:12], "name": name, "arguments": args}
    return _reply(messages, {"tool_calls": [call]})


async def demo_generate(request: dict[str, Any], pace: float = 0.0) -> Any:
    messages: list[dict[str, Any]] = request["messages"]
    system = next((_text(m["content"]) for m in messages if m.get("role") == "system"), "")
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        raise ModelError("demo model: there is no user message to answer")
    last = users[-1]
    prompt = _text(messages[last]["content"]).strip()
    since = messages[last + 1 :]
    results = [_text(m.get("content")) for m in since if m.get("role") == "tool"]
    names = {c["id"]: c["function"]["name"] for m in since for c in m.get("tool_calls") or []}
    output = {  # each tool's last output in this prompt's turns, by the tool's name
        names.get(m.get("tool_call_id", ""), ""): _text(m.get("content"))
        for m in since
        if m.get("role") == "tool"
    }
    called = [c["function"]["name"] for m in since for c in m.get("tool_calls") or []]
    tools = {t["function"]["name"] for t in request.get("tools") or []}
    lower = prompt.lower()
    words = set(_WORD.findall(lower))

    if not since:  # the first turn for this prompt
        if "fail" in words:
            raise ModelError("demo model: asked to fail")
        slow = re.search(r"\bslow\s+(\d+(?:\.\d+)?)\b", lower)
        if slow:
            await asyncio.sleep(min(float(slow.group(1)), 600.0))
    skills = _skills_from_prompt(system) if "skill" in tools else {}
    skill = _matching_skill(prompt, skills)
    if skill and "skill" not in called:
        return _call(messages, "skill", {"name": skill})
    table = _table_file(output.get("skill", ""))
    if skill and table and "read_skill_file" in tools and "read_skill_file" not in called:
        return _call(messages, "read_skill_file", {"skill": skill, "path": table})
    drafts = skill == "report" and "report" in words  # the report skill's job: a report asked for
    wants_approval = (drafts or bool(words & {"approve", "confirm"})) and "ask_approval" in tools
    if wants_approval and "ask_approval" not in called:  # a report: its draft, asked once
        question = (
            f"Publish this report?\n\n{_draft(prompt)}" if drafts else f"Do you approve: {prompt}?"
        )
        return _call(messages, "ask_approval", {"question": question})

    decision = next((r for r in results if r.startswith(("approved:", "declined:"))), None)
    refused = next(
        (r for r in results if r.startswith("ask_approval: the request was declined")), ""
    )
    if refused:  # the requester said no through the protocol, not in words: "(reason)"
        decision = f"declined: {refused.partition('(')[2].rstrip(')')}"
    read = output.get("read_skill_file")
    job = _job(skill, prompt, words, read, decision if drafts else None) if skill else None
    if job is not None:
        return _spoken(_reply(messages, {"content": f'Using the "{skill}" skill: {job}'}), pace)
    parts = [f'Using the "{skill}" skill ({skills[skill]}).'] if skill else []
    if decision is not None:
        verdict, _, answer = decision.partition(":")
        parts.append(f"Request {verdict} ({answer.strip()}).")
        if verdict == "declined":
            parts.append("Nothing was done.")
            return _spoken(_reply(messages, {"content": " ".join(parts)}), pace)
    nth = len(users)
    tail = f" (message {nth} of this conversation)" if nth > 1 else ""
    parts.append(f"You said: {prompt}{tail}")
    return _spoken(_reply(messages, {"content": " ".join(parts)}), pace)


def _job(
    skill: str, prompt: str, words: set[str], table: str | None, decision: str | None
) -> str | None:
    """What the demo makes of a loaded skill: its job, as the example skills describe it (``table``:
    the skill's table, read)."""
    if table is not None:
        return _from_table(list(csv.DictReader(io.StringIO(table))), prompt, words)
    if skill == "greet":
        names = re.findall(r"(?<=\s)[A-Z][\w'-]*", prompt)
        return f"Hello, {names[0] if names else 'friend'}! I hope your day is going well."
    if skill == "report" and decision is not None:
        verdict, _, answer = decision.partition(":")
        said = f"Request {verdict} ({answer.strip()})."
        return (
            f"{said} Published:\n{_draft(prompt)}"
            if verdict == "approved"
            else f"{said} Not published."
        )
    return None  # any other skill: named, and the plain answer


_NAMED_SKILL = re.compile(r"^Use the [\w-]+ skill\.\s*")
"""What a served agent puts before a request sent to one of its skills by name (not the request's)."""
_FILLER = frozenset("a an and approve draft me my our please publish the write".split())
"""Words of a request that ask for the report rather than name it."""


def _draft(prompt: str) -> str:
    """The report skill's draft, as its SKILL.md asks: a title, what the request names ("draft
    the weekly report": ``Weekly report``), then at most five bullets: what was done (the items
    the request lists after a colon, three at most), what is next, what blocks."""
    head, _, given = _NAMED_SKILL.sub("", prompt).partition(":")
    named = " ".join(w for w in re.findall(r"[\w'-]+", head) if w.lower() not in _FILLER)
    title = (named[:1].upper() + named[1:]) if named else "Status report"
    done = [item.strip() for item in re.split(r"[,;]|\band\b", given) if item.strip()][:3]
    bullets = [f"Done: {item}" for item in done] or [
        'Done: nothing listed yet (list it after a colon: "draft the weekly report: shipped '
        'the login page, fixed search")'
    ]
    bullets += ["Next: what is still open", "Blocks: none reported"]
    return "\n".join([title, *(f"- {b}" for b in bullets)])


def _table_file(loaded: str) -> str | None:
    """The first table (``reference/*.csv``) among the files a loaded skill lists, relative to the
    skill's base directory (a ``file://`` URL), as the ``skill`` tool gives them (absolute)."""
    base = re.search(r"^Base directory for this skill: (.+)$", loaded, re.MULTILINE)
    if base is None:
        return None
    folder = base.group(1).removeprefix("file://").rstrip("/") + "/"
    for path in re.findall(r"<file>([^<]+)</file>", loaded):
        relative = path.removeprefix(folder)
        if relative.startswith("reference/") and relative.endswith(".csv"):
            return relative
    return None


def _from_table(rows: list[dict[str, str]], prompt: str, words: set[str]) -> str:
    """The row the prompt names by its first column (the weather skill's city), said in one line;
    its temperature in Fahrenheit when the prompt asks."""
    if not rows:
        return "the table is empty."
    key = next(iter(rows[0]))
    lower = prompt.lower()
    row = next(
        (r for r in rows if r[key] and re.search(rf"\b{re.escape(r[key].lower())}\b", lower)), None
    )
    if row is None:
        known = ", ".join(r[key] for r in rows)
        return f"that is not in the table; it knows {known}."
    said = [v for k, v in row.items() if k not in (key, "celsius")]
    if "celsius" in row:
        degrees = float(row["celsius"])
        if "fahrenheit" in words:
            said.append(f"{degrees * 9 / 5 + 32:.0f}°F")
        else:
            said.append(f"{degrees:.0f}°C")
    return f"{row[key]}: {', '.join(said)}."
