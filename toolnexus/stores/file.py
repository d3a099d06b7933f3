"""Served tasks as one JSON file each in a folder (``store="file:<dir>"``)."""

from __future__ import annotations

import asyncio
import base64
import functools
import json
import os
import re
from pathlib import Path

from .._fs import write_whole
from .._json import too_deep
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
    """

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self._cache: dict[str, Task] = {}
        self._loaded = False
        self._locks: dict[str, asyncio.Lock] = {}

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
                tmp.unlink(missing_ok=True)
            self._loaded = True
        return list(self._cache.values())

    async def get(self, id: str) -> Task | None:
        if not self._loaded:
            await asyncio.to_thread(self.load)
        return self._cache.get(id)

    async def save(self, task: Task) -> None:
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
