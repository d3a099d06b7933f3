"""Every feature a card declares, probed against what the peer does (the doctor's second half).

Without ``send`` nothing is created on the peer: the card's caching headers and a conditional
request, its signatures, the extensions it requires (a call that does not activate them: refused,
or not enforced), its tenant (a call with it and one without), the extended card (asked without
credentials: it must be refused; with the user's: served), each security scheme's required
fields and whether the requirements name declared schemes, ``ListTasks`` (``nextPageToken``
always there, artifacts left out unless asked). With ``send``, on tasks the doctor makes:
``historyLength`` (0.3 reads 0 as no limit), ``ListTasks``' filters and pages, a subscribe that
answers the task first (1.0's rule), a push round trip into a local receiver (its token header and the payload's shape in the dialect),
a file part of a declared and of an undeclared input mode, and ``acceptedOutputModes``.

Each finding names the official clients it affects. The probes speak JSON-RPC, at the card's 1.0
interface (its 0.3 one where 1.0 has none); a card with neither is said to be unchecked here.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import httpx

from .. import _json
from ..client.peer import check_signatures
from ..client.webhook import WebhookReceiver
from ..events import TrafficEvent
from ..http.fetch import MAX_FRAME, exchange, read_body, sse_events, why
from ..protocol.card import AgentCard, elsewhere
from ..protocol.dialects import Dialect, parse_state
from ..protocol.model import TaskState
from ..protocol.operations import Binding
from ..protocol.push import TOKEN_HEADER
from ..traffic import TrafficRecorder
from .report import Finding

__all__ = ["Probe", "probe_features", "rpc", "evidence", "since", "Answer"]

EXTENSIONS_HEADER = "A2A-Extensions"
V03_EXTENSIONS_HEADER = "X-A2A-Extensions"
PUSH_WAIT = 10.0
"""Seconds the push round trip waits for the task's last notification."""
SDK_1X = "a2a-sdk 1.x"
JS_1X = "JS SDK 1.x"
OURS = "toolnexus"
_SCHEME_FIELDS = {  # the fields each kind of security scheme requires (1.0 names; 0.3's in ())
    "apiKeySecurityScheme": ("name", "location"),
    "httpAuthSecurityScheme": ("scheme",),
    "oauth2SecurityScheme": ("flows",),
    "openIdConnectSecurityScheme": ("openIdConnectUrl",),
    "mtlsSecurityScheme": (),
}
_V03_SCHEMES = {
    "apiKey": ("apiKeySecurityScheme", ("name", "in")),
    "http": ("httpAuthSecurityScheme", ("scheme",)),
    "oauth2": ("oauth2SecurityScheme", ("flows",)),
    "openIdConnect": ("openIdConnectSecurityScheme", ("openIdConnectUrl",)),
    "mutualTLS": ("mtlsSecurityScheme", ()),
}


@dataclass
class Answer:
    """What one raw JSON-RPC call got: the error code, ``"result"``, or None (no JSON-RPC answer),
    the result or error object, the response, and why there was none."""

    got: Any
    data: Any
    response: httpx.Response | None
    why: str = ""


def evidence(event: TrafficEvent) -> str:
    """One exchange as an evidence line (masked: what the wire log holds)."""
    answer = (event.response_body or event.error or "").replace("\n", " ")
    sent = (event.request_body or "").replace("\n", " ")
    return (
        f"{event.method} {event.url} {sent[:200]} -> {event.status or '-'} {answer[:400]}".replace(
            "  ", " "
        )
    )


def since(traffic: TrafficRecorder, before: int) -> list[str]:
    """The exchanges recorded since the ``before``-th, as evidence lines."""
    return [evidence(e) for e in list(traffic.events)[before:]]


async def rpc(
    http: httpx.AsyncClient,
    endpoint: str,
    method: str,
    params: dict[str, Any],
    headers: dict[str, str],
    timeout: float,
    traffic: TrafficRecorder,
) -> Answer:
    """One raw JSON-RPC call, bounded, on the wire log."""
    body = _json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
    started = time.perf_counter()
    try:
        r, content = await exchange(
            http,
            "POST",
            endpoint,
            headers=headers,
            content=body,
            limit=1 << 20,
            timeout=timeout,
        )
    except httpx.HTTPError as exc:
        return Answer(None, None, None, why(exc))
    traffic.sent("POST", endpoint, started, headers, body, (r, content), rpc_method=method)
    data = _json.loads_or_none(content)
    if not _json.is_object(data):
        return Answer(None, None, r, f"HTTP {r.status_code} without a JSON-RPC answer")
    error = data.get("error")
    if _json.is_object(error):
        return Answer(error.get("code"), error, r)
    if "result" in data:
        return Answer("result", data["result"], r)
    return Answer(None, None, r, f"HTTP {r.status_code} without a JSON-RPC answer")


