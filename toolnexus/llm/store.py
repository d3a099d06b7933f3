"""Where :meth:`Client.ask` keeps conversations: in memory (default) or one JSON file each."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from ..tools import sanitize

__all__ = ["ConversationStore", "MemoryConversationStore", "FileConversationStore"]


@runtime_checkable
class ConversationStore(Protocol):
    """Transcripts by conversation id."""

    async def get(self, id: str) -> list[dict[str, Any]] | None: ...

    async def save(self, id: str, messages: list[dict[str, Any]]) -> None: ...


class MemoryConversationStore:
    """Conversations in a dict, for the life of the process."""

    def __init__(self) -> None:
        self._data: dict[str, tuple[dict[str, Any], ...]] = {}  # tuples: the GC can stop walking them

    async def get(self, id: str) -> list[dict[str, Any]] | None:
        found = self._data.get(id)
        return list(found) if found is not None else None

    async def save(self, id: str, messages: list[dict[str, Any]]) -> None:
        self._data[id] = tuple(messages)


class FileConversationStore:
    """One JSON file per conversation in ``folder``, replaced atomically on every save."""

    def __init__(self, folder: str | os.PathLike[str]) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)

    def _path(self, id: str) -> Path:
        return self.folder / f"{sanitize(id)}.json"

    async def get(self, id: str) -> list[dict[str, Any]] | None:
        path = self._path(id)

        def read() -> list[dict[str, Any]] | None:
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
            except FileNotFoundError:
                return None
            return data.get("messages") if isinstance(data, dict) else None

        return await asyncio.to_thread(read)

    async def save(self, id: str, messages: list[dict[str, Any]]) -> None:
        path = self._path(id)
        body = json.dumps({"id": id, "messages": messages}, ensure_ascii=False)

        def write() -> None:
            tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
            tmp.write_text(body, encoding="utf-8")
            os.replace(tmp, path)

        await asyncio.to_thread(write)
