"""``%toolnexus`` and ``%%toolnexus``: serve, list, stop, tasks, card, doctor, mcp, send, cancel, chat,
export, help.

Mistakes (bad flags, a port in use, an unknown server) are one-line ``UsageError``s; nothing here
ever ends the kernel. Network work runs on the kernel's loop after the cell (so an in-kernel
server can answer it); the returned objects fill in live and can be awaited in a later cell.
"""

from __future__ import annotations

import argparse
import re
import shlex
from typing import Any, NoReturn

import ipywidgets as w
from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.display import HTML, display

from toolnexus.display import e, error_html
from toolnexus.errors import ConfigError
from toolnexus.hosting import EXAMPLE_SKILLS, ServerSpec, build_client
from toolnexus.mcp import split_command
from toolnexus.mcp.transport import TRANSPORTS
from toolnexus.monitor import TaskBook
from toolnexus.protocol.model import task_html, tasks_html
from toolnexus.secrets import expand_env
from toolnexus.stores import KINDS, STORE_FORMS

from .mcp import MCPWidget
from .session import NotebookSession
from .widgets import (
    STYLE,
    CardWidget,
    ChatWidget,
    ClientDoctorWidget,
    DoctorWidget,
    RemoteTaskWidget,
    ServerWidget,
)

__all__ = ["ToolnexusMagics"]

HELP = {
    "serve": (
        "%toolnexus serve [--skills DIR] [--name NAME] [--host H] [--port P] [--model M] [--base-url URL]\n"
        "                 [--api-key-env VAR] [--store STORE] [--mcp] [--thread]",
        "Serve skills as an A2A agent (and MCP with --mcp) on the kernel's loop; its URL is known at once.\n"
        f"STORE: {STORE_FORMS} (default {KINDS[0].form}).\n"
        "Without --skills it serves the bundled example skills. Run again (Run All), a name that runs\n"
        "gives back that server, or restarts it when the options changed. Outside the notebook: toolnexus mcp\n"
        "serves a toolkit to desktop MCP hosts over stdio, toolnexus-tui --web the debugger to a browser,\n"
        "toolnexus serve --metrics an agent's Prometheus metrics.",
        "h = %toolnexus serve --name desk --mcp",
    ),
    "list": (
        "%toolnexus list",
        "The notebook's servers: name, state, URL, profiles.",
        "%toolnexus list",
    ),
    "stop": (
        "%toolnexus stop NAME | --all",
        "Stop a server (its tasks in flight are canceled); --all also\n"
        "stops the webhook receiver of send --push.",
        "%toolnexus stop desk",
    ),
    "tasks": (
        "%toolnexus tasks [NAME]",
        "The tasks the notebook's servers have seen.",
        "%toolnexus tasks desk",
    ),
    "card": (
        "%toolnexus card URL [--extended] [--header 'NAME: VALUE']",
        "A peer's agent card, checked, with a button to chat with it; --extended: the extended "
        "card its credentials (--header) get.",
        "%toolnexus card {h.url}",
    ),
    "doctor": (
        "%toolnexus doctor URL [--send]\n%toolnexus doctor --client",
        "Probe a peer: which clients can work with it, why, and the fix (--send also sends a message\n"
        "and a stream: it creates tasks there). `await d.done()` for the report. --client serves a\n"
        "strict local agent instead and judges every request a client sends it, live (d.url; stop\n"
        "it with its button or `await d.stop()`, which returns the report).",
        "d = %toolnexus doctor {h.url}",
    ),
    "mcp": (
        "%toolnexus mcp URL [--header 'NAME: VALUE']... [--transport auto|http|sse] [--era auto|legacy|2026-07-28]\n"
        "                   [--client-id ID]\n"
        "%toolnexus mcp [NAME=value ...] COMMAND [ARGS...]   (a stdio server; -- before ARGS with dashes)",
        "Inspect any MCP server: what it negotiated, its tools (a form), resources and templates (read,\n"
        "subscribe), prompts, notifications and capabilities; its questions (elicitation) answered in\n"
        "a form, its sampling answered by the model of the notebook's first server (else the demo)\n"
        "once you approve, the roots you declare, an OAuth sign-in as a link. `await m.ready()`.",
        "m = %toolnexus mcp {h.url}/mcp",
    ),
    "send": (
        "%toolnexus send URL TEXT [--skill ID] [--context ID] [--task ID] [--push]\n"
        "%%toolnexus send URL [--skill ID] [--context ID] [--push]   (the cell is the message)",
        "Send a message to any A2A agent and follow the task live; `await s.done()` for the Task,\n"
        "`s.cancel()` to cancel it. --task answers a task that is waiting for input. --push asks the\n"
        "peer to notify the notebook's webhook (127.0.0.1) of every change: shown on the task's timeline.",
        "s = %toolnexus send {h.url} weather in Lisbon please",
    ),
    "cancel": (
        "%toolnexus cancel TASK_ID [URL]",
        "Cancel a task: one of the notebook's servers' or one it sent (found by id), or any on URL.",
        "%toolnexus cancel {s.task.id}",
    ),
    "chat": (
        "%toolnexus chat URL",
        "A small chat with a peer; answers input-required questions on the same task.",
        "%toolnexus chat {h.url}",
    ),
    "export": (
        "%toolnexus export NAME [PATH.json|PATH.csv|PATH.jsonl]",
        "A server's tasks and wire to JSON, its tasks to CSV, or its wire to a cassette (.jsonl) that "
        "toolnexus replay serves or diffs (default: toolnexus-NAME-<time>.json here).",
        "%toolnexus export desk tasks.csv",
    ),
    "help": (
        "%toolnexus help [COMMAND]",
        "This help; also %toolnexus --help, %toolnexus COMMAND --help.",
        "%toolnexus help send",
    ),
}
USAGE = "\n".join(usage for usage, _, _ in HELP.values())


