"""The HTTP+JSON (REST) binding of A2A 1.0 (§11), the one table both sides read.

Each operation is an HTTP method and a path relative to the interface URL; what JSON-RPC carries
in ``params`` travels in the path (``{id}``, ``{configId}``), the query (GET, DELETE) or the body
(POST), in the same 1.0 shapes; a success is the JSON-RPC ``result`` as the whole body, a failure
is a ``google.rpc.Status`` (``{"error": {"code", "status", "message", "details"}}``) with the HTTP
status of §5.4; streams are SSE whose ``data`` is a ``StreamResponse`` with no envelope.
"""

from __future__ import annotations

import re
import urllib.parse
from typing import Any

from ..errors import RPC_REASONS, InternalError, InvalidParamsError, InvalidRequestError, MethodNotFoundError, RPCError

__all__ = ["OPERATIONS", "MEDIA_TYPE", "request_for", "match", "params_from", "error_body", "refusal_body",
           "parse_error", "operation_name"]

MEDIA_TYPE = "application/a2a+json"

# op: (HTTP method, path template, the 1.0 method name it stands for)
OPERATIONS: dict[str, tuple[str, str, str]] = {
    "send": ("POST", "/message:send", "SendMessage"),
    "stream": ("POST", "/message:stream", "SendStreamingMessage"),
    "get": ("GET", "/tasks/{id}", "GetTask"),
    "list": ("GET", "/tasks", "ListTasks"),
    "cancel": ("POST", "/tasks/{id}:cancel", "CancelTask"),
    "resubscribe": ("POST", "/tasks/{id}:subscribe", "SubscribeToTask"),
    "push-set": ("POST", "/tasks/{taskId}/pushNotificationConfigs", "CreateTaskPushNotificationConfig"),
    "push-get": ("GET", "/tasks/{taskId}/pushNotificationConfigs/{id}", "GetTaskPushNotificationConfig"),
    "push-list": ("GET", "/tasks/{taskId}/pushNotificationConfigs", "ListTaskPushNotificationConfigs"),
    "push-delete": ("DELETE", "/tasks/{taskId}/pushNotificationConfigs/{id}", "DeleteTaskPushNotificationConfig"),
    "extended": ("GET", "/extendedAgentCard", "GetExtendedAgentCard"),
}
_GET_SUBSCRIBE = ("GET", "/tasks/{id}:subscribe")  # the 1.x SDK serves it on GET as well
_INTS = frozenset({"historyLength", "pageSize"})
_BOOLS = frozenset({"includeArtifacts"})


def _pattern(template: str) -> re.Pattern[str]:
    parts = re.split(r"(\{\w+\})", template)
    return re.compile("^" + "".join(f"(?P<{p[1:-1]}>[^/]+?)" if p.startswith("{") else re.escape(p) for p in parts) + "$")


_MATCHERS = [(m, _pattern(t), op) for op, (m, t, _) in OPERATIONS.items()] + [
    (_GET_SUBSCRIBE[0], _pattern(_GET_SUBSCRIBE[1]), "resubscribe")]


def operation_name(op: str) -> str:
    """The 1.0 method an operation stands for (what the wire log names it)."""
    return OPERATIONS[op][2]


def match(method: str, path: str) -> tuple[str, dict[str, str]] | None:
    """``(op, path params)`` of a request relative to the interface URL, or None."""
    for want, pattern, op in _MATCHERS:
        if want == method:
            found = pattern.match(path)
            if found:
                return op, {k: urllib.parse.unquote(v) for k, v in found.groupdict().items()}
    return None


def request_for(op: str, params: dict[str, Any]) -> tuple[str, str, dict[str, Any] | None]:
    """``(HTTP method, path with its query, JSON body or None)`` of an operation whose 1.0
    JSON-RPC ``params`` are given: path fields are taken out of them, GETs and DELETEs put the
    rest in the query."""
    method, template, _ = OPERATIONS[op]
    rest = dict(params)
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
    return method, path, rest


def _query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def params_from(op: str, path_params: dict[str, str], query: dict[str, str], body: Any) -> dict[str, Any]:
    """The 1.0 JSON-RPC ``params`` of a REST request: its body (an object, for POSTs that carry
    one), its query (numbers and booleans parsed, as §11.5 writes them) and its path fields."""
    if body is None:
        params: dict[str, Any] = {}
    elif isinstance(body, dict):
        params = dict(body)
    else:
        raise InvalidParamsError("Invalid params: the body must be a JSON object")
    for key, text in query.items():
        if key in _INTS:
            try:
                params[key] = int(text)
            except ValueError:
                raise InvalidParamsError(f"Invalid params: {key} must be an integer, got {text!r}") from None
        elif key in _BOOLS:
            if text not in ("true", "false"):
                raise InvalidParamsError(f"Invalid params: {key} must be true or false, got {text!r}")
            params[key] = text == "true"
        else:
            params[key] = text
    params.update(path_params)
    return params


def error_body(err: RPCError) -> dict[str, Any]:
    """A failure as §11.6 writes it: ``google.rpc.Status`` with the A2A reason in an ErrorInfo."""
    info: dict[str, Any] = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": err.reason,
                            "domain": "a2a-protocol.org", "metadata": {}}
    if isinstance(err.data, dict):
        info["metadata"] = {k: str(v) for k, v in err.data.items()}
    return {"error": {"code": err.http_status, "status": err.grpc_status, "message": err.message, "details": [info]}}


def refusal_body(status: int, message: str) -> dict[str, Any]:
    """A refusal before any operation (401, 403, 413, 415 ...) in the same Status shape."""
    names = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 405: "UNIMPLEMENTED",
             413: "INVALID_ARGUMENT", 415: "INVALID_ARGUMENT"}
    return {"error": {"code": status, "status": names.get(status, "INVALID_ARGUMENT"), "message": message}}


def parse_error(status: int, data: Any, mask: Any = str) -> RPCError | None:
    """The error a REST answer carries (``{"error": {...}}``), as the RPCError of its reason (or,
    without one, of its HTTP status); None when ``data`` is not an error."""
    error = data.get("error") if isinstance(data, dict) else None
    if not isinstance(error, dict):
        return None
    reason = None
    for detail in error.get("details") or []:
        if isinstance(detail, dict) and isinstance(detail.get("reason"), str):
            reason = detail["reason"]
            break
    cls = RPC_REASONS.get(reason or "")
    if cls is None:  # no A2A reason: what its HTTP status says
        cls = (InternalError if status >= 500 else MethodNotFoundError if status in (404, 405)
               else InvalidRequestError)
    message = error.get("message")
    return cls(mask(message) if isinstance(message, str) and message else f"HTTP {status}")
