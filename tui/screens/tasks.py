"""Mode 2, Tasks: every task of every hosted server, live, with its whole story in the detail pane."""

from __future__ import annotations

import heapq
import json
from functools import partial
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.widgets import (
    DataTable,
    Header,
    Input,
    Static,
    TabbedContent,
    TabPane,
)

from toolnexus._fs import write_whole
from toolnexus.debug.diagram import Diagram
from toolnexus.monitor import (
    STATE_STYLE,
    TaskView,
    duration,
    short,
    task_wire,
    trace_traffic,
    trace_tree,
)
from toolnexus.protocol.dialects import Dialect

from ..widgets import ModeBar
from ..widgets.footer import ModeFooter
from ..widgets.rowtable import RowTable
from ..widgets.safe import SafeStatic, SafeTable
from ..widgets.textbox import TextBox
from .base import ModeScreen, detail_tab_keys

COLUMNS = [
    ("state", "state", 16),
    ("task", "task", 9),
    ("server", "server", 12),
    ("skill", "skill", 9),
    ("request", "request", 16),
    ("context", "context", 9),
    ("age", "age", 7),
    ("took", "took", 7),
    ("tokens", "tokens", 6),
    ("tools", "tools", 5),
]
"""Label, key and least width of each column of the task table (the request takes the width
left)."""
NARROW = {
    "state": 12,
    "task": 10,
    "server": 10,
    "skill": 8,
    "request": 12,
    "age": 7,
    "took": 7,
    "tokens": 7,
    "tools": 5,
}
"""The widths on a terminal narrower than WIDE (no cell padding; one character of each is the gap
after its text), the context left to the detail pane: 78 in all, so that these show on an
80-column terminal."""
WIDE = sum(width + 2 for _, _, width in COLUMNS) + 2
"""Columns a terminal needs for the padded widths, the scrollbar included (120)."""
DETAIL_TABS = (
    "d-timeline",
    "d-messages",
    "d-artifacts",
    "d-telemetry",
    "d-raw",
    "d-wire",
    "d-trace",
)
DETAIL_LABELS = ("Timeline", "Messages", "Artifacts", "Telemetry", "Raw", "Wire", "Trace")
DETAIL_VIEWS = ("timeline", "messages", "artifacts", "telemetry", "raw", "task-wire", "task-trace")
"""The tabs of a task's detail: their ids, labels and the views in them, in order."""


