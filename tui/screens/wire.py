"""Mode 5, Wire: every HTTP exchange with peers, as it crossed the wire (secrets masked), in the
order the exchanges began (each row's time is its start). The rows are a :class:`RowTable`: an
exchange's cells are made when its line is drawn, so the log's 2,000 exchanges cost a list of
keys on a first visit, not 14,000 cells."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlsplit

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widgets import Header, Input, Static

from toolnexus.debug.diagram import Diagram
from toolnexus.monitor import outcome, parse_time
from toolnexus.traffic import curl_masks, to_curl

from ..widgets import ModeBar
from ..widgets.footer import ModeFooter
from ..widgets.rowtable import RowTable
from ..widgets.safe import SafeStatic
from ..widgets.textbox import TextBox
from .base import ModeScreen


def matches(ev: Any, text: str, ended: str | None = None) -> bool:
    """``peer:sdk method:GetTask status:-32601 dir:in task:81c0 by:doctor`` (prefixes, AND); bare
    words search the URL and method. ``peer`` is the remote agent (outbound) or the hosted server
    and its caller (inbound); ``status`` the outcome (a JSON-RPC error code, a gRPC status, else
    the HTTP status; ``status:error`` any that failed); ``by`` who made an outbound exchange.
    ``ended``: the exchange's outcome, if worked out already."""
    for word in text.split():
        key, sep, value = word.partition(":")
        value = value.lower()
        if sep and key == "peer":
            ok = value in ev.peer.lower() or value in (ev.server or "").lower()
        elif sep and key == "dir":
            ok = ev.direction.startswith(value)
        elif sep and key == "task":
            ok = (ev.task_id or "").startswith(value)
        elif sep and key == "method":
            ok = value in (ev.rpc_method or ev.method).lower()
        elif sep and key == "status":
            label, how = outcome(ev) if ended is None else _split(ended)
            ok = (
                label.lower().startswith(value)
                or str(ev.status or "").startswith(value)
                or (how == "error" and "error".startswith(value or "-"))
            )
        elif sep and key == "by":
            ok = (ev.by or "").startswith(value)
        else:
            ok = word.lower() in ev.url.lower() or word.lower() in (ev.rpc_method or "").lower()
        if not ok:
            return False
    return True


def _path(url: str) -> str:
    """What a row shows of a URL: its path and query (the peer column has the host)."""
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "") if parts.netloc else url


def _split(ended: str) -> tuple[str, str]:
    how, _, label = ended.partition(" ")
    return label, how


def _pretty(body: str) -> str:
    try:
        return json.dumps(json.loads(body), indent=2, ensure_ascii=False)
    except ValueError:
        return body


HIDDEN_EVERY = 1.0
"""Seconds between two updates of the rows while another mode is on screen (in idle time)."""
REDRAW_EVERY = 0.1
"""Seconds the rows wait for more exchanges before they are drawn again (a busy server logs
hundreds a second; each redraw sorts the whole log)."""

_WIDE = (
    ("time", 12),
    ("dir", 3),
    ("peer", 22),
    ("method", 18),
    ("outcome", 9),
    ("ms", 7),
    ("path", 28),
)
_NARROW = (
    ("time", 9),
    ("dir", 4),
    ("peer", 16),
    ("method", 16),
    ("outcome", 8),
    ("ms", 7),
    ("path", 18),
)
"""The columns and their least widths (the path takes what the screen has left): every one shows
at 80 columns (no cell padding; a cell's last character is the gap) as at 120."""
WIDE = sum(width + 2 for _, width in _WIDE) + 2
"""Columns a terminal needs for the padded widths, the scrollbar included (115)."""
OUTCOME_STYLE = {"ok": "green", "cut": "yellow", "error": "bold red"}


