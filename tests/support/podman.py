"""Debian's podman with the settings these machines need, for building and running the
project's image in the tests (tests/deploy/test_image.py).

The settings are written by `Podman` into files of its own, never into /etc: the runc
runtime, cgroupfs (no systemd here), 16384 open files and processes per container (the
container inherits no larger limit than the machine's), containers without a network
unless a command asks for the host's, and overlay storage. The image store is cached
under ``$XDG_CACHE_HOME/ragstream/containers`` (the base, the layers of earlier builds);
the rest of podman's state lives in a temporary folder.

Containers are started detached and polled: the conmon process that watches a container
is reparented to the machine's PID 1, which here does not reap it, so `podman run`
without ``-d``, `podman wait` and `podman stop` would each wait for conmon's 20 s timeout.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["Podman", "PodmanError", "cache_dir"]


class PodmanError(RuntimeError):
    """A podman command failed or a container did not finish in time."""


def cache_dir() -> Path:
    """Where the image store is cached: ``$XDG_CACHE_HOME/ragstream/containers``."""
    cache = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(cache) / "ragstream" / "containers"


class Podman:
    """podman commands against a store of images in `graphroot`, settings in `workdir`."""

    def __init__(self, workdir: Path, graphroot: Path) -> None:
        self.workdir = workdir
        state = workdir / "state"
        state.mkdir(parents=True, exist_ok=True)
        graphroot.mkdir(parents=True, exist_ok=True)
        containers_conf = workdir / "containers.conf"
        containers_conf.write_text(
            "[containers]\n"
            'default_ulimits = ["nofile=16384:16384", "nproc=16384:16384"]\n'
            'netns = "none"\n'
            "[engine]\n"
            'runtime = "runc"\n'
            'cgroup_manager = "cgroupfs"\n'
            'events_logger = "file"\n'
            f'tmp_dir = "{state / "libpod-run"}"\n'
            f'static_dir = "{state / "libpod"}"\n'
        )
        storage_conf = workdir / "storage.conf"
        storage_conf.write_text(
            "[storage]\n"
            'driver = "overlay"\n'
            f'graphroot = "{graphroot}"\n'
            f'runroot = "{state / "storage-run"}"\n'
        )
        self.env = {
            **os.environ,
            "CONTAINERS_CONF": str(containers_conf),
            "CONTAINERS_STORAGE_CONF": str(storage_conf),
            "BUILDAH_ISOLATION": "oci",
        }

    def __call__(
        self, *args: str, timeout: float = 120.0, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        """``podman ARGS``; `PodmanError` with its output when it fails and `check`."""
        done = subprocess.run(
            ["podman", *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=self.env,
            stdin=subprocess.DEVNULL,
        )
        if check and done.returncode != 0:
            raise PodmanError(
                f"podman {' '.join(args)} exited {done.returncode}:\n"
                f"{done.stdout[-4000:]}\n{done.stderr[-4000:]}"
            )
        return done

    def import_base(self, reference: str, tarball: Path) -> None:
        """Import a root filesystem as `reference`, with the config of Debian's images."""
        if self("image", "exists", reference, check=False).returncode == 0:
            return
        self(
            "import",
            "--change",
            "ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
            "--change",
            'CMD ["bash"]',
            str(tarball),
            reference,
            timeout=600.0,
        )

    def build(
        self,
        context: Path,
        tag: str,
        *,
        containerfile: Path | None = None,
        target: str | None = None,
        volumes: Sequence[str] = (),
        build_args: Mapping[str, str] | None = None,
        timeout: float = 1800.0,
    ) -> str:
        """Build `context` (up to the stage `target`) as `tag` in Docker's format (HEALTHCHECK
        kept), never pulling a base, on the host's network (apt and pip reach their
        registries); returns the log."""
        args = ["build", "--format", "docker", "--pull=never", "--network", "host", "-t", tag]
        if containerfile is not None:
            args += ["-f", str(containerfile)]
        if target is not None:
            args += ["--target", target]
        for volume in volumes:
            args += ["--volume", volume]
        for name, value in (build_args or {}).items():
            args += ["--build-arg", f"{name}={value}"]
        done = self(*args, str(context), timeout=timeout)
        return done.stdout + done.stderr

    def start(self, image: str, *args: str, options: Sequence[str] = ()) -> str:
        """Start a detached container (no timed health checks; `healthcheck` runs them)."""
        done = self("run", "-d", "--health-interval", "disable", *options, image, *args)
        return done.stdout.strip().splitlines()[-1]

    def state(self, container: str) -> dict[str, object]:
        """The container's state as `podman inspect` gives it."""
        out = self("inspect", "--format", "{{json .State}}", container).stdout
        state: dict[str, object] = json.loads(out)
        return state

    def wait_exited(self, container: str, timeout: float) -> int:
        """The container's exit code, polled until it exits; `PodmanError` after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            state = self.state(container)
            if state["Status"] in ("exited", "stopped"):
                code = state["ExitCode"]
                assert isinstance(code, int)
                return code
            if time.monotonic() > deadline:
                raise PodmanError(f"{container} still {state['Status']} after {timeout} s")
            time.sleep(0.2)

    def logs(self, container: str) -> str:
        """What the container printed, stdout and stderr."""
        done = self("logs", container)
        return done.stdout + done.stderr

    def remove(self, container: str) -> None:
        """Kill (if running) and remove the container."""
        self("rm", "--force", "--time", "0", container, check=False)

    def run(
        self, image: str, *args: str, options: Sequence[str] = (), timeout: float = 120.0
    ) -> tuple[int, str]:
        """Run a container to its end without a network: its exit code and output."""
        container = self.start(image, *args, options=["--network", "none", *options])
        try:
            code = self.wait_exited(container, timeout)
            return code, self.logs(container)
        finally:
            self.remove(container)
