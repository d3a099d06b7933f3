"""The three A2A dialects at the edge: parse leniently, render precisely.

- ``V03``: a2a-sdk 0.3.x. Objects carry ``kind``; parts ``{"kind": "text", "text": ...}``; roles
  ``user``/``agent``; states lower case; a send returns the Task itself.
- ``V10``: a2a-sdk 1.x. No ``kind``; parts hold exactly one of ``text``, ``raw``, ``url``, ``data``;
  roles ``ROLE_USER``/``ROLE_AGENT``; states ``TASK_STATE_*``; a send returns ``{"task": ...}``.
- ``LEGACY``: the toolnexus ports in other languages. Parts and roles as v0.3, objects without
  ``kind``, a send returns the bare Task.

Parsing accepts any of them (parts with or without ``kind``, either role spelling, either state
spelling). Rendering writes exactly one; fasta2a's hybrid (1.0's objects, 0.3's enums) is 1.0's
rendering spelled with :func:`lower_enums`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from typing import Any

from .._json import is_array, is_mapping, is_object, too_deep
from ..errors import InvalidParamsError
from .model import MAX_VALUE_DEPTH, Artifact, Message, Part, Task, TaskState, TaskStatus

__all__ = [
    "Dialect",
    "render_task",
    "render_message",
    "render_part",
    "render_artifact",
    "render_status",
    "render_send_result",
    "render_status_update",
    "render_artifact_update",
    "lower_enums",
    "parse_message",
    "parse_metadata",
    "parse_part",
    "parse_task",
    "parse_state",
    "state_name",
    "check_id",
    "MAX_ID",
    "json_names",
]


class Dialect(str, enum.Enum):
    V03 = "0.3"
    V10 = "1.0"
    LEGACY = "legacy"

    def __str__(self) -> str:
        return self.value


_V10_STATE = {s: "TASK_STATE_" + s.value.upper().replace("-", "_") for s in TaskState}
_V10_STATE[TaskState.UNKNOWN] = "TASK_STATE_UNSPECIFIED"
_V03_STATE = {s: s.value for s in TaskState}  # a lookup: an enum's ``value`` is a Python descriptor
_STATE_BY_NAME: dict[str, TaskState] = {s.value: s for s in TaskState}
_STATE_BY_NAME.update({v: s for s, v in _V10_STATE.items()})
_STATE_BY_NAME["canceled"] = TaskState.CANCELED
_STATE_BY_NAME["cancelled"] = TaskState.CANCELED
_STATE_BY_NAME["TASK_STATE_CANCELLED"] = TaskState.CANCELED
_ROLE_OUT = {Dialect.V10: {"user": "ROLE_USER", "agent": "ROLE_AGENT"}}
_ROLE_NAMES = {d: _ROLE_OUT.get(d, {}) for d in Dialect}  # how each dialect writes a role
_ROLE_IN = {"user": "user", "ROLE_USER": "user", "agent": "agent", "ROLE_AGENT": "agent"}


_LOWER = {v: s.value for s, v in _V10_STATE.items()} | {
    v: k for k, v in _ROLE_OUT[Dialect.V10].items()
}
_APPLICATION = frozenset({"data", "metadata"})  # their keys and values are the caller's, not A2A's


def lower_enums(value: Any) -> Any:
    """1.0's rendering with 0.3's enums (``TASK_STATE_COMPLETED`` is ``completed``, ``ROLE_AGENT``
    ``agent``): the shapes fasta2a's client reads. ``data`` and ``metadata`` are left as they are."""
    if is_array(value):
        return [lower_enums(v) for v in value]
    if not is_object(value):
        return value
    out: dict[str, Any] = {}
    for k, v in value.items():
        if k in _APPLICATION:
            out[k] = v
        elif k in ("state", "role") and isinstance(v, str):
            out[k] = _LOWER.get(v, v)
        else:
            out[k] = lower_enums(v)
    return out


def state_name(state: TaskState, dialect: Dialect) -> str:
    return (_V10_STATE if dialect is Dialect.V10 else _V03_STATE)[state]


def parse_state(value: Any) -> TaskState | None:
    if not isinstance(value, str):
        return None
    return _STATE_BY_NAME.get(value) or _STATE_BY_NAME.get(value.lower())


# -- render ------------------------------------------------------------------------------------


