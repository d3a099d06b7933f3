"""How the peer tells of a task's updates: a subscribe that answers the task first (1.0's rule), and a
push round trip into a local receiver (its token header, the payload's shape in the dialect)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import httpx

from ... import _json
from ...client.webhook import WebhookReceiver
from ...http.fetch import MAX_FRAME, read_body, sse_events, why
from ...protocol.push import TOKEN_HEADER
from .probe import Probe, task_of

PUSH_WAIT = 10.0
"""Seconds the push round trip waits for the task's last notification."""


async def subscribe(probe: Probe) -> None:
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


async def push(probe: Probe) -> None:
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
