"""The card as the peer serves it: its caching headers and a conditional request, its signatures,
and the extended card (refused without credentials, served with the user's)."""

from __future__ import annotations

import time
from typing import Any

import httpx

from ... import _json
from ...client.peer import check_signatures
from ...http.fetch import exchange
from ...protocol.card import AgentCard
from .probe import JS_1X, OURS, SDK_1X, Probe


async def caching(probe: Probe) -> None:
    """The card's HTTP caching: Cache-Control max-age, a validator, and a 304 for it."""
    source = probe.card.source
    if not source:
        return
    before = probe.mark()
    try:
        r, _ = await exchange(
            probe.http, "GET", source, headers={}, limit=1 << 21, timeout=probe.timeout
        )
    except httpx.HTTPError:
        return
    control, etag, modified = (
        r.headers.get(k, "") for k in ("cache-control", "etag", "last-modified")
    )
    if not etag and not modified:
        probe.found(
            "info",
            "card cache",
            "the card has neither ETag nor Last-Modified: every fetch costs the whole card "
            "(toolnexus asks conditionally; the SDK clients fetch it once a client)",
            fix="serve an ETag (and answer If-None-Match with 304)",
        )
        return
    asked = {"If-None-Match": etag} if etag else {"If-Modified-Since": modified}
    started = time.perf_counter()
    try:
        again, content = await exchange(
            probe.http, "GET", source, headers=asked, limit=1 << 21, timeout=probe.timeout
        )
    except httpx.HTTPError:
        return
    probe.traffic.sent("GET", source, started, asked, b"", (again, content))
    age = "max-age" in control
    if again.status_code == 304:
        probe.found(
            "ok" if age else "info",
            "card cache",
            f"a conditional request is answered 304 ({'Cache-Control: ' + control if control else 'no Cache-Control'})",
            fix="" if age else "say how long the card may be kept: Cache-Control: max-age=...",
        )
    else:
        probe.found(
            "warning",
            "card cache",
            f"the card has {'an ETag' if etag else 'a Last-Modified'}, but a request with "
            f"{next(iter(asked))} was answered {again.status_code}, not 304",
            before,
            [OURS],
            "answer a conditional request for an unchanged card with 304 and no body",
        )


async def signatures(probe: Probe) -> None:
    """Whether the card is signed and whether its signatures verify (the client's verifier: the
    key set each ``jku`` names, fetched bounded under the address rule); each signature its
    finding, where it is."""
    signatures = probe.card.raw.get("signatures")
    if not signatures:
        probe.found(
            "info",
            "signature",
            "the card is unsigned: a client that verifies cards (the a2a-sdk 1.x with a "
            "signature_verifier) refuses it",
            fix="sign the card (JWS over its canonical JSON, A2A 1.0 §8.4) if callers verify",
        )
        return
    if not _json.is_array(signatures):
        probe.found(
            "error",
            "signature",
            "signatures is not a list",
            breaks=[SDK_1X, JS_1X],
            fix="write signatures as a list of {protected, signature}",
            at="$.signatures",
        )
        return
    verdict = await check_signatures(
        probe.card, http=probe.http, timeout=probe.timeout, traffic=probe.traffic
    )
    for check in verdict.checks:
        at = f"$.signatures[{check.index}]"
        if check.ok:
            probe.found("ok", "signature", f"{check.named} {check.why}", at=at)
        elif check.cause == "header":
            probe.found(
                "error",
                "signature",
                check.why,
                breaks=[SDK_1X],
                fix="each signature as JWS: protected (the base64url of the header's JSON, no "
                "crit) and signature, base64url",
                at=at,
            )
        elif verdict.valid:  # the SDKs accept a card on one good signature
            probe.found(
                "info", "signature", f"{check.named}: {check.why} (another one verifies)", at=at
            )
        elif check.cause == "no key":
            probe.found(
                "warning",
                "signature",
                f"{check.named} cannot be verified here: {check.why}",
                fix="name the key set in the protected header's jku, served as a JWK set",
                at=at,
            )
        else:
            probe.found(
                "error",
                "signature",
                f"{check.named} does not verify: {check.why}",
                breaks=[SDK_1X, JS_1X],
                fix="sign the card as served (RFC 8785 over its 1.0 view, A2A 1.0 §8.4.1) with "
                "the key its kid names in the key set its jku serves",
                at=at,
            )


async def extended_card(probe: Probe) -> None:
    """Declared (1.0 ``capabilities.extendedAgentCard``, 0.3 ``supportsAuthenticatedExtendedCard``)
    against served: without credentials it must be refused, with the user's served."""
    raw = probe.card.raw
    capabilities = raw.get("capabilities")
    declared = bool(
        (_json.is_object(capabilities) and capabilities.get("extendedAgentCard"))
        or raw.get("supportsAuthenticatedExtendedCard")
    )
    v03 = "agent/getAuthenticatedExtendedCard"
    before = probe.mark()
    anonymous = await probe.call("GetExtendedAgentCard", v03, {}, credentials=False)
    if anonymous is None:
        return
    served = anonymous.got == "result" and _json.is_object(anonymous.data)
    refused = anonymous.response is not None and anonymous.response.status_code in (401, 403)
    if not declared:
        if served:
            probe.found(
                "info",
                "extended card",
                "not declared, but served to a caller without credentials",
                before,
                fix="declare it (capabilities.extendedAgentCard) or stop serving it",
            )
        return
    if served:
        extra = _more_skills(probe.card, anonymous.data)
        probe.found(
            "warning",
            "extended card",
            "declared, and served to a caller without credentials"
            + (f" ({extra})" if extra else "")
            + ": it is meant for authenticated callers",
            before,
            ["what the extended card adds is public"],
            "serve the extended card only to authenticated callers (401 without credentials)",
        )
        return
    if not refused and anonymous.got in (-32007, -32004, -32601):
        probe.found(
            "error",
            "extended card",
            f"declared, but not served ({anonymous.got})",
            before,
            [SDK_1X, JS_1X],
            "serve GetExtendedAgentCard, or drop the capability",
        )
        return
    if not probe.headers:
        probe.found(
            "ok" if refused else "info",
            "extended card",
            "declared, and refused without credentials"
            + ("" if refused else f" ({anonymous.got or anonymous.why})")
            + " (give --header to check it is served with them)",
        )
        return
    with_them = await probe.call("GetExtendedAgentCard", v03, {})
    if with_them is not None and with_them.got == "result" and _json.is_object(with_them.data):
        extra = _more_skills(probe.card, with_them.data)
        probe.found(
            "ok",
            "extended card",
            "refused without credentials, served with yours" + (f" ({extra})" if extra else ""),
        )
    else:
        probe.found(
            "warning",
            "extended card",
            "declared, refused without credentials, and refused with yours too",
            before,
            [SDK_1X, JS_1X],
            "serve the extended card to an authenticated caller",
        )


def _more_skills(card: AgentCard, extended: Any) -> str:
    skills = extended.get("skills") if _json.is_object(extended) else None
    ids = {s.get("id") for s in skills if _json.is_object(s)} if _json.is_array(skills) else set()
    public = {s.get("id") for s in card.skills}
    more = sorted(str(i) for i in ids - public)
    return f"{len(more)} more skill(s): {', '.join(more)}" if more else ""
