"""The outbound A2A client: any peer, whichever dialect it speaks, with every exchange on the wire log.

Dialect ``auto`` follows the 1.x SDK's rule on the card (a JSONRPC interface of version 1.x
means 1.0, otherwise 0.3 at the card's ``url``), plus one fallback: when a 0.3 send gets -32601
(the toolnexus ports in other languages answer only ``SendMessage``/``GetTask``), it is retried once
in the toolnexus legacy dialect, and that is remembered for the peer. ``"0.3"``, ``"1.0"`` and
``"legacy"`` force one. ``client.dialect`` and ``client.dialect_reason`` say what is in use and why.

Results come back as the canonical model (``Task``); peers' small differences (results without
``kind``, errors without ``id``, timestamps with or without offsets) are tolerated.

:class:`A2AClient` is put together here from what a reader comes for: the peer's card, dialect,
binding and the one way a call goes out (:mod:`.connection`), a message sent or streamed
(:mod:`.sending`), a task's calls and a task followed (:mod:`.tasks`), its push configs
(:mod:`.push`).
"""

from __future__ import annotations

from .cards import check_signatures, fetch_card, fetch_jwks
from .push import PushCalls
from .sending import Sending

__all__ = ["A2AClient", "fetch_card", "check_signatures", "fetch_jwks"]


class A2AClient(Sending, PushCalls):
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
