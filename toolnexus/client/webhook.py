"""A local webhook receiver: where peers deliver the push notifications a user asked them for.

``receiver.target(task_id)`` is a config to register with a peer (``A2AClient.set_push``); each
target has its own random token, and a notification without a token the receiver handed out is
refused (401) and kept only on the wire log. A notification about another task than the one its
target was registered for is refused (403: A2A requires the client to check it). Given the agent's
keys (``target(task_id, keys=...)``), a notification must also carry a JWT signed with one of them
(:data:`~toolnexus.protocol.signing.PUSH_HEADER`, the push guide's asymmetric flow): its signature,
``aud`` (this receiver), ``iat``/``exp``, ``taskId`` (the target's task) and the body's digest are
checked, and a ``jti`` seen before is refused as a replay (each target remembers the digests of
its own, each until it expires, at most :data:`MAX_JTIS`). Each notification's verdict is kept: ``Notification.verdict`` for one accepted,
:attr:`WebhookReceiver.refused` for one refused. Accepted notifications are kept (the last ``keep``),
bounded in bytes too (:data:`MAX_KEPT`), can be awaited (:meth:`WebhookReceiver.wait`), and are published on the bus as inbound
:class:`TrafficEvent` rows (``rpc_method`` ``"push"``, with the task they name), so a task's
timeline shows them beside its other exchanges. Nothing a peer sends is interpreted: bodies are
bounded (``max_body``), parsed as JSON only, and shown as masked text.
"""

from __future__ import annotations

import asyncio
import collections
import hashlib
import heapq
import hmac
import secrets
import time
from dataclasses import dataclass, field
from typing import Any

from .. import _json
from ..events import EventBus
from ..http.guard import HostGuard
from ..http.server import AsgiServer
from ..protocol.dialects import MAX_ID, Dialect
from ..protocol.model import TaskState, now_iso
from ..protocol.push import TOKEN_HEADER, PushConfig, parse_notification
from ..protocol.signing import PUSH_HEADER, PUSH_LEEWAY, KeySet, verify_push
from ..secrets import MASK
from ..traffic import TrafficRecorder

__all__ = ["WebhookReceiver", "Notification", "Refusal", "MAX_NOTIFICATION", "MAX_JTIS", "MAX_KEPT"]

MAX_NOTIFICATION = 1024 * 1024
"""The largest notification body accepted, in bytes (413 past it)."""
MAX_KEPT = 16 * 1024 * 1024
"""The bytes of notifications kept together (their bodies as they came), and of the wire log's
bodies: past it the oldest go, whatever ``keep`` allows (1,000 of 1 MiB each were kept: 1.2 GB)."""
MAX_JTIS = 20_000
"""Signed notifications' ``jti`` one target remembers against replay, each until its ``exp`` (at
most :data:`~toolnexus.protocol.signing.PUSH_TTL` ahead) has passed; past this many, the one that
expires first is forgotten (a digest of 16 bytes each: about 3 MB a target at most)."""


@dataclass
class Notification:
    """One push notification a peer delivered: its body kept as it came (``raw``), parsed when
    read (``body``: parsed JSON may take many times its bytes)."""

    task_id: str | None
    state: TaskState | None
    raw: bytes
    peer: str
    time: str = field(default_factory=now_iso)
    verdict: str = "unsigned"
    """``unsigned`` (its token proved it), or who signed it: ``signed by 'kid' (ES256)``."""

    @property
    def body(self) -> Any:
        """The notification, parsed (afresh at each read)."""
        return _json.loads(self.raw)


@dataclass
class Refusal:
    """A notification refused: its status, why, and the task it named (when readable)."""

    status: int
    why: str
    task_id: str | None
    peer: str
    time: str = field(default_factory=now_iso)


class _Seen:
    """The ``jti`` s one target has accepted, as digests, each until it expires (then a replay of
    it is refused by its ``exp``): every expired one goes, in whatever order they came."""

    def __init__(self) -> None:
        self._exp: dict[bytes, float] = {}
        self._soonest: list[tuple[float, bytes]] = []  # a heap: the next to expire first

    def __len__(self) -> int:
        return len(self._exp)

    def add(self, jti: str, exp: float, now: float) -> bool:
        """Remember ``jti`` until ``exp``; False when it was seen before (a replay)."""
        while self._soonest and self._soonest[0][0] < now - PUSH_LEEWAY:
            del self._exp[heapq.heappop(self._soonest)[1]]
        digest = hashlib.blake2b(jti.encode(), digest_size=16).digest()
        if digest in self._exp:
            return False
        self._exp[digest] = exp
        heapq.heappush(self._soonest, (exp, digest))
        while len(self._exp) > MAX_JTIS:
            del self._exp[heapq.heappop(self._soonest)[1]]
        return True


