"""Secrets, in one place: which header and parameter names carry one, masking them in headers,
text and URLs (``***``, a scheme kept: ``Bearer ***``), and ``${NAME}`` references to the
environment, which is how a spec, a peer's auth panel or a copied curl names a secret without
holding it. The wire log (``traffic``), the stores, the client and the front ends all mask here."""

from __future__ import annotations

import base64
import binascii
import functools
import json
import os
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from typing import cast

__all__ = [
    "basic_authorization",
    "read_basic",
    "SECRET_HEADERS",
    "MASK",
    "is_secret_name",
    "secret_parts",
    "mask_headers",
    "mask_text",
    "mask_url",
    "url_secrets",
    "body_secrets",
    "expand_env",
    "is_env_ref",
    "savable_headers",
    "savable_env",
    "savable_url",
]

SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "set-cookie",
        "x-auth-token",
        "x-goog-api-key",
        "private-token",
    }
)
_SECRET_WORDS = re.compile(
    r"auth|token|secret|passw|key|cookie|session|signature|credential", re.IGNORECASE
)
_SCHEMES = ("bearer", "basic", "token", "digest")
OAUTH_SECRET_FIELDS = frozenset(
    {
        "access_token",
        "refresh_token",
        "id_token",
        "client_secret",
        "code",
        "code_verifier",
        "registration_access_token",
    }
)
"""The fields of an OAuth body (a token answer in JSON, a token request in form encoding, a
registration) whose values are secrets."""
_OAUTH_HINT = re.compile(
    r"access_token|refresh_token|id_token|client_secret|code_verifier|registration_access_token"
)
"""A body without any of these names is not an OAuth one: not parsed (every body is asked)."""
MASK = "***"
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_ENV_REF_ONLY = re.compile(r"^\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
_ENV_HEADER_ONLY = re.compile(
    r"^(?:(?i:bearer|basic|token|digest|apikey|key) |[A-Za-z_][A-Za-z0-9_.-]*=)?"
    r"\$\{[A-Za-z_][A-Za-z0-9_]*\}$"
)


def basic_authorization(user: str, password: str) -> str:
    """The ``Authorization`` value of HTTP basic (RFC 7617): ``Basic`` and base64 of
    ``user:password`` in UTF-8."""
    pair = f"{user}:{password}".encode()
    return "Basic " + base64.b64encode(pair).decode("ascii")


def read_basic(value: str) -> str | None:
    """``user:password`` from an ``Authorization: Basic ...`` value, or None when it is not one
    (another scheme, not base64, not UTF-8, no colon)."""
    kind, _, encoded = value.strip().partition(" ")
    if kind.lower() != "basic" or not encoded:
        return None
    try:
        pair = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return pair if ":" in pair else None


@functools.lru_cache(maxsize=4096)
def is_secret_name(name: str) -> bool:
    """Whether a header or query parameter of this name carries a secret (names repeat: cached)."""
    lower = name.lower()
    return lower in SECRET_HEADERS or bool(_SECRET_WORDS.search(lower))


def secret_parts(value: str) -> list[str]:
    """The strings to mask for one secret value: itself, its credential without an auth scheme,
    the values of its ``name=value`` pairs, and their JSON-escaped forms."""
    parts = [value]
    scheme, sep, rest = value.partition(" ")
    if sep and rest and scheme.lower() in _SCHEMES:
        parts.append(rest.strip())
    if "=" in value:  # a cookie's or a query's name=value pairs: each value is a secret too
        parts += [pair.partition("=")[2].strip() for pair in value.split(";") if "=" in pair]
    escaped = [json.dumps(p)[1:-1] for p in parts]
    return [
        p
        for p in dict.fromkeys(parts + escaped + [p.replace("/", "\\/") for p in escaped])
        if len(p) >= 4
    ]


def mask_headers(
    headers: Mapping[str, str] | Iterable[tuple[str, str]],
    secret_names: Iterable[str] = (),
    secret_values: Iterable[str] = (),
) -> dict[str, str]:
    """A copy of ``headers`` with every secret value replaced (``Bearer ***`` keeps the scheme)."""
    names = {n.lower() for n in secret_names}
    values = [v for v in secret_values if v]
    items = cast(
        "Iterable[tuple[str, str]]", headers.items() if isinstance(headers, Mapping) else headers
    )
    out: dict[str, str] = {}
    for key, value in items:
        lower = key.lower()
        if is_secret_name(lower) or lower in names or (values and any(v in value for v in values)):
            scheme, sep, rest = value.partition(" ")
            out[lower] = f"{scheme} {MASK}" if sep and rest and scheme.lower() in _SCHEMES else MASK
        else:
            out[lower] = value
    return out


def mask_text(text: str, secret_values: Iterable[str]) -> str:
    """``text`` with each secret value (of 4 characters or more; the longest first) masked."""
    if not secret_values or not text:
        return text
    return _masked(
        text, sorted((v for v in secret_values if v and len(v) >= 4), key=len, reverse=True)
    )


def _masked(text: str, longest_first: list[str]) -> str:
    """``text`` with each of these values masked; they come filtered and sorted (a recorder keeps
    them so, and masks every field of every exchange)."""
    for value in longest_first:
        if value in text:
            text = text.replace(value, MASK)
    return text


def mask_url(url: str) -> str:
    """``url`` with its password and the values of its secret-looking query parameters masked."""
    if "@" not in url and "?" not in url:
        return url
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return url
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, hostport = netloc.rpartition("@")
        user, sep, _ = userinfo.partition(":")
        netloc = f"{user}{':' + MASK if sep else ''}@{hostport}"
    query = parts.query
    if query:
        pairs = urllib.parse.parse_qsl(query, keep_blank_values=True)
        if any(is_secret_name(k) for k, _ in pairs):
            query = "&".join(
                f"{urllib.parse.quote(k, safe='')}={MASK if is_secret_name(k) else urllib.parse.quote(v, safe='')}"
                for k, v in pairs
            )
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def url_secrets(url: str) -> list[str]:
    """The secret values a URL carries (its password, secret query parameters), to mask elsewhere."""
    if "@" not in url and "?" not in url:
        return []
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return []
    found = [parts.password] if parts.password else []
    found += [v for k, v in urllib.parse.parse_qsl(parts.query) if is_secret_name(k) and v]
    return [p for v in found for p in secret_parts(v)] + [
        urllib.parse.quote(v, safe="") for v in found
    ]


def expand_env(value: str) -> str:
    """``${NAME}`` replaced by the environment variable NAME ("" when unset)."""
    return _ENV.sub(lambda m: os.environ.get(m.group(1), ""), value)


def is_env_ref(value: str) -> bool:
    """Whether ``value`` is one ``${NAME}`` reference and nothing else (a secret that may be saved)."""
    return bool(_ENV_REF_ONLY.match(value))


def savable_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """The headers that may be written to a file: those whose value is one environment reference,
    alone or after a scheme or a ``name=`` (``${TOKEN}``, ``Bearer ${TOKEN}``,
    ``session=${SESSION}``). A literal value, secret or not, is never written."""
    return {k: v for k, v in headers.items() if _ENV_HEADER_ONLY.match(v)}


def savable_env(env: Mapping[str, str]) -> dict[str, str]:
    """A process environment as it may be written to a file: a variable of a secret-looking name
    (:func:`is_secret_name`) holding a literal is written as a reference to itself
    (``GITHUB_TOKEN: ${GITHUB_TOKEN}``, read from the environment when used); other values as
    they are."""
    return {
        k: v if is_env_ref(v) or not is_secret_name(k) or not v else f"${{{k}}}"
        for k, v in env.items()
    }


def savable_url(url: str) -> str:
    """``url`` without the secrets it may carry (a password, secret query parameter values)."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2] if "@" in parts.netloc else parts.netloc
    pairs = [
        (k, v)
        for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
        if not is_secret_name(k)
    ]
    return urllib.parse.urlunsplit(
        (parts.scheme, netloc, parts.path, urllib.parse.urlencode(pairs), parts.fragment)
    )


def body_secrets(body: str) -> list[str]:
    """The secret values of an OAuth exchange's body (:data:`OAUTH_SECRET_FIELDS`): a JSON object's
    top-level fields, or a form's (``code=...&code_verifier=...``); nothing for any other body."""
    if not _OAUTH_HINT.search(body, 0, 65536):
        return []
    text = body.strip()
    if text.startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            return []
        pairs = data.items() if isinstance(data, dict) else []
    elif "=" in text and " " not in text and len(text) < 16384:
        pairs = urllib.parse.parse_qsl(text)
    else:
        return []
    return [
        part
        for key, value in pairs
        if key in OAUTH_SECRET_FIELDS and isinstance(value, str) and len(value) >= 8
        for part in secret_parts(value)
    ]
