"""A served agent's push notifications: the configs callers set on their tasks, and delivery.

``TaskRunner.transition`` hands every change of a task that has a config to
:meth:`PushNotifier.notify`, which only queues it: each config has its own queue and its own
sender, so a slow or dead webhook delays its own notifications and nothing else (not the task,
not another webhook). Shapes per dialect and the URL rules are in ``toolnexus.protocol.push``.

What one webhook can cost is bounded per destination (scheme, host and port): at most
``PER_DESTINATION`` POSTs in flight, handed out in turn between the callers (task owners) that
wait for it, and at most ``QUEUED_BYTES`` of notifications waiting for it (past that the oldest
waiting ones go, a config's newest last). One change is rendered once per dialect and the same
bytes (exactly as long as they are) are queued for every config that gets it; a notification is
forgotten as soon as no queue and no POST holds it.

Each delivery resolves the webhook's host once, checks the address it got (not the URL's text:
``127.1``, ``2130706433`` or a name that resolves inward are caught there) and connects to that
very address, the URL's host kept in ``Host`` and TLS's server name; redirects are not followed.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
import urllib.parse
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx

from .. import _json
from ..errors import InvalidParamsError, TaskNotFoundError
from ..http import fetch
from ..http.fetch import why as why_text
from ..protocol.dialects import Dialect
from ..protocol.model import Artifact, Task, new_id
from ..protocol.push import (
    PushConfig,
    address_refusal,
    parse_push_config,
    payloads,
    render_push_config,
    webhook_refusal,
)
from ..protocol.signing import PUSH_HEADER, SigningKey
from ..traffic import TrafficRecorder

__all__ = [
    "PushNotifier",
    "pinned",
    "MAX_PER_TASK",
    "MAX_TASKS",
    "QUEUE",
    "QUEUED_BYTES",
    "PER_DESTINATION",
    "RETRY_DELAYS",
]

log = logging.getLogger("toolnexus.serve.push")

MAX_PER_TASK = 10
"""Configs one task may have; one more is refused (-32602)."""
MAX_TASKS = 10_000
"""Tasks whose configs are kept; past that the oldest task's configs go."""
QUEUE = 100
"""Notifications waiting for one webhook; past that the oldest waiting one is dropped (a dead
webhook loses intermediate states, never the newest)."""
RETRY_DELAYS = (0.5, 1.0, 2.0, 4.0)
"""Seconds before each retry of a notification that failed (network error, 408, 429, 5xx)."""
TIMEOUT = 5.0
"""Seconds one POST to a webhook may take in all."""
ANSWER_KEPT = 4096
"""Bytes of a webhook's answer read (for the wire log); the rest is never read."""
QUEUED_BYTES = 16 * 2**20
"""Bytes of notifications waiting for one destination (a body queued for several of its configs
counts once); past that the oldest waiting ones go, a config's newest last (kept past the bound,
the newest of 40 tasks, one config each, held about 75 MiB)."""
TOTAL_BYTES = 64 * 2**20
"""Bytes of notifications waiting for all webhooks together; past that the oldest waiting ones of
the destination holding most go, newest or not (memory before completeness)."""
PER_DESTINATION = 4
"""POSTs in flight to one destination at a time; its waiting callers take turns."""


class _Body:
    """One rendered notification, shared by every config of one destination that gets it."""

    __slots__ = ("data", "refs", "queued")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.refs = 0  # the queues (and the POSTs under way) that hold it
        self.queued: list[
            _Sender
        ] = []  # the senders whose queue holds it (the configs of one task: a few)


