"""``toolnexus doctor URL``: probe a peer and say, in plain words, whether and why each kind of
client can work with it, with the evidence (the exchanges, masked, as the Wire shows them) and
the fix on the peer's side.

The checks are harmless by default: the card at both well-known paths, its schema (both lines),
every declared interface asked for an unknown task in its own dialect and binding (the answer
must be that binding's TaskNotFound), each JSON-RPC endpoint asked both dialects' method names
with nothing to act on (``message/send`` and ``SendMessage`` without a message: a server that
knows the method refuses the params, one that does not answers -32601), JSON-RPC's own error codes
(unknown method, invalid params, an unsupported ``A2A-Version``), auth declared against auth
enforced. ``send=True`` adds the active ones (tasks are created on the peer): a message sent in
each dialect an official client would speak, and the letter of its answer (content type,
wrapping, ``kind``, enum spellings, timestamps with a zone), a cancel, and, when the card says
so, a stream (SSE, or a gRPC stream).

Last, one verdict per official client (``client: a2a-sdk 1.x`` and the others), derived from
what that client does: the interface and dialect it picks from this card, the method names it
sends, and the shapes it parses, each set against what the peer was seen to answer. What was
not seen (the shapes, without ``send=True``) is said to be unknown, never guessed.

Each finding goes into a :class:`~toolnexus.debug.report.DoctorReport` as it is made, which
every front end shows the same way (and as JSON, for CI).
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

from ...events import EventBus
from ...protocol.card import validate_card
from ...traffic import TrafficRecorder
from ..cost import card_cost
from ..features import Probe, probe_features
from ..report import DoctorReport, Finding
from .card import fix_for, read_card, schema_breaks
from .costs import costs, counted
from .frameworks import ADK, CREWAI, FRAMEWORKS, framework_breaks, misread, readings
from .lines import MAX_INTERFACES, Add
from .probe import probe_interface
from .routes import interfaces_of
from .seen import Seen
from .send import active_checks
from .verdicts import give_verdicts

__all__ = [
    "ADK",
    "CREWAI",
    "FRAMEWORKS",
    "costs",
    "counted",
    "doctor",
    "framework_breaks",
    "misread",
    "readings",
]


async def doctor(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
    send: bool = False,
    on_finding: Callable[[DoctorReport], None] | None = None,
    bus: EventBus | None = None,
) -> DoctorReport:
    """Probe the peer at ``url`` (a base URL or a card URL); see the module docstring.

    ``on_finding(report)`` is called as each finding is added (the new one is the last of
    ``report.findings``) and once when the report is done, for front ends that show it live. ``bus``: where each probe is published too, marked as
    the doctor's (a front end's wire log)."""
    report = DoctorReport(url)
    if on_finding is not None:
        report.watch(on_finding)
    try:
        await _checks(url, report.add, headers, timeout, send, bus)
    finally:
        report.finish()
    return report


async def _checks(
    url: str,
    add: Add,
    headers: dict[str, str] | None,
    timeout: float,
    send: bool,
    bus: EventBus | None,
) -> None:
    traffic = TrafficRecorder(bus, peer=url, by="doctor")
    for name, value in (headers or {}).items():
        traffic.secret(name, value)
    async with httpx.AsyncClient(timeout=timeout) as http:
        card = await read_card(url, http, traffic, headers or {}, timeout, add)
        if card is None:
            return
        checked = validate_card(card)
        for d in checked.diagnostics:
            if d.level in ("error", "warning"):
                add(
                    Finding(
                        d.level,
                        "card schema",
                        d.message,
                        breaks=schema_breaks(checked),
                        fix=fix_for(d.path, d.message, card),
                        at=d.path,
                    )
                )
        add(Finding("info", "card verdict", checked.summary))
        add(await counted("cost: card", lambda: card_cost(card.raw)))
        declares_auth = any(
            card.raw.get(k) for k in ("securitySchemes", "security", "securityRequirements")
        )
        answered_open = False
        seen = Seen()
        probe = Probe(traffic, add, card, http, headers or {}, timeout)
        interfaces = interfaces_of(card)
        for binding, version, endpoint in interfaces[:MAX_INTERFACES]:
            answered_open |= await probe_interface(
                probe, binding, version, endpoint, declares_auth, seen
            )
        if len(interfaces) > MAX_INTERFACES:
            add(
                Finding(
                    "warning",
                    "card",
                    f"the card lists {len(interfaces)} interfaces; the first {MAX_INTERFACES} "
                    "were checked",
                    fix="list each interface the agent serves once",
                )
            )
        if declares_auth and answered_open and not headers:
            add(
                Finding(
                    "warning",
                    "auth",
                    "the card declares authentication, but the peer answered calls without "
                    "any credentials",
                    breaks=["clients that trust the card's security"],
                    fix="enforce the declared scheme, or drop it from the card",
                )
            )
        if send:
            await active_checks(probe, seen)
        await probe_features(probe, send)
        give_verdicts(card, seen, send, add)
