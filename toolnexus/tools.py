"""Tools: the one uniform shape every source (functions, skills, builtins, MCP, A2A) becomes.

A :class:`Tool` has a name, a description, a JSON Schema for its input and a source, and
``await tool.execute(args, ctx)`` always returns a :class:`ToolResult`: arguments are checked
against the schema first, and nothing a tool raises escapes (except the caller's own
cancellation). :func:`tool` turns a plain Python function into a Tool, deriving the schema from
its type hints and docstring.
"""

from __future__ import annotations

import asyncio
import collections.abc
import dataclasses
import enum
import functools
import inspect
import json
import logging
import mimetypes
import os
import re
import types
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union, cast, get_args, get_origin, get_type_hints

log = logging.getLogger("toolnexus.tools")

__all__ = [
    "Tool",
    "ToolResult",
    "ToolContext",
    "Attachment",
    "Progress",
    "Request",
    "Answer",
    "AUTH",
    "REJECT",
    "tool",
    "sanitize",
    "schema_for",
    "to_json",
]

ToolHandler = Callable[[dict[str, Any], "ToolContext"], Awaitable[Any]]

_SANITIZE = re.compile(r"[^a-zA-Z0-9_-]")


def sanitize(name: str) -> str:
    """Replace every character outside ``[a-zA-Z0-9_-]`` with ``_``."""
    return _SANITIZE.sub("_", name)


AUTH = "auth"
"""A :class:`Request` for authorization: a served task waits in ``auth-required`` (A2A §7.6)."""
REJECT = "reject"
"""A :class:`Request` that is a refusal: a served task ends ``rejected``, ``prompt`` says why;
nothing answers it."""


def _request_id() -> str:
    return "req_" + os.urandom(6).hex()


@dataclass
class Request:
    """A tool's request for out-of-band input (put in ``ToolResult.metadata["pending"]``).

    ``kind`` says what a served task waits in: :data:`AUTH` (``auth-required``), :data:`REJECT`
    (no wait: the task is ``rejected``), anything else (``input``, ``confirm``, ...) a question
    (``input-required``). The caller's next message on the task answers a question or an
    authorization alike, and the tool runs again with it (``ToolContext.answer``).

    The wire names (``to_dict``) follow the toolnexus contract: ``id, kind, prompt, url, data,
    expiresAt``.
    """

    id: str
    kind: str = "input"
    prompt: str = ""
    url: str | None = None
    data: Any = None
    expires_at: str | None = None
    on_cancel: Callable[[], Awaitable[Any]] | None = field(default=None, repr=False, compare=False)
    """Called when the task that waits on this request is canceled (e.g. a remote agent's tool
    cancels the remote task that asked); never on the wire."""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "kind": self.kind, "prompt": self.prompt}
        if self.url is not None:
            out["url"] = self.url
        if self.data is not None:
            out["data"] = self.data
        if self.expires_at is not None:
            out["expiresAt"] = self.expires_at
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Request:
        return cls(
            id=str(d.get("id", "")),
            kind=str(d.get("kind", "input")),
            prompt=str(d.get("prompt", "")),
            url=d.get("url"),
            data=d.get("data"),
            expires_at=d.get("expiresAt", d.get("expires_at")),
        )


@dataclass
class Answer:
    """The answer to a :class:`Request`: wire names ``id, ok, data``."""

    id: str
    ok: bool = True
    data: Any = None

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "ok": self.ok, "data": self.data}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> Answer:
        return cls(id=str(d.get("id", "")), ok=bool(d.get("ok", True)), data=d.get("data"))


@dataclass(frozen=True)
class Attachment:
    """A file a run carries: one the caller sent (given to the model as a content block where its
    style takes the media type, and to tools in the task's folder, :attr:`ToolContext.folder`), or
    one a tool made (:attr:`ToolResult.files`: a served task's artifact).

    Attributes:
        name: a plain file name (no folders).
        media_type: its media type (``image/png``).
        data: its bytes.
    """

    name: str
    media_type: str
    data: bytes = field(repr=False)

    @classmethod
    def from_path(cls, path: str | os.PathLike[str], media_type: str | None = None) -> Attachment:
        """A local file, read whole (its media type guessed from its name unless given)."""
        p = os.fspath(path)
        with open(p, "rb") as f:
            data = f.read()
        kind = media_type or mimetypes.guess_type(p)[0] or "application/octet-stream"
        return cls(os.path.basename(p), kind, data)


