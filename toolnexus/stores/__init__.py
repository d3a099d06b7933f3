"""Where things are kept: served tasks (memory, a folder of files, PostgreSQL) and the
conversations of the model loop, behind one contract each (``TaskStore``, ``ConversationStore``).
A store's errors (``StaleTaskError``, ``StoreUnavailableError``) are in :mod:`toolnexus.errors`."""

from __future__ import annotations

from pathlib import Path

from ..errors import ConfigError
from ..secrets import mask_url
from .base import TaskPage, TaskStore, task_from_record, task_record, visible
from .conversations import (
    ConversationStore,
    FileConversationStore,
    MemoryConversationStore,
)
from .file import FileTaskStore
from .memory import MemoryTaskStore
from .postgres import PostgresConversationStore, PostgresTaskStore, is_postgres_url

__all__ = [
    "TaskStore",
    "TaskPage",
    "MemoryTaskStore",
    "FileTaskStore",
    "PostgresTaskStore",
    "open_store",
    "ConversationStore",
    "MemoryConversationStore",
    "FileConversationStore",
    "PostgresConversationStore",
    "task_record",
    "task_from_record",
    "visible",
    "is_postgres_url",
]


def open_store(
    store: str | TaskStore | None, *, max_tasks: int | None = 100_000, max_age: float | None = None
) -> TaskStore:
    """``"memory"`` (default; keeps at most ``max_tasks`` finished tasks, none older than ``max_age``
    seconds), ``"file:<dir>"`` (keeps everything), ``"postgresql://..."`` (keeps everything, shared by
    every worker: see :mod:`toolnexus.stores.postgres`), or any object with the TaskStore methods."""
    if store is None or store == "memory":
        return MemoryTaskStore(max_tasks, max_age)
    if isinstance(store, str):
        if store.startswith("file:") and len(store) > 5:
            return FileTaskStore(Path(store[5:]).expanduser())
        if is_postgres_url(store):
            return PostgresTaskStore(store)
        raise ConfigError(
            f"store must be 'memory', 'file:<dir>', 'postgresql://...' or a TaskStore object, "
            f"not {mask_url(store)!r}"
        )
    for name in ("get", "save", "list"):
        if not callable(getattr(store, name, None)):
            raise ConfigError(f"store object {store!r} has no {name}() method")
    return store