class WireScreen(ModeScreen):
    BINDINGS = [
        Binding("slash", "focus_filter", "Filter", id="wire-filter"),
        Binding("escape", "leave_filter", "Back", show=False, id="wire-back"),
        Binding(
            "c",
            "copy_curl",
            "Curl",
            id="wire-curl",
            tooltip="copies the exchange as a curl command",
        ),
        Binding(
            "e",
            "export",
            "Export",
            id="wire-export",
            tooltip="the session: the wire log and the chat as JSON",
        ),
        Binding(
            "m",
            "mermaid",
            "Mermaid",
            id="wire-mermaid",
            show=False,  # in ?: the footer fits 80 columns
            tooltip="copies the exchanges shown as a Mermaid sequence diagram",
        ),
        Binding(
            "k",
            "cassette",
            "Cassette",
            id="wire-cassette",
            tooltip="saves the wire log as a cassette to replay",
        ),
    ]

    def compose(self) -> ComposeResult:
        yield Header()
        yield ModeBar("wire")
        yield TextBox(
            placeholder="filter: peer:sdk method:GetTask status:-32601 dir:in by:doctor  (/)",
            id="wire-filter",
        )
        yield RowTable(self._cells, id="wire")
        yield VerticalScroll(SafeStatic(id="exchange"), id="exchange-scroll")
        yield ModeFooter(compact=True)

    def on_mount(self) -> None:
        self._by_key: dict[
            str, Any
        ] = {}  # a row's key -> its event (rows are keyed by the event's id)
        self._starts: dict[
            int, tuple[Any, float, str]
        ] = {}  # id(event) -> (the event, when its exchange began, how it ended)
        self._narrow = self.app.size.width < WIDE
        self._columns()
        self.tn.traffic_changed.subscribe(self, lambda _: self._traffic())
        self._append()
        self.query_one("#wire", RowTable).focus()

    def _columns(self) -> None:
        """Every column on screen at 80 columns (no cell padding, shorter) as at 120; the URL
        takes the width left."""
        widths = _NARROW if self._narrow else _WIDE
        self.query_one("#wire", RowTable).set_columns(
            [(label, label, width) for label, width in widths],
            padding=0 if self._narrow else 1,
            flex="path",
        )

    def on_resize(self) -> None:
        narrow = self.app.size.width < WIDE
        if narrow != self._narrow:
            self._narrow = narrow
            self._columns()
            self.query_one("#wire", RowTable).refresh()

    def _traffic(self) -> None:
        """An exchange was logged: shown at once, or (while another mode is on screen) the start
        and outcome of every exchange logged since the last call worked out now, so that showing
        the log later does not parse 2,000 times at a key press. (A signal's callback runs after
        the messages already queued: by then several exchanges may have been logged.)"""
        if (
            self.is_current
        ):  # drawn with the others of the next tenth of a second, not once per exchange
            if self._pending is None:
                self._pending = self.set_timer(REDRAW_EVERY, self._redraw)
            return
        for ev in reversed(self.tn.book.traffic):  # the newest first, back to one known
            if self._known(ev):
                break
            self._facts(ev)
        self._forget()
        if self._hidden is None:
            self._hidden = self.set_timer(HIDDEN_EVERY, self._hidden_rows)

    _pending: Any = None
    _hidden: Any = None  # the hidden rows' next update, when due

    def _hidden_rows(self) -> None:
        """While another mode is on screen, the rows follow the log in idle time (no key for a
        second, as a screen is built ahead), and the screen is laid out and drawn unseen again:
        its first visit set 2,000 rows and the exchange under the cursor, and laid the screen out
        three times (the slowest first visit, ``bench/tui_bench.py``)."""
        self._hidden = None
        if self.is_current:
            return
        if not self.tn.keys_idle():  # the user is at the keys: later
            self._hidden = self.set_timer(HIDDEN_EVERY, self._hidden_rows)
            return
        self._append(hidden=True)
        current = self._current()
        if current is not None:  # now, not when its Highlighted comes: laid out with the rows
            self._show(current)
        self.set_timer(REDRAW_EVERY, self._hidden_drawn)  # once the widgets asked for a layout

    def _hidden_drawn(self) -> None:
        if not self.is_current and self.tn.keys_idle():
            self.tn.warm(self)

    def _redraw(self) -> None:
        self._pending = None
        self._append()

    def on_screen_resume(self) -> None:
        self._append()  # (nothing while built ahead, unseen: it draws only when current)

    filter_text = ""

    def _events(self) -> list[Any]:
        return [
            ev for ev in self.tn.book.traffic if matches(ev, self.filter_text, self._facts(ev)[1])
        ]

    @on(Input.Changed, "#wire-filter")
    def _filter(self, event: Input.Changed) -> None:
        self.filter_text = event.value.strip()
        self._append()

    def action_focus_filter(self) -> None:
        self.query_one("#wire-filter", Input).focus()

    def action_leave_filter(self) -> None:
        self.query_one("#wire", RowTable).focus()

    def _started(self, ev: Any) -> float:
        return self._facts(ev)[0]

    def _forget(self) -> None:
        """Let go of the events the log has let go (``_starts`` holds each it has worked out)."""
        if len(self._starts) > 2 * len(self.tn.book.traffic) + 100:
            alive = {id(ev) for ev in self.tn.book.traffic}
            self._starts = {k: v for k, v in self._starts.items() if k in alive}

    def _known(self, ev: Any) -> bool:
        known = self._starts.get(id(ev))
        return known is not None and known[0] is ev

    def _facts(self, ev: Any) -> tuple[float, str]:
        """When an exchange began (its event is stamped when it ended) and how it ended (``how
        label``, see ``monitor.outcome``), worked out once per event (kept with the event itself,
        so that an id the collector gives again is never mistaken)."""
        known = self._starts.get(id(ev))
        if known is not None and known[0] is ev:
            return known[1], known[2]
        start = parse_time(ev.time).timestamp() - ev.ms / 1000
        label, how = outcome(ev)
        self._starts[id(ev)] = (ev, start, f"{how} {label}")
        return start, f"{how} {label}"

    def _append(self, hidden: bool = False) -> None:
        """The rows follow the wire log in the order the exchanges began: an exchange is logged
        when it ends, so a long one that began first arrives after shorter ones; the rows are the
        log's events (it keeps the last 2,000) sorted by start, the cursor kept on its exchange.
        Only when shown, or ``hidden`` (:meth:`_hidden_rows`)."""
        if not self.is_current and not hidden:
            return
        self._forget()
        events = sorted(self._events(), key=self._started)
        self._by_key = {
            str(id(ev)): ev for ev in events
        }  # every shown event is held here: its id stays its own
        self.query_one("#wire", RowTable).set_rows(
            self._by_key
        )  # (drawn again, the cursor kept on its exchange)

    def _cells(self, key: str) -> list[Any]:
        """An exchange's line, made when it is drawn."""
        ev = self._by_key[key]
        start, ended = self._facts(ev)
        label, how = _split(ended)
        if ev.direction == "out" or ev.method == "STDIO":  # a stdio server's own messages: "in"
            peer = ev.peer.removeprefix("http://")
            who = Text.assemble((f"{ev.by} ", "magenta"), peer) if ev.by else Text(peer)
        else:
            who = Text(f"{ev.server or ''}←{ev.peer.split(':')[0]}")
        began = datetime.fromtimestamp(start, UTC).strftime("%H:%M:%S.%f")
        return [
            began[:8] if self._narrow else began[:12],
            "→" if ev.direction == "out" else "←",
            who,
            ev.rpc_method or ev.method,
            Text(label, OUTCOME_STYLE[how]),
            f"{ev.ms:.1f}",
            _path(ev.url),
        ]

    def _current(self) -> Any:
        key = self.query_one("#wire", RowTable).cursor_key
        return self._by_key.get(key) if key is not None else None

    @on(RowTable.Highlighted, "#wire")
    def _highlighted(self, event: RowTable.Highlighted) -> None:
        ev = self._by_key.get(event.key) if event.key is not None else None
        if ev is not None:
            self._show(ev)

    def _show(self, ev: Any) -> None:
        """The exchange in full under the rows."""
        t = Text()
        if ev.by:
            t.append(f"outbound, made by the {ev.by} (its probes of {ev.peer})\n", "italic magenta")
        if ev.direction == "in" and ev.method == "STDIO":
            t.append(
                "inbound: the MCP server's own message (a notification, or a request to this client)\n",
                "italic",
            )
        elif ev.direction == "in":
            t.append(
                f"inbound: {ev.peer} called {ev.server or 'a hosted server'}"
                + (f" about task {ev.task_id}" if ev.task_id else "")
                + "\n",
                "italic",
            )
        t.append(f"{ev.method} {ev.url}  {ev.rpc_method or ''}\n", "bold")
        for k, v in ev.request_headers.items():
            t.append(f"{k}: ", "cyan")
            t.append(f"{v}\n")
        if ev.request_body:
            t.append(_pretty(ev.request_body) + "\n")
        label, how = _split(self._facts(ev)[1])
        t.append(f"\n← {ev.status or '—'}  {ev.ms:.1f} ms", "bold")
        t.append(f"  {label}\n" if label != str(ev.status) else "\n", OUTCOME_STYLE[how])
        for k, v in ev.response_headers.items():
            t.append(f"{k}: ", "cyan")
            t.append(f"{v}\n")
        if ev.frames:
            for i, frame in enumerate(ev.frames, 1):
                t.append(f"— frame {i} —\n", "bold")
                t.append(_pretty(frame) + "\n")
        elif ev.response_body:
            t.append(_pretty(ev.response_body) + "\n")
        if ev.error:
            t.append(f"error: {ev.error}\n", "red")
        self.query_one("#exchange", Static).update(t)

    def action_copy_curl(self) -> None:
        ev = self._current()
        if ev is None:
            return
        peer = next(
            (
                p
                for url, p in self.tn.peer_book.peers.items()
                if ev.direction == "out" and ev.url.startswith(url)
            ),
            None,
        )
        curl = to_curl(ev, peer.templates() if peer is not None else None)
        self.last_curl = curl
        if curl_masks(curl):
            self.tn.copy_text(
                curl,
                "exchange as curl",
                "a secret in it is masked (***): put it back before you run it",
                severity="warning",
            )
        elif peer is not None and "${" in curl:
            self.tn.copy_text(
                curl,
                "exchange as curl",
                "credentials as environment references (set them where you paste)",
            )
        else:
            self.tn.copy_text(curl, "exchange as curl")

    def action_export(self) -> None:
        self.tn.ask_export_session()

    def action_mermaid(self) -> None:
        """The exchanges shown (the filter applies) as ``replay --mermaid`` draws a cassette."""
        events = self._events()
        if not events:
            self.notify("no exchange to draw (the filter shows none)", severity="warning")
            return
        self.tn.copy_text(
            Diagram.of_traffic(events).source,
            "wire as a Mermaid diagram",
            f"{len(events)} exchanges; paste it in Markdown (a mermaid block) or mermaid.live",
        )

    def action_cassette(self) -> None:
        self.tn.ask_save_cassette()
