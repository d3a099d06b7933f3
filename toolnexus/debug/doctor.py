"""``toolnexus doctor URL``: probe a peer and say, in plain words, whether and why each kind of
client can work with it, with the evidence (the exchanges, masked, as the Wire shows them) and
the fix on the peer's side.

The checks are harmless by default: the card at both well-known paths, its schema (both lines),
every declared interface asked for an unknown task in its own dialect and binding (the answer
must be that binding's TaskNotFound), each JSON-RPC endpoint asked both dialects' method names
with nothing to act on (``message/send`` and ``SendMessage`` without a message: a server that
knows the method refuses the params, one that does not answers -32601), JSON-RPC's own error codes
(unknown method, invalid params, an unsupported ``A2A-Version``), auth declared against auth
enforced. ``send=True`` adds the active ones (tasks are created on the peer): a message sent in
each dialect an official client would speak, and the letter of its answer (content type,
wrapping, ``kind``, enum spellings, timestamps with a zone), a cancel, and, when the card says
so, a stream (SSE, or a gRPC stream).

Last, one verdict per official client (``client: a2a-sdk 1.x`` and the others), derived from
what that client does: the interface and dialect it picks from this card, the method names it
sends, and the shapes it parses, each set against what the peer was seen to answer. What was
not seen (the shapes, without ``send=True``) is said to be unknown, never guessed.

Each finding goes into a :class:`~toolnexus.debug.report.DoctorReport` as it is made, which
every front end shows the same way (and as JSON, for CI).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx

from .. import _json
from ..client.peer import A2AClient, fetch_card
from ..client.transports import GRPC_REFUSALS
from ..errors import (
    MethodNotFoundError,
    MissingExtra,
    PeerError,
    RPCError,
    TaskNotCancelableError,
    TaskNotFoundError,
)
from ..events import EventBus, TrafficEvent
from ..protocol.card import (
    CARD_PATH,
    LEGACY_CARD_PATH,
    AgentCard,
    origin_text,
    validate_card,
)
from ..protocol.dialects import Dialect
from ..protocol.model import Task, TaskState
from ..protocol.operations import Binding
from ..protocol.stream import StreamCheck, event_of
from ..traffic import TrafficRecorder
from .cost import Cost, card_cost, stream_cost
from .features import Finder, Probe, evidence, probe_features, rpc
from .report import DoctorReport, Finding

__all__ = ["doctor"]

SDK_WAIT = 5.0
"""Seconds the official Python SDK clients (a2a-sdk 1.x and 0.3) wait for an answer when the caller
gives them no HTTP client of its own: httpx's default (the JS SDK sets none)."""
MAX_FRAMES = 200
"""The most stream frames the doctor reads of one answer."""
MAX_INTERFACES = 16
"""The most interfaces of one card the doctor probes (a card may list any number)."""
_LINES = {  # who picks an interface of this binding and version
    (Binding.JSONRPC, "1"): ["a2a-sdk 1.x", "JS SDK 1.x", "toolnexus"],
    (Binding.JSONRPC, "0"): ["a2a-sdk 0.3", "a2a-sdk 1.x compat", "JS SDK compat", "toolnexus"],
    (Binding.HTTP_JSON, "1"): ["REST clients (a2a-sdk 1.x, JS SDK, toolnexus)"],
    (Binding.HTTP_JSON, "0"): ["0.3 REST clients"],
    (Binding.GRPC, "1"): ["gRPC clients (a2a-sdk 1.x, toolnexus)"],
    (Binding.GRPC, "0"): ["0.3 gRPC clients (a2a-sdk 0.3, a2a-sdk 1.x compat, toolnexus)"],
}
EVERY_CLIENT = ["a2a-sdk 1.x", "a2a-sdk 0.3", "JS SDK", "toolnexus"]
V03_CLIENTS = ["a2a-sdk 0.3", "a2a-sdk 1.x compat", "JS SDK compat"]
"""The clients that speak 0.3 where a card offers it (the 1.x lines when the card offers only 0.3)."""
_NAMES = {"message/send": Dialect.V03, "SendMessage": Dialect.V10}
"""The send method of each dialect, asked of every JSON-RPC endpoint with nothing to send."""
_SEND_METHOD = {dialect: method for method, dialect in _NAMES.items()}
_Add = Callable[[Finding], Any]
"""Where a check puts what it finds (the report's ``add``)."""


@dataclass
class _Seen:
    """What the peer was seen to answer, for the verdicts on each client."""

    answered: dict[tuple[Binding, str, str], bool] = field(default_factory=dict)
    """``(binding, major, url)`` of each interface probed: it gave an A2A answer (TaskNotFound or an
    error in its binding), or refused credentials."""
    knows: dict[str, dict[str, bool | None]] = field(default_factory=dict)
    """JSON-RPC endpoint → method name → known (True), -32601 (False), no JSON-RPC answer (None)."""
    shapes: dict[tuple[str, Dialect], _Answer | None] = field(default_factory=dict)
    """``(endpoint, dialect)`` of each send made → the letter of its answer (None: no result to read)."""
    sent: dict[tuple[str, Dialect], str] = field(default_factory=dict)
    """``(endpoint, dialect)`` of each send made → how it went: "" when a task came back, else why not."""
    ours: str | None = None
    """toolnexus' own send: None when none was made, "" when it came back, else why not."""
    ours_over: str = ""
    streams: dict[tuple[str, Dialect], tuple[str, str] | None] = field(default_factory=dict)
    """``(endpoint, dialect)`` of each stream read → its first frame a reader of that dialect
    refuses, and the evidence (None: every frame reads)."""
    read: dict[tuple[str, Dialect], list[tuple[dict[str, str], str]]] = field(default_factory=dict)
    """``(endpoint, dialect)`` of a stream read → how each reader read each of its streams
    (:func:`readings`), and the stream's evidence."""
    status_only: str = ""
    """Evidence of a finished task whose words were only in ``status.message`` (no artifact, no
    agent message in its history): a reply, or a failure's reason."""
    asked: bool = False
    """A skill example made the peer ask for input (the round trip was tried)."""
    unblocked: str = ""
    """The state a blocking send was answered with, when it was neither finished nor interrupted."""
    slowest: float = 0.0
    """Seconds the slowest send the doctor waited on took to be answered."""


def _at(add: _Add, where: str) -> _Add:
    """``add`` for the findings of one endpoint: each says it is ``at`` there."""

    def here(finding: Finding) -> Any:
        finding.at = finding.at or where
        return add(finding)

    return here


async def doctor(
    url: str,
    *,
    headers: dict[str, str] | None = None,
    timeout: float = 10.0,
    send: bool = False,
    on_finding: Callable[[DoctorReport], None] | None = None,
    bus: EventBus | None = None,
) -> DoctorReport:
    """Probe the peer at ``url`` (a base URL or a card URL); see the module docstring.

    ``on_finding(report)`` is called as each finding is added (the new one is the last of
    ``report.findings``) and once when the report is done, for front ends that show it live. ``bus``: where each probe is published too, marked as
    the doctor's (a front end's wire log)."""
    report = DoctorReport(url)
    if on_finding is not None:
        report.watch(on_finding)
    try:
        await _checks(url, report.add, headers, timeout, send, bus)
    finally:
        report.finish()
    return report


