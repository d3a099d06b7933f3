"""Each task's ids and settled states in answers, recorded and live: the live id of each recorded
one, and the runs of settled states set side by side."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ...protocol.dialects import parse_state
from ...protocol.model import INTERRUPTED, TERMINAL
from ..cassette import STABLE_ID
from .report import Difference, ReplayReport

SETTLED = frozenset(s.value for s in TERMINAL | INTERRUPTED)


def task_states(value: Any, out: list[tuple[str, str]]) -> None:
    """``(task id, state)`` of every task or status update in an answer, in order."""
    if isinstance(value, dict):
        status = value.get("status")
        task = value.get("taskId") or (value.get("id") if isinstance(status, dict) else None)
        if (
            isinstance(status, dict)
            and isinstance(task, str)
            and isinstance(status.get("state"), str)
        ):
            state = parse_state(
                status["state"]
            )  # either dialect's spelling; an unknown one as it came
            out.append((task, state.value if state is not None else status["state"]))
        for item in value.values():
            if isinstance(item, (dict, list)) and item is not status:
                task_states(item, out)
    elif isinstance(value, list):
        for item in value:
            task_states(item, out)


def pair_ids(recorded: Any, live: Any, ids: dict[str, str]) -> None:
    """Learn the live id of each stable id in a recorded answer, from the same place in the live one."""
    if isinstance(recorded, dict) and isinstance(live, dict):
        for k, v in recorded.items():
            if k in live:
                pair_ids(v, live[k], ids)
    elif isinstance(recorded, list) and isinstance(live, list):
        for a, b in zip(recorded, live, strict=False):
            pair_ids(a, b, ids)
    elif (
        isinstance(recorded, str)
        and isinstance(live, str)
        and STABLE_ID.match(recorded)
        and recorded not in ids
    ):
        ids[recorded] = live


def recorded_answers(x_response: Mapping[str, Any]) -> list[Any]:
    """The recorded answer's JSON values (its body, or its frames)."""
    if "frames" in x_response:
        return list(x_response.get("frames") or [])
    return [x_response["json"]] if "json" in x_response else []


def last_state(values: list[Any]) -> str | None:
    """The last task state these answers name, or None."""
    found: list[tuple[str, str]] = []
    for value in values:
        task_states(value, found)
    return found[-1][1] if found else None


def settled_states(
    values: list[Any], into: dict[str, list[str]], back: Mapping[str, str] | None = None
) -> None:
    """Each settled state the answers name, added to its task's run in ``into`` (``back``: a live
    task id to the recorded one)."""
    found: list[tuple[str, str]] = []
    for value in values:
        task_states(value, found)
    for task, state in found:
        seq = into.setdefault(back.get(task, task) if back is not None else task, [])
        if state in SETTLED and (not seq or seq[-1] != state):
            seq.append(state)


def compare_states(
    report: ReplayReport, recorded: dict[str, list[str]], live: dict[str, list[str]]
) -> None:
    """Each recorded task's settled states beside the live one's, a difference where they part."""
    for task in recorded:
        mine, theirs = recorded[task], live.get(task, [])
        report.states[task] = {"recorded": mine, "live": theirs}
        if mine != theirs:
            report.differences.append(
                Difference(
                    0, task, "states", "", " → ".join(mine) or "none", " → ".join(theirs) or "none"
                )
            )


def message_ids(value: Any) -> list[str]:
    found: list[str] = []
    if isinstance(value, dict):
        for k, v in value.items():
            if k == "messageId" and isinstance(v, str) and STABLE_ID.match(v):
                found.append(v)
            else:
                found += message_ids(v)
    elif isinstance(value, list):
        for item in value:
            found += message_ids(item)
    return found
