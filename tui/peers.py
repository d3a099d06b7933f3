"""The peers the TUI talks to: saved under the user's config folder, secrets never written.

A header value is saved only when it is one environment reference, alone or after a scheme or a
``name=`` (``${TOKEN}``, ``Bearer ${TOKEN}``, ``session=${SESSION}``); a literal value typed in
stays in memory for the session and is dropped from the file. A URL is saved without its password
and without the values of secret-looking query parameters. The file is readable by its owner only.
"""

from __future__ import annotations

import json
import os
import re
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from toolnexus import A2AClient
from toolnexus.events import EventBus
from toolnexus.mcp_client import expand_env
from toolnexus.traffic import is_secret_name

from .saved import write_private

__all__ = ["Peer", "PeerBook", "config_dir"]

_ENV_ONLY = re.compile(r"^(?:(?i:bearer|basic|token|digest|apikey|key) |[A-Za-z_][A-Za-z0-9_.-]*=)?"
                       r"\$\{[A-Za-z_][A-Za-z0-9_]*\}$")
FILE = "peers-v1.json"


def config_dir() -> Path:
    """``$TOOLNEXUS_CONFIG_DIR``, else the platform's user config folder for toolnexus."""
    override = os.environ.get("TOOLNEXUS_CONFIG_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_config_dir("toolnexus"))


@dataclass
class Peer:
    """A remote agent: its URL, its header templates, and (once connected) its client."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    hosted: bool = False
    dialect: str = "auto"  # auto | 0.3 | 1.0 | legacy
    blocking: bool = False
    client: A2AClient | None = None
    state: str = "new"  # new | checking | reachable | unreachable
    error: str = ""

    @property
    def name(self) -> str:
        return self.client.card.name if self.client is not None and self.client.card is not None else self.url

    def saved_headers(self) -> dict[str, str]:
        """Only the headers whose values name environment variables: never a literal secret."""
        return {k: v for k, v in self.headers.items() if _ENV_ONLY.match(v)}

    async def connect(self, bus: EventBus | None) -> None:
        self.state, self.error = "checking", ""
        if self.client is not None:
            await self.client.aclose()
        headers = {k: expand_env(v) for k, v in self.headers.items()}
        self.client = A2AClient(self.url, headers=headers, bus=bus, secret_headers=tuple(headers), dialect=self.dialect)
        try:
            await self.client.connect()
        except Exception as exc:
            self.state, self.error = "unreachable", str(exc)
            return
        finally:
            await self.client.release()  # nothing stays open between uses; the next call reconnects
        self.state = "reachable"


class PeerBook:
    """Peers by URL, persisted to ``config_dir()/peers-v1.json`` (a bad file loads as empty)."""

    def __init__(self, folder: Path | None = None) -> None:
        self.folder = folder or config_dir()
        self.peers: dict[str, Peer] = {}

    def load(self) -> None:
        try:
            data = json.loads((self.folder / FILE).read_text(encoding="utf-8"))
            for entry in data.get("peers", []):
                self.peers.setdefault(entry["url"], Peer(entry["url"], dict(entry.get("headers") or {}),
                                                         dialect=str(entry.get("dialect", "auto")),
                                                         blocking=bool(entry.get("blocking", False))))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return

    def save(self) -> None:
        saved = [{"url": _savable_url(p.url), "headers": p.saved_headers(), "dialect": p.dialect,
                  "blocking": p.blocking} for p in self.peers.values() if not p.hosted]
        try:
            write_private(self.folder / FILE, {"peers": saved})
        except OSError:
            pass

    def add(self, url: str, headers: dict[str, str] | None = None, *, hosted: bool = False) -> Peer:
        url = url.strip().rstrip("/")
        peer = self.peers.get(url)
        if peer is None:
            peer = self.peers[url] = Peer(url, dict(headers or {}), hosted=hosted)
        elif headers is not None:
            peer.headers = dict(headers)
        return peer

    def remove(self, url: str) -> None:
        self.peers.pop(url, None)

    async def close(self) -> None:
        for peer in self.peers.values():
            if peer.client is not None:
                await peer.client.aclose()


def _savable_url(url: str) -> str:
    """``url`` without the secrets it may carry (a password, secret query parameter values)."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2] if "@" in parts.netloc else parts.netloc
    pairs = [(k, v) for k, v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True) if not is_secret_name(k)]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, urllib.parse.urlencode(pairs), parts.fragment))


def parse_headers(text: str) -> dict[str, str]:
    """``Name: value`` lines (or ``;``-separated) as a dict."""
    out: dict[str, Any] = {}
    for line in re.split(r"[;\n]", text):
        name, sep, value = line.partition(":")
        if sep and name.strip():
            out[name.strip()] = value.strip()
    return out
