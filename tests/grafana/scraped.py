"""Two real agents (`ragstream run`) on a real broker, scraped by a real Prometheus that loads
the project's rule file, and Grafana's variable substitution for the dashboard's queries.

The traffic is the synthetic traffic of the demo (three label sets, `app=support` dropping
in quality), 40 minutes of it ending now with the drop 10 minutes ago, produced to a topic
of two partitions: each agent owns one partition, so every label set is served by both
replicas, as in a deployment with several.
"""

from __future__ import annotations

import asyncio
import itertools
import math
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Self

from aiokafka import AIOKafkaProducer
from prometheus_client.parser import text_string_to_metric_families

from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic, TimedEvent
from tests.support import KafkaBroker, produce_records
from tests.support.agent_process import AgentProcess, wait_ready
from tests.support.prometheus import PrometheusServer

ROOT = Path(__file__).parents[2]
RULES = ROOT / "deploy" / "prometheus" / "ragstream.rules.yml"
LABEL_KEYS = ("app", "index")
RATE_INTERVAL = "1m"
"""`$__rate_interval`: Grafana's is at least four scrape intervals; the test scrapes each second."""
CLUSTER = "eu-1"
"""The `cluster` target label Prometheus attaches to both agents' series, as a
kube-prometheus deployment's relabeling or external labels do."""
PREFERRED = {"app": "support"}
"""The value a multi-value variable takes when the data has it: the label set that drifts."""
HISTORY = 2400.0
"""Seconds of traffic before now."""
DRIFT_BEFORE_NOW = 600.0


@dataclass(frozen=True, slots=True)
class Scraped:
    prom: PrometheusServer
    agents: Sequence[AgentProcess]

    def exported(self) -> set[str]:
        """Every sample name the agents' /metrics serve (with _bucket, _count, _sum, _total)."""
        names: set[str] = set()
        for agent in self.agents:
            for family in text_string_to_metric_families(agent.metrics()):
                names |= {sample.name for sample in family.samples}
        return names

    def recorded(self) -> set[str]:
        """The names the loaded rule file records."""
        return {
            rule["name"]
            for group in self.prom.rule_groups()
            for rule in group["rules"]
            if rule["type"] == "recording"
        }


def _args(group: str) -> list[str]:
    settings = {
        "http.host": "127.0.0.1",
        "kafka.auto_offset_reset": "earliest",
        "labels.keys": f"[{','.join(LABEL_KEYS)}]",
        "join.label_ttl": "5s",
        "judge.sampling.rate": "0.5",
        "judge.sampling.max_per_second": "10000",
        "judge.sampling.burst": "100000",
        # volume floors for the windowed detectors' signal that 5 queries/s over two
        # replicas reach (the defaults want several times more; the queries do not care)
        "drift.zscore.min_count": "50",
        "drift.zscore.min_reference": "200",
        "drift.psi.min_count": "50",
        "drift.psi.min_reference": "200",
    }
    args = ["run", "--group-id", group]
    for key, value in settings.items():
        args += ["--set", f"{key}={value}"]
    return args


class LiveTraffic:
    """The rest of the stream produced in real time (by its arrival times) from a thread,
    until the `with` block ends: rates, the short windows and the judge keep moving."""

    def __init__(self, bootstrap: str, topic: str, stream: Iterator[TimedEvent]) -> None:
        self.bootstrap, self.topic, self.stream = bootstrap, topic, stream
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()), daemon=True)

    async def _run(self) -> None:
        producer = AIOKafkaProducer(bootstrap_servers=self.bootstrap, linger_ms=5)
        await producer.start()
        try:
            for event in self.stream:
                while (delay := event.arrival - time.time()) > 0:
                    if self._stop.is_set():
                        return
                    await asyncio.sleep(min(delay, 0.2))
                await producer.send(self.topic, value=event.value, key=event.key)
                self.sent += 1
        finally:
            await producer.stop()

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join(timeout=30)


