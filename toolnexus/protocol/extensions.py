"""A2A extensions (§4.6) as data: what an agent declares on its card (``capabilities.extensions``),
and the header a client asks for them in and an agent answers with the ones it activated
(``A2A-Extensions``; 0.3's ``X-A2A-Extensions`` read and written beside it)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .._json import is_mapping
from ..errors import ConfigError

__all__ = [
    "HEADER",
    "LEGACY_HEADER",
    "Extension",
    "requested",
    "header_value",
    "MAX_EXTENSIONS",
]

HEADER = "A2A-Extensions"
LEGACY_HEADER = "X-A2A-Extensions"
"""A2A 0.3's name for it, which 0.3 peers send and read."""
MAX_EXTENSIONS = 32
"""URIs read from one request's headers at most: the rest are not read (none is activated)."""
_MAX_URI = 2048


@dataclass(frozen=True)
class Extension:
    """One extension an agent declares: its ``uri``, what it does, whether a caller must ask for it
    (``required``: a request that does not is refused with -32008), and its ``params`` (any JSON
    object, on the card as they are)."""

    uri: str
    description: str = ""
    required: bool = False
    params: Mapping[str, Any] = field(default_factory=dict[str, Any])

    @classmethod
    def of(cls, value: Any) -> Extension:
        """An ``Extension``, a URI, or a config file's ``{"uri", "description", "required",
        "params"}``; ConfigError says what is wrong."""
        if isinstance(value, Extension):
            return value
        if isinstance(value, str):
            value = {"uri": value}
        if not is_mapping(value):
            raise ConfigError('an extension is a URI or {"uri": ..., "required": true, ...}')
        uri, description = value.get("uri"), value.get("description", "")
        required, given = value.get("required", False), value.get("params")
        unknown = set(value) - {"uri", "description", "required", "params"}
        if unknown:
            raise ConfigError(f"an extension has no field {', '.join(sorted(unknown))}")
        if not isinstance(uri, str) or not uri.strip() or "," in uri or len(uri) > _MAX_URI:
            raise ConfigError(f"an extension's uri must be a URI without commas, not {uri!r}")
        if not isinstance(description, str) or not isinstance(required, bool):
            raise ConfigError(f"extension {uri}: description is text and required true or false")
        params: dict[str, Any] = {}
        if given is not None:
            if not is_mapping(given):
                raise ConfigError(f"extension {uri}: params must be an object")
            params = dict(given)
        return cls(uri.strip(), description, required, params)

    def card_entry(self) -> dict[str, Any]:
        """As ``capabilities.extensions`` lists it."""
        out: dict[str, Any] = {"uri": self.uri}
        if self.description:
            out["description"] = self.description
        if self.required:
            out["required"] = True
        if self.params:
            out["params"] = dict(self.params)
        return out


def requested(values: Iterable[str]) -> list[str]:
    """The URIs the header values name (comma-separated, repeated headers joined), in order, each
    once, at most ``MAX_EXTENSIONS`` and none longer than a URI may be."""
    out: list[str] = []
    for value in values:
        for item in value.split(","):
            uri = item.strip()
            if uri and len(uri) <= _MAX_URI and uri not in out:
                out.append(uri)
                if len(out) == MAX_EXTENSIONS:
                    return out
    return out


def header_value(uris: Iterable[str]) -> str:
    """The header's value naming ``uris``."""
    return ", ".join(uris)
