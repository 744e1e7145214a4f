"""A real Prometheus server in a subprocess, scraping given targets, for end-to-end tests.

It uses the `prometheus` binary on PATH (Debian's package; `scripts/prometheus.sh` installs
it), listens on a free port of 127.0.0.1, keeps its TSDB in a private temporary directory,
and scrapes every target once a second. `query()` asks its HTTP API.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.support.kafka_files import free_port
from tests.support.process import ServerProcess, terminate

__all__ = ["PrometheusError", "PrometheusServer", "promtool"]


class PrometheusError(RuntimeError):
    """The server could not start, or a query failed."""


class PrometheusServer(ServerProcess):
    """`with PrometheusServer(["127.0.0.1:9464"]) as prom: prom.query("up")`."""

    def __init__(
        self,
        targets: Sequence[str],
        *,
        scrape_interval: str = "1s",
        evaluation_interval: str | None = None,
        rule_files: Sequence[Path] = (),
        labels: Mapping[str, str] | None = None,
        binary: str = "prometheus",
        start_timeout: float = 60.0,
        features: Sequence[str] = (),
    ) -> None:
        self.targets = list(targets)
        self.scrape_interval = scrape_interval
        self.evaluation_interval = evaluation_interval or scrape_interval
        self.rule_files = [Path(f).resolve() for f in rule_files]
        self.labels = dict(labels or {})
        """Target labels of every scraped series (e.g. the `cluster` of a deployment)."""
        self.binary = binary
        self.features = list(features)
        """`--enable-feature` values (e.g. `exemplar-storage`)."""
        self.start_timeout = start_timeout
        self.port = free_port()
        self._dir = Path(tempfile.mkdtemp(prefix="ragstream-prometheus-"))
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        path = shutil.which(self.binary)
        if path is None:
            raise PrometheusError("prometheus is not installed: run scripts/prometheus.sh")
        # a rule file is a glob to Prometheus: one that matches nothing loads no rules, silently
        if missing := [str(f) for f in self.rule_files if not f.is_file()]:
            raise PrometheusError(f"no such rule file: {', '.join(missing)}")
        config = self._dir / "prometheus.yml"
        config.write_text(
            "global:\n"
            f"  scrape_interval: {self.scrape_interval}\n"
            f"  evaluation_interval: {self.evaluation_interval}\n"
            f"rule_files: {json.dumps([str(f) for f in self.rule_files])}\n"
            "scrape_configs:\n"
            "  - job_name: ragstream\n"
            f"    scrape_timeout: {self.scrape_interval}\n"
            "    static_configs:\n"
            f"      - targets: {json.dumps(self.targets)}\n"
            f"        labels: {json.dumps(self.labels)}\n"
        )
        log = (self._dir / "prometheus.log").open("wb")
        self._proc = subprocess.Popen(
            [
                path,
                f"--config.file={config}",
                f"--storage.tsdb.path={self._dir / 'data'}",
                f"--web.listen-address=127.0.0.1:{self.port}",
                "--log.level=warn",
                *(f"--enable-feature={feature}" for feature in self.features),
            ],
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        log.close()
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self._proc.poll() is not None:
                raise PrometheusError(f"prometheus exited:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(self.url + "/-/ready", timeout=1) as response:
                    if response.status == 200:
                        return
            except OSError:
                time.sleep(0.2)
        raise PrometheusError(f"prometheus not ready in {self.start_timeout} s:\n{self.log_tail()}")

    def log_tail(self, lines: int = 30) -> str:
        path = self._dir / "prometheus.log"
        if not path.exists():
            return ""
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        proc, self._proc = self._proc, None
        terminate(proc, 15)
        shutil.rmtree(self._dir, ignore_errors=True)

    def api(self, path: str, params: Sequence[tuple[str, str]] = (), timeout: float = 30.0) -> Any:
        """The `data` of an answer of the HTTP API (`/api/v1/...`); a refused request raises
        with Prometheus's reason."""
        url = f"{self.url}{path}?{urllib.parse.urlencode(params)}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                body = json.loads(response.read())
        except urllib.error.HTTPError as error:  # 400 and 422 say why in the body
            body = json.loads(error.read() or b"{}")
        if body.get("status") != "success":
            raise PrometheusError(f"{path} {dict(params)}: {body.get('error', body)}")
        return body["data"]

    def query(self, promql: str, at: float | None = None) -> list[dict[str, Any]]:
        """An instant query; returns the result vector (`[{"metric": {...}, "value": [t, v]}]`)."""
        params = [("query", promql)] + ([("time", f"{at:.3f}")] if at is not None else [])
        result: list[dict[str, Any]] = self.api("/api/v1/query", params, timeout=10)["result"]
        return result

    def query_range(
        self, promql: str, start: float, end: float, step: float = 1.0
    ) -> list[dict[str, Any]]:
        """A range query; returns the result matrix (`[{"metric": {...}, "values": [[t, v],
        ...]}]`)."""
        params = [("query", promql), ("start", f"{start:.3f}"), ("end", f"{end:.3f}")]
        params.append(("step", str(step)))
        result: list[dict[str, Any]] = self.api("/api/v1/query_range", params)["result"]
        return result

    def alerts(self) -> list[dict[str, Any]]:
        """The alerts the server holds now, pending or firing (`/api/v1/alerts`)."""
        alerts: list[dict[str, Any]] = self.api("/api/v1/alerts", timeout=10)["alerts"]
        return alerts

    def label_values(self, label: str, match: str) -> list[str]:
        """The values of `label` on the series `match` selects (as Grafana's
        `label_values(match, label)` asks for them)."""
        values: list[str] = self.api(f"/api/v1/label/{label}/values", [("match[]", match)])
        return values

    def rule_groups(self) -> list[dict[str, Any]]:
        """The rule groups the server loaded, with each rule's health (`/api/v1/rules`)."""
        groups: list[dict[str, Any]] = self.api("/api/v1/rules")["groups"]
        return groups

    def wait_for(
        self,
        promql: str,
        within: float = 30.0,
        count: int = 1,
        until: Callable[[list[dict[str, Any]]], bool] | None = None,
    ) -> list[dict[str, Any]]:
        """Poll `promql` until it returns at least `count` series (and `until` holds of them)."""
        deadline = time.monotonic() + within
        while True:
            result = self.query(promql)
            if len(result) >= count and (until is None or until(result)):
                return result
            if time.monotonic() > deadline:
                raise PrometheusError(
                    f"{promql!r} returned {len(result)} series after {within} s: {result[:3]}"
                )
            time.sleep(0.5)


def promtool(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run `promtool` (Debian's prometheus package, beside `prometheus`) in `cwd`; its output
    in `.stdout` and `.stderr`."""
    path = shutil.which("promtool")
    if path is None:
        raise PrometheusError("promtool is not installed: run scripts/prometheus.sh")
    return subprocess.run(
        [path, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False
    )
