"""JSON-RPC 2.0 envelopes: validation of requests and the shapes of responses and errors.

Rules (A2A-WIRE.md): HTTP 200 for every JSON-RPC error; never both ``result`` and ``error``; a
parse error answers with ``id: null``; batch arrays are refused with -32600; a request without
``id`` is a notification (run, answered 204, errors swallowed).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._json import is_array, is_object, too_deep
from ..errors import InvalidParamsError, InvalidRequestError, RPCError

__all__ = [
    "RpcRequest",
    "parse_request",
    "request_id_of",
    "result_envelope",
    "error_envelope",
    "error_object",
    "NO_ID",
    "MAX_DEPTH",
    "refuse_too_deep",
]

MAX_DEPTH = 64
"""The deepest params accepted (a2a-sdk's protobuf parsing stops at 100; orjson writes at most 255
levels, and a stored task nests a message's metadata a few levels deeper than its params)."""

NO_ID = object()
"""The id of a notification (a request without an ``id`` member)."""


@dataclass
class RpcRequest:
    method: str
    params: dict[str, Any]
    id: Any  # str | int | float | None, or NO_ID for a notification

    @property
    def is_notification(self) -> bool:
        return self.id is NO_ID


def _valid_id(value: Any) -> bool:
    return value is None or (isinstance(value, (str, int, float)) and not isinstance(value, bool))


def parse_request(body: Any, raw: bytes | None = None) -> RpcRequest:
    """Check one decoded JSON-RPC request. Raises InvalidRequestError / InvalidParamsError; the
    error's ``data`` carries the request id when it could be read. ``raw``, the bytes it was read
    from, lets the depth check be skipped when they hold too few brackets to nest that deep."""
    if is_array(body):
        raise InvalidRequestError("Invalid Request: batch requests are not supported")
    if not is_object(body):
        raise InvalidRequestError("Invalid Request: the request must be a JSON object")
    rid = body.get("id", NO_ID)
    if rid is not NO_ID and not _valid_id(rid):
        raise InvalidRequestError("Invalid Request: id must be a string, a number or null")
    echo = None if rid is NO_ID else rid
    if body.get("jsonrpc") != "2.0":
        raise _with_id(InvalidRequestError('Invalid Request: jsonrpc must be "2.0"'), echo)
    method = body.get("method")
    if not isinstance(method, str) or not method:
        raise _with_id(
            InvalidRequestError("Invalid Request: method must be a non-empty string"), echo
        )
    params: Any = body.get("params", {})
    if params is None:
        params = {}
    if not is_object(params):
        raise _with_id(InvalidParamsError("Invalid params: params must be an object"), echo)
    try:
        refuse_too_deep(params, raw)
    except InvalidParamsError as err:
        raise _with_id(err, echo) from None
    return RpcRequest(method, params, rid)


def refuse_too_deep(params: Any, raw: bytes | None = None) -> None:
    """InvalidParamsError when ``params`` (of any binding) nest deeper than ``MAX_DEPTH``; ``raw``,
    the JSON they were read from, skips the walk when it holds too few brackets to nest that deep
    (or is too short to: each level opens and closes, two bytes)."""
    if (
        raw is None or (len(raw) > 2 * MAX_DEPTH and raw.count(b"{") + raw.count(b"[") > MAX_DEPTH)
    ) and too_deep(params, MAX_DEPTH):
        raise InvalidParamsError(f"Invalid params: nested deeper than {MAX_DEPTH} levels")


def _with_id(err: RPCError, rid: Any) -> RPCError:
    err.request_id = rid  # type: ignore[attr-defined]  # the id of the refused call, for its error answer
    return err


def request_id_of(err: RPCError) -> Any:
    return getattr(err, "request_id", None)


def result_envelope(rid: Any, result: Any) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": result}


def error_object(err: RPCError, *, error_info: bool) -> dict[str, Any]:
    """The ``error`` member; with ``error_info`` the 1.x SDK's ``google.rpc.ErrorInfo`` detail."""
    out: dict[str, Any] = {"code": err.code, "message": err.message}
    if error_info:
        out["data"] = [err.error_info()]
    elif err.data is not None:
        out["data"] = err.data
    return out


def error_envelope(rid: Any, err: RPCError, *, error_info: bool = False) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "error": error_object(err, error_info=error_info)}