async def _checks(
    url: str,
    add: _Add,
    headers: dict[str, str] | None,
    timeout: float,
    send: bool,
    bus: EventBus | None,
) -> None:
    traffic = TrafficRecorder(bus, peer=url, by="doctor")
    for name, value in (headers or {}).items():
        traffic.secret(name, value)
    async with httpx.AsyncClient(timeout=timeout) as http:
        card = await _card(url, http, traffic, headers or {}, timeout, add)
        if card is None:
            return
        checked = validate_card(card)
        for d in checked.diagnostics:
            if d.level in ("error", "warning"):
                add(
                    Finding(
                        d.level,
                        "card schema",
                        d.message,
                        breaks=_schema_breaks(checked),
                        fix=_fix_for(d.path, d.message, card),
                        at=d.path,
                    )
                )
        add(Finding("info", "card verdict", checked.summary))
        add(await counted("cost: card", lambda: card_cost(card.raw)))
        declares_auth = any(
            card.raw.get(k) for k in ("securitySchemes", "security", "securityRequirements")
        )
        answered_open = False
        seen = _Seen()
        interfaces = _interfaces(card)
        for binding, version, endpoint in interfaces[:MAX_INTERFACES]:
            answered_open |= await _probe(
                card,
                binding,
                version,
                endpoint,
                http,
                headers,
                timeout,
                traffic,
                add,
                declares_auth,
                seen,
            )
        if len(interfaces) > MAX_INTERFACES:
            add(
                Finding(
                    "warning",
                    "card",
                    f"the card lists {len(interfaces)} interfaces; the first {MAX_INTERFACES} "
                    "were checked",
                    fix="list each interface the agent serves once",
                )
            )
        if declares_auth and answered_open and not headers:
            add(
                Finding(
                    "warning",
                    "auth",
                    "the card declares authentication, but the peer answered calls without "
                    "any credentials",
                    breaks=["clients that trust the card's security"],
                    fix="enforce the declared scheme, or drop it from the card",
                )
            )
        if send:
            await _active(card, http, headers, timeout, traffic, add, seen)
        await probe_features(Probe(traffic, add, card, http, headers or {}, timeout), send)
        _verdicts(card, seen, send, add)


async def _card(
    url: str,
    http: httpx.AsyncClient,
    traffic: TrafficRecorder,
    headers: dict[str, str],
    timeout: float,
    add: _Add,
) -> AgentCard | None:
    find = Finder(traffic, add)
    base = url.split("/.well-known/")[0].rstrip("/")
    found: dict[str, AgentCard] = {}
    for path in (CARD_PATH, LEGACY_CARD_PATH):
        before = find.mark()
        try:
            found[path] = await fetch_card(
                base + path, headers, timeout, http=http, traffic=traffic, cached=False
            )  # the doctor judges the whole answer
        except PeerError as exc:
            if exc.status == 404:
                continue
            last = list(traffic.events)[-1]
            if last.status is None:
                find.found(
                    "error",
                    "card",
                    f"nothing answered at {base + path}: {last.error}",
                    breaks=EVERY_CLIENT,
                    fix="check the URL, and that the agent is running and reachable from here",
                )
                return None
            what = (
                f"{path} answered 200 with what is not a JSON object"
                if last.status == 200
                else str(exc)
            )
            find.found(
                "error",
                "card",
                what,
                before,
                EVERY_CLIENT,
                "serve the card as a JSON object with Content-Type application/json",
            )
    if not found:
        find.found(
            "error",
            "card",
            f"no agent card at {base}{CARD_PATH} or {LEGACY_CARD_PATH}",
            len(traffic.events) - 2,
            EVERY_CLIENT,
            f"serve the card at {CARD_PATH}",
        )
        return None
    if CARD_PATH not in found:
        find.found(
            "warning",
            "card",
            f"the card is only at {LEGACY_CARD_PATH} (the 0.2 path)",
            breaks=["a2a-sdk 1.x", "JS SDK"],
            fix=f"serve it at {CARD_PATH} too",
        )
    else:
        find.found(
            "ok",
            "card",
            f"found at {CARD_PATH}" + (" (and the 0.2 path)" if len(found) == 2 else ""),
        )
    card = found.get(CARD_PATH) or found[LEGACY_CARD_PATH]
    find.found(
        "info",
        "card",
        f"'{card.name}' version {card.raw.get('version')!r}, "
        f"protocolVersion {card.raw.get('protocolVersion')!r}",
    )
    return card


def _interfaces(card: AgentCard) -> list[tuple[Binding | str, str, str]]:
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


async def _probe(
    card: AgentCard,
    binding: Binding | str,
    version: str,
    endpoint: str,
    http: httpx.AsyncClient,
    headers: dict[str, str] | None,
    timeout: float,
    traffic: TrafficRecorder,
    add: _Add,
    declares_auth: bool,
    seen: _Seen,
) -> bool:
    """GetTask of an unknown task over one interface (and, on JSON-RPC, both dialects' method
    names); True when it answered without credentials."""
    name = f"{binding} {version}.x"
    find = Finder(traffic, _at(add, endpoint))
    if not isinstance(binding, Binding):
        find.found("info", name, f"{binding} {version}.x is not a binding toolnexus can check")
        return False
    breaks = _LINES.get((binding, version), [f"{binding} clients"])
    client = _probe_client(card, binding, version, endpoint, http, headers, timeout, traffic)
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
            await _names(client, name, traffic, find.add, seen)
            await _jsonrpc_codes(client, name, version, traffic, find.add)
        return True
    except MethodNotFoundError as exc:
        seen.answered[key] = False
        known = (
            await _names(client, name, traffic, find.add, seen)
            if binding is Binding.JSONRPC
            else {}
        )
        _not_known(find, name, card, endpoint, version, known, exc, breaks, before)
    except RPCError as exc:
        seen.answered[key] = True
        if binding is Binding.JSONRPC:
            await _names(client, name, traffic, find.add, seen)
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


