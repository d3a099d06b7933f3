"""The A2A operations, each named once: the one table every binding and every transport reads.

A row says, for one operation, its JSON-RPC method in each dialect (1.0, 0.3, and whether the
toolnexus legacy dialect has it), its HTTP+JSON verb and route (1.0's, and 0.3's under ``/v1/``),
its gRPC request and response messages (the RPC is named as the 1.0 method; 0.3's gRPC service
has its own names and messages), whether its answer
is a stream, and whether its HTTP+JSON request carries a JSON body (``"required"``,
``"optional"``: a POST that may come empty, ``"none"``: a GET or DELETE).

What applies to every operation on every binding, in this order, before anything is decoded:
the Host/Origin guard (``http.guard``), auth (``A2AEndpoint.owner_of``: the caller's owner key),
the ``A2A-Version`` header, then, for a request that carries a body, its Content-Type and size
(``A2AEndpoint._read``) and, once parsed, its depth (JSON-RPC reads its envelope before the
version header: the method decides the dialect). Errors map to a JSON-RPC code, an HTTP status and a gRPC status in
one table: :mod:`toolnexus.errors`.

A new operation is a row here, its typed request and parser in :mod:`toolnexus.protocol.params`,
then a handler in ``TaskRunner``/``A2AEndpoint``; a new binding is an adapter on each side
(``serve/`` and ``client/transports.py``) that reads this table.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

__all__ = [
    "Binding",
    "Operation",
    "OPERATIONS",
    "V03_METHODS",
    "V10_METHODS",
    "LEGACY_METHODS",
    "BINDING_NAMES",
]


class Binding(str, enum.Enum):
    """A protocol binding, spelled as a card's ``protocolBinding``/``preferredTransport`` names it."""

    JSONRPC = "JSONRPC"
    HTTP_JSON = "HTTP+JSON"
    GRPC = "GRPC"

    def __str__(self) -> str:  # as the card spells it, in messages and f-strings too
        return self.value

    @classmethod
    def named(cls, value: object, default: Binding | None = None) -> Binding | None:
        """The binding a card's ``protocolBinding``/``transport`` field names (any case), else ``default``."""
        try:
            return cls(str(value).upper())
        except ValueError:
            return default


BINDING_NAMES: dict[str, Binding | None] = {
    "auto": None,
    "jsonrpc": Binding.JSONRPC,
    "json-rpc": Binding.JSONRPC,
    "http+json": Binding.HTTP_JSON,
    "rest": Binding.HTTP_JSON,
    "grpc": Binding.GRPC,
}
"""What a caller may pass as ``binding=`` (``A2AClient``, the CLI, the TUI), lower case."""


@dataclass(frozen=True, slots=True)
class Operation:
    key: str
    """The short name every table and handler uses (``"send"``, ``"push-get"``)."""
    v10: str
    """The 1.0 JSON-RPC method, which is also the gRPC RPC and what the wire log names it."""
    v03: str | None
    """The 0.3 JSON-RPC method (None: 0.3 has no such operation)."""
    legacy: bool
    """Whether the toolnexus legacy dialect (1.0 names, older shapes) has it."""
    verb: str
    """The HTTP+JSON method."""
    route: str
    """The HTTP+JSON path relative to the interface URL (``{id}`` and ``{taskId}`` are path fields)."""
    v03_route: str | None
    """0.3's HTTP+JSON path (under ``/v1/``), or None where 0.3's REST binding has none."""
    grpc_request: str
    """The request message of its RPC (``a2a.v1`` package)."""
    grpc_response: str
    """The response message (streamed when ``streams``)."""
    streams: bool
    body: Literal["required", "optional", "none"]
    """Whether an HTTP+JSON request carries a JSON body (always, maybe, never)."""
    also_get: bool = False
    """Also served on GET (without a body) on both REST route sets: the 1.x SDK serves
    ``SubscribeToTask`` that way."""
    aliases: tuple[str, ...] = ()
    """Other 1.0 method names that peers send for it."""
    v03_grpc: tuple[str, str, str] | None = None
    """0.3's gRPC RPC (``a2a.v1.A2AService``), its request and response messages (``a2a.v1``
    package of 0.3's proto, as the official SDK ships it in ``a2a.compat.v0_3``); None where 0.3
    has none."""


def _op(
    key: str,
    v10: str,
    v03: str | None,
    legacy: bool,
    verb: str,
    route: str,
    v03_route: str | None,
    grpc: tuple[str, str],
    streams: bool = False,
    body: Literal["required", "optional", "none"] = "none",
    also_get: bool = False,
    aliases: tuple[str, ...] = (),
    v03_grpc: tuple[str, str, str] | None = None,
) -> Operation:
    return Operation(
        key,
        v10,
        v03,
        legacy,
        verb,
        route,
        v03_route,
        grpc[0],
        grpc[1],
        streams,
        body,
        also_get,
        aliases,
        v03_grpc,
    )


