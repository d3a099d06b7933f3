"""A conversation with one peer, as the TUI's chat and the notebook's run it.

A :class:`Conversation` holds what a chat knows between messages: the peer, the context the peer
gave, the task whose question is open (and whether the next message answers it, ``answering``: an
explicit choice a front end shows), and the :class:`Turn` s said so far. It runs an exchange on an
:class:`~toolnexus.client.peer.A2AClient` the caller owns: send (on the waiting task when the
message answers it), follow the task until it finishes or asks (a streamed reply turn by turn as its words come),
and keep each turn's latest task.
The front ends only render turns and call ``on_change`` to redraw; nothing here touches a screen
or a widget.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Literal

from ..errors import PeerError, ToolnexusError
from ..protocol.model import Message, Part, Task, TaskState
from ..protocol.push import PushConfig
from .peer import A2AClient


class TurnState(str, Enum):
    """Where a turn stands. The peer's own word on a task is ``Turn.task.state``; this says what
    the task's state alone cannot: nothing back yet, or the exchange cut before the peer answered."""

    SENDING = "sending"  # sent (or following), nothing back yet
    RUNNING = "running"  # the peer has the task and works on it
    ASKED = "asked"  # the peer asks (input-required, auth-required): the next message answers it
    FINISHED = "finished"  # the task ended: completed, failed, canceled or rejected
    LOST = "lost"  # the connection was cut: retry follows the task again, or sends again
    ERROR = "error"  # the exchange failed without a task (refused, not connected, bad answer)

    @property
    def open(self) -> bool:
        """The turn's task may still change: a cancel has something to cancel."""
        return self in (TurnState.SENDING, TurnState.RUNNING, TurnState.ASKED)


@dataclass
class Turn:
    """One thing said: the user's message (``role="user"``, with the parts sent) or the agent's
    reply (``role="agent"``, with the latest value of its task)."""

    role: Literal["user", "agent"]
    text: str
    parts: list[Part] = field(default_factory=list)
    state: TurnState | None = None  # agent turns only
    task: Task | None = None
    message: Message | None = None  # what this reply answers: sent again on retry
    skill: str | None = None
    follow: str | None = None  # a task followed by its id instead of a message sent
    answers: str | None = None  # the task whose question this reply's message answers (sent on it)
    notes: list[str] = field(default_factory=list)
    """Warnings shown under the turn: the parts the card says the agent does not take (not sent);
    in the TUI, that the peer was removed while the reply ran."""

    @property
    def task_id(self) -> str | None:
        return self.task.id if self.task is not None else self.follow

    @property
    def task_state(self) -> TaskState | None:
        return self.task.state if self.task is not None else None

    @property
    def has_artifacts(self) -> bool:
        return self.task is not None and any(a.parts for a in self.task.artifacts)

    def to_dict(self) -> dict[str, Any]:
        """The turn as JSON: what a session export holds."""
        return {
            "role": self.role,
            "text": self.text,
            "state": self.state.value if self.state else None,
            "task": self.task_id,
            "taskState": self.task_state.value if self.task_state else None,
        }


def reply_text(task: Task) -> str:
    """What a reply turn shows of its task: the answer once completed; until the task finishes
    or asks, what the agent has said so far, in whatever state (provisional: the answer is the
    completed task's); else the status message; a question with no message of its own is asked
    with the words that came before it (the Gemini CLI ends each turn so)."""
    if task.state is TaskState.COMPLETED:
        return task.reply
    if not (task.state.terminal or task.state.interrupted) and task.said:
        return task.said
    if task.status.message is not None:
        return task.status.message.text
    if task.state.interrupted and task.reply:
        return task.reply
    return "…"


def _state_of(task: Task) -> TurnState:
    if task.state.terminal:
        return TurnState.FINISHED
    return TurnState.ASKED if task.state.interrupted else TurnState.RUNNING


