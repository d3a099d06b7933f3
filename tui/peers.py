"""The peers the TUI talks to: saved under the user's config folder, secrets never written.

A peer's credential is a :class:`PeerAuth` (bearer token, API key header, basic user and
password, an OAuth sign-in by device code or in a browser, a client certificate) plus any other
headers; a secret is saved only as an environment reference.

A header value is saved only when it is one environment reference, alone or after a scheme or a
``name=`` (``${TOKEN}``, ``Bearer ${TOKEN}``, ``session=${SESSION}``); a literal value typed in
stays in memory for the session and is dropped from the file. A URL is saved without its password
and without the values of secret-looking query parameters. The file is readable by its owner only.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import uuid
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import platformdirs

from toolnexus import (
    A2AClient,
    AgentCard,
    AuthorizationCode,
    ClientCertificate,
    ClientCredentials,
    DeviceCode,
)
from toolnexus.client.peer import check_signatures
from toolnexus.errors import (
    InvalidParamsError,
    PeerError,
    TaskNotFoundError,
    UnauthenticatedError,
)
from toolnexus.events import EventBus
from toolnexus.protocol.operations import Binding
from toolnexus.secrets import (
    basic_authorization,
    expand_env,
    is_env_ref,
    savable_headers,
    savable_url,
)

from .saved import locked, stamp, write_private

__all__ = ["Peer", "PeerAuth", "PeerBook", "config_dir", "card_auth"]

FILE = "peers-v1.json"
SHUT_WAIT = 1.0
"""Seconds :meth:`PeerBook.close` gives what it ended (a dial, a removed peer's close under way)
to end, each, before it cancels it: an HTTP client closes in milliseconds; the app is quitting."""


def config_dir() -> Path:
    """``$TOOLNEXUS_CONFIG_DIR``, else the platform's user config folder for toolnexus."""
    override = os.environ.get("TOOLNEXUS_CONFIG_DIR")
    if override:
        return Path(override)

    return Path(platformdirs.user_config_dir("toolnexus"))


AUTH_KINDS = {
    "none": "none",
    "bearer": "bearer token",
    "apikey": "API key",
    "basic": "basic",
    "device": "OAuth device code",
    "browser": "OAuth in a browser",
    "client": "OAuth client credentials",
    "certificate": "client certificate",
}
OAUTH_KINDS = frozenset({"device", "browser", "client"})
"""The kinds whose token an OAuth flow gets (:mod:`toolnexus.client.oauth`), when a call needs it."""

Shown = Callable[[str], None]
"""Tells the user what to do to sign in (a code and an address, or an address to open)."""


@dataclass
class PeerAuth:
    """How a peer wants to be called: ``kind`` (none, bearer, apikey, basic, device, browser,
    client, certificate); ``name`` is the API key's header name, the basic user, the OAuth client id
    followed by the scopes asked for (``terminal a2a read``), or the client certificate's file;
    ``secret`` the token, key, password or OAuth client secret (none for a public client; the
    client credentials grant needs one), a
    literal (kept for the session only) or an ``${ENV}`` reference (saved); ``key`` and ``ca``
    the certificate's private key file (empty: in the certificate's file) and the CA file the
    peer's certificate must chain to (empty: the system's)."""

    kind: str = "none"
    name: str = ""
    secret: str = ""
    key: str = ""
    ca: str = ""

    def __repr__(self) -> str:  # never print the secret
        return f"PeerAuth(kind={self.kind!r}, name={self.name!r}, secret=<{'env' if self.saves_secret else 'hidden'}>)"

    @property
    def saves_secret(self) -> bool:
        return is_env_ref(self.secret)

    def headers(self) -> dict[str, str]:
        """The headers this credential adds, environment references expanded."""
        if self.kind == "bearer" and self.secret:
            return {"Authorization": f"Bearer {expand_env(self.secret)}"}
        if self.kind == "apikey" and self.secret:
            return {self.name or "X-API-Key": expand_env(self.secret)}
        if self.kind == "basic" and (self.name or self.secret):
            return {
                "Authorization": basic_authorization(expand_env(self.name), expand_env(self.secret))
            }
        return {}

    def client_credentials(self, show: Shown | None = None) -> dict[str, Any]:
        """What :class:`A2AClient` takes for the kinds that are not a header: ``oauth=`` (its
        sign-in told to ``show``; default: printed) or ``certificate=``."""
        if self.kind in OAUTH_KINDS:
            client_id, *scopes = self.name.split()
            secret = expand_env(self.secret) or None
            if self.kind == "client":
                return {"oauth": ClientCredentials(client_id, secret or "", scopes)}
            if self.kind == "device":
                grant = DeviceCode(client_id, scopes, client_secret=secret)
                if show is not None:
                    grant.show = show
                return {"oauth": grant}
            return {"oauth": AuthorizationCode(client_id, scopes, open=show, client_secret=secret)}
        if self.kind == "certificate":
            return {
                "certificate": ClientCertificate(
                    expand_env(self.name),
                    expand_env(self.key) or None,
                    ca=expand_env(self.ca) or None,
                )
            }
        return {}

    def templates(self) -> dict[str, str]:
        """The headers as written (``${ENV}`` kept), for copy-as-curl; none for basic (encoded)."""
        if self.kind == "bearer" and self.secret:
            return {"Authorization": f"Bearer {self.secret}"}
        if self.kind == "apikey" and self.secret:
            return {self.name or "X-API-Key": self.secret}
        return {}

    def saved(self) -> dict[str, str] | None:
        if self.kind not in AUTH_KINDS or self.kind == "none":
            return None
        return {
            "kind": self.kind,
            "name": self.name,
            "secret": self.secret if self.saves_secret else "",
            **({"key": self.key, "ca": self.ca} if self.kind == "certificate" else {}),
        }


def card_auth(raw: Any) -> PeerAuth | None:
    """The credential a card asks for (its first security scheme we can fill: bearer, an API key in
    a header, basic; else a device code or browser OAuth flow, mutual TLS), in either SDK line's
    shape; None when it asks for none we know."""
    schemes = raw.get("securitySchemes") if isinstance(raw, dict) else None
    found = (schemes or {}).values() if isinstance(schemes, dict) else ()
    return _header_auth(found) or _flow_auth(found)


def _flow_auth(schemes: Any) -> PeerAuth | None:
    """An oauth2 scheme's device code flow, else its authorization code flow (the device code
    works in any terminal, over ssh too; the other needs a browser here), else its client
    credentials flow (a confidential client's secret), else mutual TLS."""
    kinds: set[str] = set()
    for scheme in schemes:
        if not isinstance(scheme, dict):
            continue
        if "mtlsSecurityScheme" in scheme or scheme.get("type") == "mutualTLS":
            kinds.add("certificate")
        oauth = scheme.get("oauth2SecurityScheme") or (
            scheme if scheme.get("type") == "oauth2" else None
        )
        flows = oauth.get("flows") if isinstance(oauth, dict) else None
        if isinstance(flows, dict):
            kinds |= {kind for flow, kind in _FLOW_KINDS.items() if flow in flows}
    return next((PeerAuth(kind) for kind in _FLOW_KINDS.values() if kind in kinds), None)


_FLOW_KINDS = {
    "deviceCode": "device",
    "authorizationCode": "browser",
    "clientCredentials": "client",
    "mutualTLS": "certificate",
}
"""The Auth tab's kind for each flow (and mutual TLS), in the order the tab prefers them."""


def _header_auth(schemes: Any) -> PeerAuth | None:
    """A bearer, basic or header API key scheme."""
    for scheme in schemes:
        if not isinstance(scheme, dict):
            continue
        http = scheme.get("httpAuthSecurityScheme") or (
            scheme if scheme.get("type") == "http" else None
        )
        if isinstance(http, dict) and str(http.get("scheme", "")).lower() in ("bearer", "basic"):
            return PeerAuth(str(http["scheme"]).lower())
        key = scheme.get("apiKeySecurityScheme") or (
            scheme if scheme.get("type") == "apiKey" else None
        )
        if (
            isinstance(key, dict)
            and str(key.get("location", key.get("in", ""))).lower() == "header"
        ):
            return PeerAuth("apikey", str(key.get("name") or "X-API-Key"))
    return None


def spoken(client: A2AClient | None) -> str:
    """How a peer is spoken to, in a few letters: ``0.3``, ``1.0``, ``legacy``, ``rest`` (1.0
    over HTTP+JSON) or ``grpc``; ``—`` before its card is read."""
    if client is None or client.dialect is None:
        return "—"
    return {Binding.HTTP_JSON: "rest", Binding.GRPC: "grpc"}.get(
        client.binding, client.dialect.value
    )


@dataclass
class Peer:
    """A remote agent: its URL, its header templates, and (once connected) its client."""

    url: str
    headers: dict[str, str] = field(default_factory=dict)
    hosted: bool = False
    auth: PeerAuth = field(default_factory=PeerAuth)
    dialect: str = (
        "auto"  # auto | 0.3 | 1.0 | rest (1.0 over HTTP+JSON) | grpc (1.0 over gRPC) | legacy
    )
    blocking: bool = False
    extensions: list[str] = field(default_factory=list[str])
    """The extensions asked for in every call to this peer (``A2A-Extensions``)."""
    client: A2AClient | None = None
    extended: AgentCard | None = None
    """The extended card the peer gives this peer's credentials, when its card declares one."""
    extended_error: str = ""
    """Why the declared extended card could not be had (a 401 without credentials, say)."""
    sign_in: str = ""
    """What the last OAuth sign-in asked the user to do (the code and address), for the Auth tab."""
    state: str = "new"  # new | checking | reachable | unreachable
    error: str = ""
    removed: str = ""
    """Where it was removed (``here``, ``in another toolnexus-tui (pid N)``); "" while it is in
    the book. A call under way (:meth:`use`) is let finish; its client is closed after it."""
    _dialing: asyncio.Lock = field(
        default_factory=asyncio.Lock, init=False, repr=False, compare=False
    )
    _uses: int = field(default=0, init=False, repr=False, compare=False)
    _dial: asyncio.Task[None] | None = field(default=None, init=False, repr=False, compare=False)
    """The dial under way (:meth:`connect`), which :meth:`shut` ends."""

    @property
    def name(self) -> str:
        return (
            self.client.card.name
            if self.client is not None and self.client.card is not None
            else self.url
        )

    def saved_headers(self) -> dict[str, str]:
        """Only the headers whose values name environment variables: never a literal secret."""
        return savable_headers(self.headers)

    @property
    def keeps_literal(self) -> bool:
        """Whether a secret typed in as a literal lives only in this session (not in the file)."""
        return self.saved_headers() != self.headers or (
            self.auth.kind != "none" and bool(self.auth.secret) and not self.auth.saves_secret
        )

    def templates(self) -> dict[str, str]:
        """Every header as the user wrote it (``${ENV}`` unexpanded), for copy-as-curl."""
        return {**self.headers, **self.auth.templates()}

    def live_headers(self) -> dict[str, str]:
        """What is sent: the headers with their ``${ENV}`` references read, and the credential."""
        return {**{k: expand_env(v) for k, v in self.headers.items()}, **self.auth.headers()}

    @contextlib.asynccontextmanager
    async def use(self) -> AsyncIterator[A2AClient]:
        """The client, for one use (a chat's reply, a cancel, a listing): its connections are
        released after it, and, if the peer was removed meanwhile, the client is closed then.

        Raises:
            PeerError: the peer has no client (it is not connected).
        """
        client = self.client
        if client is None:
            raise PeerError("the peer is not connected")
        self._uses += 1
        try:
            yield client
        finally:
            self._uses -= 1
            await client.release()  # nothing stays open between uses; the next call reconnects
            if self.removed and not self._uses:
                await self._close()

    async def retire(self, where: str) -> None:
        """The peer was removed (``where``): its client is closed now, or after the use under
        way (a chat's reply finishes: its task is the peer's, and runs there either way). A dial
        under way is let end first."""
        self.removed = where
        if not self._uses:
            await self._close()

    @property
    def open(self) -> bool:
        """Whether it has a client, or a dial under way that makes one."""
        return self.client is not None or self._dial is not None

    async def shut(self) -> None:
        """Closed now, for good (the app quits): a dial under way ended (its request cancelled,
        given SHUT_WAIT), the client closed; a use under way is not waited for (it fails, its
        client closed under it)."""
        dial = self._dial
        if dial is not None:
            dial.cancel()
            await asyncio.wait({dial}, timeout=SHUT_WAIT)
        client, self.client = self.client, None
        if client is not None:
            await client.aclose()

    async def _close(self) -> None:
        async with self._dialing:
            client, self.client = self.client, None
            if client is not None:
                await client.aclose()

    async def connect(self, bus: EventBus | None, show: Shown | None = None) -> None:
        """Dial the peer afresh in the dialect asked for, closing the client before. One dial at a
        time: a second (``v`` pressed again while the first still dials) waits, then dials what is
        asked for by then; two at once each replaced the other's client unclosed, and its
        connection was left to the collector (an unclosed-socket warning). ``show``: told what
        to do when an OAuth sign-in (the Auth tab's device or browser kind) needs the user; its
        token is got when a call first needs it (the card's security requirements), on the loop
        of that call, polling without holding it."""
        async with self._dialing:
            if self.removed:  # (a recheck asked before the removal): nothing to dial
                return
            self._dial = dial = asyncio.ensure_future(self._connect(bus, show))
            try:
                await dial  # (this call cancelled: the dial too)
            except asyncio.CancelledError:
                current = asyncio.current_task()
                if not dial.cancelled() or (current is not None and current.cancelling()):
                    raise
                self.state, self.error = "unreachable", "closed (the app quits)"  # shut()
            finally:
                self._dial = None

    async def _connect(self, bus: EventBus | None, show: Shown | None) -> None:
        self.state, self.error = "checking", ""
        old, self.client = self.client, None
        if old is not None:
            await old.aclose()
        headers = self.live_headers()
        binding = {"rest": "http+json", "grpc": "grpc"}.get(self.dialect, "auto")
        try:
            self.client = A2AClient(
                self.url,
                headers=headers,
                bus=bus,
                secret_headers=tuple(headers),
                dialect="1.0" if binding != "auto" else self.dialect,
                binding=binding,
                extensions=self.extensions,
                **self.auth.client_credentials(show),
            )
            card = await self.client.connect()
            # its signatures judged for the card view (a jku fetched bounded, under the
            # address rule); a verdict, never a refusal here
            await check_signatures(
                card, http=self.client.http, timeout=10.0, traffic=self.client.traffic
            )
            self.extended, self.extended_error = None, ""
            if card.extended:  # with this peer's credentials (the Auth tab)
                try:
                    self.extended = await self.client.extended_card(use=False)
                except Exception as exc:  # refused, or not served: said in the Card tab
                    self.extended_error = str(exc)
            if self.dialect != "auto":
                await self._try_binding()
        except Exception as exc:  # a URL that names no peer is said like an unreachable one
            self.state, self.error = "unreachable", str(exc)
            return
        finally:
            if self.client is not None:
                await (
                    self.client.release()
                )  # nothing stays open between uses; the next call reconnects
        self.state = "reachable"

    async def _try_binding(self) -> None:
        """A dialect forced with ``v`` is tried, not taken on the card's word: a task no peer
        keeps is asked for (GetTask, nothing created), and only "task not found" (or a refusal of
        that id) says the peer speaks it. Anything else (-32601, -32009, an HTTP 404) raises a
        PeerError saying the peer does not answer in that dialect there."""
        assert self.client is not None
        try:
            await self.client.get(f"toolnexus-probe-{uuid.uuid4()}")
        except (TaskNotFoundError, InvalidParamsError):
            return  # it understood the call: it speaks this dialect
        except UnauthenticatedError:
            return  # the credentials are the Auth tab's matter; the binding is there
        except Exception as exc:
            raise PeerError(
                f"does not answer in {DIALECT_WORDS.get(self.dialect, self.dialect)} "
                f"(GetTask of an unknown task: {exc})"
            ) from exc


DIALECT_WORDS = {"rest": "HTTP+JSON (1.0)", "grpc": "gRPC (1.0)", "legacy": "the legacy dialect"}
"""How a forced dialect is named when it is tried and fails (0.3 and 1.0 name themselves)."""


@dataclass
class PeersChange:
    """What another toolnexus-tui did to the saved peers since this one last looked."""

    by: int
    """Its pid."""
    added: list[str] = field(default_factory=list[str])
    """The URLs of the peers it added, now known here too."""
    removed: list[str] = field(default_factory=list[str])
    """The URLs of the peers it removed, now gone here too."""
    edited: dict[str, list[str]] = field(default_factory=dict[str, list[str]])
    """The URLs of the peers it changed, each with what changed in words (``dialect 1.0``), now
    changed here too."""

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.edited)


