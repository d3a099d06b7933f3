"""What a JSON-RPC endpoint knows: both dialects' method names, asked with nothing to act on, and
JSON-RPC's own error codes."""

from __future__ import annotations

import uuid
from typing import Any

import httpx

from ...client.peer import A2AClient
from ...protocol.dialects import Dialect
from ...traffic import TrafficRecorder
from ..features import Finder, rpc
from .lines import SEND_NAMES, Add
from .seen import Seen


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


async def method_names(
    client: A2AClient, name: str, traffic: TrafficRecorder, add: Add, seen: Seen
) -> dict[str, bool | None]:
    """Which dialects' method names one JSON-RPC endpoint knows: each send method asked with no
    message (nothing to act on: one that knows it refuses the params, one that does not answers
    -32601), and the legacy dialect's ``GetTask`` for an unknown task."""
    find = Finder(traffic, add)
    if client.endpoint in seen.knows:
        return seen.knows[client.endpoint]
    known: dict[str, bool | None] = {}
    for method in SEND_NAMES:
        extra = {"A2A-Version": "1.0"} if SEND_NAMES[method] is Dialect.V10 else {}
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
        "; ".join(f"{said[known[m]]} {m} ({SEND_NAMES[m].value})" for m in SEND_NAMES),
    )
    return known


async def jsonrpc_codes(
    client: A2AClient, name: str, version: str, traffic: TrafficRecorder, add: Add
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
