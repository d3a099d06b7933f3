"""A card checked against both schema lines (:func:`validate_card`), and the verdict: which
dialect each official client will use on it, or why it refuses it."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from .._json import is_array, is_object
from . import grpc_binding
from .card_routes import CardRoutes, elsewhere, origin, origin_text
from .operations import Binding

__all__ = ["CardReport", "Diagnostic", "validate_card"]


class Diagnostic:
    """One finding about a card: ``level`` (error, warning, info), a JSON ``path`` and a sentence."""

    __slots__ = ("level", "path", "message")

    def __init__(self, level: str, path: str, message: str) -> None:
        self.level, self.path, self.message = level, path, message

    def __repr__(self) -> str:
        return f"{self.level}: {self.path}: {self.message}"

    def to_dict(self) -> dict[str, str]:
        return {"level": self.level, "path": self.path, "message": self.message}


class CardReport:
    """What :func:`validate_card` found: ``diagnostics`` and the ``verdict`` for each client line."""

    def __init__(
        self, diagnostics: list[Diagnostic], verdict: dict[str, str], summary: str
    ) -> None:
        self.diagnostics = diagnostics
        self.verdict = verdict
        self.summary = summary

    @property
    def errors(self) -> list[Diagnostic]:
        return [d for d in self.diagnostics if d.level == "error"]

    @property
    def ok(self) -> bool:
        return not self.errors

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "summary": self.summary,
            "verdict": self.verdict,
            "diagnostics": [d.to_dict() for d in self.diagnostics],
        }


def _absolute_url(value: Any) -> bool:
    return (
        isinstance(value, str)
        and value.startswith(("http://", "https://"))
        and len(value.split("//", 1)[1]) > 0
    )


def validate_card(card: CardRoutes | dict[str, Any]) -> CardReport:
    """Check a card against both schema lines and say which dialect each official client will use."""
    raw = card.raw if isinstance(card, CardRoutes) else card
    out: list[Diagnostic] = []

    def add(level: str, path: str, message: str) -> None:
        out.append(Diagnostic(level, path, message))

    if not is_object(raw):
        add("error", "$", "the card is not a JSON object")
        return CardReport(
            out,
            {"a2a-sdk 1.x": "cannot use this card", "a2a-sdk 0.3": "cannot use this card"},
            "not a card",
        )
    for check in (_check_top, _check_capabilities, _check_modes, _check_skills, _check_interfaces):
        check(raw, add)
    parsed = CardRoutes(raw) if not isinstance(card, CardRoutes) else card
    if parsed.source:
        _check_host(parsed, add)
    verdict, summary = _verdict(parsed, out)
    return CardReport(out, verdict, summary)


Add = Callable[[str, str, str], None]
"""How a check says what it found: ``add(level, path, message)``."""


def _check_top(raw: dict[str, Any], add: Add) -> None:
    """The card's own fields: name, description, version, url, protocolVersion, preferredTransport."""
    for key, kind in (("name", str), ("description", str), ("version", str)):
        if key not in raw:
            add("error", f"$.{key}", f"{key} is required by both schema lines")
        elif not isinstance(raw[key], kind):
            add("error", f"$.{key}", f"{key} must be a string")
    if isinstance(raw.get("name"), str) and not raw["name"].strip():
        add("error", "$.name", "name is empty")
    if isinstance(raw.get("description"), str) and not raw["description"].strip():
        add(
            "error",
            "$.description",
            "description is empty: A2A linters fail such a card (a2a lint grades it D)",
        )
    if "url" not in raw:
        level = "warning" if "supportedInterfaces" in raw else "error"
        add(level, "$.url", "no top-level url: a2a-sdk 0.3 clients reject this card")
    elif not _absolute_url(raw["url"]):
        add("error", "$.url", f"url must be an absolute http(s) URL, got {raw['url']!r}")
    pv = raw.get("protocolVersion")
    if pv is not None and (not isinstance(pv, str) or not pv.startswith(("0.", "1."))):
        add(
            "warning",
            "$.protocolVersion",
            f"protocolVersion {pv!r} is not one the official clients know (0.3.x, 1.x)",
        )
    pt = raw.get("preferredTransport")
    if pt is not None and Binding.named(pt) is not Binding.JSONRPC:
        add(
            "info",
            "$.preferredTransport",
            f"preferredTransport is {pt!r}; toolnexus speaks 0.3 over JSONRPC only",
        )