@dataclass
class Conversation:
    """One chat with one peer: the context, the task waiting for an answer, and what was said."""

    peer: str = ""
    context_id: str | None = None
    waiting_task: str | None = None  # its question is open
    answering: bool = (
        True  # the next message answers the open question, on its task (else: a new task)
    )
    turns: list[Turn] = field(default_factory=list)
    lost: Turn | None = None  # the reply a lost connection cut: what retry takes up again
    attachments: list[Part] = field(
        default_factory=list
    )  # file and data parts for the next message
    push: bool = False  # its tasks notify a webhook

    def say(self, text: str, skill: str | None = None) -> Turn:
        """Add the user's message (``text`` and the attachments, which it takes) and the reply
        turn that :meth:`run` fills in; return the reply turn. The message answers the open
        question when there is one and ``answering`` is on; otherwise it starts a new task (in
        the same context) and the question stays open."""
        parts = ([Part.of_text(text)] if text else []) + self.attachments
        if not parts:
            raise ValueError("nothing to say: no text and no attachment")
        self.attachments = []
        self.turns.append(Turn("user", text, parts))
        reply = Turn(
            "agent",
            "…",
            state=TurnState.SENDING,
            message=Message("user", parts),
            skill=skill,
            answers=self.waiting_task if self.answering else None,
        )
        self.turns.append(reply)
        return reply

    def follow(self, task_id: str) -> Turn:
        """Add a reply turn that follows a task by its id (one started elsewhere)."""
        self.turns.append(Turn("user", f"(attached to task {task_id})"))
        reply = Turn("agent", "…", state=TurnState.SENDING, follow=task_id)
        self.turns.append(reply)
        return reply

    def retry(self) -> Turn | None:
        """The reply a lost connection cut, made ready to run again (None: nothing was cut)."""
        turn, self.lost = self.lost, None
        if turn is not None:
            turn.follow = turn.task_id
            turn.text, turn.state = "…", TurnState.SENDING
        return turn

    @property
    def last_reply(self) -> Turn | None:
        return next((t for t in reversed(self.turns) if t.role == "agent"), None)

    @property
    def question(self) -> str | None:
        """The open question's text (what the waiting task's last turn shows: its status message),
        or None when none is open."""
        if self.waiting_task is None:
            return None
        turns = self.turns_of(self.waiting_task)
        return turns[-1].text if turns else ""

    @property
    def running(self) -> str | None:
        """The id of the last reply's task while it may still change (working or asking)."""
        reply = self.last_reply
        return (
            reply.task_id
            if reply is not None and reply.state is not None and reply.state.open
            else None
        )

    def turns_of(self, task_id: str) -> list[Turn]:
        return [t for t in self.turns if t.role == "agent" and t.task_id == task_id]

    async def run(
        self,
        client: A2AClient,
        turn: Turn,
        *,
        on_change: Callable[[Turn], Any] = lambda _: None,
        push: PushConfig | None = None,
        blocking: bool = False,
        poll_every: float = 0.2,
        max_interval: float = 1.0,
    ) -> None:
        """Send the turn's message (or follow its task) and keep the turn current until the task
        finishes or asks; ``on_change`` is called after every change. Never raises for the peer's
        sake: a cut connection leaves the turn LOST (see :meth:`retry`), any other failure ERROR.
        What the client warns of meanwhile (a stream cut, then followed by polling) is among the
        turn's notes from the next change on."""
        task: Task | None = None
        seen = len(client.warnings)

        def changed(turn: Turn) -> None:  # the caller's on_change, the new warnings noted first
            turn.notes += [w for w in client.warnings[seen:] if w not in turn.notes]
            on_change(turn)

        try:
            if turn.follow is not None:
                task = await client.get(turn.follow)
            else:
                assert turn.message is not None, "a reply turn sends a message or follows a task"
                message = Message("user", list(turn.message.parts))  # again: under a new message id
                # the card's modes leave some parts out: the user sees which, before the answer
                turn.notes = client.fitting(message.parts, turn.skill)[1]
                if turn.notes:
                    changed(turn)
                task = await client.send(
                    message,
                    skill=turn.skill,
                    context_id=self.context_id,
                    task_id=turn.answers,
                    blocking=blocking,
                    push=push,
                )
            self._show(turn, task, changed)
            if not (task.state.terminal or task.state.interrupted):
                async with contextlib.aclosing(
                    client.follow(task.id, poll_every=poll_every, max_interval=max_interval)
                ) as changes:
                    async for task in changes:  # a reply's words as they come, where streamed
                        self._show(turn, task, changed)
        except PeerError as exc:  # the connection, not the peer's answer
            if task is not None:
                turn.task = task
            turn.text, turn.state = str(exc), TurnState.LOST
            self.lost = turn
            changed(turn)
            return
        except Exception as exc:
            turn.text = (
                str(exc)
                if isinstance(exc, ToolnexusError)
                else f"{type(exc).__name__}: {exc}".rstrip(": ")
            )
            turn.state = TurnState.ERROR
            changed(turn)
            return
        self.lost = None
        self.context_id = task.context_id or self.context_id
        if (
            task.state.interrupted
        ):  # a new question: answered by the next message unless the user says otherwise
            self.waiting_task, self.answering = task.id, True
        elif (
            task.id == self.waiting_task
        ):  # the question was answered (or the task ended another way)
            self.waiting_task = None
        changed(turn)

    def _show(self, turn: Turn, task: Task, on_change: Callable[[Turn], Any]) -> None:
        turn.task, turn.text, turn.state = task, reply_text(task), _state_of(task)
        on_change(turn)

    async def cancel(self, client: A2AClient, task_id: str) -> Task:
        """Cancel a task of this conversation; its turns show the peer's answer."""
        task = await client.cancel(task_id)
        for turn in self.turns_of(task_id):
            turn.task, turn.state = task, _state_of(task)
        if self.waiting_task == task_id:
            self.waiting_task = None
        return task

    def to_dict(self) -> dict[str, Any]:
        """The conversation as JSON: what a session export holds."""
        return {
            "peer": self.peer,
            "context": self.context_id,
            "waiting": self.waiting_task,
            "answering": self.answering,
            "turns": [t.to_dict() for t in self.turns],
        }