@dataclass
class Finder:
    """What every doctor's checks share: the wire log whose exchanges since a mark show each
    finding, and where findings go."""

    traffic: TrafficRecorder
    add: Callable[[Finding], Any]
    shown: int = field(default=0, kw_only=True)
    """The most exchanges a finding shows, the last ones (0: all since its mark)."""

    def found(
        self,
        severity: str,
        check: str,
        message: str,
        before: int | None = None,
        breaks: list[str] | None = None,
        fix: str = "",
        at: str = "",
    ) -> None:
        """A finding, with the exchanges since the ``before``-th as its evidence (None: none)."""
        shown = since(self.traffic, before)[-self.shown :] if before is not None else []
        self.add(Finding(severity, check, message, shown, list(breaks or []), fix, at))

    def mark(self) -> int:
        """Where the next exchange will be on the wire log (a finding's ``before``)."""
        return len(self.traffic.events)

    def on(self, traffic: TrafficRecorder) -> Finder:
        """The same, its evidence from another wire log."""
        return replace(self, traffic=traffic)


@dataclass
class Probe(Finder):
    """What the feature probes share besides: the card, the HTTP client and the user's headers
    (sent only to the host named)."""

    card: AgentCard
    http: httpx.AsyncClient
    headers: dict[str, str]
    timeout: float
    endpoint: str = ""
    dialect: Dialect = Dialect.V10

    def where(self) -> bool:
        """Pick the JSON-RPC interface the probes speak (1.0, else 0.3); False when none."""
        v1, v0 = self.card.jsonrpc_interface("1"), self.card.jsonrpc_interface("0")
        url = self.card.raw.get("url")
        if v1 is not None and v1.get("url"):
            self.endpoint, self.dialect = str(v1["url"]), Dialect.V10
        elif v0 is not None and v0.get("url"):
            self.endpoint, self.dialect = str(v0["url"]), Dialect.V03
        elif isinstance(url, str) and url:
            self.endpoint, self.dialect = url, Dialect.V03
        else:
            return False
        if self.endpoint.startswith("/") and self.card.source:
            self.endpoint = self.card.source.split("/.well-known/")[0] + self.endpoint
        return True

    @property
    def v10(self) -> bool:
        return self.dialect is Dialect.V10

    def sent_headers(self, *, credentials: bool = True, **extra: str) -> dict[str, str]:
        own = self.headers if credentials and not self._elsewhere() else {}
        out = {"content-type": "application/json", "accept": "application/json", **own}
        if self.v10:
            out["A2A-Version"] = "1.0"
        out.update(extra)
        return out

    def _elsewhere(self) -> bool:
        return elsewhere(self.endpoint, self.card.source or self.endpoint, Binding.JSONRPC)

    async def call(
        self, v10: str, v03: str | None, params: dict[str, Any], **options: Any
    ) -> Answer | None:
        """The operation named ``v10`` (``v03`` in 0.3; None: 0.3 has none) with ``params``."""
        method = v10 if self.v10 else v03
        if method is None:
            return None
        extra = options.pop("extra", {})
        headers = self.sent_headers(**options, **extra)
        return await rpc(
            self.http, self.endpoint, method, params, headers, self.timeout, self.traffic
        )

    def message(self, text: str, *parts: dict[str, Any]) -> dict[str, Any]:
        """A user message in the dialect spoken (``parts``: instead of the text, as 1.0 parts)."""
        if self.v10:
            content = list(parts) or [{"text": text}]
            return {"messageId": str(uuid.uuid4()), "role": "ROLE_USER", "parts": content}
        content = [_part_v03(p) for p in parts] or [{"kind": "text", "text": text}]
        return {"kind": "message", "messageId": str(uuid.uuid4()), "role": "user", "parts": content}

    async def send(self, text: str, *parts: dict[str, Any], **configuration: Any) -> Answer | None:
        """A blocking send (``configuration`` in 1.0's names, turned into 0.3's)."""
        config = dict(configuration)
        if not self.v10 and "returnImmediately" in config:
            config["blocking"] = not config.pop("returnImmediately")
        params: dict[str, Any] = {"message": self.message(text, *parts)}
        if config:
            params["configuration"] = config
        return await self.call("SendMessage", "message/send", params)


def _part_v03(part: dict[str, Any]) -> dict[str, Any]:
    if "text" in part:
        return {"kind": "text", "text": part["text"]}
    file: dict[str, Any] = {"bytes": part.get("raw", "")}
    if part.get("mediaType"):
        file["mimeType"] = part["mediaType"]
    if part.get("filename"):
        file["name"] = part["filename"]
    return {"kind": "file", "file": file}


def task_of(answer: Answer | None) -> dict[str, Any] | None:
    """The task an answer carries (1.0's ``{"task": ...}`` or 0.3's bare task)."""
    if answer is None or answer.got != "result" or not _json.is_object(answer.data):
        return None
    task = answer.data.get("task", answer.data)
    return task if _json.is_object(task) and isinstance(task.get("id"), str) else None


