"""One session per kernel: the hosted servers (on the kernel's loop, or in threads) and the peers."""

from __future__ import annotations

import asyncio
import atexit
import inspect
import socket
import weakref
from collections.abc import AsyncGenerator
from dataclasses import replace
from typing import Any
from urllib.parse import urlsplit

from toolnexus import A2AClient, create_toolkit
from toolnexus.client.webhook import WebhookReceiver
from toolnexus.errors import ConfigError, TaskNotFoundError
from toolnexus.hosting import (
    HostedServer,
    ServerSpec,
    Workspace,
    kept_tasks,
    prepare,
    profiles,
)
from toolnexus.http.server import LoopThread, listening_socket
from toolnexus.protocol.model import Task
from toolnexus.stores import TaskPage, TaskQuery

__all__ = ["NotebookSession"]


class NotebookSession:
    """The kernel's servers. Servers on the kernel's loop start when the cell ends (the kernel's
    loop runs between cells); ``--thread`` servers run on their own loop and start at once."""

    _current: NotebookSession | None = None

    def __init__(self) -> None:
        self.workspace = Workspace()
        self.threaded: dict[str, Any] = {}
        self._thread_specs: dict[str, ServerSpec] = {}  # what each thread's server was asked for
        self._tasks: set[asyncio.Task[Any]] = set()
        self._starting: dict[str, asyncio.Task[Any]] = {}
        self._stopping: dict[str, asyncio.Task[Any]] = {}
        self.widgets: weakref.WeakSet[Any] = weakref.WeakSet()  # told when the kernel goes away
        self._webhook: WebhookReceiver | None = None

    @classmethod
    def get(cls) -> NotebookSession:
        if cls._current is None:
            cls._current = cls()
            atexit.register(cls.shutdown)
        return cls._current

    @classmethod
    def shutdown(cls) -> asyncio.Task[Any] | None:
        """Stop every server (kernel shutdown, or unloading the extension). On the kernel's running
        loop the servers stop in a task, returned (await it to know they have); with no loop
        running, before this returns."""
        session, cls._current = cls._current, None
        if session is None:
            return None
        for widget in list(session.widgets):  # their views outlive the kernel: no stale "running"
            try:
                widget.disconnect("disconnected: the kernel that ran this server stopped")
            except Exception:
                pass
        for handle in list(session.threaded.values()):
            handle.stop()
        session.threaded.clear()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None and not loop.is_closed():
            return session.schedule(session._close())
        try:
            asyncio.run(session._close())
        except Exception:
            pass
        return None

    async def _close(self) -> None:
        await self.workspace.close()
        if self._webhook is not None:
            await self._webhook.stop()

    def stop_webhook_later(self) -> None:
        """Stop the webhook receiver after the cell (a later ``send --push`` starts it again)."""
        if self._webhook is not None:
            self.schedule(self._webhook.stop())

    async def webhook(self) -> WebhookReceiver:
        """The notebook's webhook receiver on 127.0.0.1 (started on first use, on the kernel's
        loop): where peers deliver the push notifications ``send --push`` asks for."""
        if self._webhook is None:
            self._webhook = WebhookReceiver(bus=self.workspace.events, name="push")
        await self._webhook.start()
        return self._webhook

    def schedule(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def serving(self, name: str) -> tuple[Any, ServerSpec, bool] | None:
        """The server of that name if it runs (or is starting), not being stopped: the hosted
        server, or a thread's handle, with its spec and whether it runs on a thread."""
        if name in self.threaded:
            return self.threaded[name], self._thread_specs[name], True
        server = self.workspace.servers.get(name)
        stopping = name in self._stopping and not self._stopping[name].done()
        if server is None or stopping or server.state not in ("running", "starting"):
            return None
        return server, server.spec, False

    def again(self, spec: ServerSpec, thread: bool) -> Any:
        """A serve of a name that runs already (a notebook run again, Run All): the server that
        runs when it was asked for with the same options (a port of 0 stands for the one it got);
        None otherwise, the running one then being stopped, so that the changed one replaces it."""
        running = self.serving(spec.name)
        if running is None:
            return None
        server, had, threaded = running
        if threaded == thread and (replace(had, port=0) if not spec.port else had) == spec:
            return server
        if threaded:  # its own loop: stopped now, its name free for the new one
            self.threaded.pop(spec.name).stop()
        else:  # on the kernel's loop after the cell; the new one starts once it has stopped
            self.stop_later(spec.name)
        return None

    def check(self, spec: ServerSpec) -> tuple[Any, Any]:
        """Everything that can be checked before the cell ends, so that mistakes are one-line errors.
        Returns the spec's model client and auth, as `prepare` builds them."""
        stopping = spec.name in self._stopping and not self._stopping[spec.name].done()
        if spec.name in self.threaded or (
            spec.name in self.workspace.servers
            and not stopping
            and self.workspace.get(spec.name).state in ("running", "starting")
        ):
            raise ConfigError(f"a server named {spec.name!r} is already running; stop it first")
        client, auth = prepare(spec)
        if spec.port:
            with socket.socket() as probe:
                try:
                    probe.bind((spec.host, spec.port))
                except OSError as exc:
                    raise ConfigError(
                        f"cannot listen on {spec.host}:{spec.port}: {exc.strerror}"
                    ) from None
        return client, auth

    def start(self, spec: ServerSpec) -> HostedServer:
        """A server on the kernel's loop. It answers once the cell ends, but its socket listens at once,
        so its URL is known and any client (the next line's send, an SDK client) can use it: the
        connection waits until the server runs."""

        self.check(spec)
        try:  # listening now: a client that connects before the server runs waits in the backlog
            sock = listening_socket(spec.host, spec.port)
        except OSError as exc:
            raise ConfigError(f"cannot listen on {spec.host}:{spec.port}: {exc.strerror}") from None
        spec = replace(spec, port=sock.getsockname()[1])
        server = HostedServer(spec)
        server.state = "starting"
        self.workspace.servers[spec.name] = server

        stopping = self._stopping.pop(spec.name, None)

        async def go() -> None:
            try:
                if stopping is not None:  # "stop" then "serve" of one name in a row: in that order
                    await asyncio.wait([stopping])  # its failure is its own widget's to show
                await self.workspace.start(spec, sock)
            except Exception:
                pass  # recorded on the server (state failed, error) and shown by its widget

        self._starting[spec.name] = self.schedule(go())
        return server

    async def ready(self, url: str) -> None:
        """Wait until the session's server at ``url`` (if it is one) has started.

        Raises:
            ConfigError: that server failed to start (the reason is its error).
        """
        for name, started in list(self._starting.items()):
            server = self.workspace.servers.get(name)
            if server is None or not server.url or not _same_origin(url, server.url):
                continue
            await asyncio.shield(started)
            if server.state == "failed":
                raise ConfigError(f"server {name!r} at {url} failed to start: {server.error}")

    def start_thread(self, spec: ServerSpec) -> Any:
        """A server on its own loop in a thread: for notebooks whose cells block."""

        client, auth = self.check(spec)
        # the toolkit is built on a throwaway loop in a thread; skills and config are read at once
        loop = LoopThread(name="toolnexus-build")
        try:
            toolkit = loop.run(
                create_toolkit(spec.skills, builtins=spec.builtins, config=spec.config), 60
            )
        finally:
            loop.close()
        a2a, mcp = profiles(spec, toolkit, auth)
        handle = toolkit.serve_in_thread(
            f"{spec.host}:{spec.port}",
            client=client,
            a2a=a2a,
            mcp=mcp,
            events=self.workspace.events,
        )
        self.threaded[spec.name] = handle
        self._thread_specs[spec.name] = spec
        return handle

    def stop_later(self, name: str) -> asyncio.Task[Any]:
        """Stop a server after the cell (a serve of the same name in a later cell waits for it)."""
        if name in self.threaded:
            task = self.schedule(self.stop(name))
        else:  # this server, even if a later cell serves another under its name before it is done
            task = self._stopping[name] = self.schedule(
                self.workspace.stop(self.workspace.get(name))
            )
        return task

    async def stop(self, name: str) -> None:
        if name in self.threaded:
            await asyncio.to_thread(self.threaded.pop(name).stop)
            return
        await self.workspace.stop(name)

    async def cancel(self, task_id: str, url: str | None = None) -> Any:
        """Cancel a task by id: on ``url`` when given, else wherever this notebook knows it from (its
        servers, then what it sent). Raises a one-line error when it is unknown or already over."""

        if url:
            async with A2AClient(url) as client:
                return await client.cancel(task_id)
        for server in self.workspace.servers.values():
            runner = server.handle.runner if server.handle is not None else None
            if runner is not None:
                try:
                    await runner.get(task_id)
                except TaskNotFoundError:
                    continue
                return await runner.cancel(task_id)
        for handle in self.threaded.values():
            runner = handle.handle.runner
            if runner is not None:
                try:
                    await asyncio.to_thread(handle.call, runner.get(task_id))
                except TaskNotFoundError:
                    continue
                return await asyncio.to_thread(handle.call, runner.cancel(task_id))
        for widget in list(self.widgets):
            task = getattr(widget, "task", None)
            if task is not None and task.id == task_id and hasattr(widget, "_cancel"):
                return await widget._cancel()
        raise ConfigError(
            f"no task {task_id!r} among this notebook's servers and sends; "
            "name its agent: %toolnexus cancel TASK_ID URL"
        )

    def kept(self, name: str) -> AsyncGenerator[list[Task], None]:
        """The tasks server ``name``'s store kept from before it started (a file or PostgreSQL
        store), for its widget: ``Workspace.kept``, or for a ``--thread`` server each page read on
        its loop from a thread of the kernel's, so the kernel's loop never waits on the store."""
        handle = self.threaded.get(name)
        if handle is None:
            return self.workspace.kept(name)
        runner = handle.handle.runner

        def read(query: TaskQuery) -> TaskPage | None:  # in a thread of the kernel's
            listing = runner.store.list(query)
            try:
                return handle.call(listing)
            except Exception:
                if handle.running:  # (a listing under way on its loop is its loop's: left alone)
                    raise
                if inspect.getcoroutinestate(listing) == inspect.CORO_CREATED:
                    listing.close()  # never run: its loop was closed already
                return None  # stopped meanwhile: nothing to show

        async def page(query: TaskQuery) -> TaskPage | None:
            if runner is None or not handle.running:  # (no A2A, or stopped: nothing kept)
                return None
            return await asyncio.to_thread(read, query)

        return kept_tasks(page, name)

    def server_widget(self, name: str) -> Any:
        """The widget of the server called ``name`` (None when there is none)."""
        holder = self.threaded.get(name) or self.workspace.servers.get(name)
        return getattr(holder, "widget", None)

    def names(self) -> list[str]:
        return list(self.workspace.servers) + list(self.threaded)


def _same_origin(a: str, b: str) -> bool:
    x, y = urlsplit(a), urlsplit(b)
    return (x.scheme, x.hostname, x.port) == (y.scheme, y.hostname, y.port)
