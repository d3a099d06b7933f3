"""Sending a message with :class:`~toolnexus.client.peer.A2AClient` (:class:`Sending`): the message
built (text, files, metadata, skill), fitted to what the card says the agent takes, rendered as a
send's parameters in the transport's dialect; a blocking send or a stream, with their fallbacks (a
0.3 send refused -32601 retried once in the toolnexus legacy dialect; a peer that cannot stream
sent a blocking send, then polled) and the answer to a question waited past."""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..errors import MethodNotFoundError, UnsupportedOperationError
from ..protocol.dialects import Dialect, parse_message, render_message
from ..protocol.files import in_modes
from ..protocol.model import Message, Part, Task
from ..protocol.operations import OPERATIONS
from ..protocol.push import TOKEN_HEADER, PushConfig, render_push_config
from .tasks import TaskCalls
from .transports import JsonRpcTransport, as_task, transport_for

__all__ = ["Sending"]


class Sending(TaskCalls):
    """A message sent, blocking or streamed; over the task calls, which a stream falls back on
    (``watch``) and an answered question is waited past with (``get``)."""

    async def send(
        self,
        text: str | Message,
        *,
        skill: str | None = None,
        context_id: str | None = None,
        task_id: str | None = None,
        blocking: bool = False,
        history_length: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        push: PushConfig | None = None,
        request_metadata: Mapping[str, Any] | None = None,
        files: Sequence[str | os.PathLike[str] | Part] = (),
        accepted_output_modes: Sequence[str] = (),
    ) -> Task:
        """Send a message; returns the task (``submitted`` or later when not blocking). ``push``:
        a config (e.g. ``WebhookReceiver.target()``) the peer notifies of every change of the task.
        ``metadata`` goes on the message; ``request_metadata`` is the request's own
        (``SendMessageRequest.metadata``, which a toolnexus agent keeps on the task); ``files``:
        local files (read whole, at most 10 MiB each: ``ValueError`` past that) or file parts, sent
        after the text; ``accepted_output_modes``: the media types the answer may be in (empty:
        any)."""
        await self.connect()
        msg = self._message(text, skill, context_id, task_id, metadata, files)
        msg = self._fit(msg, skill, accepted_output_modes)
        result = await self._send_op(
            self._send_params(
                msg, blocking, history_length, push, request_metadata, accepted_output_modes
            )
        )
        task = as_task(result, msg)
        if task_id and task.state.interrupted and _asks_again(task, msg):
            # an answer to an input-required task: the spec lets a peer return at once with the task
            # as it was (the JS SDK does), the same question still on it; that is not a new question
            task = await self._past(task, msg)
        return task

    async def _past(self, task: Task, answer: Message) -> Task:
        """The task once its status has moved past the question ``answer`` answered (within the
        client's timeout; after that, as it is)."""
        pause, deadline = 0.05, asyncio.get_running_loop().time() + self.timeout
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)
            fresh = await self.get(task.id)
            if not (fresh.state.interrupted and _asks_again(fresh, answer, task)):
                return fresh
        return task

    async def stream(
        self,
        text: str | Message,
        *,
        skill: str | None = None,
        context_id: str | None = None,
        task_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        files: Sequence[str | os.PathLike[str] | Part] = (),
        accepted_output_modes: Sequence[str] = (),
    ) -> AsyncGenerator[Task, None]:
        """Send and follow the task as the peer streams it; yields the task after every frame, until
        the stream ends (``files``, ``accepted_output_modes``: as :meth:`send`). A peer that cannot stream (a dialect without streams, or a stream refused
        as an unknown method or as unsupported, -32004, before its first frame) gets a blocking send instead, followed by
        polling until the task settles, and ``warnings`` says so; a stream that ends finished but without the reply is followed by a
        get (see :meth:`_frames`)."""
        await self.connect()
        msg = self._message(text, skill, context_id, task_id, metadata, files)
        msg = self._fit(msg, skill, accepted_output_modes)
        params = self._send_params(msg, True, None, accepted_output_modes=accepted_output_modes)
        if accepted_output_modes:  # the rest of the configuration is a blocking send's
            params["configuration"] = {"acceptedOutputModes": list(accepted_output_modes)}
        else:
            params.pop("configuration")
        if self.transport.streams:
            seen = False
            try:
                async with contextlib.aclosing(
                    self._frames("stream", params, msg)
                ) as frames:  # closed with us
                    async for task in frames:
                        seen = True
                        yield task
                return
            except (MethodNotFoundError, UnsupportedOperationError) as exc:
                if seen:
                    raise
                said = "method not found" if exc.code == -32601 else "it does not stream"
                why_not = f"it answered {self.transport.method(OPERATIONS['stream'])} with {exc.code} ({said})"
        else:
            why_not = f"the {self.transport.dialect.value} dialect has no streams"
        self.warnings.append(f"{why_not}: sent as a blocking send instead of a stream, then polled")
        task = await self.send(msg, blocking=True, accepted_output_modes=accepted_output_modes)
        yield task
        if task.id and not (task.state.terminal or task.state.interrupted):
            async for event in self.watch(task.id, stream=False):
                if event.state is not task.state:
                    task = event.task
                    yield task

    def _message(
        self,
        text: str | Message,
        skill: str | None,
        context_id: str | None,
        task_id: str | None,
        metadata: Mapping[str, Any] | None,
        files: Sequence[str | os.PathLike[str] | Part] = (),
    ) -> Message:
        msg = text if isinstance(text, Message) else Message("user", [Part.of_text(text)])
        msg.parts += [f if isinstance(f, Part) else Part.of_file(f) for f in files]
        if context_id:
            msg.context_id = context_id
        if task_id:
            msg.task_id = task_id
        meta = dict(msg.metadata or {})
        meta.update(metadata or {})
        if skill:
            meta["skill"] = skill
        msg.metadata = meta or None
        return msg

    def fitting(
        self, parts: Sequence[Part], skill: str | None, accepted: Sequence[str] = ()
    ) -> tuple[list[Part], list[str]]:
        """``parts`` as the card says the agent takes them, and a sentence for each thing left out
        or at odds: a file or data part whose media type is not among the skill's input modes (no
        skill: among any the card names, as the official SDK's server checks) is left out; the
        text is always sent; ``accepted`` output modes the skill gives none of are said (the
        agent decides). A card that names no modes takes anything."""
        card = self.card
        if card is None:
            return list(parts), []
        takes, gives = card.modes(skill) if card.skill(skill) else card.modes()
        if card.skill(skill) is None:
            for other in card.skills:
                takes = takes + [m for m in card.modes(str(other.get("id")))[0] if m not in takes]
        who = f"the skill {skill}" if card.skill(skill) else "the agent"
        kept: list[Part] = []
        notes: list[str] = []
        for part in parts:
            kind = part.media_type or ("application/json" if part.kind == "data" else None)
            if part.kind == "text" or not takes or in_modes(kind, takes):
                kept.append(part)
            else:
                notes.append(
                    f"{who} takes {', '.join(takes)}: {part.label} ({kind or 'no media type'}) "
                    "is not sent"
                )
        if accepted and gives and not any(in_modes(m, gives) for m in accepted):
            notes.append(
                f"{who} answers in {', '.join(gives)}, none of which you accept "
                f"({', '.join(accepted)}): the agent may refuse the task"
            )
        return kept, notes

    def _fit(self, msg: Message, skill: str | None, accepted: Sequence[str]) -> Message:
        """``msg`` with only the parts the card says the agent takes (see :meth:`fitting`); what was
        left out is in :attr:`warnings`."""
        msg.parts, notes = self.fitting(msg.parts, skill, accepted)
        for note in notes:
            self.warn(note)
        return msg

    def _send_params(
        self,
        msg: Message,
        blocking: bool,
        history_length: int | None,
        push: PushConfig | None = None,
        request_metadata: Mapping[str, Any] | None = None,
        accepted_output_modes: Sequence[str] = (),
    ) -> dict[str, Any]:
        dialect = self.transport.shapes
        config: dict[str, Any] = (
            {"returnImmediately": not blocking}
            if dialect is Dialect.V10
            else {"blocking": blocking}
        )
        if accepted_output_modes:
            config["acceptedOutputModes"] = list(accepted_output_modes)
        if history_length is not None:
            config["historyLength"] = history_length
        if push is not None:
            if push.token:
                self.traffic.secret(TOKEN_HEADER, push.token)
            rendered = render_push_config(replace(push, dialect=dialect), dialect)
            if dialect is Dialect.V10:
                config["taskPushNotificationConfig"] = {
                    k: v for k, v in rendered.items() if v != ""
                }
            else:
                config["pushNotificationConfig"] = rendered["pushNotificationConfig"]
        params = {"message": render_message(msg, dialect), "configuration": config}
        if request_metadata:
            params["metadata"] = dict(request_metadata)
        return params

    async def _send_op(self, params: dict[str, Any]) -> Any:
        """A send; in auto mode a 0.3 JSON-RPC send refused with -32601 is retried once in the
        toolnexus legacy dialect (and that is remembered for the peer)."""
        try:
            return await self._call("send", params)
        except MethodNotFoundError:
            transport = self.transport
            if (
                self.forced is not None
                or self._fallback_tried
                or not isinstance(transport, JsonRpcTransport)
                or transport.dialect is not Dialect.V03
            ):
                raise
            self._fallback_tried = True
            self.dialect = Dialect.LEGACY
            self.dialect_reason = (
                "the peer answered message/send with -32601; it speaks the toolnexus legacy dialect"
            )
            self._transport = transport_for(self, transport.binding, Dialect.LEGACY)
            return await self._call("send", self._params_for(params))

    def _params_for(self, params: dict[str, Any]) -> dict[str, Any]:
        """Re-render send params (built for 0.3) in the legacy shapes."""
        message = parse_message(params["message"], inbound=False)
        message.role = "user"
        out = dict(params)
        out["message"] = render_message(message, Dialect.LEGACY)
        return out


def _asks_again(task: Task, answer: Message, before: Task | None = None) -> bool:
    """Whether ``task``'s question is the one ``answer`` answered: its status message comes before
    the answer in the task's history, or is the very message of ``before`` (the stale reply)."""
    question = task.status.message
    if question is None:
        return False
    if before is not None and before.status.message is not None:
        if (
            question.message_id == before.status.message.message_id
            and task.status.timestamp == before.status.timestamp
        ):
            return True
    ids = [m.message_id for m in task.history]
    return (
        question.message_id in ids
        and answer.message_id in ids
        and ids.index(question.message_id) < ids.index(answer.message_id)
    )
