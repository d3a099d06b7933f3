"""Model endpoints over HTTP: OpenAI-style and Anthropic-style, with retries.

Retried: HTTP 429, 500, 502, 503, 504 and network errors, with exponential backoff and jitter;
``Retry-After`` is honoured only in its delay-seconds form (digits, ``0`` included). Never
retried: a timeout, a cancel, any other status. An error names the endpoint, the status and a
short excerpt of the body, never the key.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
from typing import Any
from urllib.parse import quote

import httpx

from ..errors import ModelError, ModelTimeout
from ..secrets import is_secret_name, mask_text, secret_parts
from ..tools import Tool, ToolResult
from .run import ToolCall, Turn, Usage, new_call_id, parse_arguments

__all__ = ["OpenAIStyle", "AnthropicStyle", "RETRY_STATUSES"]

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 60.0
EXCERPT = 200
_DIGITS = re.compile(r"^\d+$")


class _HttpStyle:
    """What both HTTP styles share: one httpx client, the retry loop and error texts."""

    name = "http"

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key: str | None,
        headers: dict[str, str] | None,
        retries: int,
        retry_base_ms: float,
        request_timeout: float | None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.headers = dict(headers or {})
        self.retries = max(0, retries)
        self.retry_base_ms = retry_base_ms
        self.request_timeout = request_timeout
        self._transport = transport
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop or self._http.is_closed:
            timeout = httpx.Timeout(
                self.request_timeout, connect=min(self.request_timeout or 10.0, 10.0)
            )
            self._http = httpx.AsyncClient(timeout=timeout, transport=self._transport)
            self._loop = loop
        return self._http

    async def aclose(self) -> None:
        if self._http is not None and self._loop is asyncio.get_running_loop():
            await self._http.aclose()
        self._http = None

    def _scrub(self, text: str) -> str:
        """``text`` without the key, however it was written (raw, JSON-escaped, URL-quoted), nor
        the secret headers' values."""
        secrets = [self.api_key] if self.api_key else []
        secrets += [v for k, v in self.headers.items() if v and is_secret_name(k)]
        for secret in secrets:
            text = mask_text(text, [*secret_parts(secret), quote(secret, safe="")])
        return text

    def _excerpt(self, text: str) -> str:
        text = self._scrub(" ".join(text.split()))
        return text if len(text) <= EXCERPT else text[:EXCERPT] + "…"

    def _delay(self, attempt: int, response: httpx.Response | None) -> float:
        if response is not None:
            after = response.headers.get("retry-after", "").strip()
            if _DIGITS.match(after):
                return min(float(after), MAX_RETRY_AFTER)
        base = self.retry_base_ms / 1000.0 * (2**attempt)
        return base * random.uniform(0.5, 1.0)

    async def _post(
        self, url: str, body: dict[str, Any], headers: dict[str, str]
    ) -> dict[str, Any]:
        http = self._client()
        where = f"{self.name} endpoint {url}"
        attempt = 0
        while True:
            response: httpx.Response | None = None
            try:
                response = await http.post(url, json=body, headers={**self.headers, **headers})
            except httpx.TimeoutException:
                raise ModelTimeout(
                    f"{where} timed out after {self.request_timeout:g}s", remote=True
                ) from None
            except httpx.TransportError as exc:
                error = ModelError(
                    f"{where} could not be reached: {self._scrub(str(exc)) or type(exc).__name__}",
                    retryable=True,
                    remote=True,
                )
            else:
                status = response.status_code
                if 200 <= status < 300:
                    try:
                        data = response.json()
                    except (json.JSONDecodeError, UnicodeDecodeError):
                        raise ModelError(
                            f"{where} answered with invalid JSON: {self._excerpt(response.text)}",
                            status=status,
                            remote=True,
                        ) from None
                    if not isinstance(data, dict):
                        raise ModelError(
                            f"{where} answered with JSON that is not an object",
                            status=status,
                            remote=True,
                        )
                    return data
                retryable = status in RETRY_STATUSES
                error = ModelError(
                    f"{where} answered HTTP {status}: {self._excerpt(response.text)}",
                    status=status,
                    retryable=retryable,
                    remote=True,
                )
                if not retryable:
                    raise error
            if attempt >= self.retries:
                if self.retries:
                    error.args = (f"{error.args[0]} (after {attempt + 1} attempts)",)
                raise error
            await asyncio.sleep(self._delay(attempt, response))
            attempt += 1


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


