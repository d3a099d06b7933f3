"""The outbound A2A client: any peer, whichever dialect it speaks, with every exchange on the wire log.

Dialect ``auto`` follows the 1.x SDK's rule on the card (a JSONRPC interface of version 1.x
means 1.0, otherwise 0.3 at the card's ``url``), plus one fallback: when a 0.3 send gets -32601
(the toolnexus ports in other languages answer only ``SendMessage``/``GetTask``), it is retried once
in the toolnexus legacy dialect, and that is remembered for the peer. ``"0.3"``, ``"1.0"`` and
``"legacy"`` force one. ``client.dialect`` and ``client.dialect_reason`` say what is in use and why.

Results come back as the canonical model (``Task``); peers' small differences (results without
``kind``, errors without ``id``, timestamps with or without offsets) are tolerated.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import os
import time
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import replace
from typing import Any

import httpx

from .. import trace
from ..debug.cassette import CassetteWriter
from ..errors import (
    MethodNotFoundError,
    PeerError,
    RPCError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from ..events import EventBus, TaskEvent
from ..http.fetch import peer_url
from ..protocol.card import AgentCard, origin_text
from ..protocol.dialects import Dialect, parse_message, parse_task, render_message
from ..protocol.extensions import HEADER, LEGACY_HEADER, header_value
from ..protocol.files import in_modes
from ..protocol.model import Message, Part, Task, TaskState, iso_utc
from ..protocol.operations import BINDING_NAMES, OPERATIONS, Binding
from ..protocol.push import (
    TOKEN_HEADER,
    PushConfig,
    parse_push_config,
    render_push_config,
)
from ..protocol.signing import (
    KeySet,
)
from ..secrets import basic_authorization
from ..traffic import TrafficRecorder
from .cards import check_signatures, fetch_card, fetch_jwks
from .credentials import ClientCertificate, Credentials
from .oauth import Grant, TokenSource
from .transports import (
    CUSTOM,
    JsonRpcTransport,
    Transport,
    as_task,
    json_named,
    transport_for,
)

__all__ = ["A2AClient", "fetch_card", "check_signatures", "fetch_jwks"]

_SPOKEN = {Binding.GRPC: ("1.0", "0.3"), Binding.HTTP_JSON: ("1.0", "0.3")}
"""The dialects a binding other than JSON-RPC is spoken in."""


MAX_PAGES = 100
"""Pages of a list the client follows before it calls the peer's paging endless."""


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


