"""What a call carries besides its parameters: the extensions the card requires (a call that does
not activate them: refused, or not enforced), and its tenant (a call with it and one without)."""

from __future__ import annotations

import uuid

from ... import _json
from .probe import JS_1X, SDK_1X, Probe

EXTENSIONS_HEADER = "A2A-Extensions"
V03_EXTENSIONS_HEADER = "X-A2A-Extensions"


async def required_extensions(probe: Probe) -> None:
    """A required extension: a call that does not activate it must be refused (-32008 in 1.0,
    the spec's MUST); the official SDK server does not, and the doctor says so."""
    capabilities = probe.card.raw.get("capabilities")
    declared = capabilities.get("extensions") if _json.is_object(capabilities) else None
    required = [
        str(e.get("uri"))
        for e in (declared if _json.is_array(declared) else [])
        if _json.is_object(e) and e.get("required") and e.get("uri")
    ]
    if not required:
        return
    header = EXTENSIONS_HEADER if probe.v10 else V03_EXTENSIONS_HEADER
    before = probe.mark()
    bare = await probe.call("GetTask", "tasks/get", {"id": f"toolnexus-doctor-{uuid.uuid4()}"})
    if bare is None or bare.got is None:
        return
    if bare.got == -32008 or (bare.response is not None and bare.response.status_code == 400):
        probe.found(
            "ok",
            "extensions",
            f"requires {', '.join(required)}, and refuses a call that does not activate it",
            fix="",
        )
    else:
        probe.found(
            "warning",
            "extensions",
            f"declares {', '.join(required)} required, but answered a call without {header} "
            f"({bare.got}): the requirement is not enforced (the official SDK server never "
            "enforces it)",
            before,
            ["clients that do not speak the extension get answers that assume it"],
            f"refuse a call that does not list {', '.join(required)} in {header} with -32008 "
            "(ExtensionSupportRequiredError)",
        )
    activated = await probe.call(
        "GetTask",
        "tasks/get",
        {"id": f"toolnexus-doctor-{uuid.uuid4()}"},
        extra={header: ", ".join(required)},
    )
    echoed = (
        activated.response.headers.get(header, "")
        if activated is not None and activated.response is not None
        else ""
    )
    probe.found(
        "ok" if echoed else "info",
        "extensions",
        f"a call activating them is answered with {header}: {echoed}"
        if echoed
        else f"a call activating them is answered without {header} (which extensions it applied "
        "is not said)",
        fix="" if echoed else f"answer {header} with the extensions the call activated",
    )


async def tenant(probe: Probe) -> None:
    """An interface with a tenant: a call with it is answered; one without it too, or refused."""
    interface = probe.card.jsonrpc_interface("1") if probe.v10 else None
    tenant = interface.get("tenant") if interface is not None else None
    if not isinstance(tenant, str) or not tenant:
        return
    unknown = f"toolnexus-doctor-{uuid.uuid4()}"
    before = probe.mark()
    given = await probe.call("GetTask", None, {"id": unknown, "tenant": tenant})
    without = await probe.call("GetTask", None, {"id": unknown})
    if given is None or without is None:
        return
    if given.got != -32001:
        probe.found(
            "error",
            "tenant",
            f"a call with the card's tenant {tenant!r} got {given.got or given.why}, not "
            "TaskNotFound for an unknown task",
            before,
            [SDK_1X, JS_1X],
            f"answer calls that carry tenant {tenant!r} (the SDK clients send it in every call)",
        )
    else:
        probe.found(
            "ok",
            "tenant",
            f"answers calls with the card's tenant {tenant!r} (the a2a-sdk 1.x client sends it "
            "in every call); "
            + (
                "a call without it is answered too (the tenant is not required)"
                if without.got == -32001
                else f"a call without it is refused ({without.got})"
            ),
        )
