"""Agent cards as peers publish them: read, validated, routed (the card we serve is built in
:mod:`toolnexus.serve.card`)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

from .._json import is_array, is_object
from ..display import ERR, MUTED, OK, WARN, e, to_dataframe
from ..errors import PeerError
from . import grpc_binding
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


class AgentCard:
    """A card as a peer published it: the raw JSON kept as it was, with readers for what clients need."""

    def __init__(self, raw: dict[str, Any], source: str = "") -> None:
        self.raw = raw
        self.source = source
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

    @property
    def interfaces(self) -> list[dict[str, Any]]:
        return [i for i in self.raw.get("supportedInterfaces") or () if is_object(i)]

    def interface(self, major: str, binding: Binding = Binding.JSONRPC) -> dict[str, Any] | None:
        for i in self.interfaces:
            named = Binding.named(i.get("protocolBinding", "JSONRPC"))
            version = str(i.get("protocolVersion") or "")
            if named == binding and (
                version.split(".")[0] == major or (major == "1" and not version)
            ):
                return i
        return None

    def jsonrpc_interface(self, major: str) -> dict[str, Any] | None:
        return self.interface(major)

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

    def _v03_at(self, binding: Binding) -> str | None:
        """The URL (gRPC: ``host:port``) of a 0.3 interface of ``binding``: listed in
        ``supportedInterfaces``, or a 0.3 card's ``url`` when its ``preferredTransport`` is it."""
        listed = self.interface("0", binding)
        if listed is not None and listed.get("url"):
            return str(listed["url"])
        url = self.raw.get("url")
        if Binding.named(self.raw.get("preferredTransport")) is binding and isinstance(url, str):
            return url or None
        return None

    def route(
        self, binding: Binding | str | None = None, dialect: str | None = None
    ) -> tuple[str, str, str, Binding]:
        """``(dialect, endpoint, reason, binding)``: the way the 1.x SDK chooses (a JSONRPC
        interface of version 1.x, or without a version, means 1.0; otherwise 0.3 at ``url``),
        HTTP+JSON 1.0 when the card offers only that, gRPC 1.0 when it offers only gRPC, or the
        binding asked for (``"HTTP+JSON"``, ``"GRPC"``; with ``dialect="0.3"``, 0.3's). A 0.3 card
        whose ``preferredTransport`` is HTTP+JSON or GRPC is spoken to over that binding in 0.3."""
        if binding is not None:
            asked = Binding.named(binding)
            if asked is None:
                raise ValueError(f"no such binding: {binding!r} (JSONRPC, HTTP+JSON or GRPC)")
            binding = asked
        if binding is Binding.GRPC:
            return self._grpc_route(dialect)
        if binding is Binding.HTTP_JSON:
            return self._rest_route(dialect)
        return self._card_route(free=binding is None)

    def _grpc_route(self, dialect: str | None) -> tuple[str, str, str, Binding]:
        """:meth:`route` with gRPC asked for: 1.x's interface, else 0.3's, else an error."""
        grpc = self.interface("1", Binding.GRPC)
        if dialect != "0.3" and grpc is not None and grpc.get("url"):
            why = "gRPC asked for; the card lists it for protocol 1.x"
            return "1.0", str(grpc["url"]), why, Binding.GRPC
        grpc_v03 = self._v03_at(Binding.GRPC)
        if dialect in (None, "0.3") and grpc_v03:
            why = "gRPC asked for; the card lists it for protocol 0.3"
            return "0.3", grpc_v03, why, Binding.GRPC
        which = f" for protocol {dialect}" if dialect else ""
        raise PeerError(
            f"gRPC asked for, but the card lists no gRPC interface{which} (its host:port is needed)"
        )

    def _rest_route(self, dialect: str | None) -> tuple[str, str, str, Binding]:
        """:meth:`route` with HTTP+JSON asked for: the interface listed for the dialect, else the
        card's address (1.x: its JSONRPC interface's)."""
        if dialect == "0.3":
            url = self._v03_at(Binding.HTTP_JSON)
            if url:
                return (
                    "0.3",
                    url,
                    "0.3 over HTTP+JSON asked for; the card lists it",
                    Binding.HTTP_JSON,
                )
            why = "0.3 over HTTP+JSON asked for; the card lists none, trying its address"
            return "0.3", self._base(), why, Binding.HTTP_JSON
        rest = self.interface("1", Binding.HTTP_JSON)
        if rest is not None and rest.get("url"):
            why = "HTTP+JSON asked for; the card lists it for protocol 1.x"
            return "1.0", str(rest["url"]), why, Binding.HTTP_JSON
        v1 = self.jsonrpc_interface("1")
        base = str(v1["url"]) if v1 is not None and v1.get("url") else self._base()
        why = "HTTP+JSON asked for; the card lists no such interface, trying its address"
        return "1.0", base, why, Binding.HTTP_JSON

    def _card_route(self, free: bool) -> tuple[str, str, str, Binding]:
        """:meth:`route` with JSONRPC asked for or (``free``) nothing: JSONRPC where the card lists
        it; when ``free``, the one other binding a card offers alone; else its url or address."""
        for version, dialect, why in (
            ("1", "1.0", "the card lists a JSONRPC interface for protocol 1.x"),
            ("0", "0.3", "the card's JSONRPC interfaces are all 0.3"),
        ):
            listed = self.jsonrpc_interface(version)
            if listed is not None and listed.get("url"):
                return dialect, str(listed["url"]), why, Binding.JSONRPC
        alone = self._offered_alone() if free else None
        if alone is not None:
            return alone
        url = self.raw.get("url")
        if isinstance(url, str) and url:
            reason = f"the card has only a top-level url (protocolVersion {self.raw.get('protocolVersion')!r})"
            return "0.3", url, reason, Binding.JSONRPC
        return (
            "0.3",
            self._base(),
            "the card names no endpoint; using the address it was fetched from",
            Binding.JSONRPC,
        )

    def _offered_alone(self) -> tuple[str, str, str, Binding] | None:
        """The route to a card listing no JSONRPC interface that offers HTTP+JSON (1.x, then 0.3)
        or gRPC (1.x, then 0.3) and nothing over JSONRPC; None when it offers JSONRPC."""
        rest = self.interface("1", Binding.HTTP_JSON)
        if rest is not None and rest.get("url"):
            why = "the card offers HTTP+JSON (protocol 1.x) and no JSONRPC"
            return "1.0", str(rest["url"]), why, Binding.HTTP_JSON
        rest_v03 = self._v03_at(Binding.HTTP_JSON)
        additional = [
            Binding.named(i.get("transport"))
            for i in self.raw.get("additionalInterfaces") or ()
            if is_object(i)
        ]
        if rest_v03 and Binding.JSONRPC not in additional and self.jsonrpc_interface("0") is None:
            why = "the card offers 0.3 over HTTP+JSON and no JSONRPC"
            return "0.3", rest_v03, why, Binding.HTTP_JSON
        http_offered = any(
            Binding.named(i.get("protocolBinding", "JSONRPC"))
            in (Binding.JSONRPC, Binding.HTTP_JSON)
            for i in self.interfaces
        )
        if http_offered:
            return None
        grpc = self.interface("1", Binding.GRPC)
        if grpc is not None and grpc.get("url") and not self.raw.get("url"):
            why = "the card offers gRPC (protocol 1.x) only; the card lists it for protocol 1.x"
            return "1.0", str(grpc["url"]), why, Binding.GRPC
        grpc_v03 = self._v03_at(Binding.GRPC)
        if (
            grpc_v03
            and Binding.named(self.raw.get("preferredTransport") or "JSONRPC") is Binding.GRPC
            and Binding.JSONRPC not in additional
        ):
            return "0.3", grpc_v03, "the card offers 0.3 over gRPC and no JSONRPC", Binding.GRPC
        return None

    def _base(self) -> str:
        return (self.source.split("/.well-known/")[0] if self.source else "") + "/"


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


def validate_card(card: AgentCard | dict[str, Any]) -> CardReport:
    """Check a card against both schema lines and say which dialect each official client will use."""
    raw = card.raw if isinstance(card, AgentCard) else card
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
    parsed = AgentCard(raw) if not isinstance(card, AgentCard) else card
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


def _check_host(card: AgentCard, add: Add) -> None:
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


def elsewhere(endpoint: str, named: str, binding: Binding) -> bool:
    """Whether calls to ``endpoint`` over ``binding`` reach another host than the URL ``named``
    (where credentials may go): another origin over HTTP; over gRPC, which has a port of its own,
    another host."""
    if binding is Binding.GRPC:
        return origin(named)[1] != grpc_binding.host_of(endpoint)
    return origin(endpoint) != origin(named)


def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of ``url``, the scheme's default port filled in: two URLs of one
    origin reach the same server (``http://h/`` and ``http://h:80/`` are one)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # not a valid port: the same origin as nothing else
        return scheme, (parts.hostname or "").lower(), -1
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


def origin_text(url: str) -> str:
    scheme, host, port = origin(url)
    return f"{scheme}://{host}:{port}"


def _verdict(card: AgentCard, diags: list[Diagnostic]) -> tuple[dict[str, str], str]:
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
