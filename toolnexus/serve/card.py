"""The card this agent serves, in one place: built from the config (both SDK lines' layouts in one
document), signed (with ``A2AConfig.signing_key``: the key set it names is served here too), cached,
tagged (ETag, Last-Modified, Cache-Control) and answered at the well-known paths.

The card is built on its first GET (the gRPC target and the bound address are known by then) and
kept: it changes only when the served toolkit does, which means a new server.
"""

from __future__ import annotations

import email.utils
import hashlib
import logging
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import _json
from .._json import is_mapping
from ..errors import InternalError
from ..protocol.card import CARD_PATH, LEGACY_CARD_PATH, PROTOCOL_VERSION
from ..protocol.signing import JWKS_PATH
from ..skills import SkillDef
from .config import A2AConfig, Auth, Provider

__all__ = ["ServedCard", "build_card", "CARD_MAX_AGE"]

log = logging.getLogger("toolnexus.serve")

CARD_MAX_AGE = 60
"""Seconds a client or cache may keep the card without asking again (``Cache-Control: max-age``);
after that a conditional GET (ETag, Last-Modified) costs a 304. The card changes only when the
served toolkit does, which means a new server."""


class ServedCard:
    """The card of one served agent, as an ASGI app answering ``GET`` and ``HEAD`` (the A2A
    endpoint mounts it at ``CARD_PATH`` and ``LEGACY_CARD_PATH``, and calls it ahead of routing)."""

    def __init__(
        self,
        config: A2AConfig,
        skills: Sequence[SkillDef],
        base_url: Callable[[], str],
        push: bool,
        extended_skills: Sequence[SkillDef] = (),
        needs: Mapping[str, Sequence[Mapping[str, Sequence[str]]]] | None = None,
    ) -> None:
        self.config = config
        self.needs = dict(needs or {})
        """Each skill's security requirements, by name, as its entry lists them."""
        self.skills = list(skills)
        self.extended_skills = list(extended_skills)
        """The skills only the extended card lists (``A2AConfig.extended_skills``)."""
        self._base_url = base_url
        self.push = push
        self.grpc_target: str | None = None
        """``host:port`` of the gRPC service, when one is served (set before the first GET);
        ``https://host:port`` when it is served over TLS."""
        self._answer: tuple[bytes, str, int] | None = None  # body, ETag, first served (s)
        self._headers: list[tuple[bytes, bytes]] = []
        self._jwks = b""

    @property
    def paths(self) -> tuple[str, ...]:
        """Where it answers: the card's two well-known paths, and the key set's when it signs."""
        return (CARD_PATH, LEGACY_CARD_PATH, *((JWKS_PATH,) if self.config.signer else ()))

    @property
    def has_extended(self) -> bool:
        """Whether this agent publishes an extended card (and its card says so)."""
        return self.config.publishes_extended

    def extended(self, headers: Mapping[str, str]) -> dict[str, Any]:
        """The extended card (GetExtendedAgentCard) for the caller whose request had ``headers``
        (lower-case names; gRPC: its metadata): the card with the extended skills too, then, when
        ``A2AConfig.extended_card`` is a function, what it makes of that for this caller.

        Raises:
            InternalError: the function failed, or gave something that is not a card object (said
                in the server log only).
        """
        card = self.document(extended=True)
        made = self.config.extended_card
        if not callable(made):
            return card
        try:
            mine = made(card, dict(headers))
        except Exception:
            log.exception("A2AConfig.extended_card failed")
            raise InternalError() from None
        if not is_mapping(mine):
            log.error("A2AConfig.extended_card returned %s, not a card object", type(mine).__name__)
            raise InternalError()
        return dict(mine)

    def document(self, extended: bool = False) -> dict[str, Any]:
        """The card as JSON data, built from the config (``extended``: the extended card's)."""
        return build_card(
            self.config,
            base_url=self._base_url(),
            skills=self.skills,
            push_notifications=self.push,
            grpc_target=self.grpc_target,
            extended_skills=self.extended_skills if extended else (),
            needs=self.needs,
        )

    def answer(
        self, if_none_match: str, if_modified_since: str = ""
    ) -> tuple[int, list[tuple[bytes, bytes]], bytes]:
        """Status, raw headers and body of a card GET: cacheable for ``CARD_MAX_AGE`` seconds, with
        an ETag and a Last-Modified (when this server first served it); 304 when ``If-None-Match``
        names the ETag or, without one, ``If-Modified-Since`` is not older than the card (RFC 9110
        §13.1). The ETag is of the card without its signature (weak: the same content), so that it
        is the same on every worker and host serving the card, where an ECDSA signature differs
        each time it is made; a 304 leaves a client on the signature it holds, which still covers
        the same card."""
        if self._answer is None:
            document = self.document()
            etag = 'W/"' + hashlib.sha256(_json.dumps(document)).hexdigest()[:32] + '"'
            signer = self.config.signer
            if signer is not None:
                jku = self._base_url().rstrip("/") + JWKS_PATH
                document = signer.sign_card(document, jku=jku)
                self._jwks = _json.dumps(signer.jwks)
            body = _json.dumps(document)
            self._answer = (body, etag, int(time.time()))
            self._headers = [
                (b"etag", etag.encode()),
                (b"last-modified", email.utils.formatdate(self._answer[2], usegmt=True).encode()),
                (b"cache-control", f"max-age={CARD_MAX_AGE}".encode()),
            ]
        body, etag, served = self._answer
        if if_none_match:
            if any(
                tag.strip().removeprefix("W/") == etag.removeprefix("W/") or tag.strip() == "*"
                for tag in if_none_match.split(",")
            ):
                return 304, self._headers, b""
        elif if_modified_since and _not_after(served, if_modified_since):
            return 304, self._headers, b""
        return (
            200,
            [
                *self._headers,
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
            body,
        )

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """A GET or HEAD of the card or of its key set (HEAD: the same headers, no body)."""
        if scope["path"] == JWKS_PATH:
            self.answer("")  # the key set is made with the card
            status, headers, body = (
                200,
                [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(self._jwks)).encode()),
                    (b"cache-control", f"max-age={CARD_MAX_AGE}".encode()),
                ],
                self._jwks,
            )
            await send({"type": "http.response.start", "status": status, "headers": headers})
            await send(
                {"type": "http.response.body", "body": body if scope["method"] == "GET" else b""}
            )
            return
        given = {
            k: v.decode("latin-1")
            for k, v in scope["headers"]
            if k in (b"if-none-match", b"if-modified-since")
        }
        status, headers, body = self.answer(
            given.get(b"if-none-match", ""), given.get(b"if-modified-since", "")
        )
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send(
            {"type": "http.response.body", "body": body if scope["method"] == "GET" else b""}
        )


