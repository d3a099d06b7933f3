"""One session per kernel: the hosted servers (on the kernel's loop, or in threads) and the peers."""

from __future__ import annotations

import asyncio
import atexit
import socket
from typing import Any

from toolnexus.errors import ConfigError
from toolnexus.hosting import HostedServer, ServerSpec, Workspace, prepare, profiles

__all__ = ["NotebookSession"]


class NotebookSession:
    """The kernel's servers. Servers on the kernel's loop start when the cell ends (the kernel's
    loop runs between cells); ``--thread`` servers run on their own loop and start at once."""

    _current: NotebookSession | None = None

    def __init__(self) -> None:
        self.workspace = Workspace()
        self.threaded: dict[str, Any] = {}
        self._tasks: set[asyncio.Task[Any]] = set()

    @classmethod
    def get(cls) -> NotebookSession:
        if cls._current is None:
            cls._current = cls()
            atexit.register(cls.shutdown)
        return cls._current

    @classmethod
    def shutdown(cls) -> None:
        """Stop every server (kernel shutdown, or unloading the extension)."""
        session, cls._current = cls._current, None
        if session is None:
            return
        for handle in list(session.threaded.values()):
            handle.stop()
        session.threaded.clear()
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            loop = None
        if loop is not None and not loop.is_closed():
            session.schedule(session.workspace.close())
        else:
            try:
                asyncio.run(session.workspace.close())
            except Exception:
                pass

    def schedule(self, coro: Any) -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task

    def check(self, spec: ServerSpec) -> tuple[Any, Any]:
        """Everything that can be checked before the cell ends, so that mistakes are one-line errors.
        Returns the spec's model client and auth, as `prepare` builds them."""
        if spec.name in self.threaded or (spec.name in self.workspace.servers
                                          and self.workspace.get(spec.name).state in ("running", "starting")):
            raise ConfigError(f"a server named {spec.name!r} is already running; stop it first")
        client, auth = prepare(spec)
        if spec.port:
            with socket.socket() as probe:
                try:
                    probe.bind((spec.host, spec.port))
                except OSError as exc:
                    raise ConfigError(f"cannot listen on {spec.host}:{spec.port}: {exc.strerror}") from None
        return client, auth

    def start(self, spec: ServerSpec) -> HostedServer:
        self.check(spec)
        server = HostedServer(spec)
        server.state = "starting"
        self.workspace.servers[spec.name] = server

        async def go() -> None:
            try:
                await self.workspace.start(spec)
            except Exception:
                pass  # recorded on the server (state failed, error) and shown by its widget

        self.schedule(go())
        return server

    def start_thread(self, spec: ServerSpec) -> Any:
        """A server on its own loop in a thread: for notebooks whose cells block."""
        from toolnexus import create_toolkit
        from toolnexus.serve.runner import LoopThread

        client, auth = self.check(spec)
        # the toolkit is built on a throwaway loop in a thread; skills and config are read at once
        loop = LoopThread(name="toolnexus-build")
        try:
            toolkit = loop.run(create_toolkit(spec.skills, builtins=spec.builtins, config=spec.config), 60)
        finally:
            loop.close()
        a2a, mcp = profiles(spec, toolkit, auth)
        handle = toolkit.serve_in_thread(f"{spec.host}:{spec.port}", client=client, a2a=a2a, mcp=mcp,
                                         events=self.workspace.events)
        self.threaded[spec.name] = handle
        return handle

    async def stop(self, name: str) -> None:
        if name in self.threaded:
            await asyncio.to_thread(self.threaded.pop(name).stop)
            return
        await self.workspace.stop(name)

    def names(self) -> list[str]:
        return list(self.workspace.servers) + list(self.threaded)
