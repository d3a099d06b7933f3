"""A cassette against a live peer (:func:`diff`, ``toolnexus replay session.jsonl --against URL``):
the recorded requests sent again in order, ids mapped, each answer compared with the recorded one."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any

import httpx

from ...errors import PeerError
from ...http.fetch import MAX_RESPONSE, exchange, why
from ...protocol.model import new_id
from ...secrets import MASK
from ...traffic import sse_data
from ..cassette import Cassette, Exchange, load, origin_of
from .matching import bounded_json, operation_of, split_url
from .peer import pick_origin
from .report import Difference, ReplayReport
from .shapes import shapes_between
from .states import (
    SETTLED,
    compare_states,
    last_state,
    message_ids,
    pair_ids,
    recorded_answers,
    settled_states,
)

_GET_OPS = frozenset({"GetTask", "tasks/get"})


_Answer = tuple[int | None, str | None, bool, list[Any]]
"""A live answer: its status, why there was none, whether it streamed, its JSON values."""


async def diff(
    cassette: Cassette | str | os.PathLike[str],
    url: str,
    *,
    headers: Mapping[str, str] | None = None,
    origin: str | None = None,
    timeout: float = 30.0,
    settle: float = 30.0,
    http: httpx.AsyncClient | None = None,
) -> ReplayReport:
    """Send a cassette's recorded requests to the live peer at ``url`` and compare its answers.

    Args:
        cassette: a :class:`Cassette` or the path of one.
        url: the live peer's origin or base URL (each recorded path is sent there).
        headers: sent with every request, over the recorded ones (secrets were masked when recorded).
        origin: which recorded peer, when the cassette talked to several.
        timeout: seconds for one answer (a stream: the whole of it).
        settle: seconds a poll is repeated until the live answer settles as the recorded one had.

    Raises:
        CassetteError: the cassette cannot be read or names no such peer.
    """
    tape = cassette if isinstance(cassette, Cassette) else load(cassette)
    played = pick_origin(tape, origin)
    base = url.rstrip("/")
    live_origin = origin_of(base) or base
    report = ReplayReport(str(tape.path), base)
    ids: dict[str, str] = {}
    recorded_states: dict[str, list[str]] = {}
    live_states: dict[str, list[str]] = {}
    given = {k.lower(): v for k, v in (headers or {}).items()}
    own = http is None
    client = http or httpx.AsyncClient(timeout=timeout)

    try:
        for x in tape.of(played):
            report.exchanges += 1
            op, target, content = _live_request(x, live_origin, ids)
            sent = _sent_headers(x.request.get("headers", {}), given, report.notes)
            recorded_values = recorded_answers(x.response)
            polls = settle if op in _GET_OPS and last_state(recorded_values) in SETTLED else 0.0
            status, error, streamed, live_values = await _settled(
                partial(_ask, client, x.method, target, sent, content, timeout), polls, x.status
            )
            if error is not None or x.status is None:
                if (error is not None) != (x.status is None):
                    report.differences.append(
                        Difference(
                            x.seq,
                            op,
                            "unanswered",
                            "",
                            x.error or str(x.status),
                            error or str(status),
                        )
                    )
                continue
            if (
                status != x.status
            ):  # a refusal, or another answer altogether: its shape says nothing more
                report.differences.append(
                    Difference(x.seq, op, "status", "", str(x.status), str(status))
                )
                continue
            for a, b in zip(recorded_values, live_values, strict=False):
                pair_ids(a, b, ids)
            shapes = shapes_between(x.streamed, streamed, recorded_values, live_values)
            report.differences += [Difference(x.seq, op, "shape", p, a, b) for p, a, b in shapes]
            settled_states(recorded_values, recorded_states)
            settled_states(live_values, live_states, {v: k for k, v in ids.items()})
    finally:
        if own:
            await client.aclose()
    compare_states(report, recorded_states, live_states)
    return report


def _live_request(x: Exchange, live_origin: str, ids: dict[str, str]) -> tuple[str, str, bytes]:
    """A recorded request's operation, and its URL and body for the live peer: each message id
    made anew, each id the live peer gave (``ids``, by the recorded one) in place of the recorded."""
    path, query = split_url(x.url)
    body = x.request.get("json")
    op = x.rpc_method or operation_of(x.method, path, body)
    for value in [body] if body is not None else []:  # each message id made anew
        for stable in message_ids(value):
            ids.setdefault(stable, new_id())
    target = _to_live(live_origin + path + (f"?{query}" if query else ""), ids)
    return op, target, _to_live(x.request_text(), ids).encode("utf-8")


def _to_live(text: str, ids: Mapping[str, str]) -> str:
    for stable in sorted(ids, key=len, reverse=True):
        text = text.replace(stable, ids[stable])
    return text


async def _settled(
    ask: Callable[[], Awaitable[_Answer]], polls: float, status: int | None
) -> _Answer:
    """``ask()`` (an :func:`_ask`), asked again every 0.2 s for up to ``polls`` seconds while the
    live answer (of the recorded ``status``) names a task that has not settled (a poll whose
    recorded answer had)."""
    waited = 0.0
    while True:
        answer = await ask()
        live_status, error, _, live_values = answer
        if (
            error is None
            and live_status == status
            and waited < polls
            and last_state(live_values) not in SETTLED | {None}
        ):
            await asyncio.sleep(0.2)
            waited += 0.2
            continue
        return answer


def _sent_headers(
    recorded: Mapping[str, str], given: Mapping[str, str], notes: list[str]
) -> dict[str, str]:
    """A recorded request's headers but the masked ones, with the user's (``given``, lower-case
    names) over them; a note for each masked one the user did not pass again."""
    sent = {k: v for k, v in recorded.items() if MASK not in v and k.lower() not in given}
    for name in sorted(k for k, v in recorded.items() if MASK in v and k.lower() not in given):
        note = f"the recorded requests carried the secret header {name!r} (masked): pass it again"
        if note not in notes:
            notes.append(note)
    sent.update(given)
    return sent


async def _ask(
    client: httpx.AsyncClient,
    method: str,
    target: str,
    headers: dict[str, str],
    content: bytes,
    timeout: float,
) -> _Answer:
    """One request to the live peer: its status, why there was none, whether it streamed, and
    the JSON values it answered (each event's, for a stream)."""
    try:
        r, raw = await exchange(
            client,
            method,
            target,
            headers=headers,
            content=content,
            limit=MAX_RESPONSE,
            timeout=timeout,
        )
        status, answer, error = r.status_code, raw.decode("utf-8", "replace"), None
        streamed = "text/event-stream" in r.headers.get("content-type", "")
    except (httpx.HTTPError, PeerError) as exc:
        status, answer, error, streamed = None, "", why(exc), False
    values = (
        [v for v in (bounded_json(f) for f in sse_data(answer.encode())) if v is not None]
        if streamed
        else [v for v in [bounded_json(answer)] if v is not None]
    )
    return status, error, streamed, values