def _probe_client(
    card: AgentCard,
    binding: Binding,
    version: str,
    endpoint: str,
    http: httpx.AsyncClient,
    headers: dict[str, str] | None,
    timeout: float,
    traffic: TrafficRecorder,
) -> A2AClient:
    """A client of one interface of the card, on the doctor's wire log."""
    client = A2AClient(
        card,
        headers=headers,
        timeout=timeout,
        http=http,
        dialect="1.0" if version == "1" else "0.3",
        binding=binding.value.lower(),
    )
    client.use(endpoint)
    client.traffic = traffic
    # credentials go only to the host the user named, as A2AClient.connect decides
    client.credentials_sent = not client.transport.elsewhere(endpoint, card.source or "")
    return client


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
    if version == "0" and known.get("message/send") is False and _speaks_v10(card, endpoint):
        find.found(
            "error",
            name,
            f"the card promises 0.3 at {endpoint} ({_promise(card, endpoint)}), but the "
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


async def _rpc(
    client: A2AClient,
    method: str,
    params: dict[str, Any],
    traffic: TrafficRecorder,
    extra: dict[str, str] | None = None,
) -> tuple[Any, httpx.Response | None, str]:
    """One raw JSON-RPC call as ``client`` would send it, on the wire log: ``(what it answered,
    the response, why none)``, the answer being the error code, ``"result"``, or None when it is
    no JSON-RPC answer."""
    headers = {**client.request_headers(client.dialect or Dialect.V03), **(extra or {})}
    answer = await rpc(
        client.http, client.endpoint, method, params, headers, client.timeout, traffic
    )
    return answer.got, answer.response, answer.why


async def _names(
    client: A2AClient, name: str, traffic: TrafficRecorder, add: _Add, seen: _Seen
) -> dict[str, bool | None]:
    """Which dialects' method names one JSON-RPC endpoint knows: each send method asked with no
    message (nothing to act on: one that knows it refuses the params, one that does not answers
    -32601), and the legacy dialect's ``GetTask`` for an unknown task."""
    find = Finder(traffic, add)
    if client.endpoint in seen.knows:
        return seen.knows[client.endpoint]
    known: dict[str, bool | None] = {}
    for method in _NAMES:
        extra = {"A2A-Version": "1.0"} if _NAMES[method] is Dialect.V10 else {}
        answer, _, _ = await _rpc(client, method, {}, traffic, extra)
        known[method] = None if answer is None else answer != -32601
    if (
        known["SendMessage"] is not True
    ):  # a legacy peer may fail on an empty send: its GetTask tells
        answer, _, _ = await _rpc(
            client, "GetTask", {"id": f"toolnexus-doctor-{uuid.uuid4()}"}, traffic
        )
        if answer is not None and answer != -32601:
            known["SendMessage"] = True
    seen.knows[client.endpoint] = known
    said = {True: "knows", False: "answers -32601 to", None: "gave no JSON-RPC answer to"}
    find.found(
        "info",
        f"{name}: method names",
        "; ".join(f"{said[known[m]]} {m} ({_NAMES[m].value})" for m in _NAMES),
    )
    return known


async def _jsonrpc_codes(
    client: A2AClient, name: str, version: str, traffic: TrafficRecorder, add: _Add
) -> None:
    """JSON-RPC's own error codes: an unknown method, invalid params, a version it does not speak."""
    find = Finder(traffic, add)
    dialect = client.dialect or Dialect.V03
    probes = [
        ("unknown method", "toolnexus/doctorUnknownMethod", {}, -32601, {}),
        (
            "invalid params",
            "GetTask" if dialect is Dialect.V10 else "tasks/get",
            {"id": 12345},
            -32602,
            {},
        ),
    ]
    if version == "1":
        probes.append(("version header", "GetTask", {"id": "x"}, -32009, {"A2A-Version": "99.0"}))
    for check, method, params, want, extra in probes:
        before = find.mark()
        got, r, reason = await _rpc(client, method, params, traffic, extra)
        if r is None:
            find.found("warning", f"{name}: {check}", f"no answer: {reason}")
            continue
        if got == want:
            find.found("ok", f"{name}: {check}", f"answered {want}")
        else:
            severity = "info" if check == "version header" else "warning"
            find.found(
                severity,
                f"{name}: {check}",
                f"expected JSON-RPC error {want}, got "
                + (str(got) if isinstance(got, int) else f"HTTP {r.status_code} without one"),
                before,
                ["clients that tell errors apart"],
                f"answer {want} as JSON-RPC 2.0 and A2A specify",
            )


async def _active(
    card: AgentCard,
    http: httpx.AsyncClient,
    headers: dict[str, str] | None,
    timeout: float,
    traffic: TrafficRecorder,
    add: _Add,
    seen: _Seen,
) -> None:
    """A message sent as toolnexus would send it, one in each other dialect an official client
    would speak to this card, and a stream when the card offers one."""
    find = Finder(traffic, add)
    client = A2AClient(card, headers=headers, timeout=timeout, http=http)
    client.traffic = traffic
    before = find.mark()
    try:
        task = await client.send("hello from toolnexus doctor", blocking=True)
        _blocked(client, task, traffic, add, seen)
        _words_where(task, traffic, seen)
        seen.ours, seen.ours_over = (
            "",
            f"{client.dialect.value if client.dialect else '?'} over {client.binding} "
            f"at {client.endpoint}",
        )
        find.found(
            "ok",
            "send",
            f"a message made task {task.id} ({task.state.value}) over "
            f"{client.binding} {client.dialect.value if client.dialect else '?'}",
        )
        if client.dialect is Dialect.LEGACY:  # it fell back: the 0.3 send was answered -32601
            seen.sent[(client.endpoint, Dialect.V03)] = (
                "it answered message/send with -32601 (method not found)"
            )
        if client.dialect is not None:
            seen.sent[(client.endpoint, client.dialect)] = ""
        if (
            client.binding is Binding.JSONRPC
            and client.dialect is not None
            and client.dialect is not Dialect.LEGACY
        ):
            seen.shapes[(client.endpoint, client.dialect)] = _shapes(
                list(traffic.events)[-1], client.dialect, add
            )
        await _as_others_send(card, http, headers, timeout, traffic, add, seen)
        _slow(traffic, before, add, seen)
        await _cancel(client, task, traffic, add, seen)
        await _round_trip(client, card, traffic, add, seen)
        if card.streaming:
            before = find.mark()
            frames = await _read_stream(client, find, timeout, before)
            await _judge_stream(client, find, seen, frames, before)
    except (RPCError, PeerError) as exc:
        if seen.ours is None:
            seen.ours = str(exc)
        if client.dialect is not None and client.endpoint:
            seen.sent.setdefault((client.endpoint, client.dialect), str(exc))
        find.found(
            "error",
            "send",
            f"a plain text message failed: {exc}",
            before,
            ["toolnexus"],
            "accept a text message as every client sends it",
        )
    finally:
        await client.release()


async def _read_stream(client: A2AClient, find: Finder, timeout: float, before: int) -> list[Any]:
    """The frames of a stream for a one-line message, read for a bounded time and count."""
    frames: list[Any] = []
    try:  # a peer that streams forever must not keep the doctor forever
        async with asyncio.timeout(max(timeout, 30.0)):
            async with contextlib.aclosing(
                client.stream("hello again from toolnexus doctor")
            ) as stream:
                async for frame in stream:
                    frames.append(frame)
                    if len(frames) >= MAX_FRAMES:
                        find.found(
                            "warning",
                            "streaming",
                            f"a stream for a one-line message sent "
                            f"{MAX_FRAMES} frames without ending; the doctor stopped reading",
                            breaks=["streaming clients that wait for the end"],
                            fix="end the stream when the task is final or interrupted",
                        )
                        break
    except TimeoutError:
        find.found(
            "warning",
            "streaming",
            f"a stream for a one-line message did not end within "
            f"{max(timeout, 30.0):g} s ({len(frames)} frame(s))",
            before,
        )
    return frames


async def _judge_stream(
    client: A2AClient, find: Finder, seen: _Seen, frames: list[Any], before: int
) -> None:
    """What a stream's frames and wire say: SSE, frames that arrived, broken off or none."""
    traffic, add = find.traffic, find.add
    streamed = [
        e
        for e in list(traffic.events)[before:]
        if e.rpc_method in ("message/stream", "SendStreamingMessage")
    ]
    answered = streamed[0].response_headers.get("content-type", "") if streamed else ""
    broke = next((e for e in streamed if e.error), None)
    if client.dialect is not None:
        _frames(streamed, client.endpoint, client.dialect, seen)
    _contents(streamed, add)
    await _stream_costs(streamed, add)
    if len(frames) >= MAX_FRAMES:
        pass  # said above
    elif broke is not None:
        add(
            Finding(
                "warning",
                "streaming",
                f"the stream broke off after {len(broke.frames)} event(s), before the "
                f"task settled: {broke.error}",
                [evidence(broke)],
                ["a2a-sdk 1.x", "a2a-sdk 0.3", "JS SDK 1.x"],
                "keep a stream open until its task is final or interrupted (a proxy in "
                "front may end long answers: raise its read timeout, and send keep-alive "
                "comments)",
            )
        )
    elif frames and client.binding is Binding.GRPC:  # a server-streaming call: no SSE to check
        find.found(
            "ok",
            "streaming",
            f"the card says streaming, and {len(frames)} frame(s) arrived over a gRPC stream",
        )
    elif frames and answered.startswith("text/event-stream"):
        find.found(
            "ok",
            "streaming",
            f"the card says streaming, and {len(frames)} frame(s) arrived",
        )
    elif frames:
        find.found(
            "warning",
            "streaming",
            f"the card says streaming, but the stream was answered as "
            f"{answered or 'no content type'}, not SSE",
            before,
            ["streaming clients"],
            "answer message/stream with text/event-stream frames",
        )
    else:
        find.found(
            "error",
            "streaming",
            "the card says streaming, but no frame arrived",
            before,
            ["streaming clients"],
            "serve message/stream (SSE), or set capabilities.streaming to false",
        )


async def _cancel(
    client: A2AClient, first: Task, traffic: TrafficRecorder, add: _Add, seen: _Seen
) -> None:
    """A task sent to return at once, canceled: judged by the task's state after the cancel (got
    again), not by the answer alone; then one more blocking send, which must do as the first did
    (a server whose cancel breaks the tasks after it is named)."""
    find = Finder(traffic, add)
    before = find.mark()
    started = await client.send("hello from toolnexus doctor (to cancel)")
    refused: Exception | None = None
    answered: Task | None = None
    try:
        answered = await client.cancel(started.id)
    except TaskNotCancelableError as exc:
        refused = exc
    except (RPCError, PeerError) as exc:
        find.found(
            "warning",
            "cancel",
            f"cancel failed: {exc}",
            before,
            ["clients that cancel (agent tools, the TUI, the SDKs)"],
            "answer CancelTask with the task, or TaskNotCancelableError when it has finished",
        )
        return
    try:
        after = (await client.get(started.id)).state
    except (RPCError, PeerError):
        after = answered.state if answered is not None else None
    if refused is not None and after is not None and not after.terminal:
        find.found(
            "warning",
            "cancel",
            f"cancel was refused as not cancelable ({refused}), but the task was "
            f"{after.value}, not finished",
            before,
            ["clients that cancel (agent tools, the TUI, the SDKs): the task runs on"],
            "cancel a task that has not finished (TaskNotCancelable is for a finished one), "
            "and set its state canceled",
        )
    elif refused is not None:
        find.found(
            "info",
            "cancel",
            f"the task had finished first ({after.value if after else 'its state unknown'}); "
            "cancel was refused as it should be",
        )
    elif answered is not None:
        ended = after or answered.state
        severity = (
            "ok"
            if ended is TaskState.CANCELED
            else "info"
            if ended.terminal  # it finished first; the cancel's answer was not its state
            else "warning"
        )
        find.found(
            severity,
            "cancel",
            f"cancel answered the task {answered.state.value}"
            + ("" if after in (None, answered.state) else f", and it was {after.value} after"),
            None if severity == "ok" else before,
            ["clients that cancel: the task runs on"] if severity == "warning" else [],
            "" if severity == "ok" else "answer a cancel with the task's state after it",
        )
    await _after_cancel(client, first, find, seen)


async def _after_cancel(client: A2AClient, first: Task, find: Finder, seen: _Seen) -> None:
    """One more blocking send after the cancel, which must do as the first did."""
    before = find.mark()
    try:
        again = await client.send("hello from toolnexus doctor (after the cancel)", blocking=True)
    except (RPCError, PeerError) as exc:
        broke = str(exc)
    else:
        _blocked(client, again, find.traffic, find.add, seen)
        _words_where(again, find.traffic, seen)
        broke = (
            f"its task {again.state.value}"
            + (f": {again.status.message.text}" if again.status.message else "")
            if again.state in (TaskState.FAILED, TaskState.REJECTED)
            and first.state not in (TaskState.FAILED, TaskState.REJECTED)
            else ""
        )
    if broke:
        find.found(
            "error",
            "cancel",
            "after one cancel, a message that worked before failed ("
            + broke
            + "): the cancel broke the tasks after it (beeai-framework 0.1.85's server does "
            "this: one AbortController shared by every task)",
            before,
            ["every client, after any client's cancel"],
            "give each task its own cancellation (abort only the task canceled)",
        )


def _words_where(task: Task, traffic: TrafficRecorder, seen: _Seen) -> None:
    """Notes a finished task whose words are only in ``status.message`` (no artifact text, no agent
    message in its history): clients that read the history instead show the user's own words."""
    said = task.status.message.text if task.status.message else ""
    if not (task.state.terminal and said) or task.artifacts_text or seen.status_only:
        return
    if any(m.role == "agent" and m.text == said for m in task.history):
        return
    last = list(traffic.events)[-1] if traffic.events else None
    seen.status_only = f"a {task.state.value} task: " + (evidence(last) if last else said)


def _blocked(
    client: A2AClient, task: Task, traffic: TrafficRecorder, add: _Add, seen: _Seen
) -> None:
    """A blocking send must be answered at a terminal or interrupted state (A2A: the send waits for
    it); one answered ``submitted`` or ``working`` is named, once."""
    if task.state.terminal or task.state.interrupted or client.dialect is Dialect.LEGACY:
        return  # the legacy dialect never blocks: its clients expect submitted back
    if seen.unblocked:
        return
    seen.unblocked = task.state.value
    add(
        Finding(
            "warning",
            "blocking send",
            f"a blocking send was answered with the task {task.state.value}: a blocking send "
            "waits until the task is finished or needs input",
            [evidence(list(traffic.events)[-1])] if traffic.events else [],
            [
                "clients that send without streaming (a2a-sdk 1.x, the JS SDK): the answer has no reply"
            ],
            "answer a blocking send (0.3 blocking: true, or 1.0 without returnImmediately) when "
            "the task is completed, failed, canceled, rejected, or asks for input",
        )
    )


async def _as_others_send(
    card: AgentCard,
    http: httpx.AsyncClient,
    headers: dict[str, str] | None,
    timeout: float,
    traffic: TrafficRecorder,
    add: _Add,
    seen: _Seen,
) -> None:
    """One blocking send in each JSON-RPC dialect and endpoint an official client picks from this
    card and toolnexus did not use, so that each verdict rests on an answer that client would read;
    and one in 0.3 wherever an endpoint knows ``message/send`` though no client picks it there, so
    that a hybrid (0.3's method names, 1.0's shapes) is named as such."""
    wanted = [
        (route[1], route[2])
        for route in _routes(card).values()
        if not isinstance(route, str) and route[0] is Binding.JSONRPC
    ]
    wanted += [
        (endpoint, Dialect.V03)
        for endpoint, known in seen.knows.items()
        if known.get("message/send")
    ]
    for endpoint, dialect in dict.fromkeys(wanted):
        if (endpoint, dialect) in seen.sent:
            continue
        if seen.knows.get(endpoint, {}).get(_SEND_METHOD[dialect]) is False:
            seen.sent[(endpoint, dialect)] = "its send method is answered -32601 (method not found)"
            continue
        client = A2AClient(
            card,
            headers=headers,
            timeout=timeout,
            http=http,
            dialect=dialect.value,
            binding="jsonrpc",
        )
        client.use(endpoint)
        client.traffic = traffic
        client.credentials_sent = not client.transport.elsewhere(endpoint, card.source or "")
        try:
            sent = await client.send(
                f"hello from toolnexus doctor (in {dialect.value})", blocking=True
            )
            seen.sent[(endpoint, dialect)] = ""
            _blocked(client, sent, traffic, add, seen)
        except (RPCError, PeerError) as exc:
            seen.sent[(endpoint, dialect)] = str(exc)
        finally:
            await client.release()
        last = list(traffic.events)[-1] if traffic.events else None
        if last is not None and last.url == endpoint and last.status is not None:
            seen.shapes[(endpoint, dialect)] = _shapes(last, dialect, add)
        if card.streaming and not seen.sent[(endpoint, dialect)]:
            await _stream_as(client, dialect, traffic, seen, add)


async def _stream_as(
    client: A2AClient, dialect: Dialect, traffic: TrafficRecorder, seen: _Seen, add: _Add
) -> None:
    """One stream as a client of ``dialect`` asks for it, read to its end (bounded), its every
    frame checked against the dialect (:func:`_frames`)."""
    before = len(traffic.events)
    with contextlib.suppress(RPCError, PeerError, TimeoutError):
        async with asyncio.timeout(max(client.timeout, 30.0)):
            async with contextlib.aclosing(
                client.stream(f"hello from toolnexus doctor (a stream in {dialect.value})")
            ) as stream:
                read = 0
                async for _ in stream:
                    read += 1
                    if read >= MAX_FRAMES:
                        break
    streamed = [e for e in list(traffic.events)[before:] if e.rpc_method in _STREAMS]
    _frames(streamed, client.endpoint, dialect, seen)
    _contents(streamed, add)
    await _stream_costs(streamed, add)


_STREAMS = ("message/stream", "SendStreamingMessage")
_V10_EVENTS = ("task", "message", "statusUpdate", "artifactUpdate")
_V03_KINDS = ("task", "message", "status-update", "artifact-update")


def _frames(streamed: list[TrafficEvent], endpoint: str, dialect: Dialect, seen: _Seen) -> None:
    """Every frame of a JSON-RPC stream checked against ``dialect`` (a reader of it refuses the
    first that departs: the official clients parse each frame strictly); the first departure is
    kept for the verdicts, with its evidence."""
    for event in streamed:
        results = [
            data.get("result")
            for data in map(_json.loads_or_none, event.frames)
            if _json.is_object(data) and _json.is_object(data.get("result"))
        ]
        seen.read.setdefault((endpoint, dialect), []).append((readings(results), evidence(event)))
        for i, frame in enumerate(event.frames, 1):
            data = _json.loads_or_none(frame)
            result = data.get("result") if _json.is_object(data) else None
            if result is None:
                continue  # an error frame, or not JSON-RPC: said by the streaming check
            faults = _frame_faults(result, dialect)
            if faults:
                seen.streams[(endpoint, dialect)] = (
                    f"frame {i} of {len(event.frames)}: " + "; ".join(faults),
                    f"{event.method} {event.url} {event.rpc_method}, frame {i}: {frame[:400]}",
                )
                return
        seen.streams.setdefault((endpoint, dialect), None)


def _contents(streamed: list[TrafficEvent], add: _Add) -> None:
    """What each stream carried, checked (:class:`~toolnexus.protocol.stream.StreamCheck`): a
    finding per fault, with the frame that shows it."""
    for event in streamed:
        check = StreamCheck()
        shown: dict[int, str] = {}
        for frame in event.frames:
            data = _json.loads_or_none(frame)
            result = data.get("result") if _json.is_object(data) and "jsonrpc" in data else data
            if _json.is_object(result):
                check.frame(result)
                shown[check.frames] = (
                    f"{event.method} {event.url} {event.rpc_method}: {frame[:400]}"
                )
        check.end()
        for fault in check.faults:
            add(
                Finding(
                    fault.severity,
                    f"stream: {fault.name}",
                    f"frame {fault.frame}: {fault.message}" if fault.frame else fault.message,
                    [shown[fault.frame]] if fault.frame in shown else [evidence(event)],
                )
            )


async def _stream_costs(streamed: list[TrafficEvent], add: _Add) -> None:
    """What each stream cost in tokens (:func:`counted`)."""
    for event in streamed:
        if event.frames:
            where = f"{event.rpc_method} at {event.url}"
            add(await counted("cost: stream", lambda e=event: stream_cost(e.frames), where))


COUNT_WAIT = 30.0
"""Seconds a count may take (tiktoken loading its encoding, fetching it the first time)."""


def costs(check: str, counting: Callable[[], Cost], at: str = "") -> Finding:
    """What something costs in tokens, as an info finding (``counting()`` counts it), or why it
    was not counted (tiktoken absent, or its encoding not had). Off any loop: the first count
    loads the tokenizer (:func:`counted` on one)."""
    try:
        return Finding("info", check, str(counting()), at=at)
    except MissingExtra as exc:
        return Finding("info", check, f"not counted: {exc}", at=at)


async def counted(check: str, counting: Callable[[], Cost], at: str = "") -> Finding:
    """:func:`costs` on a thread, within :data:`COUNT_WAIT`."""
    try:
        return await asyncio.wait_for(asyncio.to_thread(costs, check, counting, at), COUNT_WAIT)
    except TimeoutError:
        return Finding("info", check, f"not counted: no tokenizer within {COUNT_WAIT:g} s", at=at)


def _frame_faults(result: Any, dialect: Dialect) -> list[str]:
    """What of one stream frame's result a strict reader of ``dialect`` refuses."""
    if not _json.is_object(result):
        return ["the result is not an object"]
    out: list[str] = []
    if dialect is Dialect.V10:
        keys = [k for k in _V10_EVENTS if k in result]
        if len(keys) != 1 or "kind" in result:
            out.append(
                "it is not wrapped as one of task, message, statusUpdate, artifactUpdate"
                + (f" (it has 0.3's kind {result.get('kind')!r})" if "kind" in result else "")
            )
        body = result.get(keys[0]) if len(keys) == 1 else result
    else:
        if result.get("kind") not in _V03_KINDS:
            wrapped = [k for k in _V10_EVENTS if k in result]
            out.append(
                f"it has no 0.3 kind (it is wrapped as 1.0's {wrapped[0]!r})"
                if wrapped
                else "it has no 0.3 kind"
            )
        body = result
    status = body.get("status") if _json.is_object(body) else None
    state = str(status.get("state") or "") if _json.is_object(status) else ""
    if dialect is Dialect.V10 and state and not state.startswith("TASK_STATE_"):
        out.append(f"the state {state!r} is not TASK_STATE_*")
    if dialect is not Dialect.V10 and state.startswith("TASK_STATE_"):
        out.append(f"the state {state!r} is not 0.3's spelling")
    return out


def _slow(traffic: TrafficRecorder, before: int, add: _Add, seen: _Seen) -> None:
    """Whether a send the doctor waited on took longer than the official Python clients wait."""
    sends = [
        e
        for e in list(traffic.events)[before:]
        if e.rpc_method in ("message/send", "SendMessage", "message:send") and e.status
    ]
    if not sends:
        return
    slowest = max(sends, key=lambda e: e.ms)
    seen.slowest = slowest.ms / 1000
    if seen.slowest > SDK_WAIT:
        add(
            Finding(
                "warning",
                "answer time",
                f"a blocking send took {seen.slowest:.1f} s to be answered: the official Python "
                f"clients wait {SDK_WAIT:g} s unless given an HTTP client of their own",
                [evidence(slowest)],
                ["a2a-sdk 1.x (default HTTP client)", "a2a-sdk 0.3 (default HTTP client)"],
                "answer a blocking send within a few seconds (return the task working, and let "
                "the client poll or stream), or tell callers to give their client a longer timeout",
            )
        )


async def _round_trip(
    client: A2AClient, card: AgentCard, traffic: TrafficRecorder, add: _Add, seen: _Seen
) -> None:
    """An ``input-required`` round trip, when one of the card's skill examples (the first three)
    asks for input: the answer must go on the same task and move it past the question."""
    find = Finder(traffic, add)
    examples = [str(e) for skill in card.skills for e in (skill.get("examples") or [])][:3]
    for text in examples:
        before = find.mark()
        asked = await client.send(text, blocking=True)
        if asked.state is not TaskState.INPUT_REQUIRED:
            continue
        seen.asked = True
        question = asked.status.message.text if asked.status.message else ""
        answered = await client.send(
            "yes", task_id=asked.id, context_id=asked.context_id, blocking=True
        )
        if answered.id != asked.id:
            find.found(
                "warning",
                "input-required",
                f"the answer to {text!r} made a new task, not the same one",
                before,
                ["agent tools and chats that answer questions"],
                "continue the task named by the message's taskId",
            )
        elif (
            answered.state is TaskState.INPUT_REQUIRED
            and answered.status.message
            and answered.status.message.text == question
        ):
            find.found(
                "warning",
                "input-required",
                "the answer left the task asking the same question",
                before,
                ["agent tools and chats that answer questions"],
                "take the answer and move the task on",
            )
        else:
            find.found(
                "ok",
                "input-required",
                f"{text!r} asked for input; the answer went on the same task, "
                f"now {answered.state.value}",
            )
        return
    if examples:
        find.found(
            "info",
            "input-required",
            "no skill example asked for input: the round trip was not tried",
        )


def _speaks_v10(card: AgentCard, endpoint: str) -> bool:
    """Whether the card lists a 1.0 JSON-RPC interface at ``endpoint`` (a legacy port never does)."""
    return any(b is Binding.JSONRPC and v == "1" and u == endpoint for b, v, u in _interfaces(card))


def _promise(card: AgentCard, endpoint: str) -> str:
    """What on the card says 0.3 is served at ``endpoint``: its 0.3 interface, or its ``url``."""
    if any(
        str(i.get("protocolVersion") or "").startswith("0") and i.get("url") == endpoint
        for i in card.interfaces
    ):
        return "a 0.3 interface"
    return f"url, and protocolVersion {card.raw.get('protocolVersion')!r}"


_Route = tuple[Binding, str, Dialect]


def _routes(card: AgentCard) -> dict[str, _Route | str]:
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


def _verdicts(card: AgentCard, seen: _Seen, send: bool, add: _Add) -> None:
    """One finding per official client: whether it works with this peer, from what it would send
    and read set against what the peer was seen to answer; unknown where nothing was seen. A client
    that breaks is a warning: the peer may mean to serve one line only; what it serves wrongly is
    an error of the checks above."""
    unzoned = [a for a in seen.shapes.values() if a is not None and not a.zoned]
    if unzoned:  # once, however many answers showed it
        add(
            Finding(
                "warning",
                "timestamp",
                f"status.timestamp {unzoned[0].timestamp!r} has no zone (RFC 3339 needs Z "
                "or an offset)",
                [unzoned[0].evidence],
                ["a2a-sdk 1.x"],
                "write timestamps in UTC with a Z: 2026-12-03T10:00:00Z",
            )
        )
    said: dict[str, Finding] = {}  # the official lines' verdicts, for the frameworks on them
    official, add = add, _keeping(add, said)
    for line, route in _routes(card).items():
        _verdict(card, line, route, seen, send, add)
    _frameworks(card, seen, send, said, official)
    _toolnexus_verdict(card, seen, add)


def _verdict(
    card: AgentCard,
    line: str,
    route: tuple[Binding, str, Dialect] | str,
    seen: _Seen,
    send: bool,
    add: _Add,
) -> None:
    """Whether the official client ``line`` works with this peer, by the ``route`` it takes
    (a string: why it finds none)."""
    check = f"client: {line}"

    def breaks(message: str, fix: str) -> None:  # a warning that this client breaks
        add(Finding("warning", check, message, breaks=[line], fix=fix))

    if isinstance(route, str):
        breaks(f"breaks: {route}", "serve a card this client reads (see the card findings above)")
        return
    binding, endpoint, dialect = route
    where = f"{dialect.value} over {binding.value} at {endpoint}"
    if line == "a2a-sdk 1.x" and binding is not Binding.JSONRPC:
        where += (
            f" (when its ClientConfig lists {binding.value}"
            + (", with a grpc_channel_factory" if binding is Binding.GRPC else "")
            + ": its default is JSONRPC only)"
        )
    method = _SEND_METHOD[dialect]
    known = seen.knows.get(endpoint, {}).get(method) if binding is Binding.JSONRPC else None
    probed = seen.answered.get((binding, "1" if dialect is Dialect.V10 else "0", endpoint))
    if known is False:
        breaks(
            f"breaks: it speaks {where} and sends {method}, which the peer answers "
            "with -32601 (method not found)",
            f"answer {method} at {endpoint}, or list that endpoint with the version it speaks",
        )
        return
    if binding is not Binding.JSONRPC and probed is False:
        breaks(
            f"breaks: it speaks {where}, where the peer gave no A2A answer",
            "serve that interface, or drop it from the card",
        )
        return
    outcome = seen.sent.get((endpoint, dialect))
    if outcome is None:
        unknown = (
            "no JSON-RPC answer to its send method"
            if binding is Binding.JSONRPC and known is None
            else ""
        )
        add(
            Finding(
                "info",
                check,
                f"cannot tell: it speaks {where}"
                + (f"; {unknown}" if unknown else "; the peer knows its methods")
                + ", and whether it reads the answers is not known "
                + (
                    "without --send (a task is created)"
                    if not send
                    else f"(no message went over {binding.value})"
                ),
            )
        )
        return
    if outcome:
        breaks(
            f"breaks: a message sent as it sends one ({where}) failed: {outcome}",
            "answer a plain text message in that dialect",
        )
        return
    _reading(card, line, check, where, binding, endpoint, dialect, seen, add)


def _reading(
    card: AgentCard,
    line: str,
    check: str,
    where: str,
    binding: Binding,
    endpoint: str,
    dialect: Dialect,
    seen: _Seen,
    add: _Add,
) -> None:
    """Whether the official client ``line``, whose send the peer answered, reads the answers."""
    answer = seen.shapes.get((endpoint, dialect))
    departures = (
        answer.departures(dialect, proto_timestamps=line == "a2a-sdk 1.x")
        if answer is not None
        else []
    )
    if binding is Binding.JSONRPC and answer is None:
        add(
            Finding(
                "info",
                check,
                f"cannot tell: it speaks {where}, and the answer had no result to read",
            )
        )
    elif departures:
        add(
            Finding(
                "warning",
                check,
                f"breaks: it speaks {where}, and cannot read the answer: " + "; ".join(departures),
                breaks=[line],
                fix=f"answer in {dialect.value}'s shapes",
            )
        )
    elif card.streaming and (unread := seen.streams.get((endpoint, dialect))):
        add(
            Finding(
                "warning",
                check,
                f"breaks: it speaks {where}, and cannot read the stream ("
                + (
                    "it streams by default when the card says streaming"
                    if line.startswith("a2a-sdk")
                    else "sendMessageStream"
                )
                + f"): {unread[0]}",
                [unread[1]],
                [line],
                f"write every stream frame in {dialect.value}'s shapes",
            )
        )
    elif line.startswith("a2a-sdk") and seen.slowest > SDK_WAIT:
        add(
            Finding(
                "warning",
                check,
                f"breaks: on its default HTTP client: it speaks {where} and reads the answers, "
                f"but a blocking send took {seen.slowest:.1f} s and it waits {SDK_WAIT:g} s "
                "(it works when given an httpx client with a longer timeout)",
                breaks=[line],
                fix="answer a blocking send sooner, or tell callers to give their client a "
                "longer timeout",
            )
        )
    else:
        add(
            Finding(
                "ok",
                check,
                f"works: it speaks {where}; the peer knows its send method and answers in the "
                "shapes it reads",
            )
        )


def _toolnexus_verdict(card: AgentCard, seen: _Seen, add: _Add) -> None:
    """Whether toolnexus's own client works with this peer (its send), or reaches it."""
    if seen.ours is not None:
        add(
            Finding(
                "ok" if not seen.ours else "warning",
                "client: toolnexus",
                f"works: {seen.ours_over}" if not seen.ours else f"breaks: {seen.ours}",
                breaks=[] if not seen.ours else ["toolnexus"],
            )
        )
    else:
        dialect, endpoint, _, binding = card.route()
        knows = seen.knows.get(endpoint, {})
        legacy = (
            dialect == "0.3"
            and knows.get("message/send") is False
            and knows.get("SendMessage")
            and not _speaks_v10(card, endpoint)
        )
        add(
            Finding(
                "info",
                "client: toolnexus",
                f"reaches it: {'legacy' if legacy else dialect} over {binding} at "
                f"{endpoint}"
                + (" (it falls back to the legacy dialect on -32601)" if legacy else "")
                + "; whether it reads the answers is not known without --send",
            )
        )


ADK = "Google ADK"
MAF = "Microsoft Agent Framework"
STRANDS = "AWS Strands"
CREWAI = "CrewAI"
HANDLER = "a2a-handler"
FASTA2A = "fasta2a"
FRAMEWORKS = {
    ADK: ("a2a-sdk 1.x", "google-adk 2.13 RemoteA2aAgent, on a2a-sdk 1.3"),
    MAF: ("a2a-sdk 1.x", "agent-framework-a2a 1.0.0b261022 A2AAgent, on a2a-sdk 1.3"),
    HANDLER: ("a2a-sdk 1.x", "a2a-handler 0.4 CLI, on a2a-sdk 1.3"),
    STRANDS: ("a2a-sdk 0.3", "strands-agents 1.62 A2AAgent, on a2a-sdk 0.3.26"),
    CREWAI: ("a2a-sdk 0.3", "crewai 1.15 A2A delegation, on a2a-sdk 0.3.26"),
    FASTA2A: ("", "fasta2a 2.1 A2AClient (pydantic-ai), a client of its own"),
}
"""The framework clients the doctor models (FIELD.md): the official line each runs on, and what it
is. Each is judged as that line is, then by its own way of reading (:func:`_frameworks`)."""


THEIRS = frozenset({STRANDS, CREWAI})
"""The frameworks whose way of reading departs from the spec where the peer is right: what they
break is said as info (nothing on the peer's side to fix), the others' as a warning."""


def framework_breaks(name: str, message: str, shown: list[str], fix: str, at: str = "") -> Finding:
    """The verdict that the framework ``name``'s client breaks on this peer, as ``message`` says
    (the evidence ``shown``, the ``fix`` on the peer's side; ``at``: where)."""
    severity, breaks = ("info", []) if name in THEIRS else ("warning", [name])
    return Finding(severity, f"client: {name}", f"breaks: {message}", shown, breaks, fix, at=at)


def _text(artifact: Any) -> str:
    parts = artifact.get("parts") if _json.is_object(artifact) else None
    return "".join(
        str(p.get("text") or "")
        for p in (parts if _json.is_array(parts) else ())
        if _json.is_object(p)
    )


def readings(results: list[Any]) -> dict[str, str]:
    """The text of a stream's artifacts as each reader ends it, from the stream's results in
    order (either dialect's shape): ``spec`` (every official client: an append adds, any other
    update replaces), :data:`ADK` (a ``lastChunk`` update is the whole artifact: the chunks before
    it are partial and not kept) and :data:`CREWAI` (every artifact update's text, each part a
    word joined with spaces, ignoring ``append`` and ``lastChunk``; a stream with no artifact
    update it reads from the task, as the spec does). FIELD.md; the only place these rules are
    written, for the doctor's verdicts and the auditor's."""
    spec: dict[str, str] = {}
    adk: dict[str, str] = {}
    crew: list[str] = []
    for result in results:
        if not _json.is_object(result):
            continue
        kind, body = event_of(result)
        if kind == "task":
            for a in body.get("artifacts") or ():
                if _json.is_object(a):
                    key = str(a.get("artifactId"))
                    spec[key] = adk[key] = _text(a)
        elif kind == "artifact-update" and _json.is_object(artifact := body.get("artifact")):
            key, text = str(artifact.get("artifactId")), _text(artifact)
            spec[key] = spec.get(key, "") + text if body.get("append") is True else text
            if body.get("lastChunk") is True or body.get("append") is not True:
                adk[key] = text
            else:
                adk[key] = adk.get(key, "") + text
            parts = artifact.get("parts")
            crew += [
                str(p.get("text"))
                for p in (parts if _json.is_array(parts) else ())
                if _json.is_object(p) and isinstance(p.get("text"), str)
            ]
    whole = "\n".join(spec.values())
    return {"spec": whole, ADK: "\n".join(adk.values()), CREWAI: " ".join(crew) if crew else whole}


def misread(name: str, read: dict[str, str]) -> tuple[str, str] | None:
    """How the framework ``name`` (:data:`ADK` or :data:`CREWAI`) misreads a stream read as
    ``read`` (:func:`readings`): what it does and the fix on the peer's side; None when it reads
    what the spec reads."""
    if read[name] == read["spec"]:
        return None
    if name == ADK:
        return (
            f"records only the last chunk of this stream: it reads {read[ADK]!r} where the stream "
            f"says {read['spec']!r} (an update with lastChunk: true is the whole artifact to it; "
            "the chunks before are lost)",
            "close a streamed artifact with append: false, lastChunk: true and the whole text "
            "(as ADK's own server does; every other client reads it the same)",
        )
    return (
        f"joins the chunks of a streamed artifact with spaces: it reads {read[CREWAI]!r} where "
        f"the stream says {read['spec']!r} (it reads every artifact update as a word)",
        "nothing in the stream's shape fixes it while words stream as appends; a whole "
        "artifact (one chunk) reads right",
    )


def _keeping(add: _Add, said: dict[str, Finding]) -> _Add:
    """``add`` that also keeps each client verdict in ``said``, by the client's name."""

    def keep(finding: Finding) -> Any:
        said[finding.check.removeprefix("client: ")] = finding
        return add(finding)

    return keep


def _frameworks(
    card: AgentCard, seen: _Seen, send: bool, said: dict[str, Finding], add: _Add
) -> None:
    """One verdict per framework client (:data:`FRAMEWORKS`): where the official line it runs on
    breaks, it breaks the same way; then what it reads its own way, set against what was seen."""
    routes = _routes(card)
    given = (card.source or "").split("/.well-known/")[0].rstrip("/") + "/"
    for name, (line, what) in FRAMEWORKS.items():
        check = f"client: {name}"
        if name == FASTA2A:
            _fasta2a(card, seen, given, add)
            continue
        base = said.get(line)
        if name == MAF and routes[line] != (Binding.JSONRPC, given, Dialect.V10):
            # A2AAgent(url=...) reads no card: it speaks 1.0 over JSON-RPC at the URL it is given
            where = f"1.0 over JSONRPC at the URL it is given, {given} (it reads no card)"
            if seen.knows.get(given, {}).get("SendMessage") is False:
                add(
                    Finding(
                        "warning",
                        check,
                        f"breaks: it speaks {where}, and the peer answers SendMessage with -32601",
                        breaks=[name],
                        fix=f"answer 1.0's SendMessage at {given}",
                    )
                )
            else:
                add(Finding("info", check, f"cannot tell: it speaks {where}"))
            continue
        if base is None or base.severity != "ok":
            if base is not None and base.severity == "warning":
                add(
                    Finding(
                        "warning",
                        check,
                        f"breaks as {line}, which it runs on ({what}): "
                        + base.message.removeprefix("breaks: "),
                        base.evidence,
                        [name],
                        base.fix,
                    )
                )
            else:
                add(Finding("info", check, f"cannot tell: {line}, which it runs on, cannot tell"))
            continue
        route = routes[line]
        key = (route[1], route[2]) if not isinstance(route, str) else ("", Dialect.V10)
        fault = _framework_fault(name, key, card, seen)
        if fault is not None:
            add(framework_breaks(name, *fault))
        else:
            add(
                Finding("ok", check, f"works: as {line}, which it runs on ({what})" + _caveat(name))
            )


def _framework_fault(
    name: str, key: tuple[str, Dialect], card: AgentCard, seen: _Seen
) -> tuple[str, list[str], str] | None:
    """What of this peer the framework ``name`` reads its own way, as seen: (what it does, the
    evidence, the fix on the peer's side); None when nothing seen trips it."""
    if name in (ADK, CREWAI) and card.streaming:
        for read, shown in seen.read.get(key, ()):
            if (fault := misread(name, read)) is not None:
                return fault[0], [shown], fault[1]
    if name == HANDLER and seen.status_only:
        return (
            "shows no words for a task whose words are only in status.message (it prints a "
            "task's artifacts, else the agent messages of its history, never status.message)",
            [seen.status_only],
            "put the reply in an artifact, and a failure's or a question's message in the task's "
            "history too",
        )
    if name == MAF and seen.status_only:
        return (
            "shows the user's own words for a task whose words are only in status.message (it "
            "reads a task's artifacts, else the last message of its history, never status.message)",
            [seen.status_only],
            "put the reply in an artifact, and a failure's or a question's message in the task's "
            "history too",
        )
    if name == STRANDS and seen.asked:
        return (
            "cannot answer this agent's questions: it never sends a taskId or contextId, so its "
            "answer starts a new task (a skill example asked for input). The client's doing: "
            "nothing on the peer fixes it",
            [],
            "",
        )
    return None


def _fasta2a(card: AgentCard, seen: _Seen, given: str, add: _Add) -> None:
    """fasta2a's client: its card model requires each skill's inputModes and outputModes; it sends
    0.3's message/send at the URL it is given and reads the answer in 1.0's shapes (the hybrid its
    own server answers)."""
    check = f"client: {FASTA2A}"
    bare = [
        str(s.get("id")) for s in card.skills if not (s.get("inputModes") and s.get("outputModes"))
    ]
    if bare:
        add(  # info: fasta2a's own departures from the spec (the peer is right), as below
            Finding(
                "info",
                check,
                f"breaks: its card model refuses this card: skill {bare[0]!r} has no inputModes "
                "or outputModes (optional in the spec; its AgentCard requires them)",
                fix="give every skill its inputModes and outputModes, for fasta2a",
            )
        )
        return
    known = seen.knows.get(given, {}).get("message/send")
    answer = seen.shapes.get((given, Dialect.V03))
    if known is False:
        message = f"it sends message/send at {given}, which the peer answers -32601"
    elif answer is not None and not answer.wrapped:
        message = (
            f'it reads the answer to message/send at {given} as 1.0\'s {{"task": …}}, and this '
            "peer answers 0.3's bare task (only fasta2a's own hybrid server answers so)"
        )
    elif answer is not None and answer.state.startswith("TASK_STATE_"):
        message = (
            f"it reads 0.3's lower-case states in the answer to message/send at {given}, and "
            f"this peer answers {answer.state!r}"
        )
    elif answer is not None:
        add(
            Finding(
                "ok", check, f"works: message/send at {given} is answered in the shapes it reads"
            )
        )
        return
    else:
        add(Finding("info", check, f"cannot tell: it sends message/send at {given}"))
        return
    add(Finding("info", check, f"breaks: {message} (its own dialect: a hybrid of 0.3 and 1.0)"))


def _caveat(name: str) -> str:
    if name == STRANDS:
        return "; one turn at a time: it never sends a contextId, so no conversation"
    if name == HANDLER:
        return (
            "; a failed task it shows without its reason unless the failure's message is in the "
            "history too (it prints the agent messages of the history, never status.message; no "
            "failure was seen here)"
        )
    if name == MAF:
        return (
            "; a failed task it shows as the user's own words unless the failure's message is in "
            "the history too (it reads the last history message, never status.message; no failure "
            "was seen here)"
        )
    return ""


_ZONED = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)$")


