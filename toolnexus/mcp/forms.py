"""The forms an MCP inspector draws (the TUI's MCP mode, its web form, the notebook's widget), made
here once: fields from a JSON schema (a tool's arguments, an elicitation's ``requestedSchema``), a
prompt's arguments or a URI template (:class:`Field`), the values typed into them, a URI template
expanded (RFC 6570), and a stdio server's command line with its environment
(:func:`split_command`) and roots (:func:`root_uri`)."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from ..display import printable
from ..secrets import expand_env

__all__ = [
    "Field",
    "form_fields",
    "prompt_fields",
    "form_values",
    "field_value",
    "template_fields",
    "expand_template",
    "split_command",
    "root_uri",
]

MAX_FIELDS = 100
"""The most fields a form made from a peer's schema has."""


@dataclass(frozen=True)
class Field:
    """One field of a form made from a JSON schema (a tool's arguments, an elicitation's
    ``requestedSchema``) or a prompt's argument list: its name, the type as people read it, and
    how its typed text becomes the JSON value sent."""

    name: str
    schema: dict[str, Any]
    required: bool = False

    @property
    def kind(self) -> str:
        """The type as a schema gives it: ``integer``, ``string | null``, ``array of string``, one
        of its ``enum`` values, or ``any`` (the peer's text, made printable)."""
        return printable(_kind(self.schema), 120)

    @property
    def title(self) -> str:
        return printable(str(self.schema.get("title") or self.name), 80)

    @property
    def description(self) -> str:
        return printable(str(self.schema.get("description") or ""), 200)

    @property
    def default(self) -> str:
        """The default as the text to put in the field ("" for none)."""
        value = self.schema.get("default")
        if value is None:
            return ""
        return value if isinstance(value, str) else json.dumps(value)

    @property
    def choices(self) -> list[Any]:
        """The values an ``enum`` (or a ``oneOf`` of ``const``s) allows, else none."""
        if isinstance(self.schema.get("enum"), list):
            return list(self.schema["enum"])
        options = self.schema.get("oneOf") or self.schema.get("anyOf")
        if (
            isinstance(options, list)
            and options
            and all(isinstance(o, dict) and "const" in o for o in options)
        ):
            return [o["const"] for o in options]
        return []

    @property
    def boolean(self) -> bool:
        kinds = self.schema.get("type")
        return kinds == "boolean" or (isinstance(kinds, list) and "boolean" in kinds)

    @property
    def control(self) -> str:
        """How a form shows the field: ``checkbox`` for a boolean that is required or has a
        default, ``choice`` for an ``enum`` (or a boolean that may be left out: true, false or
        nothing; :attr:`options`), else ``text``."""
        if self.boolean and not self.choices and (self.required or "default" in self.schema):
            return "checkbox"
        return "choice" if self.options else "text"

    @property
    def options(self) -> list[Any]:
        """A choice's values: the ``enum``'s, or true and false for a boolean."""
        return self.choices or ([True, False] if self.boolean else [])

    @property
    def hint(self) -> str:
        return (
            f"{self.kind}, required"
            if self.required
            else f"{self.kind}, optional: empty leaves it out"
        )

    def value(self, text: str) -> Any:
        """The field's text as the JSON value its schema wants (strings stay strings)."""
        return field_value(text, self.schema)


def choice_text(value: Any) -> str:
    """A choice as its form's text reads it (:func:`form_values`): a string as itself, anything
    else as JSON."""
    return value if isinstance(value, str) else json.dumps(value)


def field_value(text: str, schema: dict[str, Any]) -> Any:
    """A form field's text as the JSON value its schema wants (strings stay strings)."""
    kind = schema.get("type")
    kinds = kind if isinstance(kind, list) else [kind]
    if "string" in kinds and not text.startswith(("{", "[")):
        return text
    if "boolean" in kinds and text.strip().lower() in ("yes", "no", "y", "n"):
        return text.strip().lower() in ("yes", "y")
    try:
        return json.loads(text)
    except ValueError:
        return text


def _kind(schema: dict[str, Any]) -> str:
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return "one of " + ", ".join(json.dumps(v) for v in schema["enum"][:8])
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(str(k) for k in kind)
    if kind == "array" and isinstance(schema.get("items"), dict) and schema["items"].get("type"):
        return f"array of {schema['items']['type']}"
    if isinstance(kind, str):
        return kind
    options = schema.get("anyOf") or schema.get("oneOf")
    if isinstance(options, list) and all(isinstance(o, dict) for o in options):
        if options and all("const" in o for o in options):
            return "one of " + ", ".join(json.dumps(o["const"]) for o in options[:8])
        return " | ".join(_kind(o) for o in options)
    return "any"