def build_card(
    config: A2AConfig,
    *,
    base_url: str,
    skills: Sequence[SkillDef],
    push_notifications: bool = False,
    grpc_target: str | None = None,
    extended_skills: Sequence[SkillDef] = (),
    needs: Mapping[str, Sequence[Mapping[str, Sequence[str]]]] | None = None,
) -> dict[str, Any]:
    """The hybrid card of the agent whose A2A profile is ``config`` (each card field it holds):
    v0.3 fields (``url``, ``protocolVersion``, ``preferredTransport``) and the 1.x
    ``supportedInterfaces``, so that both official client lines accept it. Its tenants: each 1.0
    interface is listed once for each (its ``tenant`` set, in this order) in place of the one
    without; 0.3 has no tenants. Its extensions: ``capabilities.extensions`` as listed. An
    extended card it publishes is declared (1.0's ``capabilities.extendedAgentCard``, 0.3's
    ``supportsAuthenticatedExtendedCard``); ``extended_skills``: the skills the extended card lists
    after the others; ``needs``: a skill's security requirements by its name (0.3's ``security``
    shape), on its entry in both shapes."""
    c = config
    input_modes, output_modes = c.input_modes, c.output_modes
    extensions = [e.card_entry() for e in c.declared]
    declares_extended = c.publishes_extended
    url = base_url.rstrip("/") + "/"
    supported, additional = _interfaces(url, grpc_target, c.tenants or ())
    card: dict[str, Any] = {
        "name": c.name,
        "description": c.description.strip() or described(skills),
        "version": c.version,
        "protocolVersion": PROTOCOL_VERSION,
        "url": url,
        "preferredTransport": "JSONRPC",
        "supportedInterfaces": supported,
        "additionalInterfaces": additional,
        "capabilities": {
            "streaming": c.streaming,
            "pushNotifications": push_notifications,
            **({"extensions": list(extensions)} if extensions else {}),
            **({"extendedAgentCard": True} if declares_extended else {}),
            # 0.3's (1.0 dropped it; not in the 1.0 view): a task keeps its messages and its
            # current status, not the states it passed through, so no client can read those
            "stateTransitionHistory": False,
        },
        "defaultInputModes": list(input_modes),
        "defaultOutputModes": list(output_modes),
        "skills": [
            _skill(s, input_modes, output_modes, (needs or {}).get(s.name, ()))
            for s in [*skills, *extended_skills]
        ],
    }
    if declares_extended:
        card["supportsAuthenticatedExtendedCard"] = True
    provider = _provider(c.provider)
    if provider:
        card["provider"] = provider
    if c.documentation_url:
        card["documentationUrl"] = c.documentation_url
    if c.icon_url:
        card["iconUrl"] = c.icon_url
    if c.auth:
        card.update(_security(c.auth))
    return card


