"""The exception tree of toolnexus, and the one table of JSON-RPC error codes.

::

    ToolnexusError                 base of everything toolnexus raises on purpose
    ├── ConfigError                a config file or option that cannot be used
    ├── ModelError                 a model endpoint failed (status, short body excerpt; never the key)
    │   └── ModelTimeout           the whole run went past its timeout
    ├── MaxTurnsError              the tool-calling loop reached max_turns
    ├── PeerError                  a remote agent cannot be reached, or answered something unusable
    └── RPCError                   a JSON-RPC error, with its code, message and data
        ├── ParseError (-32700) ... VersionNotSupportedError (-32009)

Every ``RPCError`` subclass carries its code and a default message, so one raise site never
spells a code by hand. ``RPC_ERRORS`` maps each code back to its class.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ToolnexusError",
    "ConfigError",
    "MissingExtra",
    "ModelError",
    "ModelTimeout",
    "MaxTurnsError",
    "PeerError",
    "RPCError",
    "ParseError",
    "InvalidRequestError",
    "MethodNotFoundError",
    "InvalidParamsError",
    "InternalError",
    "TaskNotFoundError",
    "TaskNotCancelableError",
    "PushNotificationNotSupportedError",
    "UnsupportedOperationError",
    "ContentTypeNotSupportedError",
    "InvalidAgentResponseError",
    "ExtendedCardNotConfiguredError",
    "ExtensionSupportRequiredError",
    "VersionNotSupportedError",
    "UnauthenticatedError",
    "PermissionDeniedError",
    "UnavailableError",
    "StoreUnavailableError",
    "ServerStoppingError",
    "RPC_ERRORS",
    "RPC_REASONS",
]


class ToolnexusError(Exception):
    """Base of every error toolnexus raises on purpose."""

    def _render_traceback_(self) -> list[str]:
        """IPython and Jupyter show it as one line: it is meant for the user, it is not a bug report."""
        return [f"{type(self).__name__}: {self}"]


class MissingExtra(ToolnexusError, ImportError):
    """An optional package a feature needs is not installed; the message says what to install."""


class ConfigError(ToolnexusError):
    """A configuration file or option that cannot be used; the message names it and the problem."""


class ModelError(ToolnexusError):
    """A model endpoint failed.

    Attributes:
        status: the HTTP status, or None for a network error.
        retryable: whether the failure was of a kind the client retries.
        remote: raised by an HTTP model endpoint; the message then names the endpoint and quotes
            its answer, which a served agent tells no caller (see ``public``).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        retryable: bool = False,
        remote: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retryable = retryable
        self.remote = remote

    @property
    def public(self) -> str:
        """What a caller of a served agent may be told: the kind of failure of a remote endpoint
        (never its URL or its answer), or the whole message of a local model (demo, in-process)."""
        if not self.remote:
            return str(self)
        if isinstance(self, ModelTimeout):
            return "the model did not answer in time"
        if self.status is not None and not 200 <= self.status < 300:
            return f"the model endpoint failed (HTTP {self.status})"
        return "the model endpoint could not be reached or gave an unusable answer"


class ModelTimeout(ModelError):
    """The whole run went past the client's timeout."""


class MaxTurnsError(ToolnexusError):
    """The tool-calling loop reached ``max_turns`` without a final answer."""


class PeerError(ToolnexusError):
    """A remote agent cannot be reached, timed out, or answered what is not A2A (not JSON-RPC, HTTP 5xx).

    Attributes:
        status: the HTTP status when there was one.
        lost: the connection was lost mid-answer (closed, reset, a body cut short), as opposed
            to an answer that was refused.
    """

    def __init__(self, message: str, *, status: int | None = None, lost: bool = False) -> None:
        super().__init__(message)
        self.status = status
        self.lost = lost


class RPCError(ToolnexusError):
    """A JSON-RPC error: ``code``, ``message`` and optional ``data``.

    Subclasses fix ``code``, ``message`` (the default text), ``reason`` (the name the 1.x SDK
    puts in its ``google.rpc.ErrorInfo`` detail), and the HTTP status and gRPC status name the
    HTTP+JSON and gRPC bindings answer with (A2A 1.0 §5.4).
    """

    code: int = -32603
    message: str = "Internal error"
    reason: str = "INTERNAL"
    http_status: int = 500
    grpc_status: str = "INTERNAL"

    def __init__(self, message: str | None = None, *, data: Any = None) -> None:
        self.message = message or type(self).message
        self.data = data
        super().__init__(self.message)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code}, message={self.message!r})"

    def error_info(self) -> dict[str, Any]:
        """The ``google.rpc.ErrorInfo`` detail that names it, as JSON (HTTP+JSON's Status, §11.6,
        and the 1.x SDK's JSON-RPC ``data``): its reason in A2A's domain, and ``data``'s members
        as text when ``data`` is an object."""
        data = self.data
        return {
            "@type": "type.googleapis.com/google.rpc.ErrorInfo",
            "reason": self.reason,
            "domain": "a2a-protocol.org",
            "metadata": {k: str(v) for k, v in data.items()} if isinstance(data, dict) else {},
        }


class ParseError(RPCError):
    code, message, reason = -32700, "Parse error", "PARSE_ERROR"
    http_status, grpc_status = 400, "INVALID_ARGUMENT"


class InvalidRequestError(RPCError):
    code, message, reason = -32600, "Invalid Request", "INVALID_REQUEST"
    http_status, grpc_status = 400, "INVALID_ARGUMENT"


class MethodNotFoundError(RPCError):
    code, message, reason = -32601, "Method not found", "METHOD_NOT_FOUND"
    http_status, grpc_status = 404, "NOT_FOUND"


