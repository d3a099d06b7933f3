"""What :class:`~toolnexus.client.peer.A2AClient` is built on (:class:`Connection`): one peer, its
card fetched and checked, the dialect and binding chosen from it (the transport), the HTTP client,
the headers and credentials a call carries where they may go, and the one way a call goes out
(``_call``: the tenant named, an expired OAuth token fetched again once). The operations are the
mixins over it: sending (:mod:`.sending`), a task's calls (:mod:`.tasks`), its push configs
(:mod:`.push`)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any, Self

import httpx

from .. import trace
from ..debug.cassette import CassetteWriter
from ..errors import PeerError
from ..events import EventBus
from ..http.fetch import peer_url
from ..protocol.card import AgentCard, origin_text
from ..protocol.dialects import Dialect
from ..protocol.extensions import HEADER, LEGACY_HEADER, header_value
from ..protocol.operations import BINDING_NAMES, OPERATIONS, Binding
from ..protocol.signing import KeySet
from ..secrets import basic_authorization
from ..traffic import TrafficRecorder
from .cards import check_signatures, fetch_card
from .credentials import ClientCertificate, Credentials
from .oauth import Grant, TokenSource
from .transports import CUSTOM, Transport, transport_for

__all__ = ["MAX_WARNINGS", "Connection", "Warnings"]

MAX_WARNINGS = 100
"""The warnings a client keeps (:class:`Warnings`): a peer that faults on every call, each time in
other words (a task id, its own text), grew a long-lived client's list without end."""

_SPOKEN = {Binding.GRPC: ("1.0", "0.3"), Binding.HTTP_JSON: ("1.0", "0.3")}
"""The dialects a binding other than JSON-RPC is spoken in."""


def _asked(binding: str, dialect: str) -> tuple[str | None, Binding | None]:
    """The custom binding and the standard one asked for (None: not that kind), checked with the
    dialect asked for: ``ValueError`` for one that is no binding, or a dialect it is not spoken in."""
    if dialect not in ("auto", "0.3", "1.0", "legacy"):
        raise ValueError(f"dialect must be auto, 0.3, 1.0 or legacy, not {dialect!r}")
    custom = binding if binding in CUSTOM else None
    if binding.lower() not in BINDING_NAMES and custom is None:
        raise ValueError(
            f"binding must be auto, jsonrpc, http+json, grpc or a registered one, not {binding!r}"
        )
    forced = BINDING_NAMES.get(binding.lower())
    spoken = _SPOKEN.get(forced) if forced is not None else None
    if forced is not None and spoken is not None and dialect not in ("auto", *spoken):
        only = " and ".join(spoken) + " only"
        raise ValueError(f"the {forced.value} binding is spoken in {only}, not in {dialect}")
    return custom, forced


def _uris(extensions: Sequence[str]) -> list[str]:
    """The extensions' URIs, stripped: ``ValueError`` for anything else (a string, one with a comma)."""
    if isinstance(extensions, str) or any(
        not isinstance(u, str) or not u.strip() or "," in u for u in extensions
    ):
        raise ValueError("extensions must be a list of URIs (without commas)")
    return [u.strip() for u in extensions]


def _skill_of(params: Mapping[str, Any]) -> str | None:
    """The skill a send's message names (its ``metadata.skill``), else None."""
    message = params.get("message")
    metadata = message.get("metadata") if isinstance(message, dict) else None
    skill = metadata.get("skill") if isinstance(metadata, dict) else None
    return skill if isinstance(skill, str) else None


class Warnings(list[str]):
    """A client's warnings, in the order said: the first :data:`MAX_WARNINGS` kept, then one more
    line that counts those not kept. Nothing kept moves or goes, so a reader that remembers how
    many it has seen (``warnings[seen:]``) reads on as before."""

    __slots__ = ("dropped",)

    def __init__(self) -> None:
        super().__init__()
        self.dropped = 0

    def append(self, note: str) -> None:
        if len(self) < MAX_WARNINGS:
            super().append(note)
            return
        self.dropped += 1
        plural = "s" if self.dropped > 1 else ""
        said = f"{self.dropped} more warning{plural} not kept (the first {MAX_WARNINGS} are)"
        if len(self) == MAX_WARNINGS:
            super().append(said)
        else:
            self[MAX_WARNINGS] = said


