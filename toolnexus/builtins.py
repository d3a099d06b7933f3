"""The builtin tools: ``read``, ``glob``, ``grep``, ``write``, ``edit`` and ``bash``.

They work inside one root folder (the current directory unless configured): a path that leaves
the root is refused. ``bash`` runs with a timeout and an output cap, and is killed with its whole
process group when it runs over or its call is cancelled.

Config forms (``builtins=`` of ``create_toolkit`` or the config file's ``builtins`` key):
``True`` / ``False``, ``{"enabled": False}``, ``{"disabled": True}`` (wins over ``enabled``),
``{"tools": {"bash": False}}`` to drop one (unknown names are ignored), ``{"root": "dir"}``.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import re
import signal
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .errors import ConfigError
from .tools import Tool, ToolContext, ToolResult

__all__ = ["BUILTIN_NAMES", "COMMAND_TOOLS", "builtin_tools"]

BUILTIN_NAMES = ("read", "glob", "grep", "write", "edit", "bash")
COMMAND_TOOLS = frozenset({"bash", "write", "edit"})
"""Builtins that run commands or change files: never exposed over MCP unless named."""

READ_LIMIT = 2000
LINE_CAP = 2000
MATCH_CAP = 200
OUTPUT_CAP = 30_000
BASH_TIMEOUT = 120.0


def builtin_tools(config: Any = True, root: str | os.PathLike[str] | None = None) -> list[Tool]:
    """The builtin tools that ``config`` turns on, working inside ``root``."""
    if config is None or config is True:
        config = {}
    if config is False:
        return []
    if not isinstance(config, Mapping):
        raise ConfigError(f"builtins must be true, false or an object, got {type(config).__name__}")
    if config.get("disabled") is True or config.get("enabled") is False:
        return []
    wanted = config.get("tools") or {}
    if not isinstance(wanted, Mapping):
        raise ConfigError("builtins.tools must be an object of tool name to true/false")
    base = Path(config.get("root") or root or os.getcwd()).expanduser().resolve()
    timeout = float(config.get("bash_timeout", config.get("bashTimeout", BASH_TIMEOUT)))
    env = _Root(base)
    makers = {
        "read": env.read_tool,
        "glob": env.glob_tool,
        "grep": env.grep_tool,
        "write": env.write_tool,
        "edit": env.edit_tool,
        "bash": lambda: env.bash_tool(timeout),
    }
    return [makers[name]() for name in BUILTIN_NAMES if wanted.get(name, True) is not False]


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required, "additionalProperties": False}


def _cap(text: str, limit: int = OUTPUT_CAP) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [output truncated: {len(text) - limit} more characters]"


class _Root:
    """The folder the builtins work in, and the tools bound to it."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, given: str) -> Path:
        p = Path(given).expanduser()
        full = (p if p.is_absolute() else self.root / p).resolve()
        if full != self.root and self.root not in full.parents:
            raise PermissionError(f"{given}: outside the working folder {self.root}")
        return full

    def rel(self, p: Path) -> str:
        try:
            return str(p.relative_to(self.root))
        except ValueError:
            return str(p)

    # -- read ------------------------------------------------------------------------------
    def read_tool(self) -> Tool:
        async def read(args: dict[str, Any], ctx: ToolContext) -> str:
            p = self.path(args["path"])
            if p.is_dir():
                raise IsADirectoryError(f"{args['path']}: is a folder; use glob to list it")
            text = await asyncio.to_thread(p.read_text, encoding="utf-8", errors="replace")
            lines = text.splitlines()
            start = max(int(args.get("offset", 1)), 1)
            limit = int(args.get("limit", READ_LIMIT))
            chunk = lines[start - 1 : start - 1 + limit]
            width = len(str(start + len(chunk)))
            body = "\n".join(
                f"{n:>{width}}\t{(line[:LINE_CAP] + '...') if len(line) > LINE_CAP else line}"
                for n, line in enumerate(chunk, start)
            )
            if start - 1 + limit < len(lines):
                body += f"\n... [{len(lines) - (start - 1 + limit)} more lines; read on with offset={start + limit}]"
            return body

        return Tool(
            "read",
            "Read a text file inside the working folder. Lines are numbered from 1.",
            _obj(
                {
                    "path": {"type": "string", "description": "File path, relative to the working folder"},
                    "offset": {"type": "integer", "minimum": 1, "description": "First line to read (1-based)", "default": 1},
                    "limit": {"type": "integer", "minimum": 1, "description": "How many lines to read", "default": READ_LIMIT},
                },
                ["path"],
            ),
            read,
            source="builtin",
        )

    # -- glob ------------------------------------------------------------------------------
    def glob_tool(self) -> Tool:
        async def glob(args: dict[str, Any], ctx: ToolContext) -> str:
            base = self.path(args.get("path") or ".")
            pattern = args["pattern"]
            if Path(pattern).is_absolute() or ".." in Path(pattern).parts:
                raise PermissionError(f"{pattern}: patterns are relative to the search folder")

            def run() -> list[Path]:
                return sorted(p for p in base.glob(pattern) if p.is_file() and self._inside(p))

            found = await asyncio.to_thread(run)
            if not found:
                return "No files found"
            lines = [self.rel(p) for p in found[:MATCH_CAP]]
            if len(found) > MATCH_CAP:
                lines.append(f"... [{len(found) - MATCH_CAP} more files]")
            return "\n".join(lines)

        return Tool(
            "glob",
            "List files inside the working folder that match a glob pattern such as '**/*.py'.",
            _obj(
                {
                    "pattern": {"type": "string", "description": "Glob pattern, e.g. '**/*.md'"},
                    "path": {"type": "string", "description": "Folder to search in, relative to the working folder"},
                },
                ["pattern"],
            ),
            glob,
            source="builtin",
        )

    def _inside(self, p: Path) -> bool:
        try:
            r = p.resolve()
        except OSError:
            return False
        return r == self.root or self.root in r.parents

    # -- grep ------------------------------------------------------------------------------
    def grep_tool(self) -> Tool:
        async def grep(args: dict[str, Any], ctx: ToolContext) -> str:
            try:
                rx = re.compile(args["pattern"], re.IGNORECASE if args.get("ignore_case") else 0)
            except re.error as exc:
                raise ValueError(f"invalid regular expression: {exc}") from None
            base = self.path(args.get("path") or ".")
            include = args.get("include")

            def run() -> tuple[list[str], int]:
                hits: list[str] = []
                total = 0
                files = [base] if base.is_file() else sorted(p for p in base.rglob("*") if p.is_file())
                for f in files:
                    if include and not fnmatch.fnmatch(f.name, include):
                        continue
                    if ".git" in f.parts or not self._inside(f):
                        continue
                    try:
                        with f.open("r", encoding="utf-8") as fh:
                            for n, line in enumerate(fh, 1):
                                if rx.search(line):
                                    total += 1
                                    if len(hits) < MATCH_CAP:
                                        hits.append(f"{self.rel(f)}:{n}: {line.rstrip()[:LINE_CAP]}")
                    except (OSError, UnicodeDecodeError):
                        continue
                return hits, total

            hits, total = await asyncio.to_thread(run)
            if not hits:
                return "No matches found"
            if total > len(hits):
                hits.append(f"... [{total - len(hits)} more matches]")
            return "\n".join(hits)

        return Tool(
            "grep",
            "Search file contents inside the working folder with a regular expression.",
            _obj(
                {
                    "pattern": {"type": "string", "description": "Regular expression (Python syntax)"},
                    "path": {"type": "string", "description": "File or folder to search, relative to the working folder"},
                    "include": {"type": "string", "description": "Only files whose name matches this glob, e.g. '*.py'"},
                    "ignore_case": {"type": "boolean", "default": False},
                },
                ["pattern"],
            ),
            grep,
            source="builtin",
        )

    # -- write -----------------------------------------------------------------------------
    def write_tool(self) -> Tool:
        async def write(args: dict[str, Any], ctx: ToolContext) -> str:
            p = self.path(args["path"])
            content = args["content"]

            def run() -> None:
                p.parent.mkdir(parents=True, exist_ok=True)
                tmp = p.with_name(f".{p.name}.tmp-{os.getpid()}")
                tmp.write_text(content, encoding="utf-8")
                os.replace(tmp, p)

            await asyncio.to_thread(run)
            return f"Wrote {len(content.encode('utf-8'))} bytes to {self.rel(p)}"

        return Tool(
            "write",
            "Write a text file inside the working folder, creating folders as needed and replacing any old content.",
            _obj(
                {
                    "path": {"type": "string", "description": "File path, relative to the working folder"},
                    "content": {"type": "string", "description": "The whole new content of the file"},
                },
                ["path", "content"],
            ),
            write,
            source="builtin",
        )

    # -- edit ------------------------------------------------------------------------------
    def edit_tool(self) -> Tool:
        async def edit(args: dict[str, Any], ctx: ToolContext) -> str:
            p = self.path(args["path"])
            old, new = args["old_string"], args["new_string"]
            if old == new:
                raise ValueError("old_string and new_string are the same")
            if not old:
                raise ValueError("old_string must not be empty; use write to create a file")
            text = await asyncio.to_thread(p.read_text, encoding="utf-8")
            count = text.count(old)
            if count == 0:
                raise ValueError(f"old_string not found in {self.rel(p)}")
            if count > 1 and not args.get("replace_all"):
                raise ValueError(
                    f"old_string occurs {count} times in {self.rel(p)}; add context to make it unique or set replace_all"
                )
            text = text.replace(old, new) if args.get("replace_all") else text.replace(old, new, 1)
            await asyncio.to_thread(p.write_text, text, encoding="utf-8")
            return f"Replaced {count if args.get('replace_all') else 1} occurrence(s) in {self.rel(p)}"

        return Tool(
            "edit",
            "Replace exact text in a file inside the working folder.",
            _obj(
                {
                    "path": {"type": "string", "description": "File path, relative to the working folder"},
                    "old_string": {"type": "string", "description": "The exact text to replace"},
                    "new_string": {"type": "string", "description": "The text to put in its place"},
                    "replace_all": {"type": "boolean", "default": False, "description": "Replace every occurrence"},
                },
                ["path", "old_string", "new_string"],
            ),
            edit,
            source="builtin",
        )

    # -- bash ------------------------------------------------------------------------------
    def bash_tool(self, default_timeout: float) -> Tool:
        async def bash(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            limit = float(args.get("timeout") or default_timeout)
            proc = await asyncio.create_subprocess_exec(
                "/bin/bash",
                "-c",
                args["command"],
                cwd=self.root,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                out, _ = await asyncio.wait_for(proc.communicate(), limit)
            except asyncio.TimeoutError:
                _kill(proc)
                await proc.wait()
                return ToolResult.error(f"bash: command timed out after {limit:g}s", exit_code=None)
            except BaseException:  # cancelled: kill the group, reap it, then let the cancel through
                _kill(proc)
                await asyncio.shield(proc.wait())
                raise
            text = _cap(out.decode("utf-8", "replace"))
            if proc.returncode != 0:
                return ToolResult(
                    f"{text}\n[exit code {proc.returncode}]".lstrip("\n"), is_error=True,
                    metadata={"exit_code": proc.returncode},
                )
            return ToolResult(text, metadata={"exit_code": 0})

        return Tool(
            "bash",
            "Run a shell command in the working folder and return its combined output.",
            _obj(
                {
                    "command": {"type": "string", "description": "The command line for /bin/bash -c"},
                    "timeout": {"type": "number", "exclusiveMinimum": 0, "description": f"Seconds before it is killed (default {default_timeout:g})"},
                },
                ["command"],
            ),
            bash,
            source="builtin",
        )


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass
