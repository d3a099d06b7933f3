"""Skills: ``SKILL.md`` folders (or data), the one ``skill`` tool that loads them, and the prompt.

A skill file starts with YAML front matter between ``---`` fences (``name`` required;
``description``, ``tags``, ``examples``, ``arguments``, ``input-modes``, ``output-modes`` optional),
followed by the instructions. The modes are media types (``image/png``, ``image/*``): what the
skill takes and makes, on the agent card beside the agent's own (which apply where a skill says
nothing).
``arguments`` declares what the skill takes when it is used as a prompt (MCP serves each skill as
one): a list of names, or of ``{name, description, required, values, values-from}``, or a mapping
of name to description (or to such an entry); ``${name}`` in the instructions is replaced by the
argument's value. ``values`` lists what an argument may be, ``values-from`` names a file of the
skill's folder that holds them (a CSV's column named as the argument, else its first; any other
file, one a line): what a client is offered as it types (MCP ``completion/complete``). Discovery walks
every root for ``**/SKILL.md``, follows symlinks, never loops, and skips a file it cannot use with
a typed reason. The first skill of a name wins.
"""

from __future__ import annotations

import csv
import io
import itertools
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, Protocol, cast

import yaml

from .errors import ConfigError, InvalidParamsError
from .tools import Tool, ToolContext, ToolResult

__all__ = [
    "SkillDef",
    "requirements",
    "without",
    "SkillArgument",
    "SkillFile",
    "Skipped",
    "SkillList",
    "list_skills",
    "disk_stamp",
    "MAX_SUGGESTIONS",
    "skill_tool",
    "skills_prompt",
    "SKILL_FILE",
    "ToolkitLike",
]

log = logging.getLogger("toolnexus.skills")

SKILL_FILE = "SKILL.md"
SAMPLE_LIMIT = 10
_IGNORED_DIRS = frozenset({".git", "node_modules", "__pycache__"})

SkipReason = Literal["missing-name", "malformed-frontmatter", "duplicate-name", "unreadable"]

SKILL_TOOL_DESCRIPTION = (
    "Load a specialized skill when the task at hand matches one of the skills listed in the system prompt.\n\n"
    "Use this tool to inject the skill's instructions and resources into the current conversation. "
    "The output may contain detailed workflow guidance as well as references to scripts, files, etc. "
    "in the same directory as the skill.\n\n"
    "The skill name must match one of the skills listed in your system prompt."
)

_PROMPT_PREAMBLE = (
    "Skills provide specialized instructions and workflows for specific tasks.\n"
    "Use the skill tool to load a skill when a task matches its description."
)


MAX_FOLDER_FILES = 1000
"""The most files of one skill's folder that are listed (as MCP resources): a skill folder is a
handful of scripts and references; a folder with more was pointed at the wrong place."""
MAX_FILE_BYTES = 4 * 1024 * 1024
"""The largest skill file that is read whole for a caller (an MCP resource read)."""


@dataclass(frozen=True)
class SkillArgument:
    """One argument a skill takes when it is used as a prompt."""

    name: str
    description: str = ""
    required: bool = False
    values: tuple[str, ...] = ()
    """What the argument may be (``values`` in the front matter)."""
    values_from: str = ""
    """A file of the skill's folder that lists what it may be (``values-from``)."""


MAX_SUGGESTIONS = 100
"""The most values one :meth:`SkillDef.suggest` returns (MCP's bound for one completion)."""
MAX_VALUES_BYTES = 256 * 1024
"""The most bytes of a ``values-from`` file read for suggestions."""


@dataclass(frozen=True)
class SkillFile:
    """One file of a skill's folder: ``relative`` (POSIX, from the folder) and what it is now."""

    relative: str
    path: Path
    size: int
    mtime_ns: int


