"""What a card's signature covers (see :mod:`toolnexus.protocol.signing`): the card's 1.0 view
(:func:`card_view`, the card as the official SDKs read it into their 1.0 ``AgentCard``) and its
RFC 8785 bytes (:func:`canonical`)."""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

import rfc8785

from .._json import is_array, is_object

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
