"""The keys signatures between agents use (see :mod:`toolnexus.protocol.signing`): a private
key that signs (:class:`SigningKey`, from PEM or a JWK, its JWS algorithm), the public keys a
signature is checked with (:class:`KeySet`, a JWKS) and their RFC 7638 thumbprints."""

from __future__ import annotations

import base64
import hashlib
import json
import time
import uuid
from collections.abc import Iterable, Mapping
from typing import Any, cast

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519, rsa
from jwt.algorithms import get_default_algorithms
from jwt.api_jwk import PyJWK

from .._json import is_array, is_object
from .signed_view import canonical, card_view

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


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def kty_of(jwk: Mapping[str, Any]) -> str:
    return str(jwk.get("kty", ""))


def alg_fits(alg: str, kty: str) -> bool:
    family = _FAMILY.get(kty)
    if family is None:
        return False
    return alg.startswith(family) if isinstance(family, tuple) else alg.startswith(family)


def thumbprint(jwk: Mapping[str, Any]) -> str:
    """The RFC 7638 thumbprint (SHA-256) of a public JWK: a key's id when none is given."""
    members = {"EC": ("crv", "kty", "x", "y"), "OKP": ("crv", "kty", "x"), "RSA": ("e", "kty", "n")}
    wanted = members.get(kty_of(jwk), ())
    digest = json.dumps({k: jwk[k] for k in wanted if k in jwk}, separators=(",", ":"))
    return b64url(hashlib.sha256(digest.encode()).digest())


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
        if not alg_fits(self.alg, kty_of(public)):
            raise KeyError_(f"alg {self.alg} does not fit this key (kty {kty_of(public)})")
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
        protected = b64url(json.dumps({**header, "alg": self.alg, "kid": self.kid}).encode())
        signing_input = f"{protected}.{b64url(payload)}".encode()
        signature = get_default_algorithms()[self.alg].sign(signing_input, self._private)
        return f"{protected}.{b64url(payload)}.{b64url(signature)}"

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
        if kty_of(jwk) not in _FAMILY:
            raise KeyError_(f"a key of kty {kty_of(jwk)!r}: only EC, OKP and RSA keys verify")
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