@dataclass
class ToolResult:
    """What every tool execution returns.

    Attributes:
        output: the text handed back to the model.
        is_error: True when the call failed; ``output`` then says why.
        metadata: anything else (``pending`` for a suspended call, telemetry of remote calls).
        files: files the tool made: each becomes an artifact of a served task (a file part).
        data: structured data the tool made (any JSON value; None: none): an artifact of a
            served task (a data part).
    """

    output: str
    is_error: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    files: list[Attachment] = field(default_factory=list, repr=False)
    data: Any = field(default=None, repr=False)

    @classmethod
    def error(cls, message: str, **metadata: Any) -> ToolResult:
        return cls(output=message, is_error=True, metadata=dict(metadata))

    @classmethod
    def needs_auth(cls, prompt: str, *, url: str | None = None, data: Any = None) -> ToolResult:
        """Suspend the run until the caller authorizes: a served task moves to ``auth-required``
        with ``prompt`` (what to authorize, and where: ``url``) as its status message; the
        caller's next message on the task answers it, and the tool runs again with that answer in
        ``ctx.answer`` (the credential itself is best obtained out of band, A2A §7.6.3)."""
        request = Request(_request_id(), AUTH, prompt, url=url, data=data)
        return cls(f"waiting for authorization: {prompt}", metadata={"pending": request})

    @classmethod
    def reject(cls, reason: str) -> ToolResult:
        """End the run refusing the work: a served task ends ``rejected`` (A2A §4.1.3), with
        ``reason`` as its status message; the model is not asked again."""
        request = Request(_request_id(), REJECT, reason)
        return cls(f"rejected: {reason}", metadata={"pending": request})

    @property
    def pending(self) -> Request | None:
        """The :class:`Request` this result suspends on, if any."""
        p = self.metadata.get("pending")
        if isinstance(p, Request):
            return p
        if isinstance(p, Mapping):
            return Request.from_dict(p)
        return None


@dataclass(frozen=True)
class Progress:
    """How far a running tool has got: numbers (``done`` of ``total``), words (``message``), or
    both. A remote agent used as a tool reports its reply so far as ``message``; a tool that counts
    reports ``done`` (and ``total`` when it knows it). Over MCP it becomes
    ``notifications/progress``; from a remote MCP tool's ``notifications/progress`` it is made."""

    done: float | None = None
    total: float | None = None
    message: str | None = None


ProgressFn = Callable[[Progress], Awaitable[None]]
"""Who hears a tool's progress (:attr:`ToolContext.on_progress`)."""


@dataclass
class ToolContext:
    """What a tool is told about the call it serves.

    Attributes:
        timeout: seconds the call may take; past it the call ends as an error result.
        cancel: set it to cancel the call; a tool may also poll it.
        answer: set only when a suspended tool is executed again with the caller's answer.
        on_progress: who hears the tool's progress, set by whoever runs it (the MCP server sends
            it to a caller that asked for progress); tools call :meth:`progress`, never this.
        folder: a served task's own folder, holding the files its caller sent and its data parts
            (``data.json``, one a part; None: no task, or neither); a tool reads them there and
            writes nowhere else of the server's.
        toolkit: the toolkit of the model's run the call is part of (its ``skills()``), for a
            model's own tools (the demo's ``read_skill_file``); None outside a run.
    """

    timeout: float | None = None
    cancel: asyncio.Event | None = None
    answer: Answer | None = None
    on_progress: ProgressFn | None = None
    folder: os.PathLike[str] | None = None
    toolkit: Any = None

    @property
    def cancelled(self) -> bool:
        return self.cancel is not None and self.cancel.is_set()

    async def progress(
        self, done: float | None = None, total: float | None = None, message: str | None = None
    ) -> None:
        """Tell the caller how far the call has got (nothing happens when nobody listens). A
        listener that fails is logged and forgotten: progress never fails the call."""
        if self.on_progress is None:
            return
        try:
            await self.on_progress(Progress(done, total, message))
        except Exception:  # noqa: BLE001 - a listener's failure is not the tool's
            log.warning("a progress listener failed; the call goes on", exc_info=True)


