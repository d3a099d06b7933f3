"""The HTTP+JSON (REST) binding of A2A 1.0 (§11), the one table both sides read.

Each operation is an HTTP method and a path relative to the interface URL; what JSON-RPC carries
in ``params`` travels in the path (``{id}``, ``{configId}``), the query (GET, DELETE) or the body
(POST), in the same 1.0 shapes; a success is the JSON-RPC ``result`` as the whole body, a failure
is a ``google.rpc.Status`` (``{"error": {"code", "status", "message", "details"}}``) with the HTTP
status of §5.4; streams are SSE whose ``data`` is a ``StreamResponse`` with no envelope.

A2A 0.3's REST routes are the same under ``/v1/`` (``/v1/card`` for the extended card), in 0.3's
proto-JSON (``content`` for a message's parts, ``file``/``data`` parts, ``TASK_STATE_CANCELLED``,
``blocking``, push configs named ``tasks/{id}/pushNotificationConfigs/{configId}``):
:func:`v03_params` and :func:`v03_result` convert from and to the 1.0 shapes.
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse
from typing import Any

from .._json import is_array, is_object
from ..errors import (
    RPC_ERRORS,
    RPC_REASONS,
    InternalError,
    InvalidParamsError,
    InvalidRequestError,
    MethodNotFoundError,
    RPCError,
    UnsupportedOperationError,
)
from .operations import OPERATIONS, Operation

__all__ = [
    "ROUTES",
    "TENANT_PREFIX",
    "is_tenant",
    "MEDIA_TYPE",
    "request_for",
    "match",
    "params_from",
    "error_body",
    "refusal_body",
    "parse_error",
    "v03_params",
    "v03_result",
    "v03_error_body",
    "v03_request",
    "v03_answer",
    "type_name",
    "ERRORS_BY_TYPE",
]

MEDIA_TYPE = "application/a2a+json"

_INTS = frozenset({"historyLength", "pageSize"})
_BOOLS = frozenset({"includeArtifacts"})


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{\w+\})", template)
    return re.compile(
        "^"
        + "".join(f"(?P<{p[1:-1]}>[^/]+?)" if p.startswith("{") else re.escape(p) for p in parts)
        + "$"
    )


TENANT_PREFIX = "/{tenant}"
"""What 1.0's routes are also served under (§8.3.2, §11): the tenant as the path's first segment."""
V03_SEGMENT = "v1"
"""The first segment of 0.3's routes: never a tenant (a route 0.3 lacks, ``/v1/tasks``, is none)."""


def is_tenant(path_params: dict[str, str]) -> bool:
    """Whether a route's path params name no tenant, or one that may be (not 0.3's ``v1``)."""
    return path_params.get("tenant") != V03_SEGMENT


_PLAIN: list[tuple[str, str, Operation, bool]] = [
    (op.verb, op.route, op, False) for op in OPERATIONS.values()
] + [("GET", op.route, op, False) for op in OPERATIONS.values() if op.also_get]

ROUTES: list[tuple[str, str, Operation, bool]] = sorted(
    _PLAIN
    + [(op.verb, op.v03_route, op, True) for op in OPERATIONS.values() if op.v03_route]
    + [
        ("GET", op.v03_route, op, True)
        for op in OPERATIONS.values()
        if op.also_get and op.v03_route
    ]
    + [(verb, TENANT_PREFIX + route, op, False) for verb, route, op, _ in _PLAIN],
    key=lambda row: ":" not in row[1],
)
"""Every route served and recognised: ``(HTTP method, path template, operation, 0.3's)``, from
the table of operations; the ``/tasks/{id}:verb`` ones first, as ``/tasks/{id}`` would take them
otherwise, and 1.0's under a tenant after the others (``/v1/tasks/{id}`` is 0.3's, not tenant
``v1``'s)."""
_MATCHERS = [(m, _pattern(t), op) for m, t, op, _ in ROUTES]


def match(method: str, path: str) -> tuple[str, dict[str, str]] | None:
    """``(operation key, path params)`` of a request relative to the interface URL, or None."""
    for want, pattern, op in _MATCHERS:
        if want == method:
            found = pattern.match(path)
            if found and is_tenant(found.groupdict()):
                return op.key, {k: urllib.parse.unquote(v) for k, v in found.groupdict().items()}
    return None


