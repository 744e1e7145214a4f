"""scripts/_apt.sh waits while another apt-get holds the package lock, and fails at once on
anything else.

The real apt-get, on a private copy of its state (its own lists directory and cache, so
the machine's lock and lists are never touched), whose lock this test holds as another
apt-get would (apt locks with fcntl). `apt-get update` fetches the lists from the
machine's configured Debian mirror.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import threading
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("apt-get") is None or os.geteuid() != 0, reason="needs apt-get, as root"
    ),
]


def _apt_get(*args: str, private: Path) -> subprocess.CompletedProcess[str]:
    options = f"-o Dir::State::Lists={private / 'lists'} -o Dir::Cache={private / 'cache'}"
    return subprocess.run(
        ["bash", "-c", f"source scripts/_apt.sh; apt_get {' '.join(args)} {options}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _private(tmp_path: Path) -> Path:
    for sub in ("lists/partial", "cache/archives/partial"):
        (tmp_path / sub).mkdir(parents=True)
    return tmp_path


def test_apt_get_waits_for_the_lock_and_then_runs(tmp_path: Path) -> None:
    private = _private(tmp_path)
    held = 15.0  # longer than one apt-get's own wait for the lock (10 s)
    locked = threading.Event()

    def hold() -> None:
        with (private / "lists" / "lock").open("w") as lock:
            fcntl.lockf(lock, fcntl.LOCK_EX)
            locked.set()
            time.sleep(held)

    holder = threading.Thread(target=hold)
    holder.start()
    assert locked.wait(10)
    started = time.monotonic()
    result = _apt_get("update", "-qq", private=private)
    waited = time.monotonic() - started
    holder.join()
    assert result.returncode == 0, result.stderr
    assert "holds the package lock; waiting for it" in result.stderr
    assert waited >= held - 1
    assert any(path.name.endswith("InRelease") for path in (private / "lists").iterdir())


def test_any_other_failure_is_reported_at_once(tmp_path: Path) -> None:
    started = time.monotonic()
    result = _apt_get("-s", "install", "ragstream-no-such-package", private=_private(tmp_path))
    assert result.returncode == 1
    assert "Unable to locate package ragstream-no-such-package" in result.stderr
    assert "waiting" not in result.stderr
    assert time.monotonic() - started < 60
