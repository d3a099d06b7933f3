"""Signatures between agents: a card's JWS signatures (A2A 1.0 §8.4) and signed push notifications
(the push guide's asymmetric flow), with the keys they use and the key sets (JWKS) that publish them.

No I/O here: a key set a signature's ``jku`` names is fetched by the caller (``client/peer.py``,
bounded, under the address rule) and handed to :func:`verify_card`.

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

import base64
import binascii
import copy
import functools
import hashlib
import json
import re
import time
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, cast

import jwt
import rfc8785
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from jwt.algorithms import get_default_algorithms
from jwt.api_jwk import PyJWK

from .._json import is_array, is_object

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
    "PushVerdict",
    "verify_push",
]

ALGORITHMS = (
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
)
"""The algorithms signed with and accepted: asymmetric only (``none`` and the HMAC ones, which need
a secret shared with every verifier, never)."""

_FAMILY = {"EC": "ES", "OKP": "EdDSA", "RSA": ("RS", "PS")}
_CURVE_ALG = {"P-256": "ES256", "P-384": "ES384", "P-521": "ES512"}

JWKS_PATH = "/.well-known/jwks.json"
"""Where a served agent that signs publishes its public keys (its card's ``jku``)."""
PUSH_HEADER = "X-A2A-Notification-Signature"
"""The header a signed push notification's JWT travels in (one of its own, so that a config's own
credentials keep ``Authorization``)."""
PUSH_TTL = 300
"""Seconds a push notification's JWT is valid for (``exp`` - ``iat``)."""
PUSH_LEEWAY = 30
"""Seconds of clock difference a receiver allows on ``iat`` and ``exp``."""
MAX_JTI = 256
"""The longest ``jti`` a receiver takes, in characters (ours are 32): a replay memory holds each
one until it expires."""


class KeyError_(ValueError):  # noqa: N801 - ``KeyError`` is a builtin of another meaning
    """A key or key set that cannot be used: the message says why."""


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _kty(jwk: Mapping[str, Any]) -> str:
    return str(jwk.get("kty", ""))


def _fits(alg: str, kty: str) -> bool:
    family = _FAMILY.get(kty)
    if family is None:
        return False
    return alg.startswith(family) if isinstance(family, tuple) else alg.startswith(family)


def thumbprint(jwk: Mapping[str, Any]) -> str:
    """The RFC 7638 thumbprint (SHA-256) of a public JWK: a key's id when none is given."""
    members = {"EC": ("crv", "kty", "x", "y"), "OKP": ("crv", "kty", "x"), "RSA": ("e", "kty", "n")}
    wanted = members.get(_kty(jwk), ())
    digest = json.dumps({k: jwk[k] for k in wanted if k in jwk}, separators=(",", ":"))
    return _b64(hashlib.sha256(digest.encode()).digest())


def _public_jwk(public: Any) -> dict[str, Any]:
    if isinstance(public, ec.EllipticCurvePublicKey):
        return get_default_algorithms()["ES256"].to_jwk(public, as_dict=True)
    if isinstance(public, rsa.RSAPublicKey):
        return get_default_algorithms()["RS256"].to_jwk(public, as_dict=True)
    return get_default_algorithms()["EdDSA"].to_jwk(public, as_dict=True)


def _default_alg(key: Any) -> str:
    if isinstance(key, ec.EllipticCurvePrivateKey):
        name = {"secp256r1": "P-256", "secp384r1": "P-384", "secp521r1": "P-521"}.get(
            key.curve.name
        )
        if name is None:
            raise KeyError_(f"an EC key on {key.curve.name}: JOSE signs with P-256, P-384 or P-521")
        return _CURVE_ALG[name]
    if isinstance(key, (ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey)):
        return "EdDSA"
    if isinstance(key, rsa.RSAPrivateKey):
        if key.key_size < 2048:
            raise KeyError_(f"an RSA key of {key.key_size} bits: at least 2048 are needed")
        return "RS256"
    raise KeyError_("not a signing key JOSE knows (EC P-256/384/521, Ed25519, Ed448 or RSA)")


class SigningKey:
    """A private key an agent signs with: its card's signature and its push notifications.

    Load it with :meth:`load` from a PEM (PKCS#8, SEC 1 or PKCS#1, unencrypted) or a private JWK.
    ``alg`` follows the key (ES256 for P-256, EdDSA for Ed25519, RS256 for RSA; PS256 on asking);
    ``kid`` defaults to the public key's RFC 7638 thumbprint.
    """

    def __init__(self, private: Any, *, alg: str | None = None, kid: str | None = None) -> None:
        self._private = private
        self.alg = alg or _default_alg(private)
        if self.alg not in ALGORITHMS:
            raise KeyError_(f"alg {self.alg!r} is not one of {', '.join(ALGORITHMS)}")
        public = _public_jwk(private.public_key())
        if not _fits(self.alg, _kty(public)):
            raise KeyError_(f"alg {self.alg} does not fit this key (kty {_kty(public)})")
        self.kid = kid or thumbprint(public)
        self.public_jwk: dict[str, Any] = {**public, "kid": self.kid, "alg": self.alg, "use": "sig"}
        """The public half, as a JWK (what the agent's key set publishes)."""

    @classmethod
    def load(
        cls,
        source: str | bytes | Mapping[str, Any],
        *,
        alg: str | None = None,
        kid: str | None = None,
    ) -> SigningKey:
        """From a PEM or a JWK (its text, or the JWK as a mapping).

        Raises:
            KeyError_: the text is neither, the key is public only or encrypted, or it is a kind
                JOSE does not sign with.
        """
        if isinstance(source, Mapping):
            return cls._from_jwk(source, alg, kid)
        data = source.encode() if isinstance(source, str) else source
        if data.lstrip().startswith(b"{"):
            try:
                jwk = json.loads(data)
            except ValueError:
                raise KeyError_("the key looks like a JWK but is not JSON") from None
            if not isinstance(jwk, dict):
                raise KeyError_("a JWK must be a JSON object")
            return cls._from_jwk(cast(dict[str, Any], jwk), alg, kid)
        try:
            private = serialization.load_pem_private_key(data, password=None)
        except TypeError:
            raise KeyError_(
                "the PEM key is encrypted: give it unencrypted (keep the file 0600)"
            ) from None
        except ValueError:
            if b"PUBLIC KEY" in data:
                raise KeyError_("that is a public key: signing needs the private one") from None
            raise KeyError_("not a PEM private key or a JWK") from None
        return cls(private, alg=alg, kid=kid)

    @classmethod
    def _from_jwk(cls, jwk: Mapping[str, Any], alg: str | None, kid: str | None) -> SigningKey:
        if "d" not in jwk:
            raise KeyError_("that JWK is a public key: signing needs the private one (with 'd')")
        try:
            parsed = PyJWK(dict(jwk), alg or jwk.get("alg"))
        except jwt.PyJWTError as exc:
            raise KeyError_(f"not a JWK this library signs with: {exc}") from None
        return cls(parsed.key, alg=alg or jwk.get("alg"), kid=kid or jwk.get("kid"))

    def __repr__(self) -> str:  # never the private part
        return f"SigningKey(alg={self.alg!r}, kid={self.kid!r})"

    @property
    def jwks(self) -> dict[str, Any]:
        """The key set to publish: this key's public half."""
        return {"keys": [self.public_jwk]}

    def sign(self, payload: bytes, header: Mapping[str, Any]) -> str:
        """A compact JWS of ``payload`` under ``header`` (``alg`` and ``kid`` are this key's)."""
        protected = _b64(json.dumps({**header, "alg": self.alg, "kid": self.kid}).encode())
        signing_input = f"{protected}.{_b64(payload)}".encode()
        signature = get_default_algorithms()[self.alg].sign(signing_input, self._private)
        return f"{protected}.{_b64(payload)}.{_b64(signature)}"

    def sign_card(self, card: Mapping[str, Any], jku: str | None = None) -> dict[str, Any]:
        """``card`` with one signature of this key over its 1.0 view (any earlier signature kept).

        Raises:
            ValueError: the card has no canonical form (see :func:`canonical`).
        """
        header: dict[str, Any] = {"typ": "JOSE"}
        if jku:
            header["jku"] = jku
        protected, _, signature = self.sign(canonical(card_view(card)), header).split(".")
        signed = dict(card)
        earlier = card.get("signatures")
        signed["signatures"] = [
            *(earlier if is_array(earlier) else []),
            {"protected": protected, "signature": signature},
        ]
        return signed

    def push_token(self, *, issuer: str, audience: str, task_id: str, body: bytes) -> str:
        """The JWT a push notification carries (:data:`PUSH_HEADER`): who sent it (``iss``: the
        agent's URL), to whom (``aud``: the webhook's URL), when (``iat``, ``exp``), once
        (``jti``), about which task (``taskId``) and which body (``request_body_sha256``)."""
        now = int(time.time())
        claims = {
            "iss": issuer,
            "aud": audience,
            "iat": now,
            "exp": now + PUSH_TTL,
            "jti": uuid.uuid4().hex,
            "taskId": task_id,
            "request_body_sha256": hashlib.sha256(body).hexdigest(),
        }
        return self.sign(json.dumps(claims, separators=(",", ":")).encode(), {"typ": "JWT"})


class KeySet:
    """Public keys a verifier trusts, by ``kid``: from JWK sets, JWKs, public PEMs or signing keys.

    Raises (from :meth:`load`): KeyError_ for a key that is none of these.
    """

    def __init__(self, keys: Iterable[Mapping[str, Any]] = ()) -> None:
        self.keys: list[dict[str, Any]] = []
        for jwk in keys:
            self.add(jwk)

    def add(self, jwk: Mapping[str, Any]) -> None:
        """One public JWK (a private one is kept as its public half)."""
        if _kty(jwk) not in _FAMILY:
            raise KeyError_(f"a key of kty {_kty(jwk)!r}: only EC, OKP and RSA keys verify")
        public = {k: v for k, v in jwk.items() if k not in ("d", "p", "q", "dp", "dq", "qi", "oth")}
        try:
            PyJWK(public, public.get("alg"))
        except jwt.PyJWTError as exc:
            raise KeyError_(f"a key that cannot verify: {exc}") from None
        public.setdefault("kid", thumbprint(public))
        self.keys.append(public)

    @classmethod
    def load(cls, *sources: str | bytes | Mapping[str, Any] | SigningKey) -> KeySet:
        """From JWK sets (``{"keys": [...]}``), JWKs, public (or private) PEMs, or signing keys, as
        text or parsed."""
        out = cls()
        for source in sources:
            if isinstance(source, SigningKey):
                out.add(source.public_jwk)
                continue
            if isinstance(source, (str, bytes)):
                data = source.encode() if isinstance(source, str) else source
                if not data.lstrip().startswith(b"{"):
                    out.add(_pem_public(data))
                    continue
                try:
                    source = json.loads(data)
                except ValueError:
                    raise KeyError_("a key set that is not JSON") from None
            if not is_object(source):
                raise KeyError_("a key must be a JWK or a JWK set (a JSON object)")
            keys = source.get("keys")
            if is_array(keys):
                for k in keys:
                    if not is_object(k):
                        raise KeyError_("a JWK set's keys must be JSON objects")
                    out.add(k)
            else:
                out.add(source)
        return out

    def __len__(self) -> int:
        return len(self.keys)

    def __repr__(self) -> str:
        return f"KeySet(kids={[k.get('kid') for k in self.keys]!r})"

    def named(self, kid: str | None) -> list[dict[str, Any]]:
        """The keys a signature naming ``kid`` may be checked with (every key when it names none)."""
        return [k for k in self.keys if kid is None or k.get("kid") == kid]


def _pem_public(data: bytes) -> dict[str, Any]:
    try:
        public = serialization.load_pem_public_key(data)
    except ValueError:
        try:
            public = serialization.load_pem_private_key(data, password=None).public_key()
        except (ValueError, TypeError):
            raise KeyError_("not a PEM key, a JWK or a JWK set") from None
    if not isinstance(
        public,
        (
            ec.EllipticCurvePublicKey,
            rsa.RSAPublicKey,
            ed25519.Ed25519PublicKey,
            ed448.Ed448PublicKey,
        ),
    ):
        raise KeyError_("a PEM key of a kind JOSE does not verify with")
    return _public_jwk(public)


# -- the 1.0 view of a card --------------------------------------------------------------------------

_SCHEMA: dict[str, dict[str, str]] = {
    "AgentCard": {
        "name": "str",
        "description": "str",
        "supportedInterfaces": "[AgentInterface]",
        "provider": "AgentProvider",
        "version": "str",
        "documentationUrl": "str",
        "capabilities": "AgentCapabilities",
        "securitySchemes": "{SecurityScheme}",
        "securityRequirements": "[SecurityRequirement]",
        "defaultInputModes": "[str]",
        "defaultOutputModes": "[str]",
        "skills": "[AgentSkill]",
        "signatures": "[AgentCardSignature]",
        "iconUrl": "str",
    },
    "AgentInterface": {
        "url": "str",
        "protocolBinding": "str",
        "tenant": "str",
        "protocolVersion": "str",
    },
    "AgentProvider": {"url": "str", "organization": "str"},
    "AgentCapabilities": {
        "streaming": "bool?",
        "pushNotifications": "bool?",
        "extensions": "[AgentExtension]",
        "extendedAgentCard": "bool?",
    },
    "AgentExtension": {"uri": "str", "description": "str", "required": "bool", "params": "struct"},
    "SecurityScheme": {
        "apiKeySecurityScheme": "APIKeySecurityScheme",
        "httpAuthSecurityScheme": "HTTPAuthSecurityScheme",
        "oauth2SecurityScheme": "OAuth2SecurityScheme",
        "openIdConnectSecurityScheme": "OpenIdConnectSecurityScheme",
        "mtlsSecurityScheme": "MutualTlsSecurityScheme",
    },
    "APIKeySecurityScheme": {"description": "str", "location": "str", "name": "str"},
    "HTTPAuthSecurityScheme": {"description": "str", "scheme": "str", "bearerFormat": "str"},
    "OAuth2SecurityScheme": {
        "description": "str",
        "flows": "OAuthFlows",
        "oauth2MetadataUrl": "str",
    },
    "OAuthFlows": {
        "authorizationCode": "AuthorizationCodeOAuthFlow",
        "clientCredentials": "ClientCredentialsOAuthFlow",
        "implicit": "ImplicitOAuthFlow",
        "password": "PasswordOAuthFlow",
        "deviceCode": "DeviceCodeOAuthFlow",
    },
    "AuthorizationCodeOAuthFlow": {
        "authorizationUrl": "str",
        "tokenUrl": "str",
        "refreshUrl": "str",
        "scopes": "{str}",
        "pkceRequired": "bool",
    },
    "ClientCredentialsOAuthFlow": {"tokenUrl": "str", "refreshUrl": "str", "scopes": "{str}"},
    "ImplicitOAuthFlow": {"authorizationUrl": "str", "refreshUrl": "str", "scopes": "{str}"},
    "PasswordOAuthFlow": {"tokenUrl": "str", "refreshUrl": "str", "scopes": "{str}"},
    "DeviceCodeOAuthFlow": {
        "deviceAuthorizationUrl": "str",
        "tokenUrl": "str",
        "refreshUrl": "str",
        "scopes": "{str}",
    },
    "OpenIdConnectSecurityScheme": {"description": "str", "openIdConnectUrl": "str"},
    "MutualTlsSecurityScheme": {"description": "str"},
    "SecurityRequirement": {"schemes": "{StringList}"},
    "StringList": {"list": "[str]"},
    "AgentSkill": {
        "id": "str",
        "name": "str",
        "description": "str",
        "tags": "[str]",
        "examples": "[str]",
        "inputModes": "[str]",
        "outputModes": "[str]",
        "securityRequirements": "[SecurityRequirement]",
    },
    "AgentCardSignature": {"protected": "str", "signature": "str", "header": "struct"},
}
"""1.0's ``AgentCard`` (a2a.proto, ``lf.a2a.v1``) and what it holds, by JSON name: a scalar
(``bool?``: a bool with presence, kept when false), a message, ``[...]`` repeated, ``{...}`` a map,
``struct`` a ``google.protobuf.Struct``. A test holds it equal to the SDK's descriptors."""

_MAX_DEPTH = 128  # a2a-sdk's bound on nesting (extension params are peer-chosen JSON)
_SNAKE = re.compile(r"(?<!^)(?=[A-Z])")


def _snake(name: str) -> str:
    return _SNAKE.sub("_", name).lower()


class _NotACard(ValueError):
    """The card cannot be read as 1.0's AgentCard (the official SDKs refuse it the same way)."""


def _read(kind: str, value: Any, at: str, depth: int) -> Any:
    """``value`` read as proto JSON reads it into ``kind`` and writes it back, empties left out;
    None for what is absent or empty."""
    if value is None:
        return None
    if depth > _MAX_DEPTH:
        raise _NotACard(f"{at}: nested deeper than {_MAX_DEPTH}")
    if kind.startswith("["):
        if not is_array(value):
            raise _NotACard(f"{at}: expected a list")
        items = [_read(kind[1:-1], v, f"{at}[{i}]", depth + 1) for i, v in enumerate(value)]
        kept = [v for v in items if v is not None]
        return kept or None
    if kind.startswith("{"):
        if not is_object(value):
            raise _NotACard(f"{at}: expected an object")
        entries = {k: _read(kind[1:-1], v, f"{at}.{k}", depth + 1) for k, v in value.items()}
        kept = {k: v for k, v in entries.items() if v is not None}
        return kept or None
    if kind == "str":
        if not isinstance(value, str):
            raise _NotACard(f"{at}: expected a string")
        return value or None
    if kind in ("bool", "bool?"):
        if not isinstance(value, bool):
            raise _NotACard(f"{at}: expected true or false")
        return value if value or kind == "bool?" else None
    if kind == "struct":
        if not is_object(value):
            raise _NotACard(f"{at}: expected an object")
        return _struct(value, at, depth + 1)
    fields = _SCHEMA[kind]
    if not is_object(value):
        raise _NotACard(f"{at}: expected an object")
    out: dict[str, Any] = {}
    for name, sub in fields.items():
        given = value.get(name, value.get(_snake(name)))
        read = _read(sub, given, f"{at}.{name}", depth + 1)
        if read is not None:
            out[name] = read
    return out or None


def _struct(value: Any, at: str, depth: int) -> Any:
    """A ``google.protobuf.Value`` as written back: numbers are doubles; nulls and empties go."""
    if depth > _MAX_DEPTH:
        raise _NotACard(f"{at}: nested deeper than {_MAX_DEPTH}")
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return value or None
    if is_array(value):
        kept = [v for v in (_struct(x, at, depth + 1) for x in value) if v is not None]
        return kept or None
    if is_object(value):
        entries = {k: _struct(v, f"{at}.{k}", depth + 1) for k, v in value.items()}
        kept = {k: v for k, v in entries.items() if v is not None}
        return kept or None
    raise _NotACard(f"{at}: not JSON")


_LEGACY_SCHEMES = {
    "apiKey": "apiKeySecurityScheme",
    "http": "httpAuthSecurityScheme",
    "oauth2": "oauth2SecurityScheme",
    "openIdConnect": "openIdConnectSecurityScheme",
    "mutualTLS": "mtlsSecurityScheme",
}


def _fold_v03(card: dict[str, Any]) -> None:
    """0.3's fields into 1.0's, in place, as a2a-sdk's ``parse_agent_card`` folds them."""
    if card.pop("supportsAuthenticatedExtendedCard", None):
        capabilities = card.setdefault("capabilities", {})
        if "extendedAgentCard" not in capabilities:
            capabilities["extendedAgentCard"] = True
    url = card.pop("url", None)
    transport = card.pop("preferredTransport", "JSONRPC")
    version = card.pop("protocolVersion", "0.3.0")
    additional: Any = card.pop("additionalInterfaces", None) or []
    if "supportedInterfaces" not in card and url:
        card["supportedInterfaces"] = [
            {"url": url, "protocolBinding": transport, "protocolVersion": version},
            *(
                {
                    "url": i.get("url"),
                    "protocolBinding": i.get("transport"),
                    "protocolVersion": version,
                }
                for i in additional
            ),
        ]

    def requirements(legacy: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [{"schemes": {k: {"list": v} for k, v in d.items()}} for d in legacy]

    legacy = card.pop("security", None)
    if "securityRequirements" not in card and legacy is not None:
        card["securityRequirements"] = requirements(legacy)
    skills: Any = card.get("skills", [])
    for skill in skills:
        legacy = skill.pop("security", None)
        if "securityRequirements" not in skill and legacy is not None:
            skill["securityRequirements"] = requirements(legacy)
    schemes: Any = card.get("securitySchemes") or {}
    for scheme in schemes.values():
        kind = scheme.pop("type", None)
        if kind in _LEGACY_SCHEMES:
            if kind == "apiKey" and "in" in scheme:
                scheme["location"] = scheme.pop("in")
            wrapped = {_LEGACY_SCHEMES[kind]: dict(scheme)}
            scheme.clear()
            scheme.update(wrapped)


def card_view(card: Mapping[str, Any], *, fold_v03: bool = True) -> dict[str, Any]:
    """The card's 1.0 view, without its signatures: what a card signature covers (see the module's
    docstring). ``fold_v03=False``: 0.3's fields dropped rather than folded in (how @a2a-js/sdk
    reads a card).

    Raises:
        ValueError: the card cannot be read as 1.0's AgentCard.
    """
    data = copy.deepcopy(dict(card))
    data.pop("signatures", None)
    if fold_v03:
        try:
            _fold_v03(data)
        except (TypeError, AttributeError) as exc:
            raise _NotACard(f"its 0.3 fields cannot be read as 1.0's: {exc}") from None
    return _read("AgentCard", data, "$", 1) or {}


def canonical(value: Any) -> bytes:
    """RFC 8785's canonical form of a JSON value.

    Raises:
        ValueError: a value with none (an integer past 2**53, NaN, text that is not Unicode).
    """
    try:
        return rfc8785.dumps(value)
    except (rfc8785.CanonicalizationError, UnicodeEncodeError, RecursionError, TypeError) as exc:
        raise ValueError(f"no RFC 8785 form: {exc}") from None


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
        return {
            "index": self.index,
            "alg": self.alg,
            "kid": self.kid,
            "jku": self.jku,
            "ok": self.ok,
            "why": self.why,
            "cause": self.cause,
        }


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
        header = json.loads(_unb64(text))
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
        sig = _unb64(raw) if isinstance(raw, str) else None
    except (binascii.Error, ValueError):
        sig = None
    if sig is None:
        return check(False, "its signature is not base64url", "header")
    candidates, where = _candidates(kid, jku, keys, fetched)
    if isinstance(candidates, str):
        cause = "no key" if candidates.startswith("no key to check it with") else "key"
        return check(False, candidates, cause)
    fitting = [k for k in candidates if _fits(alg, _kty(k)) and k.get("alg") in (None, alg)]
    if not fitting:
        kinds = ", ".join(
            sorted({_kty(k) + (f"/{k['alg']}" if k.get("alg") else "") for k in candidates})
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
        signing_input = f"{protected}.{_b64(payload)}".encode()
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


# -- push notifications ----------------------------------------------------------------------------


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
        k for k in keys.named(kid if isinstance(kid, str) else None) if _fits(alg, _kty(k))
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
