"""What the server says it can do, against what it does: its lists, resource subscriptions, and
logging."""

from __future__ import annotations

import asyncio
import json
import warnings

from ...errors import PeerError
from ...mcp.session import MCPSession
from ...mcp.transport import mcp_failure, sdk
from ..features import Finder
from .lines import EVERY_CLIENT

_LISTS = {"tools": "tools/list", "resources": "resources/list", "prompts": "prompts/list"}


async def capabilities(session: MCPSession, find: Finder) -> None:
    MCPError = sdk().MCPError

    client, caps = session.client, session.capabilities
    listing = {
        "tools": client.list_tools,
        "resources": client.list_resources,
        "prompts": client.list_prompts,
    }
    find.found(
        "info",
        "capabilities",
        "declared: " + (json.dumps(caps, sort_keys=True) if caps else "none"),
    )
    for name, method in _LISTS.items():
        before = find.mark()
        try:
            listed = await asyncio.wait_for(listing[name](cache_mode="bypass"), session.timeout)
        except MCPError as exc:
            if name in caps:
                find.found(
                    "error",
                    "capabilities",
                    f"declares {name} but {method} fails: {exc.error.code} {exc.error.message}",
                    before,
                    EVERY_CLIENT,
                    f"answer {method}, or stop declaring {name}",
                    at=f"capabilities.{name}",
                )
            elif exc.error.code != -32601:
                find.found(
                    "warning",
                    "capabilities",
                    f"{method} (not declared) is answered with {exc.error.code}, not "
                    "-32601 (method not found)",
                    before,
                    fix="answer a method the server does not offer with -32601",
                )
            continue
        except Exception as exc:  # noqa: BLE001 - said as a finding
            find.found(
                "error" if name in caps else "warning",
                "capabilities",
                f"{method} failed: {mcp_failure(exc, session.recorder)}",
                before,
                EVERY_CLIENT if name in caps else [],
                at=f"capabilities.{name}",
            )
            continue
        items = getattr(listed, name, None) or []
        if name in caps:
            find.found("ok", "capabilities", f"{name}: {len(items)} listed", at=method)
        else:
            find.found(
                "warning",
                "capabilities",
                f"answers {method} ({len(items)}) without declaring {name}",
                before,
                ["clients that ask only what the server declares (most hosts)"],
                f"declare the {name} capability",
                at=method,
            )
    await _subscribe(session, find)
    await _logging(session, find)


async def _subscribe(session: MCPSession, find: Finder) -> None:
    MCPError = sdk().MCPError

    resources = session.capabilities.get("resources") or {}
    if not resources.get("subscribe") or session.modern:
        return  # 2026-07-28 subscribes on the listen stream, which the session opened
    try:
        listed = await session.resources()
    except PeerError:
        return
    if not listed:
        return
    uri = listed[0]["uri"]
    before = find.mark()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await asyncio.wait_for(session.client.subscribe_resource(uri), session.timeout)
            await asyncio.wait_for(session.client.unsubscribe_resource(uri), session.timeout)
    except (MCPError, Exception) as exc:  # noqa: BLE001
        find.found(
            "error",
            "capabilities",
            f"declares resources.subscribe but subscribing to {uri} fails: "
            f"{mcp_failure(exc, session.recorder)}",
            before,
            ["clients that subscribe"],
            "answer resources/subscribe and resources/unsubscribe, or stop declaring subscribe",
            at="capabilities.resources.subscribe",
        )
        return
    find.found("ok", "capabilities", f"resources.subscribe: subscribed to {uri} and back")


async def _logging(session: MCPSession, find: Finder) -> None:
    if "logging" not in session.capabilities:
        return
    if session.modern:
        find.found(
            "info",
            "capabilities",
            "declares logging, deprecated on 2026-07-28: a client asks for log messages "
            "per request there",
        )
        return
    before = find.mark()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            await asyncio.wait_for(session.client.set_logging_level("info"), session.timeout)
    except Exception as exc:  # noqa: BLE001
        find.found(
            "error",
            "capabilities",
            f"declares logging but logging/setLevel fails: {mcp_failure(exc, session.recorder)}",
            before,
            ["clients that set a log level"],
            "answer logging/setLevel, or stop declaring logging",
            at="capabilities.logging",
        )
        return
    find.found("ok", "capabilities", "logging: logging/setLevel answered")