def request_for(
    op: Operation, params: dict[str, Any], v03: bool = False
) -> tuple[str, str, dict[str, Any] | None]:
    """``(HTTP method, path with its query, JSON body or None)`` of an operation whose 1.0
    JSON-RPC ``params`` are given: path fields are taken out of them, GETs and DELETEs put the
    rest in the query (``v03``: 0.3's route and body)."""
    method, template = op.verb, op.route
    if v03:
        if op.v03_route is None:
            raise UnsupportedOperationError(f"A2A 0.3's HTTP+JSON binding has no {op.v10}")
        template = op.v03_route
    rest = dict(params)
    tenant = rest.pop("tenant", None)
    if tenant and not v03:  # 1.0 puts it in the path (§11), never in the body or the query
        template = TENANT_PREFIX + template
        rest["tenant"] = tenant
    names = re.findall(r"\{(\w+)\}", template)
    path = template
    for name in names:
        value = rest.pop(name, None)
        if not isinstance(value, str) or not value:
            raise InvalidParamsError(f"Invalid params: {name} must be a non-empty string")
        path = path.replace("{" + name + "}", urllib.parse.quote(value, safe=""))
    if method in ("GET", "DELETE"):
        query = {k: _query_text(v) for k, v in rest.items() if v is not None}
        return method, path + ("?" + urllib.parse.urlencode(query) if query else ""), None
    return (
        method,
        path,
        v03_request(
            op.key, {**rest, **({"taskId": params["taskId"]} if "taskId" in params else {})}
        )
        if v03
        else rest,
    )


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def params_from(
    op: str, path_params: dict[str, str], query: dict[str, str], body: Any
) -> dict[str, Any]:
    """The 1.0 JSON-RPC ``params`` of a REST request: its body (an object, for POSTs that carry
    one), its query (numbers and booleans parsed, as §11.5 writes them) and its path fields."""
    if body is None:
        params: dict[str, Any] = {}
    elif is_object(body):
        params = dict(body)
    else:
        raise InvalidParamsError("Invalid params: the body must be a JSON object")
    for key, text in query.items():
        if key in _INTS:
            try:
                params[key] = int(text)
            except ValueError:
                raise InvalidParamsError(
                    f"Invalid params: {key} must be an integer, got {text!r}"
                ) from None
        elif key in _BOOLS:
            if text not in ("true", "false"):
                raise InvalidParamsError(
                    f"Invalid params: {key} must be true or false, got {text!r}"
                )
            params[key] = text == "true"
        else:
            params[key] = text
    params.update(path_params)
    return params


def error_body(err: RPCError) -> dict[str, Any]:
    """A failure as §11.6 writes it: ``google.rpc.Status`` with the A2A reason in an ErrorInfo."""
    return {
        "error": {
            "code": err.http_status,
            "status": err.grpc_status,
            "message": err.message,
            "details": [err.error_info()],
        }
    }


def v03_error_body(err: RPCError) -> dict[str, Any]:
    """A failure on 0.3's routes: the Status of :func:`error_body`, plus the ``type`` (the error's
    class name) and ``message`` the 0.3-era REST clients (the 1.x SDK's compat one) read."""
    return {**error_body(err), "type": type_name(err.reason), "message": err.message}


def type_name(reason: str) -> str:
    """The 1.x SDK's class name for an A2A reason (``TASK_NOT_FOUND`` -> ``TaskNotFoundError``)."""
    return (
        "JSONParseError"
        if reason == "PARSE_ERROR"
        else "".join(w.capitalize() for w in reason.split("_")) + "Error"
    )


ERRORS_BY_TYPE: dict[str, type[RPCError]] = {type_name(c.reason): c for c in RPC_ERRORS.values()}
"""Every A2A error by the class name 0.3-era peers give it (``TaskNotFoundError``)."""


def refusal_body(status: int, message: str) -> dict[str, Any]:
    """A refusal before any operation (401, 403, 413, 415 ...) in the same Status shape."""
    names = {
        401: "UNAUTHENTICATED",
        403: "PERMISSION_DENIED",
        404: "NOT_FOUND",
        405: "UNIMPLEMENTED",
        413: "INVALID_ARGUMENT",
        415: "INVALID_ARGUMENT",
    }
    return {
        "error": {
            "code": status,
            "status": names.get(status, "INVALID_ARGUMENT"),
            "message": message,
        }
    }