def state_of(task: dict[str, Any] | None) -> TaskState | None:
    status = task.get("status") if task is not None else None
    return parse_state(status.get("state")) if _json.is_object(status) else None


async def probe_features(probe: Probe, send: bool) -> None:
    """Every probe of this module (see its docstring), each finding added as it is made."""
    await _caching(probe)
    await _signatures(probe)
    _schemes(probe)
    if not probe.where():
        probe.found(
            "info",
            "features",
            "the card offers no JSON-RPC interface: its features are not probed over other bindings",
        )
        return
    await _enforced(probe)
    await _extensions(probe)
    await _tenant(probe)
    await _extended_card(probe)
    await _list_tasks(probe)
    if not send:
        probe.found(
            "info",
            "features",
            "historyLength, ListTasks' filters, subscribe, push, file parts and output modes are "
            "probed only with --send (they make tasks on the peer)",
        )
        return
    task = task_of(await probe.send("hello from toolnexus doctor (features)"))
    if task is None:
        probe.found("info", "features", "no task came back to probe the rest with")
        return
    await _history(probe, task)
    await _list_filters(probe, task)
    await _subscribe(probe)
    await _push(probe)
    await _files(probe)
    await _output_modes(probe)


# -- without tasks -------------------------------------------------------------------------------------
async def _caching(probe: Probe) -> None:
    """The card's HTTP caching: Cache-Control max-age, a validator, and a 304 for it."""
    source = probe.card.source
    if not source:
        return
    before = probe.mark()
    try:
        r, _ = await exchange(
            probe.http, "GET", source, headers={}, limit=1 << 21, timeout=probe.timeout
        )
    except httpx.HTTPError:
        return
    control, etag, modified = (
        r.headers.get(k, "") for k in ("cache-control", "etag", "last-modified")
    )
    if not etag and not modified:
        probe.found(
            "info",
            "card cache",
            "the card has neither ETag nor Last-Modified: every fetch costs the whole card "
            "(toolnexus asks conditionally; the SDK clients fetch it once a client)",
            fix="serve an ETag (and answer If-None-Match with 304)",
        )
        return
    asked = {"If-None-Match": etag} if etag else {"If-Modified-Since": modified}
    started = time.perf_counter()
    try:
        again, content = await exchange(
            probe.http, "GET", source, headers=asked, limit=1 << 21, timeout=probe.timeout
        )
    except httpx.HTTPError:
        return
    probe.traffic.sent("GET", source, started, asked, b"", (again, content))
    age = "max-age" in control
    if again.status_code == 304:
        probe.found(
            "ok" if age else "info",
            "card cache",
            f"a conditional request is answered 304 ({'Cache-Control: ' + control if control else 'no Cache-Control'})",
            fix="" if age else "say how long the card may be kept: Cache-Control: max-age=...",
        )
    else:
        probe.found(
            "warning",
            "card cache",
            f"the card has {'an ETag' if etag else 'a Last-Modified'}, but a request with "
            f"{next(iter(asked))} was answered {again.status_code}, not 304",
            before,
            [OURS],
            "answer a conditional request for an unchanged card with 304 and no body",
        )


async def _signatures(probe: Probe) -> None:
    """Whether the card is signed and whether its signatures verify (the client's verifier: the
    key set each ``jku`` names, fetched bounded under the address rule); each signature its
    finding, where it is."""
    signatures = probe.card.raw.get("signatures")
    if not signatures:
        probe.found(
            "info",
            "signature",
            "the card is unsigned: a client that verifies cards (the a2a-sdk 1.x with a "
            "signature_verifier) refuses it",
            fix="sign the card (JWS over its canonical JSON, A2A 1.0 §8.4) if callers verify",
        )
        return
    if not _json.is_array(signatures):
        probe.found(
            "error",
            "signature",
            "signatures is not a list",
            breaks=[SDK_1X, JS_1X],
            fix="write signatures as a list of {protected, signature}",
            at="$.signatures",
        )
        return
    verdict = await check_signatures(
        probe.card, http=probe.http, timeout=probe.timeout, traffic=probe.traffic
    )
    for check in verdict.checks:
        at = f"$.signatures[{check.index}]"
        if check.ok:
            probe.found("ok", "signature", f"{check.named} {check.why}", at=at)
        elif check.cause == "header":
            probe.found(
                "error",
                "signature",
                check.why,
                breaks=[SDK_1X],
                fix="each signature as JWS: protected (the base64url of the header's JSON, no "
                "crit) and signature, base64url",
                at=at,
            )
        elif verdict.valid:  # the SDKs accept a card on one good signature
            probe.found(
                "info", "signature", f"{check.named}: {check.why} (another one verifies)", at=at
            )
        elif check.cause == "no key":
            probe.found(
                "warning",
                "signature",
                f"{check.named} cannot be verified here: {check.why}",
                fix="name the key set in the protected header's jku, served as a JWK set",
                at=at,
            )
        else:
            probe.found(
                "error",
                "signature",
                f"{check.named} does not verify: {check.why}",
                breaks=[SDK_1X, JS_1X],
                fix="sign the card as served (RFC 8785 over its 1.0 view, A2A 1.0 §8.4.1) with "
                "the key its kid names in the key set its jku serves",
                at=at,
            )