def start(broker: KafkaBroker, logs: Path) -> Iterator[Scraped]:
    """Produce the traffic, start both agents (their logs in `logs`) and Prometheus; yields
    once Prometheus has scraped everything and evaluated the rules."""
    topic = f"grafana-{int(time.time() * 1000)}"
    asyncio.run(broker.create_topic(topic, 2))
    now = time.time()
    traffic = SyntheticTraffic(
        SyntheticConfig(
            seed=12,
            start=now - HISTORY,
            rate=5.0,
            drift_at=HISTORY - DRIFT_BEFORE_NOW,
            feedback_delay=(0.5, 4.0),
            probe_share=0.5,
            gold_share=0.3,  # gold verdicts within the label TTL: the corrected ratio
            gold_delay=(0.5, 4.0),
            trace_ids=True,  # query ids that are trace ids: the histograms carry exemplars
        )
    )
    stream = traffic.stream()
    events = list(itertools.takewhile(lambda e: e.arrival < now, stream))
    env = {
        "RAGSTREAM_KAFKA__BOOTSTRAP_SERVERS": broker.bootstrap_servers,
        "RAGSTREAM_KAFKA__TOPICS": f'["{topic}"]',
    }
    first = AgentProcess(_args("grafana"), logs / "first.log", env=env)
    second = AgentProcess(_args("grafana"), logs / "second.log", env=env)
    with first, second:
        wait_ready([first, second])  # one partition each, before any event exists
        asyncio.run(
            produce_records(broker.bootstrap_servers, topic, [(e.key, e.value) for e in events])
        )
        with (
            LiveTraffic(broker.bootstrap_servers, topic, stream),
            PrometheusServer(
                [first.target, second.target],
                rule_files=[RULES],
                labels={"cluster": CLUSTER},
                features=["exemplar-storage"],
            ) as prom,
        ):
            # every event of the history applied, then the recording rules evaluated
            applied = 'sum(ragstream_events_total{outcome=~"processed|late|duplicate"})'
            prom.wait_for(applied, 120, until=lambda r: float(r[0]["value"][1]) >= len(events))
            prom.wait_for("ragstream:window_mean", 60)
            time.sleep(5)  # a few more scrapes, so that rates over the rate interval exist
            yield Scraped(prom, (first, second))


# --- Grafana's side: variables and their substitution ----------------------------------------

_LABEL_VALUES = re.compile(r"^label_values\((?P<match>.+),\s*(?P<label>\w+)\)$")
_REGEX_SPECIAL = re.compile(r"[$^*{}\[\]'+?.()|\\]")


def substitute(
    text: str, values: Mapping[str, str], variables: Mapping[str, Mapping[str, Any]]
) -> str:
    """`$name` and `${name}` replaced as Grafana's Prometheus data source formats them: a
    multi-value or include-all variable's value regex-escaped, any other as it is, "All"
    (`$__all`) as the variable's `allValue`; and
    `$__rate_interval` as Grafana would for a 1 s scrape interval."""

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2)
        if name == "__rate_interval":
            return RATE_INTERVAL
        if name not in values:
            raise KeyError(f"${name} is not a variable of the dashboard")
        value = values[name]
        variable = variables[name]
        if value == "$__all":  # "All": the variable's all value, as it is
            return str(variable["allValue"])
        if variable.get("multi") or variable.get("includeAll"):
            return _REGEX_SPECIAL.sub(lambda m: "\\\\" + m.group(0), value)
        return value

    return re.sub(r"\$\{(\w+)\}|\$(\w+)", one, text)


def variable_values(
    dashboard: Mapping[str, Any], prom: PrometheusServer
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(the value each query variable takes, every value its query offered), in the
    dashboard's order, so a chained variable's query sees the values before it."""
    variables = {v["name"]: v for v in dashboard["templating"]["list"]}
    chosen: dict[str, str] = {}
    offered: dict[str, list[str]] = {}
    for variable in dashboard["templating"]["list"]:
        if variable["type"] != "query":
            continue
        parsed = _LABEL_VALUES.match(variable["query"])
        if parsed is None:
            raise AssertionError(f"{variable['name']}: not a label_values query")
        match = substitute(parsed["match"], chosen, variables)
        values = sorted(prom.label_values(parsed["label"], match))
        offered[variable["name"]] = values
        if not values:
            continue
        if variable.get("multi"):
            preferred = PREFERRED.get(variable["name"])
            chosen[variable["name"]] = preferred if preferred in values else values[0]
        elif "current" in variable:
            chosen[variable["name"]] = variable["current"]["value"]
        else:  # a single-value variable without a default: Grafana takes the first value
            chosen[variable["name"]] = values[0]
    return chosen, offered


# --- PromQL, read as far as the tests need ---------------------------------------------------

_KEYWORDS = {
    "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
    "and", "or", "unless", "offset", "inf", "nan",
}  # fmt: skip


def metric_names(expr: str) -> set[str]:
    """The metric names a PromQL expression reads (strings, label matchers, grouping label
    lists and range durations removed; functions are the names followed by `(`)."""
    text = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)
    text = re.sub(r"\{[^}]*\}", " ", text)
    text = re.sub(r"\[[^\]]*\]", " ", text)
    text = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", text)
    names = set()
    for match in re.finditer(r"(?<![\w.])([a-zA-Z_:][\w:]*)\s*(\()?", text):
        name, call = match.group(1), match.group(2)
        if call is None and name.lower() not in _KEYWORDS:
            names.add(name)
    return names


def selectors(expr: str) -> list[str]:
    """Every vector selector of the expression (`name` or `name{matchers}`), without its range."""
    found = []
    for name in sorted(metric_names(expr)):
        pattern = rf"(?<![\w:]){re.escape(name)}(\{{[^}}]*\}})?"
        found += [m.group(0) for m in re.finditer(pattern, expr)]
    return sorted(set(found))


def finite(result: Sequence[Mapping[str, Any]]) -> list[float]:
    values = [float(r["value"][1]) for r in result]
    return [v for v in values if math.isfinite(v)]