@dataclass
class _Answer:
    """The letter of one send's JSON-RPC result, as each client's parser meets it."""

    wrapped: bool = False
    """``{"task": …}`` or ``{"message": …}`` (1.0's SendMessageResponse), not the bare task."""
    kind: bool = False
    """The task or message carries ``kind`` (0.3's discriminator)."""
    parts_without_kind: int = 0
    state: str = ""
    timestamp: str | None = None
    evidence: str = ""
    """The exchange it was read from, as an evidence line."""

    @property
    def zoned(self) -> bool:
        return self.timestamp is None or bool(_ZONED.match(self.timestamp))

    def departures(self, dialect: Dialect, *, proto_timestamps: bool) -> list[str]:
        """What of this answer a strict reader of ``dialect`` refuses; ``proto_timestamps``: the
        reader converts to protobuf, whose Timestamp needs a zone (the a2a-sdk 1.x, on both lines)."""
        out = []
        if dialect is Dialect.V10:
            if not self.wrapped:
                out.append('the result is not wrapped as {"task": …} or {"message": …}')
            if self.state and not self.state.startswith("TASK_STATE_"):
                out.append(f"the state {self.state!r} is not TASK_STATE_*")
        else:
            if self.wrapped:
                out.append('the result is wrapped as {"task": …}, a 1.0 shape')
            if not self.kind:
                out.append("the result has no kind (task or message)")
            if self.parts_without_kind:
                out.append(f"{self.parts_without_kind} part(s) without kind")
            if self.state.startswith("TASK_STATE_"):
                out.append(f"the state {self.state!r} is not 0.3's spelling (completed)")
        if proto_timestamps and not self.zoned:
            out.append(
                f"status.timestamp {self.timestamp!r} has no zone (protobuf's Timestamp needs Z or an offset)"
            )
        return out