@dataclass
class SkillDef:
    """A skill: from a ``SKILL.md`` file (``path`` set) or given as data.

    Attributes:
        name: the skill's name, unique within a toolkit.
        description: one line for the model and the agent card.
        content: the instructions (the file's body, after the front matter).
        tags: labels for the agent card.
        examples: example requests, for the agent card.
        resources: data skills only: names listed in the ``<skill_files>`` block.
        path: the ``SKILL.md`` file, for skills found on disk.
        arguments: what the skill takes when it is used as a prompt.
        input_modes, output_modes: the media types it takes and makes (empty: the agent's).
        security: what a caller must present to use it, as the card's 0.3 ``security`` says it:
            a list of alternatives, each the schemes it needs (the agent's scheme names) and the
            scopes each must grant (``[{"oauth2": ["ledger:read"]}]``); empty: the agent's own.
    """

    name: str
    description: str = ""
    content: str = ""
    tags: list[str] = field(default_factory=list)
    examples: list[str] = field(default_factory=list)
    resources: list[str] = field(default_factory=list)
    path: Path | None = None
    arguments: list[SkillArgument] = field(default_factory=list)
    input_modes: list[str] = field(default_factory=list)
    output_modes: list[str] = field(default_factory=list)
    security: list[dict[str, list[str]]] = field(default_factory=list)

    @property
    def base(self) -> str:
        """``file:///abs/dir`` for a file skill, ``skill://NAME/`` for a data skill."""
        if self.path is None:
            return f"skill://{self.name}/"
        return self.path.parent.as_uri()

    def files(self, limit: int = SAMPLE_LIMIT) -> list[str]:
        """Up to ``limit`` files beside ``SKILL.md`` (absolute paths), or a data skill's resources."""
        if self.path is None:
            return self.resources[:limit]
        return _sample_files(self.path.parent, limit)

    def prompt(self, arguments: Mapping[str, str] | None = None) -> str:
        """The instructions with ``${name}`` replaced by each argument's value; given arguments the
        text does not name are listed after it.

        Raises:
            InvalidParamsError: an argument the skill does not declare, or a required one missing.
        """
        given = dict(arguments or {})
        declared = {a.name for a in self.arguments}
        unknown = sorted(set(given) - declared)
        if unknown:
            takes = ", ".join(sorted(declared)) or "no arguments"
            raise InvalidParamsError(
                f"skill {self.name!r} takes no argument {', '.join(map(repr, unknown))} "
                f"(it takes {takes})"
            )
        missing = [a.name for a in self.arguments if a.required and not given.get(a.name)]
        if missing:
            raise InvalidParamsError(
                f"skill {self.name!r} needs the argument {', '.join(map(repr, missing))}"
            )
        text = self.content.strip()
        unplaced = []
        for name, value in given.items():
            placeholder = "${" + name + "}"
            if placeholder in text:
                text = text.replace(placeholder, str(value))
            else:
                unplaced.append(f"- {name}: {value}")
        if unplaced:
            text += "\n\nArguments:\n" + "\n".join(unplaced)
        return text

    def suggest(self, argument: str, prefix: str = "") -> tuple[list[str], int]:
        """What ``argument`` may be that begins with ``prefix`` (case-insensitive), at most
        :data:`MAX_SUGGESTIONS` of them, and how many there are in all: its ``values``, then
        those its ``values-from`` file lists (a file gone or unreadable offers none)."""
        arg = next((a for a in self.arguments if a.name == argument), None)
        if arg is None:
            return [], 0
        known = list(arg.values)
        if arg.values_from:
            try:
                data = self.read(arg.values_from, MAX_VALUES_BYTES)
                known += _listed(data, arg.values_from, arg.name)
            except InvalidParamsError as exc:
                log.warning("skill %r: values-from of %r: %s", self.name, arg.name, exc)
        low = prefix.casefold()
        found = [v for v in dict.fromkeys(known) if v.casefold().startswith(low)]
        return found[:MAX_SUGGESTIONS], len(found)

    def folder(self) -> list[SkillFile]:
        """The files of the skill's folder (none for a data skill), at most
        :data:`MAX_FOLDER_FILES`: a folder's files before its subfolders, by name; hidden files and
        folders (``.env``, ``.git``) left out, and so is anything a symlink leads out of the
        folder."""
        if self.path is None:
            return []
        root = self.path.parent.resolve()
        found: list[SkillFile] = []
        for _, entry in _files(root):
            try:
                real = Path(entry.path).resolve()
                relative = real.relative_to(root).as_posix()
                st = real.stat()
            except (OSError, ValueError):  # gone, or a symlink out of the folder
                continue
            shown = Path(entry.path).relative_to(root).as_posix()
            if relative != shown or _hidden(relative):
                continue
            found.append(SkillFile(relative, real, st.st_size, st.st_mtime_ns))
            if len(found) >= MAX_FOLDER_FILES:
                break
        return found

    def read(self, relative: str, limit: int = MAX_FILE_BYTES) -> bytes:
        """The bytes of one file of the skill's folder, confined to it as :meth:`folder` is.

        Raises:
            InvalidParamsError: no such file here (outside the folder, hidden, a folder, gone), or
                larger than ``limit``.
        """
        where = f"skill {self.name!r} has no file {relative!r}"
        if self.path is None or not relative or "\0" in relative or _hidden(relative):
            raise InvalidParamsError(where)
        root = self.path.parent.resolve()
        try:
            real = (root / relative).resolve()
            if real.relative_to(root).as_posix() != relative.strip("/") or not real.is_file():
                raise InvalidParamsError(where)
            with real.open("rb") as f:
                data = f.read(limit + 1)
        except (OSError, ValueError):
            raise InvalidParamsError(where) from None
        if len(data) > limit:
            raise InvalidParamsError(
                f"{self.name}/{relative} is larger than {limit:,} bytes; it is not served"
            )
        return data


