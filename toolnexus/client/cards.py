"""A peer's card, fetched (both well-known paths, bounded, cached by its validators) and its
signatures checked (the key set a signature's ``jku`` names fetched under the address rule)."""

from __future__ import annotations

import collections
import hashlib
import time
from collections.abc import Mapping
from urllib.parse import urlsplit

import httpx

from .. import _json
from ..errors import (
    PeerError,
)
from ..http.fetch import MAX_CARD, Address, exchange, host_address, peer_url, pinned, why
from ..protocol.card import CARD_PATH, LEGACY_CARD_PATH, AgentCard, origin_text
from ..protocol.signing import (
    CardSignatures,
    KeyError_,
    KeySet,
    signature_jkus,
    verify_card,
)
from ..traffic import TrafficRecorder

__all__ = ["fetch_card", "check_signatures", "fetch_jwks"]

MAX_JWKS = 256 * 1024
"""The largest key set read from a card signature's ``jku``, in bytes."""
MAX_JKUS = 4
"""The ``jku`` URLs fetched for one card at most (each signature may name one)."""


class _CardCache:
    """Cards fetched in this process, by URL and request headers (hashed: no credential is kept),
    with their validators: the next fetch of the same card asks conditionally (``If-None-Match``,
    ``If-Modified-Since``) and a 304 costs no body. Bounded in bytes, the oldest dropped first."""

    LIMIT = 8 * 1024 * 1024

    def __init__(self) -> None:
        self._cards: collections.OrderedDict[str, tuple[dict[str, str], bytes]] = (
            collections.OrderedDict()
        )
        self._bytes = 0

    @staticmethod
    def key(url: str, headers: Mapping[str, str]) -> str:
        given = "\n".join(
            f"{k.lower()}:{v}" for k, v in sorted(headers.items(), key=lambda kv: kv[0].lower())
        )
        return url + "\n" + hashlib.sha256(given.encode("utf-8", "surrogateescape")).hexdigest()

    def validators(self, key: str) -> dict[str, str]:
        """The conditional headers for the card kept under ``key`` (none for a card not kept)."""
        held = self._cards.get(key)
        return held[0] if held is not None else {}

    def body(self, key: str) -> bytes | None:
        held = self._cards.get(key)
        if held is None:
            return None
        self._cards.move_to_end(key)
        return held[1]

    def keep(self, key: str, response: httpx.Response, content: bytes) -> None:
        validators = {
            name: response.headers[given]
            for given, name in (("etag", "If-None-Match"), ("last-modified", "If-Modified-Since"))
            if given in response.headers
        }
        old = self._cards.pop(key, None)
        if old is not None:
            self._bytes -= len(old[1])
        if not validators or "no-store" in response.headers.get("cache-control", ""):
            return
        self._cards[key] = (validators, content)
        self._bytes += len(content)
        while self._bytes > self.LIMIT and self._cards:
            self._bytes -= len(self._cards.popitem(last=False)[1][1])


_CARDS = _CardCache()


async def fetch_card(
    url: str,
    headers: Mapping[str, str] | None = None,
    timeout: float = 10.0,
    *,
    http: httpx.AsyncClient | None = None,
    traffic: TrafficRecorder | None = None,
    version: str = "1.0",
    cached: bool = True,
    verify: bool = False,
    keys: KeySet | None = None,
) -> AgentCard:
    """Fetch a card from its URL, or from a base URL (``/.well-known/agent-card.json``, then
    ``/.well-known/agent.json``). Sends ``A2A-Version: version`` (the newest the caller speaks;
    a server that serves one card per version picks by it) unless ``headers`` name one. A card
    fetched before is asked for conditionally (a 304 reuses it), unless ``cached`` is False or
    ``traffic`` records a cassette (which must hold the whole card to replay it).

    With ``verify`` (or ``keys``), its signatures are checked (:func:`check_signatures`) and the
    verdict is ``card.signatures``; an invalid or missing signature is a verdict, not an error.

    Raises:
        PeerError: nothing answered, or no card was found, or it is not a JSON object.
    """
    url = peer_url(url)
    own = http is None
    client = http or httpx.AsyncClient(timeout=timeout)
    if not any(k.lower() == "a2a-version" for k in (headers or {})):
        headers = {"A2A-Version": version, **(headers or {})}
    try:
        candidates = _candidates(url)
        last = ""
        for candidate in candidates:
            started = time.perf_counter()
            conditional = cached and (traffic is None or traffic.cassette is None)
            key = _CARDS.key(candidate, headers or {}) if conditional else ""
            try:
                r, content = await exchange(
                    client,
                    "GET",
                    candidate,
                    limit=MAX_CARD,
                    timeout=timeout,
                    headers={**(headers or {}), **_CARDS.validators(key)},
                )
            except httpx.HTTPError as exc:
                if traffic is not None:
                    traffic.sent(
                        "GET", candidate, started, dict(headers or {}), b"", error=why(exc)
                    )
                raise PeerError(f"cannot fetch the agent card at {candidate}: {why(exc)}") from None
            if traffic is not None:
                traffic.sent("GET", candidate, started, dict(r.request.headers), b"", (r, content))
            if r.status_code == 404 and candidate != candidates[-1]:
                last = f"{candidate} answered 404"
                continue
            if r.status_code == 304 and (kept := _CARDS.body(key)) is not None:
                content = kept  # unchanged since we last fetched it
            elif r.status_code == 200:
                if key:
                    _CARDS.keep(key, r, content)
            else:
                what = _named(candidates, candidate, bool(last))
                raise PeerError(f"{what} answered HTTP {r.status_code}", status=r.status_code)
            card = _card_of(content, candidate, _named(candidates, candidate, bool(last)))
            if verify or keys is not None:
                await check_signatures(card, keys, http=client, timeout=timeout, traffic=traffic)
            return card
        raise PeerError(f"no agent card found: {last}")
    finally:
        if own:
            await client.aclose()


