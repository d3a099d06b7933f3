"""The LLM client: the tool-calling loop over OpenAI-style, Anthropic-style, in-process and demo models."""

from __future__ import annotations

import functools
import os
from collections.abc import Sequence
from typing import Literal

import httpx

from ..stores.conversations import (
    ConversationStore,
    FileConversationStore,
    MemoryConversationStore,
)
from ..tools import Tool
from .client import Client, Style, WaitFor
from .demo import DEMO_MODEL, approval_tool, demo_generate, demo_pace, skill_file_tool
from .endpoints import AnthropicStyle, OpenAIStyle
from .inprocess import Generate, InProcessStyle
from .run import RunResult, ToolCall, Turn, Usage

__all__ = [
    "Client",
    "ConversationStore",
    "FileConversationStore",
    "MemoryConversationStore",
    "RunResult",
    "Style",
    "ToolCall",
    "Turn",
    "Usage",
    "create_client",
    "create_in_process_client",
    "demo_client",
]

_KEY_ENV = {
    "openai": ("OPENAI_API_KEY", "OPENROUTER_API_KEY"),
    "anthropic": ("ANTHROPIC_API_KEY", "OPENROUTER_API_KEY"),
}


def create_client(
    base_url: str,
    style: Literal["openai", "anthropic"] = "openai",
    model: str = "",
    api_key: str | None = None,
    headers: dict[str, str] | None = None,
    system_prompt: str = "",
    max_turns: int = 10,
    retries: int = 2,
    retry_base_ms: float = 500,
    timeout: float | None = None,
    *,
    request_timeout: float | None = 120.0,
    store: ConversationStore | None = None,
    wait_for: WaitFor | None = None,
    tools: Sequence[Tool] = (),
    max_tokens: int = 4096,
    transport: httpx.AsyncBaseTransport | None = None,
    stream: bool = True,
) -> Client:
    """A client for an HTTP model endpoint (OpenAI, Anthropic, or any OpenAI-compatible server).

    Args:
        base_url: e.g. ``https://api.openai.com/v1``, ``https://api.anthropic.com``,
            ``http://127.0.0.1:11434/v1`` (Ollama).
        style: ``"openai"`` (``POST /chat/completions``) or ``"anthropic"`` (``POST /v1/messages``).
        api_key: defaults to ``OPENAI_API_KEY`` / ``ANTHROPIC_API_KEY``, then ``OPENROUTER_API_KEY``.
        retries: how many times a 429, 5xx or network error is retried.
        retry_base_ms: the first backoff; it doubles every retry, with jitter.
        timeout: seconds the whole run may take.
        request_timeout: seconds one HTTP request may take (a timeout is never retried).
        stream: ask for a stream when somebody waits for the words (a served task, a chat):
            they go out as the model says them. An endpoint that answers whole works either
            way; False asks every turn whole.
    """
    if style not in _KEY_ENV:
        raise ValueError(f"style must be 'openai' or 'anthropic', not {style!r}")
    if api_key is None:
        api_key = next((os.environ[k] for k in _KEY_ENV[style] if os.environ.get(k)), None)
    args = (
        base_url,
        model,
        api_key,
        headers,
        retries,
        retry_base_ms,
        request_timeout,
        transport,
        stream,
    )
    backend: Style = (
        OpenAIStyle(*args) if style == "openai" else AnthropicStyle(*args, max_tokens=max_tokens)
    )
    return _around(backend, model, system_prompt, max_turns, timeout, store, wait_for, tools)


def create_in_process_client(
    generate: Generate,
    model: str = "in-process",
    system_prompt: str = "",
    max_turns: int = 10,
    timeout: float | None = None,
    *,
    store: ConversationStore | None = None,
    wait_for: WaitFor | None = None,
    tools: Sequence[Tool] = (),
) -> Client:
    """A client whose model is ``generate(request)``: no HTTP; a raised error is final."""
    backend = InProcessStyle(generate, model)
    return _around(backend, model, system_prompt, max_turns, timeout, store, wait_for, tools)


def _around(
    style: Style,
    model: str,
    system_prompt: str,
    max_turns: int,
    timeout: float | None,
    store: ConversationStore | None,
    wait_for: WaitFor | None,
    tools: Sequence[Tool],
) -> Client:
    """The client around a model's ``style``, with the loop's settings both factories take."""
    return Client(
        style,
        model=model,
        system_prompt=system_prompt,
        max_turns=max_turns,
        timeout=timeout,
        store=store,
        wait_for=wait_for,
        tools=tools,
    )


def demo_client(
    system_prompt: str = "",
    *,
    store: ConversationStore | None = None,
    wait_for: WaitFor | None = None,
    timeout: float | None = None,
    pace: float | None = None,
) -> Client:
    """The embedded default model: deterministic, offline, with its ``ask_approval`` and
    ``read_skill_file`` tools.

    See :mod:`toolnexus.llm.demo` for its script. ``pace``: seconds between the words of its
    answers (default ``TOOLNEXUS_DEMO_PACE``, else ``DEMO_PACE``; 0 for tests).
    """
    return create_in_process_client(
        functools.partial(demo_generate, pace=demo_pace(pace)),
        model=DEMO_MODEL,
        system_prompt=system_prompt,
        timeout=timeout,
        store=store,
        wait_for=wait_for,
        tools=[approval_tool(), skill_file_tool()],
    )
