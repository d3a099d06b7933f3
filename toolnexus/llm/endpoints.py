"""Model endpoints over HTTP: OpenAI-style and Anthropic-style, streamed, with retries.

A turn whose words somebody waits for (a :class:`~toolnexus.llm.run.TextSink`) is asked as a
stream (OpenAI: ``stream`` with ``stream_options.include_usage``, ``chat.completion.chunk``
deltas, tool-call arguments assembled by index; Anthropic: ``stream``, its ``message_start`` …
``message_stop`` events), each piece of text said as it arrives; an endpoint that ignores
``stream`` and answers JSON is read as before. A turn nobody waits for is asked whole.

Retried: HTTP 429, 500, 502, 503, 504, network errors, and a stream cut before its end (or an
``error`` event saying the endpoint is overloaded), with exponential backoff and jitter; what a
cut stream said is taken back first (:meth:`TextSink.retry`), so a half reply is never presented
as a whole one. ``Retry-After`` is honoured only in its delay-seconds form (digits, ``0``
included). Never retried: a timeout, a cancel, any other status. An error names the endpoint, the
status and a short excerpt of the body, never the key.

The connection pool has no bound on connections (httpx's default is 100): a served agent's
concurrent tasks must not queue their model calls behind a limit nobody chose.
"""

from __future__ import annotations

import asyncio
import base64
import json
import random
import re
from collections.abc import Sequence
from typing import Any
from urllib.parse import quote

import httpx

from .. import _json
from ..errors import ModelError, ModelTimeout
from ..http.fetch import MAX_FRAME, AnswerTooLarge, AnswerTooSlow, read_body, sse_events
from ..secrets import is_secret_name, mask_text, secret_parts
from ..tools import Attachment, Tool, ToolResult, openai_tools
from .run import TextSink, ToolCall, Turn, Usage, new_call_id, parse_arguments

__all__ = ["OpenAIStyle", "AnthropicStyle", "RETRY_STATUSES"]

RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
MAX_RETRY_AFTER = 60.0
EXCERPT = 200
MAX_ERROR_BODY = 64 * 1024
"""The most of an error answer read (its excerpt is in the error)."""
POOL = httpx.Limits(max_connections=None, max_keepalive_connections=256)
"""No bound on concurrent model calls; at most this many idle connections kept."""
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
        stream: bool = True,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key = api_key
        self.headers = dict(headers or {})
        self.retries = max(0, retries)
        self.retry_base_ms = retry_base_ms
        self.request_timeout = request_timeout
        self._transport = transport
        self.stream = stream
        """Ask for a stream when somebody waits for the words (False: always whole)."""
        self._http: httpx.AsyncClient | None = None
        self._loop: asyncio.AbstractEventLoop | None = None

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        if self._http is None or self._loop is not loop or self._http.is_closed:
            timeout = httpx.Timeout(
                self.request_timeout, connect=min(self.request_timeout or 10.0, 10.0)
            )
            self._http = httpx.AsyncClient(timeout=timeout, transport=self._transport, limits=POOL)
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

    stream_fields: dict[str, Any] = {"stream": True}
    """What a request adds to ask for a stream."""

    async def complete(
        self,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[Tool],
        sink: TextSink | None = None,
    ) -> Turn:
        url, body, headers = self._request(system, messages, tools)
        return await self._turn(url, body, headers, sink)

    def _request(
        self, system: str, messages: list[dict[str, Any]], tools: list[Tool]
    ) -> tuple[str, dict[str, Any], dict[str, str]]:
        """The style's request for one turn: its URL, body and headers."""
        raise NotImplementedError

    def parse(self, data: dict[str, Any]) -> Turn:
        raise NotImplementedError

    def _assembler(self, sink: TextSink) -> _Assembler:
        raise NotImplementedError

    async def _turn(
        self, url: str, body: dict[str, Any], headers: dict[str, str], sink: TextSink | None
    ) -> Turn:
        """One turn: streamed when ``sink`` waits for its words (and the endpoint streams), else
        whole; retried as the module says."""
        http = self._client()
        where = f"{self.name} endpoint {url}"
        streamed = sink is not None and self.stream
        if streamed:
            body = {**body, **self.stream_fields}
        headers = {**self.headers, **headers}
        attempt = 0
        while True:
            response: httpx.Response | None = None
            assembler = self._assembler(sink) if sink is not None and streamed else None
            try:
                if assembler is not None:
                    async with http.stream("POST", url, json=body, headers=headers) as response:
                        turn = await self._read(response, assembler, where)
                        if isinstance(turn, Turn):
                            return turn
                        error = turn
                else:
                    response = await http.post(url, json=body, headers=headers)
                    if 200 <= response.status_code < 300:
                        return self.parse(self._json(where, response.status_code, response.content))
                    error = self._status_error(where, response, response.text)
            except httpx.TimeoutException:
                raise ModelTimeout(
                    f"{where} timed out after {self.request_timeout:g}s", remote=True
                ) from None
            except httpx.TransportError as exc:
                cut = assembler is not None and assembler.begun
                what = "cut its stream" if cut else "could not be reached"
                error = ModelError(
                    f"{where} {what}: {self._scrub(str(exc)) or type(exc).__name__}",
                    retryable=True,
                    remote=True,
                )
            except ModelError as exc:
                if not exc.retryable:
                    raise
                error = exc
            if not error.retryable:
                raise error
            if assembler is not None and assembler.said:
                assembler.sink.retry()  # what the failed attempt said is void
            if attempt >= self.retries:
                if self.retries:
                    error.args = (f"{error.args[0]} (after {attempt + 1} attempts)",)
                raise error
            await asyncio.sleep(self._delay(attempt, response))
            attempt += 1

    async def _read(
        self, response: httpx.Response, assembler: _Assembler, where: str
    ) -> Turn | ModelError:
        """A streamed request's answer as a turn: its events (an SSE answer) or its JSON (an
        endpoint that ignored ``stream``); for a status that is not 2xx, the error (its body
        read, bounded, for the excerpt)."""
        status = response.status_code
        if not 200 <= status < 300:
            try:
                text = (await read_body(response, MAX_ERROR_BODY)).decode("utf-8", "replace")
            except AnswerTooLarge:
                text = f"(an answer of more than {MAX_ERROR_BODY:,} bytes)"
            return self._status_error(where, response, text)
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            return self.parse(self._json(where, status, await response.aread()))
        assembler.begun = True
        try:
            async for data in sse_events(response, self.request_timeout or 600.0, MAX_FRAME):
                if assembler.feed(data, where):
                    break
        except AnswerTooLarge as exc:
            raise ModelError(f"{where}: {exc}", status=status, remote=True) from None
        except AnswerTooSlow as exc:
            raise ModelTimeout(f"{where}: {exc}", remote=True) from None
        if not assembler.complete:
            raise ModelError(
                f"{where} cut its stream before its end", status=status, retryable=True, remote=True
            )
        return assembler.turn()

    def _json(self, where: str, status: int, raw: bytes) -> dict[str, Any]:
        try:
            data = json.loads(raw)
        except (json.JSONDecodeError, UnicodeDecodeError):
            text = raw.decode("utf-8", "replace")
            raise ModelError(
                f"{where} answered with invalid JSON: {self._excerpt(text)}",
                status=status,
                remote=True,
            ) from None
        if not isinstance(data, dict):
            raise ModelError(
                f"{where} answered with JSON that is not an object", status=status, remote=True
            )
        return data

    def _status_error(self, where: str, response: httpx.Response, text: str) -> ModelError:
        status = response.status_code
        return ModelError(
            f"{where} answered HTTP {status}: {self._excerpt(text)}",
            status=status,
            retryable=status in RETRY_STATUSES,
            remote=True,
        )


class _Assembler:
    """A streamed turn, put together event by event; its text said to ``sink`` as it comes."""

    def __init__(self, style: _HttpStyle, sink: TextSink) -> None:
        self.style = style
        self.sink = sink
        self.begun = False  # the stream's events started (a network error now cuts it)
        self.said = False  # some text was said to the sink
        self.complete = False  # the stream reached its end
        self.text: list[str] = []
        self.model: str | None = None

    def say(self, piece: Any) -> None:
        if isinstance(piece, str) and piece:
            self.text.append(piece)
            self.said = True
            self.sink.text(piece)

    def event(self, data: str, where: str) -> dict[str, Any]:
        try:
            event = _json.loads(data)  # orjson when installed: once per event of every stream
        except _json.JSONDecodeError:
            event = None
        if not isinstance(event, dict):
            raise ModelError(
                f"{where} sent a stream event that is not a JSON object: "
                f"{self.style._excerpt(data)}",
                remote=True,
            )
        model = event.get("model")
        if isinstance(model, str) and model:
            self.model = model
        return event

    def feed(self, data: str, where: str) -> bool:
        """Take one event's data; True once the stream is over."""
        raise NotImplementedError

    def turn(self) -> Turn:
        raise NotImplementedError


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


