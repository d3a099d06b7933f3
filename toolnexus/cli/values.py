"""What a value on the command line stands for, read and checked (a mistake is a ``UsageError``):
a peer's URL, ``--header``, a secret named by its environment variable, an MCP server."""

from __future__ import annotations

import os

from ..http.fetch import peer_url
from ..mcp import split_command
from ..secrets import expand_env
from .output import UsageError


def _peer(url: str) -> str:
    """A peer's URL from the command line; anything else is a usage error."""
    try:
        return peer_url(url)
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def _headers(pairs: list[str]) -> dict[str, str]:
    out = {}
    for pair in pairs:
        name, sep, value = pair.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"--header must be NAME:VALUE, not {pair!r}")

        out[name.strip()] = expand_env(value.strip())
    return out


def _env_secret(flag: str, name: str) -> str:
    """The secret held by environment variable ``name`` (``flag`` names the option it came by)."""
    value = os.environ.get(name, "")
    if not value:
        raise UsageError(f"{flag} {name}: that environment variable is not set")
    return value


def _mcp_target(text: str, what: str) -> tuple[str | list[str], dict[str, str] | None]:
    """An MCP server from the command line: a URL, or a command line (``NAME=value`` words first)
    starting a stdio server: ``(target, env)``."""
    if text.startswith(("http://", "https://")):
        return text, None
    try:
        argv, env = split_command(text)
    except ValueError as exc:
        raise UsageError(f"{what}: the command line: {exc}") from None
    if not argv:
        raise UsageError(f"{what}: no command to run")
    return argv, env or None
