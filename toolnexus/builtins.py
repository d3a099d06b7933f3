"""The builtin tools: ``read``, ``glob``, ``grep``, ``write``, ``edit`` and ``bash``.

The file tools work inside one root folder (the current directory unless configured): a path that
leaves the root is refused, and symlinks are resolved before that check. Each call runs in a worker
thread under a budget (``timeout`` seconds, 30 by default) that the thread checks as it goes, so a
call never stalls the event loop, ends when it is cancelled and never runs past its limit. ``grep``
uses RE2, whose matching time is linear in the input, and ``glob`` matches through RE2 too, over a
walk bounded in entries: no pattern can make either run away.

``bash`` is **not** confined to the root: it starts there, but the command can reach whatever the
server's user can. It runs with a scrubbed environment (only ``BASH_ENV_ALLOW`` and the names
given in ``env``), a timeout and an output cap, and is killed with its whole process group when it
runs over or its call is cancelled.

Config forms (``builtins=`` of ``create_toolkit`` or the config file's ``builtins`` key):
``True`` / ``False``, ``{"enabled": False}``, ``{"disabled": True}`` (wins over ``enabled``),
``{"tools": {"bash": False}}`` to drop one (unknown names are ignored), ``{"root": "dir"}``,
``{"timeout": 30}`` for the file tools, ``{"bash_timeout": 120}``, ``{"env": ["NAME", ...]}``
for more environment variables passed to ``bash``.
"""

from __future__ import annotations

import asyncio
import fnmatch
import os
import signal
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import re2

from ._fs import write_whole
from .errors import ConfigError
from .tools import Tool, ToolContext, ToolResult

__all__ = ["BUILTIN_NAMES", "COMMAND_TOOLS", "BASH_ENV_ALLOW", "builtin_tools"]

BUILTIN_NAMES = ("read", "glob", "grep", "write", "edit", "bash")
COMMAND_TOOLS = frozenset({"bash", "write", "edit"})
"""Builtins that run commands or change files: never exposed over MCP unless named."""
BASH_ENV_ALLOW = (
    "PATH",
    "HOME",
    "LANG",
    "LANGUAGE",
    "LC_ALL",
    "LC_CTYPE",
    "LC_MESSAGES",
    "TERM",
    "TZ",
    "USER",
    "LOGNAME",
    "SHELL",
    "TMPDIR",
)
"""The environment variables ``bash`` inherits (plus the builtins config's ``env`` names)."""

READ_LIMIT = 2000
LINE_CAP = 2000
MATCH_CAP = 200
OUTPUT_CAP = 30_000
BASH_TIMEOUT = 120.0
FILE_TIMEOUT = 30.0
WALK_CAP = 100_000
"""The most folder entries one glob or grep call looks at."""
READ_BYTES = 10 * 1024 * 1024
"""The most bytes ``read`` and ``edit`` load from one file, and ``grep`` searches in one file."""
GREP_LINE = 64 * 1024
"""grep reads a line in pieces of at most this many bytes (a match across a piece's end is missed)."""
_RE2_MEMORY = 64 * 1024 * 1024

T = TypeVar("T")


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
    extra_env = config.get("env") or ()
    if isinstance(extra_env, str) or not all(isinstance(n, str) for n in extra_env):
        raise ConfigError("builtins.env must be a list of environment variable names")
    base = Path(config.get("root") or root or os.getcwd()).expanduser().resolve()
    try:
        bash_timeout = float(config.get("bash_timeout", config.get("bashTimeout", BASH_TIMEOUT)))
        file_timeout = float(config.get("timeout", FILE_TIMEOUT))
    except (TypeError, ValueError):
        raise ConfigError(
            "builtins.timeout and builtins.bash_timeout must be numbers of seconds"
        ) from None
    if bash_timeout <= 0 or file_timeout <= 0:
        raise ConfigError("builtins.timeout and builtins.bash_timeout must be more than 0 seconds")
    env = _Root(base, file_timeout)
    makers = {
        "read": env.read_tool,
        "glob": env.glob_tool,
        "grep": env.grep_tool,
        "write": env.write_tool,
        "edit": env.edit_tool,
        "bash": lambda: env.bash_tool(bash_timeout, tuple(extra_env)),
    }
    return [makers[name]() for name in BUILTIN_NAMES if wanted.get(name, True) is not False]


def _obj(props: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }


def _cap(text: str, limit: int = OUTPUT_CAP) -> str:
    if len(text) <= limit:
        return text
    return text[:limit] + f"\n... [output truncated: {len(text) - limit} more characters]"


# -- the budget of one call ---------------------------------------------------------------------------


