"""``toolnexus doctor --client``: a strict local A2A agent to point a client at, which answers as a
correct 1.0 and 0.3 peer (our own server: JSON-RPC in both dialects, HTTP+JSON, streams, cancel,
resubscribe, push, a card with an ETag) and judges every request the client sends
(:mod:`toolnexus.debug.judge`), into a :class:`~toolnexus.debug.report.DoctorReport` that fills in
as the requests arrive.

The agent's script, read from the words of the message, lets a client go through what it must
handle: "question" asks "Which colour?" (the task goes input-required; the answer on the same
task completes it with ``answered: <answer>``), "auth" asks for authorization (auth-required,
answered the same way), "reject" refuses the work (rejected), "slow" works for :data:`SLOW_FOR`
seconds (to cancel it, or to resubscribe to it), "fail" fails; anything else is answered
``echo: <text>``, streamed in pieces. The card's skill lists them as examples. Its 1.0
interfaces name the tenant :data:`TENANT` (calls without it are answered too, and judged), and it
declares the optional extension :data:`EXTENSION`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ModelError
from ..events import ServerEvent, TrafficEvent
from ..llm import Client, create_in_process_client
from ..llm.demo import approval_tool
from ..protocol.extensions import Extension
from ..serve.app import ServeHandle
from ..serve.config import A2AConfig
from ..skills import SkillDef
from ..toolkit import create_toolkit
from ..tools import ToolContext, ToolResult, tool
from ..traffic import PUBLISH_EVERY
from .judge import ClientJudge
from .report import DoctorReport

__all__ = [
    "ClientDoctor",
    "client_doctor",
    "start_client_doctor",
    "script",
    "scripted_model",
    "DOCTOR_NAME",
]

log = logging.getLogger("toolnexus.doctor")

DOCTOR_NAME = "toolnexus-client-doctor"
SLOW_FOR = 30.0
"""Seconds a "slow" task works before it answers: time for a client to cancel it."""
EXAMPLES = ("hello", "a question, please", "auth, please", "reject this", "slow", "fail")
QUESTION = "Which colour?"
SIGN_IN = "Authorize the client doctor's agent: answer with any word"
REFUSAL = "the client doctor refuses this on purpose"
TENANT = "doctor"
"""The tenant the agent's card names on its 1.0 interfaces: a client must send it in every 1.0 call."""
EXTENSION = "urn:toolnexus:ext:client-doctor:v1"
"""The extension the agent's card declares (optional): asking for it is judged."""
JUDGED = "judged"
"""The state of the last event on the doctor's bus: every exchange before it has been judged."""


def _text(content: Any) -> str:
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict))
    return str(content or "")


async def script(request: dict[str, Any]) -> AsyncIterator[Any]:
    """The agent's model (an in-process ``generate`` that streams): see the module docstring.
    Reads the last user message (its last paragraph: a served agent names the skill asked for
    before it) and the tool results after it."""
    messages = request["messages"]
    last = max(i for i, m in enumerate(messages) if m.get("role") == "user")
    answers = [_text(m["content"]) for m in messages[last + 1 :] if m.get("role") == "tool"]
    if answers:  # the question was answered: "approved: <answer>"
        yield f"answered: {answers[-1].split(': ', 1)[-1]}"
        return
    text = _text(messages[last]["content"]).strip().split("\n\n")[-1]
    words = text.lower()
    if "fail" in words:
        raise ModelError("asked to fail")
    if "question" in words:
        yield {"tool_calls": [{"name": "ask_approval", "arguments": {"question": QUESTION}}]}
        return
    if "reject" in words:
        yield {"tool_calls": [{"name": "refuse", "arguments": {}}]}
        return
    if "auth" in words:
        yield {"tool_calls": [{"name": "authorize", "arguments": {}}]}
        return
    if "slow" in words:
        await asyncio.sleep(SLOW_FOR)
    reply = f"echo: {text}"
    for start in range(0, len(reply), 8):  # a streamed reply: artifact appends
        yield reply[start : start + 8]


