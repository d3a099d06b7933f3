"""A task's push-notification configs, as :class:`~toolnexus.client.peer.A2AClient` asks a peer
for them (:class:`PushCalls`): set, got, listed (page after page, bounded), deleted."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from ..errors import PeerError, RPCError, TaskNotFoundError
from ..protocol.dialects import Dialect
from ..protocol.push import TOKEN_HEADER, PushConfig, parse_push_config, render_push_config
from .connection import Connection

__all__ = ["PushCalls", "MAX_PAGES"]

MAX_PAGES = 100
"""Pages of a list the client follows before it calls the peer's paging endless."""


class PushCalls(Connection):
    """The push-notification configs of a task the peer holds."""

    async def set_push(
        self,
        task_id: str,
        url: str | PushConfig,
        *,
        token: str | None = None,
        scheme: str | None = None,
        credentials: str | None = None,
        config_id: str | None = None,
    ) -> PushConfig:
        """Ask the peer to POST every change of ``task_id`` to ``url`` (or a ready config, such as
        ``WebhookReceiver.target()``); returns the config as the peer keeps it."""
        await self.connect()
        dialect = self.transport.shapes
        if isinstance(url, PushConfig):
            config = replace(url, task_id=task_id, dialect=dialect)
        else:
            config = PushConfig(task_id, url, config_id or "", token, scheme, credentials, dialect)
        if config.token:
            self.traffic.secret(
                TOKEN_HEADER, config.token
            )  # the token is a secret on the wire log too
        if config.credentials:
            self.traffic.secret("authorization", config.credentials)
        result = await self._call("push-set", render_push_config(config, dialect))
        return self._push_config(result, task_id, dialect)

    async def get_push(self, task_id: str, config_id: str | None = None) -> PushConfig:
        """A push-notification config of ``task_id`` (its first when no id is given)."""
        await self.connect()
        dialect = self.transport.shapes
        if (
            not config_id and self.transport.push_get_needs_id
        ):  # its route or request names one: the first listed
            configs = await self.list_push(task_id)
            if not configs:
                raise TaskNotFoundError(f"task {task_id} has no push notification config")
            return configs[0]
        if dialect is Dialect.V10:
            params: dict[str, Any] = {"taskId": task_id, **({"id": config_id} if config_id else {})}
        else:
            params = {
                "id": task_id,
                **({"pushNotificationConfigId": config_id} if config_id else {}),
            }
        return self._push_config(await self._call("push-get", params), task_id, dialect)

    async def list_push(self, task_id: str, page_size: int | None = None) -> list[PushConfig]:
        """Every push-notification config of a task: each page the peer gives (``page_size`` at
        a time, when given), followed up to ``MAX_PAGES`` pages."""
        await self.connect()
        dialect = self.transport.shapes
        params: dict[str, Any] = {"taskId": task_id} if dialect is Dialect.V10 else {"id": task_id}
        if page_size is not None and dialect is Dialect.V10:
            params["pageSize"] = page_size
        configs: list[PushConfig] = []
        for _ in range(MAX_PAGES):
            result = await self._call("push-list", params)
            items = result.get("configs") if isinstance(result, dict) else result
            if items is None:
                items = []
            if not isinstance(items, list):
                raise PeerError(f"{self.peer}: its list of push notification configs is not a list")
            configs += [self._push_config(c, task_id, dialect) for c in items]
            token = result.get("nextPageToken") if isinstance(result, dict) else None
            if not token or not isinstance(token, str) or token == params.get("pageToken"):
                return configs
            params["pageToken"] = token
        raise PeerError(f"{self.peer}: its push notification configs go on past {MAX_PAGES} pages")

    async def delete_push(self, task_id: str, config_id: str) -> None:
        await self.connect()
        dialect = self.transport.shapes
        await self._call(
            "push-delete",
            {"taskId": task_id, "id": config_id}
            if dialect is Dialect.V10
            else {"id": task_id, "pushNotificationConfigId": config_id},
            empty_ok=True,
        )

    def _push_config(self, result: Any, task_id: str, dialect: Dialect) -> PushConfig:
        try:
            config = parse_push_config(result, dialect, "result")
        except RPCError as exc:
            raise PeerError(
                f"{self.peer}: the push notification config it answered is not one: {exc.message}"
            ) from None
        config.task_id = config.task_id or task_id
        return config