@dataclass
class Skipped:
    """A ``SKILL.md`` that could not be used, and why."""

    path: str
    reason: SkipReason
    detail: str = ""


@dataclass
class SkillList:
    """What discovery found: usable ``skills`` in order, and ``skipped`` files with reasons."""

    skills: list[SkillDef]
    skipped: list[Skipped]


def list_skills(
    roots: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    skills: Iterable[SkillDef] = (),
) -> SkillList:
    """Discover skills under ``roots`` (and add ``skills`` given as data), without a toolkit.

    Relative roots are taken from the current directory. A root that does not exist is logged and
    skipped. Data skills come after the files; the first skill of a name wins.
    """
    found: list[SkillDef] = []
    skipped: list[Skipped] = []
    for root in as_roots(roots):
        base = Path(root).expanduser()
        if not base.is_dir():
            log.warning("skills folder not found: %s", base)
            continue
        for path in _walk(base.resolve()):
            skill = _load(path, skipped)
            if skill is not None:
                found.append(skill)
    for d in skills:
        if not isinstance(d, SkillDef):  # a folder's name given where skills as data go
            hint = (
                " (a folder of SKILL.md files goes first, as skills_dir)"
                if isinstance(d, (str, os.PathLike))
                else ""
            )
            raise ConfigError(f"skills= takes SkillDef objects, not {type(d).__name__} {d!r}{hint}")
        if not d.name or not d.name.strip():
            skipped.append(
                Skipped(f"skill://{d.name}/", "missing-name", "a data skill needs a name")
            )
            continue
        found.append(d)
    unique: list[SkillDef] = []
    names: set[str] = set()
    for s in found:
        if s.name in names:
            where = str(s.path) if s.path else s.base
            log.warning("duplicate skill name %r at %s: keeping the first", s.name, where)
            skipped.append(
                Skipped(where, "duplicate-name", f"a skill named {s.name!r} was found first")
            )
            continue
        names.add(s.name)
        unique.append(s)
    return SkillList(unique, skipped)


MAX_STAMPED = 20_000
"""The most files :func:`disk_stamp` looks at (a skills folder pointed at a home folder ends)."""


