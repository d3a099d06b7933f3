"""Whether a toolnexus-tui is answering a key, for the collector tests' fresh interpreters
(``test_collector.py``, ``test_rowtable.py``): from a key's event until the next frame is shown."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import events


class Answering:
    """``app``'s events and frames wrapped: :attr:`now` is true from a key's event until the
    next frame is displayed. ``before`` runs as a key's event comes, ``after`` once the app has
    handled it (before its frame)."""

    def __init__(
        self,
        app: Any,
        before: Callable[[], None] | None = None,
        after: Callable[[], None] | None = None,
    ) -> None:
        self.now = False
        answer, display = app.on_event, app._display  # noqa: SLF001

        async def on_event(event: events.Event) -> None:
            key = isinstance(event, events.Key)
            if key:
                self.now = True
                if before is not None:
                    before()
            await answer(event)
            if key and after is not None:
                after()

        def shown(screen: Any, update: Any) -> None:
            display(screen, update)
            self.now = False

        app.on_event, app._display = on_event, shown