def _check_capabilities(raw: dict[str, Any], add: Add) -> None:
    caps = raw.get("capabilities")
    if caps is None:
        add("error", "$.capabilities", "capabilities is required (an object)")
    elif not is_object(caps):
        add("error", "$.capabilities", "capabilities must be an object")
    else:
        for flag in (
            "streaming",
            "pushNotifications",
            "extendedAgentCard",
            "stateTransitionHistory",
        ):
            if flag in caps and not isinstance(caps[flag], bool):
                add("error", f"$.capabilities.{flag}", f"{flag} must be true or false")


def _check_modes(raw: dict[str, Any], add: Add) -> None:
    for key in ("defaultInputModes", "defaultOutputModes"):
        modes = raw.get(key)
        if modes is None:
            add(
                "error",
                f"$.{key}",
                f'{key} is required (a list of modes such as "text" or "text/plain")',
            )
        elif not is_array(modes) or not all(isinstance(m, str) and m for m in modes):
            add("error", f"$.{key}", f"{key} must be a list of non-empty strings")
        elif not modes:
            add("warning", f"$.{key}", f"{key} is empty: clients cannot tell what to send")


def _check_skills(raw: dict[str, Any], add: Add) -> None:
    skills = raw.get("skills")
    if skills is None:
        add("error", "$.skills", "skills is required (a list)")
        return
    if not is_array(skills):
        add("error", "$.skills", "skills must be a list")
        return
    if not skills:
        add("warning", "$.skills", "the card advertises no skills")
    seen: set[str] = set()
    for i, s in enumerate(skills):
        where = f"$.skills[{i}]"
        if not is_object(s):
            add("error", where, "a skill must be an object")
            continue
        for key in ("id", "name", "description"):
            if not isinstance(s.get(key), str):
                add("error", f"{where}.{key}", f"skill {key} is required (a string)")
        if isinstance(s.get("description"), str) and not s["description"].strip():
            add("warning", f"{where}.description", "skill description is empty")
        tags = s.get("tags")
        if tags is None:
            add(
                "error",
                f"{where}.tags",
                "skill tags are required; the a2a-sdk 0.3 client rejects a card with a "
                "skill without them",
            )
        elif not is_array(tags) or not all(isinstance(t, str) for t in tags):
            add("error", f"{where}.tags", "skill tags must be a list of strings")
        elif not tags:
            add("warning", f"{where}.tags", "skill tags are empty; linters mark this")
        sid = s.get("id")
        if isinstance(sid, str):
            if sid in seen:
                add("error", f"{where}.id", f"skill id {sid!r} appears twice")
            seen.add(sid)


def _check_interfaces(raw: dict[str, Any], add: Add) -> None:
    if "supportedInterfaces" not in raw:
        add(
            "info",
            "$.supportedInterfaces",
            "no supportedInterfaces: 1.x clients fall back to the 0.3 url",
        )
        return
    interfaces = raw["supportedInterfaces"]
    if not is_array(interfaces) or not interfaces:
        add("error", "$.supportedInterfaces", "supportedInterfaces must be a non-empty list")
        return
    for i, itf in enumerate(interfaces):
        where = f"$.supportedInterfaces[{i}]"
        if not is_object(itf):
            add("error", where, "an interface must be an object")
        else:
            _check_interface(itf, where, add)


def _check_interface(itf: dict[str, Any], where: str, add: Add) -> None:
    grpc = Binding.named(itf.get("protocolBinding")) is Binding.GRPC
    if (
        grpc
        and isinstance(itf.get("url"), str)
        and re.fullmatch(r"[\w.\-\[\]:]+:\d+", grpc_binding.target_of(itf["url"]))
    ):
        pass  # a gRPC target: host:port as grpcio dials it, or a URL (grpc://, https://) naming one
    elif not _absolute_url(itf.get("url")):
        add(
            "error",
            f"{where}.url",
            "interface url must be an absolute http(s) URL"
            + (" or a gRPC host:port" if grpc else ""),
        )
    elif not str(itf["url"]).endswith("/"):
        add(
            "info",
            f"{where}.url",
            "interface url has no trailing slash; clients post to it as is",
        )
    binding = itf.get("protocolBinding")
    if not isinstance(binding, str) or not binding:
        add(
            "error",
            f"{where}.protocolBinding",
            "protocolBinding is required (JSONRPC, GRPC, HTTP+JSON)",
        )
    version = itf.get("protocolVersion")
    if version is not None and (
        not isinstance(version, str) or version.split(".")[0] not in ("0", "1")
    ):
        add(
            "warning",
            f"{where}.protocolVersion",
            f"protocol version {version!r} is unknown to the SDKs",
        )


