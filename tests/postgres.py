"""A real PostgreSQL server for the tests: a private cluster (Debian's ``postgresql`` package), on a
free loopback port, started once per test process and stopped at its end. Each test that needs
one gets a database of its own (``Postgres.database()``). Without the package the tests skip,
saying so; under CI (``CI=true``) they fail."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest

from .helpers import free_port


def binaries() -> Path | None:
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(p.split("/")[4])
    )
    return Path(found[-1]).parent if found else None


def need_postgres() -> Path:
    found = binaries()
    if found is None:
        message = "PostgreSQL is not installed (Debian's postgresql package; .ci/run installs it)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


class Postgres:
    """A running private cluster: ``dsn`` of its admin database, ``database()`` for a fresh one,
    ``stop()`` / ``start()`` to take it down and up again (same port, same data)."""

    def __init__(
        self,
        bin_dir: Path,
        *,
        host: str = "127.0.0.1",
        inside: list[str] | None = None,
        clients: str | None = None,
        settings: tuple[str, ...] = (),
    ) -> None:
        """``host``: the address it listens on; ``inside``: the command prefix that runs it
        elsewhere (``ip netns exec NS``, with ``host`` that namespace's address); ``clients``: a
        network (CIDR) whose hosts it trusts besides loopback; ``settings``: more ``name=value``
        server settings (``shared_preload_libraries=pg_stat_statements``)."""
        self.bin = bin_dir
        self.host = host
        self.settings = settings
        self.root = Path(tempfile.mkdtemp(prefix="toolnexus-pg-"))
        self.data = self.root / "data"
        self.port = free_port()  # free now, taken by the server after initdb (seconds later)
        self._as = [
            *(inside or []),
            *(["runuser", "-u", "postgres", "--"] if os.geteuid() == 0 else []),
        ]
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        self._run(
            "initdb",
            "-D",
            str(self.data),
            "-A",
            "trust",
            "-U",
            "toolnexus",
            "--no-sync",
            "-E",
            "UTF8",
        )
        if clients:
            with open(self.data / "pg_hba.conf", "a") as hba:
                hba.write(f"host all all {clients} trust\n")
        self.dsn = f"postgresql://toolnexus@{host}:{self.port}/postgres"
        self.start()

    def _run(self, tool: str, *args: str) -> None:
        subprocess.run(
            [*self._as, str(self.bin / tool), *args], check=True, capture_output=True, timeout=60
        )

    def start(self) -> None:
        options = (
            f"-p {self.port} -k {self.root} -c listen_addresses={self.host} -c fsync=off "
            "-c synchronous_commit=off -c full_page_writes=off -c max_connections=200"
            + "".join(f" -c {setting}" for setting in self.settings)
        )
        self._run(
            "pg_ctl",
            "-D",
            str(self.data),
            "-o",
            options,
            "-l",
            str(self.root / "log"),
            "-w",
            "start",
        )

    def stop(self, mode: str = "fast") -> None:
        self._run("pg_ctl", "-D", str(self.data), "-m", mode, "-w", "stop")

    def database(self) -> str:
        """The DSN of a new, empty database."""
        name = "t_" + uuid.uuid4().hex[:12]
        subprocess.run(
            [str(self.bin / "psql"), self.dsn, "-qc", f"CREATE DATABASE {name}"],
            check=True,
            capture_output=True,
            timeout=60,
        )
        return self.dsn.rsplit("/", 1)[0] + "/" + name

    def close(self) -> None:
        try:
            self.stop("immediate")
        except subprocess.CalledProcessError:
            pass
        shutil.rmtree(self.root, ignore_errors=True)
