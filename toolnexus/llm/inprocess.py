"""A model that is a Python function: no HTTP, no retries; it may stream its words."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable
from typing import Any

from ..errors import ModelError
from ..tools import Tool, openai_tools
from .endpoints import OpenAIShapes
from .run import TextSink, ToolCall, Turn, Usage, new_call_id, parse_arguments

__all__ = ["InProcessStyle", "Generate"]

Generate = Callable[[dict[str, Any]], Any]
"""``generate(request) -> {"content": str} | {"tool_calls": [{"id"?, "name", "arguments"}]}``,
optionally with ``"usage"``; sync or async. ``request`` holds ``model``, OpenAI-shaped
``messages`` (the system message first) and ``tools`` (``to_openai()`` shapes).

Or a stream: ``generate`` may be an async generator (or return an async iterator) that yields
the turn's text in pieces (``str``), each said as it comes, and dicts for the rest of the turn
(``tool_calls``, ``usage``; a dict's ``content`` is one more piece)."""


class InProcessStyle(OpenAIShapes):
    """Calls ``generate`` for every turn; the transcript is in OpenAI's shapes."""

    name = "in-process"

    def __init__(self, generate: Generate, model: str) -> None:
        self.generate = generate
        self.model = model
        self._kind: tuple[Any, bool] | None = None  # (generate, called on the loop), see _on_loop

    def _on_loop(self, fn: Any) -> bool:
        """Whether ``fn`` is called on the event loop (a coroutine or async generator function, or
        an object whose ``__call__`` is one), else in a thread; worked out once per ``generate``
        (``inspect`` takes microseconds a turn to tell)."""
        kind = self._kind
        if kind is None or kind[0] is not fn:
            call = getattr(fn, "__call__", None)  # noqa: B004  # an object's __call__: async?
            kind = self._kind = (
                fn,
                inspect.iscoroutinefunction(fn)
                or inspect.iscoroutinefunction(call)
                or inspect.isasyncgenfunction(fn)
                or inspect.isasyncgenfunction(call),
            )
        return kind[1]

    async def complete(
        self,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[Tool],
        sink: TextSink | None = None,
    ) -> Turn:
        request = {
            "model": self.model,
            "messages": ([{"role": "system", "content": system}] if system else [])
            + list(messages),
            "tools": openai_tools(tools),
        }
        try:
            fn = self.generate
            out = fn(request) if self._on_loop(fn) else await asyncio.to_thread(fn, request)
            if type(out) is not dict and inspect.isawaitable(out):  # a turn as a dict: at once
                out = await out
            if type(out) is not dict and isinstance(out, AsyncIterator):
                out = await _gather(out, sink)
        except (asyncio.CancelledError, ModelError):
            raise
        except Exception as exc:
            raise ModelError(f"in-process model failed: {str(exc) or type(exc).__name__}") from exc
        return _parse(out)

    async def aclose(self) -> None:
        return None


async def _gather(pieces: AsyncIterator[Any], sink: TextSink | None) -> dict[str, Any]:
    """A streamed turn as one: its text pieces said to ``sink`` as they come, joined."""
    text: list[str] = []
    turn: dict[str, Any] = {}
    async for piece in pieces:
        if isinstance(piece, dict):
            more = piece.get("content")
            turn.update({k: v for k, v in piece.items() if k != "content"})
            piece = more if isinstance(more, str) else ""
        if not isinstance(piece, str):
            raise ModelError(
                f"in-process model streamed {type(piece).__name__}; expected str pieces or dicts"
            )
        if piece:
            text.append(piece)
            if sink is not None:
                sink.text(piece)
    turn["content"] = "".join(text)
    return turn


def _parse(out: Any) -> Turn:
    if isinstance(out, str):
        out = {"content": out}
    if not isinstance(out, dict) or ("content" not in out and "tool_calls" not in out):
        raise ModelError(
            f"in-process model returned {type(out).__name__}; expected {{'content': str}} or {{'tool_calls': [...]}}"
        )
    calls = []
    for raw in out.get("tool_calls") or []:
        if not isinstance(raw, dict) or not raw.get("name"):
            raise ModelError(f"in-process model returned a tool call without a name: {raw!r}")
        args, bad = parse_arguments(raw.get("arguments"))
        calls.append(ToolCall(str(raw.get("id") or new_call_id()), str(raw["name"]), args, bad))
    usage = out.get("usage") or {}
    prompt = int(usage.get("prompt_tokens", 0) or 0)
    completion = int(usage.get("completion_tokens", 0) or 0)
    total = int(usage.get("total_tokens", 0) or 0) or prompt + completion
    return Turn(str(out.get("content") or ""), calls, Usage(prompt, completion, total))
