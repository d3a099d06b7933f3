"""Remote agents as toolkit tools: one tool per skill on the agent's card.

``Agent(card, headers=None, timeout=300, poll_every=1.0)``; in a config file's ``agents`` block
(``{"<id>": {card, headers?, timeout?, pollEvery?, enabled?/disabled?}}``) ``timeout`` and
``pollEvery`` are milliseconds, as the toolnexus contract has them. Header values expand
``${ENV}`` and never reach a log or the wire log.

A tool is named ``sanitize(card.name) + "_" + sanitize(skill.id)`` with the input
``{task: string}``. It sends the task with ``metadata.skill`` set and watches it to the end:

- ``completed``: the text parts of all artifacts joined by ``\\n`` (else the last agent message);
- ``failed`` / ``canceled``: an error ``A2A task <id> <state>[: <status message text>]``;
- past the timeout: an error ``A2A task <id> timed out after <ms>ms (state=<state>)``;
- a cancelled call: ``cancel`` is sent to the peer and the error is ``A2A task <id> canceled``;
  cancelled while its send is still on its way, the call waits up to ``SEND_GRACE`` seconds for
  the task the peer makes and cancels it, so no task is left running that nobody watches;
- ``input-required``: the call suspends with a Request carrying the peer's question; the answer
  is sent on the same ``taskId`` and the task is watched on.

Every result's metadata holds ``{agent, taskId, state, polls, ms, dialect}``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .. import trace
from ..errors import ConfigError, PeerError, RPCError
from ..events import EventBus, RemoteCallEvent
from ..protocol.model import Task, TaskState, now_iso
from ..secrets import expand_env
from ..tools import AUTH, Request, Tool, ToolContext, ToolResult, sanitize
from .peer import A2AClient

__all__ = ["Agent", "agent_tools", "parse_agents", "AgentSource"]

log = logging.getLogger("toolnexus.a2a")

SEND_GRACE = 5.0
"""Seconds a call cancelled during its send waits for the peer's answer, to cancel the task it
names."""


async def _made(sending: asyncio.Future[Task]) -> str:
    """The id of the task a send made, once its answer comes (at most :data:`SEND_GRACE` seconds);
    "" when it made none or said nothing in time (the send is then dropped)."""
    try:
        async with asyncio.timeout(SEND_GRACE):
            return (await asyncio.shield(sending)).id
    except (TimeoutError, RPCError, PeerError):
        sending.cancel()
        return ""


@dataclass
class Agent:
    """A remote A2A agent to use as tools.

    Attributes:
        card: the card URL (or the agent's base URL).
        headers: sent with every request, e.g. ``{"Authorization": "Bearer ${TOKEN}"}``.
        timeout: seconds a task may take before the tool gives up.
        poll_every: seconds between polls while watching a task that cannot be streamed.
        dialect: ``"auto"``, ``"0.3"``, ``"1.0"`` or ``"legacy"``.
        name: overrides the card's name in the tool names.
    """

    card: str
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = 300.0
    poll_every: float = 1.0
    dialect: str = "auto"
    name: str | None = None
    enabled: bool = True

    def __repr__(self) -> str:  # never print header values
        return f"Agent(card={self.card!r}, headers=<{len(self.headers)} hidden>, timeout={self.timeout})"


def parse_agents(block: Any) -> list[Agent]:
    """The agents of a config's ``agents`` block (timeouts in milliseconds)."""
    if block is None:
        return []
    if not isinstance(block, Mapping):
        raise ConfigError("agents must be an object of agent id to settings")
    out = []
    for key, entry in block.items():
        if not isinstance(entry, Mapping) or not isinstance(entry.get("card"), str):
            raise ConfigError(f"agents.{key} needs a card URL")
        headers = entry.get("headers") or {}
        if not isinstance(headers, Mapping):
            raise ConfigError(f"agents.{key}.headers must be an object")
        for name in ("timeout", "pollEvery"):
            v = entry.get(name)
            if v is not None and (not isinstance(v, (int, float)) or isinstance(v, bool) or v <= 0):
                raise ConfigError(f"agents.{key}.{name} must be a positive number of milliseconds")
        enabled = (
            entry.get("enabled", True) is not False and entry.get("disabled", False) is not True
        )
        out.append(
            Agent(
                card=entry["card"],
                headers={str(k): str(v) for k, v in headers.items()},
                timeout=float(entry.get("timeout", 300_000)) / 1000.0,
                poll_every=float(entry.get("pollEvery", 1000)) / 1000.0,
                dialect=str(entry.get("dialect", "auto")),
                name=entry.get("name"),
                enabled=enabled,
            )
        )
    return out


class AgentSource:
    """One connected agent: its client and its tools."""

    def __init__(self, agent: Agent, client: A2AClient) -> None:
        self.agent = agent
        self.client = client
        self.tools: list[Tool] = []
        self._waiting: dict[str, tuple[str, str | None, _Call | None]] = {}

    async def aclose(self) -> None:
        await self.client.aclose()

    def build(self) -> list[Tool]:
        card = self.client.card
        assert card is not None
        prefix = sanitize(self.agent.name or card.name or "agent")
        self.tools = [self._tool(prefix, s) for s in card.skills if isinstance(s.get("id"), str)]
        return self.tools

    def _tool(self, prefix: str, skill: dict[str, Any]) -> Tool:
        skill_id = skill["id"]
        card = self.client.card
        description = str(skill.get("description") or skill.get("name") or skill_id)
        if card is not None and card.name:
            description = f"{description} (A2A agent {card.name}, skill {skill_id})"
        schema = {
            "type": "object",
            "properties": {"task": {"type": "string", "description": "What to ask the agent"}},
            "required": ["task"],
            "additionalProperties": False,
        }

        async def run(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            return await self.run(skill_id, args["task"], ctx)

        return Tool(f"{prefix}_{sanitize(skill_id)}", description, schema, run, source="a2a")

    async def run(self, skill_id: str, text: str, ctx: ToolContext) -> ToolResult:
        """Ask the agent's skill (or answer its question, when ``ctx`` carries the answer) and
        watch the task to its result."""
        at = _Progress(self)
        client = self.client
        waiting = self._waiting_for(ctx)
        call = (waiting[2] if waiting is not None else None) or _Call.begin(self, skill_id)
        token = trace.calling.set(call.span) if call is not None else None
        try:
            if waiting is None:
                task = await self._send(text, skill_id, at)
            else:
                task = await self._answer(waiting, skill_id, ctx, at, call)
                if task is None:
                    return ToolResult.error(
                        f"A2A task {at.task_id} canceled: the request was declined", **at.meta()
                    )
            at.task_id, at.state = task.id, task.state.value
            _Call.report(call, at.task_id, at.state, done=task.state.terminal)
            if not (task.state.terminal or task.state.interrupted):
                task = await self._watch(task, ctx, at, call)
                if task is None:
                    ms = round(self.agent.timeout * 1000)
                    _Call.report(
                        call, at.task_id, "error", done=True, detail=f"timed out after {ms}ms"
                    )
                    return ToolResult.error(
                        f"A2A task {at.task_id} timed out after {ms}ms (state={at.state})",
                        **at.meta(),
                    )
            return self._outcome(task, at.meta, call)
        except asyncio.CancelledError:
            if at.task_id:
                with contextlib.suppress(Exception):
                    await asyncio.shield(client.cancel(at.task_id))
            _Call.report(call, at.task_id, "canceled", done=True)
            raise
        except (RPCError, PeerError) as exc:
            _Call.report(call, at.task_id, "error", done=True, detail=str(exc))
            named = f"task {at.task_id} " if at.task_id else ""
            return ToolResult.error(f"A2A {named}error: {exc}", **at.meta())
        finally:
            if token is not None:
                trace.calling.reset(token)
            await asyncio.shield(client.release())  # nothing stays open between calls

    def _waiting_for(self, ctx: ToolContext) -> tuple[str, str | None, _Call | None] | None:
        """The task whose question ``ctx`` answers: ``(task id, context id, call)``; None for a
        new call."""
        if ctx.answer is None:
            return None
        waiting = self._waiting.pop(ctx.answer.id, None)
        if waiting is None and ctx.answer.id.startswith("a2a:"):
            return (
                ctx.answer.id[4:],
                None,
                None,
            )  # suspended in another process: the request names the task
        return waiting

    async def _send(self, text: str, skill_id: str, at: _Progress) -> Task:
        """The task a new message to the skill makes; cancelled during the send, the task it
        made is named in ``at`` (to be cancelled, not left running there)."""
        sending = asyncio.ensure_future(self.client.send(text, skill=skill_id))
        try:
            return await asyncio.shield(sending)
        except asyncio.CancelledError:
            at.task_id = await _made(sending)
            raise

    async def _answer(
        self,
        waiting: tuple[str, str | None, _Call | None],
        skill_id: str,
        ctx: ToolContext,
        at: _Progress,
        call: _Call | None,
    ) -> Task | None:
        """The waiting task once the answer in ``ctx`` is sent on it; None when the request was
        declined (the task is then cancelled)."""
        at.task_id, context_id, _ = waiting
        answer = ctx.answer  # the call was answered: its context carries the Answer
        assert answer is not None
        if not answer.ok:
            await self.client.cancel(at.task_id)
            at.state = "canceled"
            _Call.report(call, at.task_id, at.state, done=True)
            return None
        reply = answer.data if isinstance(answer.data, str) else str(answer.data or "")
        return await self.client.send(
            reply, skill=skill_id, task_id=at.task_id, context_id=context_id
        )

    async def _watch(
        self, task: Task, ctx: ToolContext, at: _Progress, call: _Call | None
    ) -> Task | None:
        """The task as it stands when it ends or asks (its reply so far told as progress, each
        new state reported); None when the agent's timeout came first."""
        client = self.client
        final = task
        try:
            async with asyncio.timeout(self.agent.timeout):
                follow = client.follow(
                    at.task_id,
                    poll_every=self.agent.poll_every,
                    max_interval=max(self.agent.poll_every, 2.0),
                )
                said = task.said
                async with contextlib.aclosing(follow) as changes:
                    async for now in changes:
                        at.polls = getattr(client, "polls", at.polls)
                        if now.state.value != at.state:
                            at.state = now.state.value
                            _Call.report(call, at.task_id, at.state, done=now.state.terminal)
                        text = now.said
                        unfinished = not (now.state.terminal or now.state.interrupted)
                        if text != said and unfinished:
                            said = text  # its reply so far, as the peer streams it
                            await ctx.progress(message=text)
                        final = now
        except TimeoutError:
            at.polls = getattr(client, "polls", at.polls)
            return None
        return final

    def _outcome(self, task: Task, meta: Any, call: _Call | None = None) -> ToolResult:
        state = task.state
        if state is TaskState.COMPLETED:
            return ToolResult(task.reply, metadata=meta())
        if state.interrupted:
            question = task.status.message.text if task.status.message else "the agent needs input"
            request_id = f"a2a:{task.id}"
            self._waiting[request_id] = (task.id, task.context_id, call)
            client = self.client

            async def cancel_remote() -> None:  # the task waiting on this question was canceled
                self._waiting.pop(request_id, None)
                try:
                    await client.cancel(task.id)
                finally:
                    _Call.report(call, task.id, "canceled", done=True)
                    await client.release()

            request = Request(
                request_id,
                # asked for authorization: so is this task (A2A §7.6.2, a chain of auth-required)
                AUTH if state is TaskState.AUTH_REQUIRED else "input",
                question,
                data={"taskId": task.id, "contextId": task.context_id, "state": state.value},
                on_cancel=cancel_remote,
            )
            return ToolResult(
                f"waiting for an answer: {question}", metadata={**meta(), "pending": request}
            )
        detail = task.status.message.text if task.status.message else ""
        return ToolResult.error(
            f"A2A task {task.id} {state.value}{': ' + detail if detail else ''}", **meta()
        )


@dataclass
class _Progress:
    """Where one call of a skill stands: what its result's metadata says."""

    source: AgentSource
    task_id: str = ""
    state: str = "unknown"
    polls: int = 0
    started: float = field(default_factory=time.monotonic)

    def meta(self) -> dict[str, Any]:
        client = self.source.client
        return {
            "agent": self.source.agent.name or (client.card.name if client.card else client.url),
            "taskId": self.task_id,
            "state": self.state,
            "polls": self.polls,
            "ms": round((time.monotonic() - self.started) * 1000),
            "dialect": client.dialect.value if client.dialect else None,
        }


@dataclass
class _Call:
    """A remote call made by a served task's run: its span, and where it is reported."""

    span: trace.TraceContext
    task: Task
    runner: Any
    source: AgentSource
    skill: str
    started: str
    clock: float

    @classmethod
    def begin(cls, source: AgentSource, skill: str) -> _Call | None:
        """The call's span, a child of the running task's (which starts a trace if it had none);
        None outside a served task's run."""
        run = trace.running.get()
        if run is None:
            return None
        task, runner = run
        if task.trace is None:
            task.trace = trace.new_trace()
        return cls(task.trace.child(), task, runner, source, skill, now_iso(), time.monotonic())

    @staticmethod
    def report(
        call: _Call | None, remote_task_id: str, state: str, *, done: bool = False, detail: str = ""
    ) -> None:
        """Publish the call as it stands on the serving bus."""
        if call is None:
            return
        client = call.source.client
        peer = call.source.agent.name or (client.card.name if client.card else "") or client.url
        call.runner.bus.publish(
            RemoteCallEvent(
                call.runner.server,
                call.task.id,
                peer,
                client.endpoint or client.url,
                call.skill,
                remote_task_id,
                state,
                call.started,
                (time.monotonic() - call.clock) * 1000,
                call.span.trace_id,
                call.span.span_id,
                call.span.parent_id,
                done,
                detail,
            )
        )


async def agent_tools(agent: Agent, *, bus: EventBus | None = None) -> list[Tool]:
    """The tools of one agent; an agent that cannot be reached or resolved is logged and gives none."""
    source = await connect_agent(agent, bus=bus)
    return source.tools if source is not None else []


async def connect_agent(agent: Agent, *, bus: EventBus | None = None) -> AgentSource | None:
    if not agent.enabled:
        return None
    headers = {k: expand_env(v) for k, v in agent.headers.items()}
    client = A2AClient(
        agent.card,
        headers=headers,
        timeout=min(agent.timeout, 30.0),
        dialect=agent.dialect,
        bus=bus,
        secret_headers=tuple(headers),
    )
    try:
        await client.connect()
    except (PeerError, RPCError) as exc:
        log.warning("agent %s cannot be used: %s", agent.card, exc)
        await client.aclose()
        return None
    source = AgentSource(agent, client)
    source.build()
    await client.release()
    return source