def _check_host(card: CardRoutes, add: Add) -> None:
    """Warn when the card sends calls to another host than the one it was fetched from: a client
    that trusted it would send the user's credentials there (toolnexus does not)."""
    try:
        _, endpoint, _, binding = card.route()
    except Exception:
        return
    if endpoint.startswith("/") or not elsewhere(endpoint, card.source, binding):
        return
    if binding is Binding.GRPC:  # a host:port target on a port of its own: shown as it is
        add(
            "warning",
            "$.supportedInterfaces",
            f"the card sends gRPC calls to {grpc_binding.target_of(endpoint)}, "
            f"not to the host {origin(card.source)[1]} where it was fetched: toolnexus sends no credentials "
            "there unless that host is named; other clients may",
        )
    else:
        add(
            "warning",
            "$.url",
            f"the card sends calls to {origin_text(endpoint)}, not to {origin_text(card.source)} "
            "where it was fetched: toolnexus sends no credentials there unless that host is "
            "named; other clients may",
        )


def _verdict(card: CardRoutes, diags: list[Diagnostic]) -> tuple[dict[str, str], str]:
    """What the card alone leads each official client to do: which interface and dialect it finds,
    or why it refuses the card. Whether the peer then answers what that client sends, in shapes it
    parses, is not on the card: the doctor probes it (``toolnexus doctor``)."""
    broken = any(
        d.level == "error" and d.path in ("$", "$.name", "$.capabilities", "$.skills")
        for d in diags
    )
    dialect, endpoint, reason, binding = card.route()
    v1 = card.jsonrpc_interface("1")
    rest = card.interface("1", Binding.HTTP_JSON)
    grpc = card.interface("1", Binding.GRPC)
    has_url = isinstance(card.raw.get("url"), str) and bool(card.raw.get("url"))
    verdict: dict[str, str] = {}
    if v1 is not None:
        verdict["a2a-sdk 1.x"] = "speaks 1.0 at " + str(v1.get("url"))
    elif has_url or card.jsonrpc_interface("0") is not None:
        verdict["a2a-sdk 1.x"] = "falls back to its 0.3 compat transport at " + endpoint
    elif rest is not None:
        verdict["a2a-sdk 1.x"] = (
            f"speaks 1.0 over HTTP+JSON at {rest.get('url')} when its ClientConfig lists "
            "HTTP+JSON (its default is JSONRPC only)"
        )
    elif grpc is not None:
        verdict["a2a-sdk 1.x"] = (
            f"speaks 1.0 over gRPC at {grpc.get('url')} when its ClientConfig lists GRPC, "
            "with a grpc_channel_factory (its default is JSONRPC only)"
        )
    else:
        verdict["a2a-sdk 1.x"] = "finds no interface it speaks: cannot connect"
    refused = _refused_by_v03(diags)
    if not has_url:
        verdict["a2a-sdk 0.3"] = "rejects this card (no top-level url)"
    elif refused:
        verdict["a2a-sdk 0.3"] = "rejects this card (" + "; ".join(refused[:3]) + ")"
    else:
        verdict["a2a-sdk 0.3"] = "speaks 0.3 at " + str(card.raw["url"])
    verdict["toolnexus"] = (
        f"speaks {dialect} at {endpoint} ({reason}); falls back to the toolnexus legacy dialect "
        "if the peer does not know the 0.3 methods"
        if dialect == "0.3"
        else f"speaks {dialect} over {binding} at {endpoint} ({reason})"
    )
    if broken:
        summary = "the card is broken: clients will not use it"
    elif binding is Binding.HTTP_JSON:
        summary = "offers 1.0 over HTTP+JSON only: REST clients find it; JSON-RPC clients do not"
    elif binding is Binding.GRPC:
        summary = (
            "offers 1.0 over gRPC only: gRPC clients find it; JSON-RPC and REST clients do not"
        )
    elif dialect == "1.0" and has_url:
        summary = "offers 1.0 and 0.3: each official client line finds its own"
    elif dialect == "1.0":
        summary = "offers 1.0 only: the official 1.x client finds it; 0.3 clients do not"
    else:
        summary = "offers 0.3 only: the official 1.x client falls back to its 0.3 compat transport"
    errors = sum(d.level == "error" for d in diags)
    if errors and not broken:
        summary += f" (but the card has {errors} error{'s' if errors > 1 else ''}" + (
            ": the a2a-sdk 0.3 client rejects it)" if refused and has_url else ")"
        )
    return verdict, summary


def _refused_by_v03(diags: list[Diagnostic]) -> list[str]:
    """The errors for which the a2a-sdk 0.3 client's card model (pydantic) refuses a card: a field
    it requires is missing (a skill's tags among them). Other errors are not said to stop it."""
    return [
        f"{d.path}: {d.message}"
        for d in diags
        if d.level == "error"
        and (d.path.endswith(".tags") or "required" in d.message)
        and not d.path.startswith("$.supportedInterfaces")
    ]
