"""A served agent's push notifications: the configs callers set on their tasks, and delivery.

``TaskRunner.transition`` hands every change of a task that has a config to
:meth:`PushNotifier.notify`, which only queues it: each config has its own queue and its own
sender, so a slow or dead webhook delays its own notifications and nothing else (not the task,
not another webhook). Shapes per dialect and the URL rules are in ``toolnexus.protocol.push``.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import httpx

from .. import _json
from ..errors import InvalidParamsError, TaskNotFoundError
from ..http.fetch import why
from ..protocol.dialects import Dialect
from ..protocol.model import Artifact, Task, new_id
from ..protocol.push import (
    PushConfig,
    parse_push_config,
    payloads,
    render_push_config,
    webhook_refusal,
)
from ..traffic import TrafficRecorder

__all__ = ["PushNotifier", "MAX_PER_TASK", "MAX_TASKS", "QUEUE", "RETRY_DELAYS"]

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


class _Sender:
    """The queue and the delivering task of one config."""

    def __init__(self, config: PushConfig) -> None:
        self.config = config
        self.queue: collections.deque[bytes] = collections.deque(maxlen=QUEUE)
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self.sending = False
        self.closed = False
        self.final = False  # the task's last change is queued: the sender ends once it is sent


def _stored(config: PushConfig) -> dict[str, Any]:
    """A config as the shared store keeps it: its 1.0 shape, and the dialect it was set in."""
    return {"dialect": config.dialect.value, "config": render_push_config(config, Dialect.V10)}


def _config(data: Any) -> PushConfig | None:
    try:
        return replace(parse_push_config(data["config"], Dialect.V10), dialect=Dialect(data["dialect"]))
    except (KeyError, TypeError, ValueError, InvalidParamsError):
        return None


class PushNotifier:
    """Push-notification configs of one served agent's tasks (in memory), and their delivery.

    Args:
        bound: the agent's bound ``(host, port)``; webhooks pointing at it are refused.
        private_ok: allow webhooks on loopback and private addresses (False for an agent bound
            beyond loopback, unless its config says otherwise).
        traffic: where deliveries are recorded (the server's wire, when it records one).
        server: the served agent's name, on recorded deliveries.
    """

    def __init__(self, bound: Callable[[], tuple[str, int]], *, private_ok: bool = True,
                 traffic: TrafficRecorder | None = None, server: str = "",
                 retry_delays: tuple[float, ...] = RETRY_DELAYS, timeout: float = TIMEOUT) -> None:
        self._bound = bound
        self.private_ok = private_ok
        self.traffic = traffic
        self.server = server
        self.retry_delays = retry_delays
        self.timeout = timeout
        self._configs: collections.OrderedDict[str, dict[str, _Sender]] = collections.OrderedDict()
        self.shared: Any = None
        """A store shared by workers (PostgreSQL) that keeps the configs; None: in memory only."""
        self._loaded: dict[str, int] = {}  # task -> the shared store's count of its config changes, as loaded
        self._http: httpx.AsyncClient | None = None
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
            raise InvalidParamsError(f"Invalid params: task {config.task_id} already has {MAX_PER_TASK} "
                                     "push notification configs; delete one first")
        old = configs.get(config.id)
        if old is not None:
            self._close(old)
        configs[config.id] = _Sender(config)
        return config

    def get(self, task_id: str, config_id: str | None = None) -> PushConfig:
        """The config of ``task_id`` named ``config_id`` (None: its first)."""
        configs = self._configs.get(task_id) or {}
        sender = configs.get(config_id) if config_id else next(iter(configs.values()), None)
        if sender is None:
            raise TaskNotFoundError(f"Task {task_id} has no push notification config" +
                                    (f" {config_id}" if config_id else ""))
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
                held[config_id] = _Sender(config)
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
        """Queue this change of ``task`` for each of its webhooks (never waits)."""
        for sender in (self._configs.get(task.id) or {}).values():
            for payload in payloads(task, new_artifacts, sender.config.dialect):
                if len(sender.queue) == QUEUE:
                    self.failed += 1  # the oldest waiting one goes
                sender.queue.append(_json.dumps(payload))
            sender.final = task.state.terminal
            sender.wake.set()
            if sender.task is None:
                sender.task = asyncio.ensure_future(self._deliver(sender))

    async def _deliver(self, sender: _Sender) -> None:
        while not sender.closed:
            if not sender.queue:
                if sender.final:  # nothing more will come: no idle task per finished task
                    sender.task = None
                    return
                sender.wake.clear()
                await sender.wake.wait()
                continue
            body = sender.queue.popleft()
            sender.sending = True
            try:
                ok = await self._post(sender.config, body)
            finally:
                sender.sending = False
            if ok:
                self.delivered += 1
            else:
                self.failed += 1

    async def _post(self, config: PushConfig, body: bytes) -> bool:
        """One notification, retried after ``retry_delays``; True once the webhook took it."""
        if self._http is None:
            self._http = httpx.AsyncClient(follow_redirects=False, trust_env=False)
        headers = config.headers()
        for attempt, delay in enumerate((0.0, *self.retry_delays)):
            if delay:
                await asyncio.sleep(delay)
            try:  # checked again at each delivery: the agent's own address is known only once bound
                self.check(config.url)
            except InvalidParamsError as exc:
                log.warning("push %s for task %s not sent: %s", config.id, config.task_id, exc)
                return False
            started = time.perf_counter()
            status, answer, error = None, b"", None
            try:
                async with asyncio.timeout(self.timeout):
                    async with self._http.stream("POST", config.url, content=body, headers=headers) as r:
                        status = r.status_code
                        async for chunk in r.aiter_bytes():  # what a webhook answers is read, bounded
                            answer += chunk
                            if len(answer) >= ANSWER_KEPT:
                                break
                    answer = answer[:ANSWER_KEPT]
            except TimeoutError:
                error = f"no answer within {self.timeout:g}s"
            except (httpx.HTTPError, OSError) as exc:
                error = why(exc)
            if self.traffic is not None:
                self.traffic.record(direction="out", method="POST", url=config.url, status=status, started=started,
                                    request_headers=headers, request_body=body, response_body=answer,
                                    rpc_method="push", error=error, task_id=config.task_id, server=self.server,
                                    peer=config.url)
            if status is not None and 200 <= status < 300:
                return True
            if status is not None and status not in (408, 429) and status < 500:
                log.warning("push %s for task %s refused by %s: HTTP %s", config.id, config.task_id,
                            config.url, status)
                return False  # the webhook said no: asking again gets the same answer
            log.info("push %s for task %s, attempt %d: %s", config.id, config.task_id, attempt + 1,
                     error or f"HTTP {status}")
        return False

    def _close(self, sender: _Sender) -> None:
        sender.closed = True
        sender.wake.set()

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
        while any(s.queue or s.sending for configs in self._configs.values() for s in configs.values()):
            if time.monotonic() >= deadline:
                return False
            await asyncio.sleep(0.02)
        return True
