"""``%toolnexus`` and ``%%toolnexus``: serve, list, stop, tasks, card, send, chat.

Mistakes (bad flags, a port in use, an unknown server) are one-line ``UsageError``s; nothing here
ever ends the kernel. Network work runs on the kernel's loop after the cell (so an in-kernel
server can answer it); the returned objects fill in live and can be awaited in a later cell.
"""

from __future__ import annotations

import argparse
import shlex
from typing import Any, NoReturn

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import HTML, display

from toolnexus.display import tasks_html
from toolnexus.errors import ConfigError
from toolnexus.hosting import EXAMPLE_SKILLS, ServerSpec

from .session import NotebookSession
from .widgets import CardWidget, ChatWidget, RemoteTaskWidget, ServerWidget

__all__ = ["ToolnexusMagics"]

USAGE = """%toolnexus serve [--skills DIR] [--name NAME] [--host H] [--port P] [--model M] [--base-url URL]
                 [--store memory|file:DIR] [--mcp] [--thread]
%toolnexus list | stop [NAME | --all] | tasks [NAME]
%toolnexus card URL | send URL TEXT [--skill ID] [--context ID] [--task ID] | chat URL
%%toolnexus send URL [--skill ID] [--context ID]   (the cell is the message)"""


class _Parser(argparse.ArgumentParser):
    """argparse whose mistakes are UsageErrors and which never exits the kernel."""

    def error(self, message: str) -> NoReturn:
        sub = self.prog.split()[-1]
        raise UsageError(f"%toolnexus{' ' + sub if sub != 'toolnexus' else ''}: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise UsageError(message or USAGE)


def _parser() -> _Parser:
    root = _Parser(prog="toolnexus", add_help=False)
    sub = root.add_subparsers(dest="command", parser_class=_Parser)
    s = sub.add_parser("serve", add_help=False)
    s.add_argument("--skills", action="append")
    s.add_argument("--name", default=None)
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=0)
    s.add_argument("--model", default="demo")
    s.add_argument("--base-url")
    s.add_argument("--api-key-env")
    s.add_argument("--store", default="memory")
    s.add_argument("--mcp", action="store_true")
    s.add_argument("--thread", action="store_true")
    sub.add_parser("list", add_help=False)
    st = sub.add_parser("stop", add_help=False)
    st.add_argument("name", nargs="?")
    st.add_argument("--all", action="store_true")
    t = sub.add_parser("tasks", add_help=False)
    t.add_argument("name", nargs="?")
    c = sub.add_parser("card", add_help=False)
    c.add_argument("url")
    m = sub.add_parser("send", add_help=False)
    m.add_argument("url")
    m.add_argument("text", nargs="*")
    m.add_argument("--skill")
    m.add_argument("--context")
    m.add_argument("--task")
    ch = sub.add_parser("chat", add_help=False)
    ch.add_argument("url")
    return root


class Shown:
    """What a magic returns for a widget it already displayed: the widget's attributes, no second copy."""

    def __init__(self, widget: Any) -> None:
        self._widget = widget

    def __getattr__(self, name: str) -> Any:
        return getattr(self._widget, name)

    def __repr__(self) -> str:
        return f"<{type(self._widget).__name__} (shown above)>"

    def _ipython_display_(self) -> None:
        return None  # already on the page


