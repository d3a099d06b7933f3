"""The tool-calling loop, shared by every model style.

A :class:`Client` owns a :class:`Style` (how to talk to one kind of model: OpenAI-style,
Anthropic-style, in process) and runs the loop: ask the model, execute the tool calls it makes
through the toolkit, feed the results back in the style's own shapes, until it answers without
tool calls. A tool that asks for out-of-band input suspends the run (see :meth:`Client.resume`).
"""

from __future__ import annotations

import asyncio
import collections
import dataclasses
import json
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..display import e, plural, to_dataframe
from ..errors import MaxTurnsError, ModelTimeout
from ..stores.conversations import ConversationStore, MemoryConversationStore
from ..tools import Answer, Request, Tool, ToolContext, ToolResult

if TYPE_CHECKING:
    from ..toolkit import Toolkit

__all__ = ["Client", "RunResult", "Usage", "ToolCall", "Turn", "Style", "WaitFor", "Inbox"]

WaitFor = Callable[[Request], Awaitable[Answer]]


@dataclass
class Usage:
    """Token counts, summed over every turn of a run."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0

    def add(self, other: Usage) -> None:
        self.prompt_tokens += other.prompt_tokens
        self.completion_tokens += other.completion_tokens
        self.total_tokens += other.total_tokens

    def to_dict(self) -> dict[str, int]:
        return {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
        }


@dataclass
class ToolCall:
    """One tool call the model asked for. ``arguments`` is the parsed object, or the raw text
    when the model sent JSON that does not parse (``bad_arguments`` then says why)."""

    id: str
    name: str
    arguments: Any
    bad_arguments: str | None = None


@dataclass
class Turn:
    """One model answer: its text, its tool calls and its usage."""

    content: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    raw: Any = None
    """The answer in the style's own shape, when the style keeps it (Anthropic's content blocks)."""


class Style(Protocol):
    """How to talk to one kind of model. The transcript is kept in the style's own shapes."""

    name: str

    async def complete(self, system: str, messages: list[dict[str, Any]], tools: list[Tool]) -> Turn: ...

    def user(self, text: str) -> dict[str, Any]: ...

    def assistant(self, turn: Turn) -> dict[str, Any]: ...

    def tool_results(self, results: list[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]: ...

    async def aclose(self) -> None: ...


@dataclass
class RunResult:
    """What a run returns.

    Attributes:
        text: the model's final answer ("" while pending).
        messages: the transcript in the style's shapes (the system prompt is not in it; see ``system``).
        tool_calls: each executed call: ``{name, args, output, is_error, metadata}``.
        turns: how many times the model was asked.
        usage: tokens summed over the turns.
        model: the model that answered.
        status: ``"ok"``, or ``"pending"`` when a tool waits for input (see ``pending``).
        pending: the :class:`Request` the run waits on.
        system: the system prompt the run used.
    """

    text: str = ""
    messages: list[dict[str, Any]] = field(default_factory=list)
    tool_calls: list[dict[str, Any]] = field(default_factory=list)
    turns: int = 0
    usage: Usage = field(default_factory=Usage)
    model: str = ""
    status: Literal["ok", "pending"] = "ok"
    pending: Request | None = None
    system: str = ""
    _state: _RunState | None = field(default=None, repr=False, compare=False)

    @property
    def tool_call_count(self) -> int:
        return len(self.tool_calls)

    def _repr_html_(self) -> str:
        return run_html(self)

    def to_dataframe(self) -> Any:
        """One row per tool call (needs pandas)."""
        return to_dataframe([{k: c[k] for k in ("name", "args", "output", "is_error")} for c in self.tool_calls])

    def suspended(self) -> dict[str, Any] | None:
        """A pending run as JSON data (None when it is not pending), so that another process can
        resume it with :meth:`Client.restore`: the transcript, the calls done and still queued,
        the call waiting and what the run has used so far. A tool's own state (a Python object)
        is not in it: the tool is executed again with the answer, as in one process."""
        state = self._state
        if self.status != "pending" or state is None or state.waiting is None or self.pending is None:
            return None
        return json.loads(json.dumps({
            "system": state.system, "messages": state.messages, "conversation": state.conversation,
            "queue": [dataclasses.asdict(c) for c in state.queue], "waiting": dataclasses.asdict(state.waiting),
            "done": [[dataclasses.asdict(c), {"output": o.output, "is_error": o.is_error,
                                              "metadata": {k: v for k, v in o.metadata.items() if k != "pending"}}]
                     for c, o in state.done],
            "pending": self.pending.to_dict(), "turns": self.turns, "usage": self.usage.to_dict(),
            "model": self.model, "tool_calls": self.tool_calls}, default=str))

    def to_dict(self) -> dict[str, Any]:
        return {
            "text": self.text,
            "status": self.status,
            "pending": self.pending.to_dict() if self.pending else None,
            "model": self.model,
            "turns": self.turns,
            "usage": self.usage.to_dict(),
            "tool_call_count": self.tool_call_count,
            "tool_calls": self.tool_calls,
        }


class Inbox(collections.deque):
    """User messages that arrive while a run works (texts). The run adds them to the conversation
    before its next model turn, in order, and asks again rather than answer past one. It closes the
    inbox at the moment it returns: empty when it answers; when a tool suspends it, what is left is
    the caller's to send with the answer. Once ``closed``, a message must go to a new run."""

    closed = False


@dataclass
class _RunState:
    """Where a run stands, so that a suspended run can continue."""

    toolkit: Toolkit | None
    system: str
    messages: list[dict[str, Any]]
    conversation: str | None = None
    queue: list[ToolCall] = field(default_factory=list)
    done: list[tuple[ToolCall, ToolResult]] = field(default_factory=list)
    waiting: ToolCall | None = None
    result: RunResult = field(default_factory=RunResult)
    inbox: Inbox | None = None


class Client:
    """Runs prompts through a model with a toolkit's tools.

    Build one with :func:`create_client`, :func:`create_in_process_client` or :func:`demo_client`.

    Args:
        style: how to talk to the model.
        model: the model's name, as reported in results.
        system_prompt: put before the toolkit's skills prompt in the system message.
        max_turns: the most times the model is asked in one run.
        timeout: seconds the whole run may take (None: no bound).
        tools: tools the client brings itself, offered beside the toolkit's.
        store: where :meth:`ask` keeps conversations (default: in memory).
        wait_for: answers a suspended tool's request; without it a run returns ``pending``.
        tool_timeout: seconds each tool call may take.
    """

    def __init__(
        self,
        style: Style,
        *,
        model: str,
        system_prompt: str = "",
        max_turns: int = 10,
        timeout: float | None = None,
        tools: Sequence[Tool] = (),
        store: ConversationStore | None = None,
        wait_for: WaitFor | None = None,
        tool_timeout: float | None = None,
    ) -> None:
        if max_turns < 1:
            raise ValueError("max_turns must be at least 1")
        self.style = style
        self.model = model
        self.system_prompt = system_prompt
        self.max_turns = max_turns
        self.timeout = timeout
        self.tools = list(tools)
        self.store: ConversationStore = store if store is not None else MemoryConversationStore()
        self.wait_for = wait_for
        self.tool_timeout = tool_timeout

    def __repr__(self) -> str:
        return f"Client(style={self.style.name!r}, model={self.model!r})"

    async def run(
        self, prompt: str, toolkit: Toolkit | None = None, history: Sequence[dict[str, Any]] | None = None
    ) -> RunResult:
        """Run ``prompt`` to a final answer (or to a suspension), with ``history`` before it."""
        state = self._start(prompt, toolkit, history, None)
        return await self._bounded(self._drive(state))

    async def ask(self, prompt: str, toolkit: Toolkit | None = None, id: str | None = None,
                  inbox: Inbox | None = None) -> RunResult:
        """Like :meth:`run`, continuing conversation ``id`` from the store and saving it after.
        ``inbox``: messages that arrive while it runs (see :class:`Inbox`)."""
        history = (await self.store.get(id) or []) if id is not None else None
        state = self._start(prompt, toolkit, history, id)
        state.inbox = inbox
        return await self._bounded(self._drive(state))

    async def resume(self, result: RunResult, answer: Answer, inbox: Inbox | None = None) -> RunResult:
        """Continue a ``pending`` run with the answer to its request."""
        state = result._state
        if result.status != "pending" or state is None or state.waiting is None:
            raise ValueError("only a pending run can be resumed")
        state.inbox = inbox
        call = state.waiting
        state.waiting = None
        outcome = await self._answered(state, call, answer)
        state.done.append((call, outcome))
        state.result.status, state.result.pending = "ok", None
        return await self._bounded(self._drive(state))

    def restore(self, data: dict[str, Any], toolkit: Toolkit | None) -> RunResult:
        """The pending run :meth:`RunResult.suspended` wrote (in this process or another), ready
        for :meth:`resume` with ``toolkit``'s tools."""
        state = _RunState(toolkit, data["system"], list(data["messages"]), data.get("conversation"))
        state.queue = [ToolCall(**c) for c in data.get("queue", ())]
        state.waiting = ToolCall(**data["waiting"])
        state.done = [(ToolCall(**c), ToolResult(o["output"], o["is_error"], o.get("metadata") or {}))
                      for c, o in data.get("done", ())]
        usage = Usage(**data.get("usage", {}))
        state.result = RunResult(messages=state.messages, tool_calls=list(data.get("tool_calls", ())),
                                 turns=data.get("turns", 0), usage=usage, model=data.get("model", self.model),
                                 status="pending", pending=Request.from_dict(data["pending"]), system=state.system,
                                 _state=state)
        return state.result

    async def aclose(self) -> None:
        """Close the connections the client holds."""
        await self.style.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the loop ------------------------------------------------------------------------------
    def _start(self, prompt: str, toolkit: Toolkit | None, history: Sequence[dict[str, Any]] | None,
               conversation: str | None) -> _RunState:
        parts = [self.system_prompt.strip(), toolkit.skills_prompt() if toolkit is not None else ""]
        system = "\n\n".join(p for p in parts if p)
        messages = [*(history or []), self.style.user(prompt)]
        state = _RunState(toolkit, system, messages, conversation)
        state.result = RunResult(messages=messages, model=self.model, system=system, _state=state)
        return state

    async def _bounded(self, work: Awaitable[RunResult]) -> RunResult:
        if self.timeout is None:
            return await work
        try:
            async with asyncio.timeout(self.timeout):
                return await work
        except TimeoutError:
            raise ModelTimeout(f"the run took longer than its timeout of {self.timeout:g}s") from None

    def _tools(self, toolkit: Toolkit | None) -> list[Tool]:
        own = toolkit.tools() if toolkit is not None else []
        names = {t.name for t in own}
        return own + [t for t in self.tools if t.name not in names]

    async def _drive(self, state: _RunState) -> RunResult:
        result = state.result
        tools = self._tools(state.toolkit)
        while True:
            if state.queue or state.done:
                if await self._run_calls(state, tools):
                    return result
            if result.turns >= self.max_turns:
                raise MaxTurnsError(f"no final answer after {self.max_turns} turns (max_turns={self.max_turns})")
            while state.inbox:  # what the user said meanwhile, where it arrived: before this turn
                state.messages.append(self.style.user(state.inbox.popleft()))
            turn = await self.style.complete(state.system, state.messages, tools)
            result.turns += 1
            result.usage.add(turn.usage)
            if turn.model:
                result.model = turn.model
            state.messages.append(self.style.assistant(turn))
            if not turn.tool_calls:
                if state.inbox:  # a message came in during this turn: the model answers it too
                    continue
                if state.inbox is not None:
                    state.inbox.closed = True
                result.text = turn.content
                result._state = None
                if state.conversation is not None:
                    await self.store.save(state.conversation, state.messages)
                return result
            state.queue = list(turn.tool_calls)

    async def _run_calls(self, state: _RunState, tools: list[Tool]) -> bool:
        """Execute the queued calls; True when the run suspended on one of them."""
        by_name = {t.name: t for t in tools}
        while state.queue:
            call = state.queue.pop(0)
            outcome = await self._execute(by_name, call, None)
            request = outcome.pending
            if request is not None:
                if self.wait_for is None:
                    state.waiting = call
                    state.result.status, state.result.pending = "pending", request
                    if state.inbox is not None:  # what is left in it goes with the answer (the caller's)
                        state.inbox.closed = True
                        state.inbox = None
                    return True
                answer = await self.wait_for(request)
                outcome = await self._answered(state, call, answer, by_name)
            state.done.append((call, outcome))
        for call, outcome in state.done:
            state.result.tool_calls.append(
                {"name": call.name, "args": call.arguments, "output": outcome.output,
                 "is_error": outcome.is_error, "metadata": outcome.metadata}
            )
        state.messages.extend(self.style.tool_results(state.done))
        state.done = []
        return False

    async def _answered(self, state: _RunState, call: ToolCall, answer: Answer,
                        by_name: dict[str, Tool] | None = None) -> ToolResult:
        if not answer.ok:
            reason = answer.data if isinstance(answer.data, str) and answer.data else "no reason given"
            return ToolResult.error(f"{call.name}: the request was declined ({reason})")
        if by_name is None:
            by_name = {t.name: t for t in self._tools(state.toolkit)}
        outcome = await self._execute(by_name, call, answer)
        if outcome.pending is not None:
            return ToolResult.error(f"{call.name}: asked for input again after it was answered")
        return outcome

    async def _execute(self, by_name: dict[str, Tool], call: ToolCall, answer: Answer | None) -> ToolResult:
        if call.bad_arguments is not None:
            return ToolResult.error(f"{call.name}: the arguments are not valid JSON ({call.bad_arguments})")
        tool = by_name.get(call.name)
        if tool is None:
            available = ", ".join(by_name) or "none"
            return ToolResult.error(f"Unknown tool '{call.name}'. Available tools: {available}")
        return await tool.execute(call.arguments, ToolContext(timeout=self.tool_timeout, answer=answer))


def parse_arguments(raw: Any) -> tuple[Any, str | None]:
    """A tool call's arguments as an object, from a dict or a JSON string; else the reason."""
    if raw is None or raw == "":
        return {}, None
    if isinstance(raw, dict):
        return raw, None
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            return raw, f"{exc.msg} at column {exc.colno}"
        return value, None
    return raw, f"expected an object, got {type(raw).__name__}"


def new_call_id() -> str:
    return "call_" + uuid.uuid4().hex[:24]


def run_html(result: RunResult) -> str:
    """A run as HTML: status, model, turns, tokens, the text and the tool calls."""
    u = result.usage
    calls = "".join(f"<tr><td>{e(c['name'])}</td><td><code>{e(json.dumps(c['args']))}</code></td>"
                    f"<td style='text-align:left'>{e(str(c['output'])[:200])}</td></tr>" for c in result.tool_calls)
    return (f"<div class='toolnexus-run'><b>{e(result.status)}</b> {e(result.model)} · {plural(result.turns, 'turn')} · "
            f"{plural(u.total_tokens, 'token')} ({u.prompt_tokens} in, {u.completion_tokens} out) · "
            f"{plural(result.tool_call_count, 'tool call')}"
            f"<pre style='white-space:pre-wrap'>{e(result.text.strip())}</pre>"
            + (f"<table><tr><th>tool</th><th>args</th><th>output</th></tr>{calls}</table>" if calls else "")
            + "</div>")
