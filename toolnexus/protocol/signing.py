"""Signatures between agents: a card's JWS signatures (A2A 1.0 §8.4) and signed push notifications
(the push guide's asymmetric flow), with the keys they use and the key sets (JWKS) that publish them.

No I/O here: a key set a signature's ``jku`` names is fetched by the caller (``client/cards.py``,
bounded, under the address rule) and handed to :func:`verify_card`. The keys are
:mod:`~toolnexus.protocol.keys`'s, the card's 1.0 view :mod:`~toolnexus.protocol.signed_view`'s,
a signed push notification's check :mod:`~toolnexus.protocol.signed_push`'s (all importable from
here too).

**What a card's signature covers.** RFC 8785 (JCS) over the card's *1.0 view*: the card as the
official SDKs read it into their 1.0 ``AgentCard`` (0.3's fields folded in as a2a-sdk's
``parse_agent_card`` folds them, every field 1.0 does not know dropped), written back as proto JSON
with empty values left out (a2a-sdk's ``_clean_empty``), ``signatures`` removed. That is what
a2a-sdk's and @a2a-js/sdk's verifiers canonicalize, so a signature over it is one they accept; a
signature over the whole served card (its 0.3 fields too) fails there. :func:`verify_card` also
accepts a signature over the whole card as served (another signer's reading of §8.4.1), and says
which form matched.

JOSE is PyJWT's (the library a2a-sdk signs and verifies with; a dependency already, through the
MCP SDK); RFC 8785 is ``rfc8785`` (Trail of Bits: refuses what has no canonical form, as a2a-sdk's
own does, where ``jcs`` rounds integers past 2**53 silently).
"""

from __future__ import annotations

import binascii
import functools
import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, cast

import jwt
from jwt.algorithms import get_default_algorithms
from jwt.api_jwk import PyJWK

from .._json import is_array, is_object
from .keys import (
    ALGORITHMS,
    JWKS_PATH,
    MAX_JTI,
    PUSH_HEADER,
    PUSH_LEEWAY,
    PUSH_TTL,
    KeyError_,
    KeySet,
    SigningKey,
    alg_fits,
    b64url,
    kty_of,
    unb64url,
)
from .signed_push import PushVerdict, verify_push
from .signed_view import canonical, card_view

__all__ = [
    "ALGORITHMS",
    "SigningKey",
    "KeySet",
    "KeyError_",
    "SignatureCheck",
    "CardSignatures",
    "card_view",
    "canonical",
    "signature_jkus",
    "verify_card",
    "JWKS_PATH",
    "PUSH_HEADER",
    "PUSH_LEEWAY",
    "PUSH_TTL",
    "MAX_JTI",
    "PushVerdict",
    "verify_push",
]

# -- verifying a card ------------------------------------------------------------------------------


@dataclass
class SignatureCheck:
    """One signature of a card, checked."""

    index: int
    alg: str | None
    kid: str | None
    jku: str | None
    ok: bool
    why: str
    """How it verified (the key and the form it covers), or why it did not."""
    cause: str = ""
    """Why not, in a word: ``header``, ``algorithm``, ``key``, ``no key`` (none to check it
    with), ``canonical form`` (no form of the card verifies: changed, or another key)."""

    @property
    def named(self) -> str:
        parts = [
            f"alg {self.alg!r}" if self.alg else "no alg",
            f"kid {self.kid!r}" if self.kid else "no kid",
        ]
        return f"signature {self.index + 1} ({', '.join(parts)})"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class CardSignatures:
    """What a card's signatures come to: ``valid`` (at least one verified, as the SDKs require),
    ``invalid`` (signed, none verified: each check says why) or ``unsigned``."""

    state: str
    checks: list[SignatureCheck] = field(default_factory=lambda: list[SignatureCheck]())
    keys: KeySet | None = None
    """The key set that verified it (the keys given, or the one its jku served): the agent's
    keys, for its signed push notifications (``WebhookReceiver.target(keys=...)``)."""

    @property
    def valid(self) -> bool:
        return self.state == "valid"

    @property
    def summary(self) -> str:
        if self.state == "unsigned":
            return "unsigned"
        if self.state == "valid":
            good = next(c for c in self.checks if c.ok)
            return f"valid: {good.named} {good.why}"
        return "invalid: " + "; ".join(f"{c.named}: {c.why}" for c in self.checks)

    def to_dict(self) -> dict[str, Any]:
        return {
            "state": self.state,
            "summary": self.summary,
            "signatures": [c.to_dict() for c in self.checks],
        }


def _protected(signature: Any) -> dict[str, Any] | None:
    text = signature.get("protected") if is_object(signature) else None
    if not isinstance(text, str):
        return None
    try:
        header = json.loads(unb64url(text))
    except (binascii.Error, ValueError):
        return None
    return cast(dict[str, Any], header) if isinstance(header, dict) else None


def signature_jkus(card: Mapping[str, Any]) -> list[str]:
    """The ``jku`` URLs a card's signatures name (to fetch before :func:`verify_card`)."""
    signatures = card.get("signatures")
    out: list[str] = []
    for signature in signatures if is_array(signatures) else []:
        header = _protected(signature)
        jku = header.get("jku") if header else None
        if isinstance(jku, str) and jku and jku not in out:
            out.append(jku)
    return out