class PeerBook:
    """Peers by URL, persisted to ``config_dir()/peers-v1.json`` (a bad file loads as empty).

    Two toolnexus-tui may run at once on the same folder: each change is made as the servers
    file's are (``tui.saved``), under the file's lock, on the file as it is then (re-read, this
    peer's entry changed, written whole), so neither loses the other's peers; the file says which
    window changed it last (``by``), and :meth:`poll` says what another one added, changed or
    removed. A change made there is taken here field by field (:func:`_take_edit`): only what that
    window changed, so a secret typed here for this session (never in the file) is kept. A peer
    removed (here or there) has its client closed off the caller's loop turn (:meth:`Peer.retire`),
    after a call under way."""

    def __init__(self, folder: Path | str | None = None, pid: int | None = None) -> None:
        self.folder = Path(folder) if folder else config_dir()
        self.pid = os.getpid() if pid is None else pid
        """This toolnexus-tui's pid, as the file names it."""
        self.peers: dict[str, Peer] = {}
        self._saved: dict[str, dict[str, Any]] = {}  # the file's entries by URL, as last read
        self._seen: tuple[int, int, int] | None = None  # the file as last read or written
        self._news: PeersChange | None = None  # what others changed, read under a change of ours
        self._retiring: set[asyncio.Future[None]] = set()  # removed peers' clients being closed
        self._removed: list[Peer] = []  # removed, their client perhaps still open: shut at close()

    @property
    def path(self) -> Path:
        return self.folder / FILE

    def load(self) -> None:
        self._read()
        self._news = None  # the first look: nothing was changed by anyone since

    def _read(self, changing: str = "") -> None:
        """The file's entries; a peer another window added is known here, one it removed is gone
        (kept for :meth:`poll`). ``changing``: the saved URL of the peer this window is changing,
        neither taken back (removed here) nor dropped (saved here, removed in the other: the last
        change wins).
        A file that cannot be read (gone, not JSON) says nothing: no window writes one so, and
        taking it as every peer removed would drop them here, then from the file at the next change."""
        self._seen = stamp(self.path)
        entries: dict[str, dict[str, Any]] = {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            for entry in data.get("peers", []):
                if isinstance(entry, dict) and isinstance(entry.get("url"), str):
                    entries[entry["url"]] = entry
            by = data.get("by") if type(data.get("by")) is int else 0
        except (OSError, ValueError, TypeError, AttributeError):
            return
        news = self._news or PeersChange(by)
        news.by = by or news.by
        here = {savable_url(url): url for url, p in self.peers.items() if not p.hosted}
        who = f"in another toolnexus-tui (pid {news.by})"
        for url, entry in entries.items():
            if url == changing:
                continue
            if url in here:  # known here: what the other window changed of it, if anything
                peer = self.peers[here[url]]
                said = _take_edit(peer, self._saved.get(url) or _entry(peer), entry)
                if said:
                    news.edited[here[url]] = said
                continue
            if url in self.peers:
                continue
            try:
                self.peers[url] = _peer(entry)
            except (ValueError, KeyError, TypeError, AttributeError):
                continue
            news.added.append(url)
        for url in self._saved:
            if url not in entries and url in here and url != changing:
                self._retire(self.peers.pop(here[url]), who)
                news.edited.pop(here[url], None)
                news.removed.append(here[url])
        self._saved = entries
        self._news = news if news else None

    def poll(self) -> PeersChange | None:
        """What another toolnexus-tui added or removed since this one last read or wrote the file."""
        if stamp(self.path) != self._seen:
            self._read()
        news, self._news = self._news, None
        return news

    def save(self, url: str) -> None:
        """The peer at ``url`` as it is here, into the file (a hosted one never is)."""
        peer = self.peers.get(url)
        if peer is not None and not peer.hosted:
            self._change(savable_url(peer.url), _entry(peer))

    def add(self, url: str, headers: dict[str, str] | None = None, *, hosted: bool = False) -> Peer:
        url = url.strip().rstrip("/")
        peer = self.peers.get(url)
        if peer is None:
            peer = self.peers[url] = Peer(url, dict(headers or {}), hosted=hosted)
        elif headers is not None:
            peer.headers = dict(headers)
        return peer

    def remove(self, url: str) -> None:
        """Forget the peer at ``url``, here and (unless hosted) in the file; its client is closed
        (:meth:`_retire`)."""
        peer = self.peers.pop(url, None)
        if peer is None:
            return
        self._retire(peer, "here")
        if not peer.hosted:
            self._change(savable_url(url), None)

    def _retire(self, peer: Peer, where: str) -> None:
        """Close a removed peer's client in a task of its own (the caller is a key's handler or
        the file's watch: never held by a connection's close), after a use under way; with no
        loop running (a script), at :meth:`close`."""
        peer.removed = where
        self._removed = [p for p in self._removed if p.open]
        self._removed.append(peer)
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:  # a script: closed at close()
            return
        closing = loop.create_task(peer.retire(where))
        self._retiring.add(closing)
        closing.add_done_callback(self._retiring.discard)

    def _change(self, saved_url: str, entry: dict[str, Any] | None) -> None:
        """One peer's entry (None: none) into the file, under its lock, on the file as it is now:
        another window's peers are kept (and known here). A file that cannot be written is left
        as it was."""
        try:
            with locked(self.path):
                self._read(changing=saved_url)
                if entry is None:
                    self._saved.pop(saved_url, None)
                else:
                    self._saved[saved_url] = entry
                write_private(self.path, {"peers": list(self._saved.values()), "by": self.pid})
                self._seen = stamp(self.path)
        except OSError:
            pass

    async def close(self) -> None:
        """Every client closed, now (the app quits): the peers' and the removed ones', a dial
        under way on any ended and a use under way not waited for (:meth:`Peer.shut`); a removed
        peer's close under way is given SHUT_WAIT, then cancelled. Nothing is left pending or
        open: a removed peer's close waited 5 s for a dial that took longer (a peer that never
        answers: 30 s) and was left pending, its client open."""
        for peer in [*self.peers.values(), *self._removed]:
            await peer.shut()
        self._removed.clear()
        if self._retiring:
            _, late = await asyncio.wait(set(self._retiring), timeout=SHUT_WAIT)
            for closing in late:
                closing.cancel()
            if late:
                await asyncio.wait(late)


def _peer(entry: dict[str, Any]) -> Peer:
    """A peer as the file has it."""
    auth = entry.get("auth") or {}
    return Peer(
        entry["url"],
        dict(entry.get("headers") or {}),
        dialect=str(entry.get("dialect", "auto")),
        blocking=bool(entry.get("blocking", False)),
        extensions=parse_extensions(
            " ".join(e for e in entry.get("extensions") or () if isinstance(e, str))
        ),
        auth=PeerAuth(
            str(auth.get("kind", "none")),
            str(auth.get("name", "")),
            str(auth.get("secret", "")),
            str(auth.get("key", "")),
            str(auth.get("ca", "")),
        ),
    )


def _take_edit(peer: Peer, before: dict[str, Any], entry: dict[str, Any]) -> list[str]:
    """What another window changed of ``peer`` (its saved entry ``before`` -> ``entry``), taken
    here field by field, in words (empty: nothing). A header or credential it did not change is
    kept as it is here, a literal typed for this session included; a credential it changed to
    one of the same kind and name whose secret the file does not have (a literal typed there)
    keeps the one typed here."""
    try:
        old, new = _peer(before), _peer(entry)
    except (ValueError, KeyError, TypeError, AttributeError):
        return []
    said: list[str] = []
    if new.dialect != old.dialect:
        peer.dialect = new.dialect
        said.append(f"dialect {new.dialect}")
    if new.blocking != old.blocking:
        peer.blocking = new.blocking
        said.append("blocking sends" if new.blocking else "non-blocking sends")
    if new.extensions != old.extensions:
        peer.extensions = new.extensions
        said.append(f"extensions {' '.join(new.extensions) or 'none'}")
    changed = [
        k
        for k in old.headers.keys() | new.headers.keys()
        if old.headers.get(k) != new.headers.get(k)
    ]
    for k in sorted(changed):
        if k in new.headers:
            peer.headers[k] = new.headers[k]
        else:
            peer.headers.pop(k, None)
    if changed:
        said.append(f"headers {', '.join(sorted(changed))}")
    if new.auth.saved() != old.auth.saved():
        mine = peer.auth
        if (
            not new.auth.secret
            and (new.auth.kind, new.auth.name) == (mine.kind, mine.name)
            and mine.secret
        ):
            new.auth.secret = mine.secret  # the secret typed here: kept
        peer.auth = new.auth
        said.append(f"credential {AUTH_KINDS.get(new.auth.kind, new.auth.kind)}")
        if new.auth.kind in ("bearer", "apikey", "basic") and not new.auth.secret:
            said.append("its secret was typed there, for that window only: h types it here")
    return said


def _entry(p: Peer) -> dict[str, Any]:
    """A peer as the file gets it: no literal secret."""
    return {
        "url": savable_url(p.url),
        "headers": p.saved_headers(),
        "dialect": p.dialect,
        "blocking": p.blocking,
        **({"extensions": p.extensions} if p.extensions else {}),
        **({"auth": a} if (a := p.auth.saved()) else {}),
    }


def parse_extensions(text: str) -> list[str]:
    """Extension URIs as typed: separated by spaces or commas, each once, in order."""
    out: list[str] = []
    for uri in text.replace(",", " ").split():
        if uri not in out:
            out.append(uri)
    return out


def parse_headers(text: str) -> dict[str, str]:
    """``Name: value`` lines (or ``;``-separated) as a dict."""
    out: dict[str, Any] = {}
    for line in re.split(r"[;\n]", text):
        name, sep, value = line.partition(":")
        if sep and name.strip():
            out[name.strip()] = value.strip()
    return out
