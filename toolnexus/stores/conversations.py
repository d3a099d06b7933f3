"""Where :meth:`Client.ask` keeps conversations: in memory (default) or one JSON file each."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from .. import _json
from .._fs import write_whole
from ..tools import sanitize

__all__ = ["ConversationStore", "MemoryConversationStore", "FileConversationStore"]


@runtime_checkable
class ConversationStore(Protocol):
    """Transcripts by conversation id."""

    async def get(self, id: str) -> list[dict[str, Any]] | None: ...

    async def save(self, id: str, messages: list[dict[str, Any]]) -> None: ...


class MemoryConversationStore:
    """Conversations in memory, each as JSON bytes (the GC never walks them; read and written on
    every turn, so not deflated), for the life of the process; past ``max_conversations`` the least
    recently used one is dropped."""

    def __init__(self, max_conversations: int | None = 50_000) -> None:
        self._data: dict[str, bytes] = {}
        self.max_conversations = max_conversations

    async def get(self, id: str) -> list[dict[str, Any]] | None:
        found = self._data.get(id)
        return _json.loads(found) if found is not None else None

    async def save(self, id: str, messages: list[dict[str, Any]]) -> None:
        self._data.pop(id, None)  # re-inserted last: the dict's order is the order of use
        self._data[id] = _json.tight(messages)
        if self.max_conversations is not None and len(self._data) > self.max_conversations:
            del self._data[next(iter(self._data))]


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

        await asyncio.to_thread(write_whole, path, body)