class Connection:
    """One peer as :class:`~toolnexus.client.peer.A2AClient` talks to it (its arguments are said
    there): the card, the transport chosen from it, the HTTP client, what every call carries."""

    def __init__(
        self,
        card_or_url: str | AgentCard | dict[str, Any],
        *,
        headers: Mapping[str, str] | None = None,
        timeout: float = 30.0,
        dialect: str = "auto",
        bus: EventBus | None = None,
        secret_headers: tuple[str, ...] = (),
        http: httpx.AsyncClient | None = None,
        binding: str = "auto",
        record: str | os.PathLike[str] | CassetteWriter | None = None,
        verify: bool = False,
        keys: KeySet | None = None,
        tenant: str | None = None,
        extensions: Sequence[str] = (),
        basic: tuple[str, str] | None = None,
        oauth: Grant | None = None,
        bearer: str | None = None,
        api_key: str | None = None,
        certificate: ClientCertificate | None = None,
    ) -> None:
        custom, self.forced_binding = _asked(binding, dialect)
        self.custom = custom
        """The custom binding asked for (:func:`~toolnexus.client.transports.register_binding`)."""
        self.card: AgentCard | None = None
        self.url = ""
        if isinstance(card_or_url, AgentCard):
            self.card = card_or_url
        elif isinstance(card_or_url, dict):
            self.card = AgentCard(card_or_url)
        else:
            self.url = peer_url(card_or_url)
        self.headers = dict(headers or {})
        self.timeout = timeout
        self.forced = None if dialect == "auto" else Dialect(dialect)
        self.dialect: Dialect | None = self.forced
        self.dialect_reason = "forced by the caller" if self.forced else ""
        self.endpoint = ""
        self.bus = bus
        self.traffic = TrafficRecorder(bus, peer=self.url or (self.card.name if self.card else ""))
        for value in (basic and basic_authorization(*basic), basic and basic[1], bearer, api_key):
            if value:  # a secret like any header credential, wherever it appears
                self.traffic.secret("authorization", value)
        for name in secret_headers:
            self.traffic.secret(name, self.headers.get(name))
        self.tokens = TokenSource(oauth, self.traffic) if oauth is not None else None
        """Where the bearer token comes from, with ``oauth``."""
        if certificate is not None and http is not None:
            raise ValueError(
                "a client certificate is for the client's own HTTP client: give it "
                "to the httpx client you pass instead"
            )
        self.credentials = Credentials(bearer, api_key, basic, self.tokens, certificate)
        """What the user holds; each call carries what the card asks of it."""
        self._tls = certificate.ssl_context() if certificate is not None else None
        self._auth: dict[str, str] = {}
        self._own_cassette = record is not None and not isinstance(record, CassetteWriter)
        if record is not None:
            self.traffic.cassette = (
                record if isinstance(record, CassetteWriter) else CassetteWriter(record)
            )
        self._given_http = http
        self._own: httpx.AsyncClient | None = None
        self._transport: Transport | None = None  # chosen by connect(), from the card
        self._fallback_tried = False
        self.credentials_sent = True
        """False when the card sends calls to a host other than the one named: then the headers
        given here are not sent (see :meth:`connect`)."""
        self.warnings: list[str] = Warnings()
        self.keys = keys
        self.verify = verify or keys is not None
        self.extensions = _uris(extensions)
        self.activated: list[str] = []
        """The extensions the peer's last answer named as activated (``A2A-Extensions``)."""
        self._tenant = tenant
        self.tenant = tenant or ""
        """What every 1.0 call names as its tenant ("" none): the one given, else the card's."""

    @property
    def binding(self) -> Binding:
        """The binding calls go over (before :meth:`connect`: the one asked for, else JSON-RPC)."""
        if self._transport is not None:
            return self._transport.binding
        return self.forced_binding or Binding.JSONRPC

    @property
    def transport(self) -> Transport:
        """The transport :meth:`connect` chose (``TypeError`` before it has run)."""
        if self._transport is None:
            raise TypeError("the client is not connected: await connect() first")
        return self._transport

    def __repr__(self) -> str:
        return f"A2AClient(peer={self.peer!r}, dialect={self.dialect and self.dialect.value!r})"

    @property
    def peer(self) -> str:
        return (self.card.name if self.card and self.card.name else "") or self.url or self.endpoint

    @property
    def http(self) -> httpx.AsyncClient:
        """The HTTP client: the caller's, or our own, opened on first use."""
        if self._given_http is not None:
            return self._given_http
        if self._own is None or self._own.is_closed:
            if self._tls is not None and self.credentials_sent:
                self._own = httpx.AsyncClient(timeout=self.timeout, verify=self._tls)
            else:
                self._own = httpx.AsyncClient(timeout=self.timeout)
        return self._own

    def sent_headers(self) -> dict[str, str]:
        """The headers every call carries: the caller's and the credentials the card asked for,
        where they may go (see :meth:`connect`)."""
        return {**self.headers, **self._auth} if self.credentials_sent else {}

    def channel_credentials(self) -> Any:
        """gRPC's TLS credentials with the client certificate, where it may go (else None)."""
        certificate = self.credentials.certificate
        if certificate is None or not self.credentials_sent:
            return None
        return certificate.grpc_credentials()

    def warn(self, note: str) -> None:
        """Add ``note`` to :attr:`warnings`, once."""
        if note not in self.warnings:
            self.warnings.append(note)

    async def release(self) -> None:
        """Close our own connections (they reopen on the next call); for callers that come and go."""
        own, self._own = self._own, None
        if own is not None:
            await own.aclose()
        if self._transport is not None:
            await self._transport.close()

    async def aclose(self) -> None:
        await self.release()
        if self._own_cassette:
            self.traffic.cassette.close()

    async def __aenter__(self) -> Self:
        try:
            await self.connect()
        except BaseException:  # no __aexit__ follows: what connect opened is closed here
            await self.aclose()
            raise
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # -- the card and the dialect ----------------------------------------------------------------
    async def connect(self) -> AgentCard:
        """Fetch the card (when given a URL) and choose the dialect and endpoint."""
        if self.card is None:
            version = (
                "0.3" if self.forced in (Dialect.V03, Dialect.LEGACY) else "1.0"
            )  # what it will speak
            self.card = await fetch_card(
                self.url,
                self.headers,
                self.timeout,
                http=self.http,
                traffic=self.traffic,
                version=version,
            )
            self.traffic.peer = self.card.name or self.url
        if self.verify:  # a card given already checked keeps its verdict, unless keys are given
            verdict = self.card.signatures
            if verdict is None or self.keys is not None:
                verdict = await check_signatures(
                    self.card, self.keys, http=self.http, timeout=self.timeout, traffic=self.traffic
                )
            if not verdict.valid:
                raise PeerError(f"the agent card's signature is not valid: {verdict.summary}")
        if self._transport is None:
            custom = self._custom(self.card)
            dialect, endpoint, reason, binding = custom or self.card.route(
                self.forced_binding, self.forced.value if self.forced else None
            )
            if endpoint.startswith("/") and self.card.source:  # a relative url on the card
                endpoint = self.card.source.split("/.well-known/")[0] + endpoint
            self.endpoint = endpoint
            transport = (
                CUSTOM[str(binding)](self, Dialect(dialect))
                if custom
                else transport_for(self, Binding(binding), Dialect(dialect))
            )
            if (
                self.forced is not None and transport.caller_dialect and not custom
            ):  # JSON-RPC speaks the one asked for
                transport = transport_for(self, transport.binding, self.forced)
            else:
                self.dialect, self.dialect_reason = transport.dialect, reason
            self._transport = transport
            if self._tenant is None:
                self.tenant = self.card.tenant(transport.binding, transport.dialect.value)
            named = self.url or self.card.source
            holds = self.headers or self.credentials.given
            if named and holds and self._transport.elsewhere(endpoint, named):
                self.credentials_sent = False
                self.warnings.append(
                    f"the card sends calls to {endpoint}, not to {origin_text(named)} that you named: "
                    "your headers (credentials) are not sent there; name that host yourself to send them"
                )
                if self.credentials.certificate is not None and self._own is not None:
                    own, self._own = self._own, None  # the next connection presents no certificate
                    await own.aclose()
        return self.card

    def _custom(self, card: AgentCard) -> tuple[str, str, str, str] | None:
        """``(dialect, endpoint, reason, uri)`` of the custom binding to use: the one asked for,
        else the card's first interface when its binding is registered; None for none."""
        listed = card.interfaces[:1] if self.custom is None else card.interfaces
        for interface in listed:
            uri = interface.get("protocolBinding")
            if (
                uri in CUSTOM
                and (self.custom is None or uri == self.custom)
                and interface.get("url")
            ):
                version = str(interface.get("protocolVersion") or "1.0")
                dialect = "0.3" if version.startswith("0.") else "1.0"
                why = "asked for" if self.custom else "the card's first interface"
                return dialect, str(interface["url"]), f"{uri}: a registered binding, {why}", uri
        if self.custom is not None:
            raise PeerError(f"the card lists no interface of the binding {self.custom}")
        return None

    async def extended_card(self, *, use: bool = True) -> AgentCard:
        """The peer's extended card (GetExtendedAgentCard; 0.3's
        ``agent/getAuthenticatedExtendedCard``), as this client's credentials get it; ``use``:
        it replaces :attr:`card` (the binding and endpoint stay as chosen). A peer whose card
        declares none answers -32004 (0.3: -32007), raised as that error."""
        await self.connect()
        result = await self._call("extended", {})
        if not isinstance(result, dict):
            raise PeerError(f"{self.peer}: its extended card is not a JSON object")
        source = self.card.source if self.card is not None else ""
        card = AgentCard(result, source)
        if use:
            self.card = card
        return card

    # -- a call -------------------------------------------------------------------------------------
    def request_headers(self, dialect: Dialect, stream: bool = False) -> dict[str, str]:
        """The headers of a call in ``dialect``: JSON in and out (or SSE), the caller's headers where they
        may go, 1.0's version header, and the running task's ``traceparent``."""
        h = {"content-type": "application/json", **self.sent_headers()}
        if dialect is Dialect.V10:
            h["A2A-Version"] = "1.0"
        if self.extensions:
            h[HEADER] = header_value(self.extensions)
            if dialect is not Dialect.V10:  # 0.3's name, which 0.3 peers read
                h[LEGACY_HEADER] = h[HEADER]
        h["accept"] = "text/event-stream" if stream else "application/json"
        parent = trace.outgoing()  # inside a served task's run: the remote task joins its trace
        if parent is not None:
            h["traceparent"] = parent
        return h

    def use(self, endpoint: str) -> None:
        """Speak to ``endpoint`` in the binding and dialect given to the constructor, whatever the
        card says (the doctor probes each interface a card declares this way)."""
        if self.forced is None:
            raise ValueError("use() needs the dialect given to the client")
        self.endpoint = endpoint
        self._transport = transport_for(self, self.forced_binding or Binding.JSONRPC, self.forced)

    async def _call(self, op: str, params: dict[str, Any], *, empty_ok: bool = False) -> Any:
        skill = _skill_of(params)
        await self._ready(skill)
        params = self._tenanted(params)
        try:
            return await self.transport.call(OPERATIONS[op], params, empty_ok=empty_ok)
        except PeerError as exc:
            if exc.status != 401 or self.tokens is None:
                raise
            self.tokens.forget()  # revoked or expired early: one new token, one more try
            await self._ready(skill)
            return await self.transport.call(OPERATIONS[op], params, empty_ok=empty_ok)

    def _tenanted(self, params: dict[str, Any]) -> dict[str, Any]:
        """``params`` naming :attr:`tenant`, in 1.0 (0.3 and the legacy dialect have no tenant)."""
        if not self.tenant or self.transport.dialect is not Dialect.V10:
            return params
        return {**params, "tenant": self.tenant}

    async def _ready(self, skill: str | None = None) -> None:
        """Connected, holding the credentials the card asks a call (of ``skill``) for: a token
        that has not expired when that is an OAuth one (see :mod:`toolnexus.client.credentials`)."""
        card = await self.connect()
        if self.credentials.given and self.credentials_sent:
            chosen = self.credentials.choose(card, skill)
            named = self.url or self.endpoint
            self._auth = await self.credentials.headers(chosen, self.http, card.raw, named)