def parse_error(status: int, data: Any, mask: Any = str) -> RPCError | None:
    """The error a REST answer carries, as the RPCError of its reason (or, without one, of its
    HTTP status): 1.0's ``{"error": {...}}``, or on a failed status the 0.3-era forms peers send,
    ``{"type": "TaskNotFoundError", "message"}`` and ``{"code": -32001, "message"}`` (the JS SDK's
    0.3 routes). None when ``data`` is not an error, or is a 401/403 without an A2A reason (a
    refused credential, which the client reports as such)."""
    error = data.get("error") if is_object(data) else None
    if not is_object(error) and is_object(data) and status >= 400:
        cls = ERRORS_BY_TYPE.get(kind) if isinstance(kind := data.get("type"), str) else None
        if (
            cls is None
            and isinstance(data.get("code"), int)
            and not isinstance(data.get("code"), bool)
        ):
            cls = RPC_ERRORS.get(data["code"])
        if cls is not None:
            message = data.get("message")
            return cls(mask(message) if isinstance(message, str) and message else f"HTTP {status}")
    if not is_object(error):
        return None
    reason = None
    for detail in error.get("details") or ():
        if is_object(detail) and isinstance(detail.get("reason"), str):
            reason = detail["reason"]
            break
    cls = RPC_REASONS.get(reason or "")
    if cls is None and status in (
        401,
        403,
    ):  # a refused credential, not an A2A error: the caller says so
        return None
    if cls is None:  # no A2A reason: what its HTTP status says
        cls = (
            InternalError
            if status >= 500
            else MethodNotFoundError
            if status in (404, 405)
            else InvalidRequestError
        )
    message = error.get("message")
    return cls(mask(message) if isinstance(message, str) and message else f"HTTP {status}")


# -- A2A 0.3's REST routes (under /v1/): 0.3's proto-JSON, converted from and to the 1.0 shapes -------

_STATES_V03 = {"TASK_STATE_CANCELED": "TASK_STATE_CANCELLED"}
_STATES_V10 = {v: k for k, v in _STATES_V03.items()}
_FINAL = frozenset(
    {
        "TASK_STATE_COMPLETED",
        "TASK_STATE_FAILED",
        "TASK_STATE_CANCELED",
        "TASK_STATE_REJECTED",
        "TASK_STATE_INPUT_REQUIRED",
        "TASK_STATE_AUTH_REQUIRED",
    }
)


def _some(**fields: Any) -> dict[str, Any]:
    return {k: v for k, v in fields.items() if v is not None}


def _objects(items: Any) -> list[dict[str, Any]]:
    if items is None:
        return []
    if not is_array(items) or not all(is_object(i) for i in items):
        raise InvalidParamsError("Invalid params: expected a list of objects")
    return items


def _part_v03(part: dict[str, Any]) -> dict[str, Any]:
    meta = _some(metadata=part.get("metadata"))
    if "text" in part:
        return {"text": part["text"], **meta}
    if "data" in part:
        data = part["data"]
        return {"data": {"data": data if is_object(data) else {"value": data}}, **meta}
    file = _some(mimeType=part.get("mediaType"), name=part.get("filename"))
    if "raw" in part:  # the base64 text in the proto's bytes: as the official SDK writes it
        raw = part["raw"]
        file["fileWithBytes"] = base64.b64encode(str(raw).encode("ascii", "replace")).decode()
    else:
        file["fileWithUri"] = part.get("url", "")
    return {"file": file, **meta}


def _part_v10(part: dict[str, Any]) -> dict[str, Any]:
    meta = _some(metadata=part.get("metadata"))
    if "text" in part:
        return {"text": part["text"], **meta}
    if "data" in part:
        data = part["data"]
        return {"data": data.get("data", {}) if is_object(data) else data, **meta}
    file = part.get("file")
    if not is_object(file):
        raise InvalidParamsError("Invalid params: a part must have text, file or data")
    out = _some(mediaType=file.get("mimeType"), filename=file.get("name"), **meta)
    if "fileWithBytes" in file:
        out["raw"] = _inner_base64(file["fileWithBytes"])
    else:
        out["url"] = file.get("fileWithUri", "")
    return out


_BASE64 = re.compile(rb"(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?")


def _inner_base64(value: Any) -> Any:
    """A 0.3 ``fileWithBytes`` as the part's base64: the official SDK (its 0.3 line and the 1.x
    compat transports) puts the base64 *text* in the proto's bytes field, so its JSON holds the
    file encoded twice; a peer that puts the file's bytes there (as the proto means) sends it
    once. Decoded once, the SDK's form is base64 text again (and that is the file); anything else
    was the file itself."""
    if not isinstance(value, str):
        return value
    try:
        once = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return value  # not base64: refused where the part is parsed
    return once.decode("ascii") if once and _BASE64.fullmatch(once) else value


def _message_v03(m: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in m.items() if k not in ("parts", "referenceTaskIds")}
    out["content"] = [_part_v03(p) for p in _objects(m.get("parts"))]
    return out


