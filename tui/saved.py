"""What toolnexus-tui keeps between launches, under the user's config folder, readable by its owner
only: the servers created with ``n`` (``servers-v1.json``: their specs, which name environment
variables but hold no secret, with the port each got; and the port the servers started at
launch, such as the demo, got, so that a copied curl line still works), the MCP servers saved in
the MCP mode (``mcp-servers-v1.json``, :class:`MCPBook`) and the peers (``tui.peers``).

Two toolnexus-tui may run at once on the same folder. Every change to a saved file (the servers,
the MCP servers, the peers) is made under its lock (:func:`locked`: ``.servers-v1.json.lock``
for the servers): the file re-read, one change applied, the file written whole. The file also says which running toolnexus-tui (its pid) serves which port (``running``),
so a window that cannot listen on a port can say who holds it, and which one changed it last
(``by``), so that each window, watching the file (:meth:`ServerBook.poll`), can say what the other did."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from toolnexus._fs import write_whole
from toolnexus.errors import ConfigError
from toolnexus.hosting import ServerSpec
from toolnexus.mcp import MCPServerSpec
from toolnexus.mcp.client import MAX_SERVERS_FILE, read_servers, servers_file
from toolnexus.secrets import savable_env, savable_headers, savable_url

__all__ = [
    "MCPBook",
    "NameTaken",
    "SavedChange",
    "ServerBook",
    "locked",
    "stamp",
    "write_private",
]

SERVERS_FILE = "servers-v1.json"
MCP_FILE = "mcp-servers-v1.json"


def write_private(path: Path, data: Any) -> None:
    """``data`` as JSON at ``path``, mode 0600, replaced atomically; never through a planted link."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, json.dumps(data, indent=2))


class NameTaken(ConfigError):
    """A new server (or a renamed one) was given the name of a saved server."""


@dataclass
class SavedChange:
    """What another toolnexus-tui did to the saved servers since this one last looked."""

    by: int
    """Its pid."""
    added: dict[str, ServerSpec] = field(default_factory=dict)
    edited: dict[str, ServerSpec] = field(default_factory=dict)
    removed: list[str] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.added or self.edited or self.removed)


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """``path``'s lock (``.NAME.lock`` beside it), held while the file is re-read, changed and
    written whole: two toolnexus-tui on one folder never lose each other's change (the servers
    file, the MCP servers file, the peers file)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.parent / f".{path.name}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)  # and the lock with it


def stamp(path: Path) -> tuple[int, int, int] | None:
    """What says whether the file at ``path`` changed since it was last looked at (None: there is none)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: alive
        return True
    return True