def _candidates(url: str) -> list[str]:
    """Where a card is asked for: the URL named, when it names a card; else a base URL's two
    well-known paths, 1.0's first."""
    if "/.well-known/" in url or url.endswith(".json"):
        return [url]
    base = url.rstrip("/")
    return [base + CARD_PATH, base + LEGACY_CARD_PATH]


def _named(candidates: list[str], candidate: str, after_404: bool) -> str:
    """The card at ``candidate`` as an error names it: after a 404 at the card's path, both
    paths tried."""
    if after_404:
        return f"no agent card at {candidates[0]} (404), and the agent card at {candidate}"
    return f"the agent card at {candidate}"


def _card_of(content: bytes, candidate: str, named: str) -> AgentCard:
    """The card a fetch of ``candidate`` answered (``named``: how an error names it)."""
    try:
        raw = _json.loads(content)
    except (*_json.JSONDecodeError, ValueError):
        raise PeerError(f"{named} is not JSON") from None
    if not isinstance(raw, dict):
        raise PeerError(f"{named} is not a JSON object")
    return AgentCard(raw, candidate)


async def check_signatures(
    card: AgentCard,
    keys: KeySet | None = None,
    *,
    http: httpx.AsyncClient | None = None,
    timeout: float = 10.0,
    traffic: TrafficRecorder | None = None,
) -> CardSignatures:
    """Check ``card``'s signatures and keep the verdict as ``card.signatures``: with ``keys`` when
    given (then only those are trusted), else with the key set each signature's ``jku`` names,
    fetched by :func:`fetch_jwks` (at most :data:`MAX_JKUS`)."""
    fetched: dict[str, KeySet | str] = {}
    if keys is None:
        jkus = signature_jkus(card.raw)
        if jkus:
            own = http is None
            client = http or httpx.AsyncClient(timeout=timeout)
            try:
                for jku in jkus[:MAX_JKUS]:
                    fetched[jku] = await fetch_jwks(
                        jku, card.source, http=client, timeout=timeout, traffic=traffic
                    )
            finally:
                if own:
                    await client.aclose()
    card.signatures = verify_card(card.raw, keys, fetched)
    return card.signatures


def _public(url: str) -> bool:
    """Whether ``url``'s host is a public address or a name other than localhost."""
    host = (urlsplit(url).hostname or "").lower().rstrip(".")
    if host == "localhost" or host.endswith(".localhost"):
        return False
    address = host_address(host)
    return address is None or address.is_global


async def fetch_jwks(
    jku: str,
    card_url: str,
    *,
    http: httpx.AsyncClient,
    timeout: float = 10.0,
    traffic: TrafficRecorder | None = None,
) -> KeySet | str:
    """The key set a card signature's ``jku`` names, or why not (a string).

    The address rule: http(s) only, no user name or password, no redirect; an address that is not
    public (loopback, private, link-local such as cloud metadata) only when the card itself came
    from such a host (a local peer the user named), so that a card from elsewhere cannot make
    this client reach into the network it sits in. The name is resolved once, that address
    checked and connected to; the answer is read bounded (:data:`MAX_JWKS`, ``timeout``)."""
    parts = urlsplit(jku)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"{jku!r} is not an http(s) URL"
    if parts.username or parts.password:
        return "a jku must not carry a user name or password"
    local_ok = bool(card_url) and not _public(card_url)

    def refuse(address: Address, port: int) -> str | None:
        if local_ok or (address.is_global and not address.is_multicast):
            return None
        where = origin_text(card_url) if card_url else "a card given as data"
        return f"{jku} is a local or private address ({address}), refused for a card from {where}"

    where = await pinned(jku, refuse, timeout)
    if isinstance(where, str):
        return where
    target, host, extensions = where
    started = time.perf_counter()
    headers = {**host, "accept": "application/jwk-set+json, application/json"}
    try:
        r, content = await exchange(
            http,
            "GET",
            target,
            headers=headers,
            limit=MAX_JWKS,
            timeout=timeout,
            extensions=extensions,
        )
    except httpx.HTTPError as exc:
        return why(exc)
    if traffic is not None:
        traffic.sent("GET", jku, started, headers, b"", (r, content))
    if r.status_code != 200:
        return f"it answered HTTP {r.status_code}"
    try:
        return KeySet.load(content)
    except KeyError_ as exc:
        return str(exc)
