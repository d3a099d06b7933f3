"""A served agent's tasks and conversations in PostgreSQL: ``store="postgresql://..."``.

One database can be shared by every process (worker) that serves the same agent: tasks carry a
version, and a save written over a version that another worker wrote since it was read is refused
(:class:`StaleTaskError`) instead of silently losing that worker's change (``TaskRunner.transition``
then reads the task again and decides). Conversations of each context live there too. The saves
a worker makes while its last statement is under way are written together in the next (one
round trip, one transaction, each save answered for itself): under load a task costs a fraction
of a statement (``bench/README.md``: PostgreSQL against memory). A save made alone is written at
once by its caller, its values as they are (no arrays, no writer task: 13 % fewer instructions).

The schema is created and migrated by the library itself: ``toolnexus_schema`` holds the version,
and every migration runs once, in order, under an advisory lock (any number of workers may start
at once). The driver is asyncpg: on the same round trips (two versioned upserts and a read, from
``bench/pg_drivers.py``) it did 1.8x the round trips of psycopg 3 at concurrency 16 for under half
the client CPU (``bench/README.md``). Needs ``pip install 'toolnexus[postgres]'``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import re
import secrets
import socket
from collections.abc import AsyncGenerator
from typing import Any

from .. import _json
from ..errors import MissingExtra, StaleTaskError, StoreUnavailableError
from ..protocol.model import Task, TaskState
from ..secrets import mask_url
from .base import (
    EVERY_TASK,
    Durable,
    JoinsConversations,
    KeepsEnded,
    Shared,
    StoreKind,
    TaskPage,
    TaskQuery,
    task_from_record,
    task_record,
)

__all__ = [
    "PostgresTaskStore",
    "PostgresConversationStore",
    "WorkerLink",
    "SCHEMA_VERSION",
    "is_postgres_url",
    "KIND",
]

log = logging.getLogger("toolnexus.serve")

MIGRATIONS: list[str] = [
    # Each migration only adds (tables, indexes, columns that may be null or have a default) and
    # never removes or renames: an older toolnexus serves on the newer schema unchanged, so a
    # rolling deploy migrates once (under the advisory lock) while the old version still serves,
    # and a host of the old version may still start (or be rolled back to) meanwhile.
    # 1: tasks (the record is the file store's JSON) and conversations
    """
    CREATE TABLE IF NOT EXISTS toolnexus_tasks (
        id text PRIMARY KEY,
        context_id text NOT NULL,
        state text NOT NULL,
        owner text,
        created text NOT NULL,
        updated text NOT NULL,
        version integer NOT NULL,
        record bytea NOT NULL
    );
    CREATE INDEX IF NOT EXISTS toolnexus_tasks_order ON toolnexus_tasks (created DESC, id DESC);
    CREATE INDEX IF NOT EXISTS toolnexus_tasks_context ON toolnexus_tasks (context_id);
    CREATE TABLE IF NOT EXISTS toolnexus_conversations (
        id text PRIMARY KEY,
        messages bytea NOT NULL,
        updated timestamptz NOT NULL DEFAULT now()
    );
    """,
    # 2: who runs a task and until when (leases), and a suspended run to resume on any worker
    """
    ALTER TABLE toolnexus_tasks ADD COLUMN IF NOT EXISTS worker text;
    ALTER TABLE toolnexus_tasks ADD COLUMN IF NOT EXISTS lease_until timestamptz;
    ALTER TABLE toolnexus_tasks ADD COLUMN IF NOT EXISTS pending bytea;
    CREATE INDEX IF NOT EXISTS toolnexus_tasks_leased ON toolnexus_tasks (lease_until) WHERE worker IS NOT NULL;
    """,
    # 3: push-notification configs, and a count of their changes on the task (read back by every save)
    """
    CREATE TABLE IF NOT EXISTS toolnexus_push (
        task_id text NOT NULL,
        config_id text NOT NULL,
        config bytea NOT NULL,
        PRIMARY KEY (task_id, config_id)
    );
    ALTER TABLE toolnexus_tasks ADD COLUMN IF NOT EXISTS push integer NOT NULL DEFAULT 0;
    """,
]
SCHEMA_VERSION = len(MIGRATIONS)
_ANNOUNCE = "SELECT pg_notify(c, p) FROM unnest($1::text[], $2::text[]) AS x(c, p)"
_ANNOUNCE_ONE = "SELECT pg_notify($1, $2)"
"""A lone announcement, its values as they are: no arrays for asyncpg to check element by element
(its client's CPU 46 -> 32 µs a statement; bench/README.md: streams across workers and hosts,
round 4)."""


def _announcing(batch: list[tuple[str, str]]) -> tuple[Any, ...]:
    """The statement and arguments that put each payload of ``batch`` on its channel, in order."""
    if len(batch) == 1:
        return _ANNOUNCE_ONE, *batch[0]
    return _ANNOUNCE, [c for c, _ in batch], [p for _, p in batch]


CHANNEL = "toolnexus_tasks"
"""Every saved change of a task is announced here: ``"<worker> <task id> <version> <state>"``."""
_RUNNING = ("submitted", "working")
_HEARTBEAT = (
    "UPDATE toolnexus_tasks SET lease_until = now() + make_interval(secs => $2) "
    "WHERE worker = $1 AND id = ANY($3::text[])"
)
_LOCK = 0x746F6F6C6E6578  # the advisory lock migrations hold ("toolnex")


def _write_tasks(rows: str, conversations: str) -> str:
    """The statement that writes saves: ``rows`` gives them (one row each, every row's id distinct,
    so no row is written twice), ``conversations`` the conversations kept with them."""
    return (
        f"WITH v AS ({rows}), "
        # a data-modifying WITH runs to its end whatever the rest matches: a conversation is kept
        # whether or not its task's write is refused
        f"c AS (INSERT INTO toolnexus_conversations (id, messages) {conversations} "
        "ON CONFLICT (id) DO UPDATE SET messages = EXCLUDED.messages, updated = now()), "
        "i AS (INSERT INTO toolnexus_tasks (id, context_id, state, owner, created, updated, version, "
        "record, worker, lease_until) SELECT id, context_id, state, owner, created, updated, 1, "
        "record, worker, now() + make_interval(secs => lease) FROM v WHERE version = 0 "
        "ON CONFLICT (id) DO NOTHING RETURNING id, version, push, state), "
        # the rows to update locked in the order of their ids: two workers' statements never wait
        # on each other crosswise
        "o AS (SELECT t.id FROM toolnexus_tasks t JOIN v ON t.id = v.id AND t.version = v.version "
        "WHERE v.version > 0 ORDER BY t.id FOR UPDATE OF t), "
        "u AS (UPDATE toolnexus_tasks t SET state = v.state, updated = v.updated, record = v.record, "
        "version = t.version + 1, worker = v.worker, lease_until = now() + make_interval(secs => "
        "v.lease), pending = CASE WHEN v.state = 'input-required' THEN t.pending END FROM v "
        "WHERE t.id = v.id AND t.version = v.version AND t.id IN (SELECT id FROM o) "
        "RETURNING t.id, t.version, t.push, t.state), "
        "w AS (SELECT * FROM i UNION ALL SELECT * FROM u) "
        "SELECT id, version, push, pg_notify($11, $12 || ' ' || id || ' ' || version || ' ' || state) "
        "FROM w"
    )


_COLUMNS = "id, context_id, state, owner, created, updated, record, version, worker, lease"
_WRITE_TASKS = _write_tasks(
    # the saves gathered while the last statement was under way (see PostgresTaskStore.save)
    "SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], "
    f"$7::bytea[], $8::int[], $9::text[], $10::float8[]) AS v({_COLUMNS})",
    "SELECT * FROM unnest($13::text[], $14::bytea[])",
)
_WRITE_TASK = _write_tasks(
    # a lone save, its values as they are: no arrays for asyncpg to check element by element
    "SELECT * FROM (VALUES ($1::text, $2::text, $3::text, $4::text, $5::text, $6::text, "
    f"$7::bytea, $8::int, $9::text, $10::float8)) AS v({_COLUMNS})",
    "SELECT $13::text, $14::bytea WHERE $13::text IS NOT NULL",
)
_BATCH = 100
"""Saves written in one statement at most."""
_UPSERT_CONVERSATION = (
    "INSERT INTO toolnexus_conversations (id, messages) VALUES ($1, $2) ON CONFLICT (id) "
    "DO UPDATE SET messages = EXCLUDED.messages, updated = now()"
)


def _tell(
    batch: list[Any],
    written: dict[str, tuple[int, int]] | None = None,
    error: BaseException | None = None,
) -> None:
    """Answer each save of ``batch`` waiting: its ``(version, push)`` (None: refused as stale), or ``error``."""
    for row, _, done in batch:
        if done.done():  # its caller stopped waiting (cancelled)
            continue
        if isinstance(error, asyncio.CancelledError):
            done.cancel()
        elif error is not None:
            done.set_exception(error)
        else:
            done.set_result(written.get(row[0]) if written is not None else None)


def is_postgres_url(store: Any) -> bool:
    return isinstance(store, str) and KIND.location(store) is not None


@contextlib.asynccontextmanager
async def _reachable(db: _Database) -> AsyncGenerator[Any, None]:
    """The pool, with the database being out of reach turned into :class:`StoreUnavailableError`."""
    asyncpg = _asyncpg()
    try:
        yield await db.pool()
    except (TimeoutError, OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        # a connection failure (08), the server shutting down or restarting (57), out of connections (53)
        if isinstance(exc, asyncpg.PostgresError) and (getattr(exc, "sqlstate", None) or "")[
            :2
        ] not in ("08", "57", "53"):
            raise
        log.warning(
            "the task store at %s is unavailable: %s: %s", db.safe_url, type(exc).__name__, exc
        )
        raise StoreUnavailableError() from None


def _asyncpg() -> Any:
    try:
        import asyncpg  # noqa: PLC0415  # optional extra: postgres
    except ImportError:
        raise MissingExtra(
            "the PostgreSQL store needs asyncpg: pip install 'toolnexus[postgres]'"
        ) from None
    return asyncpg


async def migrate(connection: Any) -> int:
    """Bring the schema to :data:`SCHEMA_VERSION`; returns the version found before."""
    async with connection.transaction():
        await connection.execute("SELECT pg_advisory_xact_lock($1)", _LOCK)
        await connection.execute(
            "CREATE TABLE IF NOT EXISTS toolnexus_schema (version integer NOT NULL)"
        )
        found = await connection.fetchval("SELECT max(version) FROM toolnexus_schema")
        if (
            found is not None and found > SCHEMA_VERSION
        ):  # a newer host migrated it: what it added, unused here
            log.warning(
                "the database's toolnexus schema is version %d, newer than this toolnexus's %d: "
                "serving on it (migrations only add); upgrade this host",
                found,
                SCHEMA_VERSION,
            )
        for version in range((found or 0) + 1, SCHEMA_VERSION + 1):
            await connection.execute(MIGRATIONS[version - 1])
            await connection.execute("INSERT INTO toolnexus_schema (version) VALUES ($1)", version)
        return found or 0


async def _kept_as_is(connection: Any) -> None:
    """A pooled connection goes back as it is: the store never changes a session's state (no
    LISTEN, settings or session locks on pooled connections), so asyncpg's reset query, a second
    round trip after every statement, would only cost (it was ~14 % of a worker's CPU)."""


class _Database:
    """One asyncpg pool, opened (and the schema migrated) on first use, shared by the stores of a URL."""

    def __init__(self, url: str, size: int = 10) -> None:
        self.url = url
        self.safe_url = mask_url(url)  # what a log line may say
        self.size = size
        self._pool: Any = None
        self._opening: asyncio.Lock | None = None

    async def pool(self) -> Any:
        if self._pool is not None:
            return self._pool
        if self._opening is None:
            self._opening = asyncio.Lock()
        async with self._opening:
            if self._pool is None:
                asyncpg = _asyncpg()
                pool = await asyncpg.create_pool(
                    self.url, min_size=1, max_size=self.size, command_timeout=30, reset=_kept_as_is
                )
                try:
                    async with pool.acquire() as connection:
                        await migrate(connection)
                except BaseException:
                    await pool.close()
                    raise
                self._pool = pool
        return self._pool

    async def close(self) -> None:
        pool, self._pool = self._pool, None
        if pool is not None:
            await pool.close()


class PostgresTaskStore(Durable, KeepsEnded, Shared, JoinsConversations):
    """Tasks in PostgreSQL, shared by every worker serving the same agent (see the module).

    Keeps the TaskStore contract and every capability it declares (tests/serve/test_stores.py
    runs them here too); each :class:`Task` read or saved here carries the version it was at.
    """

    def __init__(self, url: str, *, pool_size: int = 10, lease: float = 5.0) -> None:
        self.db = _Database(url, pool_size)
        self._record, self._task = task_record, task_from_record
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{secrets.token_hex(3)}"
        """This worker's name: on the tasks it runs, and on what it announces."""
        self.lease = lease
        """Seconds a running task stays this worker's without a heartbeat (see :class:`WorkerLink`)."""
        self.push_changes: dict[str, int] = {}
        """How many times each task's push configs changed, as its last save here read it."""
        self._saves: list[Any] = []  # (row, conversation, future) waiting for a statement
        self._writing = 0  # statements of saves under way
        self._writers: set[asyncio.Future[None]] = set()

    async def get(self, id: str) -> Task | None:
        async with _reachable(self.db) as pool:
            row = await pool.fetchrow(
                "SELECT version, record FROM toolnexus_tasks WHERE id = $1", id
            )
        return self._read(row) if row is not None else None

    def _read(self, row: Any) -> Task:
        task = self._task(_json.loads(row["record"]))
        task.version = row["version"]
        return task

    def joins(self, conversations: object) -> bool:
        """Whether ``conversations`` keeps them in this database: then a run's conversation is
        written with its task's last state, in one statement (:meth:`save`'s ``conversation``)."""
        return isinstance(conversations, PostgresConversationStore) and conversations.db is self.db

    def conversations(self) -> PostgresConversationStore:
        """The conversations in this database (its pool shared)."""
        return PostgresConversationStore(self.db)

    def link(self, runner: Any) -> WorkerLink:
        return WorkerLink(self, runner)

    async def save(
        self, task: Task, conversation: tuple[str, list[dict[str, Any]]] | None = None
    ) -> None:
        """Insert, or update the version read; :class:`StaleTaskError` when another worker wrote since.
        ``conversation`` (its id and messages) is upserted in the same statement, whether or not
        the task's write is refused: a run's two results, one round trip, one transaction.

        Saves made while this worker's last statement is under way are written together in the
        next (:data:`_BATCH` at most, one task once): at 64 tasks in flight a round trip carries
        several, and a task costs a fraction of the statement, its pool and its wakeups. A save
        made alone (none under way, none made in the same moment) is written at once, by the
        caller, in a statement of one row."""
        state = task.state.value
        running = state in _RUNNING  # a running task is this worker's, on a lease
        row = (
            task.id,
            task.context_id,
            state,
            task.owner,
            task.created,
            task.status.timestamp or "",
            _json.dumps(self._record(task)),
            task.version,
            self.worker if running else None,
            self.lease if running else None,
        )
        kept = None if conversation is None else (conversation[0], _json.dumps(conversation[1]))
        written: tuple[int, int] | None = None
        first = joined = not self._writing and not self._saves
        if first:  # a statement of its own, unless others are saved in the same moment
            self._writing += 1  # saves made meanwhile wait for the next statement
            try:
                await asyncio.sleep(0)  # the rest of a moment's saves (a gather, a tick's requests)
                joined = bool(self._saves)  # they started a writer: this save goes with them
                if not joined:  # alone: no arrays for asyncpg to check, no writer task
                    written = await self._write_one(row, kept)
            finally:
                self._writing -= 1
        if not first or joined:
            done: asyncio.Future[tuple[int, int] | None] = (
                asyncio.get_running_loop().create_future()
            )
            # in order: a first save ahead of those made after it (one task may be among them)
            self._saves.insert(0 if first else len(self._saves), (row, kept, done))
            if not self._writing or (not first and self._writing < self.WRITERS):
                self._start_writer()
            written = await done
        if written is None:
            raise StaleTaskError(
                f"task {task.id} was changed by another worker since it was read "
                f"(version {task.version})"
            )
        task.version, push = written
        if push:  # its push configs changed this many times: the notifier reloads when it moved on
            self.push_changes[task.id] = push
        else:
            self.push_changes.pop(task.id, None)

    WRITERS = 2
    """Statements of saves under way at once (each takes what waits when it starts)."""

    def _start_writer(self) -> None:
        self._writing += 1
        writer = asyncio.ensure_future(self._write())
        self._writers.add(writer)  # held: the loop keeps only a weak reference
        writer.add_done_callback(self._writers.discard)

    async def _write_one(self, row: tuple[Any, ...], kept: tuple[str, bytes] | None) -> Any:
        """Write one save in a statement of its own: its ``(version, push)``, None when refused."""
        async with _reachable(self.db) as pool:
            found = await pool.fetchrow(
                _WRITE_TASK, *row, CHANNEL, self.worker, *(kept or (None, None))
            )
        return None if found is None else (found["version"], found["push"])

    async def _write(self) -> None:
        """Write what waits, a statement at a time, until nothing does."""
        try:
            while self._saves:
                batch, taken, later = [], set(), []
                for save in self._saves:
                    if len(batch) < _BATCH and save[0][0] not in taken:
                        taken.add(save[0][0])
                        batch.append(save)
                    else:  # a second save of a task goes in the next statement, after the first
                        later.append(save)
                self._saves = later
                try:
                    written = await self._statement(batch)
                except Exception as exc:
                    if len(batch) > 1 and not isinstance(exc, StoreUnavailableError):
                        # nothing of it was written (one statement): one save's error (a value
                        # refused, a deadlock between workers) is its alone, each written apart
                        for save in batch:
                            await self._write_alone(save)
                        continue
                    _tell(batch, error=exc)
                except BaseException as exc:  # cancelled (the loop closing): no save waits forever
                    _tell(batch, error=exc)
                    raise
                else:
                    _tell(batch, written)
        finally:
            self._writing -= 1

    async def _write_alone(self, save: Any) -> None:
        try:
            written = await self._statement([save])
        except Exception as exc:
            _tell([save], error=exc)
        else:
            _tell([save], written)

    async def _statement(self, batch: list[Any]) -> dict[str, tuple[int, int]]:
        """Write ``batch`` in one statement: each task's new ``(version, push)``, by id (a task
        another worker wrote since it was read is missing)."""
        columns: list[list[Any]] = [[] for _ in range(10)]
        for row, _, _ in batch:
            for column, value in zip(columns, row, strict=True):
                column.append(value)
        kept = {c[0]: c[1] for _, c, _ in batch if c is not None}  # the last of each
        ids = sorted(kept)  # upserted in one order by every worker
        async with _reachable(self.db) as pool:
            rows = await pool.fetch(
                _WRITE_TASKS,
                *columns,
                CHANNEL,
                self.worker,
                ids,
                [kept[i] for i in ids],
            )
        return {r["id"]: (r["version"], r["push"]) for r in rows}

    async def list(self, query: TaskQuery = EVERY_TASK) -> TaskPage:
        try:
            start = int(query.page_token) if query.page_token else 0
        except ValueError:
            raise ValueError("pageToken is not one this server gave out") from None
        where, args = [], []
        for clause, value in (
            ("context_id = ${}", query.context_id),
            ("state = ${}", query.state.value if query.state else None),
            ("updated >= ${}", query.updated_after),
            ("(owner IS NULL OR owner = ${})", query.owner),
        ):
            if value is not None:
                args.append(value)
                where.append(clause.format(len(args)))
        condition = f"WHERE {' AND '.join(where)}" if where else ""
        async with _reachable(self.db) as pool:
            total = await pool.fetchval(f"SELECT count(*) FROM toolnexus_tasks {condition}", *args)
            if start < 0 or start > total:
                raise ValueError("pageToken is not one this server gave out")
            rows = await pool.fetch(
                f"SELECT version, record FROM toolnexus_tasks {condition} "
                f"ORDER BY created DESC, id DESC LIMIT {int(query.page_size)} OFFSET {start}",
                *args,
            )
        end = start + len(rows)
        return TaskPage([self._read(r) for r in rows], str(end) if end < total else "", total)

    # -- push-notification configs (see serve.push.PushNotifier: kept here, delivered by whichever
    #    worker moves the task) -------------------------------------------------------------------
    async def save_push(self, task_id: str, config_id: str, config: dict[str, Any]) -> None:
        async with _reachable(self.db) as pool:
            async with pool.acquire() as connection, connection.transaction():
                await connection.execute(
                    "INSERT INTO toolnexus_push (task_id, config_id, config) VALUES ($1, $2, $3) "
                    "ON CONFLICT (task_id, config_id) DO UPDATE SET config = EXCLUDED.config",
                    task_id,
                    config_id,
                    _json.dumps(config),
                )
                await connection.execute(
                    "UPDATE toolnexus_tasks SET push = push + 1 WHERE id = $1", task_id
                )

    async def delete_push(self, task_id: str, config_id: str) -> None:
        async with _reachable(self.db) as pool:
            async with pool.acquire() as connection, connection.transaction():
                await connection.execute(
                    "DELETE FROM toolnexus_push WHERE task_id = $1 AND config_id = $2",
                    task_id,
                    config_id,
                )
                await connection.execute(
                    "UPDATE toolnexus_tasks SET push = push + 1 WHERE id = $1", task_id
                )

    async def load_push(self, task_id: str) -> tuple[int, list[dict[str, Any]]]:
        """``(changes, configs)`` of a task's push configs."""
        async with _reachable(self.db) as pool:
            async with pool.acquire() as connection, connection.transaction():
                changes = await connection.fetchval(
                    "SELECT push FROM toolnexus_tasks WHERE id = $1", task_id
                )
                rows = await connection.fetch(
                    "SELECT config FROM toolnexus_push WHERE task_id = $1 ORDER BY config_id",
                    task_id,
                )
        return changes or 0, [_json.loads(r["config"]) for r in rows]

    async def save_pending(self, id: str, data: dict[str, Any]) -> None:
        """Keep a suspended run with its task (any worker may resume it: :meth:`take_pending`)."""
        async with _reachable(self.db) as pool:
            await pool.execute(
                "UPDATE toolnexus_tasks SET pending = $2 WHERE id = $1", id, _json.dumps(data)
            )

    async def take_pending(self, id: str) -> dict[str, Any] | None:
        """The suspended run of a task, taken (one worker only gets it), or None."""
        async with _reachable(self.db) as pool:
            found = await pool.fetchval(
                "UPDATE toolnexus_tasks t SET pending = NULL FROM (SELECT pending FROM "
                "toolnexus_tasks WHERE id = $1 FOR UPDATE) old WHERE t.id = $1 AND "
                "old.pending IS NOT NULL RETURNING old.pending",
                id,
            )
        return _json.loads(found) if found is not None else None

    async def heartbeat(
        self, running: list[str], connection: Any = None, timeout: float | None = None
    ) -> int:
        """Extend the lease of the tasks this worker really runs (a task whose run ended without a
        last write, however that happened, is left to lapse and be failed); returns how many. On
        ``connection`` when one is given (the link's listening one), else on the pool's."""
        args = (_HEARTBEAT, self.worker, self.lease, running)
        if connection is not None:
            done = await connection.execute(*args, timeout=timeout)
        else:
            async with _reachable(self.db) as pool:
                done = await pool.execute(*args)
        return int(done.split()[-1])

    async def announce(self, batch: list[tuple[str, str]]) -> None:
        """Put each payload of ``batch`` (``(channel, payload)``) on its channel, in order, in one
        statement."""
        async with _reachable(self.db) as pool:
            await pool.execute(*_announcing(batch))

    async def expired(self, limit: int = 100) -> list[str]:
        """Running tasks whose worker stopped renewing their lease (it died, or lost the database)."""
        async with _reachable(self.db) as pool:
            rows = await pool.fetch(
                "SELECT id FROM toolnexus_tasks WHERE worker IS NOT NULL AND lease_until < now() "
                "ORDER BY lease_until LIMIT $1",
                limit,
            )
        return [r["id"] for r in rows]

    async def aclose(self) -> None:
        await self.db.close()


class PostgresConversationStore:
    """Conversations (the transcript of each context) in PostgreSQL, for every worker alike."""

    def __init__(self, url: str | _Database) -> None:
        self.db = url if isinstance(url, _Database) else _Database(url)

    async def get(self, id: str) -> list[dict[str, Any]] | None:
        async with _reachable(self.db) as pool:
            found = await pool.fetchval(
                "SELECT messages FROM toolnexus_conversations WHERE id = $1", id
            )
        return _json.loads(found) if found is not None else None

    async def save(self, id: str, messages: list[dict[str, Any]]) -> None:
        async with _reachable(self.db) as pool:
            await pool.execute(_UPSERT_CONVERSATION, id, _json.dumps(messages))

    async def aclose(self) -> None:
        await self.db.close()


class WorkerLink:
    """What makes one worker of many: it hears every other worker's changes of tasks (PostgreSQL
    ``LISTEN``, no polling) and hands them to its runner (its bus, its SSE streams, its blocking
    waits; a run here that another worker canceled is stopped), renews the lease of the tasks it
    runs, and fails the running tasks of a worker whose lease lapsed (it died).

    A reply's words cross only for a task a stream on another worker follows: that worker asks
    (``want``: :meth:`want`), and the worker running the task announces the reply so far, then
    each piece as it is told (``words``: :meth:`words`), the text's offset with each, so a
    follower that joined mid-reply gets it all once and a text that starts over replaces what it
    had. The words go to the asking worker's own channel (:attr:`inbox`, named in its want: ``worker>inbox``),
    so that the other workers are not woken by each word (every listener of a channel gets every
    notification on it); a want that names none (a version before this one, during a rolling
    deploy) gets them on the workers' channel, which every worker hears. A notification holds at
    most 8,000 bytes: a longer piece goes as several. They are best effort (a worker that missed
    some still ends its streams with the task's whole artifact, which its completion announces).
    Announcements are sent in batches, one statement each. Payloads: ``worker task version
    state`` (a save's, in its statement), ``worker>inbox want task``, ``worker words [task,
    context, artifact, offset, last]\npiece``.

    Started by ``serve()`` when the store is PostgreSQL; a lost listening connection (the database
    restarted) is opened again on the next tick, and what was announced meanwhile is not replayed.
    """

    PAYLOAD = 7900
    """The bytes of one notification at most (PostgreSQL's limit is 8,000)."""

    ANNOUNCE_TIMEOUT = 30.0
    """Seconds one batch of announcements may take on the listening connection (as the pool's
    statements): past it the connection is dropped, and the next tick opens it again."""

    def __init__(self, store: PostgresTaskStore, runner: Any) -> None:
        self.store = store
        self.runner = runner
        # announcements waiting to be sent: (channel, payload)
        self._out: asyncio.Queue[tuple[str, str]] = asyncio.Queue()
        self.inbox = f"{CHANNEL}_{secrets.token_hex(8)}"
        """The channel only this worker listens on besides the workers': the words it asked for."""
        # tasks run here that streams elsewhere follow -> the channels their words go to (the
        # workers' channel for a follower that named none)
        self._followers: dict[str, set[str]] = {}
        # other workers' moves of tasks, each read from the store in turn: apart from the words
        # and wants (handed on as they are heard), so that no word waits behind a read
        self._moves: asyncio.Queue[tuple[str, int, TaskState]] = asyncio.Queue()
        self._listener: Any = None
        self._using = asyncio.Lock()  # the listening connection: one statement at a time (a
        # batch of announcements or a heartbeat)
        self._beating = True  # the last heartbeat was written (a failure is said once)
        self._tasks: list[asyncio.Task[None]] = []
        self._me = (store.worker + " ", store.worker + ">")  # heads of this worker's own

    async def start(self) -> None:
        await self.store.db.pool()  # the schema exists before anything is announced
        await self._listen()
        self._tasks = [
            asyncio.ensure_future(self._beat()),
            asyncio.ensure_future(self._tick()),
            asyncio.ensure_future(self._announce()),
            asyncio.ensure_future(self._arrive()),
        ]

    def want(self, task_id: str) -> None:
        """Ask the worker running ``task_id`` for its reply's words (a stream here follows it), on
        this worker's own channel."""
        self._out.put_nowait((CHANNEL, f"{self.store.worker}>{self.inbox} want {task_id}"))

    def words(
        self, task_id: str, context_id: str, artifact_id: str, offset: int, piece: str, last: bool
    ) -> None:
        """Announce a piece of a reply's text, at ``offset`` in it (a piece too long for one
        notification goes as several, each at its own offset)."""
        if len(context_id) > 1000:  # an odd caller's context: the follower knows the task anyway
            context_id = ""
        piece = piece.replace("\x00", "\ufffd")  # a NUL cannot be in a notification
        channels = self._followers.get(task_id) or {CHANNEL}
        if CHANNEL in channels:  # a follower of a version before inboxes: every worker hears it
            channels = {CHANNEL}
        if last:
            self._followers.pop(task_id, None)
        while True:
            head = _json.dumps([task_id, context_id, artifact_id, offset, last])
            room = (self.PAYLOAD - len(self.store.worker) - len(head) - 17) // 4  # (17: a part
            now, piece = piece[:room], piece[room:]  # not the last says false, a byte longer)
            done = not piece
            if last and not done:
                head = _json.dumps([task_id, context_id, artifact_id, offset, False])
            head = head.decode()
            for channel in channels:
                self._out.put_nowait((channel, f"{self.store.worker} words {head}\n{now}"))
            if done:
                return
            offset += len(now)

    def _wanted(self, who: str, task_id: str) -> None:
        """Another worker follows ``task_id``: its words go to the channel ``who`` names
        (``worker>inbox``), or to every worker when it names none."""
        inbox = who.partition(">")[2]
        valid = inbox.startswith(CHANNEL + "_") and len(inbox) < 64 and inbox.isascii()
        known = self._followers.get(task_id)
        self._followers[task_id] = {*(known or ()), inbox if valid else CHANNEL}  # the reply so
        if not self.runner.wanted(task_id):  # far goes there too: the channel is known first
            if known is None:
                del self._followers[task_id]
            else:
                self._followers[task_id] = known
        elif len(self._followers) > 10_000:  # tasks that ended without a last word
            del self._followers[next(iter(self._followers))]

    async def _announce(self) -> None:
        """Announcements in batches, one statement each: what is told while one is under way (and
        in the same turn of the loop as the first) goes in the next. On the listening connection
        (no pool to take one from and give it back), or the
        pool's while that one is being opened again."""
        while True:
            batch = [await self._out.get()]
            await asyncio.sleep(0)
            while not self._out.empty() and len(batch) < 100:
                batch.append(self._out.get_nowait())
            listener = None
            try:
                async with self._using:  # the listener as it is once the heartbeat let go (it may
                    listener = self._listener  # have dropped it): else the pool's, the batch kept
                    if listener is not None and not listener.is_closed():
                        await listener.execute(*_announcing(batch), timeout=self.ANNOUNCE_TIMEOUT)
                    else:
                        listener = None
                if listener is None:
                    await self.store.announce(batch)
            except Exception as exc:  # words are best effort: the task's end tells all
                log.warning("worker link: could not announce: %s: %s", type(exc).__name__, exc)
                if isinstance(exc, TimeoutError) and listener is not None:
                    listener.terminate()  # stalled: the next tick listens again (and reads
                    # what it follows), and words meanwhile go by the pool, not into a queue
                    # that grows by every word

    async def _listen(self) -> None:
        asyncpg = _asyncpg()
        connection = await asyncpg.connect(self.store.db.url)
        try:
            await connection.add_listener(CHANNEL, self._heard)
            await connection.add_listener(self.inbox, self._heard)
        except BaseException:  # refused, or the link stopped meanwhile: not left open
            connection.terminate()
            raise
        self._listener = connection

    def _heard(self, _connection: Any, _pid: int, _channel: str, payload: str) -> None:
        """Another worker's announcement, in the order the database made them: words and wants
        handed on here (no queue, no task switch), moves of tasks to :meth:`_arrive`. This
        worker's own are dropped, and words of a task nothing here follows (words on the workers'
        channel, for a follower that named no inbox, reach every worker; a stream here may have
        ended since it asked) before anything is parsed (the task's id read off the words' head,
        ``["<id>", ...``; an id with an escape in its JSON is parsed, then dropped there)."""
        if payload.startswith(self._me):
            return
        try:
            head, _, piece = payload.partition("\n")
            who, kind, rest = head.split(" ", 2)
            if kind == "words":
                if rest.startswith('["'):
                    task_id = rest[2 : rest.find('"', 2)]
                    if "\\" not in task_id and not self.runner.hears_words(task_id):
                        return
                task_id, context_id, artifact_id, offset, last = _json.loads(rest)
                self.runner.heard_words(task_id, context_id, artifact_id, offset, piece, last)
            elif kind == "want":
                self._wanted(who, rest)
            else:
                version, state = rest.split(" ")
                self._moves.put_nowait((kind, int(version), TaskState(state)))
        except Exception as exc:  # one bad announcement never ends the link
            log.warning(
                "worker link: could not deliver %r: %s: %s",
                payload[:200],
                type(exc).__name__,
                exc,
            )

    async def _arrive(self) -> None:
        """Other workers' moves, in the order they were announced: each may read the task (a
        round trip), while words and wants go on being delivered."""
        while True:
            task_id, version, state = await self._moves.get()
            try:
                await self.runner.arrived(task_id, version, state)
            except Exception as exc:  # a store error never ends the link
                log.warning(
                    "worker link: could not take task %s's move to %s: %s: %s",
                    task_id,
                    state.value,
                    type(exc).__name__,
                    exc,
                )

    async def _beat(self) -> None:
        """Renew the lease of the runs alive here every third of it, on a timer of its own and on
        the listening connection (:meth:`_renew`). Behind the tick's other work (a write-behind, a
        reaping: seconds under load) and the pool's queue (every read and save of a loaded
        worker), a heartbeat came late enough that another worker failed this one's running tasks
        as if it had died ("its lease expired"; bench/README.md: streams across workers and hosts,
        round 4)."""
        while True:
            await asyncio.sleep(self.store.lease / 3)
            running = list(self.runner._runs)
            if not running:  # no lease to renew: no statement that a lock on the table would
                continue  # hold, the listening connection with it (its notifications wait)
            try:
                if not await self._renew(running):
                    await self.store.heartbeat(running)
                self._beating = True
            except Exception as exc:  # the database away: the tick says so, and listens again
                if self._beating:
                    log.warning("worker link: heartbeat: %s: %s", type(exc).__name__, exc)
                self._beating = False

    async def _renew(self, running: list[str]) -> bool:
        """The heartbeat on the listening connection, after the batch of announcements under way
        there; False when it could not be within a quarter of the lease, the wait for that batch
        and the statement together (none open, a batch or the heartbeat stalled there, the
        connection broken: then dropped, as a stalled batch is, and the next tick opens it
        again), for the pool's to take it. Each wait given a third of the lease, a beat a third
        after the last could reach the pool as the lease lapsed."""
        listener = self._listener
        if listener is None or listener.is_closed():
            return False
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.store.lease / 4
        try:
            async with asyncio.timeout_at(deadline):
                await self._using.acquire()
        except TimeoutError:
            return False
        try:
            await self.store.heartbeat(running, listener, max(deadline - loop.time(), 0.001))
            return True
        except Exception:  # noqa: BLE001 (stalled past the deadline, or broken: the pool's turn)
            listener.terminate()
            return False
        finally:
            self._using.release()

    async def _tick(self) -> None:
        """The runner's write-behind (a state no caller was told of yet, written for the other
        hosts), reap and keep listening: every third of the lease (the heartbeat: :meth:`_beat`). Once the database is
        back after this worker lost it, it reads again what it follows (the announcements it
        missed) and reaps nothing for a lease: every other worker lost it too, most likely, and
        renews its leases first (an outage longer than a lease would otherwise fail live runs)."""
        loop = asyncio.get_running_loop()
        lost, calm_until = False, 0.0
        while True:
            await asyncio.sleep(self.store.lease / 3)
            try:
                missed = self._listener is None or self._listener.is_closed()
                if missed:
                    self._listener = None
                    await self._listen()
                await self.runner.write_behind()
                if missed:
                    await self.runner.resync()
                if lost:
                    lost, calm_until = False, loop.time() + self.store.lease
                if loop.time() >= calm_until:
                    for task_id in await self.store.expired():
                        await self.runner.lapsed(task_id)
            except Exception as exc:
                lost = True
                log.warning(
                    "worker link: %s: %s (again in %gs)",
                    type(exc).__name__,
                    exc,
                    self.store.lease / 3,
                )

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        listener, self._listener = self._listener, None
        if listener is not None and not listener.is_closed():
            try:
                await listener.close(timeout=2)
            except Exception:  # stalled (a canceled statement's answer never comes): cut
                listener.terminate()


KIND = StoreKind(
    "PostgreSQL",
    "postgresql://USER@HOST/DB",
    re.compile("(postgres(?:ql)?://.*)", re.S),
    PostgresTaskStore,
    lambda url, *_: PostgresTaskStore(url),
    extra="postgres",
)
"""``postgresql://USER@HOST/DB``: shared by every worker (see the module)."""