def _schemes(probe: Probe) -> None:
    """Each declared security scheme has the fields its kind needs; each requirement names a
    declared scheme."""
    raw = probe.card.raw
    schemes = raw.get("securitySchemes")
    if not _json.is_object(schemes):
        return
    for name, scheme in schemes.items():
        at = f"$.securitySchemes.{name}"
        kind, fields, where = _scheme_kind(scheme)
        if kind is None:
            probe.found(
                "error",
                "security schemes",
                f"scheme {name!r} is of no kind a client knows",
                breaks=[SDK_1X, JS_1X],
                fix="make it one of apiKey, http, oauth2, openIdConnect, mutualTLS (1.0: "
                "apiKeySecurityScheme, httpAuthSecurityScheme, ...)",
                at=at,
            )
            continue
        missing = [f for f in fields if not where.get(f)]
        if missing:
            probe.found(
                "error",
                "security schemes",
                f"scheme {name!r} ({kind}) lacks {', '.join(missing)}",
                breaks=[SDK_1X, JS_1X, OURS],
                fix=f"give the {kind} scheme its {', '.join(missing)}",
                at=at,
            )
        else:
            probe.found("ok", "security schemes", f"scheme {name!r}: {kind}, complete", at=at)
    named = {n for n in _required_schemes(raw)}
    unknown = sorted(named - set(schemes))
    if unknown:
        probe.found(
            "error",
            "security schemes",
            f"the security requirements name {', '.join(map(repr, unknown))}, which the card "
            "does not declare",
            breaks=[SDK_1X, JS_1X, OURS],
            fix="declare every scheme a requirement names in securitySchemes",
            at="$.securityRequirements",
        )


def _scheme_kind(scheme: Any) -> tuple[str | None, tuple[str, ...], dict[str, Any]]:
    if not _json.is_object(scheme):
        return None, (), {}
    for kind, fields in _SCHEME_FIELDS.items():  # 1.0: one member names the kind
        inner = scheme.get(kind)
        if _json.is_object(inner):
            return kind.removesuffix("SecurityScheme"), fields, inner
    v03 = _V03_SCHEMES.get(str(scheme.get("type")))
    if v03 is not None:
        return str(scheme.get("type")), v03[1], scheme
    return None, (), {}


def _required_schemes(raw: dict[str, Any]) -> list[str]:
    out: list[str] = []
    for key in ("securityRequirements", "security"):
        items = raw.get(key)
        for item in items if _json.is_array(items) else []:
            if _json.is_object(item):
                schemes = item.get("schemes", item)
                out += list(schemes) if _json.is_object(schemes) else []
    return out


async def _enforced(probe: Probe) -> None:
    """With the user's credentials given, whether a call without them is refused, as the card's
    security requirements say it must be (without any, ``toolnexus.debug.doctor`` says so)."""
    if not probe.headers or not _required_schemes(probe.card.raw):
        return
    before = probe.mark()
    bare = await probe.call(
        "GetTask", "tasks/get", {"id": f"toolnexus-doctor-{uuid.uuid4()}"}, credentials=False
    )
    if bare is None or bare.response is None:
        return
    if bare.response.status_code in (401, 403):
        probe.found(
            "ok",
            "auth",
            f"refuses a call without credentials ({bare.response.status_code}), as its security "
            "requirements say",
        )
    else:
        probe.found(
            "warning",
            "auth",
            "the card requires credentials, but a call without them was answered "
            f"({bare.got or bare.response.status_code})",
            before,
            ["clients that trust the card's security"],
            "enforce the declared schemes, or drop them from the card",
        )