class ServerBook:
    """The servers a user created, by name, in the order created (a bad file loads as empty)."""

    def __init__(self, folder: Path, pid: int | None = None) -> None:
        self.path = Path(folder) / SERVERS_FILE
        self.pid = os.getpid() if pid is None else pid
        """This toolnexus-tui's pid, as the file names it."""
        self.specs: dict[str, ServerSpec] = {}
        self.ports: dict[str, int] = {}
        """The port each server started at launch (the demo's, ``--spec``'s) got last time, by name."""
        self.running: dict[int, tuple[int, str]] = {}
        """Port -> (pid, server name): what every running toolnexus-tui serves, as the file says."""
        self._seen: tuple[int, int, int] | None = None  # the file as last read or written
        self._news: SavedChange | None = None  # what others changed, read under a change of ours

    # -- reading ---------------------------------------------------------------------------------------
    def load(self) -> list[ServerSpec]:
        self._read()
        self._news = None  # the first look: nothing was changed by anyone since
        return list(self.specs.values())

    def _read(self) -> None:
        """The file into memory; what changed in the specs, and who changed it, kept for :meth:`poll`.
        A file that cannot be read (gone, not JSON) says nothing: no window writes one so, and
        taking it as every server removed would drop them here, then from the file at the next
        change."""
        self._seen = stamp(self.path)
        known = {f.name for f in fields(ServerSpec)}
        specs: dict[str, ServerSpec] = {}
        ports: dict[str, int] = {}
        running: dict[int, tuple[int, str]] = {}
        by = 0
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            for entry in data.get("servers", []):
                try:  # a bad entry is left out, not the ones after it
                    spec = ServerSpec(**{k: v for k, v in entry.items() if k in known})
                except (TypeError, AttributeError):
                    continue
                specs[spec.name] = spec
            ports = {
                str(k): v
                for k, v in (data.get("ports") or {}).items()
                if type(v) is int and 0 < v < 65536
            }
            for entry in data.get("running") or []:
                if not isinstance(entry, dict):
                    continue
                pid, port, name = entry.get("pid"), entry.get("port"), entry.get("name")
                if type(pid) is int and type(port) is int and isinstance(name, str):
                    if pid == self.pid or _alive(pid):  # a window that crashed holds nothing
                        running[port] = (pid, name)
            by = data.get("by") if type(data.get("by")) is int else 0
        except (OSError, ValueError, TypeError, AttributeError):
            return
        news = self._news or SavedChange(by)
        news.by = by or news.by
        for name, spec in specs.items():
            if name not in self.specs:
                news.added[name] = spec
            elif spec != self.specs[name]:
                news.edited[name] = spec
        news.removed += [name for name in self.specs if name not in specs]
        self._news = news if news else None
        self.specs, self.ports, self.running = specs, ports, running

    def poll(self) -> SavedChange | None:
        """What another toolnexus-tui changed since this one last read or wrote the file, if anything."""
        self.poll_quietly()
        news, self._news = self._news, None
        return news

    def served_by(self, name: str) -> int | None:
        """The pid of another running toolnexus-tui serving the server ``name``, as the file says."""
        return next(
            (pid for pid, served in self.running.values() if served == name and pid != self.pid),
            None,
        )

    def holder(self, port: int) -> int | None:
        """The pid of another running toolnexus-tui serving ``port``, as the file says now."""
        self.poll_quietly()
        held = self.running.get(port)
        return held[0] if held is not None and held[0] != self.pid else None

    def poll_quietly(self) -> None:
        """Read the file if it changed, keeping what changed for the next :meth:`poll`."""
        if stamp(self.path) != self._seen:
            self._read()

    # -- changing: each under the lock, on the file as it is now ---------------------------------------
    def _change(self, apply: Callable[[], bool]) -> None:
        """Re-read the file, apply one change (``apply`` says whether it changed anything), and
        write it whole, all under the lock. A file that cannot be written is left as it was."""
        try:
            with locked(self.path):
                self._read()
                if apply():
                    self._write()
        except OSError:
            pass

    def _write(self) -> None:
        running = [
            {"pid": pid, "port": port, "name": name}
            for port, (pid, name) in sorted(self.running.items())
        ]
        write_private(
            self.path,
            {
                "servers": [asdict(s) for s in self.specs.values()],
                "ports": self.ports,
                "running": running,
                "by": self.pid,
            },
        )
        self._seen = stamp(self.path)

    def keep_port(self, name: str, port: int) -> None:
        """Remember the port a server started at launch got, for the next launch."""

        def apply() -> bool:
            changed = self.ports.get(name) != port
            self.ports[name] = port
            return changed

        self._change(apply)

    def put(self, spec: ServerSpec, old_name: str | None = None) -> None:
        """Save ``spec``: a new server (``old_name`` None) or the one saved as ``old_name``.

        Raises:
            NameTaken: another saved server has its name (the file as it is now): nothing is
                changed, the other's spec and port kept.
        """

        def apply() -> bool:
            if spec.name in self.specs and spec.name != old_name:
                raise NameTaken(f"a server named {spec.name!r} is saved already")
            if old_name and old_name != spec.name:
                self.specs.pop(old_name, None)
            self.specs[spec.name] = spec
            return True

        self._change(apply)

    def drop(self, name: str) -> None:
        self._change(lambda: self.specs.pop(name, None) is not None)

    def serving(self, ports: dict[int, str]) -> None:
        """Say in the file that this toolnexus-tui serves ``ports`` (port -> server name) now, and
        nothing else (``{}`` when it quits). Written only when that changed."""
        mine = {port: (self.pid, name) for port, name in ports.items()}
        if {p: v for p, v in self.running.items() if v[0] == self.pid} == mine:
            return

        def apply() -> bool:
            before = dict(self.running)
            self.running = {p: v for p, v in self.running.items() if v[0] != self.pid} | mine
            return self.running != before

        self._change(apply)


