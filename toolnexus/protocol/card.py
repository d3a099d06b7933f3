"""Agent cards as peers publish them: read, validated, routed (the card we serve is built in
:mod:`toolnexus.serve.card`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .._json import is_array, is_object
from ..display import ERR, MUTED, OK, WARN, e, to_dataframe
from .card_check import CardReport, Diagnostic, validate_card
from .card_routes import CardRoutes
from .card_routes import elsewhere as elsewhere
from .card_routes import origin as origin
from .card_routes import origin_text as origin_text
from .operations import Binding
from .signing import CardSignatures

__all__ = [
    "AgentCard",
    "Scheme",
    "Requirement",
    "CardReport",
    "Diagnostic",
    "validate_card",
    "CARD_PATH",
    "LEGACY_CARD_PATH",
    "PROTOCOL_VERSION",
]

CARD_PATH = "/.well-known/agent-card.json"
LEGACY_CARD_PATH = "/.well-known/agent.json"
PROTOCOL_VERSION = "0.3.0"


# -- reading other agents' cards ------------------------------------------------------------------

SCHEME_KINDS = {
    "apiKeySecurityScheme": "apiKey",
    "httpAuthSecurityScheme": "http",
    "oauth2SecurityScheme": "oauth2",
    "openIdConnectSecurityScheme": "openIdConnect",
    "mtlsSecurityScheme": "mutualTLS",
}
"""A security scheme's kind by its 1.0 member, as 0.3's ``type`` names it (0.3's type is the value)."""


@dataclass(frozen=True)
class Scheme:
    """A security scheme a card declares, in either SDK line's shape: its name on the card, its
    kind (``apiKey``, ``http``, ``oauth2``, ``openIdConnect``, ``mutualTLS``; "" for one no
    client knows) and its fields (the 1.0 member's object, or 0.3's scheme itself)."""

    name: str
    kind: str
    fields: dict[str, Any] = field(default_factory=dict[str, Any])

    @property
    def label(self) -> str:
        """What it asks for, in a few words: ``http bearer``, ``apiKey in header X-API-Key``."""
        f = self.fields
        if self.kind == "http":
            return f"http {str(f.get('scheme') or '').lower()}".strip()
        if self.kind == "apiKey":
            return f"apiKey in {self.location} {f.get('name') or ''}".strip()
        if self.kind == "oauth2":
            flows = f.get("flows")
            names = sorted(k for k in flows if is_object(flows[k])) if is_object(flows) else []
            return "oauth2" + (f" ({', '.join(names)})" if names else "")
        return self.kind or "unknown"

    @property
    def location(self) -> str:
        """Where an API key goes (``header``, ``query``, ``cookie``): 1.0's ``location``, 0.3's ``in``."""
        return str(self.fields.get("location") or self.fields.get("in") or "").lower()


def _scheme(name: str, raw: Any) -> Scheme:
    if not is_object(raw):
        return Scheme(name, "")
    for member, kind in SCHEME_KINDS.items():
        inner = raw.get(member)
        if is_object(inner):
            return Scheme(name, kind, inner)
    kind = str(raw.get("type") or "")
    return Scheme(name, kind if kind in SCHEME_KINDS.values() else "", raw)


Requirement = dict[str, list[str]]
"""One way to be let in: every scheme it names (by its name on the card), each with the scopes it
needs. A list of them is alternatives (any one will do); an empty list asks for nothing."""


def requirements_of(raw: Any) -> list[Requirement]:
    """The security requirements of a card or a skill: 1.0's ``securityRequirements``
    (``{"schemes": {name: {"list": [scope]}}}``) where given, else 0.3's ``security``
    (``{name: [scope]}``)."""
    if not is_object(raw):
        return []
    items = raw.get("securityRequirements")
    if not is_array(items) or not items:
        items = raw.get("security")
    out: list[Requirement] = []
    for item in items if is_array(items) else []:
        if not is_object(item):
            continue
        schemes = item.get("schemes", item)
        if not is_object(schemes):
            continue
        need: Requirement = {}
        for name, scopes in schemes.items():
            listed = scopes.get("list") if is_object(scopes) else scopes
            need[name] = [str(s) for s in listed] if is_array(listed) else []
        out.append(need)
    return out


class AgentCard(CardRoutes):
    """A card as a peer published it: the raw JSON kept as it was, with readers for what clients need."""

    def __init__(self, raw: dict[str, Any], source: str = "") -> None:
        super().__init__(raw, source)
        self.signatures: CardSignatures | None = None
        """What its signatures came to, once checked (``fetch_card(verify=True)``, ``A2AClient``
        with ``verify`` or ``keys``); None until then."""

    def __repr__(self) -> str:
        return f"AgentCard(name={self.name!r}, source={self.source!r})"

    def to_dict(self) -> dict[str, Any]:
        return dict(self.raw)

    def to_dataframe(self) -> Any:
        """One row per skill (needs pandas)."""
        return to_dataframe(
            [
                {
                    "id": s.get("id"),
                    "name": s.get("name"),
                    "description": s.get("description"),
                    "tags": s.get("tags"),
                }
                for s in self.skills
            ]
        )

    def _repr_html_(self) -> str:
        return card_html(self, validate_card(self))

    @property
    def name(self) -> str:
        return str(self.raw.get("name") or "")

    @property
    def description(self) -> str:
        return str(self.raw.get("description") or "")

    @property
    def version(self) -> str:
        return str(self.raw.get("version") or "")

    @property
    def skills(self) -> list[dict[str, Any]]:
        return [s for s in self.raw.get("skills") or () if is_object(s)]

    def skill(self, skill_id: str | None) -> dict[str, Any] | None:
        """The skill of that id (None: none such, or no id)."""
        return next((s for s in self.skills if skill_id and s.get("id") == skill_id), None)

    def modes(self, skill_id: str | None = None) -> tuple[list[str], list[str]]:
        """``(input modes, output modes)`` a skill takes and gives: its own where it names them,
        else the card's defaults (an empty list: the card says nothing, anything may do)."""
        skill = self.skill(skill_id) or {}

        def of(own: str, default: str) -> list[str]:
            given = skill.get(own)
            if not is_array(given) or not given:
                given = self.raw.get(default)
            return [str(m) for m in given] if is_array(given) else []

        return of("inputModes", "defaultInputModes"), of("outputModes", "defaultOutputModes")

    @property
    def schemes(self) -> dict[str, Scheme]:
        """The security schemes it declares, by name (``securitySchemes``)."""
        raw = self.raw.get("securitySchemes")
        return {str(k): _scheme(str(k), v) for k, v in raw.items()} if is_object(raw) else {}

    def requirements(self, skill_id: str | None = None) -> list[Requirement]:
        """What a call must carry (alternatives, see :data:`Requirement`): the skill's own
        requirements where it names any (A2A 1.0 §4.4.5), else the card's."""
        own = requirements_of(self.skill(skill_id))
        return own or requirements_of(self.raw)

    def security_text(self, skill_id: str | None = None) -> str:
        """:meth:`requirements` in words: ``bearer (http bearer) or apikey (apiKey in header
        X-API-Key)``, ``oauth (oauth2 (clientCredentials)) and mtls (mutualTLS)`` with scopes in
        brackets; "none" when nothing is asked."""
        schemes = self.schemes

        def one(name: str, scopes: list[str]) -> str:
            known = schemes.get(name)
            label = known.label if known is not None else "not declared"
            return f"{name} ({label})" + (f" [{' '.join(scopes)}]" if scopes else "")

        ways = [
            " and ".join(one(n, r[n]) for n in sorted(r))  # a map: its order is no one's
            for r in self.requirements(skill_id)
        ]
        return " or ".join(w for w in ways if w) or "none"

    @property
    def provider(self) -> dict[str, str]:
        """``{organization, url}`` of who provides the agent (empty: not said)."""
        raw = self.raw.get("provider")
        return {str(k): str(v) for k, v in raw.items()} if is_object(raw) else {}

    @property
    def extensions(self) -> list[dict[str, Any]]:
        """The extensions it declares (``capabilities.extensions``: uri, description, required,
        params)."""
        caps = self.raw.get("capabilities")
        found = caps.get("extensions") if is_object(caps) else None
        return [x for x in found if is_object(x)] if is_array(found) else []

    @property
    def streaming(self) -> bool:
        return self._capability("streaming")

    @property
    def push_notifications(self) -> bool:
        return self._capability("pushNotifications")

    @property
    def extended(self) -> bool:
        """Whether the agent declares an extended card for authenticated callers (1.0's
        ``capabilities.extendedAgentCard``, 0.3's ``supportsAuthenticatedExtendedCard``)."""
        return (
            self._capability("extendedAgentCard")
            or self.raw.get("supportsAuthenticatedExtendedCard") is True
        )

    def _capability(self, name: str) -> bool:
        caps = self.raw.get("capabilities")
        return bool(is_object(caps) and caps.get(name) is True)

    def tenant(self, binding: Binding, dialect: str) -> str:
        """The ``tenant`` of the interface :meth:`route` takes for ``binding`` in ``dialect``: what
        a client sends in every call there (A2A 1.0 §8.3.2); "" when it names none (0.3 has none)."""
        found = self.interface("1", binding) if dialect == "1.0" else None
        tenant = found.get("tenant") if found is not None else None
        return tenant if isinstance(tenant, str) else ""

    def choose(self) -> tuple[str, str, str]:
        """``(dialect, endpoint, reason)`` of :meth:`route` with the binding left to the card."""
        dialect, endpoint, reason, _ = self.route()
        return dialect, endpoint, reason


def card_html(card: AgentCard, report: CardReport | None = None) -> str:
    """A card as HTML: name, endpoint and dialect, skills, the verdict and diagnostics, the raw card."""
    raw = card.raw
    parts = [f"<h4 style='margin:0'>{e(card.name)} <small>{e(card.version)}</small></h4>"]
    if card.description:
        parts.append(f"<p>{e(card.description)}</p>")
    dialect, endpoint, reason = card.choose()
    parts.append(
        f"<p><b>endpoint</b> <code>{e(endpoint)}</code> — speaks {e(dialect)} ({e(reason)}); "
        f"streaming {'yes' if card.streaming else 'no'}</p>"
    )
    if card.signatures is not None:
        colour = {"valid": OK, "invalid": ERR}.get(card.signatures.state, MUTED)
        parts.append(
            f"<p><b>signature</b> <span style='color:{colour}'>{e(card.signatures.summary)}</span></p>"
        )
    if is_object(raw.get("provider")):
        parts.append(f"<p><b>provider</b> {e(raw['provider'].get('organization', ''))}</p>")
    skills = "".join(
        f"<tr><td><code>{e(s.get('id'))}</code></td><td style='text-align:left'>{e(s.get('description', ''))}</td>"
        f"<td>{e(', '.join(map(str, s.get('tags') or [])))}</td></tr>"
        for s in card.skills
    )
    parts.append(f"<table><tr><th>skill</th><th>description</th><th>tags</th></tr>{skills}</table>")
    if report is not None:
        parts.append(f"<p><b>verdict</b> {e(report.summary)}</p><ul>")
        parts += [f"<li>{e(line)}: {e(what)}</li>" for line, what in report.verdict.items()]
        parts.append("</ul>")
        if report.diagnostics:
            colors = {"error": ERR, "warning": WARN, "info": MUTED}
            parts.append(
                "<table><tr><th>level</th><th>path</th><th>message</th></tr>"
                + "".join(
                    f"<tr><td style='color:{colors.get(d.level, MUTED)}'>{e(d.level)}</td><td><code>{e(d.path)}</code>"
                    f"</td><td style='text-align:left'>{e(d.message)}</td></tr>"
                    for d in report.diagnostics
                )
                + "</table>"
            )
    parts.append(
        f"<details><summary>raw card</summary><pre>{e(json.dumps(raw, indent=2))}</pre></details>"
    )
    return "<div class='toolnexus-card'>" + "".join(parts) + "</div>"