class _Budget:
    """The time one builtin call may spend, and its cancel flag; checked by the worker thread."""

    def __init__(self, tool: str, seconds: float) -> None:
        self.tool = tool
        self.seconds = seconds
        self.deadline = time.monotonic() + seconds
        self.stopped = threading.Event()

    def check(self) -> None:
        if self.stopped.is_set():
            raise _Stop()
        if time.monotonic() > self.deadline:
            raise OverTime(
                f"{self.tool}: stopped after its time limit of {self.seconds:g}s; "
                f"narrow the path or the pattern"
            )


class _Stop(Exception):
    """The call was cancelled; the worker thread ends quietly."""


class OverTime(RuntimeError):
    """A builtin call went past its time limit (not a TimeoutError: that would read as the
    caller's own ``ToolContext.timeout``)."""


async def _run(tool: str, seconds: float, work: Callable[[_Budget], T]) -> T:
    """Run ``work`` in a thread under a budget; a cancel or the time limit stops it (the thread
    stops at its next check) and never waits for it."""
    budget = _Budget(tool, seconds)
    future = asyncio.ensure_future(asyncio.to_thread(work, budget))
    try:
        return await asyncio.wait_for(asyncio.shield(future), seconds + 1.0)
    except TimeoutError:  # the thread is stuck in one step (a slow disk): stop waiting
        raise OverTime(f"{tool}: stopped after its time limit of {seconds:g}s") from None
    finally:
        budget.stopped.set()
        if not future.done():
            future.add_done_callback(_quiet)


def _quiet(future: asyncio.Future[Any]) -> None:
    if not future.cancelled():
        future.exception()


# -- paths ----------------------------------------------------------------------------------------------