def render_part(p: Part, dialect: Dialect) -> dict[str, Any]:
    if dialect is Dialect.V10:
        out: dict[str, Any]
        if p.kind == "text":
            out = {"text": p.text or ""}
        elif p.kind == "data":
            out = {"data": p.data}
        elif p.raw is not None:
            out = {"raw": p.raw}
        else:
            out = {"url": p.url or ""}
        if p.media_type:
            out["mediaType"] = p.media_type
        if p.filename:
            out["filename"] = p.filename
        if p.metadata:
            out["metadata"] = p.metadata
        return out
    if p.kind == "text":
        out = {"kind": "text", "text": p.text or ""}
    elif p.kind == "data":
        out = {"kind": "data", "data": p.data}
    else:
        f: dict[str, Any] = {"bytes": p.raw} if p.raw is not None else {"uri": p.url or ""}
        if p.media_type:
            f["mimeType"] = p.media_type
        if p.filename:
            f["name"] = p.filename
        out = {"kind": "file", "file": f}
    if p.metadata:
        out["metadata"] = p.metadata
    return out


def render_message(m: Message, dialect: Dialect) -> dict[str, Any]:
    out: dict[str, Any] = {} if dialect is not Dialect.V03 else {"kind": "message"}
    out["messageId"] = m.message_id
    if m.context_id:
        out["contextId"] = m.context_id
    if m.task_id:
        out["taskId"] = m.task_id
    out["role"] = _ROLE_NAMES[dialect].get(m.role, m.role)
    out["parts"] = [render_part(p, dialect) for p in m.parts]
    if m.metadata:
        out["metadata"] = m.metadata
    if m.reference_task_ids:
        out["referenceTaskIds"] = m.reference_task_ids
    if m.extensions:
        out["extensions"] = m.extensions
    return out


def render_artifact(a: Artifact, dialect: Dialect) -> dict[str, Any]:
    out: dict[str, Any] = {"artifactId": a.artifact_id}
    if a.name:
        out["name"] = a.name
    if a.description:
        out["description"] = a.description
    out["parts"] = [render_part(p, dialect) for p in a.parts]
    if a.metadata:
        out["metadata"] = a.metadata
    if a.extensions:
        out["extensions"] = a.extensions
    return out


def render_status(s: TaskStatus, dialect: Dialect) -> dict[str, Any]:
    out: dict[str, Any] = {"state": state_name(s.state, dialect)}
    if s.message is not None:
        out["message"] = render_message(s.message, dialect)
    if s.timestamp:
        out["timestamp"] = s.timestamp
    return out


def render_task(
    t: Task, dialect: Dialect, history_length: int | None = None, artifacts: bool = True
) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": "task"} if dialect is Dialect.V03 else {}
    out["id"] = t.id
    out["contextId"] = t.context_id
    out["status"] = render_status(t.status, dialect)
    if artifacts and t.artifacts:
        out["artifacts"] = [render_artifact(a, dialect) for a in t.artifacts]
    history = t.history
    if history_length is not None:
        history = history[-history_length:] if history_length > 0 else []
    if history:
        out["history"] = [render_message(m, dialect) for m in history]
    if t.metadata:
        out["metadata"] = t.metadata
    return out


def render_send_result(
    t: Task, dialect: Dialect, history_length: int | None = None
) -> dict[str, Any]:
    task = render_task(t, dialect, history_length)
    return {"task": task} if dialect is Dialect.V10 else task


def render_status_update(t: Task, dialect: Dialect, final: bool) -> dict[str, Any]:
    status = render_status(t.status, dialect)
    if dialect is Dialect.V10:
        return {"statusUpdate": {"taskId": t.id, "contextId": t.context_id, "status": status}}
    out: dict[str, Any] = {"kind": "status-update"} if dialect is Dialect.V03 else {}
    out.update(taskId=t.id, contextId=t.context_id, status=status, final=final)
    return out


def render_artifact_update(
    t: Task, a: Artifact, dialect: Dialect, append: bool = False, last_chunk: bool = True
) -> dict[str, Any]:
    art = render_artifact(a, dialect)
    if dialect is Dialect.V10:
        body: dict[str, Any] = {"taskId": t.id, "contextId": t.context_id, "artifact": art}
        if append:
            body["append"] = True
        if last_chunk:
            body["lastChunk"] = True
        return {"artifactUpdate": body}
    out: dict[str, Any] = {"kind": "artifact-update"} if dialect is Dialect.V03 else {}
    out.update(
        taskId=t.id, contextId=t.context_id, artifact=art, append=append, lastChunk=last_chunk
    )
    return out


# -- parse -------------------------------------------------------------------------------------


_CONTENT_KEYS = ("text", "raw", "url", "data")