def openai_tools(tools: Iterable[Tool]) -> list[dict[str, Any]]:
    """The tools as OpenAI's function calling takes them: ``[{type: "function", function: {name,
    description, parameters}}]``."""
    return [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": t.input_schema,
            },
        }
        for t in tools
    ]


class Tool:
    """A named, described, schema-checked callable.

    Args:
        name: the name the model calls it by.
        description: what it does, for the model.
        input_schema: a JSON Schema object for its arguments.
        handler: ``async (args, ctx) -> str | ToolResult | Any``.
        source: where it came from: ``function``, ``skill``, ``builtin``, ``mcp``, ``a2a``.
        validate: check arguments against ``input_schema`` before calling the handler.
    """

    def __init__(
        self,
        name: str,
        description: str,
        input_schema: dict[str, Any],
        handler: ToolHandler,
        *,
        source: str = "function",
        validate: bool = True,
    ) -> None:
        self.name = name
        self.description = description
        self.input_schema = input_schema
        self.source = source
        self._handler = handler
        self._validate = validate
        self._validator: Any = None

    def __repr__(self) -> str:
        return f"Tool(name={self.name!r}, source={self.source!r})"

    def check_args(self, args: Any) -> str | None:
        """The reason ``args`` do not fit the schema (naming the field), or None."""
        if not isinstance(args, Mapping):
            return f"arguments must be a JSON object, got {_json_type(args)}"
        if not self._validate:
            return None
        if self._validator is None:
            try:
                self._validator = _validator_for(self.input_schema)
            except ValueError as exc:
                return str(exc)
        error = next(iter(self._validator.iter_errors(args)), None)
        return None if error is None else _describe_error(error)

    async def execute(
        self, args: Mapping[str, Any] | None = None, ctx: ToolContext | None = None
    ) -> ToolResult:
        """Run the tool. Never raises, except when the calling task itself is cancelled."""
        ctx = ctx or ToolContext()
        args = {} if args is None else args
        problem = self.check_args(args)
        if problem is not None:
            return ToolResult.error(f"{self.name}: {problem}")
        if ctx.cancelled:
            return ToolResult.error(f"{self.name}: canceled")
        try:
            value = await _bounded(self._handler(dict(args), ctx), ctx)
        except TimeoutError:
            return ToolResult.error(f"{self.name}: timed out after {ctx.timeout:g}s")
        except _Canceled:
            return ToolResult.error(f"{self.name}: canceled")
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a tool's failure is the model's business, not a crash
            return ToolResult.error(_exception_text(exc))
        return _to_result(value)


