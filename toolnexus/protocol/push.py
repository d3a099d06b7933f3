"""Push notifications: the config a caller registers for a task, in each dialect's shapes, what a
notification carries, and which webhook URLs an agent refuses to call.

A config says where (``url``) an agent POSTs each change of a task, and how it proves who it is:
``token`` goes in ``X-A2A-Notification-Token``, ``scheme`` + ``credentials`` in ``Authorization``.
What is POSTed follows the dialect the config was set in, as the official SDKs do: a 1.0 config
gets ``StreamResponse`` objects (``{"statusUpdate": ...}``, ``{"artifactUpdate": ...}``); a 0.3
(or legacy) config gets the whole task (``{"kind": "task", ...}``).
"""

from __future__ import annotations

import ipaddress
import urllib.parse
from dataclasses import dataclass
from typing import Any

from .._json import is_array, is_object
from ..errors import InvalidParamsError
from ..http.fetch import Address, host_address
from .dialects import (
    Dialect,
    check_id,
    optional_string,
    parse_state,
    render_artifact_update,
    render_status_update,
    render_task,
)
from .model import Artifact, Task, TaskState

__all__ = [
    "PushConfig",
    "TOKEN_HEADER",
    "parse_push_config",
    "render_push_config",
    "payloads",
    "parse_notification",
    "webhook_refusal",
    "address_refusal",
]

TOKEN_HEADER = "X-A2A-Notification-Token"
"""The header a config's ``token`` travels in (both SDK lines use it)."""


@dataclass
class PushConfig:
    """Where and how an agent notifies one task's changes.

    Attributes:
        task_id: the task (empty in a send's configuration: the task is made by that send).
        url: the webhook, http(s).
        id: the config's id; one is made when the caller gives none.
        token: sent back in ``X-A2A-Notification-Token`` with every notification.
        scheme, credentials: sent as ``Authorization: <scheme> <credentials>``.
        dialect: the dialect it was set in; notifications use its shapes.
    """

    task_id: str
    url: str
    id: str = ""
    token: str | None = None
    scheme: str | None = None
    credentials: str | None = None
    dialect: Dialect = Dialect.V10

    def headers(self) -> dict[str, str]:
        """The headers a notification carries to prove where it came from."""
        out = {"content-type": "application/json"}
        if self.token:
            out[TOKEN_HEADER] = self.token
        if self.scheme and self.credentials:
            out["authorization"] = f"{self.scheme} {self.credentials}"
        return out

    def __repr__(self) -> str:  # a config's secrets never reach a log through its repr
        secret = " token=***" if self.token else ""
        secret += f" {self.scheme} ***" if self.credentials else ""
        return f"<PushConfig {self.id or '?'} task={self.task_id or '?'} url={self.url}{secret}>"


def parse_push_config(
    d: Any, dialect: Dialect, where: str = "params", task_id: str | None = None
) -> PushConfig:
    """A config from a caller's params: 0.3 ``{taskId, pushNotificationConfig: {id, url, token,
    authentication: {schemes, credentials}}}`` (or that inner object alone, in a send's
    configuration), 1.0 ``{taskId, id, url, token, authentication: {scheme, credentials}}``.

    Raises:
        InvalidParamsError: a field of the wrong type, or no url.
    """
    if not is_object(d):
        raise InvalidParamsError(f"Invalid params: {where} must be an object")
    outer = d
    inner = d.get("pushNotificationConfig")
    if is_object(inner):  # 0.3's wrapper (tolerated in 1.0 too)
        where, d = f"{where}.pushNotificationConfig", inner
    url = optional_string(d, "url", where)
    if url is None:
        raise InvalidParamsError(f"Invalid params: {where}.url is required (the webhook to notify)")
    auth = d.get("authentication")
    scheme = credentials = None
    if auth is not None:
        if not is_object(auth):
            raise InvalidParamsError(f"Invalid params: {where}.authentication must be an object")
        scheme = optional_string(auth, "scheme", f"{where}.authentication")
        schemes = auth.get("schemes")
        if scheme is None and schemes is not None:
            if not is_array(schemes) or not all(isinstance(s, str) for s in schemes):
                raise InvalidParamsError(
                    f"Invalid params: {where}.authentication.schemes must be a list of strings"
                )
            scheme = schemes[0] if schemes else None
        credentials = optional_string(auth, "credentials", f"{where}.authentication")
    given_task = optional_string(outer, "taskId", where) or optional_string(d, "taskId", where)
    for key, value in (("taskId", given_task), ("id", optional_string(d, "id", where))):
        if value:
            check_id(value, f"{where}.{key}")
    return PushConfig(
        task_id=task_id if task_id is not None else (given_task or ""),
        url=url,
        id=optional_string(d, "id", where) or "",
        token=optional_string(d, "token", where),
        scheme=scheme,
        credentials=credentials,
        dialect=dialect,
    )


