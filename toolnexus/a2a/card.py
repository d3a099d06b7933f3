"""Agent cards: the card a served toolkit publishes (both SDK lines' layouts in one document)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..skills import SkillDef

__all__ = ["build_card", "CARD_PATH", "LEGACY_CARD_PATH", "PROTOCOL_VERSION"]

CARD_PATH = "/.well-known/agent-card.json"
LEGACY_CARD_PATH = "/.well-known/agent.json"
PROTOCOL_VERSION = "0.3.0"


def build_card(
    *,
    base_url: str,
    name: str,
    description: str,
    version: str,
    skills: Sequence[SkillDef],
    streaming: bool,
    input_modes: Sequence[str] = ("text",),
    output_modes: Sequence[str] = ("text",),
    provider: dict[str, str] | None = None,
    security: dict[str, Any] | None = None,
    documentation_url: str | None = None,
    icon_url: str | None = None,
) -> dict[str, Any]:
    """The hybrid card: v0.3 fields (``url``, ``protocolVersion``, ``preferredTransport``) and the
    1.x ``supportedInterfaces``, so that both official client lines accept it."""
    url = base_url.rstrip("/") + "/"
    card: dict[str, Any] = {
        "name": name,
        "description": description,
        "version": version,
        "protocolVersion": PROTOCOL_VERSION,
        "url": url,
        "preferredTransport": "JSONRPC",
        "supportedInterfaces": [
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
            {"url": url, "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
        ],
        "capabilities": {"streaming": streaming, "pushNotifications": False},
        "defaultInputModes": list(input_modes),
        "defaultOutputModes": list(output_modes),
        "skills": [_skill(s) for s in skills],
    }
    if provider:
        card["provider"] = provider
    if documentation_url:
        card["documentationUrl"] = documentation_url
    if icon_url:
        card["iconUrl"] = icon_url
    if security:
        card.update(security)
    return card


def _skill(s: SkillDef) -> dict[str, Any]:
    out: dict[str, Any] = {"id": s.name, "name": s.name, "description": s.description, "tags": s.tags or [s.name]}
    if s.examples:
        out["examples"] = list(s.examples)
    return out