class FunctionTool(Tool):
    """A Tool made from a Python function by :func:`tool`; calling it calls the function."""

    def __init__(
        self, fn: Callable[..., Any], name: str | None = None, description: str | None = None
    ) -> None:
        spec = _FunctionSpec(fn)
        super().__init__(
            name or fn.__name__,
            description if description is not None else spec.description,
            spec.schema,
            spec.call,
            source="function",
        )
        self.fn = fn
        functools.update_wrapper(self, fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.fn(*args, **kwargs)


@typing.overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...
@typing.overload
def tool(
    *, name: str | None = None, description: str | None = None
) -> Callable[[Callable[..., Any]], FunctionTool]: ...
def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Make a Tool of a plain function, sync or async.

    The input schema comes from the type hints (``str``, numbers, ``bool``, ``Optional``,
    ``Literal``, enums, lists, tuples, dicts, dataclasses, TypedDicts, ``Annotated[x, "doc"]``), the
    descriptions from the docstring (Google ``Args:`` or Sphinx ``:param x:``). A parameter hinted
    :class:`ToolContext` receives the call's context and stays out of the schema. A returned string
    is the output, other values are JSON-encoded, a :class:`ToolResult` is kept as it is, and a
    raised exception becomes an error result with its message. Sync functions run in a thread.

    Use as ``@tool``, ``@tool(name="x")`` or ``tool(fn)``.
    """
    if fn is not None:
        return FunctionTool(fn, name, description)
    return lambda f: FunctionTool(f, name, description)


# ----------------------------------------------------------------------------------------------
# results


def to_json(value: Any) -> str:
    """JSON-encode a tool's return value (dataclasses, enums, sets and pydantic models included)."""
    return json.dumps(value, default=_json_default, ensure_ascii=False)


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, (set, frozenset, tuple)):
        return list(value)
    dump = getattr(value, "model_dump", None)  # a pydantic model, if the user brings one
    if callable(dump):
        return dump()
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    return str(value)


def _to_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if value is None:
        return ToolResult("")
    if isinstance(value, str):
        return ToolResult(value)
    if isinstance(value, Attachment):  # a file made: the model hears of it, the task carries it
        return ToolResult(
            f"made {value.name} ({value.media_type}, {len(value.data):,} bytes)", files=[value]
        )
    return ToolResult(to_json(value))


def _exception_text(exc: BaseException) -> str:
    text = str(exc).strip()
    return text if text else type(exc).__name__


class _Canceled(Exception):
    pass


async def _bounded(coro: Awaitable[Any], ctx: ToolContext) -> Any:
    """Await ``coro`` within ``ctx.timeout``, ending it early when ``ctx.cancel`` is set."""
    if ctx.cancel is None:
        if ctx.timeout is None:
            return await coro
        return await asyncio.wait_for(coro, ctx.timeout)
    work = asyncio.ensure_future(coro)
    stop = asyncio.ensure_future(ctx.cancel.wait())
    try:
        done, _ = await asyncio.wait(
            {work, stop}, timeout=ctx.timeout, return_when=asyncio.FIRST_COMPLETED
        )
        if work in done:
            return work.result()
        if stop in done:
            raise _Canceled()
        raise TimeoutError()
    finally:
        for fut in (work, stop):
            if not fut.done():
                fut.cancel()
        await asyncio.gather(work, stop, return_exceptions=True)


# ----------------------------------------------------------------------------------------------
# validation messages


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, (list, tuple)):
        return "array"
    return type(value).__name__


def _field_path(path: Sequence[Any]) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _validator_for(schema: dict[str, Any]) -> Any:
    """A compiled validator of ``schema`` (jsonschema-rs: imports in milliseconds and validates
    natively, where ``jsonschema`` took seconds to import on the first call, on the event loop).
    The draft is the schema's ``$schema``, 2020-12 when it names none."""
    import jsonschema_rs  # noqa: PLC0415  # start-up: a native library (3.5 MiB), at the first check

    try:
        if "$schema" in schema:
            return jsonschema_rs.validator_for(schema)
        return jsonschema_rs.Draft202012Validator(schema)
    except (ValueError, jsonschema_rs.ValidationError) as exc:  # the tool's own schema is broken
        raise ValueError(f"the input schema cannot be used: {exc}") from None


def _describe_error(err: Any) -> str:
    path = list(err.instance_path)
    kind = err.kind
    name = type(kind).__name__
    if name == "Required":
        return f"missing required argument '{_field_path(path + [kind.property])}'"
    if name == "AdditionalProperties":
        names = ", ".join(f"'{_field_path(path + [e])}'" for e in kind.unexpected) or err.message
        return f"unexpected argument {names}"
    where = _field_path(path) or "(arguments)"
    if name == "Type":
        types = " or ".join(repr(t) for t in kind.types)
        return f"invalid argument '{where}': {err.instance!r} is not of type {types}"
    return f"invalid argument '{where}': {err.message}"


