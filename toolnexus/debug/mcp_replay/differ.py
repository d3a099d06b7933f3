"""What changed between a recorded MCP session and a live one (:class:`Differ`): the server, its
lists (tools, resources, templates, prompts) and each answer by its shape."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from ...mcp.transport import mcp_failure, sdk
from ..replay.report import Difference, ReplayReport
from ..replay.shapes import shape, shape_diff
from .calls import OPENERS, Call
from .tape import MCPTape

_LISTS = {
    "tools/list": ("tools", "name"),
    "resources/list": ("resources", "uri"),
    "resources/templates/list": ("resourceTemplates", "uriTemplate"),
    "prompts/list": ("prompts", "name"),
}


class Differ:
    def __init__(self, report: ReplayReport) -> None:
        self.report = report

    def add(self, call: Call, what: str, path: str, recorded: str, live: str) -> None:
        self.report.differences.append(
            Difference(call.seq, call.operation, what, path, recorded, live)
        )

    async def one(self, client: Any, call: Call, tape: MCPTape, timeout: float) -> None:
        types = sdk().types

        if call.method in OPENERS:
            self.opener(client, call, tape)
            return
        recorded = (call.answer or {}).get("result")
        recorded_error = (call.answer or {}).get("error")
        try:
            live = await asyncio.wait_for(self.ask(client, call), timeout)
        except TimeoutError:
            self.add(call, "unanswered", "", "an answer", f"none within {timeout:g} s")
            return
        except Exception as exc:  # noqa: BLE001 - a protocol error is an answer too
            code = getattr(getattr(exc, "error", None), "code", None)
            if isinstance(recorded_error, dict):
                if code is not None and recorded_error.get("code") != code:
                    self.add(call, "error", "code", str(recorded_error.get("code")), str(code))
            else:
                self.add(call, "error", "", "a result", f"an error: {mcp_failure(exc)}")
            return
        if live is _UNASKED:
            self.report.notes.append(
                f"#{call.seq} {call.operation}: not asked again (a diff asks lists, calls, reads, prompts, completions and ping)"
            )
            self.report.exchanges -= 1
            return
        if isinstance(recorded_error, dict):
            self.add(call, "error", "", f"the error {recorded_error.get('code')}", "a result")
            return
        live_value = (
            live.model_dump(by_alias=True, exclude_none=True, mode="json")
            if isinstance(live, types.Result) or hasattr(live, "model_dump")
            else live
        )
        if call.method in _LISTS:
            self.listing(call, recorded, live_value)
            return
        if call.method == "tools/call" and isinstance(recorded, dict):
            was, now = bool(recorded.get("isError")), bool(live_value.get("isError"))
            if was != now:
                self.add(call, "error", "isError", str(was).lower(), str(now).lower())
        self.shapes(call, recorded, live_value)

    async def ask(self, client: Any, call: Call) -> Any:
        p, m = call.params, call.method
        if m == "ping":
            return await client.send_ping()
        if m == "tools/call":
            return await client.call_tool(str(p.get("name", "")), p.get("arguments") or {})
        if m == "resources/read":
            return await client.read_resource(str(p.get("uri", "")))
        if m == "prompts/get":
            return await client.get_prompt(str(p.get("name", "")), p.get("arguments") or {})
        if m in _LISTS and not p.get("cursor"):
            fetch = {
                "tools/list": client.list_tools,
                "resources/list": client.list_resources,
                "resources/templates/list": client.list_resource_templates,
                "prompts/list": client.list_prompts,
            }[m]
            return await fetch()
        if m == "completion/complete":
            types = sdk().types

            ref = p.get("ref") or {}
            kind = (
                types.PromptReference
                if ref.get("type") == "ref/prompt"
                else types.ResourceTemplateReference
            )
            return await client.complete(
                kind.model_validate(ref),
                p.get("argument") or {},
                (p.get("context") or {}).get("arguments"),
            )
        return _UNASKED

    def opener(self, client: Any, call: Call, tape: MCPTape) -> None:
        result = (call.answer or {}).get("result") or {}
        info = (
            result.get("serverInfo")
            or ((result.get("_meta") or {}).get("io.modelcontextprotocol/serverInfo"))
            or {}
        )
        live_info = client.server_info
        name = getattr(live_info, "name", "") if live_info is not None else ""
        if info.get("name") and info.get("name") != name:
            self.add(call, "server", "name", str(info.get("name")), name or "none")
        version = str(client.protocol_version)
        was = result.get("protocolVersion") or ",".join(result.get("supportedVersions") or [])
        if was and version not in str(was).split(","):
            self.add(call, "server", "protocol version", str(was), version)
        live_caps = client.server_capabilities.model_dump(
            by_alias=True, exclude_none=True, mode="json"
        )
        caps = result.get("capabilities") or {}
        for name_ in sorted(set(caps) | set(live_caps)):
            if name_ not in live_caps:
                self.add(call, "server", f"capabilities.{name_}", "declared", "missing")
            elif name_ not in caps:
                self.add(call, "server", f"capabilities.{name_}", "absent", "added")

    def listing(self, call: Call, recorded: Any, live: Any) -> None:
        field_name, key = _LISTS[call.method]
        kind = (
            call.method.split("/")[0] if call.method != "resources/templates/list" else "templates"
        )
        was = {
            str(i.get(key)): i
            for i in (recorded or {}).get(field_name) or []
            if isinstance(i, dict)
        }
        now = {
            str(i.get(key)): i for i in (live or {}).get(field_name) or [] if isinstance(i, dict)
        }
        for name in sorted(set(was) - set(now)):
            self.add(call, kind, name, "present", "removed")
        for name in sorted(set(now) - set(was)):
            self.add(call, kind, name, "absent", "added")
        for name in sorted(set(was) & set(now)):
            for part in ("inputSchema", "outputSchema", "arguments", "mimeType", "description"):
                a, b = was[name].get(part), now[name].get(part)
                if _canon(a) == _canon(b):
                    continue
                what = "schema" if part.endswith("Schema") else kind
                changes: list[tuple[str, Any, Any]] = []
                _changes(_stripped(a), _stripped(b), f"{name}.{part}", changes)
                for path, before, after in changes[:MAX_CHANGES]:
                    self.add(call, what, path, _brief(before), _brief(after))
                if len(changes) > MAX_CHANGES:
                    self.add(
                        call,
                        what,
                        f"{name}.{part}",
                        "...",
                        f"{len(changes) - MAX_CHANGES} more changes",
                    )

    def shapes(self, call: Call, recorded: Any, live: Any) -> None:
        found: list[tuple[str, str, str]] = []
        a, b = shape(_stripped(recorded)), shape(_stripped(live))
        shape_diff(a, b, "", found)
        for path, was, now in found:
            self.add(call, "shape", path, was, now)


_VOLATILE = frozenset({"_meta", "requestState", "cacheScope", "ttlMs", "resultType"})
"""Keys of an answer a diff does not compare: the envelope, opaque state, caching advice."""


_UNASKED = object()
MAX_CHANGES = 5
"""The changes of one schema, prompt or resource a diff lists (then how many more)."""


def _stripped(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _stripped(v) for k, v in value.items() if k not in _VOLATILE}
    if isinstance(value, list):
        return [_stripped(v) for v in value]
    return value


def _changes(a: Any, b: Any, path: str, out: list[tuple[str, Any, Any]]) -> None:
    """Each place two JSON values differ: ``(path, recorded, live)``, None for absent."""
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            _changes(a.get(k), b.get(k), f"{path}.{k}", out)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            _changes(x, y, f"{path}[{i}]", out)
    elif a != b:
        out.append((path, a, b))


def _canon(value: Any) -> str:
    return json.dumps(_stripped(value), sort_keys=True)


def _brief(value: Any) -> str:
    text = "absent" if value is None else json.dumps(value, sort_keys=True, ensure_ascii=False)
    return text if len(text) <= 120 else text[:117] + "..."