async def _extensions(probe: Probe) -> None:
    """A required extension: a call that does not activate it must be refused (-32008 in 1.0,
    the spec's MUST); the official SDK server does not, and the doctor says so."""
    capabilities = probe.card.raw.get("capabilities")
    declared = capabilities.get("extensions") if _json.is_object(capabilities) else None
    required = [
        str(e.get("uri"))
        for e in (declared if _json.is_array(declared) else [])
        if _json.is_object(e) and e.get("required") and e.get("uri")
    ]
    if not required:
        return
    header = EXTENSIONS_HEADER if probe.v10 else V03_EXTENSIONS_HEADER
    before = probe.mark()
    bare = await probe.call("GetTask", "tasks/get", {"id": f"toolnexus-doctor-{uuid.uuid4()}"})
    if bare is None or bare.got is None:
        return
    if bare.got == -32008 or (bare.response is not None and bare.response.status_code == 400):
        probe.found(
            "ok",
            "extensions",
            f"requires {', '.join(required)}, and refuses a call that does not activate it",
            fix="",
        )
    else:
        probe.found(
            "warning",
            "extensions",
            f"declares {', '.join(required)} required, but answered a call without {header} "
            f"({bare.got}): the requirement is not enforced (the official SDK server never "
            "enforces it)",
            before,
            ["clients that do not speak the extension get answers that assume it"],
            f"refuse a call that does not list {', '.join(required)} in {header} with -32008 "
            "(ExtensionSupportRequiredError)",
        )
    activated = await probe.call(
        "GetTask",
        "tasks/get",
        {"id": f"toolnexus-doctor-{uuid.uuid4()}"},
        extra={header: ", ".join(required)},
    )
    echoed = (
        activated.response.headers.get(header, "")
        if activated is not None and activated.response is not None
        else ""
    )
    probe.found(
        "ok" if echoed else "info",
        "extensions",
        f"a call activating them is answered with {header}: {echoed}"
        if echoed
        else f"a call activating them is answered without {header} (which extensions it applied "
        "is not said)",
        fix="" if echoed else f"answer {header} with the extensions the call activated",
    )


async def _tenant(probe: Probe) -> None:
    """An interface with a tenant: a call with it is answered; one without it too, or refused."""
    interface = probe.card.jsonrpc_interface("1") if probe.v10 else None
    tenant = interface.get("tenant") if interface is not None else None
    if not isinstance(tenant, str) or not tenant:
        return
    unknown = f"toolnexus-doctor-{uuid.uuid4()}"
    before = probe.mark()
    given = await probe.call("GetTask", None, {"id": unknown, "tenant": tenant})
    without = await probe.call("GetTask", None, {"id": unknown})
    if given is None or without is None:
        return
    if given.got != -32001:
        probe.found(
            "error",
            "tenant",
            f"a call with the card's tenant {tenant!r} got {given.got or given.why}, not "
            "TaskNotFound for an unknown task",
            before,
            [SDK_1X, JS_1X],
            f"answer calls that carry tenant {tenant!r} (the SDK clients send it in every call)",
        )
    else:
        probe.found(
            "ok",
            "tenant",
            f"answers calls with the card's tenant {tenant!r} (the a2a-sdk 1.x client sends it "
            "in every call); "
            + (
                "a call without it is answered too (the tenant is not required)"
                if without.got == -32001
                else f"a call without it is refused ({without.got})"
            ),
        )


async def _extended_card(probe: Probe) -> None:
    """Declared (1.0 ``capabilities.extendedAgentCard``, 0.3 ``supportsAuthenticatedExtendedCard``)
    against served: without credentials it must be refused, with the user's served."""
    raw = probe.card.raw
    capabilities = raw.get("capabilities")
    declared = bool(
        (_json.is_object(capabilities) and capabilities.get("extendedAgentCard"))
        or raw.get("supportsAuthenticatedExtendedCard")
    )
    v03 = "agent/getAuthenticatedExtendedCard"
    before = probe.mark()
    anonymous = await probe.call("GetExtendedAgentCard", v03, {}, credentials=False)
    if anonymous is None:
        return
    served = anonymous.got == "result" and _json.is_object(anonymous.data)
    refused = anonymous.response is not None and anonymous.response.status_code in (401, 403)
    if not declared:
        if served:
            probe.found(
                "info",
                "extended card",
                "not declared, but served to a caller without credentials",
                before,
                fix="declare it (capabilities.extendedAgentCard) or stop serving it",
            )
        return
    if served:
        extra = _more_skills(probe.card, anonymous.data)
        probe.found(
            "warning",
            "extended card",
            "declared, and served to a caller without credentials"
            + (f" ({extra})" if extra else "")
            + ": it is meant for authenticated callers",
            before,
            ["what the extended card adds is public"],
            "serve the extended card only to authenticated callers (401 without credentials)",
        )
        return
    if not refused and anonymous.got in (-32007, -32004, -32601):
        probe.found(
            "error",
            "extended card",
            f"declared, but not served ({anonymous.got})",
            before,
            [SDK_1X, JS_1X],
            "serve GetExtendedAgentCard, or drop the capability",
        )
        return
    if not probe.headers:
        probe.found(
            "ok" if refused else "info",
            "extended card",
            "declared, and refused without credentials"
            + ("" if refused else f" ({anonymous.got or anonymous.why})")
            + " (give --header to check it is served with them)",
        )
        return
    with_them = await probe.call("GetExtendedAgentCard", v03, {})
    if with_them is not None and with_them.got == "result" and _json.is_object(with_them.data):
        extra = _more_skills(probe.card, with_them.data)
        probe.found(
            "ok",
            "extended card",
            "refused without credentials, served with yours" + (f" ({extra})" if extra else ""),
        )
    else:
        probe.found(
            "warning",
            "extended card",
            "declared, refused without credentials, and refused with yours too",
            before,
            [SDK_1X, JS_1X],
            "serve the extended card to an authenticated caller",
        )