_ROWS = (
    _op(
        "send",
        "SendMessage",
        "message/send",
        True,
        "POST",
        "/message:send",
        "/v1/message:send",
        ("SendMessageRequest", "SendMessageResponse"),
        body="required",
        v03_grpc=("SendMessage", "SendMessageRequest", "SendMessageResponse"),
    ),
    _op(
        "stream",
        "SendStreamingMessage",
        "message/stream",
        False,
        "POST",
        "/message:stream",
        "/v1/message:stream",
        ("SendMessageRequest", "StreamResponse"),
        streams=True,
        body="required",
        v03_grpc=("SendStreamingMessage", "SendMessageRequest", "StreamResponse"),
    ),
    _op(
        "get",
        "GetTask",
        "tasks/get",
        True,
        "GET",
        "/tasks/{id}",
        "/v1/tasks/{id}",
        ("GetTaskRequest", "Task"),
        v03_grpc=("GetTask", "GetTaskRequest", "Task"),
    ),
    _op(
        "list",
        "ListTasks",
        None,
        False,
        "GET",
        "/tasks",
        None,
        ("ListTasksRequest", "ListTasksResponse"),
    ),
    _op(
        "cancel",
        "CancelTask",
        "tasks/cancel",
        True,
        "POST",
        "/tasks/{id}:cancel",
        "/v1/tasks/{id}:cancel",
        ("CancelTaskRequest", "Task"),
        body="optional",
        v03_grpc=("CancelTask", "CancelTaskRequest", "Task"),
    ),
    _op(
        "resubscribe",
        "SubscribeToTask",
        "tasks/resubscribe",
        False,
        "POST",
        "/tasks/{id}:subscribe",
        "/v1/tasks/{id}:subscribe",
        ("SubscribeToTaskRequest", "StreamResponse"),
        streams=True,
        body="optional",
        also_get=True,
        v03_grpc=("TaskSubscription", "TaskSubscriptionRequest", "StreamResponse"),
    ),
    _op(
        "push-set",
        "CreateTaskPushNotificationConfig",
        "tasks/pushNotificationConfig/set",
        False,
        "POST",
        "/tasks/{taskId}/pushNotificationConfigs",
        "/v1/tasks/{taskId}/pushNotificationConfigs",
        ("TaskPushNotificationConfig", "TaskPushNotificationConfig"),
        body="required",
        v03_grpc=(
            "CreateTaskPushNotificationConfig",
            "CreateTaskPushNotificationConfigRequest",
            "TaskPushNotificationConfig",
        ),
    ),
    _op(
        "push-get",
        "GetTaskPushNotificationConfig",
        "tasks/pushNotificationConfig/get",
        False,
        "GET",
        "/tasks/{taskId}/pushNotificationConfigs/{id}",
        "/v1/tasks/{taskId}/pushNotificationConfigs/{id}",
        ("GetTaskPushNotificationConfigRequest", "TaskPushNotificationConfig"),
        v03_grpc=(
            "GetTaskPushNotificationConfig",
            "GetTaskPushNotificationConfigRequest",
            "TaskPushNotificationConfig",
        ),
    ),
    _op(
        "push-list",
        "ListTaskPushNotificationConfigs",
        "tasks/pushNotificationConfig/list",
        False,
        "GET",
        "/tasks/{taskId}/pushNotificationConfigs",
        "/v1/tasks/{taskId}/pushNotificationConfigs",
        ("ListTaskPushNotificationConfigsRequest", "ListTaskPushNotificationConfigsResponse"),
        aliases=("ListTaskPushNotificationConfig",),  # the singular: earlier 1.0 drafts' name
        v03_grpc=(
            "ListTaskPushNotificationConfig",
            "ListTaskPushNotificationConfigRequest",
            "ListTaskPushNotificationConfigResponse",
        ),
    ),
    _op(
        "push-delete",
        "DeleteTaskPushNotificationConfig",
        "tasks/pushNotificationConfig/delete",
        False,
        "DELETE",
        "/tasks/{taskId}/pushNotificationConfigs/{id}",
        None,  # a2a.proto 0.3 has no route for it
        ("DeleteTaskPushNotificationConfigRequest", "Empty"),
        v03_grpc=(
            "DeleteTaskPushNotificationConfig",
            "DeleteTaskPushNotificationConfigRequest",
            "Empty",
        ),
    ),
    _op(
        "extended",
        "GetExtendedAgentCard",
        "agent/getAuthenticatedExtendedCard",
        False,
        "GET",
        "/extendedAgentCard",
        "/v1/card",
        ("GetExtendedAgentCardRequest", "AgentCard"),
        v03_grpc=("GetAgentCard", "GetAgentCardRequest", "AgentCard"),
    ),
)

OPERATIONS: dict[str, Operation] = {row.key: row for row in _ROWS}
"""Every operation by its key, in the order above."""

V10_METHODS: dict[str, Operation] = {name: row for row in _ROWS for name in (row.v10, *row.aliases)}
"""Every 1.0 JSON-RPC method name (aliases included) to its operation."""
V03_METHODS: dict[str, Operation] = {row.v03: row for row in _ROWS if row.v03}
"""Every 0.3 JSON-RPC method name to its operation."""
LEGACY_METHODS: dict[str, Operation] = {row.v10: row for row in _ROWS if row.legacy}
"""What the toolnexus legacy dialect speaks (1.0 names)."""