def parse_part(d: Any, where: str) -> Part:
    """One part from any dialect. Raises InvalidParamsError naming ``where`` when it is not one."""
    if not is_mapping(d):
        raise InvalidParamsError(f"{where} must be an object")
    meta = d.get("metadata") if is_mapping(d.get("metadata")) else None
    kind = d.get("kind")
    if kind is not None:
        if kind == "text":
            if not isinstance(d.get("text"), str):
                raise InvalidParamsError(f"{where}.text must be a string")
            return Part("text", text=d["text"], metadata=meta)
        if kind == "data":
            if "data" not in d:
                raise InvalidParamsError(f"{where}.data is required")
            return Part("data", data=d["data"], metadata=meta)
        if kind == "file":
            f = d.get("file")
            if not is_mapping(f):
                raise InvalidParamsError(f"{where}.file must be an object")
            has = [k for k in ("bytes", "uri") if f.get(k) is not None]
            if len(has) != 1:
                raise InvalidParamsError(f"{where}.file must have exactly one of bytes, uri")
            if not isinstance(f[has[0]], str):
                raise InvalidParamsError(f"{where}.file.{has[0]} must be a string")
            return Part(
                "file",
                raw=f.get("bytes"),
                url=f.get("uri"),
                media_type=_str(f.get("mimeType")),
                filename=_str(f.get("name")),
                metadata=meta,
            )
        raise InvalidParamsError(f"{where}.kind must be one of text, data, file")
    present = [k for k in _CONTENT_KEYS if k in d]
    if len(present) != 1:
        raise InvalidParamsError(f"{where} must have exactly one of text, raw, url, data")
    key = present[0]
    if key != "data" and not isinstance(d[key], str):
        raise InvalidParamsError(f"{where}.{key} must be a string")
    media, name = _str(d.get("mediaType")), _str(d.get("filename"))
    if key == "text":
        return Part("text", text=d["text"], media_type=media, metadata=meta)
    if key == "data":
        return Part("data", data=d["data"], media_type=media, metadata=meta)
    return Part(
        "file", raw=d.get("raw"), url=d.get("url"), media_type=media, filename=name, metadata=meta
    )


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


MAX_ID = 256
"""Characters an id a caller sends may have (task, context, message, push config ids)."""
_NOT_IN_ID = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")  # controls (NUL too), lone surrogates


def check_id(value: str, where: str) -> str:
    """``value`` when it may be an id: one rule for every binding and every store (at most
    ``MAX_ID`` characters; no control character, NUL included, and no lone surrogate, which no
    store can keep and no log should show); else InvalidParamsError naming ``where``."""
    if len(value) > MAX_ID:
        raise InvalidParamsError(
            f"Invalid params: {where} is {len(value):,} characters long; an id has at most {MAX_ID}"
        )
    if value.isascii() and value.isprintable():  # most ids (UUIDs): no control character, at once
        return value
    bad = _NOT_IN_ID.search(value)
    if bad is not None:
        raise InvalidParamsError(
            f"Invalid params: {where} holds the character U+{ord(bad.group()):04X} at "
            f"{bad.start()}; an id has no control characters"
        )
    return value


_FREE_FORM = frozenset({"metadata", "data"})
"""Fields of protobuf type Struct/Value: a caller's own keys, which are never renamed."""


