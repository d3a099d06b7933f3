"""Which of the user's credentials a call carries, picked by the agent's card.

The user says what they hold (:class:`Credentials`: a bearer token, an API key, HTTP basic, an
OAuth 2 grant, a client certificate); the card says what a call must carry (its
``securityRequirements``, 0.3's ``security``; a skill's own before the card's: A2A 1.0 §4.4.5),
as alternatives of schemes. The first alternative whose every scheme the user can fill is the
one used, and only its credentials are sent: an API key in the header its scheme names, a bearer
token (or the OAuth grant's token) as ``Authorization: Bearer``, basic as basic, an OAuth 2 or
OpenID Connect scheme by running the grant (:mod:`toolnexus.client.oauth`), mutual TLS by the
certificate on the connection. A card that asks for nothing gets what the user gave (a server
need not declare what it checks); a card whose requirements none of it fills is refused before
anything is sent, saying what it asks for. Credentials go only to the host the user named
(``A2AClient.credentials_sent``).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from ..errors import MissingExtra, PeerError
from ..protocol.card import AgentCard, Scheme, requirements_of
from ..secrets import basic_authorization
from .oauth import TokenSource

__all__ = ["Credentials", "ClientCertificate", "API_KEY_HEADER"]

API_KEY_HEADER = "X-API-Key"
"""The header an API key goes in when the card names none (it asks for nothing)."""


@dataclass(frozen=True)
class ClientCertificate:
    """A client certificate for mutual TLS, presented on every binding (HTTP and gRPC).

    Attributes:
        cert: the certificate (PEM file; its chain after it).
        key: its private key (PEM file; None: in ``cert``).
        password: the key's password, if it is encrypted (not for gRPC, which reads plain keys).
        ca: the CA bundle (PEM file) the server's certificate must chain to; None: the system's.
    """

    cert: str | Path
    key: str | Path | None = None
    password: str | None = field(default=None, repr=False)
    ca: str | Path | None = None

    def ssl_context(self) -> ssl.SSLContext:
        """A TLS context that verifies the server (by :attr:`ca`) and presents the certificate."""
        try:
            context = ssl.create_default_context(cafile=self.ca)
            context.load_cert_chain(self.cert, self.key, self.password)
        except (OSError, ssl.SSLError) as exc:
            raise ValueError(f"the client certificate {self.cert} cannot be used: {exc}") from None
        return context

    def grpc_credentials(self) -> Any:
        """gRPC's channel credentials: the same CA, certificate and key (grpcio's own TLS)."""
        if self.password:
            raise ValueError("gRPC reads only a private key that is not encrypted")
        try:
            import grpc  # noqa: PLC0415  # an optional extra: toolnexus[grpc]
        except ImportError:
            raise MissingExtra("gRPC needs pip install 'toolnexus[grpc]'") from None
        read = lambda path: Path(path).read_bytes() if path is not None else None  # noqa: E731
        try:
            return grpc.ssl_channel_credentials(
                root_certificates=read(self.ca),
                private_key=read(self.key or self.cert),
                certificate_chain=read(self.cert),
            )
        except OSError as exc:
            raise ValueError(f"the client certificate cannot be read: {exc}") from None


@dataclass
class Credentials:
    """What the user holds for an agent; see the module's doc for how a call's are picked."""

    bearer: str | None = field(default=None, repr=False)
    api_key: str | None = field(default=None, repr=False)
    basic: tuple[str, str] | None = field(default=None, repr=False)
    tokens: TokenSource | None = None
    certificate: ClientCertificate | None = None

    @property
    def given(self) -> list[str]:
        """What was given, in words (never a secret)."""
        named = {
            "a bearer token": self.bearer,
            "an API key": self.api_key,
            "HTTP basic": self.basic,
            f"OAuth 2 ({self.tokens.grant.flow})" if self.tokens else "": self.tokens,
            "a client certificate": self.certificate,
        }
        return [what for what, value in named.items() if value is not None and what]

    def fills(self, scheme: Scheme) -> bool:
        """Whether what was given fills ``scheme``."""
        kind = scheme.kind
        if kind == "http":
            said = str(scheme.fields.get("scheme") or "").lower()
            if said == "bearer":
                return self.bearer is not None or self.tokens is not None
            return said == "basic" and self.basic is not None
        if kind == "apiKey":
            return self.api_key is not None and scheme.location == "header"
        if kind == "oauth2":
            flows = scheme.fields.get("flows")
            grant = self.tokens.grant if self.tokens is not None else None
            return grant is not None and (
                (isinstance(flows, dict) and grant.flow in flows)
                or grant.token_url is not None  # the user named where: any flow of theirs
            )
        if kind == "openIdConnect":
            return self.tokens is not None
        return kind == "mutualTLS" and self.certificate is not None

    def choose(self, card: AgentCard, skill: str | None = None) -> list[Scheme] | None:
        """The schemes a call (of ``skill``) carries: the first of the card's alternatives the
        credentials fill; None: the card asks for nothing (then everything given is sent).

        Raises:
            PeerError: credentials were given, and none of the alternatives is filled by them.
        """
        ways = card.requirements(skill)
        if not ways:
            return None
        schemes = card.schemes
        for way in ways:
            known = [schemes.get(name) for name in way]
            if all(s is not None and self.fills(s) for s in known):
                return [s for s in known if s is not None]
        if not self.given:
            return []  # nothing to choose from: the call goes as the caller made it
        who = f"the skill {skill}" if requirements_of(card.skill(skill)) else "the agent"
        raise PeerError(
            f"{who} asks on its card for {card.security_text(skill)}; what you gave "
            f"({', '.join(self.given)}) fills none of these"
        )

    async def headers(
        self,
        chosen: list[Scheme] | None,
        http: httpx.AsyncClient,
        card: Mapping[str, Any],
        named: str,
    ) -> dict[str, str]:
        """The headers that carry the ``chosen`` schemes (None: everything given)."""
        out: dict[str, str] = {}
        if chosen is None:
            if self.api_key is not None:
                out[API_KEY_HEADER] = self.api_key
            if self.basic is not None:
                out["authorization"] = basic_authorization(*self.basic)
            if self.bearer is not None:
                out["authorization"] = f"Bearer {self.bearer}"
            if self.tokens is not None:
                out["authorization"] = await self.tokens.header(http, card, named)
            return out
        for scheme in chosen:
            said = str(scheme.fields.get("scheme") or "").lower()
            if scheme.kind == "apiKey" and self.api_key is not None:
                out[str(scheme.fields.get("name") or API_KEY_HEADER)] = self.api_key
            elif scheme.kind == "http" and said == "basic" and self.basic is not None:
                out["authorization"] = basic_authorization(*self.basic)
            elif scheme.kind == "http" and self.bearer is not None:
                out["authorization"] = f"Bearer {self.bearer}"
            elif scheme.kind in ("http", "oauth2", "openIdConnect") and self.tokens is not None:
                which = scheme.name if scheme.kind != "http" else None
                out["authorization"] = await self.tokens.header(http, card, named, which)
        return out
