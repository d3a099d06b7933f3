"""An A2A operation's parameters, parsed once: the typed request each call becomes.

Every binding decodes a call into the params of its dialect (JSON-RPC: the envelope's ``params``;
HTTP+JSON: ``rest.params_from``, 0.3's routes through ``rest.v03_params``; gRPC: the request
message as 1.0 JSON, 0.3's through ``grpc_binding.v03_params``), and :func:`parse` makes them the
operation's request: an immutable value per operation (:class:`SendMessage`, :class:`GetTask`,
...) whose fields are typed and checked (ids by ``check_id``, a caller's metadata by its depth, 1.0's
proto field names read as JSON names). A fault is an ``InvalidParamsError`` that names the field,
the same on every binding and in every dialect. The endpoint and the runner take the request and
never read the params again; what depends on the agent (its tenants, skills, output modes,
whether it streams, pushes or has an extended card) they check on the typed value.

Each request is a ``NamedTuple``: immutable as a frozen dataclass is, at a third of the cost to
make. A frozen dataclass sets each field through ``object.__setattr__``: a ``SendMessage`` cost
10,000 more instructions that way, 1 % of a served blocking send (``bench/README.md``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, NamedTuple

from .._json import is_array, is_object
from ..errors import InvalidParamsError, MethodNotFoundError
from .dialects import Dialect, check_id, json_names, parse_message, parse_metadata, parse_state
from .model import Message, TaskState, iso_utc
from .operations import LEGACY_METHODS, Operation
from .push import PushConfig, parse_push_config

__all__ = [
    "SendMessage",
    "GetTask",
    "CancelTask",
    "SubscribeToTask",
    "ListTasks",
    "SetPushConfig",
    "GetPushConfig",
    "ListPushConfigs",
    "DeletePushConfig",
    "GetExtendedCard",
    "Request",
    "parse",
    "unversioned",
    "looks_v10",
]


class SendMessage(NamedTuple):
    """SendMessage and SendStreamingMessage (0.3's ``message/send``, ``message/stream``)."""

    message: Message
    metadata: dict[str, Any] | None = None
    """The request's own metadata (kept on the task), not the message's."""
    blocking: bool = False
    """Answered once the task settles (1.0: not ``returnImmediately``; 0.3: ``blocking``, which
    it defaults to; legacy: only when asked)."""
    history_length: int | None = None
    push: PushConfig | None = None
    """The configuration's push config (no task yet: the send makes or names it)."""
    skill: str | None = None
    """The skill the message's metadata asks for (whether the agent has it is the agent's to say)."""
    accepted: tuple[str, ...] | None = None
    """The media types the caller takes (``acceptedOutputModes``; None: any)."""
    tenant: str | None = None


class GetTask(NamedTuple):
    id: str
    history_length: int | None = None
    tenant: str | None = None


class CancelTask(NamedTuple):
    id: str
    tenant: str | None = None


class SubscribeToTask(NamedTuple):
    """SubscribeToTask (0.3's ``tasks/resubscribe``)."""

    id: str
    tenant: str | None = None


class ListTasks(NamedTuple):
    """ListTasks (1.0 only): a page of the caller's tasks."""

    context_id: str | None = None
    state: TaskState | None = None
    page_size: int = 50
    page_token: str = ""
    updated_after: str | None = None
    """``statusTimestampAfter``, in the stores' form (UTC, µs, Z)."""
    include_artifacts: bool = False
    history_length: int | None = None
    tenant: str | None = None


class SetPushConfig(NamedTuple):
    config: PushConfig
    """Its ``task_id`` is never empty."""
    tenant: str | None = None


class GetPushConfig(NamedTuple):
    task_id: str
    config_id: str | None = None
    """None: the task's first config."""
    tenant: str | None = None


class ListPushConfigs(NamedTuple):
    task_id: str
    page_size: int = 0
    """1.0's page (0: every config); 0.3's list is one array."""
    page_token: str = ""
    tenant: str | None = None


class DeletePushConfig(NamedTuple):
    task_id: str
    config_id: str
    tenant: str | None = None


class GetExtendedCard(NamedTuple):
    """GetExtendedAgentCard (0.3's ``agent/getAuthenticatedExtendedCard``)."""

    tenant: str | None = None


Request = (
    SendMessage
    | GetTask
    | CancelTask
    | SubscribeToTask
    | ListTasks
    | SetPushConfig
    | GetPushConfig
    | ListPushConfigs
    | DeletePushConfig
    | GetExtendedCard
)
"""What :func:`parse` makes of any operation's params."""


def parse(op: Operation, params: dict[str, Any], dialect: Dialect) -> Request:
    """``op``'s request from a call's ``params`` in ``dialect`` (any binding's, decoded).

    Raises:
        InvalidParamsError: a field is missing, of the wrong type, or not a value this agent can
            keep or answer with (the message names it).
        MethodNotFoundError: the message's metadata names a skill by something other than a name.
    """
    tenant = None
    if dialect is Dialect.V10:
        params = json_names(params)  # ProtoJSON: proto field names (task_id) as well as JSON names
        tenant = _optional_id(params, "tenant") or None
    return _PARSERS[op.key](params, dialect, tenant)


def unversioned(op: Operation, params: Mapping[str, Any]) -> Dialect:
    """The dialect of a call by a 1.0 method name that no ``A2A-Version`` header places: 1.0,
    but the toolnexus legacy dialect for the operations it has, unless a send's message is
    written in 1.0's shapes (``ROLE_*`` roles, parts without ``kind``)."""
    if op.v10 not in LEGACY_METHODS:
        return Dialect.V10
    if op.key == "send" and looks_v10(params.get("message")):
        return Dialect.V10
    return Dialect.LEGACY


def looks_v10(message: Any) -> bool:
    """Whether a message is written in 1.0's shapes (``ROLE_*`` roles, parts without ``kind``)."""
    if not is_object(message):
        return False
    if message.get("role") in ("ROLE_USER", "ROLE_AGENT"):
        return True
    parts = message.get("parts")
    return is_array(parts) and any(is_object(p) and "kind" not in p for p in parts)


# -- one parser per operation, by its key in the table of operations ---------------------------------


def _send(params: dict[str, Any], dialect: Dialect, tenant: str | None) -> SendMessage:
    message = parse_message(params.get("message"))
    metadata = parse_metadata(params.get("metadata"), "metadata")
    config: Any = params.get("configuration") or {}
    if not is_object(config):
        raise InvalidParamsError("configuration must be an object")
    history_length = _history_length(config)
    blocking = _blocking(config, dialect)
    given = config.get(
        "taskPushNotificationConfig" if dialect is Dialect.V10 else "pushNotificationConfig"
    )
    push = None
    if given is not None:
        push = parse_push_config(given, dialect, "configuration", task_id="")
    skill = (message.metadata or {}).get("skill")
    if skill is not None and not isinstance(skill, str):
        raise MethodNotFoundError("Method not found")  # as a skill the agent does not have
    return SendMessage(
        message, metadata, blocking, history_length, push, skill, _accepted(config), tenant
    )


def _get(params: dict[str, Any], dialect: Dialect, tenant: str | None) -> GetTask:
    return GetTask(_id(params), _history_length(params), tenant)


def _cancel(params: dict[str, Any], dialect: Dialect, tenant: str | None) -> CancelTask:
    return CancelTask(_id(params), tenant)


def _subscribe(params: dict[str, Any], dialect: Dialect, tenant: str | None) -> SubscribeToTask:
    return SubscribeToTask(_id(params), tenant)


def _list(params: dict[str, Any], dialect: Dialect, tenant: str | None) -> ListTasks:
    context = _optional_id(params, "contextId")
    state = None
    if params.get("status") not in (None, "", "TASK_STATE_UNSPECIFIED"):
        state = parse_state(params["status"])
        if state is None:
            raise InvalidParamsError(f"status {params['status']!r} is not a task state")
    size = params.get("pageSize")
    if size is None:
        size = 50
    if not _is_int(size) or not 1 <= size <= 100:
        raise InvalidParamsError(f"pageSize must be an integer from 1 to 100, got {size!r}")
    token = _text(params, "pageToken") or ""
    after = _timestamp(params, "statusTimestampAfter")
    include = params.get("includeArtifacts", False)
    if not isinstance(include, bool):
        raise InvalidParamsError("includeArtifacts must be a boolean")
    return ListTasks(context, state, size, token, after, include, _history_length(params), tenant)


def _push_set(params: dict[str, Any], dialect: Dialect, tenant: str | None) -> SetPushConfig:
    config = parse_push_config(params, dialect)
    if not config.task_id:
        raise InvalidParamsError("Invalid params: taskId is required")
    return SetPushConfig(config, tenant)


def _push_of(params: dict[str, Any], dialect: Dialect) -> tuple[str, str | None]:
    """The task (1.0 ``taskId``, 0.3 ``id``) and the config (1.0 ``id``, 0.3
    ``pushNotificationConfigId``) a get, list or delete of push configs names."""
    v10 = dialect is Dialect.V10
    task_id = _optional_id(params, "taskId" if v10 else "id")
    if not task_id:
        raise InvalidParamsError(
            f"Invalid params: {'taskId' if v10 else 'id'} must be a non-empty string"
        )
    return task_id, _optional_id(params, "id" if v10 else "pushNotificationConfigId")


def _push_get(params: dict[str, Any], dialect: Dialect, tenant: str | None) -> GetPushConfig:
    task_id, config_id = _push_of(params, dialect)
    return GetPushConfig(task_id, config_id or None, tenant)


def _push_list(params: dict[str, Any], dialect: Dialect, tenant: str | None) -> ListPushConfigs:
    task_id, _ = _push_of(params, dialect)
    if dialect is not Dialect.V10:  # 0.3's JSON-RPC list is one array
        return ListPushConfigs(task_id, tenant=tenant)
    size = params.get("pageSize") or 0
    if not _is_int(size) or not 0 <= size <= 100:
        raise InvalidParamsError(f"pageSize must be an integer from 1 to 100, got {size!r}")
    return ListPushConfigs(task_id, size, _text(params, "pageToken") or "", tenant)


def _push_delete(params: dict[str, Any], dialect: Dialect, tenant: str | None) -> DeletePushConfig:
    task_id, config_id = _push_of(params, dialect)
    if not config_id:
        raise InvalidParamsError(
            f"Invalid params: {'id' if dialect is Dialect.V10 else 'pushNotificationConfigId'} "
            "is required"
        )
    return DeletePushConfig(task_id, config_id, tenant)


def _extended(params: dict[str, Any], dialect: Dialect, tenant: str | None) -> GetExtendedCard:
    return GetExtendedCard(tenant)


_PARSERS: dict[str, Callable[[dict[str, Any], Dialect, str | None], Request]] = {
    "send": _send,
    "stream": _send,
    "get": _get,
    "cancel": _cancel,
    "resubscribe": _subscribe,
    "list": _list,
    "push-set": _push_set,
    "push-get": _push_get,
    "push-list": _push_list,
    "push-delete": _push_delete,
    "extended": _extended,
}
"""Every operation's parser, by its key in ``operations.OPERATIONS``."""


# -- fields ---------------------------------------------------------------------------------------


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _text(params: Mapping[str, Any], key: str) -> str | None:
    """``params[key]``: a string, or None when absent."""
    value = params.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidParamsError(f"{key} must be a string")
    return value


def _optional_id(params: Mapping[str, Any], key: str) -> str | None:
    """``params[key]``: an id (see ``check_id``), "" or None when absent."""
    value = _text(params, key)
    return check_id(value, key) if value else value


def _id(params: Mapping[str, Any]) -> str:
    value = params.get("id")
    if not isinstance(value, str) or not value:
        raise InvalidParamsError("Invalid params: id must be a non-empty string")
    return check_id(value, "id")


def _history_length(params: Mapping[str, Any]) -> int | None:
    value = params.get("historyLength")
    if value is None:
        return None
    if not _is_int(value) or value < 0:
        raise InvalidParamsError("historyLength must be a non-negative integer")
    return value


def _timestamp(params: Mapping[str, Any], key: str) -> str | None:
    """A protobuf Timestamp (RFC 3339, with Z or an offset), in the stores' form (UTC, µs, Z)."""
    value = _text(params, key)
    if value is None:
        return None
    try:
        stamp = datetime.fromisoformat(value)
    except ValueError:
        stamp = None
    if stamp is None or stamp.tzinfo is None or "T" not in value.upper():
        raise InvalidParamsError(
            f"{key} must be an RFC 3339 timestamp such as 2026-12-01T08:00:00Z, got {value!r}"
        )
    return iso_utc(stamp)


def _blocking(config: Mapping[str, Any], dialect: Dialect) -> bool:
    if dialect is Dialect.V10:
        flag = config.get("returnImmediately", False)
        if not isinstance(flag, bool):
            raise InvalidParamsError("configuration.returnImmediately must be a boolean")
        return not flag
    flag = config.get("blocking")
    if flag is not None and not isinstance(flag, bool):
        raise InvalidParamsError("configuration.blocking must be a boolean")
    if dialect is Dialect.V03:
        return True if flag is None else flag
    return bool(flag)  # legacy: never block unless asked


def _accepted(config: Mapping[str, Any]) -> tuple[str, ...] | None:
    """A send's ``acceptedOutputModes`` (None: any)."""
    given: Any = config.get("acceptedOutputModes")
    if given is None or given == []:
        return None
    if not is_array(given) or not all(isinstance(m, str) for m in given):
        raise InvalidParamsError(
            "Invalid params: configuration.acceptedOutputModes must be a list of strings"
        )
    return tuple(m for m in given if isinstance(m, str))
