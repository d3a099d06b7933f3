"""Mode 3, Peers: any A2A agent by URL (hosted servers appear on their own), its card, the
validator's diagnostics and the interop verdict, and per-peer headers."""

from __future__ import annotations

import asyncio
import json
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, VerticalScroll
from textual.widgets import (
    DataTable,
    Header,
    Input,
    Select,
    Static,
    TabbedContent,
    TabPane,
)

from toolnexus import validate_card
from toolnexus.debug.client_doctor import start_client_doctor
from toolnexus.debug.cost import card_cost
from toolnexus.debug.doctor import counted, doctor
from toolnexus.debug.report import DoctorReport, entry_lines
from toolnexus.monitor import STATE_STYLE

from ..peers import (
    AUTH_KINDS,
    OAUTH_KINDS,
    PeerAuth,
    card_auth,
    parse_extensions,
    parse_headers,
    spoken,
)
from ..widgets import ModeBar
from ..widgets.footer import ModeFooter
from ..widgets.safe import HangingStatic, SafeStatic, SafeTable
from ..widgets.textbox import TextBox
from .base import ModeScreen, detail_tab_keys


class PeersScreen(ModeScreen):
    _auth_shown: tuple[str, bool] | None = (
        None  # the peer (and whether its card was in) the Auth tab shows
    )
    _client_doctor_stop: asyncio.Event | None = None
    """Set to stop the client doctor that runs (None: none runs)."""
    BINDINGS = [
        Binding(
            "c", "chat", "Chat", id="peer-chat-c"
        ),  # enter does too, but a table hides its enter from the footer
        Binding("n", "add_peer", "Add peer", id="peer-add"),
        Binding("r", "recheck", "Recheck", id="peer-recheck"),
        Binding(
            "h", "edit_headers", "Auth", id="peer-headers", show=False
        ),  # these four: in ? (the footer fits 80 columns)
        Binding("d", "delete_peer", "Remove", id="peer-remove", show=False),
        Binding("v", "cycle_dialect", "Dialect", id="peer-dialect"),
        Binding("b", "toggle_blocking", "Blocking", id="peer-blocking", show=False),
        Binding("t", "remote_tasks", "Its tasks", id="peer-tasks", show=False),
        Binding("o", "doctor", "Doctor", id="peer-doctor"),
        Binding(
            "O", "client_doctor", "Client doctor", id="peer-client-doctor", show=False
        ),  # in ?: a local agent that judges the clients pointed at it
        Binding("enter", "chat", "Chat", id="peer-chat"),
        Binding("escape", "leave_input", "Back", show=False, id="peer-back"),
        *detail_tab_keys("peers"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self._reports: dict[tuple[str, str], Text] = {}
        """What the Doctor (``p-doctor``) and Tasks (``p-tasks``) tabs showed for each peer, by
        (tab, URL): each peer's own, never the one selected before."""
        self._client_report: Text | None = None
        """The client doctor's report (it judges clients, not the selected peer): shown in the
        Doctor tab while it runs, and after it stops until another peer is chosen."""
        self._costs: dict[str, tuple[Any, str]] = {}
        """Each peer's card (the object) and its size in tokens, as ``card --validate`` says it
        (counted once per card, off the loop: the first count loads the tokenizer)."""
        self._counting: set[str] = set()  # the peers whose card is being counted

    def compose(self) -> ComposeResult:
        yield Header()
        yield ModeBar("peers")
        yield TextBox(
            placeholder="add a peer: its card URL or base URL, then enter  (n)", id="peer-url"
        )
        yield SafeTable(id="peers", cursor_type="row")
        with TabbedContent(id="peer-detail"):
            with TabPane("Card", id="p-card"):
                yield VerticalScroll(SafeStatic(id="card-view"))
            with TabPane("Diagnostics", id="p-diag"):
                yield VerticalScroll(SafeStatic(id="diag-view"))
            with TabPane("Raw", id="p-raw"):
                yield VerticalScroll(SafeStatic(id="raw-view"))
            with TabPane("Tasks", id="p-tasks"):
                yield VerticalScroll(SafeStatic(_TASKS_HELP, id="remote-tasks"))
            with TabPane("Doctor", id="p-doctor"):
                yield VerticalScroll(HangingStatic(_DOCTOR_HELP, id="doctor-view"))
            with TabPane("Auth", id="p-headers"):
                yield SafeStatic(_AUTH_HELP, id="auth-help")
                with Horizontal(id="auth-row"):
                    yield Select(
                        [(label, kind) for kind, label in AUTH_KINDS.items()],
                        value="none",
                        allow_blank=False,
                        id="auth-kind",
                        compact=True,
                    )
                    yield TextBox(placeholder="header name / user", id="auth-name", compact=True)
                    yield TextBox(
                        placeholder="${ENV_VAR} or the secret",
                        id="auth-secret",
                        password=True,
                        compact=True,
                    )
                with Horizontal(id="auth-files"):
                    yield TextBox(
                        placeholder="private key file (empty: in the certificate's)",
                        id="auth-key",
                        compact=True,
                    )
                    yield TextBox(
                        placeholder="CA file (empty: the system's)", id="auth-ca", compact=True
                    )
                yield SafeStatic("", id="auth-flow")
                yield TextBox(
                    placeholder="other headers: Name: value; Other: ${VAR}",
                    id="peer-headers",
                    compact=True,
                )
                yield TextBox(
                    placeholder="extensions to ask for (A2A-Extensions): URI URI ...",
                    id="peer-extensions",
                    compact=True,
                )
        yield ModeFooter(compact=True)

    def on_mount(self) -> None:
        table = self.query_one("#peers", DataTable)
        table.add_column("", key="dot", width=2)
        table.add_column("name", key="name", width=18)
        table.add_column("url", key="url", width=34)
        table.add_column("dialect", key="dialect", width=8)
        table.add_column("state", key="state", width=12)
        self.tn.peers_changed.subscribe(self, lambda _: self.refresh_peers())
        self.refresh_peers()
        table.focus()  # keys (1-5, n, h...) work at once; n focuses the URL box

    def on_screen_resume(self) -> None:
        if self.is_current:  # (not when built ahead, unseen)
            self.refresh_peers()

    def refresh_peers(self, chosen: str | None = None) -> None:
        """The table again, the cursor on ``chosen`` (else where it was)."""
        table = self.query_one("#peers", DataTable)
        chosen = chosen or self.selected()
        table.clear()
        for url, peer in self.tn.peer_book.peers.items():
            dot = {
                "reachable": Text("●", "green"),
                "unreachable": Text("✘", "red"),
                "checking": Text("◌", "yellow"),
            }.get(peer.state, Text("○", "grey50"))
            dialect = spoken(peer.client)
            if peer.dialect != "auto":
                dialect += "!"  # forced
            if peer.blocking:
                dialect += " b"
            card = peer.client.card if peer.client is not None else None
            # a peer without a card (or a name in it) has none: its URL is in the next column
            name = Text(card.name, "") if card is not None and card.name else Text("—", "grey50")
            if peer.hosted:
                name.append(" (hosted)")
            table.add_row(dot, name, url, dialect, peer.state, key=url)
        if chosen and chosen in self.tn.peer_book.peers:
            table.move_cursor(row=table.get_row_index(chosen))
        self.show()

    def selected(self) -> str | None:
        table = self.query_one("#peers", DataTable)
        if table.row_count == 0:
            return None
        return str(table.coordinate_to_cell_key(table.cursor_coordinate).row_key.value)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        self._auth_shown = None
        if self._client_doctor_stop is None:  # stopped: its report gives way to the peer's
            self._client_report = None
        self.show()

    def _report(self, tab: str, url: str, text: Text) -> None:
        """Keep ``text`` as what ``tab`` shows for the peer at ``url``; shown if it is selected."""
        self._reports[tab, url] = text
        if self.selected() == url:
            self._show_reports(url)

    def _show_reports(self, url: str | None) -> None:
        """The Doctor and Tasks tabs as they are for the peer at ``url``: its own, or what to press."""
        doctor = self._client_report or self._reports.get(("p-doctor", url or ""))
        self.query_one("#doctor-view", Static).update(doctor or _DOCTOR_HELP)
        tasks = self._reports.get(("p-tasks", url or ""))
        self.query_one("#remote-tasks", Static).update(tasks or _TASKS_HELP)

    def action_detail_tab(self, step: int) -> None:
        """The next (``step`` 1) or previous (-1) tab of the peer's detail, round."""
        tabs = self.query_one("#peer-detail", TabbedContent)
        panes = [pane.id for pane in tabs.query(TabPane) if pane.id]
        at = panes.index(tabs.active) if tabs.active in panes else 0
        tabs.active = panes[(at + step) % len(panes)]

    def show(self) -> None:
        url = self.selected()
        peer = self.tn.peer_book.peers.get(url or "")
        self._show_reports(url)
        views = {k: self.query_one(f"#{k}", Static) for k in ("card-view", "diag-view", "raw-view")}
        if peer is None:
            for v in views.values():
                v.update("Add a peer with n, or start a server: hosted servers appear here.")
            return
        card = peer.client.card if peer.client is not None else None
        self._show_auth(peer, card)
        if card is None:
            text = Text(peer.error or peer.state, "red" if peer.error else "")
            for v in views.values():
                v.update(text)
            return
        # a forced dialect the peer does not answer in: why, above its card (which it served)
        why = Text(f"✘ {peer.state}: {peer.error}\n\n", "red") if peer.error else Text()
        views["card-view"].update(why + _card_text(card, peer.extended, peer.extended_error))
        report = validate_card(card)
        diag = why.copy()
        diag.append(f"verdict: {report.summary}\n", "bold")
        for line, what in report.verdict.items():
            diag.append(f"  {line}: {what}\n")
        diag.append(
            f"\ndialect in use: {spoken(peer.client)}"
            f" ({peer.client.dialect_reason if peer.client else ''}); v cycles auto/0.3/1.0/rest/grpc/legacy\n"
            f"sends: {'blocking' if peer.blocking else 'non-blocking, then follow the task'} (b toggles)\n\n"
        )
        colors = {"error": "red", "warning": "yellow", "info": "grey62"}
        for d in report.diagnostics:
            diag.append(f"{d.level:<8}", colors.get(d.level, ""))
            diag.append(f"{d.path}: {d.message}\n")
        cost = self._costs.get(peer.url)
        if cost is not None and cost[0] is card:
            diag.append(f"\ncost: {cost[1]}\n", "grey62")
        else:
            diag.append("\ncost: counting the card's tokens …\n", "grey62")
            self._count(peer.url, card)
        views["diag-view"].update(diag)
        views["raw-view"].update(json.dumps(card.raw, indent=2))

    @work(group="peer-cost")
    async def _count(self, url: str, card: Any) -> None:
        """The card's size in tokens (the CLI's finding, ``cost: card``), shown when counted."""
        if url in self._counting:
            return
        self._counting.add(url)
        try:
            said = (await counted("cost: card", lambda: card_cost(card.raw))).message
        finally:
            self._counting.discard(url)
        self._costs[url] = (card, said)
        if self.selected() == url:
            self.show()

    # -- actions -------------------------------------------------------------------------------------
    def action_remote_tasks(self) -> None:
        url = self.selected()
        peer = self.tn.peer_book.peers.get(url or "")
        if peer is None or peer.client is None:
            return
        self.query_one("#peer-detail", TabbedContent).active = "p-tasks"
        self._remote_tasks(peer)

    @work(exclusive=True, group="peer-tasks")
    async def _remote_tasks(self, peer: Any) -> None:
        self._report("p-tasks", peer.url, Text(f"listing the tasks of {peer.url} …"))
        try:
            async with peer.use() as client:
                listed = await client.list_tasks(page_size=50)
        except Exception as exc:
            self._report(
                "p-tasks",
                peer.url,
                Text(
                    f"✘ {exc}\n(a peer that does not speak 1.0 has no ListTasks: attach to a task by "
                    f"its id in Chat, ctrl+g)",
                    "red",
                ),
            )
            return
        t = Text(f"{listed['total_size']} task(s) on {peer.url}, newest first\n\n", "bold")
        for task in listed["tasks"]:
            symbol, style = STATE_STYLE.get(task.state, ("·", ""))
            t.append(f"{symbol} {task.state.value:<15}", style)
            t.append(f" {task.id}  context {task.context_id[:8]}…  {task.status.timestamp or ''}\n")
        self._report("p-tasks", peer.url, t)

    def action_doctor(self) -> None:
        peer = self.tn.peer_book.peers.get(self.selected() or "")
        if peer is None:
            return
        self.query_one("#peer-detail", TabbedContent).active = "p-doctor"
        self._doctor(peer)

    @work(exclusive=True, group="peer-doctor")
    async def _doctor(self, peer: Any) -> None:
        self._client_report = None  # this peer's report, now
        self._report("p-doctor", peer.url, Text(f"probing {peer.url} …"))
        try:  # each finding is shown as it comes, while its peer is the one selected
            await doctor(
                peer.url,
                headers=peer.live_headers(),
                bus=self.tn.workspace.events,  # its probes on the Wire, marked as the doctor's
                on_finding=lambda report: self._report("p-doctor", peer.url, doctor_text(report)),
            )
        except (
            Exception
        ) as exc:  # a probe that failed in a way the doctor did not foresee: said, not fatal
            self._report("p-doctor", peer.url, Text(f"✘ the doctor could not finish: {exc}", "red"))

    def action_client_doctor(self) -> None:
        self.query_one("#peer-detail", TabbedContent).active = "p-doctor"
        if self._client_doctor_stop is not None:  # running: stop it, its report finished
            self._client_doctor_stop.set()
            return
        self._client_doctor_stop = asyncio.Event()
        self._client_doctor(self._client_doctor_stop)

    @work(exclusive=True, group="client-doctor")
    async def _client_doctor(self, stop: asyncio.Event) -> None:
        """The client doctor, on this app's loop, until ``stop``; the Doctor tab shows its
        report as the requests come."""
        head = Text("")

        def show(report: DoctorReport) -> None:
            self._client_report = head + doctor_text(report)
            self._show_reports(self.selected())

        try:
            running = await start_client_doctor(on_finding=show)
        except Exception as exc:  # a port it could not bind, say: said, not fatal
            self._client_doctor_stop = None
            self._client_report = Text(f"✘ the client doctor could not start: {exc}", "red")
            self._show_reports(self.selected())
            return
        head.append(f"client doctor: point your A2A client at {running.url}\n", "bold")
        head.append("O again stops it (what the client never tried is said then)\n\n", "grey70")
        show(running.report)
        try:
            await stop.wait()
        finally:
            self._client_doctor_stop = None
            head.plain = f"client doctor (stopped): it was at {running.url}\n\n"
            show(await running.stop())

    def action_leave_input(self) -> None:
        self.query_one("#peers", DataTable).focus()

    def action_add_peer(self) -> None:
        self.set_focus(self.query_one("#peer-url", Input))  # now: the URL typed after n goes there

    @on(Input.Submitted, "#peer-url")
    def _add(self, event: Input.Submitted) -> None:
        url = event.value.strip()
        if not url.startswith(("http://", "https://")):
            self.notify("a peer URL starts with http:// or https://", severity="warning")
            return
        event.input.value = ""
        peer = self.tn.peer_book.add(url)
        self.tn.peer_book.save(peer.url)
        self.tn.connect_peer(peer)
        self.refresh_peers(peer.url)  # the one just added is the one shown
        self.query_one("#peers", DataTable).focus()

    def action_recheck(self) -> None:
        peer = self.tn.peer_book.peers.get(self.selected() or "")
        if peer is not None:
            self.tn.connect_peer(peer)

    def _show_auth(self, peer: Any, card: Any) -> None:
        """The Auth tab for ``peer``: its credential, else what its card asks for (not yet applied)."""
        flow = self.query_one("#auth-flow", Static)
        flow.update(peer.sign_in)
        flow.display = bool(peer.sign_in)  # an empty line would push the headers off 24 rows
        shown = (peer.url, card is not None)
        if self._auth_shown == shown:  # a refresh must not wipe what is being typed
            return
        self._auth_shown = shown
        auth = peer.auth
        asks = card_auth(card.raw) if card is not None else None
        if auth.kind == "none" and asks is not None:
            auth = asks
        self.query_one("#auth-kind", Select).value = auth.kind
        self.query_one("#auth-name", Input).value = auth.name
        self.query_one("#auth-secret", Input).value = auth.secret
        self.query_one("#auth-key", Input).value = auth.key
        self.query_one("#auth-ca", Input).value = auth.ca
        self.query_one("#auth-files").display = auth.kind == "certificate"
        self.query_one("#peer-headers", Input).value = "; ".join(
            f"{k}: {v}" for k, v in peer.headers.items()
        )
        self.query_one("#peer-extensions", Input).value = " ".join(peer.extensions)
        wants = (
            f"\nThe card asks for: {AUTH_KINDS[asks.kind]}{' ' + asks.name if asks.name else ''}."
            if asks
            else ""
        )
        self.query_one("#auth-help", Static).update(_AUTH_HELP + wants)

    @on(Input.Changed, "#auth-secret")
    def _secret_typed(self, event: Input.Changed) -> None:
        """An ``${ENV}`` reference is not a secret: show it; hide anything else."""
        event.input.password = not event.value.startswith("${")

    @on(Select.Changed, "#auth-kind")
    def _auth_kind(self, event: Select.Changed) -> None:
        kind = str(event.value)
        self.query_one("#auth-name", Input).placeholder = _NAME_HINTS.get(kind, "(not used)")
        self.query_one("#auth-secret", Input).placeholder = _SECRET_HINTS.get(
            kind, "${ENV_VAR} or the secret"
        )
        self.query_one("#auth-files").display = kind == "certificate"

    def action_edit_headers(self) -> None:
        self.query_one("#peer-detail", TabbedContent).active = "p-headers"
        self.query_one("#auth-kind", Select).focus()

    @on(
        Input.Submitted,
        "#peer-headers, #peer-extensions, #auth-name, #auth-secret, #auth-key, #auth-ca",
    )
    def _headers(self, event: Input.Submitted) -> None:
        peer = self.tn.peer_book.peers.get(self.selected() or "")
        if peer is None:
            return
        kind = self.query_one("#auth-kind", Select).value
        auth = PeerAuth(
            str(kind),
            self.query_one("#auth-name", Input).value.strip(),
            self.query_one("#auth-secret", Input).value.strip(),
            self.query_one("#auth-key", Input).value.strip(),
            self.query_one("#auth-ca", Input).value.strip(),
        )
        refused = _refused(auth)
        if refused:
            self.notify(refused, severity="error", markup=False)
            return
        if auth.kind in ("bearer", "apikey") and not auth.secret:
            self.notify(
                f"{AUTH_KINDS[auth.kind]}: the secret is empty (type it, or ${{ENV_VAR}})",
                severity="error",
            )
            return
        if auth.kind == "basic" and not auth.name:
            self.notify("basic: the user is empty", severity="error")
            return
        peer.auth = auth if auth.kind != "none" else PeerAuth()
        peer.sign_in = ""
        peer.headers = parse_headers(self.query_one("#peer-headers", Input).value)
        peer.extensions = parse_extensions(self.query_one("#peer-extensions", Input).value)
        replaced = [k for k in peer.headers if k.lower() in {h.lower() for h in auth.headers()}]
        for k in replaced:  # one credential per header: the panel's wins, and says so
            del peer.headers[k]
            self.notify(
                f"the {k} header line was replaced by the {AUTH_KINDS[auth.kind]} credential"
            )
        self.tn.peer_book.save(peer.url)
        self.tn.connect_peer(peer)
        self.refresh_peers(peer.url)  # the one just added is the one shown
        self.query_one("#peers", DataTable).focus()
        self.notify(
            f"credentials set for {peer.url}: {AUTH_KINDS[peer.auth.kind]}"
            + (" (a literal secret is kept for this session only)" if peer.keeps_literal else "")
        )

    def action_cycle_dialect(self) -> None:
        """auto → 0.3 → 1.0 → rest (1.0 over HTTP+JSON) → grpc → legacy: force how this peer is spoken to."""
        peer = self.tn.peer_book.peers.get(self.selected() or "")
        if peer is None:
            return
        order = ["auto", "0.3", "1.0", "rest", "grpc", "legacy"]
        peer.dialect = order[(order.index(peer.dialect) + 1) % len(order)]
        self.tn.peer_book.save(peer.url)
        self.tn.connect_peer(peer)
        self.notify(f"{peer.url}: dialect {peer.dialect}")

    def action_toggle_blocking(self) -> None:
        peer = self.tn.peer_book.peers.get(self.selected() or "")
        if peer is None:
            return
        peer.blocking = not peer.blocking
        self.tn.peer_book.save(peer.url)
        self.refresh_peers()
        self.notify(
            f"{peer.url}: {'blocking sends' if peer.blocking else 'non-blocking sends, then follow the task'}"
        )

    def action_delete_peer(self) -> None:
        url = self.selected()
        if url and not self.tn.peer_book.peers[url].hosted:
            self.tn.peer_book.remove(url)
            self.refresh_peers()

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        self.action_chat()

    def action_chat(self) -> None:
        url = self.selected()
        if url:
            self.tn.chat_peer = url
            self.app.switch_mode("chat")


_TASKS_HELP = (
    "t lists the tasks this peer keeps (ListTasks, 1.0 peers); attach to one in Chat with ctrl+g."
)
_DOCTOR_HELP = (
    "o probes this peer: which clients can work with it, why, and the fix (toolnexus doctor; no "
    "task is created). O (shift+o) starts the client doctor instead: a strict local agent that "
    "judges every request a client sends it, live; O again stops it."
)
_NAME_HINTS = {
    "apikey": "header name (X-API-Key)",
    "basic": "user",
    "device": "client id, then scopes",
    "browser": "client id, then scopes",
    "client": "client id, then scopes",
    "certificate": "certificate file (PEM)",
}
_SECRET_HINTS = {
    "device": "client secret (none: a public client)",
    "browser": "client secret (none: a public client)",
    "client": "client secret: ${ENV_VAR} (saved) or the secret",
    "certificate": "(not used)",
}


def _refused(auth: PeerAuth) -> str:
    """Why the Auth tab's ``auth`` cannot be applied (empty: it can): an OAuth kind without a
    client id, client credentials without the secret, a certificate that will not load (its files read now, not at the first call)."""
    if auth.kind in OAUTH_KINDS and not auth.name:
        return f"{AUTH_KINDS[auth.kind]}: the client id is empty"
    if auth.kind == "client" and not auth.secret:
        return f"{AUTH_KINDS[auth.kind]}: the client secret is empty (type it, or ${{ENV_VAR}})"
    if auth.kind == "certificate":
        if not auth.name:
            return "client certificate: the certificate file is empty"
        try:
            auth.client_credentials()["certificate"].ssl_context()
        except ValueError as exc:
            return str(exc)
    return ""


_AUTH_HELP = (
    "Credential or user/header name (OAuth: client id, scopes; certificate: file), secret; "
    "headers, extensions below. Enter applies; OAuth signs in at the first call. "
    "${VAR} references are saved; a literal secret lasts this session."
)


def _card_text(card: Any, extended: Any = None, refused: str = "") -> Text:
    raw = card.raw
    t = Text()
    t.append(f"{card.name} ", "bold")
    t.append(f"{card.version}\n")
    if card.description:
        t.append(f"{card.description}\n")
    provider = raw.get("provider")
    if isinstance(provider, dict):
        t.append(f"provider {provider.get('organization', '')} {provider.get('url', '')}\n")
    caps = raw.get("capabilities") or {}
    t.append(f"capabilities {json.dumps(caps)}\n")
    signatures = card.signatures
    if signatures is not None:
        t.append("signature ", "bold")
        colour = {"valid": "green", "invalid": "red"}.get(signatures.state, "grey62")
        t.append(f"{signatures.summary}\n", colour)
    for itf in card.interfaces:
        t.append(
            f"interface {itf.get('protocolBinding', '?')} {itf.get('protocolVersion', '?')} {itf.get('url')}\n"
        )
    if raw.get("url"):
        t.append(f"url {raw['url']} (protocolVersion {raw.get('protocolVersion')})\n")
    t.append("\nskills\n", "bold")
    for s in card.skills:
        t.append(f"  {s.get('id')}", "bold")
        t.append(f"  {s.get('description', '')}")
        if s.get("tags"):
            t.append(f"  [{', '.join(map(str, s['tags']))}]", "grey62")
        t.append("\n")
        for example in s.get("examples") or []:
            t.append(f"      e.g. {example}\n", "italic")
    if extended is not None:
        public = {s.get("id") for s in card.skills}
        more = [s for s in extended.skills if s.get("id") not in public]
        t.append("\nextended card (with this peer's credentials)\n", "bold")
        if not more:
            t.append("  no more skills than the public card\n", "grey62")
        for s in more:
            t.append(f"  {s.get('id')}", "bold")
            t.append(f"  {s.get('description', '')}\n")
    elif card.extended:
        t.append("\nextended card: declared", "bold")
        t.append(f"; {refused or 'not fetched'} (h: the peer's credentials)\n", "yellow")
    return t


DOCTOR_COLORS = {"error": "red", "warning": "yellow", "ok": "green", "info": "grey62"}


def doctor_text(report: DoctorReport) -> Text:
    """A doctor's report as the Doctor tab shows it: the verdict (or that it is still checking),
    then the CLI's lines, each finding in its severity's colour and its details dimmed. The
    peer's words stay ``Text``: never markup."""
    t = Text(
        f"{report.summary if report.done else f'checking … {len(report.findings)} finding(s) so far'}\n\n",
        "bold red" if report.failed("error") else "bold",
    )
    for e in report.entries():
        head, *details = entry_lines(e)
        t.append(head + "\n", DOCTOR_COLORS[e.severity])
        for line in details:
            t.append(line + "\n", "grey70")
    return t