def _more_skills(card: AgentCard, extended: Any) -> str:
    skills = extended.get("skills") if _json.is_object(extended) else None
    ids = {s.get("id") for s in skills if _json.is_object(s)} if _json.is_array(skills) else set()
    public = {s.get("id") for s in card.skills}
    more = sorted(str(i) for i in ids - public)
    return f"{len(more)} more skill(s): {', '.join(more)}" if more else ""


async def _list_tasks(probe: Probe) -> None:
    """``ListTasks`` (1.0): ``nextPageToken`` in every answer, artifacts left out unless asked."""
    if not probe.v10:
        return
    before = probe.mark()
    page = await probe.call("ListTasks", None, {"pageSize": 1})
    if page is None or page.got is None:
        return
    if page.got == -32601:
        probe.found(
            "warning",
            "ListTasks",
            "a 1.0 interface that does not know ListTasks",
            before,
            ["clients that list tasks (a2a-sdk 1.x list_tasks, toolnexus list_tasks)"],
            "serve ListTasks (A2A 1.0 §3.1.4)",
        )
        return
    if page.got != "result" or not _json.is_object(page.data):
        probe.found(
            "warning",
            "ListTasks",
            f"ListTasks {{pageSize: 1}} got {page.got}",
            before,
            [SDK_1X, OURS],
            "answer ListTasks with {tasks, nextPageToken, pageSize, totalSize}",
        )
        return
    missing = [k for k in ("tasks", "nextPageToken") if k not in page.data]
    if missing:
        probe.found(
            "warning",
            "ListTasks",
            f"its answer lacks {', '.join(missing)} (nextPageToken is there on every page, "
            "empty on the last)",
            before,
            [SDK_1X],
            "always answer tasks and nextPageToken",
        )
    else:
        probe.found("ok", "ListTasks", "answers with tasks and nextPageToken")
    tasks = page.data.get("tasks")
    if _json.is_array(tasks) and any(_json.is_object(t) and "artifacts" in t for t in tasks):
        probe.found(
            "warning",
            "ListTasks",
            "tasks are listed with their artifacts though includeArtifacts was not asked",
            before,
            ["clients listing many tasks (every answer carries every reply)"],
            "leave artifacts out unless includeArtifacts is true",
        )


# -- on tasks (--send) ---------------------------------------------------------------------------------
async def _history(probe: Probe, task: dict[str, Any]) -> None:
    before = probe.mark()
    counts: dict[int, int | None] = {}
    for length in (0, 1):
        got = task_of(
            await probe.call("GetTask", "tasks/get", {"id": task["id"], "historyLength": length})
        )
        history = got.get("history") if got is not None else None
        counts[length] = len(history) if _json.is_array(history) else (0 if got else None)
    if not probe.v10:  # 0.3 reads 0 as no limit (the a2a-sdk 0.3 server answers it all)
        if counts[1] is not None and counts[1] <= 1:
            probe.found(
                "ok", "historyLength", "1 answers at most one message (0.3 reads 0 as no limit)"
            )
        else:
            probe.found(
                "warning",
                "historyLength",
                f"historyLength 1 answered {counts[1]} message(s)",
                before,
                ["clients that ask for a short history (a2a-sdk 0.3 get_task, toolnexus get)"],
                "answer at most historyLength messages of the history",
            )
    elif counts[0] == 0 and counts[1] is not None and counts[1] <= 1:
        probe.found("ok", "historyLength", "0 answers no history, 1 at most one message")
    else:
        probe.found(
            "warning",
            "historyLength",
            f"historyLength 0 answered {counts[0]} message(s), 1 answered {counts[1]}",
            before,
            ["clients that ask for a short history (a2a-sdk 1.x get_task, toolnexus get)"],
            "answer at most historyLength messages of the history (0: none)",
        )