def help_text(command: str | None = None) -> str:
    """Usage, what it does and an example, for one subcommand or all of them."""
    names = [command] if command in HELP else list(HELP)
    blocks = [
        f"{HELP[n][0]}\n    {HELP[n][1].replace(chr(10), chr(10) + '    ')}\n    e.g. {HELP[n][2]}"
        for n in names
    ]
    return "\n\n".join(blocks)


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
    s.add_argument("--store", default=KINDS[0].form)
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
    c.add_argument("--extended", action="store_true")
    c.add_argument("--header", action="append", default=[])
    dr = sub.add_parser("doctor", add_help=False)
    dr.add_argument("url", nargs="?")
    dr.add_argument("--send", action="store_true")
    dr.add_argument("--client", action="store_true")
    mc = sub.add_parser("mcp", add_help=False)
    mc.add_argument("target", nargs="+")
    mc.add_argument("--header", action="append", default=[])
    mc.add_argument("--transport", choices=TRANSPORTS, default="auto")
    mc.add_argument("--era", default="auto")
    mc.add_argument("--client-id")
    m = sub.add_parser("send", add_help=False)
    m.add_argument("url")
    m.add_argument("text", nargs="*")
    m.add_argument("--skill")
    m.add_argument("--context")
    m.add_argument("--task")
    m.add_argument("--push", action="store_true")
    ch = sub.add_parser("chat", add_help=False)
    ch.add_argument("url")
    cn = sub.add_parser("cancel", add_help=False)
    cn.add_argument("task_id")
    cn.add_argument("url", nargs="?")
    ex = sub.add_parser("export", add_help=False)
    ex.add_argument("name")
    ex.add_argument("path", nargs="?")
    hp = sub.add_parser("help", add_help=False)
    hp.add_argument("topic", nargs="?")
    return root


_TRAILING_COMMENT = re.compile(r"\s{2,}#\s.*$")
"""``h = %toolnexus serve  # a comment`` as in Python: two spaces, ``#``, a space (quote a message with one)."""


def _url(command: str, url: str) -> str:
    """``url`` when it is an http(s) URL; else a one-line mistake that says what went wrong."""
    if url.startswith(("http://", "https://")) and len(url) > len("https://"):
        return url.rstrip("/")
    raise UsageError(
        f"%toolnexus {command}: {url!r} is not an http(s) URL; the URL comes first "
        f"({HELP[command][0].splitlines()[0]}). A server's .url is empty once it has stopped or failed."
    )


def _headers(command: str, given: list[str]) -> dict[str, str]:
    """``--header 'NAME: VALUE'`` words as headers (``${ENV}`` read); a one-line mistake else."""
    headers: dict[str, str] = {}
    for header in given:
        name, sep, value = header.partition(":")
        if not sep or not name.strip():
            raise UsageError(f"%toolnexus {command}: --header {header!r} is not NAME: VALUE")
        headers[name.strip()] = expand_env(value.strip())
    return headers


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