@magics_class
class ToolnexusMagics(Magics):
    """The ``%toolnexus`` magics; see ``USAGE``."""

    @property
    def session(self) -> NotebookSession:
        return NotebookSession.get()

    def _args(self, line: str) -> argparse.Namespace:
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%toolnexus: {exc}") from None
        if not words:
            raise UsageError(USAGE)
        args = _parser().parse_args(words)
        if args.command is None:
            raise UsageError(USAGE)
        return args

    @line_magic
    def toolnexus(self, line: str) -> Any:
        args = self._args(line)
        return getattr(self, f"_{args.command}")(args)

    @cell_magic("toolnexus")
    def toolnexus_cell(self, line: str, cell: str) -> Any:
        args = self._args(line)
        if args.command != "send":
            raise UsageError("%%toolnexus takes send URL [--skill ID] [--context ID]; the cell is the message")
        args.text = [cell.strip()]
        return self._send(args)

    # -- subcommands -----------------------------------------------------------------------------
    def _serve(self, args: argparse.Namespace) -> Any:
        skills = args.skills or ([str(EXAMPLE_SKILLS)] if EXAMPLE_SKILLS.is_dir() else [])
        name = args.name or f"desk-{len(self.session.names()) + 1}"
        spec = ServerSpec(name=name, skills=skills, host=args.host, port=args.port, model=args.model,
                          base_url=args.base_url, api_key_env=args.api_key_env, store=args.store, mcp=args.mcp,
                          description=f"{name}, served from a notebook")
        try:
            if args.thread:
                handle = self.session.start_thread(spec)
                widget = ServerWidget(name, self.session.workspace.events,
                                      lambda: ("running" if handle.running else "stopped", handle.url,
                                               spec.profiles, ""),
                                      lambda: self.session.schedule(self.session.stop(name)))
                display(widget)
                handle.widget = widget
                return handle
            server = self.session.start(spec)
        except (ConfigError, OSError) as exc:
            raise UsageError(f"%toolnexus serve: {exc}") from None
        widget = ServerWidget(name, self.session.workspace.events,
                              lambda: (server.state, server.url, spec.profiles, server.error),
                              lambda: self.session.schedule(self.session.stop(name)))
        server.widget = widget  # type: ignore[attr-defined]
        display(widget)
        return server

    def _list(self, args: argparse.Namespace) -> Any:
        rows = [(s.name, s.state, s.url, " ".join(s.spec.profiles)) for s in self.session.workspace.servers.values()]
        rows += [(name, "running (thread)", h.url, "") for name, h in self.session.threaded.items()]
        body = "".join(f"<tr><td>{n}</td><td>{st}</td><td>{u}</td><td>{p}</td></tr>" for n, st, u, p in rows)
        return HTML(f"<table><tr><th>name</th><th>state</th><th>url</th><th>profiles</th></tr>{body}</table>")

    def _stop(self, args: argparse.Namespace) -> None:
        names = self.session.names() if args.all else [args.name] if args.name else []
        if not names:
            raise UsageError("%toolnexus stop NAME | --all")
        for name in names:
            if name not in self.session.names():
                raise UsageError(f"%toolnexus stop: no server named {name!r} "
                                 f"(servers: {', '.join(self.session.names()) or 'none'})")
        for name in names:
            if name in self.session.threaded:
                self.session.threaded.pop(name).stop()
            else:
                self.session.schedule(self.session.workspace.stop(name))

    def _tasks(self, args: argparse.Namespace) -> Any:
        from toolnexus.monitor import TaskBook

        book = TaskBook()
        for ev in self.session.workspace.events.history():
            if type(ev).__name__ == "TaskEvent" and (args.name is None or ev.server == args.name):
                book.apply(ev)
        if args.name is not None and args.name not in self.session.names():
            raise UsageError(f"%toolnexus tasks: no server named {args.name!r}")
        return HTML(tasks_html([v.task for v in book.tasks.values()], args.name))

    def _card(self, args: argparse.Namespace) -> Any:
        widget = CardWidget(args.url)
        display(widget)
        return Shown(widget)

    def _send(self, args: argparse.Namespace) -> Any:
        text = " ".join(args.text).strip()
        if not text:
            raise UsageError("%toolnexus send URL TEXT: the message is empty")
        widget = RemoteTaskWidget(args.url, text, skill=args.skill, context_id=args.context, task_id=args.task)
        display(widget)
        return Shown(widget)

    def _chat(self, args: argparse.Namespace) -> Any:
        widget = ChatWidget(args.url)
        display(widget)
        return Shown(widget)
