"""Where things are kept: served tasks (memory, a folder of files, PostgreSQL) and the
conversations of the model loop, behind one contract each (``TaskStore``, ``ConversationStore``).
A store's errors (``StaleTaskError``, ``StoreUnavailableError``) are in :mod:`toolnexus.errors`.

The kinds of task store a user names with a string are :data:`KINDS`: the parser
(:func:`open_store`), its error, every help text (``--store``, the TUI's form, the notebook's
help) and the store tests read that list. A new kind is a module with its store and its
``StoreKind``, and a line here."""

from __future__ import annotations

import dataclasses
import inspect

from ..errors import ConfigError
from ..secrets import mask_url
from . import file, memory, postgres
from .base import (
    EVERY_TASK,
    Closable,
    Durable,
    JoinsConversations,
    KeepsEnded,
    Link,
    Shared,
    StoreKind,
    TaskPage,
    TaskQuery,
    TaskStore,
    task_from_record,
    task_record,
    visible,
)
from .conversations import (
    ConversationStore,
    FileConversationStore,
    MemoryConversationStore,
)
from .file import FileTaskStore
from .memory import MemoryTaskStore
from .postgres import PostgresConversationStore, PostgresTaskStore, is_postgres_url

__all__ = [
    "Closable",
    "ConversationStore",
    "Durable",
    "FileConversationStore",
    "FileTaskStore",
    "is_postgres_url",
    "JoinsConversations",
    "KeepsEnded",
    "kind_of",
    "KINDS",
    "kinds_with",
    "Link",
    "MemoryConversationStore",
    "MemoryTaskStore",
    "open_store",
    "PostgresConversationStore",
    "PostgresTaskStore",
    "Shared",
    "STORE_FORMS",
    "StoreKind",
    "task_from_record",
    "task_record",
    "TaskPage",
    "TaskQuery",
    "TaskStore",
    "visible",
]

KINDS: tuple[StoreKind, ...] = (memory.KIND, file.KIND, postgres.KIND)
"""Every kind of task store a string names, the default (``memory``) first."""

STORE_FORMS = " | ".join(kind.form for kind in KINDS)
"""How each kind is written, for help texts: ``memory | file:DIR | postgresql://USER@HOST/DB``."""


def kind_of(spec: str) -> StoreKind | None:
    """The kind of store ``spec`` names, or None."""
    return next((kind for kind in KINDS if kind.location(spec) is not None), None)


def kinds_with(capability: type, has: bool = True) -> list[StoreKind]:
    """The kinds whose stores declare ``capability`` (``has=False``: those that do not)."""
    return [kind for kind in KINDS if issubclass(kind.store, capability) is has]


_OLD_FILTERS = {field.name for field in dataclasses.fields(TaskQuery)}
"""What ``list()`` took as keywords before :class:`TaskQuery` (its fields now): a store whose
first parameter is one of them was written for that contract."""


def open_store(
    store: str | TaskStore | None, *, max_tasks: int | None = 100_000, max_age: float | None = None
) -> TaskStore:
    """The store ``store`` names: a string of one of :data:`KINDS` (None: the default, memory;
    the memory store keeps at most ``max_tasks`` finished tasks, none older than ``max_age``
    seconds; the others keep everything), or any object with the TaskStore methods, as it is."""
    if store is None:
        store = KINDS[0].form
    if isinstance(store, str):
        for kind in KINDS:
            where = kind.location(store)
            if where is not None:
                return kind.open(where, max_tasks, max_age)
        raise ConfigError(
            f"store must be one of {STORE_FORMS}, or a TaskStore object, not {mask_url(store)!r}"
        )
    named = type(store).__qualname__  # not its repr: a dataclass's shows its DSN, password and all
    for name in ("get", "save", "list"):
        if not callable(getattr(store, name, None)):
            raise ConfigError(f"store object {named} has no {name}() method")
    try:
        taken = inspect.signature(store.list).bind(EVERY_TASK).arguments
        old = bool(_OLD_FILTERS & set(taken))  # list(self, context_id=None, ...): a filter
    except TypeError:  # list(self, *, context_id=None, ...)
        old = True
    except ValueError:  # no signature to read (a builtin): trusted as it is
        old = False
    if old:
        raise ConfigError(
            f"store object {named}: list() must take one TaskQuery (toolnexus.stores.TaskQuery: "
            "the context, state, time, owner and page asked for), not keywords as before"
        )
    return store