async def _list_filters(probe: Probe, task: dict[str, Any]) -> None:
    """``ListTasks``' contextId and status filters, and a page of one with the token to the next."""
    if not probe.v10:
        return
    before = probe.mark()
    second = task_of(await probe.send("hello again from toolnexus doctor (features)"))
    context = task.get("contextId")
    by_context = await probe.call("ListTasks", None, {"contextId": context})
    listed = (
        by_context.data.get("tasks") if by_context and _json.is_object(by_context.data) else None
    )
    contexts = (
        {t.get("contextId") for t in listed if _json.is_object(t)}
        if _json.is_array(listed)
        else None
    )
    state = state_of(task)
    wanted = "TASK_STATE_" + state.value.upper().replace("-", "_") if state else ""
    by_state = await probe.call("ListTasks", None, {"status": wanted, "pageSize": 100})
    stated = by_state.data.get("tasks") if by_state and _json.is_object(by_state.data) else None
    states = {state_of(t) for t in stated if _json.is_object(t)} if _json.is_array(stated) else None
    first = await probe.call("ListTasks", None, {"pageSize": 1})
    token = first.data.get("nextPageToken") if first and _json.is_object(first.data) else None
    paged = None
    if isinstance(token, str) and token:
        paged = await probe.call("ListTasks", None, {"pageSize": 1, "pageToken": token})
    faults = []
    if contexts != {context}:
        faults.append(f"contextId filter answered contexts {sorted(map(str, contexts or []))}")
    if states is None or (states and states != {state}):
        faults.append(f"status {wanted} answered {sorted(str(s) for s in states or [])}")
    if second is not None and not token:
        faults.append("a page of one of two or more tasks has no nextPageToken")
    if paged is not None and paged.got != "result":
        faults.append(f"the next page's token was refused ({paged.got})")
    if faults:
        probe.found(
            "warning",
            "ListTasks",
            "; ".join(faults),
            before,
            [SDK_1X, OURS],
            "filter by contextId and status, and page with nextPageToken (A2A 1.0 §3.1.4)",
        )
    else:
        probe.found(
            "ok", "ListTasks", "filters by contextId and status, and pages by nextPageToken"
        )


async def _subscribe(probe: Probe) -> None:
    """A subscribe to a running task answers the task first (A2A 1.0 §3.1.6; 0.3 has no such
    rule: its resubscribe sends the events to come, so it is not asked of a 0.3 peer)."""
    if not probe.card.streaming:
        return
    if not probe.v10:
        probe.found(
            "info",
            "subscribe",
            "not checked: answering the task first is 1.0's rule, and this peer is probed in 0.3 "
            "(whose resubscribe sends the task's events to come)",
        )
        return
    started = task_of(
        await probe.send("hello from toolnexus doctor (subscribe)", returnImmediately=True)
    )
    if started is None:
        return
    method = "SubscribeToTask" if probe.v10 else "tasks/resubscribe"
    body = _json.dumps(
        {"jsonrpc": "2.0", "id": 1, "method": method, "params": {"id": started["id"]}}
    )
    headers = probe.sent_headers(accept="text/event-stream")
    first: Any = None
    before = probe.mark()
    began = time.perf_counter()
    status, content_type, frames = None, "", []
    try:
        async with asyncio.timeout(probe.timeout):
            async with probe.http.stream(
                "POST", probe.endpoint, content=body, headers=headers
            ) as r:
                status, content_type = r.status_code, r.headers.get("content-type", "")
                if content_type.startswith("text/event-stream"):
                    async for frame in sse_events(r, probe.timeout, MAX_FRAME):
                        frames.append(frame)
                        first = _json.loads_or_none(frame)
                        break
                else:
                    first = _json.loads_or_none(await read_body(r, 1 << 20))
    except (httpx.HTTPError, TimeoutError) as exc:
        probe.found(
            "info",
            "subscribe",
            f"cannot tell: {why(exc) if isinstance(exc, httpx.HTTPError) else 'no event in time'}",
        )
        return
    probe.traffic.record(
        direction="out",
        method="POST",
        url=probe.endpoint,
        status=status,
        started=began,
        request_headers=headers,
        request_body=body,
        response_headers={"content-type": content_type},
        response_body="\n".join(frames),
        rpc_method=method,
        frames=frames,
    )
    result = first.get("result") if _json.is_object(first) else None
    if _json.is_object(first) and _json.is_object(first.get("error")):
        probe.found(
            "info",
            "subscribe",
            "cannot tell: the task had finished before the subscribe (it is refused then)",
        )
    elif _json.is_object(result) and ("task" in result or result.get("kind") == "task"):
        probe.found("ok", "subscribe", "a subscribe answers the task first")
    else:
        probe.found(
            "warning",
            "subscribe",
            "a subscribe to a running task did not answer the task first",
            before,
            ["clients that resubscribe and need the task's state (a2a-sdk 1.x subscribe)"],
            "send the Task as the first event of SubscribeToTask (A2A 1.0 §3.1.6)",
        )
    await probe.call("CancelTask", "tasks/cancel", {"id": started["id"]})


