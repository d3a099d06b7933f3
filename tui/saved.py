"""What toolnexus-tui keeps between launches, under the user's config folder, readable by its owner
only: the servers created with ``n`` (``servers-v1.json``: their specs, which name environment
variables but hold no secret, with the port each got; and the port the servers started at
launch, such as the demo, got, so that a copied curl line still works) and the peers (``tui.peers``)."""

from __future__ import annotations

import json
from dataclasses import asdict, fields
from pathlib import Path
from typing import Any

from toolnexus._fs import write_whole
from toolnexus.hosting import ServerSpec

__all__ = ["ServerBook", "write_private"]

SERVERS_FILE = "servers-v1.json"


def write_private(path: Path, data: Any) -> None:
    """``data`` as JSON at ``path``, mode 0600, replaced atomically; never through a planted link."""
    path.parent.mkdir(parents=True, exist_ok=True)
    write_whole(path, json.dumps(data, indent=2))


class ServerBook:
    """The servers a user created, by name, in the order created (a bad file loads as empty)."""

    def __init__(self, folder: Path) -> None:
        self.path = Path(folder) / SERVERS_FILE
        self.specs: dict[str, ServerSpec] = {}
        self.ports: dict[str, int] = {}
        """The port each server started at launch (the demo's, ``--spec``'s) got last time, by name."""

    def load(self) -> list[ServerSpec]:
        known = {f.name for f in fields(ServerSpec)}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
            for entry in data.get("servers", []):
                spec = ServerSpec(**{k: v for k, v in entry.items() if k in known})
                self.specs[spec.name] = spec
            self.ports = {
                str(k): v
                for k, v in (data.get("ports") or {}).items()
                if type(v) is int and 0 < v < 65536
            }
        except (OSError, ValueError, TypeError, AttributeError):
            pass
        return list(self.specs.values())

    def keep_port(self, name: str, port: int) -> None:
        """Remember the port a server started at launch got, for the next launch."""
        if self.ports.get(name) != port:
            self.ports[name] = port
            self.save()

    def put(self, spec: ServerSpec, old_name: str | None = None) -> None:
        if old_name and old_name != spec.name:
            self.specs.pop(old_name, None)
        self.specs[spec.name] = spec
        self.save()

    def drop(self, name: str) -> None:
        if self.specs.pop(name, None) is not None:
            self.save()

    def save(self) -> None:
        try:
            write_private(
                self.path,
                {"servers": [asdict(s) for s in self.specs.values()], "ports": self.ports},
            )
        except OSError:
            pass
