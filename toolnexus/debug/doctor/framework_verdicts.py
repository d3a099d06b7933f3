"""The verdicts on the framework clients: each judged as the official line it runs on, then by its
own way of reading."""

from __future__ import annotations

from typing import Any

from ...protocol.card import AgentCard
from ...protocol.dialects import Dialect
from ...protocol.operations import Binding
from ..report import Finding
from .frameworks import (
    ADK,
    CREWAI,
    FASTA2A,
    FRAMEWORKS,
    HANDLER,
    MAF,
    STRANDS,
    framework_breaks,
    misread,
)
from .lines import Add
from .routes import routes_of
from .seen import Seen


def keeping(add: Add, said: dict[str, Finding]) -> Add:
    """``add`` that also keeps each client verdict in ``said``, by the client's name."""

    def keep(finding: Finding) -> Any:
        said[finding.check.removeprefix("client: ")] = finding
        return add(finding)

    return keep


def judge_frameworks(
    card: AgentCard, seen: Seen, send: bool, said: dict[str, Finding], add: Add
) -> None:
    """One verdict per framework client (:data:`FRAMEWORKS`): where the official line it runs on
    breaks, it breaks the same way; then what it reads its own way, set against what was seen."""
    routes = routes_of(card)
    given = (card.source or "").split("/.well-known/")[0].rstrip("/") + "/"
    for name, (line, what) in FRAMEWORKS.items():
        check = f"client: {name}"
        if name == FASTA2A:
            _fasta2a(card, seen, given, add)
            continue
        base = said.get(line)
        if name == MAF and routes[line] != (Binding.JSONRPC, given, Dialect.V10):
            # A2AAgent(url=...) reads no card: it speaks 1.0 over JSON-RPC at the URL it is given
            where = f"1.0 over JSONRPC at the URL it is given, {given} (it reads no card)"
            if seen.knows.get(given, {}).get("SendMessage") is False:
                add(
                    Finding(
                        "warning",
                        check,
                        f"breaks: it speaks {where}, and the peer answers SendMessage with -32601",
                        breaks=[name],
                        fix=f"answer 1.0's SendMessage at {given}",
                    )
                )
            else:
                add(Finding("info", check, f"cannot tell: it speaks {where}"))
            continue
        if base is None or base.severity != "ok":
            if base is not None and base.severity == "warning":
                add(
                    Finding(
                        "warning",
                        check,
                        f"breaks as {line}, which it runs on ({what}): "
                        + base.message.removeprefix("breaks: "),
                        base.evidence,
                        [name],
                        base.fix,
                    )
                )
            else:
                add(Finding("info", check, f"cannot tell: {line}, which it runs on, cannot tell"))
            continue
        route = routes[line]
        key = (route[1], route[2]) if not isinstance(route, str) else ("", Dialect.V10)
        fault = _framework_fault(name, key, card, seen)
        if fault is not None:
            add(framework_breaks(name, *fault))
        else:
            add(
                Finding("ok", check, f"works: as {line}, which it runs on ({what})" + _caveat(name))
            )


def _framework_fault(
    name: str, key: tuple[str, Dialect], card: AgentCard, seen: Seen
) -> tuple[str, list[str], str] | None:
    """What of this peer the framework ``name`` reads its own way, as seen: (what it does, the
    evidence, the fix on the peer's side); None when nothing seen trips it."""
    if name in (ADK, CREWAI) and card.streaming:
        for read, shown in seen.read.get(key, ()):
            if (fault := misread(name, read)) is not None:
                return fault[0], [shown], fault[1]
    if name == HANDLER and seen.status_only:
        return (
            "shows no words for a task whose words are only in status.message (it prints a "
            "task's artifacts, else the agent messages of its history, never status.message)",
            [seen.status_only],
            "put the reply in an artifact, and a failure's or a question's message in the task's "
            "history too",
        )
    if name == MAF and seen.status_only:
        return (
            "shows the user's own words for a task whose words are only in status.message (it "
            "reads a task's artifacts, else the last message of its history, never status.message)",
            [seen.status_only],
            "put the reply in an artifact, and a failure's or a question's message in the task's "
            "history too",
        )
    if name == STRANDS and seen.asked:
        return (
            "cannot answer this agent's questions: it never sends a taskId or contextId, so its "
            "answer starts a new task (a skill example asked for input). The client's doing: "
            "nothing on the peer fixes it",
            [],
            "",
        )
    return None


def _fasta2a(card: AgentCard, seen: Seen, given: str, add: Add) -> None:
    """fasta2a's client: its card model requires each skill's inputModes and outputModes; it sends
    0.3's message/send at the URL it is given and reads the answer in 1.0's shapes (the hybrid its
    own server answers)."""
    check = f"client: {FASTA2A}"
    bare = [
        str(s.get("id")) for s in card.skills if not (s.get("inputModes") and s.get("outputModes"))
    ]
    if bare:
        add(  # info: fasta2a's own departures from the spec (the peer is right), as below
            Finding(
                "info",
                check,
                f"breaks: its card model refuses this card: skill {bare[0]!r} has no inputModes "
                "or outputModes (optional in the spec; its AgentCard requires them)",
                fix="give every skill its inputModes and outputModes, for fasta2a",
            )
        )
        return
    known = seen.knows.get(given, {}).get("message/send")
    answer = seen.shapes.get((given, Dialect.V03))
    if known is False:
        message = f"it sends message/send at {given}, which the peer answers -32601"
    elif answer is not None and not answer.wrapped:
        message = (
            f'it reads the answer to message/send at {given} as 1.0\'s {{"task": …}}, and this '
            "peer answers 0.3's bare task (only fasta2a's own hybrid server answers so)"
        )
    elif answer is not None and answer.state.startswith("TASK_STATE_"):
        message = (
            f"it reads 0.3's lower-case states in the answer to message/send at {given}, and "
            f"this peer answers {answer.state!r}"
        )
    elif answer is not None:
        add(
            Finding(
                "ok", check, f"works: message/send at {given} is answered in the shapes it reads"
            )
        )
        return
    else:
        add(Finding("info", check, f"cannot tell: it sends message/send at {given}"))
        return
    add(Finding("info", check, f"breaks: {message} (its own dialect: a hybrid of 0.3 and 1.0)"))


def _caveat(name: str) -> str:
    if name == STRANDS:
        return "; one turn at a time: it never sends a contextId, so no conversation"
    if name == HANDLER:
        return (
            "; a failed task it shows without its reason unless the failure's message is in the "
            "history too (it prints the agent messages of the history, never status.message; no "
            "failure was seen here)"
        )
    if name == MAF:
        return (
            "; a failed task it shows as the user's own words unless the failure's message is in "
            "the history too (it reads the last history message, never status.message; no failure "
            "was seen here)"
        )
    return ""
