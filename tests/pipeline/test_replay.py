"""`ragstream replay`: deterministic, per-query output equal to a from-scratch computation."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragstream.cli import main
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic


@pytest.fixture(scope="module")
def events_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("replay") / "events.jsonl"
    traffic = SyntheticTraffic(SyntheticConfig(seed=11, rate=10.0, drift_at=60.0))
    lines = [e.value for e in traffic.take(4000)]
    lines.insert(100, b"{broken json")
    lines.insert(2000, b'{"type": "feedback", "query_id": "q", "ts": "yesterday"}')
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _reference(path: Path) -> dict[str, dict[str, float]]:
    queries: dict[str, tuple[list[str], dict[str, float]]] = {}
    early: dict[str, list[tuple[str, float]]] = {}
    for line in path.read_bytes().splitlines():
        try:
            e = json.loads(line)
        except json.JSONDecodeError:
            continue
        if e.get("type") == "retrieval":
            labels = {q["doc_id"]: q["rel"] for q in e.get("qrels", [])}
            labels.update(early.pop(e["query_id"], []))
            ranking = list(dict.fromkeys(d["doc_id"] for d in e["results"]))
            queries[e["query_id"]] = (ranking, labels)
        elif e.get("type") == "feedback" and isinstance(e.get("ts"), float):
            target = queries.get(e["query_id"])
            if target is None:
                early.setdefault(e["query_id"], []).append((e["doc_id"], e["rel"]))
            else:
                target[1][e["doc_id"]] = e["rel"]
    out: dict[str, dict[str, float]] = {}
    for qid, (ranking, labels) in queries.items():
        if not labels:
            continue
        first = next((i for i, d in enumerate(ranking, 1) if labels.get(d, 0) >= 1), None)
        rel5 = sum(1 for d in ranking[:5] if labels.get(d, 0) >= 1)
        ideal = sorted(labels.values(), reverse=True)[:10]
        idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal) if g > 0)
        dcg = sum(labels.get(d, 0) / math.log2(i + 2) for i, d in enumerate(ranking[:10]))
        out[qid] = {
            "rr": 0.0 if first is None else 1.0 / first,
            "precision@5": rel5 / 5,
            "ndcg@10": dcg / idcg if idcg > 0 else 0.0,
        }
    return out


def test_replay_is_deterministic_and_matches_a_from_scratch_computation(
    events_file: Path, tmp_path: Path
) -> None:
    outputs = []
    for run, batch_size in enumerate((500, 500, 1700)):
        per_query = tmp_path / f"per-query-{run}.jsonl"
        args = [
            "replay",
            str(events_file),
            "--format",
            "json",
            "--per-query",
            str(per_query),
            "--set",
            "labels.keys=[app]",
            "--batch-size",
            str(batch_size),
        ]
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, result.output
        outputs.append((result.stdout, per_query.read_text()))
    assert outputs[0] == outputs[1]  # the same command twice: identical bytes
    # another batch size: the same queries and values (summation order may differ in ulps)
    by_qid = [
        {r["query_id"]: r for r in map(json.loads, out[1].splitlines())} for out in outputs[1:]
    ]
    assert by_qid[0].keys() == by_qid[1].keys()
    for qid, record in by_qid[0].items():
        other = by_qid[1][qid]
        assert record["labeled"] == other["labeled"]
        for name, value in record["metrics"].items():
            if value is None:
                assert other["metrics"][name] is None
            else:
                assert other["metrics"][name] == pytest.approx(value, rel=1e-12, abs=1e-12)
    summary = json.loads(outputs[0][0])
    assert summary["invalid"] == {"bad_json": 1, "bad_timestamp": 1}
    records = [json.loads(line) for line in outputs[0][1].splitlines()]
    reference = _reference(events_file)
    labeled = {r["query_id"]: r for r in records if r["labeled"]}
    assert set(labeled) == set(reference)
    for qid, expected in reference.items():
        for name, value in expected.items():
            assert labeled[qid]["metrics"][name] == pytest.approx(value, abs=1e-12), (qid, name)
    assert all(r["metrics"]["rr"] is None for r in records if not r["labeled"])


def test_replay_reports_bad_lines_with_their_line_numbers(events_file: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "ragstream", "replay", str(events_file)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"{events_file}:101: invalid event (bad_json" in result.stderr
    assert f"{events_file}:2001: invalid event (bad_timestamp" in result.stderr
    assert "label set" in result.stdout
    assert "invalid: bad_json 1, bad_timestamp 1" in result.stdout


def test_replay_counts_an_inline_label_on_a_repeated_document(tmp_path: Path) -> None:
    """SPEC §2 through `ragstream replay`: a repeat counts once, at its first position, and
    every inline rel (a repeat's included) is a label, applied in list order, after qrels."""
    cases = {
        "issue": ([{"doc_id": "a"}, {"doc_id": "b", "rel": 2}, {"doc_id": "a", "rel": 1}], [], 1.0),
        "last-wins": (
            [{"doc_id": "a", "rel": 2}, {"doc_id": "b", "rel": 1}, {"doc_id": "a", "rel": 0}],
            [],
            0.5,
        ),
        "after-qrels": (
            [{"doc_id": "x"}, {"doc_id": "a"}, {"doc_id": "x", "rel": 0}],
            [{"doc_id": "x", "rel": 3}, {"doc_id": "a", "rel": 1}],
            0.5,
        ),
    }
    path = tmp_path / "repeats.jsonl"
    lines = []
    for i, (qid, (results, qrels, _)) in enumerate(cases.items()):
        event = {"type": "retrieval", "query_id": qid, "ts": 1_767_225_600.0 + i}
        lines.append(json.dumps({**event, "results": results, "qrels": qrels}))
    path.write_text("\n".join(lines) + "\n")
    per_query = tmp_path / "per-query.jsonl"
    args = ["replay", str(path), "--format", "json", "--per-query", str(per_query)]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    records = {r["query_id"]: r for r in map(json.loads, per_query.read_text().splitlines())}
    assert {qid: r["metrics"]["rr"] for qid, r in records.items()} == {
        qid: rr for qid, (_, _, rr) in cases.items()
    }


def test_replay_table_names_metrics_as_the_demo_does(events_file: Path) -> None:
    result = CliRunner().invoke(main, ["replay", str(events_file), "--set", "labels.keys=[app]"])
    assert result.exit_code == 0, result.output
    head = result.stdout.splitlines()[0].split()
    assert head[-4:] == ["MRR", "nDCG@10", "P@5", "R@10"]
    assert not {"rr", "precision@5", "ndcg@10", "recall@10"} & set(head)
    rows = [line for line in result.stdout.splitlines() if line.startswith("app=")]
    assert rows, result.stdout
    assert any(line.split()[1] == "final" for line in rows)


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (b'{broken json\n{"type": "nope", "query_id": "q", "ts": 1}\n', "2 lines, all invalid"),
        (b"", "no event"),
    ],
)
def test_replay_of_a_file_without_a_valid_event_says_so_and_fails(
    tmp_path: Path, content: bytes, said: str
) -> None:
    path = tmp_path / "events.jsonl"
    path.write_bytes(content)
    result = subprocess.run(
        [sys.executable, "-m", "ragstream", "replay", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert f"{path} held no valid event" in result.stderr
    assert said in result.stderr
    assert "Traceback" not in result.stderr


def test_replay_with_one_valid_event_among_bad_lines_succeeds(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    retrieval = {"type": "retrieval", "query_id": "q", "ts": 1.0, "results": [{"doc_id": "a"}]}
    path.write_text("{broken json\n" + json.dumps(retrieval) + "\n")
    result = CliRunner().invoke(main, ["replay", str(path)])
    assert result.exit_code == 0, result.output
    assert "invalid: bad_json 1" in result.stdout


def test_replay_goes_on_past_hostile_lines_and_counts_blank_ones(tmp_path: Path) -> None:
    """A line nested 1000 deep under an unknown key used to end the replay (exit 1, a
    RecursionError); invalid UTF-8 there was accepted; blank lines were counted nowhere."""
    traffic = SyntheticTraffic(SyntheticConfig(seed=3, rate=10.0))
    valid = [e.value for e in traffic.take(50)]
    feedback = (
        b'{"type":"feedback","query_id":"q","ts":1700000000,"doc_id":"d","rel":1,"source":"x"'
    )
    lines = [
        *valid[:20],
        feedback + b',"x":' + b"[" * 1000 + b"]" * 1000 + b"}",  # line 21
        b"",
        feedback + b',"x":"\xff"}',  # line 23
        b"  ",
        *valid[20:],
    ]
    path = tmp_path / "hostile.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    result = subprocess.run(
        [sys.executable, "-m", "ragstream", "replay", "--format", "json", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert f"{path}:21: invalid event (bad_json" in result.stderr
    assert f"{path}:23: invalid event (bad_json" in result.stderr
    summary = json.loads(result.stdout)
    assert summary["invalid"] == {"bad_json": 2}
    assert summary["lines"] == {"read": len(lines), "blank": 2}
    counted = sum(summary["events"].values())
    assert counted == len(valid) + 2 == summary["lines"]["read"] - summary["lines"]["blank"]
