"""An MCP session's cassette against a live server (:func:`mcp_diff`): the recorded requests asked
again in the recorded era, the server's questions answered as the user answered them then."""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Mapping
from typing import Any

from ...errors import PeerError
from ...mcp.transport import endpoint_label, mcp_failure, open_client, sdk
from ...traffic import TrafficRecorder
from ..cassette import Cassette, load
from ..replay.report import Difference, ReplayReport
from .calls import Call, server_of
from .differ import Differ
from .tape import MCPTape


async def mcp_diff(
    cassette: Cassette | str | os.PathLike[str],
    target: str | list[str],
    *,
    headers: Mapping[str, str] | None = None,
    env: dict[str, str] | None = None,
    server: str | None = None,
    timeout: float = 30.0,
    bus: Any = None,
) -> ReplayReport:
    """Ask the live MCP server at ``target`` (a URL, or a stdio command line as a list) what the
    cassette's session asked, in the recorded era, and report what changed (see the module).

    Raises:
        CassetteError: the cassette cannot be read or holds no such MCP session.
    """
    tape_file = cassette if isinstance(cassette, Cassette) else load(cassette)
    tape = MCPTape.read(tape_file, server)
    where = endpoint_label(target)
    report = ReplayReport(str(tape_file.path), where)
    recorder = TrafficRecorder(bus, peer=where)
    for name, value in (headers or {}).items():
        recorder.secret(name, value)
    answers: dict[str, deque[Any]] = {}
    for method, result in tape.answers:
        answers.setdefault(method, deque()).append(result)
    client_options = answering(answers)
    mode = "auto" if tape.modern else "legacy"
    differ = Differ(report)
    try:
        async with open_client(
            target,
            recorder,
            timeout,
            headers=dict(headers or {}),
            env=env,
            mode=mode,
            cache=None,
            **client_options,
        ) as client:
            for call in asked_of(tape.calls):
                report.exchanges += 1
                await differ.one(client, call, tape, timeout)
    except PeerError as exc:
        report.differences.append(Difference(0, "connect", "unanswered", "", "a session", str(exc)))
    except Exception as exc:  # noqa: BLE001 - the live server failed the session: that is the finding
        report.differences.append(
            Difference(0, "connect", "unanswered", "", "a session", mcp_failure(exc, recorder))
        )
    masked = sorted(
        {
            k
            for x in tape_file
            if server_of(x) == tape.server
            for k, v in (x.request.get("headers") or {}).items()
            if "***" in str(v)
            and k.lower() != "mcp-session-id"
            and k.lower() not in {h.lower() for h in headers or {}}
        }
    )
    report.notes += [
        f"the recorded requests carried the secret header {name!r} (masked): pass it again"
        for name in masked
    ]
    return report


def asked_of(calls: list[Call]) -> list[Call]:
    """The calls a diff asks again: each request but a retry (2026-07-28: the SDK retries by
    itself) and the listen stream, each with the final answer of its retries."""
    out: list[Call] = []
    for call in calls:
        if call.method == "subscriptions/listen":
            continue
        if "requestState" in call.params and out and out[-1].operation == call.operation:
            out[-1] = Call(out[-1].seq, out[-1].body, call.messages, call.answer, call.status)
            continue
        out.append(call)
    return out


def answering(answers: dict[str, deque[Any]]) -> dict[str, Any]:
    """The client's callbacks that answer the server's questions as they were answered then
    (a question not answered then is declined, or refused)."""
    types = sdk().types

    def take(method: str) -> Any:
        queue = answers.get(method)
        return queue.popleft() if queue else None

    async def elicited(context: Any, params: Any) -> Any:
        given = take("elicitation/create")
        if isinstance(given, dict) and "action" in given:
            return types.ElicitResult.model_validate(given)
        return types.ElicitResult(action="decline")

    async def sampled(context: Any, params: Any) -> Any:
        given = take("sampling/createMessage")
        if isinstance(given, dict) and "role" in given:
            return types.CreateMessageResult.model_validate(given)
        return types.ErrorData(code=-1, message="not answered in the recording")

    async def rooted(context: Any) -> Any:
        given = take("roots/list")
        return types.ListRootsResult.model_validate(
            given if isinstance(given, dict) else {"roots": []}
        )

    return {
        "elicitation_callback": elicited,
        "sampling_callback": sampled,
        "list_roots_callback": rooted,
    }
