"""A request's envelope and headers: the JSON-RPC envelope, the dialect's method names and its
``A2A-Version``, the tenant, the extensions asked for."""

from __future__ import annotations

from typing import Any

from ... import _json
from ...events import TrafficEvent
from ...protocol.extensions import requested
from ...protocol.operations import V03_METHODS, V10_METHODS
from ..report import Finding
from .servers import EVERY_SERVER, JS_SERVER, OURS, SDK_SERVER
from .state import JudgeState, header

V02_METHODS = ("tasks/send", "tasks/sendSubscribe", "tasks/pushNotification/set")
"""A2A 0.2's method names, which no server of 0.3 or 1.0 knows."""


def _legacy_shapes(params: Any) -> bool:
    message = params.get("message") if _json.is_object(params) else None
    if not _json.is_object(message):
        return False
    parts = message.get("parts")
    return message.get("role") == "user" and (
        not _json.is_array(parts) or any(_json.is_object(p) and "kind" in p for p in parts)
    )


class RequestJudge(JudgeState):
    """A request's envelope and headers, judged."""

    def _envelope(self, event: TrafficEvent, body: dict[str, Any]) -> bool:
        if body.get("jsonrpc") != "2.0":
            self._add(
                "error",
                "envelope",
                f'"jsonrpc" is {body.get("jsonrpc")!r}, not "2.0"',
                event,
                EVERY_SERVER,
                'send "jsonrpc": "2.0"',
            )
            return False
        if not isinstance(body.get("method"), str):
            self._add(
                "error",
                "envelope",
                '"method" is not a string',
                event,
                EVERY_SERVER,
                "name the method",
            )
            return False
        rid = body.get("id", ...)
        if rid is ...:
            self._add(
                "error",
                "envelope",
                "a request without an id is a notification: the server answers nothing",
                event,
                EVERY_SERVER,
                'give every request an "id" (a string or a number)',
            )
        elif rid is None:
            self._add(
                "info",
                "envelope",
                'an "id" of null: the servers answer it, but JSON-RPC 2.0 keeps null for '
                "answers it could not tie to a request",
                event,
                fix='give every request a string or number "id"',
            )
        elif isinstance(rid, bool) or not isinstance(rid, str | int | float):
            self._add(
                "error",
                "envelope",
                f'"id" is {type(rid).__name__}, not a string or a number',
                event,
                EVERY_SERVER,
                'give every request a string or number "id"',
            )
            return False
        return True

    def _dialect(self, event: TrafficEvent, method: str, params: Any) -> str | None:
        """The dialect of a call from its method name and version header (its faults said)."""
        version = header(event, "a2a-version")
        if method in V02_METHODS:
            self._add(
                "error",
                "method names",
                f"{method} is A2A 0.2's name: no 0.3 or 1.0 server knows it (-32601)",
                event,
                EVERY_SERVER,
                "speak 0.3 (message/send, message/stream, tasks/get) or 1.0 (SendMessage, ...)",
                at=method,
            )
            return None
        if method in V03_METHODS:
            self.report.note(
                Finding("ok", "method names", "speaks 0.3 (message/send, tasks/get, ...)")
            )
            if version and not version.startswith("0."):
                self._add(
                    "error",
                    "version header",
                    f"a 0.3 method sent with A2A-Version: {version}",
                    event,
                    [SDK_SERVER, JS_SERVER],
                    "send no A2A-Version (or 0.3) with 0.3's methods, or speak 1.0's",
                    at=method,
                )
            return "0.3"
        if method in V10_METHODS:
            if version.startswith("1"):
                self.report.note(
                    Finding("ok", "method names", "speaks 1.0 (SendMessage, GetTask, ...)")
                )
                self.report.note(
                    Finding("ok", "version header", "sends A2A-Version: 1.0 with 1.0's methods")
                )
                return "1.0"
            return self._version_fault(event, method, version, params)
        self._add(
            "error",
            "method names",
            f"{method!r} is no A2A method (in 0.3 or 1.0)",
            event,
            EVERY_SERVER,
            "use the method names of one dialect: 1.0's SendMessage, GetTask, ... or 0.3's "
            "message/send, tasks/get, ...",
            at=method,
        )
        return None

    def _version_fault(
        self, event: TrafficEvent, method: str, version: str, params: Any = None
    ) -> str | None:
        if version:
            self._add(
                "error",
                "version header",
                f"{method} (1.0) sent with A2A-Version: {version}",
                event,
                EVERY_SERVER,
                "send A2A-Version: 1.0 with 1.0's methods",
                at=method,
            )
            return None
        legacy = _legacy_shapes(params)
        if legacy:
            self._add(
                "warning",
                "method names",
                f"{method} without A2A-Version and with 0.3's shapes: the toolnexus legacy "
                "dialect, which only toolnexus servers answer",
                event,
                [SDK_SERVER, JS_SERVER],
                "speak 1.0 (A2A-Version: 1.0 and 1.0's shapes) or 0.3 (message/send)",
                at=method,
            )
            return "legacy"
        self._add(
            "error",
            "version header",
            f"{method} (1.0) sent without A2A-Version: 1.0; servers read a call without it as 0.3",
            event,
            [SDK_SERVER, JS_SERVER],
            "send the header A2A-Version: 1.0 with every 1.0 call",
            at=method,
        )
        return "1.0"

    def _tenant(self, event: TrafficEvent, method: str, given: Any, where: str) -> None:
        """A 1.0 call's tenant (``where``: in the params, or the HTTP+JSON path) against the one
        the card's interface names: clients must send it (§8.3.2)."""
        want = self.tenant
        if not want:
            return
        place = "params.tenant" if where == "params" else f"the path (/{want}/...)"
        if given == want:
            self._add("ok", "tenant", f"names the card's tenant {want!r} in its 1.0 calls")
        elif not given:
            self._add(
                "warning",
                "tenant",
                f"a 1.0 call without the tenant {want!r} the card's interface names: a gateway "
                "that routes by tenant cannot place it, and a toolnexus server keeping a task "
                "space per tenant files it elsewhere",
                event,
                fix=f"send the interface's tenant in every 1.0 call: {place}",
                at=method,
            )
        else:
            self._add(
                "error",
                "tenant",
                f"a 1.0 call names tenant {given!r}, not the card's {want!r}",
                event,
                [OURS],
                f"send the tenant the card's interface names: {place}",
                at=method,
            )

    def _extensions(self, event: TrafficEvent, method: str, dialect: str) -> None:
        """The extensions a call asks for (``A2A-Extensions``; 0.3's ``X-A2A-Extensions``)."""
        named = requested(
            [v for k, v in event.request_headers.items() if k.lower() == "a2a-extensions"]
        )
        legacy = requested(
            [v for k, v in event.request_headers.items() if k.lower() == "x-a2a-extensions"]
        )
        if dialect == "1.0" and legacy and not named:
            self._add(
                "warning",
                "extensions",
                "asked for extensions in 0.3's X-A2A-Extensions header in a 1.0 call: 1.0 "
                "servers read A2A-Extensions",
                event,
                [SDK_SERVER],
                "name the extensions in the A2A-Extensions header (0.3's name beside it is fine)",
                at=method,
            )
        asked = named or legacy
        unknown = [u for u in asked if u not in self.extensions]
        if unknown:
            self._add(
                "info",
                "extensions",
                f"asked for {', '.join(unknown)}, which the card does not declare: no server "
                "activates it",
                event,
                fix="ask only for the extensions the card lists in capabilities.extensions",
                at=method,
            )
        if any(u in self.extensions for u in asked):
            self.seen.add("extensions")
            self._add("ok", "extensions", "asks for an extension the card declares")