def savable(spec: MCPServerSpec) -> MCPServerSpec:
    """``spec`` as it may be written to a file: its headers only those naming environment
    variables, its URL without a password or secret query values, a secret-looking environment
    variable of a stdio server as a reference to itself (``tui.peers`` saves a peer so)."""
    return replace(
        spec,
        url=savable_url(spec.url) if spec.url else spec.url,
        headers=savable_headers(spec.headers),
        env=savable_env(spec.env) if spec.env else spec.env,
    )


def unsaved(spec: MCPServerSpec) -> list[str]:
    """What of ``spec`` a file does not get (:func:`savable`), in words: kept for this session."""
    kept = savable(spec)
    said = [f"the header {k}" for k in spec.headers if k not in kept.headers]
    said += [
        f"{k}'s value (saved as ${{{k}}})"
        for k, v in (spec.env or {}).items()
        if (kept.env or {}).get(k) != v
    ]
    if kept.url != spec.url:
        said.append("the URL's password or secret query values")
    return said


class MCPBook:
    """The MCP servers saved in the MCP mode, by name, in the order saved: ``mcp-servers-v1.json``,
    an ``mcpServers`` file as Claude Desktop, Cursor and the official MCP Inspector read it. A
    secret is written only as an ``${ENV}`` reference (:func:`savable`); a literal one stays in
    :attr:`live` for this session. A file that cannot be read is never written over: :attr:`error`
    says why, and every change is refused until it is mended or moved."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / MCP_FILE
        self.specs: dict[str, MCPServerSpec] = {}
        """As the file has them."""
        self.live: dict[str, MCPServerSpec] = {}
        """Those saved this session with a secret the file does not get, whole."""
        self.error = ""

    def load(self) -> list[MCPServerSpec]:
        try:
            with open(self.path, "rb") as f:
                specs = read_servers(f.read(MAX_SERVERS_FILE + 1))
        except FileNotFoundError:
            specs = []
        except (OSError, ConfigError) as exc:
            self.error = (
                f"{self.path} cannot be read ({exc}): mend or move it; nothing is written to it"
            )
            self.specs = {}
            return []
        self.error, self.specs = "", {s.name: s for s in specs}
        return specs

    def get(self, name: str) -> MCPServerSpec | None:
        return self.live.get(name) or self.specs.get(name)

    def _change(self, apply: Callable[[], None]) -> None:
        """Re-read the file, apply one change, write it whole, under its lock.

        Raises:
            ConfigError: the file cannot be read (nothing written); OSError: nor written.
        """
        with locked(self.path):
            self.load()
            if self.error:
                raise ConfigError(self.error)
            apply()
            write_private(self.path, servers_file(list(self.specs.values())))

    def put(self, spec: MCPServerSpec) -> list[str]:
        """Save ``spec`` under its name (replacing one of that name); says what the file did not
        get (:func:`unsaved`)."""

        def apply() -> None:
            self.specs[spec.name] = savable(spec)

        self._change(apply)
        said = unsaved(spec)
        if said:
            self.live[spec.name] = spec
        else:
            self.live.pop(spec.name, None)
        return said

    def drop(self, name: str) -> None:
        def apply() -> None:
            self.specs.pop(name, None)

        self._change(apply)
        self.live.pop(name, None)

    def import_file(self, path: Path) -> dict[str, list[str]]:
        """The servers of a file (Claude Desktop's, Cursor's, VS Code's, the Inspector's), added;
        a name already taken gets ``-2``, ``-3``... Returns each name added with what the saved
        file did not get of it (:func:`unsaved`: kept for this session).

        Raises:
            ConfigError: the file cannot be read as one (nothing added); OSError.
        """
        with open(path, "rb") as f:
            specs = read_servers(f.read(MAX_SERVERS_FILE + 1), name=path.stem or "server")
        added: dict[str, MCPServerSpec] = {}

        def apply() -> None:
            added.clear()
            for spec in specs:
                name, n = spec.name, 1
                while name in self.specs:
                    n += 1
                    name = f"{spec.name}-{n}"
                added[name] = replace(spec, name=name)
                self.specs[name] = savable(added[name])

        self._change(apply)
        said = {name: unsaved(spec) for name, spec in added.items()}
        self.live |= {name: added[name] for name, words in said.items() if words}
        return said

    def export_file(self, path: Path) -> int:
        """Every saved server to ``path`` as an ``mcpServers`` file (secrets as the saved file has
        them: references); the number written."""
        specs = list(self.specs.values())
        write_private(path, servers_file(specs))
        return len(specs)