def _interfaces(
    url: str, grpc_target: str | None, tenants: Sequence[str]
) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """1.0's ``supportedInterfaces`` and 0.3's ``additionalInterfaces``: JSON-RPC and HTTP+JSON
    at ``url``, gRPC at ``grpc_target`` when it is served; each 1.0 interface once per tenant."""
    supported = [
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        {"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "1.0"},
        {"url": url, "protocolBinding": "HTTP+JSON", "protocolVersion": "0.3"},
    ]
    additional = [{"url": url, "transport": "JSONRPC"}, {"url": url, "transport": "HTTP+JSON"}]
    if grpc_target:  # the gRPC services' host:port, as gRPC clients dial it (1.0's and 0.3's;
        # served over TLS: https://host:port)
        supported += [
            {"url": grpc_target, "protocolBinding": "GRPC", "protocolVersion": "1.0"},
            {"url": grpc_target, "protocolBinding": "GRPC", "protocolVersion": "0.3"},
        ]
        additional.append({"url": grpc_target, "transport": "GRPC"})
    if tenants:  # each 1.0 interface once per tenant, in place of the one without
        supported = [
            {**i, "tenant": t} for t in tenants for i in supported if i["protocolVersion"] == "1.0"
        ] + [i for i in supported if i["protocolVersion"] != "1.0"]
    return supported, additional


def described(skills: Sequence[SkillDef]) -> str:
    """A description for an agent that was given none, made from its skills: A2A linters fail a
    card whose description is empty (a2a lint grades it D), and a reader learns nothing from it."""
    if not skills:
        return "An A2A agent served by toolnexus."
    said = [
        f"{s.name} ({s.description.strip().rstrip('.')})" if s.description.strip() else s.name
        for s in skills
    ]
    return (
        f"An A2A agent with {len(skills)} skill{'s' if len(skills) > 1 else ''}: "
        + "; ".join(said)
        + "."
    )


def _skill(
    s: SkillDef,
    input_modes: Sequence[str],
    output_modes: Sequence[str],
    needs: Sequence[Mapping[str, Sequence[str]]] = (),
) -> dict[str, Any]:
    """A skill's card entry; its modes always named, its own or the agent's: optional in the spec,
    but fasta2a's client refuses a card whose skill lacks one; its security requirements, when it
    has some, in 0.3's shape (``security``) and 1.0's (``securityRequirements``)."""
    out: dict[str, Any] = {
        "id": s.name,
        "name": s.name,
        "description": s.description,
        "tags": s.tags or [s.name],
    }
    if s.examples:
        out["examples"] = list(s.examples)
    out["inputModes"] = list(s.input_modes or input_modes)
    out["outputModes"] = list(s.output_modes or output_modes)
    if needs:
        out["security"] = [{k: list(v) for k, v in need.items()} for need in needs]
        out["securityRequirements"] = [
            {"schemes": {k: {"list": list(v)} for k, v in need.items()}} for need in needs
        ]
    return out


def _provider(p: Provider | Mapping[str, str] | None) -> dict[str, str] | None:
    if p is None:
        return None
    if isinstance(p, Provider):
        return {"organization": p.organization, "url": p.url}
    return {"organization": str(p.get("organization", "")), "url": str(p.get("url", ""))}


def _security(auth: Auth) -> dict[str, Any]:
    """``securitySchemes`` and ``security`` for the card, readable by both SDK lines: each scheme in
    0.3's spelling (``type`` and its fields, which a 1.x SDK folds into 1.0's wrapper, as a card
    signature's view does) and in 1.0's (the wrapper, for readers of 1.0's shape alone)."""
    names = auth.names
    scopes = list(auth.scopes)
    return {
        "securitySchemes": dict(zip(names, _schemes(auth), strict=True)),
        "security": [{name: scopes} for name in names],
        "securityRequirements": [{"schemes": {name: {"list": scopes}}} for name in names],
    }


def _schemes(auth: Auth) -> list[dict[str, Any]]:
    """The card entries of ``auth``'s schemes, in the order of ``auth.names``."""
    if auth.scheme in ("bearer", "basic"):
        # 0.3's spelling in 1.0's field too: every SDK's 1.0 view of the card (what a card
        # signature covers) is then the same, whichever of the two it reads the scheme from
        return [
            {
                "type": "http",
                "scheme": auth.scheme,
                "httpAuthSecurityScheme": {"scheme": auth.scheme},
            }
        ]
    if auth.scheme == "apiKey":
        return [
            {
                "type": "apiKey",
                "in": "header",
                "name": auth.header,
                "apiKeySecurityScheme": {"location": "header", "name": auth.header},
            }
        ]
    tokens = auth.tokens
    said = (
        f"JWT access tokens issued by {tokens.issuer} for {tokens.audience}"
        if tokens is not None
        else "a client certificate signed by the agent's certificate authority (TLS)"
    )
    if auth.scheme == "openIdConnect":
        fields = {"description": said, "openIdConnectUrl": auth.openid_url}
        return [{"type": "openIdConnect", **fields, "openIdConnectSecurityScheme": fields}]
    if auth.scheme == "mutualTLS":
        return [
            {"type": "mutualTLS", "description": said, "mtlsSecurityScheme": {"description": said}}
        ]
    # oauth2: one flow a scheme, as 1.0's OAuthFlows holds one (a 0.3 reader takes the fields it
    # knows of the same entry: pkceRequired and deviceCode are 1.0's alone)
    metadata = {"oauth2MetadataUrl": auth.metadata_url} if auth.metadata_url else {}
    out: list[dict[str, Any]] = []
    for flows in [{name: dict(flow)} for name, flow in auth.flows.items()] or [{}]:
        fields = {"description": said, "flows": flows, **metadata}
        out.append({"type": "oauth2", **fields, "oauth2SecurityScheme": fields})
    return out


def _not_after(stamp: int, if_modified_since: str) -> bool:
    """Whether ``stamp`` (seconds) is no later than an HTTP date; False for a date that is not one."""
    try:
        since = email.utils.parsedate_to_datetime(if_modified_since)
    except (TypeError, ValueError, IndexError):
        return False
    return since.tzinfo is not None and stamp <= since.timestamp()
