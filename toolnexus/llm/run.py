"""What a run of the tool-calling loop is made of and returns: the model's turns and tool calls,
the tokens used, where a suspended run stands, and the :class:`RunResult` a task event carries.
Data only; the loop itself is :mod:`toolnexus.llm.client`."""

from __future__ import annotations

import collections
import dataclasses
import json
import os
import uuid
from dataclasses import asdict, dataclass, field
from typing import Any, Literal, Protocol

from ..display import e, plural, to_dataframe
from ..skills import ToolkitLike
from ..tools import Attachment, Request, ToolResult

__all__ = [
    "RunResult",
    "Usage",
    "ToolCall",
    "Turn",
    "Inbox",
    "RunState",
    "TextSink",
    "parse_arguments",
    "new_call_id",
]


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
        return asdict(self)


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
        unsaved_conversation: a run asked with ``keep=False`` (:meth:`Client.ask`): the id and the
            messages of the conversation it ended with, for the caller to keep (None otherwise).
        files: the files its tools made (:attr:`ToolResult.files`), in the order they came.
        data: the structured data its tools made (:attr:`ToolResult.data`), in order.
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
    unsaved_conversation: tuple[str, list[dict[str, Any]]] | None = field(
        default=None, repr=False, compare=False
    )
    files: list[Attachment] = field(default_factory=list, repr=False)
    data: list[Any] = field(default_factory=list, repr=False)
    _state: RunState | None = field(default=None, repr=False, compare=False)

    @property
    def tool_call_count(self) -> int:
        return len(self.tool_calls)

    def _repr_html_(self) -> str:
        return run_html(self)

    def to_dataframe(self) -> Any:
        """One row per tool call (needs pandas)."""
        return to_dataframe(
            [{k: c[k] for k in ("name", "args", "output", "is_error")} for c in self.tool_calls]
        )

    def suspended(self) -> dict[str, Any] | None:
        """A pending run as JSON data (None when it is not pending), so that another process can
        resume it with :meth:`Client.restore`: the transcript, the calls done and still queued,
        the call waiting and what the run has used so far. A tool's own state (a Python object)
        is not in it: the tool is executed again with the answer, as in one process."""
        state = self._state
        if (
            self.status != "pending"
            or state is None
            or state.waiting is None
            or self.pending is None
        ):
            return None
        return json.loads(
            json.dumps(
                {
                    "system": state.system,
                    "messages": state.messages,
                    "conversation": state.conversation,
                    "queue": [dataclasses.asdict(c) for c in state.queue],
                    "waiting": dataclasses.asdict(state.waiting),
                    "done": [
                        [
                            dataclasses.asdict(c),
                            {
                                "output": o.output,
                                "is_error": o.is_error,
                                "metadata": {k: v for k, v in o.metadata.items() if k != "pending"},
                            },
                        ]
                        for c, o in state.done
                    ],
                    "pending": self.pending.to_dict(),
                    "turns": self.turns,
                    "usage": self.usage.to_dict(),
                    "model": self.model,
                    "tool_calls": self.tool_calls,
                },
                default=str,
            )
        )

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


class Inbox(collections.deque[str]):
    """User messages that arrive while a run works (texts). The run adds them to the conversation
    before its next model turn, in order, and asks again rather than answer past one. It closes the
    inbox at the moment it returns: empty when it answers; when a tool suspends it, what is left is
    the caller's to send with the answer. Once ``closed``, a message must go to a new run."""

    closed = False


class TextSink(Protocol):
    """Where a run's words go as the model says them (a served task's reply, growing; a chat).

    A style that streams calls :meth:`text` with each piece of a turn's text as it arrives; the
    loop calls :meth:`end` when the turn is over. Only what a style really streams is said: an
    endpoint that answers whole says nothing here, and its text arrives with the run's result.
    """

    def text(self, piece: str) -> None:
        """A piece of the current turn's text, in order."""
        ...

    def retry(self) -> None:
        """What this turn said so far is void: its request failed mid-way and is sent again (a
        half reply is never presented as a whole one)."""
        ...

    def end(self, final: bool) -> None:
        """The turn is over. ``final``: its text is the run's answer (``RunResult.text``); else it
        was provisional (the model went on to call tools, or a message came in meanwhile) and the
        next turn's text replaces it."""
        ...


@dataclass
class RunState:
    """Where a run stands, so that a suspended run can continue."""

    toolkit: ToolkitLike | None
    system: str
    messages: list[dict[str, Any]]
    conversation: str | None = None
    queue: list[ToolCall] = field(default_factory=list)
    done: list[tuple[ToolCall, ToolResult]] = field(default_factory=list)
    waiting: ToolCall | None = None
    result: RunResult = field(default_factory=RunResult)
    inbox: Inbox | None = None
    keep: bool = True  # the run saves its conversation as it ends (False: its caller does)
    sink: TextSink | None = None  # where the model's words go as it says them
    folder: os.PathLike[str] | None = None  # a served task's folder, for its tools (ToolContext)


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
    calls = "".join(
        f"<tr><td>{e(c['name'])}</td><td><code>{e(json.dumps(c['args']))}</code></td>"
        f"<td style='text-align:left'>{e(str(c['output'])[:200])}</td></tr>"
        for c in result.tool_calls
    )
    return (
        f"<div class='toolnexus-run'><b>{e(result.status)}</b> {e(result.model)} · {plural(result.turns, 'turn')} · "
        f"{plural(u.total_tokens, 'token')} ({u.prompt_tokens} in, {u.completion_tokens} out) · "
        f"{plural(result.tool_call_count, 'tool call')}"
        f"<pre style='white-space:pre-wrap'>{e(result.text.strip())}</pre>"
        + (
            f"<table><tr><th>tool</th><th>args</th><th>output</th></tr>{calls}</table>"
            if calls
            else ""
        )
        + "</div>"
    )