@tool
def authorize(ctx: ToolContext) -> ToolResult:
    """Ask the caller for authorization (the task goes auth-required); its answer grants it."""
    if ctx.answer is None:
        return ToolResult.needs_auth(SIGN_IN)
    return ToolResult(f"authorized: {ctx.answer.data}")


@tool
def refuse() -> ToolResult:
    """Refuse the work (the task ends rejected)."""
    return ToolResult.reject(REFUSAL)


def scripted_model() -> Client:
    """The agent's model: :func:`script`, with the tools it calls (a question, an authorization,
    a refusal). Test peers run on it too (``tests/peers/quirky.py``)."""
    return create_in_process_client(script, tools=[approval_tool(), authorize, refuse])


@dataclass
class ClientDoctor:
    """A running client doctor: point the client at ``url``; ``report`` fills in as it calls;
    :meth:`stop` ends it (what the client never tried is added) and returns the report."""

    url: str
    report: DoctorReport
    handle: ServeHandle
    judge: ClientJudge
    _pump: asyncio.Task[None]

    @property
    def card_url(self) -> str:
        return self.handle.card_url

    async def stop(self) -> DoctorReport:
        if self.report.done:
            return self.report
        await self.handle.stop()  # every exchange ended: the wire log publishes them within
        await asyncio.sleep(PUBLISH_EVERY * 2)  # PUBLISH_EVERY, a timer set before this one
        self.handle.events.publish(ServerEvent(self.handle.name, JUDGED))  # the pump's last
        try:
            async with asyncio.timeout(5):
                await self._pump
        except TimeoutError:
            self._pump.cancel()
        self.judge.finish()
        return self.report


async def start_client_doctor(
    addr: str = "127.0.0.1:0", *, on_finding: Callable[[DoctorReport], None] | None = None
) -> ClientDoctor:
    """Serve the client doctor's agent on ``addr`` (loopback by default); see the module
    docstring. ``on_finding(report)`` is called as each finding comes, and once at the end."""
    toolkit = await create_toolkit(
        builtins=False,
        skills=[
            SkillDef(
                "doctor",
                "Answers as a strict A2A peer: 'question' asks for input, 'auth' for "
                f"authorization, 'reject' is refused, 'slow' takes {SLOW_FOR:g} s, 'fail' fails, "
                "anything else is echoed (streamed)",
                tags=["test"],
                examples=list(EXAMPLES),
            )
        ],
    )
    model = scripted_model()
    config = A2AConfig(
        name=DOCTOR_NAME,
        description="Point an A2A client here: every request it sends is judged (toolnexus doctor --client)",
        tenants=[TENANT],
        tenant_spaces=False,  # a call without the tenant is judged, and still answered
        extensions=[Extension(EXTENSION, "Asking for it is judged; it changes nothing")],
    )
    handle = await toolkit.serve(addr, client=model, a2a=config, record_wire=True)
    report = DoctorReport(handle.url, doctor="a2a-client")
    if on_finding is not None:
        report.watch(on_finding)
    judge = ClientJudge(report, TENANT, (EXTENSION,))
    subscription = handle.events.subscribe(  # replayed: what came before it first reads too
        accept=lambda e: (
            isinstance(e, ServerEvent) or (isinstance(e, TrafficEvent) and e.direction == "in")
        ),
    )

    async def pump() -> None:
        async with contextlib.aclosing(subscription) as events:
            async for event in events:
                if isinstance(event, ServerEvent):
                    if event.state == JUDGED:
                        return
                    continue
                try:
                    judge.exchange(event)
                except Exception:  # a judge's fault must not stop the judging
                    log.exception(
                        "the client doctor could not judge %s %s", event.method, event.url
                    )

    task = asyncio.ensure_future(pump())
    return ClientDoctor(handle.url, report, handle, judge, task)


@contextlib.asynccontextmanager
async def client_doctor(
    addr: str = "127.0.0.1:0", *, on_finding: Callable[[DoctorReport], None] | None = None
) -> AsyncIterator[ClientDoctor]:
    """:func:`start_client_doctor` as a context: stopped (and its report finished) on exit."""
    doctor = await start_client_doctor(addr, on_finding=on_finding)
    try:
        yield doctor
    finally:
        await doctor.stop()