def _message_v10(m: Any) -> dict[str, Any]:
    if not is_object(m):
        raise InvalidParamsError("Invalid params: message must be an object")
    out = {k: v for k, v in m.items() if k != "content"}
    out["parts"] = [_part_v10(p) for p in _objects(m.get("content"))]
    return out


def _status(status: dict[str, Any], to_v03: bool) -> dict[str, Any]:
    states = _STATES_V03 if to_v03 else _STATES_V10
    state = status.get("state")
    out = {**status, "state": states.get(state, state) if isinstance(state, str) else state}
    if is_object(status.get("message")):
        out["message"] = (_message_v03 if to_v03 else _message_v10)(status["message"])
    return out


def _artifact(a: Any, to_v03: bool) -> Any:
    if not is_object(a):  # a peer's odd shape: left for the parser to refuse
        return a
    return {
        **a,
        "parts": [(_part_v03 if to_v03 else _part_v10)(p) for p in _objects(a.get("parts"))],
    }


def _task(t: Any, to_v03: bool) -> Any:
    if not is_object(t):
        return t
    out = dict(t)
    if is_object(t.get("status")):
        out["status"] = _status(t["status"], to_v03)
    if "artifacts" in t:
        out["artifacts"] = [_artifact(a, to_v03) for a in _objects(t["artifacts"])]
    if "history" in t:
        out["history"] = [
            (_message_v03 if to_v03 else _message_v10)(m) for m in _objects(t["history"])
        ]
    return out


def _event(frame: Any, to_v03: bool) -> Any:
    """A send result or a stream frame (``{task}``, ``{message}``, ``{statusUpdate}``,
    ``{artifactUpdate}``) from 1.0 to 0.3 (``to_v03``) or back; 0.3's status updates carry ``final``."""
    if not is_object(frame):
        return frame
    if is_object(frame.get("task")):
        return {"task": _task(frame["task"], to_v03)}
    if is_object(frame.get("message")):
        return {"message": (_message_v03 if to_v03 else _message_v10)(frame["message"])}
    if is_object(frame.get("statusUpdate")):
        update = {k: v for k, v in frame["statusUpdate"].items() if k != "final"}
        status: Any = update.get("status")
        if to_v03:
            status = status or {}
            update["final"] = status.get("state") in _FINAL
        if is_object(status):
            update["status"] = _status(status, to_v03)
        return {"statusUpdate": update}
    if is_object(frame.get("artifactUpdate")):
        update = frame["artifactUpdate"]
        return {
            "artifactUpdate": {
                **update,
                "artifact": _artifact(update.get("artifact") or {}, to_v03),
            }
        }
    return frame


def _push_v03(c: dict[str, Any]) -> dict[str, Any]:
    auth = c.get("authentication")
    inner = _some(
        id=c.get("id"),
        url=c.get("url"),
        token=c.get("token"),
        authentication=_some(
            schemes=[auth["scheme"]] if auth.get("scheme") else None,
            credentials=auth.get("credentials"),
        )
        if is_object(auth)
        else None,
    )
    return {
        "name": f"tasks/{c.get('taskId', '')}/pushNotificationConfigs/{c.get('id', '')}",
        "pushNotificationConfig": inner,
    }


def _push_v10(body: Any, task_id: str) -> dict[str, Any]:
    """A 0.3 push config in 1.0's shape: the config itself (``{name, pushNotificationConfig}``, as
    the JS SDK sends it), or the Create request around it (``{parent, configId, config}``, as the
    1.x SDK's compat client does), or the bare ``PushNotificationConfig``."""
    if is_object(body) and is_object(body.get("config")):
        body = body["config"]
    if not is_object(body):
        raise InvalidParamsError("Invalid params: the push notification config must be an object")
    inner = body.get("pushNotificationConfig", body)
    if not is_object(inner):
        raise InvalidParamsError("Invalid params: pushNotificationConfig must be an object")
    auth = inner.get("authentication")
    schemes = auth.get("schemes") if is_object(auth) else None
    return _some(
        taskId=task_id,
        id=inner.get("id"),
        url=inner.get("url"),
        token=inner.get("token"),
        authentication=_some(
            scheme=schemes[0] if is_array(schemes) and schemes else None,
            credentials=auth.get("credentials"),
        )
        if is_object(auth)
        else None,
    )


_RENAMED = {
    "request": "message",
    "update": "message",
    "msg": "message",
}  # 0.3 proto names whose JSON name differs