class A2AClient:
    """Talks to one A2A peer.

    Of ``basic``, ``bearer``, ``api_key``, ``oauth`` and ``certificate``, each call carries what
    the card's security requirements ask (a skill's own before the card's; see
    :mod:`toolnexus.client.credentials`), only to the host named (never to another one a card
    points at), masked on the wire log.

    Args:
        card_or_url: the card (``AgentCard`` or its JSON), a card URL, or the agent's base URL.
        headers: sent with every request (values are masked on the wire log).
        timeout: seconds one HTTP request may take (streams: between frames).
        dialect: ``"auto"``, ``"0.3"``, ``"1.0"`` or ``"legacy"``.
        binding: ``"auto"`` (what the card offers: JSON-RPC first), ``"jsonrpc"``, ``"http+json"``
            (the REST binding) or ``"grpc"`` (``pip install 'toolnexus[grpc]'``), each spoken in
            1.0 or, with ``dialect="0.3"`` or a card that offers only that, 0.3.
        bus: where TrafficEvents (and the TaskEvents of :meth:`watch`) are published.
        secret_headers: more header names to mask on the wire log.
        record: a cassette path (or a :class:`~toolnexus.debug.cassette.CassetteWriter`): every
            exchange is also written there as it ends, masked, ids made stable (see
            :mod:`toolnexus.debug.cassette`); a path is closed with the client.
        verify: check the card's signatures before the first call, and refuse a card that has no
            valid one (``PeerError``): with ``keys`` when given, else with the key set its
            signature's ``jku`` names (see :func:`check_signatures`). The verdict is
            ``client.card.signatures``.
        keys: the public keys you trust for the card's signature (a
            :class:`~toolnexus.protocol.signing.KeySet`: ``KeySet.load(jwks_text, pem, ...)``);
            implies ``verify``.
        tenant: the ``tenant`` sent in every 1.0 call (in the body, or the HTTP+JSON path's first
            segment); None: the one the card's chosen interface names, if any (A2A 1.0 §8.3.2).
        extensions: the URIs of the extensions to ask the peer for in every call (the
            ``A2A-Extensions`` header; 0.3's ``X-A2A-Extensions`` too in 0.3); what the peer
            activated is :attr:`activated` after each call.
        basic: ``(user, password)`` for HTTP basic (RFC 7617).
        bearer: a bearer token (``Authorization: Bearer``).
        api_key: an API key, sent in the header the card's ``apiKey`` scheme names.
        oauth: an OAuth 2 grant: :class:`~toolnexus.client.oauth.ClientCredentials`,
            :class:`~toolnexus.client.oauth.DeviceCode` (the code shown, the token endpoint
            polled) or :class:`~toolnexus.client.oauth.AuthorizationCode` (PKCE, a browser, a
            loopback redirect): its endpoints are the card's (or OpenID Connect discovery's), its
            token kept until it expires; see :mod:`toolnexus.client.oauth`.
        certificate: a client certificate for mutual TLS
            (:class:`~toolnexus.client.credentials.ClientCertificate`), presented on every binding
            (its ``ca`` also verifies the server); not with ``http=`` (give it to that client).
    """

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
        self.warnings: list[str] = []
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

    async def __aenter__(self) -> A2AClient:
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

    # -- JSON-RPC -----------------------------------------------------------------------------------
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

    async def _send_op(self, params: dict[str, Any]) -> Any:
        """A send; in auto mode a 0.3 JSON-RPC send refused with -32601 is retried once in the
        toolnexus legacy dialect (and that is remembered for the peer)."""
        try:
            return await self._call("send", params)
        except MethodNotFoundError:
            transport = self.transport
            if (
                self.forced is not None
                or self._fallback_tried
                or not isinstance(transport, JsonRpcTransport)
                or transport.dialect is not Dialect.V03
            ):
                raise
            self._fallback_tried = True
            self.dialect = Dialect.LEGACY
            self.dialect_reason = (
                "the peer answered message/send with -32601; it speaks the toolnexus legacy dialect"
            )
            self._transport = transport_for(self, transport.binding, Dialect.LEGACY)
            return await self._call("send", self._params_for(params))

    def _params_for(self, params: dict[str, Any]) -> dict[str, Any]:
        """Re-render send params (built for 0.3) in the legacy shapes."""
        message = parse_message(params["message"], inbound=False)
        message.role = "user"
        out = dict(params)
        out["message"] = render_message(message, Dialect.LEGACY)
        return out

    def fitting(
        self, parts: Sequence[Part], skill: str | None, accepted: Sequence[str] = ()
    ) -> tuple[list[Part], list[str]]:
        """``parts`` as the card says the agent takes them, and a sentence for each thing left out
        or at odds: a file or data part whose media type is not among the skill's input modes (no
        skill: among any the card names, as the official SDK's server checks) is left out; the
        text is always sent; ``accepted`` output modes the skill gives none of are said (the
        agent decides). A card that names no modes takes anything."""
        card = self.card
        if card is None:
            return list(parts), []
        takes, gives = card.modes(skill) if card.skill(skill) else card.modes()
        if card.skill(skill) is None:
            for other in card.skills:
                takes = takes + [m for m in card.modes(str(other.get("id")))[0] if m not in takes]
        who = f"the skill {skill}" if card.skill(skill) else "the agent"
        kept: list[Part] = []
        notes: list[str] = []
        for part in parts:
            kind = part.media_type or ("application/json" if part.kind == "data" else None)
            if part.kind == "text" or not takes or in_modes(kind, takes):
                kept.append(part)
            else:
                notes.append(
                    f"{who} takes {', '.join(takes)}: {part.label} ({kind or 'no media type'}) "
                    "is not sent"
                )
        if accepted and gives and not any(in_modes(m, gives) for m in accepted):
            notes.append(
                f"{who} answers in {', '.join(gives)}, none of which you accept "
                f"({', '.join(accepted)}): the agent may refuse the task"
            )
        return kept, notes

    def warn(self, note: str) -> None:
        """Add ``note`` to :attr:`warnings`, once."""
        if note not in self.warnings:
            self.warnings.append(note)

    def _fit(self, msg: Message, skill: str | None, accepted: Sequence[str]) -> Message:
        """``msg`` with only the parts the card says the agent takes (see :meth:`fitting`); what was
        left out is in :attr:`warnings`."""
        msg.parts, notes = self.fitting(msg.parts, skill, accepted)
        for note in notes:
            self.warn(note)
        return msg

    def _message(
        self,
        text: str | Message,
        skill: str | None,
        context_id: str | None,
        task_id: str | None,
        metadata: Mapping[str, Any] | None,
        files: Sequence[str | os.PathLike[str] | Part] = (),
    ) -> Message:
        msg = text if isinstance(text, Message) else Message("user", [Part.of_text(text)])
        msg.parts += [f if isinstance(f, Part) else Part.of_file(f) for f in files]
        if context_id:
            msg.context_id = context_id
        if task_id:
            msg.task_id = task_id
        meta = dict(msg.metadata or {})
        meta.update(metadata or {})
        if skill:
            meta["skill"] = skill
        msg.metadata = meta or None
        return msg

    def _send_params(
        self,
        msg: Message,
        blocking: bool,
        history_length: int | None,
        push: PushConfig | None = None,
        request_metadata: Mapping[str, Any] | None = None,
        accepted_output_modes: Sequence[str] = (),
    ) -> dict[str, Any]:
        dialect = self.transport.shapes
        config: dict[str, Any] = (
            {"returnImmediately": not blocking}
            if dialect is Dialect.V10
            else {"blocking": blocking}
        )
        if accepted_output_modes:
            config["acceptedOutputModes"] = list(accepted_output_modes)
        if history_length is not None:
            config["historyLength"] = history_length
        if push is not None:
            if push.token:
                self.traffic.secret(TOKEN_HEADER, push.token)
            rendered = render_push_config(replace(push, dialect=dialect), dialect)
            if dialect is Dialect.V10:
                config["taskPushNotificationConfig"] = {
                    k: v for k, v in rendered.items() if v != ""
                }
            else:
                config["pushNotificationConfig"] = rendered["pushNotificationConfig"]
        params = {"message": render_message(msg, dialect), "configuration": config}
        if request_metadata:
            params["metadata"] = dict(request_metadata)
        return params

    # -- operations -----------------------------------------------------------------------------------
    async def send(
        self,
        text: str | Message,
        *,
        skill: str | None = None,
        context_id: str | None = None,
        task_id: str | None = None,
        blocking: bool = False,
        history_length: int | None = None,
        metadata: Mapping[str, Any] | None = None,
        push: PushConfig | None = None,
        request_metadata: Mapping[str, Any] | None = None,
        files: Sequence[str | os.PathLike[str] | Part] = (),
        accepted_output_modes: Sequence[str] = (),
    ) -> Task:
        """Send a message; returns the task (``submitted`` or later when not blocking). ``push``:
        a config (e.g. ``WebhookReceiver.target()``) the peer notifies of every change of the task.
        ``metadata`` goes on the message; ``request_metadata`` is the request's own
        (``SendMessageRequest.metadata``, which a toolnexus agent keeps on the task); ``files``:
        local files (read whole, at most 10 MiB each: ``ValueError`` past that) or file parts, sent
        after the text; ``accepted_output_modes``: the media types the answer may be in (empty:
        any)."""
        await self.connect()
        msg = self._message(text, skill, context_id, task_id, metadata, files)
        msg = self._fit(msg, skill, accepted_output_modes)
        result = await self._send_op(
            self._send_params(
                msg, blocking, history_length, push, request_metadata, accepted_output_modes
            )
        )
        task = as_task(result, msg)
        if task_id and task.state.interrupted and _asks_again(task, msg):
            # an answer to an input-required task: the spec lets a peer return at once with the task
            # as it was (the JS SDK does), the same question still on it; that is not a new question
            task = await self._past(task, msg)
        return task

    async def _past(self, task: Task, answer: Message) -> Task:
        """The task once its status has moved past the question ``answer`` answered (within the
        client's timeout; after that, as it is)."""
        pause, deadline = 0.05, asyncio.get_running_loop().time() + self.timeout
        while asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(pause)
            pause = min(pause * 2, 1.0)
            fresh = await self.get(task.id)
            if not (fresh.state.interrupted and _asks_again(fresh, answer, task)):
                return fresh
        return task

    async def get(self, task_id: str, history_length: int | None = None) -> Task:
        params: dict[str, Any] = {"id": task_id}
        if history_length is not None:
            params["historyLength"] = history_length
        return as_task(await self._call("get", params), None)

    async def cancel(self, task_id: str) -> Task:
        return as_task(await self._call("cancel", {"id": task_id}), None)

    async def list_tasks(
        self,
        *,
        context_id: str | None = None,
        state: TaskState | None = None,
        page_size: int | None = None,
        page_token: str | None = None,
        include_artifacts: bool = False,
        status_timestamp_after: datetime.datetime | str | None = None,
        history_length: int | None = None,
    ) -> dict[str, Any]:
        """``ListTasks`` (1.0 peers): ``{tasks: [Task], next_page_token, total_size}``.
        ``status_timestamp_after``: only tasks whose status changed after it (a timezone-aware
        datetime, or an ISO 8601 timestamp as the peer takes it); ``history_length``: at most that
        many of each task's latest messages (0: none)."""
        params: dict[str, Any] = {"includeArtifacts": include_artifacts}
        if status_timestamp_after is not None:
            params["statusTimestampAfter"] = (
                iso_utc(status_timestamp_after)
                if isinstance(status_timestamp_after, datetime.datetime)
                else status_timestamp_after
            )
        if history_length is not None:
            params["historyLength"] = history_length
        if context_id:
            params["contextId"] = context_id
        if state is not None:
            params["status"] = "TASK_STATE_" + state.value.upper().replace("-", "_")
        if page_size:
            params["pageSize"] = page_size
        if page_token:
            params["pageToken"] = page_token
        result = json_named(await self._call("list", params))
        return {
            "tasks": [parse_task(t) for t in result.get("tasks") or []],
            "next_page_token": result.get("nextPageToken", ""),
            "total_size": result.get("totalSize", 0),
        }

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

    # -- push notifications -------------------------------------------------------------------------
    async def set_push(
        self,
        task_id: str,
        url: str | PushConfig,
        *,
        token: str | None = None,
        scheme: str | None = None,
        credentials: str | None = None,
        config_id: str | None = None,
    ) -> PushConfig:
        """Ask the peer to POST every change of ``task_id`` to ``url`` (or a ready config, such as
        ``WebhookReceiver.target()``); returns the config as the peer keeps it."""
        await self.connect()
        dialect = self.transport.shapes
        if isinstance(url, PushConfig):
            config = replace(url, task_id=task_id, dialect=dialect)
        else:
            config = PushConfig(task_id, url, config_id or "", token, scheme, credentials, dialect)
        if config.token:
            self.traffic.secret(
                TOKEN_HEADER, config.token
            )  # the token is a secret on the wire log too
        if config.credentials:
            self.traffic.secret("authorization", config.credentials)
        result = await self._call("push-set", render_push_config(config, dialect))
        return self._push_config(result, task_id, dialect)

    async def get_push(self, task_id: str, config_id: str | None = None) -> PushConfig:
        """A push-notification config of ``task_id`` (its first when no id is given)."""
        await self.connect()
        dialect = self.transport.shapes
        if (
            not config_id and self.transport.push_get_needs_id
        ):  # its route or request names one: the first listed
            configs = await self.list_push(task_id)
            if not configs:
                raise TaskNotFoundError(f"task {task_id} has no push notification config")
            return configs[0]
        if dialect is Dialect.V10:
            params: dict[str, Any] = {"taskId": task_id, **({"id": config_id} if config_id else {})}
        else:
            params = {
                "id": task_id,
                **({"pushNotificationConfigId": config_id} if config_id else {}),
            }
        return self._push_config(await self._call("push-get", params), task_id, dialect)

    async def list_push(self, task_id: str, page_size: int | None = None) -> list[PushConfig]:
        """Every push-notification config of a task: each page the peer gives (``page_size`` at
        a time, when given), followed up to ``MAX_PAGES`` pages."""
        await self.connect()
        dialect = self.transport.shapes
        params: dict[str, Any] = {"taskId": task_id} if dialect is Dialect.V10 else {"id": task_id}
        if page_size is not None and dialect is Dialect.V10:
            params["pageSize"] = page_size
        configs: list[PushConfig] = []
        for _ in range(MAX_PAGES):
            result = await self._call("push-list", params)
            items = result.get("configs") if isinstance(result, dict) else result
            if items is None:
                items = []
            if not isinstance(items, list):
                raise PeerError(f"{self.peer}: its list of push notification configs is not a list")
            configs += [self._push_config(c, task_id, dialect) for c in items]
            token = result.get("nextPageToken") if isinstance(result, dict) else None
            if not token or not isinstance(token, str) or token == params.get("pageToken"):
                return configs
            params["pageToken"] = token
        raise PeerError(f"{self.peer}: its push notification configs go on past {MAX_PAGES} pages")

    async def delete_push(self, task_id: str, config_id: str) -> None:
        await self.connect()
        dialect = self.transport.shapes
        await self._call(
            "push-delete",
            {"taskId": task_id, "id": config_id}
            if dialect is Dialect.V10
            else {"id": task_id, "pushNotificationConfigId": config_id},
            empty_ok=True,
        )

    def _push_config(self, result: Any, task_id: str, dialect: Dialect) -> PushConfig:
        try:
            config = parse_push_config(result, dialect, "result")
        except RPCError as exc:
            raise PeerError(
                f"{self.peer}: the push notification config it answered is not one: {exc.message}"
            ) from None
        config.task_id = config.task_id or task_id
        return config

    async def stream(
        self,
        text: str | Message,
        *,
        skill: str | None = None,
        context_id: str | None = None,
        task_id: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        files: Sequence[str | os.PathLike[str] | Part] = (),
        accepted_output_modes: Sequence[str] = (),
    ) -> AsyncGenerator[Task, None]:
        """Send and follow the task as the peer streams it; yields the task after every frame, until
        the stream ends (``files``, ``accepted_output_modes``: as :meth:`send`). A peer that cannot stream (a dialect without streams, or a stream refused
        as an unknown method or as unsupported, -32004, before its first frame) gets a blocking send instead, followed by
        polling until the task settles, and ``warnings`` says so; a stream that ends finished but without the reply is followed by a
        get (see :meth:`_frames`)."""
        await self.connect()
        msg = self._message(text, skill, context_id, task_id, metadata, files)
        msg = self._fit(msg, skill, accepted_output_modes)
        params = self._send_params(msg, True, None, accepted_output_modes=accepted_output_modes)
        if accepted_output_modes:  # the rest of the configuration is a blocking send's
            params["configuration"] = {"acceptedOutputModes": list(accepted_output_modes)}
        else:
            params.pop("configuration")
        if self.transport.streams:
            seen = False
            try:
                async with contextlib.aclosing(
                    self._frames("stream", params, msg)
                ) as frames:  # closed with us
                    async for task in frames:
                        seen = True
                        yield task
                return
            except (MethodNotFoundError, UnsupportedOperationError) as exc:
                if seen:
                    raise
                said = "method not found" if exc.code == -32601 else "it does not stream"
                why_not = f"it answered {self.transport.method(OPERATIONS['stream'])} with {exc.code} ({said})"
        else:
            why_not = f"the {self.transport.dialect.value} dialect has no streams"
        self.warnings.append(f"{why_not}: sent as a blocking send instead of a stream, then polled")
        task = await self.send(msg, blocking=True, accepted_output_modes=accepted_output_modes)
        yield task
        if task.id and not (task.state.terminal or task.state.interrupted):
            async for event in self.watch(task.id, stream=False):
                if event.state is not task.state:
                    task = event.task
                    yield task

    async def resubscribe(self, task_id: str) -> AsyncGenerator[Task, None]:
        """Follow a running task over SSE; yields the task after every frame."""
        async with contextlib.aclosing(
            self._frames("resubscribe", {"id": task_id}, None)
        ) as frames:  # closed with us
            async for task in frames:
                yield task

    async def _frames(
        self, op: str, params: dict[str, Any], sent: Message | None
    ) -> AsyncGenerator[Task, None]:
        """A stream's tasks; when it ends with the task finished but holding no reply (no artifact,
        no answer from the agent: some peers stream only the states), the task as the peer keeps
        it, got once, so that the reply is not lost. A stream that breaks off before the task
        settles (the connection lost: a proxy cut it) is followed by polling, and ``warnings``
        says so."""
        last: Task | None = None
        try:
            async with contextlib.aclosing(self._sse(op, params, sent)) as frames:
                async for task in frames:
                    last = task
                    yield task
        except PeerError as exc:
            if not exc.lost or last is None or not last.id:
                raise
            if last.state.terminal or last.state.interrupted:
                raise
            self.warnings.append(f"{exc}: the task followed by polling instead")
            async for event in self.watch(last.id, stream=False):
                last = event.task
                yield last
        if (
            last is not None
            and last.id
            and last.state.terminal
            and not last.artifacts
            and not any(m.role == "agent" for m in last.history)
            and last.status.message is None
        ):
            yield await self.get(last.id)

    async def _sse(
        self, op: str, params: dict[str, Any], sent: Message | None
    ) -> AsyncGenerator[Task, None]:
        """The frames of a stream as tasks, over the transport in use (bounded as it says)."""
        await self._ready()
        operation = OPERATIONS[op]
        if not self.transport.streams:
            raise self.transport.unsupported(operation)
        async with contextlib.aclosing(
            self.transport.stream(operation, self._tenanted(params), sent)
        ) as frames:
            async for task in frames:
                yield task

    async def follow(
        self,
        task_id: str,
        *,
        poll_every: float = 1.0,
        max_interval: float = 5.0,
        backoff: float = 1.5,
        timeout: float | None = None,
        stream: bool = True,
    ) -> AsyncGenerator[Task, None]:
        """A remote task after every change, until it is terminal or interrupted: over SSE where
        the peer streams (``stream`` and the card say so), after every frame (a reply's words as
        they come); else polled, each time its state or its text changed, the interval starting at
        ``poll_every`` and growing by ``backoff`` up to ``max_interval``."""
        await self.connect()
        deadline = None if timeout is None else time.monotonic() + timeout
        self.polls = 0
        last: Task | None = None
        if stream and self.card is not None and self.card.streaming and self.transport.streams:
            try:
                async with contextlib.aclosing(self.resubscribe(task_id)) as frames:
                    async for task in frames:
                        last = task
                        yield task
                        if task.state.terminal or task.state.interrupted:
                            return
            except (RPCError, PeerError):
                pass  # the peer cannot resubscribe (already terminal, or no streaming after all): poll
        interval = poll_every
        while True:
            task = await self.get(task_id)
            self.polls += 1
            if last is None or task.state is not last.state or task.said != last.said:
                last = task
                yield task
            if task.state.terminal or task.state.interrupted:
                return
            if deadline is not None and time.monotonic() >= deadline:
                return
            await asyncio.sleep(
                interval
                if deadline is None
                else max(0.0, min(interval, deadline - time.monotonic()))
            )
            interval = min(interval * backoff, max(max_interval, poll_every))

    async def watch(
        self,
        task_id: str,
        *,
        poll_every: float = 1.0,
        max_interval: float = 5.0,
        backoff: float = 1.5,
        timeout: float | None = None,
        bus: EventBus | None = None,
        stream: bool = True,
    ) -> AsyncGenerator[TaskEvent, None]:
        """Every state change of a remote task as a TaskEvent, until it is terminal or interrupted
        (followed as :meth:`follow` says). The events are also published on ``bus`` (or the
        client's bus)."""
        target = bus or self.bus
        last: TaskState | None = None
        async with contextlib.aclosing(
            self.follow(
                task_id,
                poll_every=poll_every,
                max_interval=max_interval,
                backoff=backoff,
                timeout=timeout,
                stream=stream,
            )
        ) as changes:
            async for task in changes:
                if task.state is last:
                    continue
                ev = TaskEvent(
                    task.id, task.context_id, None, last, task.state, task.snapshot(), self.peer
                )
                last = task.state
                if target is not None:
                    target.publish(ev)
                yield ev


def _skill_of(params: Mapping[str, Any]) -> str | None:
    """The skill a send's message names (its ``metadata.skill``), else None."""
    message = params.get("message")
    metadata = message.get("metadata") if isinstance(message, dict) else None
    skill = metadata.get("skill") if isinstance(metadata, dict) else None
    return skill if isinstance(skill, str) else None


def _asks_again(task: Task, answer: Message, before: Task | None = None) -> bool:
    """Whether ``task``'s question is the one ``answer`` answered: its status message comes before
    the answer in the task's history, or is the very message of ``before`` (the stale reply)."""
    question = task.status.message
    if question is None:
        return False
    if before is not None and before.status.message is not None:
        if (
            question.message_id == before.status.message.message_id
            and task.status.timestamp == before.status.timestamp
        ):
            return True
    ids = [m.message_id for m in task.history]
    return (
        question.message_id in ids
        and answer.message_id in ids
        and ids.index(question.message_id) < ids.index(answer.message_id)
    )
