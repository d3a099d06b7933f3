"""A local webhook receiver: where peers deliver the push notifications a user asked them for.

``receiver.target(task_id)`` is a config to register with a peer (``A2AClient.set_push``); each
target has its own random token, and a notification without a token the receiver handed out is
refused (401) and kept only on the wire log. Accepted notifications are kept (the last ``keep``),
can be awaited (:meth:`WebhookReceiver.wait`), and are published on the bus as inbound
:class:`TrafficEvent` rows (``rpc_method`` ``"push"``, with the task they name), so a task's
timeline shows them beside its other exchanges. Nothing a peer sends is interpreted: bodies are
bounded (``max_body``), parsed as JSON only, and shown as masked text.
"""

from __future__ import annotations

import asyncio
import collections
import hmac
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from .. import _json
from ..events import EventBus
from ..http.guard import HostGuard
from ..http.server import AsgiServer
from ..protocol.dialects import Dialect
from ..protocol.model import TaskState, now_iso
from ..protocol.push import TOKEN_HEADER, PushConfig, parse_notification
from ..traffic import TrafficRecorder

__all__ = ["WebhookReceiver", "Notification", "MAX_NOTIFICATION"]

MAX_NOTIFICATION = 1024 * 1024
"""The largest notification body accepted, in bytes (413 past it)."""


@dataclass
class Notification:
    """One push notification a peer delivered."""

    task_id: str | None
    state: TaskState | None
    body: Any
    peer: str
    time: str = field(default_factory=now_iso)


class WebhookReceiver:
    """An HTTP endpoint on loopback (by default) that takes peers' push notifications.

    Args:
        bus: where each delivery is published as an inbound TrafficEvent.
        addr: where to listen (``127.0.0.1:0``: any free port on this machine only).
        keep: notifications kept in :attr:`notifications`.
        name: the ``server`` of its wire rows.
    """

    def __init__(
        self,
        *,
        bus: EventBus | None = None,
        addr: str = "127.0.0.1:0",
        keep: int = 1000,
        name: str = "webhook",
        max_body: int = MAX_NOTIFICATION,
    ) -> None:
        self.name = name
        self.max_body = max_body
        self.traffic = TrafficRecorder(bus, keep=200, peer=name)
        self.notifications: collections.deque[Notification] = collections.deque(maxlen=keep)
        self._tokens: dict[str, str] = {}  # token -> the task it was handed out for ("" any)
        self._arrived = asyncio.Condition()
        self._server = AsgiServer(
            HostGuard(self._app, lambda: (self._server.host, self._server.port)), addr
        )

    @property
    def url(self) -> str:
        return self._server.url + "/"

    @property
    def running(self) -> bool:
        return self._server.running

    async def start(self) -> WebhookReceiver:
        if not self._server.running:
            await self._server.start()
        return self

    async def stop(self) -> None:
        await self._server.stop()

    async def __aenter__(self) -> WebhookReceiver:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    def target(self, task_id: str = "", dialect: Dialect = Dialect.V10) -> PushConfig:
        """A config that points a peer at this receiver, with a token of its own."""
        token = secrets.token_urlsafe(24)
        self._tokens[token] = task_id
        return PushConfig(task_id=task_id, url=self.url, token=token, dialect=dialect)

    def received(self, task_id: str) -> list[Notification]:
        return [n for n in self.notifications if n.task_id == task_id]

    async def wait(
        self, task_id: str, *, state: TaskState | None = None, timeout: float = 10.0
    ) -> Notification:
        """The first notification about ``task_id`` (reporting ``state``, when given), kept or to come.

        Raises:
            TimeoutError: none came within ``timeout`` seconds.
        """

        def found() -> Notification | None:
            return next(
                (
                    n
                    for n in self.notifications
                    if n.task_id == task_id and (state is None or n.state is state)
                ),
                None,
            )

        async with asyncio.timeout(timeout):
            async with self._arrived:
                await self._arrived.wait_for(lambda: found() is not None)
        return found()  # type: ignore[return-value]  # what the waiter was given is a Notification

    def _known(self, headers: dict[str, str]) -> bool:
        given = headers.get(TOKEN_HEADER.lower(), "")
        scheme, _, credentials = headers.get("authorization", "").partition(" ")
        candidates = [given] + ([credentials.strip()] if scheme.lower() == "bearer" else [])
        return any(c and any(hmac.compare_digest(c, t) for t in self._tokens) for c in candidates)

    async def _app(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        started = time.perf_counter()
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope.get("headers", ())}
        client = scope.get("client") or ("?", 0)
        peer = f"{client[0]}:{client[1]}"
        body, size, more = [], 0, True
        while more and size <= self.max_body:  # past the limit nothing more is read: 413, and close
            message = await receive()
            if message["type"] != "http.request":
                return  # the peer left
            chunk = message.get("body", b"")
            size += len(chunk)
            body.append(chunk)
            more = message.get("more_body", False)
        raw = b"".join(body)[: self.max_body]
        task_id, state, data = None, None, None
        if scope["method"] != "POST":
            status, answer = 405, {"error": "push notifications are POSTed"}
        elif size > self.max_body:
            status, answer = 413, {"error": f"notification too large (limit {self.max_body} bytes)"}
        elif not self._known(headers):
            status, answer = 401, {"error": "unknown or missing notification token"}
        else:
            try:
                data = _json.loads(raw)
            except (*_json.JSONDecodeError, ValueError):
                data = None
            task_id, state = parse_notification(data)
            if data is None:
                status, answer = 400, {"error": "the notification is not JSON"}
            else:
                status, answer = 200, {}
        out = _json.dumps(answer)
        reply_headers = {"content-type": "application/json", "content-length": str(len(out))}
        if more:  # a body left unread: the connection cannot carry another request
            reply_headers["connection"] = "close"
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(k.encode(), v.encode()) for k, v in reply_headers.items()],
            }
        )
        await send({"type": "http.response.body", "body": out})
        path = scope.get("path", "/")
        self.traffic.record(
            direction="in",
            method=scope["method"],
            url=self.url.rstrip("/") + path,
            status=status,
            started=started,
            request_headers=headers,
            request_body=raw,
            response_headers=reply_headers,
            response_body=out,
            rpc_method="push",
            peer=peer,
            task_id=task_id,
            server=self.name,
        )
        if status == 200:
            async with self._arrived:
                self.notifications.append(Notification(task_id, state, data, peer))
                self._arrived.notify_all()