def disk_stamp(roots: Any) -> frozenset[tuple[str, int, int]]:
    """Every file under the skill ``roots`` as ``(path, size, time)``: two stamps differ when a
    skill was added, removed or edited. Reads no file, only their metadata; at most
    :data:`MAX_STAMPED` files."""
    found: set[tuple[str, int, int]] = set()
    for root in as_roots(roots):
        base = Path(root).expanduser()
        for _, entry in itertools.islice(_files(base), MAX_STAMPED - len(found)):
            try:
                st = entry.stat()
            except OSError:  # gone meanwhile: the next look sees it
                continue
            found.add((entry.path, st.st_size, st.st_mtime_ns))
    return frozenset(found)


def skill_tool(skills: Sequence[SkillDef]) -> Tool:
    """The one ``skill`` tool: ``{name}`` returns that skill's instructions and sampled files."""
    by_name = {s.name: s for s in skills}

    async def load(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
        name = args["name"]
        skill = by_name.get(name)
        if skill is None:
            available = ", ".join(sorted(by_name)) or "none"
            return ToolResult.error(f'Skill "{name}" not found. Available skills: {available}')
        return ToolResult(render_skill(skill), metadata={"name": skill.name, "dir": skill.base})

    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "description": "The name of the skill to load"}},
        "required": ["name"],
        "additionalProperties": False,
    }
    return Tool("skill", SKILL_TOOL_DESCRIPTION, schema, load, source="skill")


def render_skill(skill: SkillDef) -> str:
    """The ``skill`` tool's output for one skill, byte for byte as the toolnexus contract has it."""
    lines = [
        f'<skill_content name="{skill.name}">',
        f"# Skill: {skill.name}",
        "",
        skill.content.strip(),
        "",
        f"Base directory for this skill: {skill.base}",
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.",
    ]
    files = skill.files()
    if skill.path is not None or files:
        lines += [
            "Note: file list is sampled.",
            "",
            "<skill_files>",
            "\n".join(f"<file>{f}</file>" for f in files),
            "</skill_files>",
        ]
    lines.append("</skill_content>")
    return "\n".join(lines)


def skills_prompt(skills: Iterable[SkillDef]) -> str:
    """The system-prompt catalogue of described skills, sorted by name; ``""`` when there are none."""
    described = sorted((s for s in skills if s.description), key=lambda s: s.name)
    if not described:
        return ""
    lines = [_PROMPT_PREAMBLE, "", "## Available Skills"]
    lines += [f"- **{s.name}**: {s.description}" for s in described]
    return "\n".join(lines)


class ToolkitLike(Protocol):
    """What serving (:mod:`toolnexus.serve`) and the model loop (:mod:`toolnexus.llm`) use of a
    toolkit; :class:`toolnexus.toolkit.Toolkit` is the one there is. Its shape is named here, below
    both, because the toolkit serves itself through them (``Toolkit.serve``): they take the shape,
    not the module above them."""

    config: dict[str, Any]

    def tools(self) -> list[Tool]: ...

    def skills(self) -> list[SkillDef]: ...

    def skills_prompt(self) -> str: ...

    def watch(self, listener: Callable[[frozenset[str]], None]) -> Callable[[], None]: ...


# ----------------------------------------------------------------------------------------------


def as_roots(roots: Any) -> list[Any]:
    """One root or many, as a list."""
    if roots is None:
        return []
    if isinstance(roots, (str, os.PathLike)):
        return [roots]
    return list(roots)


def _files(root: Path) -> Iterator[tuple[Path, os.DirEntry[str]]]:
    """Every file under ``root`` as ``(folder, entry)``: a folder's files (by name) before its
    subfolders, symlinks followed, no folder twice (cycles end), ``.git`` and the like skipped."""
    seen: set[tuple[int, int]] = set()
    stack = [root]
    while stack:
        folder = stack.pop()
        try:
            st = folder.stat()
            if (st.st_dev, st.st_ino) in seen:
                continue
            seen.add((st.st_dev, st.st_ino))
            entries = sorted(os.scandir(folder), key=lambda e: e.name)
        except OSError:
            continue
        subdirs: list[Path] = []
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=True):
                    if entry.name not in _IGNORED_DIRS:
                        subdirs.append(Path(entry.path))
                elif entry.is_file(follow_symlinks=True):
                    yield folder, entry
            except OSError:
                continue
        stack.extend(reversed(subdirs))


