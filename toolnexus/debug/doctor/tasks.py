"""What becomes of the tasks the doctor sends: the state a blocking send is answered with, where a
finished task's words are, a cancel (and a send after it), an input-required round trip."""

from __future__ import annotations

from ...client.peer import A2AClient
from ...errors import PeerError, RPCError, TaskNotCancelableError
from ...protocol.card import AgentCard
from ...protocol.dialects import Dialect
from ...protocol.model import Task, TaskState
from ...traffic import TrafficRecorder
from ..features import Finder, evidence
from ..report import Finding
from .lines import Add
from .seen import Seen


async def check_cancel(
    client: A2AClient, first: Task, traffic: TrafficRecorder, add: Add, seen: Seen
) -> None:
    """A task sent to return at once, canceled: judged by the task's state after the cancel (got
    again), not by the answer alone; then one more blocking send, which must do as the first did
    (a server whose cancel breaks the tasks after it is named)."""
    find = Finder(traffic, add)
    before = find.mark()
    started = await client.send("hello from toolnexus doctor (to cancel)")
    refused: Exception | None = None
    answered: Task | None = None
    try:
        answered = await client.cancel(started.id)
    except TaskNotCancelableError as exc:
        refused = exc
    except (RPCError, PeerError) as exc:
        find.found(
            "warning",
            "cancel",
            f"cancel failed: {exc}",
            before,
            ["clients that cancel (agent tools, the TUI, the SDKs)"],
            "answer CancelTask with the task, or TaskNotCancelableError when it has finished",
        )
        return
    try:
        after = (await client.get(started.id)).state
    except (RPCError, PeerError):
        after = answered.state if answered is not None else None
    if refused is not None and after is not None and not after.terminal:
        find.found(
            "warning",
            "cancel",
            f"cancel was refused as not cancelable ({refused}), but the task was "
            f"{after.value}, not finished",
            before,
            ["clients that cancel (agent tools, the TUI, the SDKs): the task runs on"],
            "cancel a task that has not finished (TaskNotCancelable is for a finished one), "
            "and set its state canceled",
        )
    elif refused is not None:
        find.found(
            "info",
            "cancel",
            f"the task had finished first ({after.value if after else 'its state unknown'}); "
            "cancel was refused as it should be",
        )
    elif answered is not None:
        ended = after or answered.state
        severity = (
            "ok"
            if ended is TaskState.CANCELED
            else "info"
            if ended.terminal  # it finished first; the cancel's answer was not its state
            else "warning"
        )
        find.found(
            severity,
            "cancel",
            f"cancel answered the task {answered.state.value}"
            + ("" if after in (None, answered.state) else f", and it was {after.value} after"),
            None if severity == "ok" else before,
            ["clients that cancel: the task runs on"] if severity == "warning" else [],
            "" if severity == "ok" else "answer a cancel with the task's state after it",
        )
    await _after_cancel(client, first, find, seen)


async def _after_cancel(client: A2AClient, first: Task, find: Finder, seen: Seen) -> None:
    """One more blocking send after the cancel, which must do as the first did."""
    before = find.mark()
    try:
        again = await client.send("hello from toolnexus doctor (after the cancel)", blocking=True)
    except (RPCError, PeerError) as exc:
        broke = str(exc)
    else:
        blocked(client, again, find.traffic, find.add, seen)
        words_where(again, find.traffic, seen)
        broke = (
            f"its task {again.state.value}"
            + (f": {again.status.message.text}" if again.status.message else "")
            if again.state in (TaskState.FAILED, TaskState.REJECTED)
            and first.state not in (TaskState.FAILED, TaskState.REJECTED)
            else ""
        )
    if broke:
        find.found(
            "error",
            "cancel",
            "after one cancel, a message that worked before failed ("
            + broke
            + "): the cancel broke the tasks after it (beeai-framework 0.1.85's server does "
            "this: one AbortController shared by every task)",
            before,
            ["every client, after any client's cancel"],
            "give each task its own cancellation (abort only the task canceled)",
        )


def words_where(task: Task, traffic: TrafficRecorder, seen: Seen) -> None:
    """Notes a finished task whose words are only in ``status.message`` (no artifact text, no agent
    message in its history): clients that read the history instead show the user's own words."""
    said = task.status.message.text if task.status.message else ""
    if not (task.state.terminal and said) or task.artifacts_text or seen.status_only:
        return
    if any(m.role == "agent" and m.text == said for m in task.history):
        return
    last = list(traffic.events)[-1] if traffic.events else None
    seen.status_only = f"a {task.state.value} task: " + (evidence(last) if last else said)


def blocked(client: A2AClient, task: Task, traffic: TrafficRecorder, add: Add, seen: Seen) -> None:
    """A blocking send must be answered at a terminal or interrupted state (A2A: the send waits for
    it); one answered ``submitted`` or ``working`` is named, once."""
    if task.state.terminal or task.state.interrupted or client.dialect is Dialect.LEGACY:
        return  # the legacy dialect never blocks: its clients expect submitted back
    if seen.unblocked:
        return
    seen.unblocked = task.state.value
    add(
        Finding(
            "warning",
            "blocking send",
            f"a blocking send was answered with the task {task.state.value}: a blocking send "
            "waits until the task is finished or needs input",
            [evidence(list(traffic.events)[-1])] if traffic.events else [],
            [
                "clients that send without streaming (a2a-sdk 1.x, the JS SDK): the answer has no reply"
            ],
            "answer a blocking send (0.3 blocking: true, or 1.0 without returnImmediately) when "
            "the task is completed, failed, canceled, rejected, or asks for input",
        )
    )


async def round_trip(
    client: A2AClient, card: AgentCard, traffic: TrafficRecorder, add: Add, seen: Seen
) -> None:
    """An ``input-required`` round trip, when one of the card's skill examples (the first three)
    asks for input: the answer must go on the same task and move it past the question."""
    find = Finder(traffic, add)
    examples = [str(e) for skill in card.skills for e in (skill.get("examples") or [])][:3]
    for text in examples:
        before = find.mark()
        asked = await client.send(text, blocking=True)
        if asked.state is not TaskState.INPUT_REQUIRED:
            continue
        seen.asked = True
        question = asked.status.message.text if asked.status.message else ""
        answered = await client.send(
            "yes", task_id=asked.id, context_id=asked.context_id, blocking=True
        )
        if answered.id != asked.id:
            find.found(
                "warning",
                "input-required",
                f"the answer to {text!r} made a new task, not the same one",
                before,
                ["agent tools and chats that answer questions"],
                "continue the task named by the message's taskId",
            )
        elif (
            answered.state is TaskState.INPUT_REQUIRED
            and answered.status.message
            and answered.status.message.text == question
        ):
            find.found(
                "warning",
                "input-required",
                "the answer left the task asking the same question",
                before,
                ["agent tools and chats that answer questions"],
                "take the answer and move the task on",
            )
        else:
            find.found(
                "ok",
                "input-required",
                f"{text!r} asked for input; the answer went on the same task, "
                f"now {answered.state.value}",
            )
        return
    if examples:
        find.found(
            "info",
            "input-required",
            "no skill example asked for input: the round trip was not tried",
        )