class Served:
    """What ``%toolnexus serve`` returns: the server (``state``, ``url``, ``error``...) and its widget's
    data (``to_dataframe()``, ``records()``, ``export(path)``, ``cancel(task_id)``), shown once."""

    def __init__(self, server: Any, widget: Any) -> None:
        self.server = server
        self.widget = widget

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        try:
            return getattr(self.server, name)
        except AttributeError:
            return getattr(self.widget, name)

    def __repr__(self) -> str:
        return f"<toolnexus server {self.widget.name!r}: {self.widget.status} {self.server.url}>"

    def _ipython_display_(self) -> None:
        return None  # the widget is on the page already


@magics_class
class ToolnexusMagics(Magics):
    """The ``%toolnexus`` magics; see ``USAGE``."""

    @property
    def session(self) -> NotebookSession:
        return NotebookSession.get()

    def _args(self, line: str) -> argparse.Namespace:
        line = _TRAILING_COMMENT.sub("", line)
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%toolnexus: {exc}") from None
        if not words:
            raise UsageError(USAGE)
        if "--help" in words or "-h" in words or words[0] == "help":
            topic = (words[1:2] or [None])[0] if words[0] == "help" else words[0]
            return argparse.Namespace(command="help", topic=topic)
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
            raise UsageError(
                "%%toolnexus takes send URL [--skill ID] [--context ID]; the cell is the message"
            )
        args.text = [cell.strip()]
        return self._send(args)

    # -- subcommands -----------------------------------------------------------------------------
    def _help(self, args: argparse.Namespace) -> None:
        topic = getattr(args, "topic", None)
        print(help_text(topic if topic in HELP else None))

    def _serve(self, args: argparse.Namespace) -> Any:
        skills = args.skills or ([str(EXAMPLE_SKILLS)] if EXAMPLE_SKILLS.is_dir() else [])
        name = args.name or f"desk-{len(self.session.names()) + 1}"
        spec = ServerSpec(
            name=name,
            skills=skills,
            host=args.host,
            port=args.port,
            model=args.model,
            base_url=args.base_url,
            api_key_env=args.api_key_env,
            store=args.store,
            mcp=args.mcp,
            description=f"{name}, served from a notebook",
        )
        session = self.session
        before = session.serving(name)
        running = session.again(spec, args.thread)
        if running is not None:  # run again with the same options: the same server, live
            print(f"{name} runs already with these options: the same server, at {running.url}")
            display(running.widget)
            return Served(running, running.widget)
        if before is not None:
            print(f"{name} ran with other options: stopped, and started again with these")
        try:
            if args.thread:
                handle = session.start_thread(spec)
                widget = ServerWidget(
                    name,
                    session.workspace.events,
                    lambda: (
                        "running" if handle.running else "stopped",
                        handle.url,
                        spec.profiles,
                        "",
                    ),
                    lambda: session.stop_later(name),
                    lambda task_id: session.schedule(session.cancel(task_id)),
                    lambda: session.kept(name),
                )
                display(widget)
                handle.widget = widget
                return Served(handle, widget)
            server = session.start(spec)
        except (ConfigError, OSError) as exc:
            raise UsageError(f"%toolnexus serve: {exc}") from None
        widget = ServerWidget(
            name,
            session.workspace.events,
            lambda: (server.state, server.url, server.spec.profiles, server.error),
            lambda: session.stop_later(name),
            lambda task_id: session.schedule(session.cancel(task_id)),
            lambda: session.kept(name),
        )
        server.widget = widget  # type: ignore[attr-defined]  # the widget rides on the hosted server for the magics
        display(widget)
        return Served(server, widget)

    def _list(self, args: argparse.Namespace) -> Any:
        rows = [
            (s.name, s.state, s.url, " ".join(s.spec.profiles))
            for s in self.session.workspace.servers.values()
        ]
        rows += [(name, "running (thread)", h.url, "") for name, h in self.session.threaded.items()]
        body = "".join(
            f"<tr><td>{e(n)}</td><td>{e(st)}</td><td>{e(u)}</td><td>{e(p)}</td></tr>"
            for n, st, u, p in rows
        )
        return HTML(
            f"{STYLE}<div class='toolnexus-w'><table><tr><th>name</th><th>state</th><th>url</th>"
            f"<th>profiles</th></tr>{body}</table></div>"
        )

    def _stop(self, args: argparse.Namespace) -> None:
        names = self.session.names() if args.all else [args.name] if args.name else []
        if not names:
            raise UsageError("%toolnexus stop NAME | --all")
        for name in names:
            if name not in self.session.names():
                raise UsageError(
                    f"%toolnexus stop: no server named {name!r} "
                    f"(servers: {', '.join(self.session.names()) or 'none'})"
                )
        for name in names:
            if name in self.session.threaded:
                self.session.threaded.pop(name).stop()
            else:
                self.session.stop_later(name)
        if args.all:  # and the webhook receiver of `send --push`, when one runs
            self.session.stop_webhook_later()

    def _tasks(self, args: argparse.Namespace) -> Any:
        book = TaskBook()
        for ev in self.session.workspace.events.history():
            if type(ev).__name__ == "TaskEvent" and (args.name is None or ev.server == args.name):
                book.apply(ev)
        if args.name is not None and args.name not in self.session.names():
            raise UsageError(f"%toolnexus tasks: no server named {args.name!r}")
        return HTML(
            f"{STYLE}<div class='toolnexus-w'>{tasks_html([v.task for v in book.tasks.values()], args.name)}"
            "</div>"
        )

    def _card(self, args: argparse.Namespace) -> Any:
        widget = CardWidget(
            _url("card", args.url), _headers("card", args.header), extended=args.extended
        )
        display(widget)
        return Shown(widget)

    def _doctor(self, args: argparse.Namespace) -> Any:
        if args.client:
            if args.url or args.send:
                raise UsageError("%toolnexus doctor --client takes no URL and no --send")
            client_widget = ClientDoctorWidget()
            display(client_widget)
            return Shown(client_widget)
        if not args.url:
            raise UsageError("%toolnexus doctor URL [--send], or %toolnexus doctor --client")
        widget = DoctorWidget(_url("doctor", args.url), send=args.send)
        display(widget)
        return Shown(widget)

    def _mcp(self, args: argparse.Namespace) -> Any:
        words = list(args.target)
        if len(words) == 1 and words[0].startswith(("http://", "https://")):
            target: str | list[str] = words[0]
            env = None
        else:
            argv, env = split_command(shlex.join(words))
            if not argv:
                raise UsageError("%toolnexus mcp: no command to run after the NAME=value words")
            target = argv
        headers = _headers("mcp", args.header)
        running = self.session.workspace.running()
        model = None
        if running:
            spec = running[0].spec
            try:
                model = build_client(spec.model, spec.base_url, spec.api_key_env)
            except ConfigError:
                model = None
        widget = MCPWidget(
            target,
            headers=headers or None,
            env=env or None,
            bus=self.session.workspace.events,
            model=model,
            transport=args.transport,
            mode=args.era,
            client_id=args.client_id,
        )
        display(widget)
        return Shown(widget)

    def _send(self, args: argparse.Namespace) -> Any:
        url = _url("send", args.url)
        text = " ".join(args.text).strip()
        if not text:
            raise UsageError("%toolnexus send URL TEXT: the message is empty")
        # its own wire is shown under it; not on the session's bus, where the remote task would be
        # taken for a hosted server's task of the same name
        widget = RemoteTaskWidget(
            url, text, skill=args.skill, context_id=args.context, task_id=args.task, push=args.push
        )
        display(widget)
        return Shown(widget)

    def _chat(self, args: argparse.Namespace) -> Any:
        widget = ChatWidget(_url("chat", args.url))
        display(widget)
        return Shown(widget)

    def _cancel(self, args: argparse.Namespace) -> Any:
        url = _url("cancel", args.url) if args.url else None
        out = w.HTML(f"<i>canceling {e(args.task_id)}…</i>")
        out.add_class("toolnexus-w")

        async def go() -> Any:
            try:
                task = await self.session.cancel(args.task_id, url)
            except Exception as exc:
                out.value = error_html(str(exc))
                return None
            out.value = STYLE + task_html(task)
            return task

        display(out)
        out.done = self.session.schedule(go())  # type: ignore[attr-defined]  # the output widget keeps its send, to cancel it
        return Shown(out)

    def _export(self, args: argparse.Namespace) -> Any:
        widget = self.session.server_widget(args.name)
        if widget is None:
            raise UsageError(
                f"%toolnexus export: no server named {args.name!r} "
                f"(servers: {', '.join(self.session.names()) or 'none'})"
            )
        try:
            path = widget.export(args.path)
        except (ConfigError, OSError) as exc:
            raise UsageError(f"%toolnexus export: {exc}") from None
        print(f"exported {args.name} to {path.resolve()}")
        return path


ToolnexusMagics.toolnexus.__doc__ = (
    "Serve, send to, chat with and watch A2A agents.\n\n" + help_text()
)