class InvalidParamsError(RPCError):
    code, message, reason = -32602, "Invalid params", "INVALID_PARAMS"
    http_status, grpc_status = 400, "INVALID_ARGUMENT"


class InternalError(RPCError):
    code, message, reason = -32603, "Internal error", "INTERNAL"
    http_status, grpc_status = 500, "INTERNAL"


class TaskNotFoundError(RPCError):
    code, message, reason = -32001, "Task not found", "TASK_NOT_FOUND"
    http_status, grpc_status = 404, "NOT_FOUND"


class TaskNotCancelableError(RPCError):
    code, message, reason = -32002, "Task cannot be canceled", "TASK_NOT_CANCELABLE"
    http_status, grpc_status = 400, "FAILED_PRECONDITION"


class PushNotificationNotSupportedError(RPCError):
    code, message, reason = (
        -32003,
        "Push Notification is not supported",
        "PUSH_NOTIFICATION_NOT_SUPPORTED",
    )
    http_status, grpc_status = 400, "FAILED_PRECONDITION"


class UnsupportedOperationError(RPCError):
    code, message, reason = -32004, "This operation is not supported", "UNSUPPORTED_OPERATION"
    http_status, grpc_status = 400, "FAILED_PRECONDITION"


class ContentTypeNotSupportedError(RPCError):
    code, message, reason = -32005, "Incompatible content types", "CONTENT_TYPE_NOT_SUPPORTED"
    http_status, grpc_status = 400, "INVALID_ARGUMENT"


class InvalidAgentResponseError(RPCError):
    code, message, reason = -32006, "Invalid agent response", "INVALID_AGENT_RESPONSE"
    http_status, grpc_status = 500, "INTERNAL"


class ExtendedCardNotConfiguredError(RPCError):
    code, message, reason = (
        -32007,
        "Authenticated Extended Card is not configured",
        "EXTENDED_AGENT_CARD_NOT_CONFIGURED",
    )
    http_status, grpc_status = 400, "FAILED_PRECONDITION"


class ExtensionSupportRequiredError(RPCError):
    """The agent requires an extension the request did not ask for (``A2A-Extensions``; §4.6.3)."""

    code, message, reason = -32008, "Extension support required", "EXTENSION_SUPPORT_REQUIRED"
    http_status, grpc_status = 400, "FAILED_PRECONDITION"


class VersionNotSupportedError(RPCError):
    code, message, reason = -32009, "Version not supported", "VERSION_NOT_SUPPORTED"
    http_status, grpc_status = 400, "FAILED_PRECONDITION"


class UnauthenticatedError(RPCError):
    """A call without a credential the agent takes (HTTP 401, gRPC ``UNAUTHENTICATED``). A2A names
    no JSON-RPC code for it (§3.3.2: "JSON-RPC custom error"); -32000 is JSON-RPC's first
    implementation-defined server error, outside A2A's -32001..-32099, so no later A2A error can
    take it. Refused before the request is read, so its JSON-RPC answer has a null ``id``."""

    code, message, reason = -32000, "authentication required", "UNAUTHENTICATED"
    http_status, grpc_status = 401, "UNAUTHENTICATED"


class PermissionDeniedError(UnauthenticatedError):
    """A credential the agent does not take (HTTP 403, gRPC ``PERMISSION_DENIED``)."""

    message, reason = "invalid credentials", "PERMISSION_DENIED"
    http_status, grpc_status = 403, "PERMISSION_DENIED"


class StaleTaskError(ToolnexusError):
    """A save over a task version another worker has written since this one read it (a store's
    refusal: ``TaskRunner.transition`` reads the task again and decides the move anew)."""


class UnavailableError(InternalError):
    """Not now, not here: the same call, sent again as it was, may succeed (shortly, or on another
    host behind the same balancer). JSON-RPC has only the generic -32603 for it (A2A names no code);
    HTTP+JSON answers 503 and gRPC ``UNAVAILABLE``, which balancers and clients know to retry."""

    message = "unavailable: try again shortly"
    http_status, grpc_status = 503, "UNAVAILABLE"


class StoreUnavailableError(UnavailableError):
    """The task store's database cannot be reached (down, restarting, refusing): the call fails, the
    agent stays up and uses the database again as soon as it answers."""

    message = "the task store is unavailable: try again shortly"


class ServerStoppingError(UnavailableError):
    """The server is stopping (a deploy, a SIGTERM): a stream following a task is ended with it
    once the drain's time is up; resubscribing (through a balancer: to another host) continues."""

    message = "the server is stopping: resubscribe to go on following the task"


RPC_ERRORS: dict[int, type[RPCError]] = {
    cls.code: cls
    for cls in (
        ParseError,
        InvalidRequestError,
        MethodNotFoundError,
        InvalidParamsError,
        InternalError,
        TaskNotFoundError,
        TaskNotCancelableError,
        PushNotificationNotSupportedError,
        UnsupportedOperationError,
        ContentTypeNotSupportedError,
        InvalidAgentResponseError,
        ExtendedCardNotConfiguredError,
        ExtensionSupportRequiredError,
        VersionNotSupportedError,
    )
}
"""Every JSON-RPC error code toolnexus speaks, mapped to its exception class (the auth refusals,
answered before any operation with their HTTP status, are read by their status instead)."""

RPC_REASONS: dict[str, type[RPCError]] = {cls.reason: cls for cls in RPC_ERRORS.values()}
"""The same classes by their ``google.rpc.ErrorInfo`` reason (HTTP+JSON and gRPC errors name them so)."""
