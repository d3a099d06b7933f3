"""Served tasks as one JSON file each in a folder (``store="file:<dir>"``)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import fcntl
import functools
import json
import os
import re
import weakref
from pathlib import Path

from .._fs import write_whole
from .._json import too_deep
from ..errors import ConfigError
from ..protocol.model import Task
from .base import (
    EVERY_TASK,
    RECORD_DEPTH,
    Durable,
    KeepsEnded,
    StoreKind,
    TaskPage,
    TaskQuery,
    page_of,
    readable,
    task_from_record,
    task_record,
)

__all__ = ["FileTaskStore", "KIND"]


class FileTaskStore(Durable, KeepsEnded):
    """One JSON file per task in ``folder``, replaced atomically (write a temp file, then rename).

    A crash never leaves a partial task file; reads are served from memory after the first load.
    It keeps every task (``KeepsEnded``), and a server started on it fails what a restart
    interrupted (``Durable``).

    One store owns its folder while it is open: it holds an exclusive lock on ``LOCK_FILE`` there
    (``fcntl.flock``; let go by :meth:`aclose`, and by the system when the process ends, a crash
    too), so a second opener (another ``serve``, another toolnexus-tui, this process again) raises
    ``ConfigError`` naming the folder and the holder's pid before it reads or writes anything:
    it would otherwise fail the tasks the first runs, "interrupted by restart". ``read_only=True``
    opens it without the lock, to read what is there (a test, a look at the tasks); it saves
    nothing.
    """

    def __init__(self, folder: str | os.PathLike[str], *, read_only: bool = False) -> None:
        self.folder = Path(folder)
        self.read_only = read_only
        self._owner: weakref.finalize[[int], FileTaskStore] | None = None
        if not read_only:
            self.folder.mkdir(parents=True, exist_ok=True)
            self._owner = weakref.finalize(self, os.close, _owned(self.folder))  # dropped: let go
        self._cache: dict[str, Task] = {}
        self._loaded = False
        self._locks: dict[str, asyncio.Lock] = {}

    async def aclose(self) -> None:
        """Let the folder go: another process may open it now."""
        self.close()

    def close(self) -> None:
        """:meth:`aclose`, for code with no loop."""
        if self._owner is not None:
            self._owner()  # closing the lock file lets go of its lock
            self._owner = None

    def _path(self, id: str) -> Path:
        safe = base64.urlsafe_b64encode(id.encode()).decode().rstrip("=") if not _plain(id) else id
        return self.folder / f"{safe}.json"

    def load(self) -> list[Task]:
        """Read every task file (skipping and logging any that does not parse)."""
        if not self._loaded:
            for path in sorted(self.folder.glob("*.json")):
                task = readable(
                    path.name, functools.partial(_read_file, path)
                )  # a damaged file must not stop the server
                if task is not None:
                    self._cache[task.id] = task
            for tmp in self.folder.glob(".*.tmp"):  # left by a crash mid-write; the old file stands
                if not self.read_only:  # the owner's write may be under way
                    tmp.unlink(missing_ok=True)
            self._loaded = True
        return list(self._cache.values())

    async def get(self, id: str) -> Task | None:
        if not self._loaded:
            await asyncio.to_thread(self.load)
        return self._cache.get(id)

    async def save(self, task: Task) -> None:
        if self.read_only:
            raise ConfigError(f"the task store {self.folder} was opened read-only")
        if not self._loaded:
            await asyncio.to_thread(self.load)
        self._cache[task.id] = task  # a value, never changed once saved (Task.moved)
        body = json.dumps(task_record(task), ensure_ascii=False)
        path = self._path(task.id)
        lock = self._locks.setdefault(task.id, asyncio.Lock())
        async with lock:  # saves of one task land in order
            await asyncio.to_thread(write_whole, path, body)

    async def list(self, query: TaskQuery = EVERY_TASK) -> TaskPage:
        if not self._loaded:
            await asyncio.to_thread(self.load)
        return page_of(list(self._cache.values()), query)


LOCK_FILE = ".lock"
"""The file in a store's folder its owner holds locked, its pid written in it."""


def _owned(folder: Path) -> int:
    """``folder``'s lock file, open and locked (exclusive; without waiting), the pid in it.
    Raises ``ConfigError`` when another open file holds it, naming the pid written there."""
    fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid = os.pread(fd, 20, 0).decode(errors="replace").strip()
        os.close(fd)
        holder = f"another process (pid {pid})" if pid.isdigit() else "another process"
        if pid == str(os.getpid()):
            holder = f"another server of this process (pid {pid})"
        raise ConfigError(
            f"the task store {folder} is in use by {holder}: "
            "one server at a time may serve a folder of tasks"
        ) from None
    except BaseException:
        os.close(fd)
        raise
    with contextlib.suppress(OSError):  # the pid only helps the message of a second opener
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
    return fd


def _read_file(path: Path) -> Task:
    record = json.loads(path.read_text(encoding="utf-8"))
    if too_deep(record, RECORD_DEPTH):
        raise ValueError(f"nested deeper than {RECORD_DEPTH} levels")
    return task_from_record(record)


def _plain(id: str) -> bool:
    return bool(id) and len(id) < 200 and all(c.isalnum() or c in "-_" for c in id)


KIND = StoreKind(
    "file",
    "file:DIR",
    re.compile("file:(.+)", re.S),
    FileTaskStore,
    lambda folder, *_: FileTaskStore(Path(folder).expanduser()),
)
"""``file:DIR``: one JSON file per task in a folder."""
