"""One verdict per official client, from what it would send and read set against what the peer was
seen to answer; then the frameworks' and toolnexus' own."""

from __future__ import annotations

from ...protocol.card import AgentCard
from ...protocol.dialects import Dialect
from ...protocol.operations import Binding
from ..report import Finding
from .framework_verdicts import judge_frameworks, keeping
from .lines import SDK_WAIT, SEND_METHOD, Add
from .routes import routes_of, speaks_v10
from .seen import Seen


def give_verdicts(card: AgentCard, seen: Seen, send: bool, add: Add) -> None:
    """One finding per official client: whether it works with this peer, from what it would send
    and read set against what the peer was seen to answer; unknown where nothing was seen. A client
    that breaks is a warning: the peer may mean to serve one line only; what it serves wrongly is
    an error of the checks above."""
    unzoned = [a for a in seen.shapes.values() if a is not None and not a.zoned]
    if unzoned:  # once, however many answers showed it
        add(
            Finding(
                "warning",
                "timestamp",
                f"status.timestamp {unzoned[0].timestamp!r} has no zone (RFC 3339 needs Z "
                "or an offset)",
                [unzoned[0].evidence],
                ["a2a-sdk 1.x"],
                "write timestamps in UTC with a Z: 2026-12-03T10:00:00Z",
            )
        )
    said: dict[str, Finding] = {}  # the official lines' verdicts, for the frameworks on them
    official, add = add, keeping(add, said)
    for line, route in routes_of(card).items():
        _verdict(card, line, route, seen, send, add)
    judge_frameworks(card, seen, send, said, official)
    _toolnexus_verdict(card, seen, add)


def _verdict(
    card: AgentCard,
    line: str,
    route: tuple[Binding, str, Dialect] | str,
    seen: Seen,
    send: bool,
    add: Add,
) -> None:
    """Whether the official client ``line`` works with this peer, by the ``route`` it takes
    (a string: why it finds none)."""
    check = f"client: {line}"

    def breaks(message: str, fix: str) -> None:  # a warning that this client breaks
        add(Finding("warning", check, message, breaks=[line], fix=fix))

    if isinstance(route, str):
        breaks(f"breaks: {route}", "serve a card this client reads (see the card findings above)")
        return
    binding, endpoint, dialect = route
    where = f"{dialect.value} over {binding.value} at {endpoint}"
    if line == "a2a-sdk 1.x" and binding is not Binding.JSONRPC:
        where += (
            f" (when its ClientConfig lists {binding.value}"
            + (", with a grpc_channel_factory" if binding is Binding.GRPC else "")
            + ": its default is JSONRPC only)"
        )
    method = SEND_METHOD[dialect]
    known = seen.knows.get(endpoint, {}).get(method) if binding is Binding.JSONRPC else None
    probed = seen.answered.get((binding, "1" if dialect is Dialect.V10 else "0", endpoint))
    if known is False:
        breaks(
            f"breaks: it speaks {where} and sends {method}, which the peer answers "
            "with -32601 (method not found)",
            f"answer {method} at {endpoint}, or list that endpoint with the version it speaks",
        )
        return
    if binding is not Binding.JSONRPC and probed is False:
        breaks(
            f"breaks: it speaks {where}, where the peer gave no A2A answer",
            "serve that interface, or drop it from the card",
        )
        return
    outcome = seen.sent.get((endpoint, dialect))
    if outcome is None:
        unknown = (
            "no JSON-RPC answer to its send method"
            if binding is Binding.JSONRPC and known is None
            else ""
        )
        add(
            Finding(
                "info",
                check,
                f"cannot tell: it speaks {where}"
                + (f"; {unknown}" if unknown else "; the peer knows its methods")
                + ", and whether it reads the answers is not known "
                + (
                    "without --send (a task is created)"
                    if not send
                    else f"(no message went over {binding.value})"
                ),
            )
        )
        return
    if outcome:
        breaks(
            f"breaks: a message sent as it sends one ({where}) failed: {outcome}",
            "answer a plain text message in that dialect",
        )
        return
    _reading(card, line, check, where, binding, endpoint, dialect, seen, add)


def _reading(
    card: AgentCard,
    line: str,
    check: str,
    where: str,
    binding: Binding,
    endpoint: str,
    dialect: Dialect,
    seen: Seen,
    add: Add,
) -> None:
    """Whether the official client ``line``, whose send the peer answered, reads the answers."""
    answer = seen.shapes.get((endpoint, dialect))
    departures = (
        answer.departures(dialect, proto_timestamps=line == "a2a-sdk 1.x")
        if answer is not None
        else []
    )
    if binding is Binding.JSONRPC and answer is None:
        add(
            Finding(
                "info",
                check,
                f"cannot tell: it speaks {where}, and the answer had no result to read",
            )
        )
    elif departures:
        add(
            Finding(
                "warning",
                check,
                f"breaks: it speaks {where}, and cannot read the answer: " + "; ".join(departures),
                breaks=[line],
                fix=f"answer in {dialect.value}'s shapes",
            )
        )
    elif card.streaming and (unread := seen.streams.get((endpoint, dialect))):
        add(
            Finding(
                "warning",
                check,
                f"breaks: it speaks {where}, and cannot read the stream ("
                + (
                    "it streams by default when the card says streaming"
                    if line.startswith("a2a-sdk")
                    else "sendMessageStream"
                )
                + f"): {unread[0]}",
                [unread[1]],
                [line],
                f"write every stream frame in {dialect.value}'s shapes",
            )
        )
    elif line.startswith("a2a-sdk") and seen.slowest > SDK_WAIT:
        add(
            Finding(
                "warning",
                check,
                f"breaks: on its default HTTP client: it speaks {where} and reads the answers, "
                f"but a blocking send took {seen.slowest:.1f} s and it waits {SDK_WAIT:g} s "
                "(it works when given an httpx client with a longer timeout)",
                breaks=[line],
                fix="answer a blocking send sooner, or tell callers to give their client a "
                "longer timeout",
            )
        )
    else:
        add(
            Finding(
                "ok",
                check,
                f"works: it speaks {where}; the peer knows its send method and answers in the "
                "shapes it reads",
            )
        )


def _toolnexus_verdict(card: AgentCard, seen: Seen, add: Add) -> None:
    """Whether toolnexus's own client works with this peer (its send), or reaches it."""
    if seen.ours is not None:
        add(
            Finding(
                "ok" if not seen.ours else "warning",
                "client: toolnexus",
                f"works: {seen.ours_over}" if not seen.ours else f"breaks: {seen.ours}",
                breaks=[] if not seen.ours else ["toolnexus"],
            )
        )
    else:
        dialect, endpoint, _, binding = card.route()
        knows = seen.knows.get(endpoint, {})
        legacy = (
            dialect == "0.3"
            and knows.get("message/send") is False
            and knows.get("SendMessage")
            and not speaks_v10(card, endpoint)
        )
        add(
            Finding(
                "info",
                "client: toolnexus",
                f"reaches it: {'legacy' if legacy else dialect} over {binding} at "
                f"{endpoint}"
                + (" (it falls back to the legacy dialect on -32601)" if legacy else "")
                + "; whether it reads the answers is not known without --send",
            )
        )