def _answer_of(result: Any) -> _Answer:
    if not _json.is_object(result):
        return _Answer()
    wrapped = len(result) == 1 and next(iter(result)) in ("task", "message")
    body = result.get("task") or result.get("message") if wrapped else result
    if not _json.is_object(body):
        return _Answer(wrapped=wrapped)
    status = body.get("status")
    status = status if _json.is_object(status) else {}
    messages = (
        [status.get("message"), *(body.get("history") or ())] if "parts" not in body else [body]
    )
    parts = [
        p
        for m in messages
        if _json.is_object(m)
        for p in (m.get("parts") or ())
        if _json.is_object(p)
    ]
    parts += [
        p
        for a in (body.get("artifacts") or ())
        if _json.is_object(a)
        for p in (a.get("parts") or ())
        if _json.is_object(p)
    ]
    stamp = status.get("timestamp")
    return _Answer(
        wrapped=wrapped,
        kind=body.get("kind") in ("task", "message"),
        parts_without_kind=sum("kind" not in p for p in parts),
        state=str(status.get("state") or ""),
        timestamp=stamp if isinstance(stamp, str) else None,
    )


def _shapes(event: TrafficEvent, dialect: Dialect, add: _Add) -> _Answer | None:
    """The letter of a send's JSON-RPC answer in its dialect: content type, result wrapping, ``kind``,
    the spelling of the task state, a timestamp with its zone; a 0.3 method answered in 1.0's shapes
    is named as the hybrid it is. Returns the answer's letter (None when there is no result)."""
    shown = [evidence(event)]

    def warn(check: str, message: str, breaks: list[str], fix: str) -> None:
        add(Finding("warning", check, message, shown, breaks, fix))

    if not event.response_headers.get("content-type", "").startswith("application/json"):
        warn(
            "content type",
            f"JSON-RPC answered as {event.response_headers.get('content-type')!r}",
            ["strict clients"],
            "answer with Content-Type: application/json",
        )
    data = _json.loads_or_none(event.response_body or "")
    result = data.get("result") if _json.is_object(data) else None
    if not _json.is_object(result):
        return None
    answer = _answer_of(result)
    answer.evidence = shown[0]
    if dialect is Dialect.V10:
        if not answer.wrapped:
            warn(
                "result wrapping",
                'a 1.0 SendMessage result is not {"task": ...} or {"message": ...}',
                ["a2a-sdk 1.x", "JS SDK 1.x"],
                "wrap the task (or message) as SendMessageResponse does",
            )
        if answer.state and not answer.state.startswith("TASK_STATE_"):
            warn(
                "enum casing",
                f"a 1.0 task state is {answer.state!r}, not TASK_STATE_*",
                ["a2a-sdk 1.x", "JS SDK 1.x"],
                "write 1.0 enums as their proto names (TASK_STATE_COMPLETED)",
            )
        return answer
    if answer.wrapped or (answer.parts_without_kind and not answer.kind):
        warn(
            "hybrid",
            "answers the 0.3 method message/send in 1.0's shapes ("
            + ", ".join(answer.departures(Dialect.V03, proto_timestamps=False))
            + "): a hybrid of the two "
            "dialects, which 0.3 clients cannot read",
            ["a2a-sdk 0.3", "a2a-sdk 1.x compat"],
            "answer message/send in 0.3's shapes (a bare task with kind), or SendMessage in 1.0's",
        )
        return answer
    if not answer.kind:
        warn(
            "kind",
            "a 0.3 message/send result has no kind (task or message)",
            ["a2a-sdk 0.3", "JS SDK compat"],
            'add kind: "task" (or "message")',
        )
    if answer.state.startswith("TASK_STATE_"):
        warn(
            "enum casing",
            f"a 0.3 task state is {answer.state!r}, not lower-case (completed)",
            ["a2a-sdk 0.3"],
            "write 0.3 states in lower case with dashes (input-required)",
        )
    return answer


