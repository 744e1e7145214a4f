"""The worst-queries table's SQL on a real PostgreSQL: with Grafana's macros and variables
substituted as its PostgreSQL data source does, the query returns the lowest values of the
chosen metric among the selected label sets' records of the time range, as a reference
computed here from the same records; the metric variable offers the records' metrics."""

from __future__ import annotations

import json
import random
import re
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from tests.grafana.generator import generator
from tests.grafana.postgres import Postgres, postgres

gen = generator()
KEYS = ("app", "index")
TABLE = "analytics.query_results"
FROM = datetime(2026, 12, 7, 5, 0, tzinfo=UTC)
TO = FROM + timedelta(hours=1)
ALL = "$__all"
Record = dict[str, Any]

# Grafana's variable syntax: $name, [[name:format]], ${name.fieldPath:format}.
VARIABLE = re.compile(
    r"\$(\w+)|\[\[(\w+?)(?::(\w+))?\]\]|\$\{(\w+)(?:\.([^:^\}]+))?(?::([^\}]+))?\}"
)
REGEX_SPECIAL = re.compile(r"[\\^$*+?.()|{}\[\]/]")


def _records() -> list[Record]:
    """Finalized queries in and around the time range: three apps (one with a regex
    metacharacter in its name), records without `index`, without `ndcg@10`."""
    rng = random.Random(36)
    out = []
    for i in range(300):
        labels = {"app": rng.choice(["support", "docs", "a.b", "aXb"])}
        if rng.random() < 0.8:
            labels["index"] = rng.choice(["v7", "v8"])
        metrics = {"rr": round(rng.random(), 4), "precision@10": round(rng.random(), 4)}
        if rng.random() < 0.7:
            metrics["ndcg@10"] = round(rng.random(), 4)
        out.append(
            {
                "query_id": f"{i:032x}",
                "time": FROM + timedelta(seconds=rng.uniform(-1800, 5400)),
                "labels": labels,
                "metrics": metrics,
                "verdicts": {"hallucinated": rng.random() < 0.2},
            }
        )
    return out


RECORDS = _records()


@pytest.fixture(scope="module")
def pg() -> Iterator[Postgres]:
    with postgres() as server:
        rows = ",\n".join(
            f"('{r['query_id']}', '{r['time'].isoformat()}', '{json.dumps(r['labels'])}',"
            f" '{json.dumps(r['metrics'])}', '{json.dumps(r['verdicts'])}')"
            for r in RECORDS
        )
        server.sql(
            "CREATE SCHEMA analytics;\n"
            f"CREATE TABLE {TABLE} (query_id text, time timestamptz, labels jsonb,"
            " metrics jsonb, verdicts jsonb);\n"
            f"INSERT INTO {TABLE} VALUES\n{rows};"
        )
        yield server


def _regex(values: Sequence[str] | str) -> str:
    """Grafana's `regex` format: `.*` for All (the allValue), else the values escaped as a
    regular expression, an alternation of several."""
    if values == ALL:
        return ".*"
    escaped = [REGEX_SPECIAL.sub(lambda m: "\\" + m.group(0), v) for v in values]
    return escaped[0] if len(escaped) == 1 else f"({'|'.join(escaped)})"


def interpolate(sql: str, metric: str, chosen: dict[str, Sequence[str] | str]) -> str:
    """The SQL as Grafana's PostgreSQL data source sends it: `$__timeFilter(col)` as a
    BETWEEN on the range, a single-value variable with its quotes doubled, `:regex`."""
    sql = re.sub(
        r"\$__timeFilter\((\w+)\)",
        lambda m: f"{m.group(1)} BETWEEN '{FROM:%Y-%m-%dT%H:%M:%SZ}' AND '{TO:%Y-%m-%dT%H:%M:%SZ}'",
        sql,
    )

    def one(match: re.Match[str]) -> str:
        name = match.group(1) or match.group(2) or match.group(4)
        form = match.group(3) or match.group(6)
        if name == "worst_metric":
            assert form is None, match.group(0)
            return metric.replace("'", "''")
        assert name in chosen, match.group(0)
        assert form == "regex", match.group(0)
        return _regex(chosen[name])

    return VARIABLE.sub(one, sql)


def reference(metric: str, chosen: dict[str, Sequence[str] | str]) -> list[tuple[str, float]]:
    """(query id, value) of the lowest `metric`, lowest first (then the newest)."""
    kept = [
        r
        for r in RECORDS
        if FROM <= r["time"] <= TO
        and metric in r["metrics"]
        and all(
            values == ALL or r["labels"].get(key, "") in values for key, values in chosen.items()
        )
    ]
    kept.sort(key=lambda r: (r["metrics"][metric], -r["time"].timestamp()))
    return [(r["query_id"], r["metrics"][metric]) for r in kept[: gen.WORST_LIMIT]]


CASES: dict[str, tuple[str, dict[str, Sequence[str] | str]]] = {
    "every label set": ("ndcg@10", {"app": ALL, "index": ALL}),
    "one app": ("rr", {"app": ["support"], "index": ALL}),
    "a dot is a dot": ("ndcg@10", {"app": ["a.b"], "index": ALL}),
    "two apps, one index": ("precision@10", {"app": ["docs", "a.b"], "index": ["v8"]}),
    "records without the key": ("rr", {"app": ALL, "index": [""]}),
    "a metric nobody has": ("hit_rate@10", {"app": ALL, "index": ALL}),
}


@pytest.mark.parametrize("case", CASES)
def test_the_worst_queries_are_the_lowest_of_the_selected_records(case: str, pg: Postgres) -> None:
    metric, chosen = CASES[case]
    dashboard = gen.build(KEYS, results_table=TABLE)
    (target,) = dashboard["panels"][-1]["targets"]
    rows = pg.sql(interpolate(target["rawSql"], metric, chosen))
    expected = reference(metric, chosen)
    assert [(row[1], float(row[2])) for row in rows] == expected
    if case != "a metric nobody has":
        assert len(expected) == gen.WORST_LIMIT
    for row in rows:  # every column of the record, the labels and verdicts as JSON
        record = next(r for r in RECORDS if r["query_id"] == row[1])
        assert datetime.fromisoformat(row[0]) == record["time"]
        assert json.loads(row[3]) == record["labels"]
        assert json.loads(row[4]) == record["metrics"]
        assert json.loads(row[5]) == record["verdicts"]


def test_the_metric_variable_offers_the_metrics_of_the_records(pg: Postgres) -> None:
    dashboard = gen.build(KEYS, results_table=TABLE)
    (variable,) = [v for v in dashboard["templating"]["list"] if v["name"] == "worst_metric"]
    offered = [row[0] for row in pg.sql(interpolate(variable["query"], "", {}))]
    in_range = [r for r in RECORDS if FROM <= r["time"] <= TO]
    assert offered == sorted({m for r in in_range for m in r["metrics"]})