def render_push_config(c: PushConfig, dialect: Dialect) -> dict[str, Any]:
    """A config as ``dialect`` shows it (what get, list and set answer)."""
    body: dict[str, Any] = {"id": c.id, "url": c.url}
    if c.token:
        body["token"] = c.token
    if dialect is Dialect.V10:
        if c.scheme:
            body["authentication"] = {
                "scheme": c.scheme,
                **({"credentials": c.credentials} if c.credentials else {}),
            }
        return {"taskId": c.task_id, **body}
    if c.scheme:
        body["authentication"] = {
            "schemes": [c.scheme],
            **({"credentials": c.credentials} if c.credentials else {}),
        }
    return {"taskId": c.task_id, "pushNotificationConfig": body}


def payloads(task: Task, new_artifacts: list[Artifact], dialect: Dialect) -> list[dict[str, Any]]:
    """What one change of ``task`` is POSTed as, in order."""
    if dialect is not Dialect.V10:
        return [render_task(task, dialect)]
    done = task.state.terminal or task.state.interrupted
    return [
        *(render_artifact_update(task, a, dialect) for a in new_artifacts),
        render_status_update(task, dialect, final=done),
    ]


def parse_notification(body: Any) -> tuple[str | None, TaskState | None]:
    """The task a notification is about and the state it reports (None where it reports none,
    e.g. an artifact update), in any dialect's shapes; never an error."""
    if not is_object(body):
        return None, None
    for key in ("statusUpdate", "artifactUpdate", "task"):
        if is_object(body.get(key)):
            body = body[key]
            break
    task_id = (
        body.get("taskId") if "taskId" in body else (body.get("id") if "status" in body else None)
    )
    status = body.get("status")
    state = parse_state(status.get("state")) if is_object(status) else None
    return (task_id if isinstance(task_id, str) and task_id else None), state


def address_refusal(
    address: Address,
    port: int,
    agent: tuple[str, int] | None = None,
    *,
    private_ok: bool = True,
    shown: str = "",
) -> str | None:
    """Why an agent must not connect to ``address``:``port`` for a webhook, or None when it may:
    the agent itself (any address of this machine on its port), and unless ``private_ok`` every
    address that is not public (loopback, private, link-local such as cloud metadata, shared,
    reserved, multicast, unspecified). ``shown``: the URL, for the message."""
    shown = shown or f"{address}:{port}"
    if agent is not None and port == agent[1]:
        bound = host_address(agent[0])
        mine = bound is None or bound.is_unspecified
        if (
            address == bound
            or address.is_loopback
            or address.is_unspecified
            or (mine and not address.is_global)
        ):
            return f"{shown} is this agent itself; notifications go to another endpoint"
    if not private_ok and (not address.is_global or address.is_multicast or address.is_unspecified):
        return (
            f"{shown} is a local or private address ({address}), refused by an agent served beyond "
            "loopback (A2AConfig(push_private_ok=True) allows it)"
        )
    return None


def webhook_refusal(
    url: str, agent: tuple[str, int] | None = None, *, private_ok: bool = True
) -> str | None:
    """Why an agent must not POST to ``url``, or None when it may, from the URL alone.

    Refused: anything but http(s); a user name or password in the URL; the agent itself
    (``agent`` is its bound host and port: a loop of notifications into its own JSON-RPC); and,
    unless ``private_ok``, every address that is not public, however it is spelled (see
    :func:`host_address`), and ``localhost`` names. A name is checked again where it counts: the
    agent resolves it once at each delivery, checks the address it got with
    :func:`address_refusal`, and connects to that address (see ``serve/push.py``).
    """
    try:
        parts = urllib.parse.urlsplit(url)
        port = parts.port
    except ValueError:
        return f"{url!r} is not a URL"
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return f"a webhook must be an http(s) URL with a host, got {url!r}"
    if parts.username or parts.password:
        return "a webhook URL must not carry a user name or password (use token or authentication)"
    host = parts.hostname.lower().rstrip(".")
    port = port or (443 if parts.scheme == "https" else 80)
    address = host_address(host)
    if address is not None:
        return address_refusal(address, port, agent, private_ok=private_ok, shown=url)
    if host == "localhost" or host.endswith(".localhost"):
        return address_refusal(
            ipaddress.ip_address("127.0.0.1"), port, agent, private_ok=private_ok, shown=url
        )
    return None
