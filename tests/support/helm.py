"""Helm and kustomize, built once from Go modules by ``scripts/kube_tools.sh fetch``: `helm
lint` and `helm template` on the chart in deploy/helm/ragstream, `kustomize build` on a
kustomization, offline (no cluster is asked)."""

from __future__ import annotations

import functools
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from tests.support.fetch import SCRIPTS

__all__ = ["CHART", "KubeToolError", "fetch_tool", "helm", "kustomize_build", "render"]

CHART = SCRIPTS.parent / "deploy" / "helm" / "ragstream"
_SCRIPT = SCRIPTS / "kube_tools.sh"


class KubeToolError(RuntimeError):
    """Helm or kustomize could not be built."""


@functools.cache
def fetch_tool(tool: str, timeout: float = 3600.0) -> Path:
    """The binary of `tool` (helm, kustomize), built once with ``kube_tools.sh fetch TOOL``
    (Go is needed for that); cached, it returns at once."""
    done = subprocess.run(
        ["bash", str(_SCRIPT), "fetch", tool], capture_output=True, text=True, timeout=timeout
    )
    if done.returncode != 0:
        raise KubeToolError(f"kube_tools.sh fetch {tool} failed:\n{done.stderr[-4000:]}")
    return Path(done.stdout.strip().splitlines()[-1])


def kustomize_build(directory: Path) -> list[dict[str, Any]]:
    """The objects `kustomize build DIRECTORY` makes; AssertionError with its message when
    it refuses."""
    done = subprocess.run(
        [str(fetch_tool("kustomize")), "build", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc is not None]


def helm(*args: str, values: Mapping[str, Any] | None = None) -> subprocess.CompletedProcess[str]:
    """`helm ARGS [-f VALUES]`, with Helm's own files in a scratch home (no user config)."""
    with tempfile.TemporaryDirectory(prefix="ragstream-helm-") as tmp:
        home = Path(tmp)
        extra: list[str] = []
        if values is not None:
            path = home / "values.yaml"
            path.write_text(yaml.safe_dump(dict(values), sort_keys=False), encoding="utf-8")
            extra = ["-f", str(path)]
        env = {
            "HOME": str(home),
            "HELM_CACHE_HOME": str(home / "cache"),
            "HELM_CONFIG_HOME": str(home / "config"),
            "HELM_DATA_HOME": str(home / "data"),
            "PATH": "/usr/bin:/bin",
        }
        return subprocess.run(
            [str(fetch_tool("helm")), *args, *extra],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            env=env,
        )


def render(
    values: Mapping[str, Any] | None = None, release: str = "rag", namespace: str = "rag"
) -> list[dict[str, Any]]:
    """The objects `helm template` renders from the chart with `values`; AssertionError
    with Helm's message when it refuses."""
    done = helm("template", release, str(CHART), "--namespace", namespace, values=values)
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc is not None]