class _Destination:
    """One webhook destination (scheme, host, port): its slots, handed out in turn between the
    owners that wait, and the bytes queued for it."""

    def __init__(self, key: str) -> None:
        self.key = key
        self.free = PER_DESTINATION
        self.waiting: collections.OrderedDict[str, collections.deque[asyncio.Future[None]]] = (
            collections.OrderedDict()
        )
        self.bytes = 0
        self.bodies: collections.OrderedDict[_Body, None] = collections.OrderedDict()
        """What it holds (queued or being sent), oldest first."""
        self.senders: set[_Sender] = set()

    async def acquire(self, owner: str) -> None:
        if self.free > 0 and not self.waiting:
            self.free -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.waiting.setdefault(owner, collections.deque()).append(future)
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # handed a slot while being cancelled: pass it on
            else:
                queue = self.waiting.get(owner)
                if queue is not None and future in queue:
                    queue.remove(future)
                    if not queue:
                        del self.waiting[owner]
            raise

    def release(self) -> None:
        while self.waiting:
            owner, queue = next(iter(self.waiting.items()))
            future = queue.popleft()
            if queue:
                self.waiting.move_to_end(owner)  # the next waiting owner goes first next time
            else:
                del self.waiting[owner]
            if not future.done():
                future.set_result(None)
                return
        self.free += 1

    def hold(self, body: _Body) -> int:
        """Count a queue's hold on ``body``; returns the bytes this destination now holds more."""
        body.refs += 1
        if body.refs > 1:
            return 0
        self.bodies[body] = None
        self.bytes += len(body.data)
        return len(body.data)

    def let_go(self, body: _Body) -> int:
        """Count a hold given up; returns the bytes this destination now holds less (a body no
        queue and no POST holds any more is forgotten at once: kept for shedding to meet it, every
        notification a destination was ever sent stayed in memory)."""
        body.refs -= 1
        if body.refs > 0:
            return 0
        del self.bodies[body]
        self.bytes -= len(body.data)
        return len(body.data)

    def oldest(self, *, newest_too: bool) -> _Body | None:
        """The oldest body waiting in a queue (one being sent is not), to be shed; unless
        ``newest_too``, never the newest of any of its queues. (Each body knows its queues: asking
        every sender of a destination, thousands of configs to one slow webhook, for every body
        was quadratic at best.)"""
        for body in self.bodies:
            if body.queued and (newest_too or all(s.queue[-1] is not body for s in body.queued)):
                return body
        return None