def _json_name(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def json_names(value: Any) -> Any:
    """1.0 params (of any binding) with every field named by its JSON name: ProtoJSON readers
    accept a field's proto name too (``task_id`` for ``taskId``, as the official TCK sends), so
    this agent does; a caller's own keys, inside ``metadata`` or a data part, are left as they are.
    ``value`` itself when nothing is renamed.

    Raises:
        InvalidParamsError: one object names a field both ways (``task_id`` and ``taskId``).
    """
    if is_array(value):
        items = [json_names(v) for v in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    if not is_object(value):
        return value
    out: dict[str, Any] = {}
    changed = False
    for key, item in value.items():
        name = _json_name(key) if "_" in key.strip("_") else key
        if name != key:
            if name in value:
                raise InvalidParamsError(
                    f"Invalid params: {key} and {name} name the same field; send one"
                )
            changed = True
        inner = item if name in _FREE_FORM else json_names(item)
        changed = changed or inner is not item
        out[name] = inner
    return out if changed else value


def _check_value(value: Any, where: str) -> None:
    if isinstance(value, (dict, list)) and too_deep(value, MAX_VALUE_DEPTH):
        raise InvalidParamsError(
            f"Invalid params: {where} nests deeper than {MAX_VALUE_DEPTH} levels, "
            "more than every binding can answer with (gRPC's decoders stop near 32)"
        )


def parse_metadata(value: Any, where: str) -> dict[str, Any] | None:
    """A caller's free-form ``metadata`` (of a request, a message, a part): an object nested no
    deeper than every binding answers with, or None when absent or empty; else -32602 naming
    ``where``."""
    if value is None:
        return None
    if not is_mapping(value):
        raise InvalidParamsError(f"Invalid params: {where} must be an object")
    _check_value(value, where)
    return dict(value) or None


def optional_string(d: Mapping[str, Any], key: str, where: str) -> str | None:
    """``d[key]`` as a string, or None when absent or empty; anything but a string is -32602 naming
    ``where.key``."""
    v = d.get(key)
    if v is None or v == "":
        return None
    if not isinstance(v, str):
        raise InvalidParamsError(f"{where}.{key} must be a string")
    return v


def parse_message(d: Any, where: str = "message", *, inbound: bool = True) -> Message:
    """A message from any dialect. ``inbound`` demands the user role and a messageId."""
    if not is_mapping(d):
        raise InvalidParamsError(f"{where} must be an object")
    mid = d.get("messageId")
    if inbound and (not isinstance(mid, str) or not mid):
        raise InvalidParamsError(f"{where}.messageId is required")
    context_id, task_id = (
        optional_string(d, "contextId", where),
        optional_string(d, "taskId", where),
    )
    if (
        inbound
    ):  # what a caller names: ids every store can keep, values every binding can answer with
        check_id(str(mid), f"{where}.messageId")
        for key, value in (("contextId", context_id), ("taskId", task_id)):
            if value is not None:
                check_id(value, f"{where}.{key}")
    role = _ROLE_IN.get(given) if isinstance(given := d.get("role"), str) else None
    if inbound and role != "user":
        raise InvalidParamsError(f"{where}.role must be user (ROLE_USER), got {d.get('role')!r}")
    parts = d.get("parts")
    if not is_array(parts) or not parts:
        raise InvalidParamsError(f"{where}.parts must be a non-empty array")
    meta = d.get("metadata")
    if meta is not None and not is_mapping(meta):
        raise InvalidParamsError(f"{where}.metadata must be an object")
    if inbound:  # where a fault is, named only when there is something to check there
        if meta is not None:
            parse_metadata(meta, f"{where}.metadata")
        for i, part in enumerate(parts):
            if is_mapping(part):
                for key in ("metadata", "data"):
                    if isinstance(value := part.get(key), (dict, list)):
                        _check_value(value, f"{where}.parts[{i}].{key}")
    refs = d.get("referenceTaskIds")
    extensions = d.get("extensions")
    if inbound and extensions is not None:
        extensions = _uris(extensions, f"{where}.extensions")
    return Message(
        role=role or "agent",  # type: ignore[arg-type]  # parsed from the wire: only user or agent get here
        parts=[parse_part(p, f"{where}.parts[{i}]") for i, p in enumerate(parts)],
        message_id=mid if isinstance(mid, str) and mid else "",
        context_id=context_id,
        task_id=task_id,
        metadata=dict(meta) if meta else None,
        reference_task_ids=[r for r in refs if isinstance(r, str)] if is_array(refs) else None,
        extensions=_strings(extensions),
    )


def _uris(value: Any, where: str) -> list[str]:
    """A caller's list of extension URIs, each checked as an id is."""
    if not is_array(value) or not all(isinstance(v, str) and v for v in value):
        raise InvalidParamsError(f"Invalid params: {where} must be an array of URIs")
    return [check_id(str(v), where) for v in value]


def _strings(value: Any) -> list[str] | None:
    """The strings of a peer's list (what is not one left out); None for none."""
    kept = [v for v in value if isinstance(v, str)] if is_array(value) else []
    return kept or None


def _lenient_message(d: Any) -> Message | None:
    try:
        return parse_message(d, inbound=False)
    except InvalidParamsError:
        return None


def parse_task(d: Any) -> Task:
    """A task from any dialect (or a v1.0 ``{"task": ...}`` wrapper). Raises InvalidParamsError."""
    if is_mapping(d) and "task" in d and is_mapping(d["task"]) and "id" not in d:
        d = d["task"]
    if not is_mapping(d) or not isinstance(d.get("id"), str):
        raise InvalidParamsError("a task must be an object with an id")
    status: Mapping[str, Any] = given if is_mapping(given := d.get("status")) else {}
    state = parse_state(status.get("state")) or TaskState.UNKNOWN
    msg = _lenient_message(status.get("message")) if status.get("message") is not None else None
    artifacts: list[Artifact] = []
    for a in d.get("artifacts") or ():
        if is_mapping(a):
            parts = [p for p in (_lenient_part(x) for x in a.get("parts") or ()) if p is not None]
            artifacts.append(
                Artifact(
                    parts,
                    str(a.get("artifactId") or ""),
                    _str(a.get("name")),
                    _str(a.get("description")),
                    a.get("metadata") or None,
                    _strings(a.get("extensions")),
                )
            )
    history = [m for m in (_lenient_message(x) for x in d.get("history") or ()) if m is not None]
    return Task(
        id=d["id"],
        context_id=str(d.get("contextId") or ""),
        status=TaskStatus(state, msg, _str(status.get("timestamp"))),
        history=history,
        artifacts=artifacts,
        metadata=d.get("metadata") or None,
    )


def _lenient_part(d: Any) -> Part | None:
    try:
        return parse_part(d, "part")
    except InvalidParamsError:
        return None