@dataclass
class _Target:
    """What one token was handed out for: a task ("" any), the keys its notifications are
    signed with (None: unsigned ones are taken) and the ``jti`` s they carried."""

    task_id: str
    keys: KeySet | None
    issuer: str | None
    seen: _Seen = field(default_factory=_Seen)


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
        self.traffic = TrafficRecorder(bus, keep=200, peer=name, max_bytes=MAX_KEPT)
        self.notifications: collections.deque[Notification] = collections.deque(maxlen=keep)
        self._kept = 0  # the bytes of the notifications kept
        self._tokens: dict[str, _Target] = {}
        self.refused: collections.deque[Refusal] = collections.deque(maxlen=keep)
        """Notifications refused (the newest ``keep``), each with why."""
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

    def target(
        self,
        task_id: str = "",
        dialect: Dialect = Dialect.V10,
        *,
        keys: KeySet | None = None,
        issuer: str | None = None,
    ) -> PushConfig:
        """A config that points a peer at this receiver, with a token of its own. ``keys``: the
        agent's public keys (its card's key set): its notifications must then be signed with one
        of them; ``issuer``: the agent's URL their ``iss`` must name (not checked when None)."""
        token = secrets.token_urlsafe(24)
        self._tokens[token] = _Target(task_id, keys, issuer)
        return PushConfig(task_id=task_id, url=self.url, token=token, dialect=dialect)

    @property
    def remembered(self) -> int:
        """The ``jti`` s remembered against replay, every target's together."""
        return sum(len(t.seen) for t in self._tokens.values())

    def received(self, task_id: str) -> list[Notification]:
        return [n for n in self.notifications if n.task_id == task_id]

    def refused_for(self, task_id: str) -> list[Refusal]:
        """The notifications about ``task_id`` that were refused, each with why."""
        return [r for r in self.refused if r.task_id == task_id]

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

    def _keep(self, notification: Notification) -> None:
        """Keep it, the oldest let go past ``keep`` of them or :data:`MAX_KEPT` bytes."""
        kept = self.notifications
        if len(kept) == kept.maxlen and kept:
            self._kept -= len(kept[0].raw)
        kept.append(notification)
        self._kept += len(notification.raw)
        while self._kept > MAX_KEPT and len(kept) > 1:
            self._kept -= len(kept.popleft().raw)

    def _known(self, headers: dict[str, str]) -> _Target | None:
        """The target whose token the notification carries, or None."""
        given = headers.get(TOKEN_HEADER.lower(), "")
        scheme, _, credentials = headers.get("authorization", "").partition(" ")
        candidates = [given] + ([credentials.strip()] if scheme.lower() == "bearer" else [])
        found = None
        for c in candidates:  # every token compared, in constant time
            for token, target in self._tokens.items():
                if c and hmac.compare_digest(c, token):
                    found = target
        return found

    def _judge(
        self, target: _Target, headers: dict[str, str], raw: bytes, task_id: str | None
    ) -> tuple[int, str]:
        """A known token's notification judged: ``(200, verdict)``, or the refusal and why."""
        if target.task_id and task_id != target.task_id:
            return 403, (
                f"it names task {task_id!r}, and this webhook was registered for task "
                f"{target.task_id!r}"
            )
        token = headers.get(PUSH_HEADER.lower())
        if target.keys is None:
            return 200, "unsigned" if token is None else "signed, not verified (no keys given)"
        if token is None:
            return 401, f"it is not signed ({PUSH_HEADER} missing), and the agent's keys were given"
        verdict = verify_push(token, target.keys, audience=self.url, body=raw, issuer=target.issuer)
        if not verdict.ok:
            return 401, verdict.why
        claimed = verdict.claims.get("taskId")
        if claimed != (target.task_id or task_id):
            return 403, f"it is signed for task {claimed!r}, not for {task_id!r}"
        jti = str(verdict.claims["jti"])
        if not target.seen.add(jti, int(verdict.claims["exp"]), time.time()):
            return 401, f"it is a replay (jti {jti!r} was seen before)"
        return 200, verdict.why

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
        task_id, state, data, verdict = None, None, None, "unsigned"
        if scope["method"] != "POST":
            status, answer = 405, {"error": "push notifications are POSTed"}
        elif size > self.max_body:
            status, answer = 413, {"error": f"notification too large (limit {self.max_body} bytes)"}
        elif (target := self._known(headers)) is None:
            status, answer = 401, {"error": "unknown or missing notification token"}
        else:
            try:
                data = _json.loads(raw)
            except (*_json.JSONDecodeError, ValueError):
                data = None
            task_id, state = parse_notification(data)
            if data is None:
                status, answer = 400, {"error": "the notification is not JSON"}
            elif task_id is not None and len(task_id) > MAX_ID:
                why = f"its task id is {len(task_id):,} characters (an id has at most {MAX_ID})"
                task_id, status, answer = None, 400, {"error": why}
            else:
                status, verdict = self._judge(target, headers, raw, task_id)
                answer = {} if status == 200 else {"error": verdict}
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
        if PUSH_HEADER.lower() in headers:  # a signature, not a credential: never learnt as one
            headers[PUSH_HEADER.lower()] = MASK
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
                self._keep(Notification(task_id, state, raw, peer, verdict=verdict))
                self._arrived.notify_all()
        else:
            why = str(answer.get("error", ""))[:1000]  # a claim it quotes may be long
            self.refused.append(Refusal(status, why, task_id, peer))