def form_fields(schema: Any) -> list[Field]:
    """The fields of an object schema's ``properties``, in order (a name is the peer's text: a
    front end gives each field an id by its position)."""
    schema = schema if isinstance(schema, dict) else {}
    props = schema.get("properties")
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    if not isinstance(props, dict):
        return []
    return [
        Field(str(name), sub if isinstance(sub, dict) else {}, name in needed)
        for name, sub in list(props.items())[:MAX_FIELDS]
    ]


def prompt_fields(arguments: list[dict[str, Any]]) -> list[Field]:
    """A prompt's arguments as fields (each a string)."""
    return [
        Field(
            str(a.get("name", "")),
            {"type": "string", "description": a.get("description") or ""},
            bool(a.get("required")),
        )
        for a in arguments[:MAX_FIELDS]
    ]


def form_values(
    fields: list[Field], texts: list[str], *, sent: str = "nothing was sent"
) -> dict[str, Any]:
    """The form's values: each non-empty text as its field's value.

    Raises:
        ValueError: naming the required fields left empty (``sent`` says what did not happen).
    """
    values = {f.name: f.value(t) for f, t in zip(fields, texts, strict=False) if t != ""}
    missing = [f.name for f in fields if f.required and f.name not in values]
    if missing:
        raise ValueError(
            f"fill in the required argument{'s' if len(missing) > 1 else ''}: "
            + ", ".join(printable(n, 80) for n in missing)
            + f" ({sent})"
        )
    return values


# -- resource templates (RFC 6570) ------------------------------------------------------------------
_EXPRESSION = re.compile(r"\{([+#./;?&]?)([^{}]*)\}")
_OPERATORS = {  # operator: (first, separator, named, if empty, allow reserved)
    "": ("", ",", False, "", False),
    "+": ("", ",", False, "", True),
    "#": ("#", ",", False, "", True),
    ".": (".", ".", False, "", False),
    "/": ("/", "/", False, "", False),
    ";": (";", ";", True, "", False),
    "?": ("?", "&", True, "=", False),
    "&": ("&", "&", True, "=", False),
}


def template_fields(template: str) -> list[Field]:
    """The variables of a URI template (``note://items/{item}``, ``file:///{+path}``,
    ``search{?q,lang}``) as form fields (strings; the simple and reserved ones required)."""
    out: dict[str, Field] = {}
    for op, names in _EXPRESSION.findall(template):
        for raw in names.split(","):
            name = raw.strip().rstrip("*").split(":", 1)[0]
            if name and name not in out:
                out[name] = Field(name, {"type": "string"}, op in ("", "+"))
    return list(out.values())[:MAX_FIELDS]


def expand_template(template: str, values: Mapping[str, str]) -> str:
    """A URI template expanded with ``values`` (RFC 6570 levels 1 to 3: a variable left out of
    ``values`` is left out of the URI)."""

    def expand(match: re.Match[str]) -> str:
        first, separator, named, empty, reserved = _OPERATORS[match.group(1)]
        safe = ":/?#[]@!$&'()*+,;=" if reserved else ""
        parts = []
        for raw in match.group(2).split(","):
            name = raw.strip().rstrip("*").split(":", 1)[0]
            if name not in values:
                continue
            value = quote(str(values[name]), safe=safe)
            parts.append((f"{name}{'=' + value if value else empty}") if named else value)
        return first + separator.join(parts) if parts else ""

    return _EXPRESSION.sub(expand, template)


_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def split_command(text: str, *, expand: bool = True) -> tuple[list[str], dict[str, str]]:
    """A stdio server's command line as a shell reads it, ``NAME=value`` words before the command
    its environment (``${VAR}`` expanded, unless ``expand=False``): ``(argv, env)``.

    Raises:
        ValueError: the line does not split (an open quote).
    """
    words = shlex.split(text)
    env: dict[str, str] = {}
    while words and _ENV_WORD.match(words[0]):
        name, _, value = words.pop(0).partition("=")
        env[name] = expand_env(value) if expand else value
    return words, env


def root_uri(root: str) -> str:
    """A root as the user gave it (a path, ``~`` expanded, or a ``file://`` URI) as a URI."""
    if root.startswith("file://"):
        return root
    return Path(os.path.expanduser(root)).resolve().as_uri()