class TasksScreen(ModeScreen):
    """The live task table, its filter, and the selected task's timeline, messages and telemetry."""

    BINDINGS = [
        Binding("slash", "focus_filter", "Filter", id="tasks-filter"),
        Binding("F", "toggle_follow", "Follow", id="tasks-follow"),
        Binding("x", "cancel_task", "Cancel", id="task-cancel"),
        Binding("a", "answer", "Answer", id="task-answer"),
        Binding("y", "copy_id", "Copy", id="task-copy", tooltip="the task id"),
        Binding("e", "export", "Export", id="task-export"),
        Binding(
            "m", "toggle_calls", "MCP calls", id="tasks-calls", show=False
        ),  # in ?: the footer fits 80 columns
        Binding(
            "M",
            "mermaid",
            "Mermaid",
            id="tasks-mermaid",
            show=False,
            tooltip="copies the task's trace as a Mermaid sequence diagram",
        ),
        Binding("escape", "leave_input", "Back", show=False, id="tasks-back"),
        *detail_tab_keys("tasks"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.follow = True
        self.filter_text = ""

    def compose(self) -> ComposeResult:
        yield Header()
        yield ModeBar("tasks")
        with TabbedContent(id="tasks-tabs", initial="tab-tasks"):
            with TabPane("Tasks", id="tab-tasks"):
                yield TextBox(
                    placeholder="filter: state:failed server:demo ctx:81c0 skill:greet words…  (/)",
                    id="filter",
                )
                yield RowTable(self._cells, id="tasks")
                with Vertical(id="answer-box", classes="hidden"):
                    yield SafeStatic("", id="answer-question")
                    yield TextBox(
                        placeholder="your answer (enter sends it on the same task, escape closes)",
                        id="answer",
                    )
                with TabbedContent(id="detail"):
                    for tab, label, shown in zip(
                        DETAIL_TABS, DETAIL_LABELS, DETAIL_VIEWS, strict=True
                    ):
                        with TabPane(label, id=tab):
                            yield VerticalScroll(SafeStatic(id=shown))
            with TabPane("Inbound MCP calls", id="tab-calls"):
                yield SafeTable(id="calls", cursor_type="row", zebra_stripes=True)
                yield VerticalScroll(SafeStatic(id="call-detail"))
        yield ModeFooter(compact=True)

    def on_mount(self) -> None:
        self._narrow = self.app.size.width < WIDE
        self._columns()
        calls = self.query_one("#calls", DataTable)
        calls.add_columns("time", "server", "tool", "source", "ms", "result", "args")
        if self.tn.selected_server:
            self.query_one("#filter", Input).value = f"server:{self.tn.selected_server}"
        self.tn.tasks_changed.subscribe(self, self._tasks_changed)
        self.tn.calls_changed.subscribe(self, self._calls_changed)
        self.tn.traffic_changed.subscribe(self, self._traffic_changed)
        self._rebuild()
        self._calls_changed(None)
        self.set_interval(1.0, self._tick_ages)
        self.query_one("#tasks", RowTable).focus()

    def _columns(self) -> None:
        self.query_one("#tasks", RowTable).set_columns(
            [
                (label, key, NARROW[key] if self._narrow else width)
                for label, key, width in COLUMNS
                if key in NARROW or not self._narrow
            ],
            padding=0 if self._narrow else 1,
            flex="request",
        )

    def on_resize(self) -> None:
        narrow = self.app.size.width < WIDE
        if narrow != self._narrow:  # every column on screen at 80 columns as at 110
            self._narrow = narrow
            self._columns()
            self.query_one("#tasks", RowTable).refresh()

    def on_screen_resume(self) -> None:
        if not self.is_current:  # built ahead, not shown yet
            return
        if self.tn.selected_server:
            self.query_one("#filter", Input).value = f"server:{self.tn.selected_server}"
            self.tn.selected_server = None
        view = self._current()
        if self._costly_due and view is not None:
            self._show_costly(view)

    # -- rows -------------------------------------------------------------------------------------
    def _cells(self, task_id: str) -> list[Any]:
        """The cells of a task's line, made when the line is drawn."""
        view = self.tn.book.tasks[task_id]
        symbol, style = STATE_STYLE[view.state]
        age = (self.tn.now() - view.started()).total_seconds() if view.timeline else None
        tokens, tools = view.tokens(), view.tool_calls()
        context = [] if getattr(self, "_narrow", False) else [short(view.task.context_id)]
        return [
            Text(f"{symbol} {view.state.value}", style),
            short(view.id),
            view.server,
            view.skill or "—",
            view.request() or "—",
            *context,
            duration(age),
            duration(view.took()),
            "—" if tokens is None else str(tokens),
            "—" if tools is None else str(tools),
        ]

    def _rebuild(self) -> None:
        self.query_one("#tasks", RowTable).set_rows(
            v.id for v in self.tn.book.matching(self.filter_text)
        )
        self._after_update()

    def _tasks_changed(self, ids: frozenset[str]) -> None:
        """The rows of the tasks that moved: added, redrawn or taken out by the filter, the cursor
        following and the detail drawn, also while the screen is hidden (a hidden screen lays
        nothing out): a switch to Tasks listed every task of the book again (at 10,000 tasks a
        third of its CPU), then moved the cursor and drew the detail, which laid the screen out
        once more after Textual's own two passes (``bench/tui_bench.py``)."""
        table = self.query_one("#tasks", RowTable)
        book, words = self.tn.book, self.filter_text
        shown, new, gone = [], [], []
        for task_id in ids:
            view = book.tasks.get(task_id)
            if view is None:
                continue
            wanted = not words or book.matches(view, words)
            if task_id in table.rows:
                (shown if wanted else gone).append(task_id)
            elif wanted:
                new.append(view)
        table.remove_rows(gone)
        if new:
            new.sort(key=lambda v: v.ordinal)
            if table.row_count and new[0].ordinal < book.tasks[_last(table)].ordinal:
                # in its place among rows after it: a store's kept task told after newer live
                # ones (``TaskBook.keep``, at a launch), one the filter takes again
                table.set_rows(
                    heapq.merge(
                        table.rows, [v.id for v in new], key=lambda k: book.tasks[k].ordinal
                    )
                )
            else:
                table.add_rows(v.id for v in new)
        if self.is_current:  # (hidden: all drawn anew when shown)
            table.refresh_rows(shown)
        if new and self.follow:
            table.move_cursor(row=table.row_count - 1)
        current = self._current()
        if current is not None and current.id in ids:
            self._show(current)
        elif current is not None and self.query_one("#detail", TabbedContent).active == "d-trace":
            self._show_costly(current)  # a hop below moved

    def _after_update(self) -> None:
        table = self.query_one("#tasks", RowTable)
        if self.follow and table.row_count:
            table.move_cursor(row=table.row_count - 1)
        current = self._current()
        if current is not None:
            self._show(current)
        else:
            self._drawn = ()
            for id in ("timeline", "messages", "artifacts", "telemetry", "raw"):
                self.query_one(f"#{id}", Static).update("No task selected.")

    def _tick_ages(self) -> None:
        """Ages follow the clock: the lines on screen are drawn again (their cells are made then)."""
        if self.is_current:
            self.query_one("#tasks", RowTable).refresh()

    def _current(self) -> TaskView | None:
        key = self.query_one("#tasks", RowTable).cursor_key
        return self.tn.book.tasks.get(key) if key is not None else None

    def on_row_table_highlighted(self, event: RowTable.Highlighted) -> None:
        view = self._current()
        if view is not None:
            self._show(view)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        if event.data_table.id == "calls":
            self._show_call(event.cursor_row)

    # -- the detail pane ------------------------------------------------------------------------------
    _drawn: tuple[Any, ...] = ()
    """What the detail shows: the task's value, its last step, its reply so far and its result,
    each as it was then (a change to a task replaces them: it never changes them in place)."""

    def _show(self, view: TaskView) -> None:
        """The task in the detail pane; nothing when it shows that task as it is already (each
        update lays the screen out again: a switch to Tasks drew the same task two or three
        times, ``bench/tui_bench.py``)."""
        drawn = (view.task, view.timeline[-1] if view.timeline else None, view.live, view.result)
        if self._drawn and all(a is b for a, b in zip(drawn, self._drawn, strict=True)):
            return
        self._drawn = drawn
        timeline = Table.grid(padding=(0, 2))
        timeline.add_row(Text("time", "bold"), Text("state", "bold"), Text("after", "bold"))
        for at, state, spent in view.timeline_rows():
            timeline.add_row(at, state, spent)
        head = Text(f"{view.id}  ({view.server})\ncontext {view.task.context_id}\n", "bold")
        if view.task.status.message is not None:
            head.append(f"status: {view.task.status.message.text}\n", "italic")
        self.query_one("#timeline", Static).update(_stack(head, timeline))
        messages = Text()
        for m in view.task.history:
            messages.append(f"{m.role:>5}: ", "bold cyan" if m.role == "user" else "bold green")
            messages.append(m.text + "\n")
        self.query_one("#messages", Static).update(messages or "No messages.")
        artifacts = Text()
        for a in view.task.artifacts:
            artifacts.append(f"{a.name or a.artifact_id}\n", "bold")
            artifacts.append(a.text + "\n\n")
        if view.live:  # the reply as the model says it, until the task's own artifact comes
            artifacts.append("reply, as it comes\n", "bold yellow")
            artifacts.append(view.live + "\n")
        self.query_one("#artifacts", Static).update(artifacts or "No artifacts yet.")
        self.query_one("#telemetry", Static).update(_telemetry(view))
        self._show_costly(view)

    _costly_due = False
    """The pane on view of the costly three changed while the screen was hidden."""

    def _show_costly(self, view: TaskView) -> None:
        """The panes that cost most to draw (the raw JSON in every dialect, the task's wire out of
        the whole log, its trace), drawn for the pane on view: the others when they are opened,
        and while the screen is hidden, when it is shown (a trace walks every task of the book).
        A switch to Tasks drew all three two or three times (``bench/tui_bench.py``)."""
        self._costly_due = not self.is_current
        if self._costly_due:
            return
        active = self.query_one("#detail", TabbedContent).active
        if active == "d-raw":
            raw = Text()
            for dialect in Dialect:
                raw.append(f"— as {dialect.value} —\n", "bold")
                raw.append(view.raw(dialect) + "\n")
            self.query_one("#raw", Static).update(raw)
        elif active == "d-wire":
            self.query_one("#task-wire", Static).update(_wire(view, self.tn.book.traffic))
        elif active == "d-trace":
            self.query_one("#task-trace", Static).update(_trace(view, self.tn.book))

    @on(TabbedContent.TabActivated, "#detail")
    def _pane_opened(self, _: TabbedContent.TabActivated) -> None:
        view = self._current()
        if view is not None:
            self._show_costly(view)

    def _traffic_changed(self, _: Any) -> None:
        """A task's exchanges are recorded when they end, after its last transition: redraw."""
        if self.query_one("#detail", TabbedContent).active == "d-wire":
            view = self._current()
            if view is not None:
                self._show_costly(view)

    def action_mermaid(self) -> None:
        """The selected task's trace (its exchanges and those of every hop below and above it, a
        hosted agent's calls drawn from its lane) as ``replay --mermaid`` draws a cassette."""
        view = self._current()
        if view is None:
            return
        pairs = trace_traffic(self.tn.book, view.id)
        if not pairs:
            self.notify(
                "no exchange recorded for this task's trace (hosted servers record theirs)",
                severity="warning",
            )
            return
        made_by = {id(ev): url for ev, url in pairs}
        self.tn.copy_text(
            Diagram.of_traffic([ev for ev, _ in pairs], lambda ev: made_by[id(ev)]).source,
            "trace as a Mermaid diagram",
            f"{len(pairs)} exchanges; paste it in Markdown (a mermaid block) or mermaid.live",
        )

    # -- MCP calls -------------------------------------------------------------------------------------
    def _calls_changed(self, _: Any) -> None:
        table = self.query_one("#calls", DataTable)
        calls = list(self.tn.book.calls)
        for i in range(table.row_count, len(calls)):
            c = calls[i]
            result = Text("error", "red") if c.is_error else Text("ok", "green")
            table.add_row(
                c.time[11:19],
                c.server,
                c.name,
                c.source,
                f"{c.ms:.0f}",
                result,
                json.dumps(c.args)[:60],
            )

    def _show_call(self, row: int) -> None:
        calls = list(self.tn.book.calls)
        if not 0 <= row < len(calls):
            return
        c = calls[row]
        text = Text()
        text.append(f"{c.name} ({c.source}) on {c.server}, {c.ms:.1f} ms\n", "bold")
        text.append("arguments\n", "bold")
        text.append(json.dumps(c.args, indent=2) + "\n")
        text.append("output\n", "bold red" if c.is_error else "bold")
        text.append(c.output)
        self.query_one("#call-detail", Static).update(text)

    # -- actions ----------------------------------------------------------------------------------------
    @on(Input.Changed, "#filter")
    def _filter(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self._rebuild()

    def action_focus_filter(self) -> None:
        self.query_one("#filter", Input).focus()

    def action_leave_input(self) -> None:
        self.query_one("#answer-box").add_class("hidden")
        self.query_one("#tasks", RowTable).focus()

    def action_detail_tab(self, step: int) -> None:
        """The next (``step`` 1) or previous (-1) tab of the selected task's detail, round."""
        self.show_detail(
            DETAIL_TABS[(DETAIL_TABS.index(self._detail_tab()) + step) % len(DETAIL_TABS)]
        )

    def _detail_tab(self) -> str:
        active = self.query_one("#detail", TabbedContent).active
        return active if active in DETAIL_TABS else DETAIL_TABS[0]

    def show_detail(self, tab: str) -> None:
        """Open the detail's tab ``tab`` (``d-timeline`` …) on the Tasks list."""
        self.query_one("#tasks-tabs", TabbedContent).active = "tab-tasks"
        self.query_one("#detail", TabbedContent).active = tab

    def palette_commands(self) -> list[tuple[str, str, Any]]:
        """A palette entry for each tab of the detail."""
        return [
            (
                f"Detail: {label}",
                f"the selected task's {label.lower()} ([ and ] step through)",
                partial(self.show_detail, tab),
            )
            for tab, label in zip(DETAIL_TABS, DETAIL_LABELS, strict=True)
        ]

    def action_toggle_follow(self) -> None:
        self.follow = not self.follow
        self.notify(f"follow {'on' if self.follow else 'off'}")

    def action_toggle_calls(self) -> None:
        tabs = self.query_one("#tasks-tabs", TabbedContent)
        tabs.active = "tab-calls" if tabs.active == "tab-tasks" else "tab-tasks"

    def action_copy_id(self) -> None:
        view = self._current()
        if view is not None:
            self.tn.copy_text(view.id, "task id")

    def action_export(self) -> None:
        view = self._current()
        if view is None:
            return
        export = view.export()
        self.tn.ask_export(
            f"task {short(view.id)}",
            self.tn.export_dir / f"task-{view.id}.json",
            lambda path: write_whole(path, json.dumps(export, indent=2, ensure_ascii=False)),
        )

    def action_cancel_task(self) -> None:
        view = self._current()
        if view is not None:
            self._cancel(view)

    @work(group="task-actions")
    async def _cancel(self, view: TaskView) -> None:
        try:
            await self.tn.workspace.cancel(view.server, view.id)
            self.notify(f"canceled {short(view.id)}")
        except Exception as exc:
            self.notify(str(exc), title="Cannot cancel", severity="warning")

    def action_answer(self) -> None:
        view = self._current()
        if view is None:
            return
        if not view.state.interrupted:
            self.notify(
                f"{short(view.id)} is {view.state.value}, not waiting for input", severity="warning"
            )
            return
        question = view.task.status.message.text if view.task.status.message else "input required"
        self.query_one("#answer-question", Static).update(Text(f"? {question}", "magenta"))
        box = self.query_one("#answer-box")
        box.remove_class("hidden")
        answer = self.query_one("#answer", Input)
        answer.value = ""
        answer.focus()

    @on(Input.Submitted, "#answer")
    def _submit_answer(self, event: Input.Submitted) -> None:
        view = self._current()
        text = event.value.strip()
        if view is None or not text:
            return
        self.query_one("#answer-box").add_class("hidden")
        self.query_one("#tasks", RowTable).focus()
        self._answer(view, text)

    @work(group="task-actions")
    async def _answer(self, view: TaskView, text: str) -> None:
        try:
            await self.tn.workspace.answer(view.server, view.id, text)
            self.notify(f"answered {short(view.id)}")
        except Exception as exc:
            self.notify(str(exc), title="Cannot answer", severity="warning")


def _last(table: RowTable) -> str:
    """The key of the table's last row (it has one)."""
    return next(reversed(table.rows))


def _stack(*parts: Any) -> Any:
    return Group(*parts)


def _wire(view: TaskView, traffic: Any) -> Text:
    """The task's lifecycle and every exchange about it, inbound and outbound, in time order."""
    rows = task_wire(view, traffic)
    if len(rows) == len(view.timeline):
        return Text(
            "No exchanges recorded for this task (hosted servers record theirs; peers you call, yours)."
        )
    t = Text()
    for at, kind, item in rows:
        t.append(f"{at[11:23]}  ", "grey62")
        if kind == "state":
            symbol, style = STATE_STYLE.get(item, ("●", ""))
            t.append(f"{symbol} {item.value}\n", style)
            continue
        arrow = "←" if kind == "in" else "→"
        who = f"{item.peer} → {item.server}" if kind == "in" else f"→ {item.peer}"
        status = str(item.status) if item.status else "—"
        t.append(f"{arrow} {item.rpc_method or item.method} {status} {item.ms:.1f} ms  ", "bold")
        t.append(f"{who}" + (f"  ({len(item.frames)} frames)" if item.frames else "") + "\n")
        if item.error:
            t.append(f"    error: {item.error}\n", "red")
    return t


def _trace(view: TaskView, book: Any) -> Text:
    """The task's trace as a tree: the task that started it, each remote call (peer, remote task,
    state, time) and, under it, the task it made when this app hosts that agent too."""
    rows = trace_tree(book, view.id)
    if len(rows) <= 1:
        return Text(
            "This task called no other agent (an A2A tool's calls show here, nested across the "
            "agents this app hosts)."
        )
    t = Text()
    if view.task.trace is not None:
        t.append(f"trace {view.task.trace.trace_id}\n\n", "grey62")
    for depth, kind, item in rows:
        t.append("  " * depth)
        if kind == "task":
            symbol, style = STATE_STYLE.get(item.state, ("●", ""))
            t.append(f"{symbol} {item.state.value}", style)
            t.append(
                f"  {item.server}  task {short(item.id)}", "bold" if item.id == view.id else ""
            )
            t.append(
                f"  {duration(item.took())}"
                + ("   ◀ this task" if item.id == view.id else "")
                + "\n"
            )
            continue
        style = "red" if item.state == "error" else "grey62" if item.done else "yellow"
        t.append(f"→ {item.peer}", "bold")
        t.append(f" · {item.skill or '?'}  remote task {short(item.remote_task_id) or '—'}  ")
        t.append(item.state, style)
        t.append(f"  {duration(item.ms / 1000)}  (started {item.started[11:19]})\n")
        if item.detail:
            t.append("  " * depth + f"  {item.detail}\n", "red")
    return t


def _telemetry(view: TaskView) -> Any:
    if view.result is None:
        return "No telemetry yet (it arrives when the run ends or asks for input)."
    r = view.result
    text = Text()
    text.append(f"model {r.model}   turns {r.turns}   status {r.status}\n", "bold")
    u = r.usage
    text.append(
        f"tokens: prompt {u.prompt_tokens}, completion {u.completion_tokens}, total {u.total_tokens}\n\n"
    )
    for i, call in enumerate(r.tool_calls, 1):
        text.append(f"{i}. {call['name']}", "bold red" if call["is_error"] else "bold")
        text.append(f"  {json.dumps(call['args'])}\n")
        output = call["output"]
        text.append((output[:400] + "…" if len(output) > 400 else output) + "\n\n")
    if not r.tool_calls:
        text.append("no tool calls\n")
    return text
