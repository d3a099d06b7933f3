"""The card at both well-known paths (:func:`read_card`), and what to change on it for each of its
schema's diagnostics."""

from __future__ import annotations

import json
import re
from typing import Any

import httpx

from ... import _json
from ...client.peer import fetch_card
from ...errors import PeerError
from ...protocol.card import CARD_PATH, LEGACY_CARD_PATH, AgentCard
from ...traffic import TrafficRecorder
from ..features import Finder
from .lines import EVERY_CLIENT, Add


async def read_card(
    url: str,
    http: httpx.AsyncClient,
    traffic: TrafficRecorder,
    headers: dict[str, str],
    timeout: float,
    add: Add,
) -> AgentCard | None:
    find = Finder(traffic, add)
    base = url.split("/.well-known/")[0].rstrip("/")
    found: dict[str, AgentCard] = {}
    for path in (CARD_PATH, LEGACY_CARD_PATH):
        before = find.mark()
        try:
            found[path] = await fetch_card(
                base + path, headers, timeout, http=http, traffic=traffic, cached=False
            )  # the doctor judges the whole answer
        except PeerError as exc:
            if exc.status == 404:
                continue
            last = list(traffic.events)[-1]
            if last.status is None:
                find.found(
                    "error",
                    "card",
                    f"nothing answered at {base + path}: {last.error}",
                    breaks=EVERY_CLIENT,
                    fix="check the URL, and that the agent is running and reachable from here",
                )
                return None
            what = (
                f"{path} answered 200 with what is not a JSON object"
                if last.status == 200
                else str(exc)
            )
            find.found(
                "error",
                "card",
                what,
                before,
                EVERY_CLIENT,
                "serve the card as a JSON object with Content-Type application/json",
            )
    if not found:
        find.found(
            "error",
            "card",
            f"no agent card at {base}{CARD_PATH} or {LEGACY_CARD_PATH}",
            len(traffic.events) - 2,
            EVERY_CLIENT,
            f"serve the card at {CARD_PATH}",
        )
        return None
    if CARD_PATH not in found:
        find.found(
            "warning",
            "card",
            f"the card is only at {LEGACY_CARD_PATH} (the 0.2 path)",
            breaks=["a2a-sdk 1.x", "JS SDK"],
            fix=f"serve it at {CARD_PATH} too",
        )
    else:
        find.found(
            "ok",
            "card",
            f"found at {CARD_PATH}" + (" (and the 0.2 path)" if len(found) == 2 else ""),
        )
    card = found.get(CARD_PATH) or found[LEGACY_CARD_PATH]
    find.found(
        "info",
        "card",
        f"'{card.name}' version {card.raw.get('version')!r}, "
        f"protocolVersion {card.raw.get('protocolVersion')!r}",
    )
    return card


def fix_for(path: str, message: str, card: AgentCard) -> str:
    """What to change on the card for one diagnostic: the field, and to what."""
    base = (card.source or "").split("/.well-known/")[0] or "https://agent.example"
    skill = re.match(r"\$\.skills\[(\d+)\]", path)
    if skill:
        entries = (
            card.skills
        )  # the skills that are objects, in order (what a diagnostic's index counts)
        raw = card.raw.get("skills")
        at = int(skill.group(1))
        entry = raw[at] if _json.is_array(raw) and at < len(raw) else None
        named = entry.get("id") if _json.is_object(entry) and entry in entries else None
        which = f"skill {at}" + (f" ({named!r})" if isinstance(named, str) else "")
        if path.endswith(".tags"):
            return f'give {which} a list of tags, e.g. "tags": [{json.dumps(named or "general")}]'
        if path.endswith(".id") and "twice" in message:
            return f"give {which} an id of its own (another skill has the same)"
        field_name = path.rsplit(".", 1)[-1]
        return (
            f"give {which} its {field_name} (a non-empty string)"
            if "." in path[len(skill.group(0)) :]
            else f"make {which} an object with id, name, description and tags"
        )
    if path == "$.url":
        if "sends calls to" in message:
            return (
                "list the interfaces on the host that serves the card, or name that host yourself"
            )
        return f'add "url": "{base}/" (the 0.3 JSON-RPC endpoint) if 0.3 clients should reach the agent'
    if path == "$.description":
        return 'say in "description" what the agent does'
    if path == "$.name":
        return 'set "name" to a non-empty string naming the agent'
    if path == "$.version":
        return 'set "version" to the agent\'s own version, e.g. "1.0.0"'
    if path == "$.protocolVersion":
        return 'set "protocolVersion" to "0.3.0" (the 0.3 line reads it), or leave it out of a 1.0-only card'
    if path.startswith("$.supportedInterfaces["):
        if path.endswith(".url"):
            return "give the interface an absolute http(s) URL (a gRPC interface: host:port)"
        if path.endswith(".protocolBinding"):
            return 'name the interface\'s binding: "JSONRPC", "HTTP+JSON" or "GRPC"'
        if path.endswith(".protocolVersion"):
            return 'give the interface a protocolVersion the SDKs know: "1.0" or "0.3"'
    if path in ("$.defaultInputModes", "$.defaultOutputModes"):
        return f'list the modes in {path[2:]}, e.g. ["text/plain"]'
    if path == "$.skills":
        return 'list what the agent can do in "skills" (each with id, name, description, tags)'
    if path == "$.capabilities" or path.startswith("$.capabilities."):
        return 'make "capabilities" an object of true/false flags, e.g. {"streaming": true}'
    return f"set {path} as the message says: {message}"


def schema_breaks(report: Any) -> list[str]:
    return [
        line
        for line, what in report.verdict.items()
        if any(w in what for w in ("rejects", "cannot", "finds no"))
    ]