IMAGES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types both providers take as content blocks (their vision guides list these four)."""
PDF = "application/pdf"


def _b64(file: Attachment) -> str:
    return base64.b64encode(file.data).decode("ascii")


class OpenAIShapes:
    """The transcript in OpenAI's chat shapes (shared by the OpenAI and in-process styles)."""

    def user(self, text: str) -> dict[str, Any]:
        return {"role": "user", "content": text}

    def assistant(self, turn: Turn) -> dict[str, Any]:
        return openai_assistant(turn)

    def tool_results(self, results: list[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]:
        return openai_tool_results(results)


def openai_user(text: str, files: Sequence[Attachment]) -> dict[str, Any]:
    """A user turn with files as content parts (OpenAI's chat completions: ``image_url`` with a
    ``data:`` URL for an image, ``file`` with ``file_data`` for a PDF), the text first."""
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    for f in files:
        url = f"data:{f.media_type};base64,{_b64(f)}"
        if f.media_type == PDF:
            content.append({"type": "file", "file": {"filename": f.name, "file_data": url}})
        else:
            content.append({"type": "image_url", "image_url": {"url": url}})
    return {"role": "user", "content": content}


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
    """``POST {base_url}/chat/completions`` with a bearer key; the transcript in OpenAI's shapes,
    images and PDF as content parts."""

    name = "openai"
    media_types = IMAGES | {PDF}

    def user(self, text: str, files: Sequence[Attachment] = ()) -> dict[str, Any]:
        return openai_user(text, files) if files else super().user(text)

    stream_fields: dict[str, Any] = {"stream": True, "stream_options": {"include_usage": True}}

    def _request(
        self, system: str, messages: list[dict[str, Any]], tools: list[Tool]
    ) -> tuple[str, dict[str, Any], dict[str, str]]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": ([{"role": "system", "content": system}] if system else []) + messages,
        }
        if tools:
            body["tools"] = openai_tools(tools)
        headers = {"authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        return f"{self.base_url}/chat/completions", body, headers

    def _assembler(self, sink: TextSink) -> _Assembler:
        return _OpenAIChunks(self, sink)

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

    def _request(
        self, system: str, messages: list[dict[str, Any]], tools: list[Tool]
    ) -> tuple[str, dict[str, Any], dict[str, str]]:
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
        return self.url, body, headers

    def _assembler(self, sink: TextSink) -> _Assembler:
        return _AnthropicEvents(self, sink)

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

    media_types = IMAGES | {PDF}

    def user(self, text: str, files: Sequence[Attachment] = ()) -> dict[str, Any]:
        """The user's turn; files as content blocks before the text (Anthropic's ``image`` and
        ``document`` blocks with a base64 ``source``), as its guides place them."""
        if not files:
            return {"role": "user", "content": text}
        blocks: list[dict[str, Any]] = [
            {
                "type": "document" if f.media_type == PDF else "image",
                "source": {"type": "base64", "media_type": f.media_type, "data": _b64(f)},
            }
            for f in files
        ]
        return {"role": "user", "content": [*blocks, {"type": "text", "text": text}]}

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


class _OpenAIChunks(_Assembler):
    """``chat.completion.chunk`` deltas: the text of choice 0, its tool calls by ``index`` (id and
    name in their first delta, the arguments in pieces), usage in the last chunk (asked for with
    ``include_usage``); ``[DONE]`` ends it (or, for servers that do not send it, a
    ``finish_reason`` followed by the end of the answer)."""

    def __init__(self, style: _HttpStyle, sink: TextSink) -> None:
        super().__init__(style, sink)
        self.calls: dict[int, tuple[list[str], list[str], list[str]]] = {}
        self.usage: Usage | None = None
        self.finished = False

    def feed(self, data: str, where: str) -> bool:
        if data.strip() == "[DONE]":
            self.complete = True
            return True
        chunk = self.event(data, where)
        error = chunk.get("error")
        if error is not None:
            kind = error.get("type") or error.get("code") if isinstance(error, dict) else ""
            raise ModelError(
                f"{where} sent an error in its stream: {self.style._excerpt(json.dumps(error))}",
                retryable=kind in ("server_error", "rate_limit_exceeded", "overloaded"),
                remote=True,
            )
        usage = chunk.get("usage")
        if isinstance(usage, dict):
            prompt = _int(usage.get("prompt_tokens"))
            completion = _int(usage.get("completion_tokens"))
            total = _int(usage.get("total_tokens")) or prompt + completion
            self.usage = Usage(prompt, completion, total)
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, dict) or choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if isinstance(delta, dict):
                self.say(delta.get("content"))
                for raw in delta.get("tool_calls") or ():
                    if isinstance(raw, dict):
                        self._call(raw)
            if choice.get("finish_reason"):
                self.finished = True
        self.complete = self.finished  # a server that never sends [DONE]: done at the answer's end
        return False

    def _call(self, raw: dict[str, Any]) -> None:
        index = raw.get("index")
        index = index if isinstance(index, int) else len(self.calls)
        ids, names, args = self.calls.setdefault(index, ([], [], []))
        if isinstance(raw.get("id"), str) and not ids:
            ids.append(raw["id"])
        fn = raw.get("function")
        if isinstance(fn, dict):
            if isinstance(fn.get("name"), str) and not names:
                names.append(fn["name"])
            if isinstance(fn.get("arguments"), str):
                args.append(fn["arguments"])

    def turn(self) -> Turn:
        calls = []
        for _, (ids, names, args) in sorted(self.calls.items()):
            parsed, bad = parse_arguments("".join(args))
            calls.append(ToolCall(ids[0] if ids else new_call_id(), "".join(names), parsed, bad))
        return Turn("".join(self.text), calls, self.usage or Usage(), self.model)


