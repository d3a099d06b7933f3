"""What a served toolkit can be told: the A2A profile, the MCP profile and auth."""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
import ssl
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal, cast

from .._json import is_mapping
from ..builtins import COMMAND_TOOLS
from ..errors import ConfigError
from ..http.server import connections_for, fd_limit
from ..protocol.extensions import Extension
from ..protocol.signing import KeyError_, SigningKey
from ..secrets import read_basic
from ..skills import SkillDef, requirements
from ..tools import Tool
from .tokens import AccessTokens, TokenRefused

__all__ = [
    "A2AConfig",
    "MCPServeConfig",
    "Auth",
    "AuthRefused",
    "Caller",
    "MutualTLS",
    "OAUTH_FLOWS",
    "Provider",
    "connection_limit",
]

log = logging.getLogger("toolnexus.serve.mcp")
_refused = logging.getLogger("toolnexus.serve")


@dataclass
class Provider:
    organization: str
    url: str = ""


@dataclass(frozen=True)
class Caller:
    """Who a request comes from, as the agent's auth read it: its task space (``owner``: None when
    all callers share one) and what it was granted (a token's scopes; none for a shared secret)."""

    owner: str | None = None
    scopes: frozenset[str] = frozenset()


class AuthRefused(Exception):
    """A request the agent's auth refuses: ``status`` 401 (no credential it takes) or 403 (one
    without the access asked for), the words the caller gets, and the headers (the challenge)."""

    def __init__(self, status: int, text: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(text)
        self.status = status
        self.headers = dict(headers or {})


OAUTH_FLOWS: dict[str, tuple[str, ...]] = {
    "authorizationCode": ("authorizationUrl", "tokenUrl"),
    "clientCredentials": ("tokenUrl",),
    "deviceCode": ("deviceAuthorizationUrl", "tokenUrl"),
}
"""The OAuth 2 flows a card may name for a client to get a token (A2A 1.0 ``OAuthFlows``; the
implicit and password flows are deprecated there and not offered), and the URLs each needs."""
_FLOW_FIELDS = frozenset({"authorizationUrl", "tokenUrl", "deviceAuthorizationUrl", "refreshUrl"})


@dataclass(frozen=True)
class MutualTLS:
    """Serving over TLS that requires a client certificate: this server's certificate chain and
    key, and the certificate authorities a client's certificate must be signed by (PEM files)."""

    ca: str
    cert: str
    key: str

    def __post_init__(self) -> None:
        for name in ("ca", "cert", "key"):
            path = getattr(self, name)
            if not isinstance(path, str) or not Path(path).is_file():
                raise ConfigError(f"mutualTLS.{name}: {path!r} is not a readable PEM file")

    def uvicorn(self) -> dict[str, Any]:
        """uvicorn's options that serve HTTP so."""
        return {
            "ssl_certfile": self.cert,
            "ssl_keyfile": self.key,
            "ssl_ca_certs": self.ca,
            "ssl_cert_reqs": ssl.CERT_REQUIRED,
        }

    def pem(self) -> tuple[bytes, bytes, bytes]:
        """``(ca, cert, key)`` as read, for gRPC's server credentials."""
        return (
            Path(self.ca).read_bytes(),
            Path(self.cert).read_bytes(),
            Path(self.key).read_bytes(),
        )


@dataclass
class Auth:
    """Opt-in auth for every binding and MCP (the card stays public; it says what to present).

    Use :meth:`bearer` (``Authorization: Bearer <token>``), :meth:`api_key` (a header holding the
    key) or :meth:`basic` (HTTP basic, ``user:password`` pairs): with more than one secret, each is
    its own caller: a task belongs to the secret that created it, and other callers get "task not
    found" for it and never see it listed. :meth:`oauth2` and :meth:`openid` serve the agent as an
    OAuth 2 resource server: JWT access tokens checked against the issuer's keys
    (:class:`~toolnexus.serve.tokens.AccessTokens`), each subject its own caller, the card naming
    where to get a token. :meth:`mutual_tls` serves over TLS and takes only callers presenting a
    certificate a CA signed. A request without credentials gets 401, one with wrong credentials 403
    (an invalid access token: 401, RFC 6750).
    """

    scheme: Literal["bearer", "apiKey", "basic", "oauth2", "openIdConnect", "mutualTLS"]
    secrets: tuple[str, ...] = ()
    header: str = "authorization"
    tokens: AccessTokens | None = None
    """oauth2, openIdConnect: how access tokens are checked."""
    flows: Mapping[str, Mapping[str, Any]] = field(default_factory=lambda: dict[str, Any]())
    """oauth2: the flows the card offers, in the spec's shape (:data:`OAUTH_FLOWS`)."""
    metadata_url: str | None = None
    """oauth2: the authorization server's metadata (RFC 8414), ``oauth2MetadataUrl`` on the card."""
    openid_url: str | None = None
    """openIdConnect: the discovery document's URL, ``openIdConnectUrl`` on the card."""
    scopes: tuple[str, ...] = ()
    """oauth2, openIdConnect: the scopes every call needs (a skill may need more)."""
    tls: MutualTLS | None = None
    """mutualTLS: the certificates HTTP and gRPC are served with."""

    @classmethod
    def bearer(cls, *tokens: str) -> Auth:
        if not tokens or not all(tokens):
            raise ConfigError("Auth.bearer needs at least one non-empty token")
        return cls("bearer", tuple(tokens))

    @classmethod
    def api_key(cls, *keys: str, header: str = "x-api-key") -> Auth:
        if not keys or not all(keys):
            raise ConfigError("Auth.api_key needs at least one non-empty key")
        return cls("apiKey", tuple(keys), header.lower())

    @classmethod
    def basic(cls, *credentials: str) -> Auth:
        """HTTP basic (RFC 7617): each credential ``user:password`` (the user without a colon)."""
        if not credentials or not all(c and ":" in c and c.index(":") for c in credentials):
            raise ConfigError("Auth.basic needs at least one 'user:password'")
        return cls("basic", tuple(credentials))

    @classmethod
    def oauth2(
        cls,
        *,
        issuer: str,
        audience: str,
        jwks_url: str,
        flows: Mapping[str, Mapping[str, Any]] | None = None,
        metadata_url: str | None = None,
        scopes: Sequence[str] = (),
        algorithms: Sequence[str] = ("RS256", "ES256", "EdDSA"),
    ) -> Auth:
        """An OAuth 2 resource server: JWT access tokens from ``issuer`` for ``audience``, checked
        with the keys at ``jwks_url``. ``flows``: how a client gets one, on the card (the spec's
        ``OAuthFlows`` entries by name: ``authorizationCode`` with ``authorizationUrl``,
        ``tokenUrl``, ``scopes`` and ``pkceRequired``; ``clientCredentials``; ``deviceCode`` with
        ``deviceAuthorizationUrl``); ``metadata_url``: the server's RFC 8414 metadata;
        ``scopes``: those every call needs."""
        return cls(
            "oauth2",
            tokens=_tokens(issuer, audience, jwks_url, None, algorithms),
            flows=_flows(flows or {}),
            metadata_url=_url(metadata_url, "oauth2.metadataUrl") if metadata_url else None,
            scopes=_names(scopes, "oauth2.scopes"),
        )

    @classmethod
    def openid(
        cls,
        *,
        url: str,
        issuer: str,
        audience: str,
        jwks_url: str | None = None,
        scopes: Sequence[str] = (),
        algorithms: Sequence[str] = ("RS256", "ES256", "EdDSA"),
    ) -> Auth:
        """OpenID Connect: access tokens (JWT) from ``issuer`` for ``audience``; the card names the
        discovery document ``url``, whose ``jwks_uri`` holds the keys (or ``jwks_url``)."""
        return cls(
            "openIdConnect",
            tokens=_tokens(issuer, audience, jwks_url, _url(url, "openIdConnect.url"), algorithms),
            openid_url=url,
            scopes=_names(scopes, "openIdConnect.scopes"),
        )

    @classmethod
    def mutual_tls(
        cls,
        *,
        ca: str | os.PathLike[str],
        cert: str | os.PathLike[str],
        key: str | os.PathLike[str],
    ) -> Auth:
        """Mutual TLS: HTTP and gRPC served over TLS with ``cert`` and ``key`` (PEM), taking only
        callers whose certificate ``ca`` (PEM, one CA or several) signed; checked in the TLS
        handshake, before any request (the card too: a caller without a certificate reaches
        nothing). Each certificate is its own caller (its SHA-256 fingerprint: a task belongs to
        the certificate that made it, on every binding)."""
        return cls("mutualTLS", tls=MutualTLS(os.fspath(ca), os.fspath(cert), os.fspath(key)))

    @property
    def names(self) -> tuple[str, ...]:
        """The card's names for this auth's schemes: one, but oauth2 with several flows names one
        scheme per flow (A2A 1.0's ``OAuthFlows`` holds one), ``oauth2-<flow>``."""
        if self.scheme == "oauth2" and len(self.flows) > 1:
            return tuple(f"oauth2-{flow}" for flow in self.flows)
        return (self.scheme,)

    def expand(self, needs: Sequence[Mapping[str, Sequence[str]]]) -> list[dict[str, list[str]]]:
        """Security requirements as the card lists them: a requirement naming this auth's scheme
        (``oauth2``) where the card has one scheme a flow becomes one alternative per flow.

        Raises:
            ConfigError: a requirement names a scheme this agent does not serve.
        """
        out: list[dict[str, list[str]]] = []
        for need in needs:
            alternatives: list[dict[str, list[str]]] = [{}]
            for scheme, scopes in need.items():
                if scheme != self.scheme and scheme not in self.names:
                    raise ConfigError(
                        f"a skill's security names the scheme {scheme!r}; this agent serves "
                        f"{', '.join(dict.fromkeys([self.scheme, *self.names]))}"
                    )
                names = self.names if scheme == self.scheme else (scheme,)
                alternatives = [{**a, n: list(scopes)} for a in alternatives for n in names]
            out += alternatives
        return out

    @staticmethod
    def missing(needs: Sequence[Mapping[str, Sequence[str]]], caller: Caller) -> list[str]:
        """The scopes ``caller`` lacks to meet any of ``needs`` (those of the alternative it
        comes closest to); none when it meets one, or when there are none. An admitted caller
        presented this agent's one scheme: only scopes can be missing."""
        if not needs:
            return []
        lacking = [
            sorted({s for scopes in need.values() for s in scopes} - caller.scopes)
            for need in needs
        ]
        return min(lacking, key=len)

    @classmethod
    def from_config(cls, value: Any) -> Auth | None:
        if value is None or isinstance(value, Auth):
            return value
        if not is_mapping(value):
            raise ConfigError('a2a.auth must be an object such as {"bearer": ["token"]}')
        if "bearer" in value:
            tokens = value["bearer"]
            return cls.bearer(*([tokens] if isinstance(tokens, str) else tokens))
        if "apiKey" in value or "api_key" in value:
            keys = value.get("apiKey", value.get("api_key"))
            return cls.api_key(
                *([keys] if isinstance(keys, str) else keys),
                header=value.get("header", "x-api-key"),
            )
        if "basic" in value:
            pairs = value["basic"]
            return cls.basic(*([pairs] if isinstance(pairs, str) else pairs))
        for key, make, known in (
            ("oauth2", cls.oauth2, _OAUTH2_KEYS),
            ("openIdConnect", cls.openid, _OPENID_KEYS),
            ("mutualTLS", cls.mutual_tls, ("ca", "cert", "key")),
        ):
            if key in value:
                block = value[key]
                if not is_mapping(block):
                    raise ConfigError(f"a2a.auth.{key} must be an object")
                kwargs = _keywords(block, known, f"a2a.auth.{key}")
                try:
                    return make(**kwargs)
                except TypeError:
                    needs = {
                        "oauth2": "issuer, audience and jwksUrl",
                        "openIdConnect": "url, issuer and audience",
                    }.get(key, "ca, cert and key")
                    raise ConfigError(f"a2a.auth.{key} needs {needs}") from None
        raise ConfigError(
            "a2a.auth needs a 'bearer', 'apiKey', 'basic', 'oauth2', 'openIdConnect' or "
            "'mutualTLS' entry"
        )

    def check(self, headers: Mapping[str, str]) -> int | None:
        """None when the request may pass, else the HTTP status to refuse it with (401 or 403); a
        shared secret's schemes only (:meth:`admit` reads every scheme)."""
        return self.identify(headers)[0]

    async def admit(self, headers: Mapping[str, str], certificate: bytes | None = None) -> Caller:
        """The caller a request's headers (lower-case names; gRPC: its metadata) present, or the
        client certificate (DER) its connection presented.

        Raises:
            AuthRefused: none this agent takes (401), or one without the scopes every call needs
                (403).
        """
        if self.tls is not None:  # the handshake took only certificates the CA signed
            # each certificate its own caller, the same on every binding (None: not over TLS)
            if certificate is None:
                return Caller()
            return Caller("cert-" + hashlib.sha256(certificate).hexdigest()[:16])
        if self.tokens is None:
            status, owner = self.identify(headers)
            if status is not None:
                text = "authentication required" if status == 401 else "invalid credentials"
                raise AuthRefused(status, text, self.challenge)
            return Caller(owner)
        kind, _, token = headers.get("authorization", "").partition(" ")
        if kind.lower() != "bearer" or not token.strip():
            raise AuthRefused(401, "authentication required: an access token", self.challenge)
        try:
            granted = await self.tokens.check(token.strip())
        except TokenRefused as exc:
            _refused.info("an access token was refused: %s", exc)
            raise AuthRefused(
                401,
                "invalid access token (expired, for another audience or issuer, or not signed by "
                "the issuer's keys)",
                {"WWW-Authenticate": f'Bearer realm="{REALM}", error="invalid_token"'},
            ) from None
        caller = Caller(self.tokens.owner(granted), granted.scopes)
        missing = [s for s in self.scopes if s not in caller.scopes]
        if missing:
            raise self.insufficient(missing)
        return caller

    def insufficient(self, scopes: Sequence[str], what: str = "this agent") -> AuthRefused:
        """The refusal of a caller whose token lacks ``scopes`` (RFC 6750 ``insufficient_scope``)."""
        needed = " ".join(scopes)
        return AuthRefused(
            403,
            f"insufficient scope: {what} needs {needed}",
            {
                "WWW-Authenticate": f'Bearer realm="{REALM}", error="insufficient_scope", '
                f'scope="{needed}"'
            },
        )

    def identify(self, headers: Mapping[str, str]) -> tuple[int | None, str | None]:
        """``(refusal, owner)``: the HTTP status to refuse the request with (401 or 403), or None;
        and, with more than one secret, who the caller is (a digest of the secret it presented),
        so that each credential sees only its own tasks. One shared secret: owner None."""
        value = headers.get(self.header)
        if not value:
            return 401, None
        if self.scheme == "bearer":
            kind, _, value = value.partition(" ")
            if kind.lower() != "bearer" or not value:
                return 401, None
        elif self.scheme == "basic":
            pair = read_basic(value)
            if pair is None:
                return 401, None
            value = pair
        # basic's password is what was sent, spaces and all (a token has none: its spacing goes)
        given = (value if self.scheme == "basic" else value.strip()).encode()
        matched = None
        for secret in self.secrets:  # compare against every secret, in constant time
            if hmac.compare_digest(given, secret.encode()):
                matched = secret
        if matched is None:
            return 403, None
        if len(self.secrets) == 1:
            return None, None
        return None, "cred-" + hashlib.sha256(matched.encode()).hexdigest()[:16]

    @property
    def challenge(self) -> dict[str, str]:
        """The ``WWW-Authenticate`` a refused request gets (RFC 9110 §11.6.1), by scheme."""
        if self.scheme == "basic":
            return {"WWW-Authenticate": f'Basic realm="{REALM}", charset="UTF-8"'}
        if self.scheme == "bearer":
            return {"WWW-Authenticate": "Bearer"}
        if self.tokens is not None:
            return {"WWW-Authenticate": f'Bearer realm="{REALM}"'}
        return {}

    def __repr__(self) -> str:  # never print a secret
        return f"Auth(scheme={self.scheme!r}, header={self.header!r}, secrets=<{len(self.secrets)} hidden>)"


REALM = "toolnexus"
"""The realm of this agent's challenges."""
_OAUTH2_KEYS = ("issuer", "audience", "jwks_url", "flows", "metadata_url", "scopes", "algorithms")
_OPENID_KEYS = ("url", "issuer", "audience", "jwks_url", "scopes", "algorithms")


def _keywords(block: Mapping[str, Any], known: Sequence[str], where: str) -> dict[str, Any]:
    """A config block's keys (camelCase or snake_case) as keyword arguments, each one known."""
    out: dict[str, Any] = {}
    for key, v in block.items():
        snake = _snake(str(key))
        if snake not in known:
            raise ConfigError(f"{where}.{key} is not a known option ({', '.join(known)})")
        out[snake] = v
    return out


def _snake(key: str) -> str:
    return "".join("_" + c.lower() if c.isupper() else c for c in key)


def _tokens(
    issuer: Any, audience: Any, jwks_url: Any, discovery: str | None, algorithms: Any
) -> AccessTokens:
    for name, value in (("issuer", issuer), ("audience", audience)):
        if not isinstance(value, str) or not value:
            raise ConfigError(f"an OAuth 2 resource server needs its {name} (a string)")
    try:
        return AccessTokens(
            issuer,
            audience,
            _url(jwks_url, "jwksUrl") if jwks_url is not None else None,
            discovery,
            _names(algorithms, "algorithms"),
        )
    except ValueError as exc:
        raise ConfigError(f"access tokens: {exc}") from None


def _url(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.startswith(("https://", "http://")):
        raise ConfigError(f"{where} must be an http(s) URL, got {value!r}")
    return value


def _names(value: Any, where: str) -> tuple[str, ...]:
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise ConfigError(f"{where} must be a list of strings")
    names = tuple(v for v in cast("Sequence[object]", value) if isinstance(v, str) and v)
    if len(names) != len(cast("Sequence[object]", value)):
        raise ConfigError(f"{where} must be a list of non-empty strings")
    return names


def _flows(flows: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The flows a card offers, checked: known names, each with the URLs it needs, scopes a map of
    name to description; in the spec's camelCase."""
    out: dict[str, dict[str, Any]] = {}
    for name, flow in flows.items():
        if name not in OAUTH_FLOWS:
            raise ConfigError(
                f"oauth2.flows.{name} is not a flow offered ({', '.join(OAUTH_FLOWS)})"
            )
        if not is_mapping(flow):
            raise ConfigError(f"oauth2.flows.{name} must be an object")
        entry: dict[str, Any] = {}
        for key, value in flow.items():
            key = str(key)
            camel = re.sub(r"_([a-z])", lambda m: m.group(1).upper(), key)
            if camel in _FLOW_FIELDS:
                entry[camel] = _url(value, f"oauth2.flows.{name}.{key}")
            elif camel == "scopes":
                if not is_mapping(value) or not all(isinstance(v, str) for v in value.values()):
                    raise ConfigError(
                        f"oauth2.flows.{name}.scopes must map each scope to its description"
                    )
                entry["scopes"] = dict(value)
            elif camel == "pkceRequired" and name == "authorizationCode":
                entry["pkceRequired"] = bool(value)
            else:
                raise ConfigError(f"oauth2.flows.{name}.{key} is not a field of this flow")
        missing = [k for k in OAUTH_FLOWS[name] if k not in entry]
        if missing:
            raise ConfigError(f"oauth2.flows.{name} needs {', '.join(missing)}")
        entry.setdefault("scopes", {})
        if name == "authorizationCode":
            entry.setdefault("pkceRequired", True)
        out[name] = entry
    return out


@dataclass
class A2AConfig:
    """The A2A profile of a served toolkit.

    Attributes:
        name: the card's name.
        description: the card's description; empty: one made from the skills (linters fail a
            card whose description is empty).
        version: the agent's version.
        provider: ``Provider`` or ``{"organization", "url"}``; on the card only when set.
        skills: only these skills are advertised and may be chosen (None: all).
        store: where tasks are kept: a string of one of the kinds in ``toolnexus.stores.KINDS``
            (``toolnexus serve --help`` lists them; the default keeps them in memory), or a
            TaskStore object.
        lease: with a shared store (``toolnexus.stores.Shared``), the seconds a running task stays
            its worker's without a heartbeat (renewed every third of it, on a timer and a
            connection of its own); a task whose worker died is failed once it lapses, and so is
            one whose worker got no turn of its loop for that long (a host starved of CPU): give
            such hosts a longer lease.
        keep_tasks, keep_for: the memory store's retention: at most this many finished tasks
            (100,000 by default; a short one costs about 1 KB), none finished more than this many
            seconds ago (no limit by default); the oldest finished go first, a task in flight never.
            A store that keeps ended tasks (``toolnexus.stores.KeepsEnded``) keeps everything.
        auth: an :class:`Auth`; None for an open agent.
        blocking_timeout: the seconds a blocking send waits before it returns the current state
            (it returns within 0.05 s after: waits share one timer per 50 ms).
        max_body: the largest request body accepted, in bytes.
        streaming: advertise and serve SSE streaming.
        input_modes, output_modes: the card's default modes, media types (``text/plain``,
            ``image/*``): a file part of a type not among ``input_modes`` is refused (-32005);
            ``output_modes`` are what its replies and its tools' files and data may be.
        max_file: the most bytes one file a caller sends may hold (inline, or fetched by URL);
            inline files are bounded by ``max_body`` as well.
        fetch_files: fetch the files callers give by URL into the task's folder, under the rule
            webhooks follow (``push_private_ok`` included); False: the URL is named to the model,
            nothing is fetched.
        files_dir: where each task's folder of its caller's files goes while it runs (None: a
            temporary folder, removed when the server stops); at start, the task folders there
            whose tasks are over (a crash left them) are removed.
        documentation_url, icon_url: optional card fields.
        allowed_hosts, allowed_origins: beyond the bound address, for the Host/Origin check
            (DNS-rebinding protection) of every route; see ``toolnexus.http.guard``.
        push_notifications: accept push-notification configs and deliver them (the card says so).
        push_private_ok: allow webhooks on loopback and private addresses; None: only when the
            agent is bound to loopback (an agent reachable from elsewhere must not be a way into
            the network behind it).
        public_url: where callers reach the agent when that is not the address it is bound to
            (behind a balancer or a proxy: ``https://agents.example.com``): the URL its card
            gives for every binding. Default: the bound address.
        grpc: also serve the gRPC binding at this address (``"127.0.0.1:0"``, ``":50051"``; the
            host defaults to loopback), listed on the card; needs ``pip install 'toolnexus[grpc]'``.
        signing_key: sign the card with this key (a :class:`~toolnexus.protocol.signing.SigningKey`,
            or the path of a PEM or JWK file holding the private key: EC P-256/384/521, Ed25519 or
            RSA): a JWS over the card's 1.0 view (``alg``, ``kid``, and ``jku`` naming the key set
            published at ``/.well-known/jwks.json``); each push notification then carries a JWT
            signed with it (``X-A2A-Notification-Signature``).
        quirks: answer as a peer from the field does, on purpose, for testing clients against it
            (``["hybrid", "slow=2"]``; the names are :data:`toolnexus.serve.quirks.QUIRKS`). Over
            HTTP only.
        tenants: the tenants served (A2A 1.0 §8.3.2: a request's ``tenant`` field, the
            ``/{tenant}/...`` HTTP+JSON routes, gRPC's field), each its own task space: a
            tenant's tasks (and conversations, push configs) are invisible in another, and in the
            space of requests that name none (still served). The card lists its 1.0 interfaces
            once for each tenant, in this order, and none without; a request naming a tenant not
            listed is refused. None (the default): any tenant is read and checked, and all
            share one task space, as the official SDK serves it.
        tenant_spaces: with ``tenants``, each its own task space (the default); False: the
            tenants listed (and none) share one, as a gateway in front that routes by tenant
            sees it (the client doctor's agent serves so).
        extensions: the extensions this agent supports (A2A §4.6), on its card
            (``capabilities.extensions``): each an :class:`~toolnexus.protocol.extensions.Extension`,
            a URI, or ``{"uri", "description", "required", "params"}``. Those a request asks for
            (``A2A-Extensions``, 0.3's ``X-A2A-Extensions``) are answered as activated in the same
            header; a request that does not ask for a required one is refused with -32008.
        extended_skills: skills listed only on the extended card (GetExtendedAgentCard, for
            authenticated callers), not on the public one; naming them publishes an extended card.
        extended_card: publish an extended card (True; implied by ``extended_skills``), or a
            function ``(card, headers) -> card`` that makes it per caller: given the extended card
            (a dict of its JSON) and the request's headers (lower-case names; gRPC: its metadata),
            it returns the card that caller gets. Needs ``auth``: the extended card is for
            authenticated callers.
        skill_security: each skill's security requirements, by name, as 0.3's ``security`` says
            them (``{"ledger": [{"oauth2": ["ledger:read"]}]}``), in place of its ``SKILL.md``'s
            (``security:`` in its front matter): on its card entry (``securityRequirements``, 0.3's
            ``security``), and checked when a task asks for the skill (a caller without them gets
            "permission denied", and no task's model is offered a skill its caller may not use).
            Needs ``auth``, whose schemes they name.
        direct_replies: answer a send with a ``Message`` when no task is needed (A2A §3.1.1: "MAY
            return a direct Message response for simple interactions"; a hybrid agent in the
            spec's words): a new message whose run completes without asking anything gets the
            reply (its text and files) as a message in its context, no task id; one that asks,
            fails or is not waited for (``returnImmediately``) gets its task, as always. A stream
            is then one message (or the task's last state), not the reply word by word. The run
            is still a task on this side (the TUI, ``on_task``, the caller's own ListTasks).
    """

    name: str = "toolnexus-agent"
    description: str = ""
    version: str = "0.1.0"
    provider: Provider | Mapping[str, str] | None = None
    skills: Sequence[str] | None = None
    store: Any = "memory"
    keep_tasks: int | None = 100_000
    keep_for: float | None = None
    lease: float = 5.0
    auth: Auth | None = None
    blocking_timeout: float = 60.0
    max_body: int = 1024 * 1024
    streaming: bool = True
    input_modes: Sequence[str] = ("text/plain",)
    output_modes: Sequence[str] = ("text/plain",)
    max_file: int = 10 * 1024 * 1024
    fetch_files: bool = False
    files_dir: str | None = None
    documentation_url: str | None = None
    icon_url: str | None = None
    allowed_hosts: Sequence[str] = field(default_factory=tuple)
    allowed_origins: Sequence[str] = field(default_factory=tuple)
    push_notifications: bool = True
    push_private_ok: bool | None = None
    public_url: str | None = None
    grpc: str | None = None
    quirks: Sequence[str] = ()
    tenants: Sequence[str] | None = None
    signing_key: SigningKey | str | os.PathLike[str] | None = None
    tenant_spaces: bool = True
    extensions: Sequence[Extension | str | Mapping[str, Any]] = ()
    extended_skills: Sequence[str] | None = None
    extended_card: bool | Callable[[dict[str, Any], dict[str, str]], Mapping[str, Any]] = False
    skill_security: Mapping[str, Any] | None = None
    direct_replies: bool = False

    def check(self) -> A2AConfig:
        """This config, its values read (``auth={"bearer": [...]}`` as in a config file, the
        signing key's file, the extensions) and checked together; run once after the last change
        (``serve()`` runs it; the command line after every flag is applied, so a flag's auth counts
        for a config file's extended card). Returns ``self``; running it again changes nothing.

        Raises:
            ConfigError: a value, or values together, that cannot be served.
        """
        self.auth = Auth.from_config(self.auth)
        self.signing_key = load_signing_key(self.signing_key)
        if self.tenants is not None:
            if isinstance(self.tenants, str):
                raise ConfigError('a2a.tenants must be a list of names, such as ["acme"]')
            self.tenants = tuple(self.tenants)
            for name in self.tenants:
                _check_tenant(name)
            if len(set(self.tenants)) != len(self.tenants):
                raise ConfigError("a2a.tenants names a tenant twice")
        if isinstance(self.extensions, str | Mapping):
            raise ConfigError("a2a.extensions must be a list of extensions")
        self.extensions = tuple(Extension.of(e) for e in self.extensions)
        if len({e.uri for e in self.declared}) != len(self.declared):
            raise ConfigError("a2a.extensions names an extension twice")
        if isinstance(self.extended_skills, str):
            raise ConfigError("a2a.extendedSkills must be a list of skill names")
        if self.skill_security is not None:
            if not is_mapping(self.skill_security):
                raise ConfigError("a2a.skillSecurity must map skill names to their requirements")
            try:
                self.skill_security = {
                    str(k): requirements(v, f"a2a.skillSecurity.{k}")
                    for k, v in self.skill_security.items()
                }
            except ValueError as exc:
                raise ConfigError(str(exc)) from None
            if self.auth is None and any(self.skill_security.values()):
                raise ConfigError("a skill's security needs the agent's auth: set a2a.auth too")
            if self.auth is not None:
                for needs in self.skill_security.values():
                    self.auth.expand(needs)
        if type(self.direct_replies) is not bool:  # a config file's value, whatever it is
            raise ConfigError("a2a.directReplies must be true or false")
        if self.publishes_extended and self.auth is None:
            raise ConfigError(
                "an extended agent card is for authenticated callers: set a2a.auth too"
            )
        return self

    def needs(self, skill: SkillDef) -> list[dict[str, list[str]]]:
        """The security requirements of ``skill``: the config's for it, else its own."""
        given = self.skill_security or {}
        return list(given[skill.name]) if skill.name in given else skill.security

    @property
    def publishes_extended(self) -> bool:
        """Whether an extended card is served (and declared on the card)."""
        return self.extended_skills is not None or bool(self.extended_card)

    @property
    def declared(self) -> tuple[Extension, ...]:
        """:attr:`extensions` as ``Extension`` objects (what ``__post_init__`` made of them)."""
        return tuple(e for e in self.extensions if isinstance(e, Extension))

    @property
    def signer(self) -> SigningKey | None:
        """The key the card and push notifications are signed with (read from its file until
        :meth:`check` has loaded it)."""
        return load_signing_key(self.signing_key)

    @classmethod
    def from_config(cls, value: Any) -> A2AConfig:
        """From a config file's ``a2a`` block (camelCase or snake_case keys)."""
        return _from_block(cls, value, "a2a")


def connection_limit(config: Mapping[str, Any], given: int | None = None) -> int:
    """The open connections a server holds before new requests get 503: ``given`` (the
    ``max_connections`` of ``serve()``, ``toolnexus serve --max-connections``), else the toolkit
    config's ``maxConnections``, else sized from this process's open-file limit
    (:func:`~toolnexus.http.server.connections_for`).

    Raises:
        ConfigError: a limit that is not a whole number of at least 1.
    """
    value = given if given is not None else config.get("maxConnections")
    if value is None:
        return connections_for(fd_limit())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(
            f"maxConnections must be a whole number of connections, at least 1, not {value!r}"
        )
    return value


def load_signing_key(value: SigningKey | str | os.PathLike[str] | None) -> SigningKey | None:
    """A signing key from a config: as it is, or read from the PEM or JWK file a path names.

    Raises:
        ConfigError: the file cannot be read, or holds no private key JOSE signs with.
    """
    if value is None or isinstance(value, SigningKey):
        return value
    try:
        return SigningKey.load(Path(value).read_bytes())
    except OSError as exc:
        raise ConfigError(f"signing key {os.fspath(value)!r}: {exc.strerror or exc}") from None
    except KeyError_ as exc:
        raise ConfigError(f"signing key {os.fspath(value)!r}: {exc}") from None


_TENANT = re.compile(r"[A-Za-z0-9._~-]{1,64}")
_RESERVED = frozenset({"v1", "tasks", ".well-known", "mcp", "metrics", ".", ".."})
"""First path segments of this server's own routes: a tenant so named would be shadowed."""


def _check_tenant(name: Any) -> None:
    if not isinstance(name, str) or not _TENANT.fullmatch(name):
        raise ConfigError(
            f"a2a.tenants: {name!r} is not a tenant name (1-64 letters, digits, '.', '_', '~' "
            "or '-': it is a segment of every HTTP+JSON path)"
        )
    if name in _RESERVED:
        raise ConfigError(
            f"a2a.tenants: {name!r} is the first segment of this server's own routes; name the "
            "tenant otherwise"
        )


@dataclass
class MCPServeConfig:
    """The MCP profile at ``/mcp``.

    Attributes:
        name, version: the ``serverInfo`` of ``initialize``.
        tools: expose only these tools. None: every tool except the builtins that run commands or
            write files (``bash``, ``write``, ``edit``), which are exposed only when named.
        allowed_hosts, allowed_origins: beyond the bound address, for the Host/Origin check
            (DNS-rebinding protection); they apply to every route of the server.
        auth: required on ``/mcp``; when not set, the A2A profile's auth applies here too.
        skills: serve each skill as a prompt and the files of its folder as read-only resources.
    """

    name: str = "toolnexus"
    version: str = "0.1.0"
    tools: Sequence[str] | None = None
    allowed_hosts: Sequence[str] = field(default_factory=tuple)
    allowed_origins: Sequence[str] = field(default_factory=tuple)
    auth: Auth | None = None
    skills: bool = True

    def __post_init__(self) -> None:
        self.auth = Auth.from_config(self.auth)

    @classmethod
    def from_config(cls, value: Any) -> MCPServeConfig:
        """From a config file's ``mcpServer`` block (camelCase or snake_case keys)."""
        return _from_block(cls, value, "mcpServer")

    def exposed(self, tools: list[Tool]) -> list[Tool]:
        """The tools this profile exposes: the named ones (unknown names are logged and ignored),
        or every tool but the builtins that run commands or change files."""
        if self.tools is None:
            return [t for t in tools if not (t.source == "builtin" and t.name in COMMAND_TOOLS)]
        wanted = list(self.tools)
        unknown = [n for n in wanted if n not in {t.name for t in tools}]
        if unknown:
            log.warning("mcp: tools %s are not in the toolkit and were ignored", ", ".join(unknown))
        return [t for t in tools if t.name in wanted]


def _from_block(cls: Any, value: Any, block: str) -> Any:
    """``cls`` from a config block: an instance as it is, None/True as the defaults, else the block's
    keys (camelCase or snake_case) as keyword arguments, ``auth`` read by :meth:`Auth.from_config`."""
    if isinstance(value, cls):
        return value
    if value is None or value is True:
        return cls()
    if not is_mapping(value):
        raise ConfigError(f"{block} must be an object")
    names = {f.name for f in fields(cls)}
    out: dict[str, Any] = {}
    for key, v in value.items():
        snake = _snake(key)
        if snake not in names:
            raise ConfigError(f"{block}.{key} is not a known option ({', '.join(sorted(names))})")
        out[snake] = v
    if "auth" in out:
        out["auth"] = Auth.from_config(out["auth"])
    return cls(**out)