# ----------------------------------------------------------------------------------------------
# schema from type hints


_NONE_TYPE = type(None)


def schema_for(hint: Any, description: str | None = None) -> dict[str, Any]:
    """The JSON Schema of a Python type hint (inlined: no ``$ref``, as models prefer)."""
    schema = _schema(hint, set())
    if description:
        schema = {**schema, "description": description}
    return schema


def _is_typeddict(hint: Any) -> bool:
    return isinstance(hint, type) and issubclass(hint, dict) and hasattr(hint, "__total__")


def _schema(hint: Any, seen: set[int]) -> dict[str, Any]:
    if hint is Any or hint is inspect.Parameter.empty or hint is object:
        return {}
    if hint is None or hint is _NONE_TYPE:
        return {"type": "null"}
    origin = get_origin(hint)
    args = get_args(hint)
    if origin is typing.Annotated:
        base = _schema(args[0], seen)
        docs = [a for a in args[1:] if isinstance(a, str)]
        return {**base, "description": docs[0]} if docs else base
    if origin in (Union, types.UnionType):
        return _union_schema(args, seen)
    if origin is Literal:
        return _literal_schema(list(args))
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return _enum_schema([m.value for m in hint])
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if hint in (list, tuple, set, frozenset, Sequence) or origin in (
        list,
        set,
        frozenset,
        Sequence,
        typing.Sequence,
        collections.abc.Iterable,
    ):
        out: dict[str, Any] = {"type": "array"}
        if args:
            out["items"] = _schema(args[0], seen)
        if hint in (set, frozenset) or origin in (set, frozenset):
            out["uniqueItems"] = True
        return out
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return {"type": "array", "items": _schema(args[0], seen)}
        return {
            "type": "array",
            "prefixItems": [_schema(a, seen) for a in args],
            "minItems": len(args),
            "maxItems": len(args),
        }
    if hint in (dict, Mapping) or origin in (
        dict,
        Mapping,
        typing.Mapping,
        collections.abc.Mapping,
    ):
        out = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            out["additionalProperties"] = _schema(args[1], seen)
        return out
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        return _object_schema(hint, seen, _dataclass_fields(hint))
    if _is_typeddict(hint) and isinstance(hint, type):
        hints = get_type_hints(hint, include_extras=True)
        required = getattr(hint, "__required_keys__", set(hints))
        return _object_schema(
            hint, seen, [(n, h, None, n in required, _no_default) for n, h in hints.items()]
        )
    schema = getattr(hint, "model_json_schema", None)  # a pydantic model, if the user brings one
    if callable(schema):
        return cast("dict[str, Any]", schema())
    raise TypeError(f"cannot derive a JSON Schema from type hint {hint!r}")


def _union_schema(args: tuple[Any, ...], seen: set[int]) -> dict[str, Any]:
    """One of the members; an optional one (``X | None``) as X's type with ``null`` beside it."""
    members = [a for a in args if a is not _NONE_TYPE]
    nullable = len(members) != len(args)
    inner = (
        _schema(members[0], seen)
        if len(members) == 1
        else {"anyOf": [_schema(a, seen) for a in members]}
    )
    if not nullable:
        return inner
    if isinstance(inner.get("type"), str) and "enum" not in inner:
        return {**inner, "type": [inner["type"], "null"]}
    return {"anyOf": [inner, {"type": "null"}]}


def _literal_schema(values: list[Any]) -> dict[str, Any]:
    """A ``Literal``'s values, with their JSON type when they share one."""
    kinds = {_json_type(v) for v in values}
    out: dict[str, Any] = {"enum": values}
    if len(kinds) == 1:
        kind = kinds.pop()
        out["type"] = (
            "integer" if kind == "number" and all(isinstance(v, int) for v in values) else kind
        )
    return out


def _enum_schema(values: list[Any]) -> dict[str, Any]:
    """An ``Enum``'s member values, typed when all are strings or all integers."""
    out: dict[str, Any] = {"enum": values}
    if all(isinstance(v, str) for v in values):
        out["type"] = "string"
    elif all(isinstance(v, int) and not isinstance(v, bool) for v in values):
        out["type"] = "integer"
    return out


