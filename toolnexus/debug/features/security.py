"""The card's security: each scheme's required fields, requirements that name declared schemes, and
whether a call without credentials is refused where the requirements say it must be."""

from __future__ import annotations

import uuid
from typing import Any

from ... import _json
from .probe import JS_1X, OURS, SDK_1X, Probe

_SCHEME_FIELDS = {  # the fields each kind of security scheme requires (1.0 names; 0.3's in ())
    "apiKeySecurityScheme": ("name", "location"),
    "httpAuthSecurityScheme": ("scheme",),
    "oauth2SecurityScheme": ("flows",),
    "openIdConnectSecurityScheme": ("openIdConnectUrl",),
    "mtlsSecurityScheme": (),
}
_V03_SCHEMES = {
    "apiKey": ("apiKeySecurityScheme", ("name", "in")),
    "http": ("httpAuthSecurityScheme", ("scheme",)),
    "oauth2": ("oauth2SecurityScheme", ("flows",)),
    "openIdConnect": ("openIdConnectSecurityScheme", ("openIdConnectUrl",)),
    "mutualTLS": ("mtlsSecurityScheme", ()),
}


def schemes(probe: Probe) -> None:
    """Each declared security scheme has the fields its kind needs; each requirement names a
    declared scheme."""
    raw = probe.card.raw
    schemes = raw.get("securitySchemes")
    if not _json.is_object(schemes):
        return
    for name, scheme in schemes.items():
        at = f"$.securitySchemes.{name}"
        kind, fields, where = _scheme_kind(scheme)
        if kind is None:
            probe.found(
                "error",
                "security schemes",
                f"scheme {name!r} is of no kind a client knows",
                breaks=[SDK_1X, JS_1X],
                fix="make it one of apiKey, http, oauth2, openIdConnect, mutualTLS (1.0: "
                "apiKeySecurityScheme, httpAuthSecurityScheme, ...)",
                at=at,
            )
            continue
        missing = [f for f in fields if not where.get(f)]
        if missing:
            probe.found(
                "error",
                "security schemes",
                f"scheme {name!r} ({kind}) lacks {', '.join(missing)}",
                breaks=[SDK_1X, JS_1X, OURS],
                fix=f"give the {kind} scheme its {', '.join(missing)}",
                at=at,
            )
        else:
            probe.found("ok", "security schemes", f"scheme {name!r}: {kind}, complete", at=at)
    named = {n for n in _required_schemes(raw)}
    unknown = sorted(named - set(schemes))
    if unknown:
        probe.found(
            "error",
            "security schemes",
            f"the security requirements name {', '.join(map(repr, unknown))}, which the card "
            "does not declare",
            breaks=[SDK_1X, JS_1X, OURS],
            fix="declare every scheme a requirement names in securitySchemes",
            at="$.securityRequirements",
        )


def _scheme_kind(scheme: Any) -> tuple[str | None, tuple[str, ...], dict[str, Any]]:
    if not _json.is_object(scheme):
        return None, (), {}
    for kind, fields in _SCHEME_FIELDS.items():  # 1.0: one member names the kind
        inner = scheme.get(kind)
        if _json.is_object(inner):
            return kind.removesuffix("SecurityScheme"), fields, inner
    v03 = _V03_SCHEMES.get(str(scheme.get("type")))
    if v03 is not None:
        return str(scheme.get("type")), v03[1], scheme
    return None, (), {}


def _required_schemes(raw: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("securityRequirements", "security"):
        items = raw.get(key)
        for item in items if _json.is_array(items) else []:
            if _json.is_object(item):
                schemes = item.get("schemes", item)
                out += list(schemes) if _json.is_object(schemes) else []
    return out


async def enforced(probe: Probe) -> None:
    """With the user's credentials given, whether a call without them is refused, as the card's
    security requirements say it must be (without any, ``toolnexus.debug.doctor`` says so)."""
    if not probe.headers or not _required_schemes(probe.card.raw):
        return
    before = probe.mark()
    bare = await probe.call(
        "GetTask", "tasks/get", {"id": f"toolnexus-doctor-{uuid.uuid4()}"}, credentials=False
    )
    if bare is None or bare.response is None:
        return
    if bare.response.status_code in (401, 403):
        probe.found(
            "ok",
            "auth",
            f"refuses a call without credentials ({bare.response.status_code}), as its security "
            "requirements say",
        )
    else:
        probe.found(
            "warning",
            "auth",
            "the card requires credentials, but a call without them was answered "
            f"({bare.got or bare.response.status_code})",
            before,
            ["clients that trust the card's security"],
            "enforce the declared schemes, or drop them from the card",
        )
