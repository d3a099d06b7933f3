"""Where a client speaks to a peer, from its card alone: the card's interfaces, the route the
1.x SDK's rule (and toolnexus's fallbacks) takes to it (:class:`CardRoutes`, which
:class:`~toolnexus.protocol.card.AgentCard` is), and whether an endpoint is on the host a card
came from (:func:`elsewhere`)."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from .._json import is_object
from ..errors import PeerError
from . import grpc_binding
from .operations import Binding

__all__ = ["CardRoutes", "elsewhere", "origin", "origin_text"]


class CardRoutes:
    """A card's JSON (``raw``, as the peer published it) and where it was fetched (``source``):
    its interfaces and the route to it."""

    def __init__(self, raw: dict[str, Any], source: str = "") -> None:
        self.raw = raw
        self.source = source

    @property
    def interfaces(self) -> list[dict[str, Any]]:
        return [i for i in self.raw.get("supportedInterfaces") or () if is_object(i)]

    def interface(self, major: str, binding: Binding = Binding.JSONRPC) -> dict[str, Any] | None:
        for i in self.interfaces:
            named = Binding.named(i.get("protocolBinding", "JSONRPC"))
            version = str(i.get("protocolVersion") or "")
            if named == binding and (
                version.split(".")[0] == major or (major == "1" and not version)
            ):
                return i
        return None

    def jsonrpc_interface(self, major: str) -> dict[str, Any] | None:
        return self.interface(major)

    def _v03_at(self, binding: Binding) -> str | None:
        """The URL (gRPC: ``host:port``) of a 0.3 interface of ``binding``: listed in
        ``supportedInterfaces``, or a 0.3 card's ``url`` when its ``preferredTransport`` is it."""
        listed = self.interface("0", binding)
        if listed is not None and listed.get("url"):
            return str(listed["url"])
        url = self.raw.get("url")
        if Binding.named(self.raw.get("preferredTransport")) is binding and isinstance(url, str):
            return url or None
        return None

    def route(
        self, binding: Binding | str | None = None, dialect: str | None = None
    ) -> tuple[str, str, str, Binding]:
        """``(dialect, endpoint, reason, binding)``: the way the 1.x SDK chooses (a JSONRPC
        interface of version 1.x, or without a version, means 1.0; otherwise 0.3 at ``url``),
        HTTP+JSON 1.0 when the card offers only that, gRPC 1.0 when it offers only gRPC, or the
        binding asked for (``"HTTP+JSON"``, ``"GRPC"``; with ``dialect="0.3"``, 0.3's). A 0.3 card
        whose ``preferredTransport`` is HTTP+JSON or GRPC is spoken to over that binding in 0.3."""
        if binding is not None:
            asked = Binding.named(binding)
            if asked is None:
                raise ValueError(f"no such binding: {binding!r} (JSONRPC, HTTP+JSON or GRPC)")
            binding = asked
        if binding is Binding.GRPC:
            return self._grpc_route(dialect)
        if binding is Binding.HTTP_JSON:
            return self._rest_route(dialect)
        return self._card_route(free=binding is None)

    def _grpc_route(self, dialect: str | None) -> tuple[str, str, str, Binding]:
        """:meth:`route` with gRPC asked for: 1.x's interface, else 0.3's, else an error."""
        grpc = self.interface("1", Binding.GRPC)
        if dialect != "0.3" and grpc is not None and grpc.get("url"):
            why = "gRPC asked for; the card lists it for protocol 1.x"
            return "1.0", str(grpc["url"]), why, Binding.GRPC
        grpc_v03 = self._v03_at(Binding.GRPC)
        if dialect in (None, "0.3") and grpc_v03:
            why = "gRPC asked for; the card lists it for protocol 0.3"
            return "0.3", grpc_v03, why, Binding.GRPC
        which = f" for protocol {dialect}" if dialect else ""
        raise PeerError(
            f"gRPC asked for, but the card lists no gRPC interface{which} (its host:port is needed)"
        )

    def _rest_route(self, dialect: str | None) -> tuple[str, str, str, Binding]:
        """:meth:`route` with HTTP+JSON asked for: the interface listed for the dialect, else the
        card's address (1.x: its JSONRPC interface's)."""
        if dialect == "0.3":
            url = self._v03_at(Binding.HTTP_JSON)
            if url:
                return (
                    "0.3",
                    url,
                    "0.3 over HTTP+JSON asked for; the card lists it",
                    Binding.HTTP_JSON,
                )
            why = "0.3 over HTTP+JSON asked for; the card lists none, trying its address"
            return "0.3", self._base(), why, Binding.HTTP_JSON
        rest = self.interface("1", Binding.HTTP_JSON)
        if rest is not None and rest.get("url"):
            why = "HTTP+JSON asked for; the card lists it for protocol 1.x"
            return "1.0", str(rest["url"]), why, Binding.HTTP_JSON
        v1 = self.jsonrpc_interface("1")
        base = str(v1["url"]) if v1 is not None and v1.get("url") else self._base()
        why = "HTTP+JSON asked for; the card lists no such interface, trying its address"
        return "1.0", base, why, Binding.HTTP_JSON

    def _card_route(self, free: bool) -> tuple[str, str, str, Binding]:
        """:meth:`route` with JSONRPC asked for or (``free``) nothing: JSONRPC where the card lists
        it; when ``free``, the one other binding a card offers alone; else its url or address."""
        for version, dialect, why in (
            ("1", "1.0", "the card lists a JSONRPC interface for protocol 1.x"),
            ("0", "0.3", "the card's JSONRPC interfaces are all 0.3"),
        ):
            listed = self.jsonrpc_interface(version)
            if listed is not None and listed.get("url"):
                return dialect, str(listed["url"]), why, Binding.JSONRPC
        alone = self._offered_alone() if free else None
        if alone is not None:
            return alone
        url = self.raw.get("url")
        if isinstance(url, str) and url:
            reason = f"the card has only a top-level url (protocolVersion {self.raw.get('protocolVersion')!r})"
            return "0.3", url, reason, Binding.JSONRPC
        return (
            "0.3",
            self._base(),
            "the card names no endpoint; using the address it was fetched from",
            Binding.JSONRPC,
        )

    def _offered_alone(self) -> tuple[str, str, str, Binding] | None:
        """The route to a card listing no JSONRPC interface that offers HTTP+JSON (1.x, then 0.3)
        or gRPC (1.x, then 0.3) and nothing over JSONRPC; None when it offers JSONRPC."""
        rest = self.interface("1", Binding.HTTP_JSON)
        if rest is not None and rest.get("url"):
            why = "the card offers HTTP+JSON (protocol 1.x) and no JSONRPC"
            return "1.0", str(rest["url"]), why, Binding.HTTP_JSON
        rest_v03 = self._v03_at(Binding.HTTP_JSON)
        additional = [
            Binding.named(i.get("transport"))
            for i in self.raw.get("additionalInterfaces") or ()
            if is_object(i)
        ]
        if rest_v03 and Binding.JSONRPC not in additional and self.jsonrpc_interface("0") is None:
            why = "the card offers 0.3 over HTTP+JSON and no JSONRPC"
            return "0.3", rest_v03, why, Binding.HTTP_JSON
        http_offered = any(
            Binding.named(i.get("protocolBinding", "JSONRPC"))
            in (Binding.JSONRPC, Binding.HTTP_JSON)
            for i in self.interfaces
        )
        if http_offered:
            return None
        grpc = self.interface("1", Binding.GRPC)
        if grpc is not None and grpc.get("url") and not self.raw.get("url"):
            why = "the card offers gRPC (protocol 1.x) only; the card lists it for protocol 1.x"
            return "1.0", str(grpc["url"]), why, Binding.GRPC
        grpc_v03 = self._v03_at(Binding.GRPC)
        if (
            grpc_v03
            and Binding.named(self.raw.get("preferredTransport") or "JSONRPC") is Binding.GRPC
            and Binding.JSONRPC not in additional
        ):
            return "0.3", grpc_v03, "the card offers 0.3 over gRPC and no JSONRPC", Binding.GRPC
        return None

    def _base(self) -> str:
        return (self.source.split("/.well-known/")[0] if self.source else "") + "/"


def elsewhere(endpoint: str, named: str, binding: Binding) -> bool:
    """Whether calls to ``endpoint`` over ``binding`` reach another host than the URL ``named``
    (where credentials may go): another origin over HTTP; over gRPC, which has a port of its own,
    another host."""
    if binding is Binding.GRPC:
        return origin(named)[1] != grpc_binding.host_of(endpoint)
    return origin(endpoint) != origin(named)


def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of ``url``, the scheme's default port filled in: two URLs of one
    origin reach the same server (``http://h/`` and ``http://h:80/`` are one)."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port
    except ValueError:  # not a valid port: the same origin as nothing else
        return scheme, (parts.hostname or "").lower(), -1
    return scheme, (parts.hostname or "").lower(), port or {"http": 80, "https": 443}.get(scheme)


def origin_text(url: str) -> str:
    scheme, host, port = origin(url)
    return f"{scheme}://{host}:{port}"
