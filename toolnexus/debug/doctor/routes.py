"""Where the clients go on a card: every interface it declares, the interface, endpoint and dialect
each official client picks from it, and a client of one interface on the doctor's wire log."""

from __future__ import annotations

from ...client.peer import A2AClient
from ...protocol.card import AgentCard, validate_card
from ...protocol.dialects import Dialect
from ...protocol.operations import Binding
from ..features import Probe


def interfaces_of(card: AgentCard) -> list[tuple[Binding | str, str, str]]:
    """Every interface the card declares: ``(binding, major version, url)``; a binding no client
    here speaks stays the name the card gives it."""
    out: list[tuple[Binding | str, str, str]] = []

    def binding_of(value: object) -> Binding | str:
        return Binding.named(value) or str(value).upper()

    for i in card.interfaces:
        binding = binding_of(i.get("protocolBinding", "JSONRPC"))
        version = str(i.get("protocolVersion") or "1").split(".")[0]
        if i.get("url") and (binding, version, str(i["url"])) not in out:
            out.append((binding, version, str(i["url"])))
    url = card.raw.get("url")
    if isinstance(url, str) and url:
        binding = binding_of(card.raw.get("preferredTransport") or "JSONRPC")
        if not any(b == binding and v == "0" for b, v, _ in out):
            out.append((binding, "0", url))
    return out


def speaks_v10(card: AgentCard, endpoint: str) -> bool:
    """Whether the card lists a 1.0 JSON-RPC interface at ``endpoint`` (a legacy port never does)."""
    return any(
        b is Binding.JSONRPC and v == "1" and u == endpoint for b, v, u in interfaces_of(card)
    )


def promise(card: AgentCard, endpoint: str) -> str:
    """What on the card says 0.3 is served at ``endpoint``: its 0.3 interface, or its ``url``."""
    if any(
        str(i.get("protocolVersion") or "").startswith("0") and i.get("url") == endpoint
        for i in card.interfaces
    ):
        return "a 0.3 interface"
    return f"url, and protocolVersion {card.raw.get('protocolVersion')!r}"


_Route = tuple[Binding, str, Dialect]


def routes_of(card: AgentCard) -> dict[str, _Route | str]:
    """Where each official client sends its calls for this card, and in which dialect, as that
    client picks from it; a string says why the client does not take the card."""
    v1, v0 = card.jsonrpc_interface("1"), card.jsonrpc_interface("0")
    rest, grpc = card.interface("1", Binding.HTTP_JSON), card.interface("1", Binding.GRPC)
    raw_url = card.raw.get("url")
    url = raw_url if isinstance(raw_url, str) and raw_url else None
    out: dict[str, _Route | str] = {}
    # a2a-sdk 1.x: JSONRPC 1.x, else its 0.3 compat transport at a 0.3 url; REST or gRPC when configured
    if v1 is not None and v1.get("url"):
        out["a2a-sdk 1.x"] = (Binding.JSONRPC, str(v1["url"]), Dialect.V10)
    elif (v0 is not None and v0.get("url")) or url:
        out["a2a-sdk 1.x"] = (
            Binding.JSONRPC,
            str(v0["url"]) if v0 is not None and v0.get("url") else str(url),
            Dialect.V03,
        )
    elif rest is not None and rest.get("url"):
        out["a2a-sdk 1.x"] = (Binding.HTTP_JSON, str(rest["url"]), Dialect.V10)
    elif grpc is not None and grpc.get("url"):
        out["a2a-sdk 1.x"] = (Binding.GRPC, str(grpc["url"]), Dialect.V10)
    else:
        out["a2a-sdk 1.x"] = "it finds no interface it speaks on the card"
    # a2a-sdk 0.3: its card model first (a top-level url, every required field), then the url
    said = validate_card(card).verdict["a2a-sdk 0.3"]
    transport = Binding.named(card.raw.get("preferredTransport") or "JSONRPC")
    if said.startswith("rejects"):
        out["a2a-sdk 0.3"] = "it " + said
    elif transport is not Binding.JSONRPC:
        out["a2a-sdk 0.3"] = (
            f"it would speak 0.3 over {card.raw.get('preferredTransport')}, which the doctor "
            "does not check"
        )
    else:
        out["a2a-sdk 0.3"] = (Binding.JSONRPC, str(url), Dialect.V03)
    # the JS SDK 1.x: a 1.x interface; a 0.3 card only with its legacyCompat option (off by default)
    if v1 is not None and v1.get("url"):
        out["JS SDK 1.x"] = (Binding.JSONRPC, str(v1["url"]), Dialect.V10)
    elif rest is not None and rest.get("url"):
        out["JS SDK 1.x"] = (Binding.HTTP_JSON, str(rest["url"]), Dialect.V10)
    else:
        out["JS SDK 1.x"] = (
            "it finds no 1.x JSONRPC or HTTP+JSON interface (it reads a 0.3 card only with its "
            "legacyCompat option, off by default)"
        )
    return out


def interface_client(probe: Probe, binding: Binding, version: str, endpoint: str) -> A2AClient:
    """A client of one interface of the probe's card, on the doctor's wire log."""
    card, http, headers, timeout = probe.card, probe.http, probe.headers, probe.timeout
    client = A2AClient(
        card,
        headers=headers,
        timeout=timeout,
        http=http,
        dialect="1.0" if version == "1" else "0.3",
        binding=binding.value.lower(),
    )
    client.use(endpoint)
    client.traffic = probe.traffic
    # credentials go only to the host the user named, as A2AClient.connect decides
    client.credentials_sent = not client.transport.elsewhere(endpoint, card.source or "")
    return client
