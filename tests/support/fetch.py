"""Run one of the project's ``scripts/*.sh fetch`` commands and read the path it prints."""

import subprocess
from pathlib import Path

__all__ = ["SCRIPTS", "run_fetch"]

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"
"""The project's scripts folder (in a source checkout)."""


def run_fetch(script: Path, error: type[Exception], timeout: float) -> Path:
    """``bash SCRIPT fetch``: the last line it prints, or `error` with its stderr's tail."""
    if not script.is_file():
        raise error(f"{script} not found")
    done = subprocess.run(
        ["bash", str(script), "fetch"], capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise error(f"{script.name} fetch failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])