async def _push(probe: Probe) -> None:
    """A push round trip into a local receiver: a config with a token, a task, its notifications;
    the token header and the payload's shape in the dialect spoken."""
    if not probe.card.push_notifications:
        return
    if not _loopback(probe.endpoint):
        probe.found(
            "info",
            "push",
            "not checked: the doctor's webhook listens on this machine, which the peer cannot reach",
        )
        return
    before = probe.mark()
    async with WebhookReceiver() as hook:
        target = hook.target()
        config: dict[str, Any] = {"url": target.url, "token": target.token}
        key = "taskPushNotificationConfig" if probe.v10 else "pushNotificationConfig"
        answer = await probe.send(
            "hello from toolnexus doctor (push)", returnImmediately=True, **{key: config}
        )
        task = task_of(answer)
        if task is None:
            probe.found(
                "warning",
                "push",
                f"a send with a push config got {answer.got if answer else None}",
                before,
                ["clients that ask for push (a2a-sdk 1.x push_notification_config, toolnexus)"],
                "accept a push config in the send (A2A 1.0 §3.2.2)",
            )
            return
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(PUSH_WAIT):
                while not any(
                    n.state is not None and (n.state.terminal or n.state.interrupted)
                    for n in hook.received(task["id"])
                ):
                    await asyncio.sleep(0.05)
        received = hook.received(task["id"])
        events = list(hook.traffic.events)
    if not received:
        probe.found(
            "warning",
            "push",
            f"the card says pushNotifications, but nothing came within {PUSH_WAIT:g} s",
            before,
            ["clients that wait for push instead of polling"],
            "POST each change of the task to the config's url",
        )
        return
    tokened = all(TOKEN_HEADER.lower() in {k.lower() for k in e.request_headers} for e in events)
    shapes = [_push_shape(n.body) for n in received]
    wrong = [s for s in shapes if s and s != probe.dialect.value]
    faults = []
    if not tokened:
        faults.append(f"a notification came without {TOKEN_HEADER}")
    if wrong:
        faults.append(f"payloads in {wrong[0]}'s shape to a {probe.dialect.value} config")
    last = received[-1].state
    ended = last is not None and (last.terminal or last.interrupted)
    if not ended:
        faults.append("no notification of the task's end")
    if faults:
        probe.found(
            "warning",
            "push",
            "; ".join(faults),
            before,
            ["clients that take push (a2a-sdk 1.x, toolnexus WebhookReceiver)"],
            f"send {TOKEN_HEADER}, every change up to the end, in the dialect of the config",
        )
    else:
        probe.found(
            "ok",
            "push",
            f"{len(received)} notification(s) with {TOKEN_HEADER}, in {probe.dialect.value}'s "
            f"shape, up to {last.value if last else '?'}",
        )


def _push_shape(body: Any) -> str:
    if not _json.is_object(body):
        return ""
    if body.get("kind") == "task":
        return "0.3"
    if any(k in body for k in ("task", "statusUpdate", "artifactUpdate", "message")):
        return "1.0"
    return ""


def _loopback(url: str) -> bool:
    host = httpx.URL(url).host
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")


async def _files(probe: Probe) -> None:
    """A file part of a declared input mode is taken; one of an undeclared mode is refused (-32005)."""
    modes = [str(m) for m in probe.card.raw.get("defaultInputModes") or [] if isinstance(m, str)]
    declared = next((m for m in modes if "/" in m and not m.startswith("text/")), None)
    before = probe.mark()
    if declared is not None:
        part = {"raw": base64.b64encode(b"toolnexus doctor").decode(), "mediaType": declared}
        part["filename"] = "doctor.bin"
        taken = await probe.send("", part)
        if task_of(taken) is None:
            probe.found(
                "warning",
                "file parts",
                f"a file part of {declared} (an input mode the card declares) got "
                f"{taken.got if taken else None}",
                before,
                ["clients that send files (a2a-sdk 1.x, JS SDK 1.x, toolnexus send --file)"],
                "take file parts of the declared input modes",
            )
        else:
            probe.found("ok", "file parts", f"a file part of {declared} is taken")
    if "*/*" in modes or not modes:
        return
    odd = {
        "raw": base64.b64encode(b"toolnexus doctor").decode(),
        "mediaType": "application/x-toolnexus-doctor",
    }
    refused = await probe.send("", odd)
    if refused is not None and refused.got == -32005:
        probe.found("ok", "file parts", "a part of an undeclared media type is refused (-32005)")
    elif task_of(refused) is not None:
        probe.found(
            "info",
            "file parts",
            "a part of a media type the card does not declare is taken all the same (the "
            "official SDK server checks only when told to: validate_input_modes)",
            before,
            fix="refuse parts outside the declared input modes with -32005 (ContentTypeNotSupported)",
        )


async def _output_modes(probe: Probe) -> None:
    """``acceptedOutputModes``: a send accepting only a mode the agent does not produce."""
    before = probe.mark()
    answer = await probe.send(
        "hello from toolnexus doctor (output modes)",
        acceptedOutputModes=["application/x-toolnexus-none"],
    )
    if answer is not None and answer.got == -32005:
        probe.found(
            "ok", "output modes", "a send accepting no mode it produces is refused (-32005)"
        )
        return
    task = task_of(answer)
    if task is None:
        return
    probe.found(
        "info",
        "output modes",
        "a send that accepts only application/x-toolnexus-none was answered anyway: "
        "acceptedOutputModes is not honoured (neither the official SDK server nor toolnexus does)",
        before,
        fix="answer in an accepted mode, or refuse with -32005 (A2A 1.0 §3.2.2)",
    )
