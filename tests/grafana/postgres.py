"""A throwaway PostgreSQL cluster for one test module: initdb in a scratch directory, the
server on a Unix socket only, queries through `psql`. Installed by scripts/postgres.sh."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "scripts" / "postgres.sh"
USER = "ragstream"


def _as_server_user(args: list[str]) -> list[str]:
    """PostgreSQL's server refuses to run as root: as root, run it as `postgres`."""
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *args]
    return args


@dataclass(frozen=True, slots=True)
class Postgres:
    """A running cluster, reached on its socket directory as the superuser `ragstream`."""

    socket_dir: Path

    def sql(self, text: str) -> list[list[str]]:
        """The rows `text` returns (tab-separated fields as text; NULL as ``)."""
        connect = ["-h", str(self.socket_dir), "-U", USER, "-d", "postgres", "-X", "-q"]
        done = subprocess.run(
            ["psql", *connect, "-A", "-t", "-F", "\t", "-v", "ON_ERROR_STOP=1", "-f", "-"],
            input=text,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        return [line.split("\t") for line in done.stdout.splitlines() if line]


@contextmanager
def postgres() -> Iterator[Postgres]:
    """Starts a cluster in a scratch directory and removes it after."""
    done = subprocess.run(["bash", str(SCRIPT)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, f"scripts/postgres.sh failed: {done.stderr}"
    bindir = Path(done.stdout.strip().splitlines()[-1])
    home = Path(tempfile.mkdtemp(prefix="ragstream-postgres-"))
    try:
        if os.geteuid() == 0:
            shutil.chown(home, "postgres")
        data = home / "data"
        init = [str(bindir / "initdb"), "-D", str(data), "-U", USER, "-A", "trust", "--no-sync"]
        subprocess.run(_as_server_user(init), capture_output=True, check=True, timeout=120)
        options = f"-k {home} -c listen_addresses='' -c fsync=off"
        log = home / "server.log"  # the server's output: a pipe would stay open after pg_ctl
        start = [str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l", str(log)]
        start += ["-w", "start"]
        subprocess.run(_as_server_user(start), stdout=subprocess.DEVNULL, check=True, timeout=120)
        try:
            yield Postgres(home)
        finally:
            stop = [str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"]
            subprocess.run(_as_server_user(stop), capture_output=True, check=False, timeout=120)
    finally:
        shutil.rmtree(home, ignore_errors=True)
