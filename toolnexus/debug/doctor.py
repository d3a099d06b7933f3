"""``toolnexus doctor URL``: probe a peer and say, in plain words, whether and why each kind of
client can work with it, with the evidence (the exchanges, masked, as the Wire shows them) and
the fix on the peer's side.

The checks are harmless by default: the card at both well-known paths, its schema (both lines),
every declared interface asked for an unknown task in its own dialect and binding (the answer
must be that binding's TaskNotFound), JSON-RPC's own error codes (unknown method, invalid
params, an unsupported ``A2A-Version``), auth declared against auth enforced. ``send=True`` adds
the active ones (tasks are created on the peer): a message sent and the letter of its answer
(content type, wrapping, ``kind``, enum casing), a cancel, and, when the card says so, a stream
that must really be SSE.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

from .. import _json
from ..client.peer import A2AClient, fetch_card
from ..display import printable
from ..errors import (
    MethodNotFoundError,
    MissingExtra,
    PeerError,
    RPCError,
    TaskNotCancelableError,
    TaskNotFoundError,
)
from ..events import TrafficEvent
from ..http.fetch import exchange, why
from ..protocol.card import (
    CARD_PATH,
    LEGACY_CARD_PATH,
    AgentCard,
    origin_text,
    validate_card,
)
from ..protocol.dialects import Dialect
from ..protocol.model import TaskState
from ..protocol.operations import Binding
from ..traffic import TrafficRecorder

__all__ = ["doctor", "DoctorReport", "Finding"]

SEVERITIES = ("ok", "info", "warning", "error")
MAX_FRAMES = 200
"""The most stream frames the doctor reads of one answer."""
MAX_INTERFACES = 16
"""The most interfaces of one card the doctor probes (a card may list any number)."""
_MARK = {"ok": "✔", "info": "·", "warning": "!", "error": "✘"}
_LINES = {  # who picks an interface of this binding and version
    ("JSONRPC", "1"): ["a2a-sdk 1.x", "JS SDK 1.x", "toolnexus"],
    ("JSONRPC", "0"): ["a2a-sdk 0.3", "a2a-sdk 1.x compat", "JS SDK compat", "toolnexus"],
    ("HTTP+JSON", "1"): ["REST clients (a2a-sdk 1.x, JS SDK, toolnexus)"],
    ("HTTP+JSON", "0"): ["0.3 REST clients"],
    ("GRPC", "1"): ["gRPC clients (a2a-sdk 1.x, toolnexus)"],
}
EVERY_CLIENT = ["a2a-sdk 1.x", "a2a-sdk 0.3", "JS SDK", "toolnexus"]


@dataclass
class Finding:
    """One thing the doctor found: how bad, what, the exchanges that show it, who it breaks, the fix."""

    severity: str
    check: str
    message: str
    evidence: list[str] = field(default_factory=list)
    breaks: list[str] = field(default_factory=list)
    fix: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"severity": self.severity, "check": self.check, "message": self.message, "evidence": self.evidence,
                "breaks": self.breaks, "fix": self.fix}


@dataclass
class DoctorReport:
    url: str
    findings: list[Finding] = field(default_factory=list)

    def count(self, severity: str) -> int:
        return sum(f.severity == severity for f in self.findings)

    def worst(self) -> str:
        return max((f.severity for f in self.findings), key=SEVERITIES.index, default="ok")

    def failed(self, threshold: str = "error") -> bool:
        """Whether a finding is at least as bad as ``threshold`` (``warning`` or ``error``)."""
        return SEVERITIES.index(self.worst()) >= SEVERITIES.index(threshold)

    @property
    def summary(self) -> str:
        errors, warnings = self.count("error"), self.count("warning")
        if not errors and not warnings:
            return "healthy: every check passed"
        return f"{errors} error{'s' * (errors != 1)}, {warnings} warning{'s' * (warnings != 1)}"

    def to_dict(self) -> dict[str, Any]:
        return {"url": self.url, "summary": self.summary, "worst": self.worst(),
                "findings": [f.to_dict() for f in self.findings]}

    def text(self) -> str:
        """The report as plain lines (a peer's words are kept as data: no markup, no control characters)."""
        out = [f"doctor: {self.url}"]
        for f in self.findings:
            out.append(f"  {_MARK[f.severity]} {f.check}: {printable(f.message, 400)}")
            out += [f"      evidence: {printable(e, 700)}" for e in f.evidence]
            if f.breaks:
                out.append(f"      breaks: {', '.join(f.breaks)}")
            if f.fix:
                out.append(f"      fix: {f.fix}")
        out.append(f"verdict: {self.summary}")
        return "\n".join(out)

    def html(self) -> str:
        """The report as HTML, every peer-supplied string escaped (and its control characters shown)."""
        def e(value: str) -> str:
            return html.escape(printable(value))
        rows = "".join(
            f"<tr><td>{_MARK[f.severity]} {e(f.severity)}</td><td>{e(f.check)}</td><td style='text-align:left'>"
            f"{e(f.message)}" + "".join(f"<br><code>{e(x[:700])}</code>" for x in f.evidence)
            + (f"<br><i>breaks:</i> {e(', '.join(f.breaks))}" if f.breaks else "")
            + (f"<br><i>fix:</i> {e(f.fix)}" if f.fix else "") + "</td></tr>" for f in self.findings)
        return (f"<h4 style='margin:0'>doctor: <code>{e(self.url)}</code></h4><p><b>{e(self.summary)}</b></p>"
                f"<table><tr><th>severity</th><th>check</th><th>finding</th></tr>{rows}</table>")


def _evidence(event: TrafficEvent) -> str:
    answer = (event.response_body or event.error or "").replace("\n", " ")
    sent = (event.request_body or "").replace("\n", " ")
    return f"{event.method} {event.url} {sent[:200]} -> {event.status or '-'} {answer[:400]}".replace("  ", " ")


async def doctor(url: str, *, headers: dict[str, str] | None = None, timeout: float = 10.0,
                 send: bool = False) -> DoctorReport:
    """Probe the peer at ``url`` (a base URL or a card URL); see the module docstring."""
    report = DoctorReport(url)
    add = report.findings.append
    traffic = TrafficRecorder(None, peer=url)
    for name, value in (headers or {}).items():
        traffic.secret(name, value)
    async with httpx.AsyncClient(timeout=timeout) as http:
        card = await _card(url, http, traffic, headers or {}, timeout, add)
        if card is None:
            return report
        checked = validate_card(card)
        for d in checked.diagnostics:
            if d.level in ("error", "warning"):
                add(Finding(d.level, "card schema", f"{d.path}: {d.message}", breaks=_schema_breaks(checked),
                            fix="correct the card field named"))
        add(Finding("info", "card verdict", checked.summary))
        declares_auth = any(card.raw.get(k) for k in ("securitySchemes", "security", "securityRequirements"))
        answered_open = False
        interfaces = _interfaces(card)
        for binding, version, endpoint in interfaces[:MAX_INTERFACES]:
            answered_open |= await _probe(card, binding, version, endpoint, http, headers, timeout, traffic, add,
                                          declares_auth)
        if len(interfaces) > MAX_INTERFACES:
            add(Finding("warning", "card", f"the card lists {len(interfaces)} interfaces; the first {MAX_INTERFACES} "
                        "were checked", fix="list each interface the agent serves once"))
        if declares_auth and answered_open and not headers:
            add(Finding("warning", "auth", "the card declares authentication, but the peer answered calls without "
                        "any credentials", breaks=["clients that trust the card's security"],
                        fix="enforce the declared scheme, or drop it from the card"))
        if send:
            await _active(card, http, headers, timeout, traffic, add)
    return report


async def _card(url: str, http: httpx.AsyncClient, traffic: TrafficRecorder, headers: dict[str, str],
                timeout: float, add: Any) -> AgentCard | None:
    base = url.split("/.well-known/")[0].rstrip("/")
    found: dict[str, AgentCard] = {}
    for path in (CARD_PATH, LEGACY_CARD_PATH):
        before = len(traffic.events)
        try:
            found[path] = await fetch_card(base + path, headers, timeout, http=http, traffic=traffic,
                                            cached=False)  # the doctor judges the whole answer
        except PeerError as exc:
            if exc.status == 404:
                continue
            last = list(traffic.events)[-1]
            if last.status is None:
                add(Finding("error", "card", f"nothing answered at {base + path}: {last.error}", breaks=EVERY_CLIENT,
                            fix="check the URL, and that the agent is running and reachable from here"))
                return None
            what = f"{path} answered 200 with what is not a JSON object" if last.status == 200 else str(exc)
            add(Finding("error", "card", what, _since(traffic, before), EVERY_CLIENT,
                        "serve the card as a JSON object with Content-Type application/json"))
    if not found:
        add(Finding("error", "card", f"no agent card at {base}{CARD_PATH} or {LEGACY_CARD_PATH}",
                    _since(traffic, len(traffic.events) - 2), EVERY_CLIENT,
                    f"serve the card at {CARD_PATH}"))
        return None
    if CARD_PATH not in found:
        add(Finding("warning", "card", f"the card is only at {LEGACY_CARD_PATH} (the 0.2 path)",
                    breaks=["a2a-sdk 1.x", "JS SDK"], fix=f"serve it at {CARD_PATH} too"))
    else:
        add(Finding("ok", "card", f"found at {CARD_PATH}" + (" (and the 0.2 path)" if len(found) == 2 else "")))
    card = found.get(CARD_PATH) or found[LEGACY_CARD_PATH]
    add(Finding("info", "card", f"'{card.name}' version {card.raw.get('version')!r}, "
                f"protocolVersion {card.raw.get('protocolVersion')!r}"))
    return card


def _interfaces(card: AgentCard) -> list[tuple[str, str, str]]:
    """Every interface the card declares: ``(binding, major version, url)``."""
    out: list[tuple[str, str, str]] = []
    for i in card.interfaces:
        binding = str(i.get("protocolBinding", "JSONRPC")).upper()
        version = str(i.get("protocolVersion") or "1").split(".")[0]
        if i.get("url") and (binding, version, str(i["url"])) not in out:
            out.append((binding, version, str(i["url"])))
    url = card.raw.get("url")
    if isinstance(url, str) and url:
        binding = str(card.raw.get("preferredTransport") or "JSONRPC").upper()
        if not any(b == binding and v == "0" for b, v, _ in out):
            out.append((binding, "0", url))
    return out


async def _probe(card: AgentCard, binding: str, version: str, endpoint: str, http: httpx.AsyncClient,
                 headers: dict[str, str] | None, timeout: float, traffic: TrafficRecorder, add: Any,
                 declares_auth: bool) -> bool:
    """GetTask of an unknown task over one interface; True when it answered without credentials."""
    name = f"{binding} {version}.x at {endpoint}"
    breaks = _LINES.get((binding, version), [f"{binding} clients"])
    if binding not in ("JSONRPC", "HTTP+JSON", "GRPC") or (binding == "GRPC" and version != "1"):
        add(Finding("info", name, f"{binding} {version}.x is not a binding toolnexus can check"))
        return False
    client = A2AClient(card, headers=headers, timeout=timeout, http=http,
                       dialect="1.0" if version == "1" else "0.3", binding=binding.lower())
    client.use(endpoint)
    client.traffic = traffic
    # credentials go only to the host the user named, as A2AClient.connect decides
    client.credentials_sent = not client.transport.elsewhere(endpoint, card.source or "")
    if headers and not client.credentials_sent:
        add(Finding("info", name, f"not on the host named ({origin_text(card.source or '')}): checked without "
                    "your headers"))
    before = len(traffic.events)
    unknown = f"toolnexus-doctor-{uuid.uuid4()}"
    try:
        await client.get(unknown)
    except TaskNotFoundError:
        add(Finding("ok", name, "answers in its own dialect and binding; an unknown task is TaskNotFound"))
        if binding == "JSONRPC":
            await _jsonrpc_codes(client, name, version, traffic, add)
        return True
    except MethodNotFoundError as exc:
        add(Finding("error", name, f"declared, but it does not know GetTask there: {exc}",
                    _since(traffic, before), breaks,
                    "list only the interfaces and versions the agent really serves"))
    except RPCError as exc:
        add(Finding("warning", name, f"an unknown task is answered with {type(exc).__name__} ({exc.code}: {exc}), "
                    "not TaskNotFound (-32001)", _since(traffic, before),
                    ["clients that tell errors apart (every SDK)"], "answer TaskNotFoundError for an unknown task id"))
        return True
    except PeerError as exc:
        if exc.status in (401, 403):
            severity = "info" if declares_auth else "error"
            add(Finding(severity, name, f"refuses calls without credentials (HTTP {exc.status})"
                        + ("" if declares_auth else "; the card declares no security scheme, so clients cannot know"),
                        _since(traffic, before), [] if declares_auth else breaks,
                        "" if declares_auth else "declare the scheme in securitySchemes"))
        else:
            add(Finding("error", name, f"declared, but no A2A answer: {exc}",
                        _since(traffic, before), breaks,
                        "serve this interface, or drop it from the card"))
    except MissingExtra as exc:
        add(Finding("info", name, f"not checked: {exc}"))
    finally:
        await client.release()
    return False


async def _jsonrpc_codes(client: A2AClient, name: str, version: str, traffic: TrafficRecorder, add: Any) -> None:
    """JSON-RPC's own error codes: an unknown method, invalid params, a version it does not speak."""
    dialect = client.dialect or Dialect.V03
    probes = [("unknown method", "toolnexus/doctorUnknownMethod", {}, -32601, {}),
              ("invalid params", "GetTask" if dialect is Dialect.V10 else "tasks/get", {"id": 12345}, -32602, {})]
    if version == "1":
        probes.append(("version header", "GetTask", {"id": "x"}, -32009, {"A2A-Version": "99.0"}))
    for check, method, params, want, extra in probes:
        body = _json.dumps({"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
        before, started = len(traffic.events), time.perf_counter()
        sent = {**client.request_headers(dialect), **extra}
        try:
            r, content = await exchange(client.http, "POST", client.endpoint, headers=sent, content=body,
                                         limit=1 << 20, timeout=client.timeout)
        except httpx.HTTPError as exc:
            add(Finding("warning", f"{name}: {check}", f"no answer: {why(exc)}"))
            continue
        traffic.record(direction="out", method="POST", url=client.endpoint, status=r.status_code, started=started,
                       request_headers=sent, request_body=body, response_headers=dict(r.headers),
                       response_body=content, rpc_method=method)
        try:
            got = (_json.loads(content).get("error") or {}).get("code")
        except (*_json.JSONDecodeError, ValueError, AttributeError):
            got = None
        if got == want:
            add(Finding("ok", f"{name}: {check}", f"answered {want}"))
        else:
            severity = "info" if check == "version header" else "warning"
            add(Finding(severity, f"{name}: {check}", f"expected JSON-RPC error {want}, got "
                        + (str(got) if got is not None else f"HTTP {r.status_code} without one"),
                        _since(traffic, before), ["clients that tell errors apart"],
                        f"answer {want} as JSON-RPC 2.0 and A2A specify"))


async def _active(card: AgentCard, http: httpx.AsyncClient, headers: dict[str, str] | None, timeout: float,
                  traffic: TrafficRecorder, add: Any) -> None:
    """A message sent as toolnexus would send it, and a stream when the card offers one."""
    client = A2AClient(card, headers=headers, timeout=timeout, http=http)
    client.traffic = traffic
    before = len(traffic.events)
    try:
        task = await client.send("hello from toolnexus doctor", blocking=True)
        add(Finding("ok", "send", f"a message made task {task.id} ({task.state.value}) over "
                    f"{client.binding} {client.dialect.value if client.dialect else '?'}"))
        if client.binding is Binding.JSONRPC and client.dialect is not None and client.dialect is not Dialect.LEGACY:
            _shapes(list(traffic.events)[-1], client.dialect, add)
        before = len(traffic.events)
        started = await client.send("hello from toolnexus doctor (to cancel)")
        try:
            canceled = await client.cancel(started.id)
            add(Finding("ok" if canceled.state.value == "canceled" else "warning", "cancel",
                        f"cancel answered the task {canceled.state.value}",
                        [] if canceled.state.value == "canceled" else _since(traffic, before)))
        except TaskNotCancelableError:
            add(Finding("info", "cancel", "the task had finished first; cancel was refused as it should be"))
        except (RPCError, PeerError) as exc:
            add(Finding("warning", "cancel", f"cancel failed: {exc}", _since(traffic, before),
                        ["clients that cancel (agent tools, the TUI, the SDKs)"],
                        "answer CancelTask with the task, or TaskNotCancelableError when it has finished"))
        await _round_trip(client, card, traffic, add)
        if card.streaming:
            before = len(traffic.events)
            frames: list[Any] = []
            try:  # a peer that streams forever must not keep the doctor forever
                async with asyncio.timeout(max(timeout, 30.0)):
                    async with contextlib.aclosing(client.stream("hello again from toolnexus doctor")) as stream:
                        async for frame in stream:
                            frames.append(frame)
                            if len(frames) >= MAX_FRAMES:
                                add(Finding("warning", "streaming", f"a stream for a one-line message sent "
                                            f"{MAX_FRAMES} frames without ending; the doctor stopped reading",
                                            breaks=["streaming clients that wait for the end"],
                                            fix="end the stream when the task is final or interrupted"))
                                break
            except TimeoutError:
                add(Finding("warning", "streaming", f"a stream for a one-line message did not end within "
                            f"{max(timeout, 30.0):g} s ({len(frames)} frame(s))", _since(traffic, before)))
            answered = list(traffic.events)[-1].response_headers.get("content-type", "") if traffic.events else ""
            if len(frames) >= MAX_FRAMES:
                pass  # said above
            elif frames and client.binding is Binding.GRPC:  # a server-streaming call: no SSE to check
                add(Finding("ok", "streaming", f"the card says streaming, and {len(frames)} frame(s) arrived "
                            "over a gRPC stream"))
            elif frames and answered.startswith("text/event-stream"):
                add(Finding("ok", "streaming", f"the card says streaming, and {len(frames)} frame(s) arrived"))
            elif frames:
                add(Finding("warning", "streaming", f"the card says streaming, but the stream was answered as "
                            f"{answered or 'no content type'}, not SSE", _since(traffic, before), ["streaming clients"],
                            "answer message/stream with text/event-stream frames"))
            else:
                add(Finding("error", "streaming", "the card says streaming, but no frame arrived",
                            _since(traffic, before), ["streaming clients"],
                            "serve message/stream (SSE), or set capabilities.streaming to false"))
    except (RPCError, PeerError) as exc:
        add(Finding("error", "send", f"a plain text message failed: {exc}",
                    _since(traffic, before), EVERY_CLIENT,
                    "accept a text message as every client sends it"))
    finally:
        await client.release()


async def _round_trip(client: A2AClient, card: AgentCard, traffic: TrafficRecorder, add: Any) -> None:
    """An ``input-required`` round trip, when one of the card's skill examples (the first three)
    asks for input: the answer must go on the same task and move it past the question."""
    examples = [str(e) for skill in card.skills for e in (skill.get("examples") or [])][:3]
    for text in examples:
        before = len(traffic.events)
        asked = await client.send(text, blocking=True)
        if asked.state is not TaskState.INPUT_REQUIRED:
            continue
        question = asked.status.message.text if asked.status.message else ""
        answered = await client.send("yes", task_id=asked.id, context_id=asked.context_id, blocking=True)
        if answered.id != asked.id:
            add(Finding("warning", "input-required", f"the answer to {text!r} made a new task, not the same one",
                        _since(traffic, before), ["agent tools and chats that answer questions"],
                        "continue the task named by the message's taskId"))
        elif answered.state is TaskState.INPUT_REQUIRED and answered.status.message and \
                answered.status.message.text == question:
            add(Finding("warning", "input-required", "the answer left the task asking the same question",
                        _since(traffic, before), ["agent tools and chats that answer questions"],
                        "take the answer and move the task on"))
        else:
            add(Finding("ok", "input-required", f"{text!r} asked for input; the answer went on the same task, "
                        f"now {answered.state.value}"))
        return
    if examples:
        add(Finding("info", "input-required", "no skill example asked for input: the round trip was not tried"))


def _shapes(event: TrafficEvent, dialect: Dialect, add: Any) -> None:
    """The letter of a send's JSON-RPC answer in its dialect: content type, result wrapping, ``kind``,
    the casing of the task state."""
    evidence = [_evidence(event)]
    if not event.response_headers.get("content-type", "").startswith("application/json"):
        add(Finding("warning", "content type", f"JSON-RPC answered as {event.response_headers.get('content-type')!r}",
                    evidence, ["strict clients"], "answer with Content-Type: application/json"))
    try:
        result = _json.loads(event.response_body).get("result")
    except (*_json.JSONDecodeError, ValueError, AttributeError):
        return
    if not isinstance(result, dict):
        return
    if dialect is Dialect.V10:
        body = result.get("task") or result.get("message")
        if body is None or len(result) != 1:
            add(Finding("warning", "result wrapping", "a 1.0 SendMessage result is not {\"task\": ...} or "
                        "{\"message\": ...}", evidence, ["a2a-sdk 1.x", "JS SDK 1.x"],
                        "wrap the task (or message) as SendMessageResponse does"))
            body = result
        state = (body.get("status") or {}).get("state", "TASK_STATE_") if isinstance(body, dict) else ""
        if isinstance(state, str) and not state.startswith("TASK_STATE_"):
            add(Finding("warning", "enum casing", f"a 1.0 task state is {state!r}, not TASK_STATE_*", evidence,
                        ["a2a-sdk 1.x", "JS SDK 1.x"], "write 1.0 enums as their proto names (TASK_STATE_COMPLETED)"))
        return
    if result.get("kind") not in ("task", "message"):
        add(Finding("warning", "kind", "a 0.3 message/send result has no kind (task or message)", evidence,
                    ["a2a-sdk 0.3", "JS SDK compat"], "add kind: \"task\" (or \"message\")"))
    state = (result.get("status") or {}).get("state", "")
    if isinstance(state, str) and state.startswith("TASK_STATE_"):
        add(Finding("warning", "enum casing", f"a 0.3 task state is {state!r}, not lower-case (completed)", evidence,
                    ["a2a-sdk 0.3"], "write 0.3 states in lower case with dashes (input-required)"))


def _since(traffic: TrafficRecorder, before: int) -> list[str]:
    """The exchanges recorded since the ``before``-th, as evidence lines."""
    return [_evidence(e) for e in list(traffic.events)[before:]]


def _schema_breaks(report: Any) -> list[str]:
    return [line for line, what in report.verdict.items()
            if any(w in what for w in ("reject", "cannot", "no JSONRPC"))]