_no_default = object()


def _dataclass_fields(cls: type) -> list[tuple[str, Any, str | None, bool, Any]]:
    hints = get_type_hints(cls, include_extras=True)
    docs = _param_docs(inspect.getdoc(cls) or "")
    out = []
    for f in dataclasses.fields(cls):
        if not f.init:
            continue
        has_default = (
            f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
        )
        default = f.default if f.default is not dataclasses.MISSING else _no_default
        desc = f.metadata.get("description") if f.metadata else None
        out.append(
            (f.name, hints.get(f.name, Any), desc or docs.get(f.name), not has_default, default)
        )
    return out


def _object_schema(
    cls: type, seen: set[int], fields: list[tuple[str, Any, str | None, bool, Any]]
) -> dict[str, Any]:
    if id(cls) in seen:
        raise TypeError(f"recursive type {cls.__name__} cannot be described without $ref")
    seen = seen | {id(cls)}
    props: dict[str, Any] = {}
    required: list[str] = []
    for name, hint, desc, is_required, default in fields:
        prop = _schema(hint, seen)
        if desc:
            prop["description"] = desc
        if default is not _no_default and _json_safe(default):
            prop["default"] = default.value if isinstance(default, enum.Enum) else default
        props[name] = prop
        if is_required:
            required.append(name)
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    out["additionalProperties"] = False
    return out


def _json_safe(value: Any) -> bool:
    if isinstance(value, enum.Enum):
        value = value.value
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


# ----------------------------------------------------------------------------------------------
# docstrings


_SECTION = re.compile(
    r"^(Args|Arguments|Parameters|Params|Returns|Return|Raises|Yields|Examples|Example|Notes|Note|Attributes)\s*:\s*$"
)
_GOOGLE_PARAM = re.compile(r"^\**(\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)$")
_SPHINX_PARAM = re.compile(r"^:param\s+(?:[^:]*\s)?(\w+)\s*:\s*(.*)$")


def _summary(doc: str) -> str:
    lines: list[str] = []
    for line in doc.splitlines():
        if _SECTION.match(line.strip()) or line.strip().startswith(":param"):
            break
        lines.append(line)
    return "\n".join(lines).strip()


def _param_docs(doc: str) -> dict[str, str]:
    """Parameter descriptions from a Google-style ``Args:`` section or Sphinx ``:param x:`` lines."""
    out: dict[str, str] = {}
    in_args = False
    current: str | None = None
    indent = 0
    for raw in doc.splitlines():
        line = raw.strip()
        sphinx = _SPHINX_PARAM.match(line)
        if sphinx:
            name = current = str(sphinx.group(1))
            out[name] = sphinx.group(2).strip()
            in_args = False
            continue
        section = _SECTION.match(line)
        if section:
            in_args = section.group(1) in ("Args", "Arguments", "Parameters", "Params")
            current = None
            continue
        if not line:
            continue
        level = len(raw) - len(raw.lstrip())
        if in_args:
            match = _GOOGLE_PARAM.match(line)
            if match and (current is None or level <= indent):
                name = current = str(match.group(1))
                indent = level
                out[name] = match.group(2).strip()
                continue
            if current is not None and level > indent:
                out[current] = (out[current] + " " + line).strip()
                continue
            in_args = False
            current = None
        elif current is not None and line and not line.startswith(":"):
            out[current] = (out[current] + " " + line).strip()
    return out


# ----------------------------------------------------------------------------------------------
# calling a function with checked JSON arguments


