"""Each declared interface asked for an unknown task in its own dialect and binding: an A2A answer,
a method it does not know, or a refusal for want of credentials."""

from __future__ import annotations

import uuid
from typing import Any

from ...client.transports import GRPC_REFUSALS
from ...errors import MethodNotFoundError, MissingExtra, PeerError, RPCError, TaskNotFoundError
from ...protocol.card import AgentCard, origin_text
from ...protocol.operations import Binding
from ..features import Finder, Probe
from ..report import Finding
from .jsonrpc import jsonrpc_codes, method_names
from .lines import V03_CLIENTS, Add
from .routes import interface_client, promise, speaks_v10
from .seen import Seen

_LINES = {  # who picks an interface of this binding and version
    (Binding.JSONRPC, "1"): ["a2a-sdk 1.x", "JS SDK 1.x", "toolnexus"],
    (Binding.JSONRPC, "0"): ["a2a-sdk 0.3", "a2a-sdk 1.x compat", "JS SDK compat", "toolnexus"],
    (Binding.HTTP_JSON, "1"): ["REST clients (a2a-sdk 1.x, JS SDK, toolnexus)"],
    (Binding.HTTP_JSON, "0"): ["0.3 REST clients"],
    (Binding.GRPC, "1"): ["gRPC clients (a2a-sdk 1.x, toolnexus)"],
    (Binding.GRPC, "0"): ["0.3 gRPC clients (a2a-sdk 0.3, a2a-sdk 1.x compat, toolnexus)"],
}


def _at(add: Add, where: str) -> Add:
    """``add`` for the findings of one endpoint: each says it is ``at`` there."""

    def here(finding: Finding) -> Any:
        finding.at = finding.at or where
        return add(finding)

    return here


async def probe_interface(
    probe: Probe,
    binding: Binding | str,
    version: str,
    endpoint: str,
    declares_auth: bool,
    seen: Seen,
) -> bool:
    """GetTask of an unknown task over one interface (and, on JSON-RPC, both dialects' method
    names); True when it answered without credentials."""
    card, headers, traffic, add = probe.card, probe.headers, probe.traffic, probe.add
    name = f"{binding} {version}.x"
    find = Finder(traffic, _at(add, endpoint))
    if not isinstance(binding, Binding):
        find.found("info", name, f"{binding} {version}.x is not a binding toolnexus can check")
        return False
    breaks = _LINES.get((binding, version), [f"{binding} clients"])
    client = interface_client(probe, binding, version, endpoint)
    if headers and not client.credentials_sent:
        find.found(
            "info",
            name,
            f"not on the host named ({origin_text(card.source or '')}): checked without "
            "your headers",
        )
    before = find.mark()
    unknown = f"toolnexus-doctor-{uuid.uuid4()}"
    key = (binding, version, endpoint)
    try:
        await client.get(unknown)
    except TaskNotFoundError:
        seen.answered[key] = True
        find.found(
            "ok", name, "answers in its own dialect and binding; an unknown task is TaskNotFound"
        )
        if binding is Binding.JSONRPC:
            await method_names(client, name, traffic, find.add, seen)
            await jsonrpc_codes(client, name, version, traffic, find.add)
        return True
    except MethodNotFoundError as exc:
        seen.answered[key] = False
        known = (
            await method_names(client, name, traffic, find.add, seen)
            if binding is Binding.JSONRPC
            else {}
        )
        _not_known(find, name, card, endpoint, version, known, exc, breaks, before)
    except RPCError as exc:
        seen.answered[key] = True
        if binding is Binding.JSONRPC:
            await method_names(client, name, traffic, find.add, seen)
        find.found(
            "warning",
            name,
            f"an unknown task is answered with {type(exc).__name__} ({exc.code}: {exc}), "
            "not TaskNotFound (-32001)",
            before,
            ["clients that tell errors apart (every SDK)"],
            "answer TaskNotFoundError for an unknown task id",
        )
        return True
    except PeerError as exc:
        seen.answered[key] = _refused(find, name, exc, binding, declares_auth, breaks, before)
    except MissingExtra as exc:
        find.found("info", name, f"not checked: {exc}")
    finally:
        await client.release()
    return False


def _not_known(
    find: Finder,
    name: str,
    card: AgentCard,
    endpoint: str,
    version: str,
    known: dict[str, bool | None],
    exc: MethodNotFoundError,
    breaks: list[str],
    before: int,
) -> None:
    """GetTask answered -32601 (``known``: which send methods the endpoint knows): which of the
    card's promises that breaks."""
    if version == "0" and known.get("message/send") is False and speaks_v10(card, endpoint):
        find.found(
            "error",
            name,
            f"the card promises 0.3 at {endpoint} ({promise(card, endpoint)}), but the "
            "server does not answer it: the 0.3 method names (tasks/get, message/send) get "
            "-32601; it serves 1.0 only there (the card's 1.0 interface). 0.3 clients fail "
            "on this card",
            before,
            ["a2a-sdk 0.3"],
            "serve 0.3 there (the a2a-sdk's routes: enable_v0_3_compat=True), or stop "
            "promising it: "
            + (
                'give the interface its protocolVersion "1.0" (the a2a-sdk\'s card route '
                "writes 0.3's url and protocolVersion for an interface without one)"
                if any(not i.get("protocolVersion") for i in card.interfaces)
                else "drop the 0.3 entry (url, protocolVersion) from the card"
            ),
        )
    elif version == "0" and known.get("message/send") is False and known.get("SendMessage"):
        find.found(
            "error",
            name,
            "the card's 0.3 endpoint answers the 0.3 method names (tasks/get, "
            "message/send) with -32601 but knows SendMessage: it speaks the toolnexus legacy dialect "
            "(upstream toolnexus 0.21 and its ports), not 0.3",
            before,
            V03_CLIENTS,
            "answer the 0.3 methods (message/send, tasks/get) at the card's url, or list the "
            "endpoint as protocolVersion 1.0 if it speaks 1.0",
        )
    else:
        find.found(
            "error",
            name,
            f"declared, but it does not know GetTask there: {exc}",
            before,
            breaks,
            "list only the interfaces and versions the agent really serves",
        )


def _refused(
    find: Finder,
    name: str,
    exc: PeerError,
    binding: Binding,
    declares_auth: bool,
    breaks: list[str],
    before: int,
) -> bool:
    """A call that got no A2A answer: refused for want of credentials (True: it answered), or
    nothing an A2A client can read (False)."""
    if exc.status in (401, 403):
        severity = "info" if declares_auth else "error"
        find.found(
            severity,
            name,
            "refuses calls without credentials ("
            + (GRPC_REFUSALS[exc.status] if binding is Binding.GRPC else f"HTTP {exc.status}")
            + ")"
            + (
                ""
                if declares_auth
                else "; the card declares no security scheme, so clients cannot know"
            ),
            before,
            [] if declares_auth else breaks,
            "" if declares_auth else "declare the scheme in securitySchemes",
        )
        return True
    find.found(
        "error",
        name,
        f"declared, but no A2A answer: {exc}",
        before,
        breaks,
        "serve this interface, or drop it from the card",
    )
    return False