class OpenAIShapes:
    """The transcript in OpenAI's chat shapes (shared by the OpenAI and in-process styles)."""

    def user(self, text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}

    def assistant(self, turn: Turn) -> dict[str, Any]:
        return openai_assistant(turn)

    def tool_results(self, results: list[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]:
        return openai_tool_results(results)


def openai_assistant(turn: Turn) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": "assistant", "content": turn.content or None}
    if turn.tool_calls:
        msg["tool_calls"] = [
            {
                "id": c.id,
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": c.arguments
                    if c.bad_arguments is not None
                    else json.dumps(c.arguments),
                },
            }
            for c in turn.tool_calls
        ]
    return msg


def openai_tool_results(results: list[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]:
    return [{"role": "tool", "tool_call_id": c.id, "content": r.output} for c, r in results]


class OpenAIStyle(OpenAIShapes, _HttpStyle):
    """``POST {base_url}/chat/completions`` with a bearer key; the transcript in OpenAI's shapes."""

    name = "openai"

    async def complete(
        self, system: str, messages: list[dict[str, Any]], tools: list[Tool]
    ) -> Turn:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": ([{"role": "system", "content": system}] if system else []) + messages,
        }
        if tools:
            body["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": t.name,
                        "description": t.description,
                        "parameters": t.input_schema,
                    },
                }
                for t in tools
            ]
        headers = {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        data = await self._post(f"{self.base_url}/chat/completions", body, headers)
        return self.parse(data)

    def parse(self, data: dict[str, Any]) -> Turn:
        choices = data.get("choices")
        if not isinstance(choices, list) or not choices or not isinstance(choices[0], dict):
            raise ModelError(
                f"openai endpoint answered without choices: {self._excerpt(json.dumps(data))}",
                remote=True,
            )
        message = choices[0].get("message") or {}
        content = message.get("content")
        if isinstance(content, list):  # content parts
            content = "".join(p.get("text", "") for p in content if isinstance(p, dict))
        calls = []
        for raw in message.get("tool_calls") or []:
            fn = raw.get("function") or {}
            args, bad = parse_arguments(fn.get("arguments"))
            calls.append(
                ToolCall(raw.get("id") or new_call_id(), str(fn.get("name", "")), args, bad)
            )
        usage = data.get("usage") or {}
        prompt, completion = _int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens"))
        total = _int(usage.get("total_tokens")) or prompt + completion
        return Turn(content or "", calls, Usage(prompt, completion, total), data.get("model"))


class AnthropicStyle(_HttpStyle):
    """``POST {base_url}/messages`` (``/v1`` added when absent) with ``x-api-key``; Anthropic's shapes."""

    name = "anthropic"
    VERSION = "2023-06-01"

    def __init__(self, *args: Any, max_tokens: int = 4096, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_tokens = max_tokens
        self.url = self.base_url + (
            "/messages" if self.base_url.endswith("/v1") else "/v1/messages"
        )

    async def complete(
        self, system: str, messages: list[dict[str, Any]], tools: list[Tool]
    ) -> Turn:
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": messages,
        }
        if system:
            body["system"] = system
        if tools:
            body["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema}
                for t in tools
            ]
        headers = {"anthropic-version": self.VERSION}
        if self.api_key:
            headers["x-api-key"] = self.api_key
        data = await self._post(self.url, body, headers)
        return self.parse(data)

    def parse(self, data: dict[str, Any]) -> Turn:
        blocks = data.get("content")
        if not isinstance(blocks, list):
            raise ModelError(
                f"anthropic endpoint answered without content: {self._excerpt(json.dumps(data))}",
                remote=True,
            )
        text = []
        calls = []
        for b in blocks:
            if not isinstance(b, dict):
                continue
            if b.get("type") == "text":
                text.append(str(b.get("text", "")))
            elif b.get("type") == "tool_use":
                args, bad = parse_arguments(b.get("input"))
                calls.append(
                    ToolCall(str(b.get("id") or new_call_id()), str(b.get("name", "")), args, bad)
                )
        usage = data.get("usage") or {}
        prompt, completion = _int(usage.get("input_tokens")), _int(usage.get("output_tokens"))
        kept = [b for b in blocks if isinstance(b, dict) and b.get("type") in ("text", "tool_use")]
        return Turn(
            "".join(text),
            calls,
            Usage(prompt, completion, prompt + completion),
            data.get("model"),
            kept,
        )

    def user(self, text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}

    def assistant(self, turn: Turn) -> dict[str, Any]:
        blocks = turn.raw
        if blocks is None:
            blocks = ([{"type": "text", "text": turn.content}] if turn.content else []) + [
                {"type": "tool_use", "id": c.id, "name": c.name, "input": c.arguments}
                for c in turn.tool_calls
            ]
        return {"role": "assistant", "content": blocks}

    def tool_results(self, results: list[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]:
        blocks = []
        for c, r in results:
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": c.id,
                "content": r.output,
            }
            if r.is_error:
                block["is_error"] = True
            blocks.append(block)
        return [{"role": "user", "content": blocks}]