class _FunctionSpec:
    """A function's schema and how to call it with the JSON arguments a model sends."""

    def __init__(self, fn: Callable[..., Any]) -> None:
        self.fn = fn
        self.is_async = inspect.iscoroutinefunction(fn) or inspect.iscoroutinefunction(
            getattr(fn, "__call__", None)  # noqa: B004  # an object's __call__: async?
        )
        doc = inspect.getdoc(fn) or ""
        self.description = _summary(doc)
        docs = _param_docs(doc)
        try:
            hints = get_type_hints(fn, include_extras=True)
        except Exception as exc:
            raise TypeError(f"tool {fn.__name__}: cannot read its type hints: {exc}") from exc
        sig = inspect.signature(fn)
        self.hints: dict[str, Any] = {}
        self.ctx_param: str | None = None
        self.positional: list[str] = []
        props: dict[str, Any] = {}
        required: list[str] = []
        extra = False
        for pname, param in sig.parameters.items():
            hint = hints.get(pname, param.annotation)
            if _strip_annotated(hint) is ToolContext:
                self.ctx_param = pname
                continue
            if param.kind is param.VAR_KEYWORD:
                extra = True
                continue
            if param.kind is param.VAR_POSITIONAL:
                raise TypeError(
                    f"tool {fn.__name__}: *{pname} cannot be described as a JSON argument"
                )
            if param.kind is param.POSITIONAL_ONLY:
                self.positional.append(pname)
            try:
                prop = schema_for(hint)
            except TypeError as exc:
                raise TypeError(f"tool {fn.__name__}, parameter {pname!r}: {exc}") from exc
            if pname in docs and "description" not in prop:
                prop["description"] = docs[pname]
            if param.default is param.empty:
                required.append(pname)
            elif _json_safe(param.default):
                d = param.default
                prop["default"] = (
                    d.value
                    if isinstance(d, enum.Enum)
                    else (list(d) if isinstance(d, tuple) else d)
                )
            props[pname] = prop
            self.hints[pname] = hint
        schema: dict[str, Any] = {"type": "object", "properties": props}
        if required:
            schema["required"] = required
        if not extra:
            schema["additionalProperties"] = False
        self.schema = schema

    async def call(self, args: dict[str, Any], ctx: ToolContext) -> Any:
        kwargs = {k: _coerce(v, self.hints.get(k, Any)) for k, v in args.items()}
        pos = [kwargs.pop(p) for p in self.positional if p in kwargs]
        if self.ctx_param is not None:
            kwargs[self.ctx_param] = ctx
        if self.is_async:
            return await self.fn(*pos, **kwargs)
        result = await asyncio.to_thread(self.fn, *pos, **kwargs)
        if inspect.isawaitable(result):
            result = await result
        return result


def _strip_annotated(hint: Any) -> Any:
    while get_origin(hint) is typing.Annotated:
        hint = get_args(hint)[0]
    return hint


def _coerce(value: Any, hint: Any) -> Any:
    """Turn checked JSON into the Python value the hint asks for (dataclasses, enums, tuples, sets)."""
    hint = _strip_annotated(hint)
    if value is None:
        return None
    origin = get_origin(hint)
    args = get_args(hint)
    if origin in (Union, types.UnionType):
        for member in args:
            if member is _NONE_TYPE:
                continue
            try:
                return _coerce(value, member)
            except (TypeError, ValueError):
                continue
        return value
    if isinstance(hint, type) and issubclass(hint, enum.Enum):
        return hint(value)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type) and isinstance(value, Mapping):
        hints = get_type_hints(hint, include_extras=True)
        return hint(**{k: _coerce(v, hints.get(k, Any)) for k, v in value.items()})
    if isinstance(value, list):
        if origin is tuple:
            if len(args) == 2 and args[1] is Ellipsis:
                return tuple(_coerce(v, args[0]) for v in value)
            return (
                tuple(_coerce(v, a) for v, a in zip(value, args, strict=False))
                if args
                else tuple(value)
            )
        item = args[0] if args else Any
        items = [_coerce(v, item) for v in value]
        if hint in (set, frozenset) or origin in (set, frozenset):
            return set(items)
        if hint is tuple:
            return tuple(items)
        return items
    if isinstance(value, Mapping) and origin in (dict, Mapping) and len(args) == 2:
        return {k: _coerce(v, args[1]) for k, v in value.items()}
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value