class _Root:
    """The folder the builtins work in, and the tools bound to it."""

    def __init__(self, root: Path, timeout: float) -> None:
        self.root = root
        self.timeout = timeout

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

    def _inside(self, p: Path) -> bool:
        try:
            r = p.resolve()
        except OSError:
            return False
        return r == self.root or self.root in r.parents

    def _walk(self, base: Path, budget: _Budget) -> Iterator[tuple[Path, str]]:
        """Every regular file below ``base`` inside the root, as (path, posix path relative to base),
        in sorted order. Folder symlinks are not followed (no cycles, no escape); the walk stops at
        ``WALK_CAP`` entries with an error that says so."""
        seen = 0
        stack = [(base, "")]
        while stack:
            folder, prefix = stack.pop()
            try:
                with os.scandir(folder) as it:
                    entries = sorted(it, key=lambda e: e.name, reverse=True)
            except OSError:
                continue
            files: list[tuple[Path, str]] = []
            for entry in entries:
                seen += 1
                if seen % 256 == 0:
                    budget.check()
                if seen > WALK_CAP:
                    raise RuntimeError(
                        f"{budget.tool}: more than {WALK_CAP:,} entries below "
                        f"{self.rel(base) or '.'}; narrow the path"
                    )
                rel = prefix + entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if entry.name != ".git":
                            stack.append((Path(entry.path), rel + "/"))
                    elif entry.is_file():
                        p = Path(entry.path)
                        if not entry.is_symlink() or self._inside(p):
                            files.append((p, rel))
                except OSError:
                    continue
            # files of this folder in name order, then its subfolders (popped in name order)
            yield from reversed(files)

    # -- read ------------------------------------------------------------------------------
    def read_tool(self) -> Tool:
        async def read(args: dict[str, Any], ctx: ToolContext) -> str:
            p = self.path(args["path"])
            if p.is_dir():
                raise IsADirectoryError(f"{args['path']}: is a folder; use glob to list it")
            text, more = await _run("read", self.timeout, lambda b: _load(p, b))
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
            elif more:
                body += (
                    f"\n... [the file goes on past {READ_BYTES:,} bytes; only that much is read]"
                )
            return body

        return Tool(
            "read",
            "Read a text file inside the working folder. Lines are numbered from 1.",
            _obj(
                {
                    "path": {
                        "type": "string",
                        "description": "File path, relative to the working folder",
                    },
                    "offset": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "First line to read (1-based)",
                        "default": 1,
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "How many lines to read",
                        "default": READ_LIMIT,
                    },
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
            rx = _compile(glob_regex(pattern), "glob pattern")

            def run(budget: _Budget) -> list[str]:
                return [self.rel(p) for p, rel in self._walk(base, budget) if rx.fullmatch(rel)]

            found = sorted(await _run("glob", self.timeout, run))
            if not found:
                return "No files found"
            lines = found[:MATCH_CAP]
            if len(found) > MATCH_CAP:
                lines.append(f"... [{len(found) - MATCH_CAP} more files]")
            return "\n".join(lines)

        return Tool(
            "glob",
            "List files inside the working folder that match a glob pattern such as '**/*.py'.",
            _obj(
                {
                    "pattern": {"type": "string", "description": "Glob pattern, e.g. '**/*.md'"},
                    "path": {
                        "type": "string",
                        "description": "Folder to search in, relative to the working folder",
                    },
                },
                ["pattern"],
            ),
            glob,
            source="builtin",
        )

    # -- grep ------------------------------------------------------------------------------
    def grep_tool(self) -> Tool:
        async def grep(args: dict[str, Any], ctx: ToolContext) -> str:
            rx = _compile(
                args["pattern"], "regular expression", ignore_case=bool(args.get("ignore_case"))
            )
            base = self.path(args.get("path") or ".")
            include = args.get("include")

            def files(budget: _Budget) -> Iterator[Path]:
                if base.is_file():
                    yield base
                    return
                for p, _ in self._walk(base, budget):
                    if not include or fnmatch.fnmatch(p.name, include):
                        yield p

            def run(budget: _Budget) -> tuple[list[str], int]:
                hits: list[str] = []
                total = 0
                for f in files(budget):
                    budget.check()
                    for n, line in _lines(f, budget):
                        if rx.search(line):
                            total += 1
                            if len(hits) < MATCH_CAP:
                                text = line.decode("utf-8", "replace").rstrip()
                                hits.append(f"{self.rel(f)}:{n}: {text[:LINE_CAP]}")
                return hits, total

            hits, total = await _run("grep", self.timeout, run)
            if not hits:
                return "No matches found"
            if total > len(hits):
                hits.append(f"... [{total - len(hits)} more matches]")
            return "\n".join(hits)

        return Tool(
            "grep",
            "Search file contents inside the working folder with a regular expression "
            "(RE2 syntax: no backreferences or look-around).",
            _obj(
                {
                    "pattern": {"type": "string", "description": "Regular expression (RE2 syntax)"},
                    "path": {
                        "type": "string",
                        "description": "File or folder to search, relative to the working folder",
                    },
                    "include": {
                        "type": "string",
                        "description": "Only files whose name matches this glob, e.g. '*.py'",
                    },
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

            def run(budget: _Budget) -> None:
                p.parent.mkdir(parents=True, exist_ok=True)
                if self.path(str(p)) != p:  # a folder on the way was swapped for a link meanwhile
                    raise PermissionError(f"{args['path']}: outside the working folder {self.root}")
                write_whole(p, content, keep_mode=True)

            await _run("write", self.timeout, run)
            return f"Wrote {len(content.encode('utf-8'))} bytes to {self.rel(p)}"

        return Tool(
            "write",
            "Write a text file inside the working folder, creating folders as needed and replacing any old content.",
            _obj(
                {
                    "path": {
                        "type": "string",
                        "description": "File path, relative to the working folder",
                    },
                    "content": {
                        "type": "string",
                        "description": "The whole new content of the file",
                    },
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
            replace_all = bool(args.get("replace_all"))

            def run(budget: _Budget) -> int:
                text, more = _load(p, budget, errors="strict")
                if more:
                    raise ValueError(
                        f"{self.rel(p)} is larger than {READ_BYTES:,} bytes; edit refuses it"
                    )
                count = text.count(old)
                if count == 0:
                    raise ValueError(f"old_string not found in {self.rel(p)}")
                if count > 1 and not replace_all:
                    raise ValueError(
                        f"old_string occurs {count} times in {self.rel(p)}; "
                        "add context to make it unique or set replace_all"
                    )
                budget.check()
                write_whole(
                    p,
                    text.replace(old, new) if replace_all else text.replace(old, new, 1),
                    keep_mode=True,
                )
                return count if replace_all else 1

            count = await _run("edit", self.timeout, run)
            return f"Replaced {count} occurrence(s) in {self.rel(p)}"

        return Tool(
            "edit",
            "Replace exact text in a file inside the working folder.",
            _obj(
                {
                    "path": {
                        "type": "string",
                        "description": "File path, relative to the working folder",
                    },
                    "old_string": {"type": "string", "description": "The exact text to replace"},
                    "new_string": {"type": "string", "description": "The text to put in its place"},
                    "replace_all": {
                        "type": "boolean",
                        "default": False,
                        "description": "Replace every occurrence",
                    },
                },
                ["path", "old_string", "new_string"],
            ),
            edit,
            source="builtin",
        )

    # -- bash ------------------------------------------------------------------------------
    def bash_tool(self, default_timeout: float, extra_env: tuple[str, ...] = ()) -> Tool:
        async def bash(args: dict[str, Any], ctx: ToolContext) -> ToolResult:
            limit = float(args.get("timeout") or default_timeout)
            proc = await asyncio.create_subprocess_exec(
                "/bin/bash",
                "-c",
                args["command"],
                cwd=self.root,
                env=bash_env(extra_env),
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.STDOUT,
                start_new_session=True,
            )
            try:
                out, _ = await asyncio.wait_for(proc.communicate(), limit)
            except TimeoutError:
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
                    f"{text}\n[exit code {proc.returncode}]".lstrip("\n"),
                    is_error=True,
                    metadata={"exit_code": proc.returncode},
                )
            return ToolResult(text, metadata={"exit_code": 0})

        return Tool(
            "bash",
            "Run a shell command, starting in the working folder, and return its combined output.",
            _obj(
                {
                    "command": {
                        "type": "string",
                        "description": "The command line for /bin/bash -c",
                    },
                    "timeout": {
                        "type": "number",
                        "exclusiveMinimum": 0,
                        "description": f"Seconds before it is killed (default {default_timeout:g})",
                    },
                },
                ["command"],
            ),
            bash,
            source="builtin",
        )


def bash_env(extra: tuple[str, ...] = ()) -> dict[str, str]:
    """The environment ``bash`` runs with: the allow-listed variables that are set, nothing else."""
    env = {name: os.environ[name] for name in (*BASH_ENV_ALLOW, *extra) if name in os.environ}
    env.setdefault("PATH", os.defpath)
    return env


def _kill(proc: asyncio.subprocess.Process) -> None:
    if proc.returncode is not None:
        return
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


# -- files ------------------------------------------------------------------------------------------------


def _open_regular(p: Path) -> int:
    """A descriptor of ``p`` for reading, refused unless it is a regular file (a FIFO or a device
    would block or never end)."""
    fd = os.open(p, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise ValueError(f"{p.name}: not a regular file")
    os.set_blocking(fd, True)
    return fd


def _load(p: Path, budget: _Budget, errors: str = "replace") -> tuple[str, bool]:
    """The text of ``p`` (at most ``READ_BYTES``), and whether the file goes on past that."""
    with os.fdopen(_open_regular(p), "rb") as fh:
        chunks, size = [], 0
        while size <= READ_BYTES:
            budget.check()
            chunk = fh.read(1024 * 1024)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    data = b"".join(chunks)
    return data[:READ_BYTES].decode("utf-8", errors), size > READ_BYTES


def _lines(p: Path, budget: _Budget) -> Iterator[tuple[int, bytes]]:
    """Numbered lines of a text file, each at most ``GREP_LINE`` bytes, up to ``READ_BYTES`` in all;
    nothing for a binary file (a NUL byte in its first 8 KiB) or one that cannot be opened."""
    try:
        fh = os.fdopen(_open_regular(p), "rb")
    except (OSError, ValueError):
        return
    with fh:
        if b"\0" in fh.peek(8192)[:8192]:
            return
        read, n, whole = 0, 0, True
        while read < READ_BYTES:
            line = fh.readline(GREP_LINE)
            if not line:
                return
            read += len(line)
            n += whole  # a piece of a long line keeps that line's number
            whole = line.endswith(b"\n")
            budget.check()
            yield n, line


# -- patterns ---------------------------------------------------------------------------------------------


def _compile(pattern: str, what: str, ignore_case: bool = False) -> Any:
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _RE2_MEMORY
    options.case_sensitive = not ignore_case
    try:
        return re2.compile(pattern, options)
    except re2.error as exc:
        reason = (
            exc.args[0].decode("utf-8", "replace")
            if exc.args and isinstance(exc.args[0], bytes)
            else str(exc)
        )
        raise ValueError(
            f"invalid {what}: {reason} (RE2 syntax: no backreferences or look-around)"
        ) from None


def glob_regex(pattern: str) -> str:
    """An RE2 pattern for a glob over posix paths relative to the search folder: ``**`` is any
    number of folders, ``*`` and ``?`` stay within one name, ``[...]`` is a character class."""
    out: list[str] = []
    segments = pattern.strip("/").split("/")
    for i, seg in enumerate(segments):
        last = i == len(segments) - 1
        if seg == "**":
            out.append(".*" if last else "(?:[^/]*/)*")
            continue
        if seg in ("", "."):
            continue
        out.append(_segment(seg) + ("" if last else "/"))
    return "".join(out)


def _segment(seg: str) -> str:
    out, i = [], 0
    while i < len(seg):
        c = seg[i]
        i += 1
        if c == "*":
            while i < len(seg) and seg[i] == "*":
                i += 1
            out.append("[^/]*")
        elif c == "?":
            out.append("[^/]")
        elif c == "[":
            end = seg.find("]", i + 1 if i < len(seg) and seg[i] in "!^" else i)
            if end < 0:
                out.append(re2.escape("["))
                continue
            body = seg[i:end]
            i = end + 1
            negate = body[:1] in ("!", "^")
            body = body[1:] if negate else body
            body = body.replace("\\", "\\\\").replace("]", "\\]")
            out.append(f"[{'^/' if negate else ''}{body}]")
        else:
            out.append(re2.escape(c))
    return "".join(out)
