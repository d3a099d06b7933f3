"""A signed push notification checked (the push guide's asymmetric flow): its JWT
(:data:`~toolnexus.protocol.keys.PUSH_HEADER`) verified with the agent's keys, its claims and the
body it signs (:func:`verify_push`, a :class:`PushVerdict`). The agent signs one with
:meth:`~toolnexus.protocol.keys.SigningKey.push_token`; the webhook that receives them
(:mod:`toolnexus.client.webhook`) checks replays and the task. Importable from
:mod:`~toolnexus.protocol.signing` too."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

import jwt
from jwt.api_jwk import PyJWK

from .keys import ALGORITHMS, MAX_JTI, PUSH_LEEWAY, PUSH_TTL, KeySet, alg_fits, kty_of

__all__ = ["PushVerdict", "verify_push"]


@dataclass
class PushVerdict:
    """A signed push notification, checked: ``ok``, else why not; its claims once readable."""

    ok: bool
    why: str
    claims: dict[str, Any] = field(default_factory=lambda: dict[str, Any]())


def verify_push(
    token: str,
    keys: KeySet,
    *,
    audience: str,
    body: bytes,
    issuer: str | None = None,
) -> PushVerdict:
    """Check a push notification's JWT (:data:`PUSH_HEADER`): signed by one of ``keys`` with an
    accepted algorithm; ``aud`` this webhook; ``iss`` the agent when given (a trailing slash aside); ``iat`` not in the
    future and ``exp`` not past (:data:`PUSH_LEEWAY`), valid for at most a push's own
    :data:`PUSH_TTL` (``exp`` - ``iat``: a replay memory keeps each ``jti`` until it expires);
    ``jti`` (at most :data:`MAX_JTI` characters) and ``taskId`` present; the body the one signed
    (``request_body_sha256`` required: without it the signature vouches for any body).
    Replay (a ``jti`` seen before) and the task id are the receiver's to check."""
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError:
        return PushVerdict(False, "its signature header is not a JWT")
    alg, kid = header.get("alg"), header.get("kid")
    if alg not in ALGORITHMS:
        return PushVerdict(
            False, f"algorithm {alg!r} is not accepted (only {', '.join(ALGORITHMS)})"
        )
    candidates = [
        k for k in keys.named(kid if isinstance(kid, str) else None) if alg_fits(alg, kty_of(k))
    ]
    if not candidates:
        return PushVerdict(False, f"no key for kid {kid!r} and {alg} among the agent's keys")
    claims: dict[str, Any] | None = None
    last = "the signature does not verify"
    signer = ""
    for jwk in candidates:
        signer = str(jwk.get("kid"))
        try:
            claims = jwt.decode(
                token,
                PyJWK(jwk, alg).key,
                algorithms=[alg],
                audience=audience,
                leeway=PUSH_LEEWAY,
                options={"require": ["iss", "aud", "iat", "exp", "jti"]},
            )
            break
        except jwt.InvalidSignatureError:
            continue
        except jwt.ExpiredSignatureError:
            return PushVerdict(False, "it has expired (exp is past)")
        except jwt.ImmatureSignatureError:
            return PushVerdict(False, "it is issued in the future (iat)")
        except jwt.InvalidAudienceError:
            return PushVerdict(False, f"it is meant for another webhook (aud is not {audience})")
        except jwt.MissingRequiredClaimError as exc:
            return PushVerdict(False, f"it lacks the {exc.claim!r} claim")
        except jwt.PyJWTError as exc:
            last = str(exc)
    if claims is None:
        return PushVerdict(False, f"{last} (forged, or signed by another key)")
    iss = claims.get("iss")
    if issuer is not None and (not isinstance(iss, str) or iss.rstrip("/") != issuer.rstrip("/")):
        return PushVerdict(False, f"another agent issued it (iss is not {issuer})", claims)
    jti = claims.get("jti")
    if not isinstance(claims.get("taskId"), str) or not isinstance(jti, str):
        return PushVerdict(False, "it lacks a taskId or jti string", claims)
    if not 0 < len(jti) <= MAX_JTI:
        return PushVerdict(False, f"its jti is {len(jti)} characters (1 to {MAX_JTI})", claims)
    lifetime = int(claims["exp"]) - int(claims["iat"])  # both numbers: PyJWT checked them
    if lifetime > PUSH_TTL:
        return PushVerdict(
            False, f"it is valid for {lifetime:.0f} s, longer than a push's {PUSH_TTL} s", claims
        )
    digest = claims.get("request_body_sha256")
    if digest is None:  # a signature that does not cover the body vouches for any body
        return PushVerdict(False, "it does not sign the body (no request_body_sha256)", claims)
    if digest != hashlib.sha256(body).hexdigest():
        return PushVerdict(False, "its body is not the one signed", claims)
    return PushVerdict(True, f"signed by {signer!r} ({alg})", claims)