class _AnthropicEvents(_Assembler):
    """Anthropic's stream: ``message_start`` (the model, input tokens), ``content_block_start`` /
    ``content_block_delta`` (``text_delta``, ``input_json_delta``) / ``content_block_stop`` by
    index, ``message_delta`` (output tokens), ``message_stop`` (the end); ``ping`` is skipped; an
    ``error`` event fails the turn (retried when the endpoint is overloaded)."""

    RETRIED = ("overloaded_error", "api_error", "rate_limit_error")

    def __init__(self, style: _HttpStyle, sink: TextSink) -> None:
        super().__init__(style, sink)
        self.blocks: dict[int, dict[str, Any]] = {}
        self.pieces: dict[int, list[str]] = {}
        self.input = 0
        self.output = 0

    def feed(self, data: str, where: str) -> bool:
        event = self.event(data, where)
        kind = event.get("type")
        index = event.get("index")
        if kind == "message_start":
            message = event.get("message")
            if isinstance(message, dict):
                if isinstance(message.get("model"), str):
                    self.model = message["model"]
                self._usage(message.get("usage"))
        elif kind == "content_block_start" and isinstance(index, int):
            block = event.get("content_block")
            if isinstance(block, dict) and block.get("type") in ("text", "tool_use"):
                self.blocks[index] = dict(block)
                self.pieces[index] = []
                if block.get("type") == "text":
                    self._text(index, block.get("text"))
        elif kind == "content_block_delta" and isinstance(index, int) and index in self.blocks:
            delta = event.get("delta")
            if isinstance(delta, dict):
                if delta.get("type") == "text_delta":
                    self._text(index, delta.get("text"))
                elif delta.get("type") == "input_json_delta" and isinstance(
                    delta.get("partial_json"), str
                ):
                    self.pieces[index].append(delta["partial_json"])
        elif kind == "message_delta":
            self._usage(event.get("usage"))
        elif kind == "message_stop":
            self.complete = True
            return True
        elif kind == "error":
            error = event.get("error")
            what = error.get("type", "") if isinstance(error, dict) else ""
            raise ModelError(
                f"{where} sent an error in its stream: {self.style._excerpt(json.dumps(error))}",
                retryable=what in self.RETRIED,
                remote=True,
            )
        return False

    def _text(self, index: int, piece: Any) -> None:
        if isinstance(piece, str) and piece:
            self.pieces[index].append(piece)
            self.say(piece)

    def _usage(self, usage: Any) -> None:
        if isinstance(usage, dict):
            self.input = _int(usage.get("input_tokens")) or self.input
            self.output = _int(usage.get("output_tokens")) or self.output

    def turn(self) -> Turn:
        kept: list[dict[str, Any]] = []
        calls = []
        for index in sorted(self.blocks):
            block, joined = self.blocks[index], "".join(self.pieces[index])
            if block.get("type") == "text":
                kept.append({"type": "text", "text": joined})
                continue
            args, bad = parse_arguments(joined)
            name = str(block.get("name", ""))
            call = ToolCall(str(block.get("id") or new_call_id()), name, args, bad)
            calls.append(call)
            kept.append({"type": "tool_use", "id": call.id, "name": call.name, "input": args})
        text = "".join(b["text"] for b in kept if b["type"] == "text")
        usage = Usage(self.input, self.output, self.input + self.output)
        return Turn(text, calls, usage, self.model, kept)