def _hidden(relative: str) -> bool:
    """A path with a hidden or ignored part (``.env``, ``.git/config``, ``node_modules/x``)."""
    return any(p.startswith(".") or p in _IGNORED_DIRS for p in relative.split("/"))


def _arguments(value: Any, where: str) -> list[SkillArgument]:
    """The ``arguments`` front matter: names, ``{name, description, required}`` entries, or a
    mapping of name to description (or to such an entry); an entry that is none of these is
    logged and left out."""
    entries: list[tuple[Any, Any]]
    if value is None:
        return []
    if isinstance(value, Mapping):
        entries = [(k, v) for k, v in value.items()]
    elif isinstance(value, list):
        entries = [(v, None) if not isinstance(v, Mapping) else (v.get("name"), v) for v in value]
    else:
        log.warning("%s: arguments must be a list or a mapping; ignored", where)
        return []
    out: list[SkillArgument] = []
    for name, spec in entries:
        if not isinstance(name, str) or not name.strip():
            log.warning("%s: an argument without a name is ignored", where)
            continue
        values: list[str] = []
        source = ""
        if isinstance(spec, Mapping):
            desc, required = spec.get("description", ""), spec.get("required", False) is True
            values = _strings(spec.get("values")) if isinstance(spec.get("values"), list) else []
            given = _either(dict(spec), "values-from", "valuesFrom", "values_from")
            source = given.strip() if isinstance(given, str) else ""
        else:
            desc, required = spec if isinstance(spec, str) else "", False
        out.append(
            SkillArgument(name.strip(), str(desc or "").strip(), required, tuple(values), source)
        )
    return out


def _listed(data: bytes, name: str, column: str) -> list[str]:
    """The values a ``values-from`` file lists: a CSV's column named ``column`` (else its first),
    any other file's non-empty lines."""
    text = data.decode("utf-8", errors="replace")
    if not name.lower().endswith(".csv"):
        return [line.strip() for line in text.splitlines() if line.strip()]
    rows = list(csv.reader(io.StringIO(text)))
    if not rows:
        return []
    head = [h.strip() for h in rows[0]]
    at = head.index(column) if column in head else 0
    return [r[at].strip() for r in rows[1:] if len(r) > at and r[at].strip()]


def _walk(root: Path) -> list[Path]:
    """Every ``SKILL.md`` under ``root`` in a stable order."""
    return [Path(entry.path) for _, entry in _files(root) if entry.name == SKILL_FILE]


def _sample_files(folder: Path, limit: int) -> list[str]:
    """Up to ``limit`` files of a skill's folder, its own ``SKILL.md`` left out."""
    files = (
        entry.path
        for where, entry in _files(folder)
        if not (where == folder and entry.name == SKILL_FILE)
    )
    return list(itertools.islice(files, limit))


_FENCE = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*(?:\r?\n|\Z)(.*)\Z", re.DOTALL | re.MULTILINE)


