"""The tool-calling loop, shared by every model style.

A :class:`Client` owns a :class:`Style` (how to talk to one kind of model: OpenAI-style,
Anthropic-style, in process) and runs the loop: ask the model, execute the tool calls it makes
through the toolkit, feed the results back in the style's own shapes, until it answers without
tool calls. A tool that asks for out-of-band input suspends the run (see :meth:`Client.resume`).
What a run is made of and returns (turns, calls, usage, :class:`RunResult`) is :mod:`toolnexus.llm.run`.
"""

from __future__ import annotations

import asyncio
import functools
import inspect
import os
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any, Protocol

from ..errors import MaxTurnsError, ModelTimeout
from ..skills import ToolkitLike
from ..stores.base import when_available
from ..stores.conversations import ConversationStore, MemoryConversationStore
from ..tools import REJECT, Answer, Attachment, Request, Tool, ToolContext, ToolResult
from .run import Inbox, RunResult, RunState, TextSink, ToolCall, Turn, Usage

__all__ = ["Client", "Style", "WaitFor"]

WaitFor = Callable[[Request], Awaitable[Answer]]


class Style(Protocol):
    """How to talk to one kind of model. The transcript is kept in the style's own shapes."""

    name: str

    async def complete(
        self,
        system: str,
        messages: list[dict[str, Any]],
        tools: list[Tool],
        sink: TextSink | None = None,
    ) -> Turn:
        """One turn. ``sink``: where the turn's text goes as the model says it (a style that can
        stream asks for a stream then; a style written before streaming may leave it out of its
        signature and answers whole)."""
        ...

    def user(self, text: str) -> dict[str, Any]:
        """The user's turn. A style that takes files as content blocks lists their media types
        in a ``media_types`` attribute (a set) and takes them as ``user(text, files)``."""
        ...

    def assistant(self, turn: Turn) -> dict[str, Any]: ...

    def tool_results(self, results: list[tuple[ToolCall, ToolResult]]) -> list[dict[str, Any]]: ...

    async def aclose(self) -> None: ...


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
        self._streams = "sink" in inspect.signature(style.complete).parameters

    def __repr__(self) -> str:
        return f"Client(style={self.style.name!r}, model={self.model!r})"

    async def run(
        self,
        prompt: str,
        toolkit: ToolkitLike | None = None,
        history: Sequence[dict[str, Any]] | None = None,
        *,
        sink: TextSink | None = None,
    ) -> RunResult:
        """Run ``prompt`` to a final answer (or to a suspension), with ``history`` before it.
        ``sink``: where the model's words go as it says them (see :class:`TextSink`)."""
        state = self._start(prompt, toolkit, history, None)
        state.sink = sink
        return await self._bounded(self._drive(state))

    async def ask(
        self,
        prompt: str,
        toolkit: ToolkitLike | None = None,
        id: str | None = None,
        inbox: Inbox | None = None,
        *,
        new: bool = False,
        keep: bool = True,
        sink: TextSink | None = None,
        files: Sequence[Attachment] = (),
        folder: os.PathLike[str] | None = None,
    ) -> RunResult:
        """Like :meth:`run`, continuing conversation ``id`` from the store and saving it after.
        ``inbox``: messages that arrive while it runs (see :class:`Inbox`); ``new``: the caller
        made ``id`` up just now, so there is nothing to read (a served task in a new context);
        ``keep=False``: the caller saves the conversation itself (``RunResult.unsaved_conversation``:
        a served task's runner writes it with the task's last state, in one statement); ``sink``:
        as :meth:`run`; ``files``: given to the model with the prompt, those whose media type
        its style takes (:meth:`Style.user`; the others only as the prompt names them);
        ``folder``: where the tools find them (:attr:`ToolContext.folder`)."""
        history = (await self.store.get(id) or []) if id is not None and not new else None
        state = self._start(prompt, toolkit, history, id, files)
        state.inbox, state.keep, state.sink, state.folder = inbox, keep, sink, folder
        return await self._bounded(self._drive(state))

    async def resume(
        self,
        result: RunResult,
        answer: Answer,
        inbox: Inbox | None = None,
        *,
        keep: bool = True,
        sink: TextSink | None = None,
    ) -> RunResult:
        """Continue a ``pending`` run with the answer to its request (``keep``, ``sink``: as
        :meth:`ask`)."""
        state = result._state
        if result.status != "pending" or state is None or state.waiting is None:
            raise ValueError("only a pending run can be resumed")
        state.inbox, state.keep, state.sink = inbox, keep, sink
        call = state.waiting
        state.waiting = None
        outcome = await self._answered(state, call, answer)
        state.done.append((call, outcome))
        state.result.status, state.result.pending = "ok", None
        return await self._bounded(self._drive(state))

    def restore(self, data: dict[str, Any], toolkit: ToolkitLike | None) -> RunResult:
        """The pending run :meth:`RunResult.suspended` wrote (in this process or another), ready
        for :meth:`resume` with ``toolkit``'s tools."""
        state = RunState(toolkit, data["system"], list(data["messages"]), data.get("conversation"))
        state.queue = [ToolCall(**c) for c in data.get("queue", ())]
        state.waiting = ToolCall(**data["waiting"])
        state.done = [
            (ToolCall(**c), ToolResult(o["output"], o["is_error"], o.get("metadata") or {}))
            for c, o in data.get("done", ())
        ]
        usage = Usage(**data.get("usage", {}))
        state.result = RunResult(
            messages=state.messages,
            tool_calls=list(data.get("tool_calls", ())),
            turns=data.get("turns", 0),
            usage=usage,
            model=data.get("model", self.model),
            status="pending",
            pending=Request.from_dict(data["pending"]),
            system=state.system,
            _state=state,
        )
        return state.result

    async def aclose(self) -> None:
        """Close the connections the client holds."""
        await self.style.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the loop ------------------------------------------------------------------------------
    def _start(
        self,
        prompt: str,
        toolkit: ToolkitLike | None,
        history: Sequence[dict[str, Any]] | None,
        conversation: str | None,
        files: Sequence[Attachment] = (),
    ) -> RunState:
        parts = [self.system_prompt.strip(), toolkit.skills_prompt() if toolkit is not None else ""]
        system = "\n\n".join(p for p in parts if p)
        takes: Collection[str] = getattr(self.style, "media_types", ())
        blocks = [f for f in files if f.media_type.split(";")[0].strip().lower() in takes]
        user = self.style.user(prompt, blocks) if blocks else self.style.user(prompt)  # type: ignore[call-arg]  # a style that declares media_types takes them
        messages = [*(history or []), user]
        state = RunState(toolkit, system, messages, conversation)
        state.result = RunResult(messages=messages, model=self.model, system=system, _state=state)
        return state

    async def _bounded(self, work: Awaitable[RunResult]) -> RunResult:
        if self.timeout is None:
            return await work
        try:
            async with asyncio.timeout(self.timeout):
                return await work
        except TimeoutError:
            raise ModelTimeout(
                f"the run took longer than its timeout of {self.timeout:g}s"
            ) from None

    def _tools(self, toolkit: ToolkitLike | None) -> list[Tool]:
        own = toolkit.tools() if toolkit is not None else []
        names = {t.name for t in own}
        return own + [t for t in self.tools if t.name not in names]

    async def _drive(self, state: RunState) -> RunResult:
        result = state.result
        tools = self._tools(state.toolkit)
        while True:
            if state.queue or state.done:
                if await self._run_calls(state, tools):
                    return result
            if result.turns >= self.max_turns:
                raise MaxTurnsError(
                    f"no final answer after {self.max_turns} turns (max_turns={self.max_turns})"
                )
            while state.inbox:  # what the user said meanwhile, where it arrived: before this turn
                state.messages.append(self.style.user(state.inbox.popleft()))
            sink = state.sink if self._streams else None
            if sink is not None:
                turn = await self.style.complete(state.system, state.messages, tools, sink)
                sink.end(final=not turn.tool_calls and not state.inbox)
            else:
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
                    conversation, messages = state.conversation, state.messages
                    if not state.keep:  # its caller keeps it (a served task: with its last state)
                        result.unsaved_conversation = (conversation, messages)
                    else:  # a database restarting: kept once it is back
                        await when_available(
                            functools.partial(self.store.save, conversation, messages),
                            f"conversation {conversation}",
                        )
                return result
            state.queue = list(turn.tool_calls)

    async def _run_calls(self, state: RunState, tools: list[Tool]) -> bool:
        """Execute the queued calls; True when the run suspended on one of them."""
        by_name = {t.name: t for t in tools}
        while state.queue:
            call = state.queue.pop(0)
            outcome = await self._execute(by_name, call, None, state.folder, state.toolkit)
            request = outcome.pending
            if request is not None:
                if self.wait_for is None or request.kind == REJECT:  # a refusal ends the run
                    state.waiting = call
                    state.result.status, state.result.pending = "pending", request
                    if (
                        state.inbox is not None
                    ):  # what is left in it goes with the answer (the caller's)
                        state.inbox.closed = True
                        state.inbox = None
                    return True
                answer = await self.wait_for(request)
                outcome = await self._answered(state, call, answer, by_name)
            state.done.append((call, outcome))
        for call, outcome in state.done:
            if not outcome.is_error:
                state.result.files.extend(outcome.files)
                if outcome.data is not None:
                    state.result.data.append(outcome.data)
            state.result.tool_calls.append(
                {
                    "name": call.name,
                    "args": call.arguments,
                    "output": outcome.output,
                    "is_error": outcome.is_error,
                    "metadata": outcome.metadata,
                }
            )
        state.messages.extend(self.style.tool_results(state.done))
        state.done = []
        return False

    async def _answered(
        self,
        state: RunState,
        call: ToolCall,
        answer: Answer,
        by_name: dict[str, Tool] | None = None,
    ) -> ToolResult:
        if not answer.ok:
            reason = (
                answer.data if isinstance(answer.data, str) and answer.data else "no reason given"
            )
            return ToolResult.error(f"{call.name}: the request was declined ({reason})")
        if by_name is None:
            by_name = {t.name: t for t in self._tools(state.toolkit)}
        outcome = await self._execute(by_name, call, answer, state.folder, state.toolkit)
        if outcome.pending is not None:
            return ToolResult.error(f"{call.name}: asked for input again after it was answered")
        return outcome

    async def _execute(
        self,
        by_name: dict[str, Tool],
        call: ToolCall,
        answer: Answer | None,
        folder: os.PathLike[str] | None = None,
        toolkit: ToolkitLike | None = None,
    ) -> ToolResult:
        if call.bad_arguments is not None:
            return ToolResult.error(
                f"{call.name}: the arguments are not valid JSON ({call.bad_arguments})"
            )
        tool = by_name.get(call.name)
        if tool is None:
            available = ", ".join(by_name) or "none"
            return ToolResult.error(f"Unknown tool '{call.name}'. Available tools: {available}")
        return await tool.execute(
            call.arguments,
            ToolContext(timeout=self.tool_timeout, answer=answer, folder=folder, toolkit=toolkit),
        )