def _forms(card: Mapping[str, Any]) -> list[tuple[str, bytes | str]]:
    """The payloads a signature may cover, most likely first: each, or why it has none."""
    out: list[tuple[str, bytes | str]] = []
    for name, make in (
        ("its 1.0 view", lambda: canonical(card_view(card))),
        ("its 1.0 fields (0.3's dropped)", lambda: canonical(card_view(card, fold_v03=False))),
        (
            "the whole card as served",
            lambda: canonical({k: v for k, v in card.items() if k != "signatures"}),
        ),
    ):
        try:
            payload: bytes | str = make()
        except ValueError as exc:
            payload = str(exc)
        if all(payload != p for _, p in out):
            out.append((name, payload))
    return out


def verify_card(
    card: Mapping[str, Any],
    keys: KeySet | None = None,
    fetched: Mapping[str, KeySet | str] | None = None,
) -> CardSignatures:
    """Check a card's signatures: with ``keys`` (the keys you trust) and, for a signature naming a
    ``jku``, the key set fetched from it (``fetched[jku]``; a string is why it could not be).
    Valid when one signature verifies, as the official verifiers decide."""
    signatures = card.get("signatures")
    if signatures is None or signatures == []:
        return CardSignatures("unsigned")
    if not is_array(signatures):
        return CardSignatures(
            "invalid",
            [SignatureCheck(0, None, None, None, False, "signatures is not a list", "header")],
        )
    forms = _forms(card)
    checks = [_check(i, s, forms, keys, fetched or {}) for i, s in enumerate(signatures)]
    good = next((c for c in checks if c.ok), None)
    if good is None:
        return CardSignatures("invalid", checks)
    served = (fetched or {}).get(good.jku or "")
    return CardSignatures("valid", checks, keys if keys is not None else _keyset(served))


def _keyset(value: KeySet | str | None) -> KeySet | None:
    return value if isinstance(value, KeySet) else None


def _check(
    index: int,
    signature: Any,
    forms: list[tuple[str, bytes | str]],
    keys: KeySet | None,
    fetched: Mapping[str, KeySet | str],
) -> SignatureCheck:
    header = _protected(signature)
    if header is None:
        return SignatureCheck(
            index, None, None, None, False, "its protected header is not base64url JSON", "header"
        )
    alg, kid, jku = (
        header.get(k) if isinstance(header.get(k), str) else None for k in ("alg", "kid", "jku")
    )
    check = functools.partial(SignatureCheck, index, alg, kid, jku)
    if alg not in ALGORITHMS:
        return check(
            False, f"algorithm {alg!r} is not accepted (only {', '.join(ALGORITHMS)})", "algorithm"
        )
    crit = header.get("crit")
    if crit is not None:
        return check(
            False,
            f"its header marks {crit!r} critical, which this verifier does not know",
            "header",
        )
    raw = signature.get("signature")
    try:
        sig = unb64url(raw) if isinstance(raw, str) else None
    except (binascii.Error, ValueError):
        sig = None
    if sig is None:
        return check(False, "its signature is not base64url", "header")
    candidates, where = _candidates(kid, jku, keys, fetched)
    if isinstance(candidates, str):
        cause = "no key" if candidates.startswith("no key to check it with") else "key"
        return check(False, candidates, cause)
    fitting = [k for k in candidates if alg_fits(alg, kty_of(k)) and k.get("alg") in (None, alg)]
    if not fitting:
        kinds = ", ".join(
            sorted({kty_of(k) + (f"/{k['alg']}" if k.get("alg") else "") for k in candidates})
        )
        return check(
            False,
            f"algorithm {alg} does not fit the key{'s' if len(candidates) > 1 else ''} {where} ({kinds})",
            "algorithm",
        )
    algorithm = get_default_algorithms()[alg]
    protected = cast(str, signature["protected"])
    for form, payload in forms:
        if isinstance(payload, str):
            continue
        signing_input = f"{protected}.{b64url(payload)}".encode()
        for jwk in fitting:
            try:
                key = PyJWK(jwk, alg).key
            except jwt.PyJWTError:
                continue
            if algorithm.verify(signing_input, key, sig):
                return check(True, f"verified with a key {where}, over {form}")
    unreadable = [f"{form}: {p}" for form, p in forms if isinstance(p, str)]
    kids = ", ".join(repr(k.get("kid")) for k in fitting)
    return check(
        False,
        f"it does not verify with the key{'s' if len(fitting) > 1 else ''} {kids} {where} over "
        "any canonical form of the card (the card changed since it was signed, or another key "
        "signed it)" + (f"; {'; '.join(unreadable)}" if unreadable else ""),
        "canonical form",
    )


def _candidates(
    kid: str | None,
    jku: str | None,
    keys: KeySet | None,
    fetched: Mapping[str, KeySet | str],
) -> tuple[list[dict[str, Any]] | str, str]:
    """The keys a signature may be checked with, and where they come from; or why there are none.
    Keys given are the only ones trusted (a ``jku`` is then not consulted); without them, the key
    set its ``jku`` named, fetched."""
    named = f"kid {kid!r}" if kid else "any kid"
    if keys is not None:
        if found := keys.named(kid):
            return found, "you trust"
        kids = ", ".join(repr(k.get("kid")) for k in keys.keys) or "none"
        return f"no key with {named} among the keys you trust ({kids})", ""
    if jku is None:
        return "no key to check it with: it names no jku (give the signer's public key)", ""
    got = fetched.get(jku)
    if got is None:
        return f"its jku {jku} was not fetched", ""
    if isinstance(got, str):
        return f"no key set from its jku {jku}: {got}", ""
    if found := got.named(kid):
        return found, f"from its jku {jku}"
    return f"no key with {named} in the key set at its jku {jku}", ""