def _json_names(value: Any, key: str = "") -> Any:
    """Proto-JSON as a parser reads it: field names (``message_id``, ``request``) as their JSON
    names (``messageId``, ``message``); ``metadata`` and a data part's ``data`` are free-form."""
    if key == "metadata":
        return value
    if is_array(value):
        return [_json_names(v, key) for v in value]
    if not is_object(value):
        return value
    if key == "data" and set(value) == {"data"}:  # a DataPart: its Struct stays as it is
        return value
    out: dict[str, Any] = {}
    for k, v in value.items():
        name = _RENAMED.get(k) or re.sub(r"_([a-z])", lambda m: m.group(1).upper(), k)
        out[name] = _json_names(v, name)
    return out


def v03_params(op: str, params: dict[str, Any]) -> dict[str, Any]:
    """The 1.0 params of a 0.3 REST request (:func:`params_from` of a ``/v1/`` route); its body
    may use the proto field names (``message_id``, ``request``), as the 1.x SDK's compat client does."""
    params = _json_names(params)
    if op in ("send", "stream"):
        out: dict[str, Any] = {
            k: v for k, v in params.items() if k not in ("message", "configuration")
        }
        out["message"] = _message_v10(params.get("message"))
        config = params.get("configuration")
        if config is not None:
            if not is_object(config):
                raise InvalidParamsError("Invalid params: configuration must be an object")
            blocking = config.get("blocking", False)
            if not isinstance(blocking, bool):
                raise InvalidParamsError("Invalid params: configuration.blocking must be a boolean")
            push = config.get("pushNotification")
            out["configuration"] = _some(
                acceptedOutputModes=config.get("acceptedOutputModes"),
                historyLength=config.get("historyLength"),
                returnImmediately=not blocking,
                taskPushNotificationConfig=None if push is None else _push_v10(push, ""),
            )
        else:
            out["configuration"] = {"returnImmediately": True}  # proto3: blocking absent is false
        return out
    if op == "push-set":
        return _push_v10(params, str(params.get("taskId", "")))
    return params


def _named_push(body: Any) -> dict[str, Any]:
    """A 0.3 config ``{name: tasks/{id}/pushNotificationConfigs/{configId}, pushNotificationConfig}`` in 1.0's shape."""
    name = body.get("name") if is_object(body) else None
    parts = name.split("/") if isinstance(name, str) else []
    return _push_v10(body, parts[1] if len(parts) >= 2 and parts[0] == "tasks" else "")


def v03_request(op: str, params: dict[str, Any]) -> dict[str, Any]:
    """1.0 params (what the client builds for any binding) as a 0.3 REST body."""
    if op in ("send", "stream"):
        config: dict[str, Any] = params.get("configuration") or {}
        push = config.get("taskPushNotificationConfig")
        body = {
            "message": _message_v03(params["message"]),
            "configuration": _some(
                acceptedOutputModes=config.get("acceptedOutputModes"),
                historyLength=config.get("historyLength"),
                blocking=not config.get("returnImmediately", False),
                pushNotification=None
                if push is None
                else _push_v03(push)["pushNotificationConfig"],
            ),
        }
        return {**body, **_some(metadata=params.get("metadata"))}
    if (
        op == "push-set"
    ):  # both forms at once: the 1.x SDK reads the Create request, the JS SDK the config
        config = _push_v03(params)
        return {
            **config,
            "parent": f"tasks/{params.get('taskId', '')}",
            "configId": config["pushNotificationConfig"].get("id", ""),
            "config": config,
        }
    return params


def v03_answer(op: str, data: Any) -> Any:
    """A 0.3 REST answer (or stream frame) in the 1.0 shapes the client parses."""
    if op in ("send", "stream", "resubscribe"):
        return _event(data, False)
    if op in ("get", "cancel"):
        return _task(data, False)
    if op in ("push-set", "push-get"):
        return _named_push(data)
    if op == "push-list":
        items = data.get("configs", []) if is_object(data) else data
        token = data.get("nextPageToken", "") if is_object(data) else ""
        return {"configs": [_named_push(c) for c in _objects(items)], "nextPageToken": token}
    return data


def v03_result(op: str, result: Any) -> Any:
    """A 1.0 result (or stream frame) as 0.3's REST routes answer it."""
    if op in ("send", "stream", "resubscribe"):
        return _event(result, True)
    if op in ("get", "cancel"):
        return _task(result, True)
    if op in ("push-set", "push-get"):
        return _push_v03(result)
    if op == "push-list":
        return {
            "configs": [_push_v03(c) for c in result.get("configs", [])],
            "nextPageToken": result.get("nextPageToken", ""),
        }
    return result