def _fix_for(path: str, message: str, card: AgentCard) -> str:
    """What to change on the card for one diagnostic: the field, and to what."""
    base = (card.source or "").split("/.well-known/")[0] or "https://agent.example"
    skill = re.match(r"\$\.skills\[(\d+)\]", path)
    if skill:
        entries = (
            card.skills
        )  # the skills that are objects, in order (what a diagnostic's index counts)
        raw = card.raw.get("skills")
        at = int(skill.group(1))
        entry = raw[at] if _json.is_array(raw) and at < len(raw) else None
        named = entry.get("id") if _json.is_object(entry) and entry in entries else None
        which = f"skill {at}" + (f" ({named!r})" if isinstance(named, str) else "")
        if path.endswith(".tags"):
            return f'give {which} a list of tags, e.g. "tags": [{json.dumps(named or "general")}]'
        if path.endswith(".id") and "twice" in message:
            return f"give {which} an id of its own (another skill has the same)"
        field_name = path.rsplit(".", 1)[-1]
        return (
            f"give {which} its {field_name} (a non-empty string)"
            if "." in path[len(skill.group(0)) :]
            else f"make {which} an object with id, name, description and tags"
        )
    if path == "$.url":
        if "sends calls to" in message:
            return (
                "list the interfaces on the host that serves the card, or name that host yourself"
            )
        return f'add "url": "{base}/" (the 0.3 JSON-RPC endpoint) if 0.3 clients should reach the agent'
    if path == "$.description":
        return 'say in "description" what the agent does'
    if path == "$.name":
        return 'set "name" to a non-empty string naming the agent'
    if path == "$.version":
        return 'set "version" to the agent\'s own version, e.g. "1.0.0"'
    if path == "$.protocolVersion":
        return 'set "protocolVersion" to "0.3.0" (the 0.3 line reads it), or leave it out of a 1.0-only card'
    if path.startswith("$.supportedInterfaces["):
        if path.endswith(".url"):
            return "give the interface an absolute http(s) URL (a gRPC interface: host:port)"
        if path.endswith(".protocolBinding"):
            return 'name the interface\'s binding: "JSONRPC", "HTTP+JSON" or "GRPC"'
        if path.endswith(".protocolVersion"):
            return 'give the interface a protocolVersion the SDKs know: "1.0" or "0.3"'
    if path in ("$.defaultInputModes", "$.defaultOutputModes"):
        return f'list the modes in {path[2:]}, e.g. ["text/plain"]'
    if path == "$.skills":
        return 'list what the agent can do in "skills" (each with id, name, description, tags)'
    if path == "$.capabilities" or path.startswith("$.capabilities."):
        return 'make "capabilities" an object of true/false flags, e.g. {"streaming": true}'
    return f"set {path} as the message says: {message}"


def _schema_breaks(report: Any) -> list[str]:
    return [
        line
        for line, what in report.verdict.items()
        if any(w in what for w in ("rejects", "cannot", "finds no"))
    ]