def _destination_key(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return f"{parts.scheme}://{(parts.hostname or '').lower().rstrip('.')}:{port}"


class _Sender:
    """The queue and the delivering task of one config."""

    def __init__(self, config: PushConfig, destination: _Destination) -> None:
        self.config = config
        self.destination = destination
        self.owner = ""
        self.queue: collections.deque[_Body] = collections.deque()
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.sending = False
        self.closed = False
        self.final = False  # the task's last change is queued: the sender ends once it is sent

    def unqueue(self) -> _Body:
        """The oldest body of the queue, taken out of it (its hold is still to be let go)."""
        body = self.queue.popleft()
        body.queued.remove(self)
        return body


class _Once:
    """A notification's bytes as one POST sends them, let go of when the POST ends. httpx and
    httpcore leave every request they send in a reference cycle, which only the cycle collector
    frees: in a server tuned by ``serving_gc`` (a collection after 20,000 new objects, and few
    objects come with big bodies) each cycle held a whole notification long after its POST, and
    40 tasks of 2.7 MB, one config each on a webhook that answers at once, grew ``toolnexus
    serve`` by 179 MiB more than the same tasks without push. The cycle now holds this empty
    shell."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data

    def __aiter__(self) -> _Once:
        return self

    async def __anext__(self) -> bytes:
        data, self.data = self.data, b""
        if not data:
            raise StopAsyncIteration
        return data


def _stored(config: PushConfig) -> dict[str, Any]:
    """A config as the shared store keeps it: its 1.0 shape, and the dialect it was set in."""
    return {"dialect": config.dialect.value, "config": render_push_config(config, Dialect.V10)}


def _config(data: Any) -> PushConfig | None:
    try:
        return replace(
            parse_push_config(data["config"], Dialect.V10), dialect=Dialect(data["dialect"])
        )
    except (KeyError, TypeError, ValueError, InvalidParamsError):
        return None


async def pinned(
    url: str, agent: tuple[str, int] | None, *, private_ok: bool, timeout: float
) -> tuple[str, dict[str, str], dict[str, Any]] | str:
    """Where an agent connects for ``url`` it was given by a peer (a webhook, a file by URL): the
    URL with its host replaced by the address it resolves to now (checked: see
    ``address_refusal``), the ``Host`` header, and the TLS server name; or why not (a string).
    ``agent``: its bound address (checked at each call: it is known only once bound)."""
    why = webhook_refusal(url, agent, private_ok=private_ok)
    if why is not None:
        return why
    return await fetch.pinned(
        url,
        lambda a, port: address_refusal(a, port, agent, private_ok=private_ok, shown=url),
        timeout,
    )


class PushNotifier:
    """Push-notification configs of one served agent's tasks (in memory), and their delivery.

    Args:
        bound: the agent's bound ``(host, port)``; webhooks pointing at it are refused.
        private_ok: allow webhooks on loopback and private addresses (False for an agent bound
            beyond loopback, unless its config says otherwise).
        traffic: where deliveries are recorded (the server's wire, when it records one).
        server: the served agent's name, on recorded deliveries.
        signer: the agent's key: each notification then carries a JWT signed with it
            (:data:`~toolnexus.protocol.signing.PUSH_HEADER`: ``iss`` the agent, ``aud`` the
            webhook, ``iat``, ``exp``, a fresh ``jti`` per POST, ``taskId``, the body's SHA-256).
        issuer: the agent's URL, the ``iss`` of those JWTs.
    """

    def __init__(
        self,
        bound: Callable[[], tuple[str, int]],
        *,
        private_ok: bool = True,
        traffic: TrafficRecorder | None = None,
        server: str = "",
        retry_delays: tuple[float, ...] = RETRY_DELAYS,
        timeout: float = TIMEOUT,
        signer: SigningKey | None = None,
        issuer: Callable[[], str] = lambda: "",
    ) -> None:
        self._bound = bound
        self.signer = signer
        self.issuer = issuer
        self.private_ok = private_ok
        self.traffic = traffic
        self.server = server
        self.retry_delays = retry_delays
        self.timeout = timeout
        self._configs: collections.OrderedDict[str, dict[str, _Sender]] = collections.OrderedDict()
        self.shared: Any = None
        """A store shared by workers (PostgreSQL) that keeps the configs; None: in memory only."""
        self._loaded: dict[
            str, int
        ] = {}  # task -> the shared store's count of its config changes, as loaded
        self._http: httpx.AsyncClient | None = None
        self._destinations: dict[str, _Destination] = {}
        self.queued_bytes = 0
        """Bytes of notifications waiting (or being sent), every destination together."""
        self.delivered = 0
        """Notifications a webhook accepted (2xx)."""
        self.failed = 0
        """Notifications given up on after every retry, or dropped from a full queue."""

    # -- configs ----------------------------------------------------------------------------------
    def check(self, url: str) -> None:
        """Raises InvalidParamsError when the agent must not call ``url`` (see ``webhook_refusal``)."""
        why = webhook_refusal(url, self._bound(), private_ok=self.private_ok)
        if why is not None:
            raise InvalidParamsError(f"Invalid params: push notification url refused: {why}")

    def set(self, config: PushConfig) -> PushConfig:
        """Keep ``config`` for its task (the same id replaces the config it names); returns it."""
        self.check(config.url)
        configs = self._configs.get(config.task_id)
        if configs is None:
            configs = self._configs[config.task_id] = {}
            while len(self._configs) > MAX_TASKS:
                _, dropped = self._configs.popitem(last=False)
                for sender in dropped.values():
                    self._close(sender)
        config.id = config.id or new_id()
        if config.id not in configs and len(configs) >= MAX_PER_TASK:
            raise InvalidParamsError(
                f"Invalid params: task {config.task_id} already has {MAX_PER_TASK} "
                "push notification configs; delete one first"
            )
        old = configs.get(config.id)
        if old is not None:
            self._close(old)
        configs[config.id] = self._sender(config)
        return config

    def _sender(self, config: PushConfig) -> _Sender:
        key = _destination_key(config.url)
        destination = self._destinations.get(key)
        if destination is None:
            destination = self._destinations[key] = _Destination(key)
        sender = _Sender(config, destination)
        destination.senders.add(sender)
        return sender

    def get(self, task_id: str, config_id: str | None = None) -> PushConfig:
        """The config of ``task_id`` named ``config_id`` (None: its first)."""
        configs = self._configs.get(task_id) or {}
        sender = configs.get(config_id) if config_id else next(iter(configs.values()), None)
        if sender is None:
            raise TaskNotFoundError(
                f"Task {task_id} has no push notification config"
                + (f" {config_id}" if config_id else "")
            )
        return sender.config

    def list(self, task_id: str) -> list[PushConfig]:
        return [s.config for s in (self._configs.get(task_id) or {}).values()]

    def delete(self, task_id: str, config_id: str) -> None:
        configs = self._configs.get(task_id) or {}
        sender = configs.pop(config_id, None)
        if sender is None:
            raise TaskNotFoundError(f"Task {task_id} has no push notification config {config_id}")
        self._close(sender)
        if not configs:
            self._configs.pop(task_id, None)

    # -- delivery ---------------------------------------------------------------------------------
    # -- shared by workers (a PostgreSQL store) --------------------------------------------------
    async def keep(self, config: PushConfig) -> PushConfig:
        """With a shared store, write a config just set there too (any worker then delivers for it)."""
        if self.shared is not None:
            await self.shared.save_push(config.task_id, config.id, _stored(config))
            self._loaded[config.task_id] = -1  # reread at the task's next move
        return config

    async def forget(self, task_id: str, config_id: str) -> None:
        if self.shared is not None:
            await self.shared.delete_push(task_id, config_id)
            self._loaded[task_id] = -1

    async def load(self, task_id: str) -> None:
        """With a shared store, hold what it has for this task (configs set on other workers too)."""
        if self.shared is None:
            return
        changes, stored = await self.shared.load_push(task_id)
        wanted = {c.id: c for c in (_config(d) for d in stored) if c is not None}
        held = self._configs.get(task_id) or {}
        for config_id in [i for i in held if i not in wanted or held[i].config != wanted[i]]:
            self._close(held.pop(config_id))
        for config_id, config in wanted.items():
            if config_id not in held:
                held[config_id] = self._sender(config)
        if held:
            self._configs[task_id] = held
        else:
            self._configs.pop(task_id, None)
        self._loaded[task_id] = changes

    async def sync(self, task_id: str) -> None:
        """Before a move of a task is notified: reload its configs when another worker (or a config
        call) changed them since they were loaded here. Costs nothing for a task without any."""
        if self.shared is None:
            return
        changes = self.shared.push_changes.get(task_id, 0)
        if changes != self._loaded.get(task_id, 0):
            await self.load(task_id)

    def notify(self, task: Task, new_artifacts: list[Artifact]) -> None:
        """Queue this change of ``task`` for each of its webhooks (never waits). It is rendered
        once per dialect, and queued as one body per destination, whatever the number of configs."""
        senders = self._configs.get(task.id)
        if not senders:
            return
        rendered: dict[Any, list[bytes]] = {}
        shared: dict[tuple[Any, str], list[_Body]] = {}
        for sender in senders.values():
            dialect, destination = sender.config.dialect, sender.destination
            bodies = shared.get((dialect, destination.key))
            if bodies is None:
                data = rendered.get(dialect)
                if data is None:
                    data = rendered[dialect] = [
                        _json.tight(p) for p in payloads(task, new_artifacts, dialect)
                    ]
                bodies = shared[(dialect, destination.key)] = [_Body(d) for d in data]
            sender.owner = task.owner or ""
            for body in bodies:
                self._enqueue(sender, body)
            sender.final = task.state.terminal
            sender.wake.set()
            if sender.task is None:
                sender.task = asyncio.ensure_future(self._deliver(sender))

    def _enqueue(self, sender: _Sender, body: _Body) -> None:
        destination = sender.destination
        if len(sender.queue) >= QUEUE:
            self._drop(sender)  # the oldest waiting one goes
        sender.queue.append(body)
        body.queued.append(sender)
        self.queued_bytes += destination.hold(body)
        while destination.bytes > QUEUED_BYTES:  # the oldest go first, a config's newest last
            oldest = destination.oldest(newest_too=False) or destination.oldest(newest_too=True)
            if oldest is None:
                break  # what is left is being sent
            self._shed(destination, oldest)
        shed = 0
        while self.queued_bytes > TOTAL_BYTES:  # memory first: the heaviest destination's oldest go
            heaviest = max(self._destinations.values(), key=lambda d: d.bytes)
            oldest = heaviest.oldest(newest_too=True)
            if oldest is None:
                break  # what is left is being sent
            shed += self._shed(heaviest, oldest)
        if shed:
            log.warning(
                "%d push notification(s) dropped: more than %d MiB wait for webhooks",
                shed,
                TOTAL_BYTES >> 20,
            )

    def _drop(self, sender: _Sender) -> None:
        self.queued_bytes -= sender.destination.let_go(sender.unqueue())
        self.failed += 1

    def _shed(self, destination: _Destination, body: _Body) -> int:
        """Take ``body`` out of every queue of ``destination`` that holds it (it is freed); returns
        how many notifications that dropped."""
        dropped = 0
        for sender in list(body.queued):
            sender.queue.remove(body)
            body.queued.remove(sender)
            self.queued_bytes -= destination.let_go(body)
            dropped += 1
        self.failed += dropped
        return dropped

    async def _deliver(self, sender: _Sender) -> None:
        while not sender.closed:
            if not sender.queue:
                if sender.final:  # nothing more will come: no idle task per finished task
                    sender.task = None
                    return
                sender.wake.clear()
                await sender.wake.wait()
                continue
            await sender.destination.acquire(
                sender.owner
            )  # a turn first: what waits stays in the queue
            if sender.closed or not sender.queue:
                sender.destination.release()
                continue
            body = sender.unqueue()
            sender.sending = True
            try:
                ok = await self._post(sender, body.data)
            finally:
                sender.sending = False
                self.queued_bytes -= sender.destination.let_go(body)
            if ok:
                self.delivered += 1
            else:
                self.failed += 1

    async def _post(self, sender: _Sender, body: bytes) -> bool:
        """One notification, retried after ``retry_delays``; True once the webhook took it. Called
        holding a slot of the destination; gives it up while it waits to retry, and at the end."""
        destination = sender.destination
        held = True
        try:
            for attempt, delay in enumerate((0.0, *self.retry_delays)):
                if delay:  # a retry waits without the slot, then takes its turn again
                    destination.release()
                    held = False
                    await asyncio.sleep(delay)
                    await destination.acquire(sender.owner)
                    held = True
                outcome = await self._attempt(sender.config, body, attempt)
                if outcome is not None:
                    return outcome
            return False
        finally:
            if held:
                destination.release()

    async def _attempt(self, config: PushConfig, body: bytes, attempt: int) -> bool | None:
        """One POST: True taken, False refused for good (not to be retried), None to retry."""
        if self._http is None:
            self._http = (
                httpx.AsyncClient(  # its own 5 s timeouts off: ``timeout`` bounds each POST whole
                    follow_redirects=False,
                    trust_env=False,
                    timeout=None,
                    limits=httpx.Limits(max_connections=1024, max_keepalive_connections=64),
                )
            )
        headers = config.headers()
        if self.signer is not None:  # made per POST: a retry is a delivery of its own
            headers[PUSH_HEADER] = self.signer.push_token(
                issuer=self.issuer(), audience=config.url, task_id=config.task_id, body=body
            )
        where = await pinned(
            config.url, self._bound(), private_ok=self.private_ok, timeout=self.timeout
        )
        if isinstance(where, str):
            log.warning("push %s for task %s not sent: %s", config.id, config.task_id, where)
            self._record(config, time.perf_counter(), headers, body, error=f"refused: {where}")
            return False
        target, host_header, extensions = where
        started = time.perf_counter()
        status, answer, error = await self._exchange(
            self._http, target, {**headers, **host_header}, extensions, body
        )
        self._record(config, started, headers, body, status, answer, error)
        if status is not None and 200 <= status < 300:
            return True
        if status is not None and status not in (408, 429) and status < 500:
            log.warning(
                "push %s for task %s refused by %s: HTTP %s",
                config.id,
                config.task_id,
                config.url,
                status,
            )
            return False  # the webhook said no: asking again gets the same answer
        log.info(
            "push %s for task %s, attempt %d: %s",
            config.id,
            config.task_id,
            attempt + 1,
            error or f"HTTP {status}",
        )
        return None

    async def _exchange(
        self,
        http: httpx.AsyncClient,
        target: str,
        headers: dict[str, str],
        extensions: dict[str, Any],
        body: bytes,
    ) -> tuple[int | None, bytes, str | None]:
        """One POST to the pinned ``target``, bounded in time: its status, the start of its
        answer (``ANSWER_KEPT`` bytes), or why there was none."""
        status, answer, error = None, b"", None
        sending = _Once(body)
        try:
            async with asyncio.timeout(self.timeout):
                async with http.stream(
                    "POST",
                    target,
                    content=sending,
                    headers={**headers, "content-length": str(len(body))},
                    extensions=extensions,
                ) as r:
                    status = r.status_code
                    async for chunk in r.aiter_bytes():  # what a webhook answers is read, bounded
                        answer += chunk
                        if len(answer) >= ANSWER_KEPT:
                            break
                answer = answer[:ANSWER_KEPT]
        except TimeoutError:
            error = f"no answer within {self.timeout:g}s"
        except (httpx.HTTPError, OSError) as exc:
            error = why_text(exc)
        finally:
            sending.data = b""
        return status, answer, error

    def _record(
        self,
        config: PushConfig,
        started: float,
        headers: dict[str, str],
        body: bytes,
        status: int | None = None,
        answer: bytes = b"",
        error: str | None = None,
    ) -> None:
        """A push POST on the wire log, when there is one."""
        if self.traffic is not None:
            url = config.url
            self.traffic.sent(
                "POST",
                url,
                started,
                headers,
                body,
                (status, answer),
                error=error,
                rpc_method="push",
                task_id=config.task_id,
                server=self.server,
                peer=url,
            )

    def _close(self, sender: _Sender) -> None:
        sender.closed = True
        sender.wake.set()
        destination = sender.destination
        while sender.queue:
            self.queued_bytes -= destination.let_go(sender.unqueue())
        destination.senders.discard(sender)
        if not destination.senders and self._destinations.get(destination.key) is destination:
            del self._destinations[destination.key]

    async def close(self, grace: float = 1.0) -> None:
        """Stop delivering, after up to ``grace`` seconds for what is queued (a stop's last states)."""
        await self.drain(grace)
        senders = [s for configs in self._configs.values() for s in configs.values()]
        for sender in senders:
            self._close(sender)
        tasks = [s.task for s in senders if s.task is not None and not s.task.done()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    async def drain(self, timeout: float = 10.0) -> bool:
        """Wait until no notification is queued or being sent; False if ``timeout`` passed first."""
        deadline = time.monotonic() + timeout
        while any(
            s.queue or s.sending for configs in self._configs.values() for s in configs.values()
        ):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True