def _strings(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        return [v.strip() for v in value.split(",") if v.strip()]
    if isinstance(value, (list, tuple)):
        return [str(v).strip() for v in value if v is not None and str(v).strip()]
    return [str(value).strip()]


def _load(path: Path, skipped: list[Skipped]) -> SkillDef | None:
    where = str(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        skipped.append(Skipped(where, "unreadable", str(exc)))
        return None
    text = text.removeprefix("\ufeff")
    if not text.startswith("---"):
        skipped.append(Skipped(where, "missing-name", "no front matter"))
        return None
    match = _FENCE.match(text)
    if match is None:
        skipped.append(
            Skipped(where, "malformed-frontmatter", "front matter is not closed by a --- line")
        )
        return None
    try:
        meta = yaml.safe_load(match.group(1))
    except yaml.YAMLError as exc:
        skipped.append(Skipped(where, "malformed-frontmatter", str(exc).splitlines()[0]))
        return None
    if meta is None:
        meta = {}
    if not isinstance(meta, dict):
        skipped.append(Skipped(where, "malformed-frontmatter", "front matter is not a mapping"))
        return None
    name = meta.get("name")
    if not isinstance(name, (str, int, float)) or not str(name).strip():
        skipped.append(Skipped(where, "missing-name", "front matter has no name"))
        return None
    desc = meta.get("description")
    try:  # a skill whose requirements cannot be read is not served, rather than served to anyone
        security = requirements(_either(meta, "security", "securityRequirements"), where)
    except ValueError as exc:
        skipped.append(Skipped(where, "malformed-frontmatter", str(exc)))
        return None
    return SkillDef(
        name=str(name).strip(),
        description=str(desc).strip() if isinstance(desc, (str, int, float)) else "",
        content=match.group(2),
        tags=_strings(meta.get("tags")),
        examples=_strings(meta.get("examples"))
        if not isinstance(meta.get("examples"), str)
        else [meta["examples"].strip()],
        path=path.absolute(),
        arguments=_arguments(meta.get("arguments"), where),
        input_modes=_strings(_either(meta, "input-modes", "inputModes", "input_modes")),
        output_modes=_strings(_either(meta, "output-modes", "outputModes", "output_modes")),
        security=security,
    )


def requirements(value: Any, where: str) -> list[dict[str, list[str]]]:
    """A skill's security requirements as 0.3's ``security`` writes them (a list of
    ``{scheme: [scopes]}``, or one such entry), from its front matter or a config.

    Raises:
        ValueError: something else (the skill is then skipped: served to anyone, it would be open).
    """
    if value is None:
        return []
    if isinstance(value, Mapping):
        value = [value]
    out: list[dict[str, list[str]]] = []
    if isinstance(value, list):
        for entry in cast("list[object]", value):
            if not isinstance(entry, Mapping) or not entry:
                break
            scopes = {
                str(k): _strings(v) if v is not None else []
                for k, v in cast("Mapping[object, object]", entry).items()
            }
            out.append(scopes)
        else:
            return out
    raise ValueError(
        f"{where}: security must be a list of {{scheme: [scopes]}} entries, "
        '(such as [{"oauth2": ["ledger:read"]}])'
    )


def without(toolkit: ToolkitLike, hidden: frozenset[str]) -> ToolkitLike:
    """``toolkit`` as a caller who may not use the ``hidden`` skills sees it: they are not in its
    skills, its catalogue or its ``skill`` tool (which no longer loads them)."""
    return _Without(toolkit, hidden) if hidden else toolkit


class _Without:
    def __init__(self, toolkit: ToolkitLike, hidden: frozenset[str]) -> None:
        self.toolkit, self.hidden = toolkit, hidden
        self.config = toolkit.config

    def skills(self) -> list[SkillDef]:
        return [s for s in self.toolkit.skills() if s.name not in self.hidden]

    def tools(self) -> list[Tool]:
        shown = self.skills()
        return [
            (skill_tool(shown) if t.name == "skill" and t.source == "skill" else t)
            for t in self.toolkit.tools()
            if shown or not (t.name == "skill" and t.source == "skill")
        ]

    def skills_prompt(self) -> str:
        return skills_prompt(self.skills())

    def watch(self, listener: Callable[[frozenset[str]], None]) -> Callable[[], None]:
        return self.toolkit.watch(listener)


def _either(meta: dict[str, Any], *keys: str) -> Any:
    """The first of ``keys`` the front matter has (its spellings of one field)."""
    return next((meta[k] for k in keys if k in meta), None)
