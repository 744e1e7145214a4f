"""`replay --checkpoint-dir`: a replay killed (SIGKILL) at any moment and started again
with the same directory ends with the output of a replay that was never stopped; a
checkpoint of another input or other settings is refused with what differs."""

from __future__ import annotations

import dataclasses
import json
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragstream.checkpoint.local import checkpoint_path, read_checkpoint, write_checkpoint
from ragstream.cli import main
from ragstream.sources.synthetic import SyntheticConfig, SyntheticTraffic

SETTINGS = ["--set", "labels.keys=[app]", "--set", "join.label_ttl=120s"]


@pytest.fixture(scope="module")
def events_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("replay") / "events.jsonl"
    traffic = SyntheticTraffic(SyntheticConfig(seed=19, rate=10.0, drift_at=60.0))
    lines = [e.value for e in traffic.take(30_000)]
    for i in range(0, len(lines), 1001):  # bad input, and blank lines, all along
        lines.insert(i, b"{broken json")
        lines.insert(i + 500, b"")
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _replay(file: Path, out: Path, *more: str) -> list[str]:
    return [sys.executable, "-m", "ragstream", "replay", str(file), "--format", "json",
            "--per-query", str(out), "--batch-size", "700", *SETTINGS, *more]  # fmt: skip


@pytest.mark.slow
def test_a_replay_killed_at_random_moments_ends_as_one_never_stopped(
    events_file: Path, tmp_path: Path
) -> None:
    whole = tmp_path / "whole.jsonl"
    started = time.monotonic()
    reference = subprocess.run(_replay(events_file, whole), capture_output=True, check=True)
    took = time.monotonic() - started
    rng = random.Random(1313)
    kills = resumed = 0
    for trial in range(4):
        directory, out = tmp_path / f"ckpt-{trial}", tmp_path / f"queries-{trial}.jsonl"
        command = _replay(events_file, out, "--checkpoint-dir", str(directory))
        command += ["--checkpoint-every", "2000"]
        for attempt in range(30):
            proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if attempt < 3:  # killed at a random moment, three times
                time.sleep(rng.uniform(0.15, 0.7) * took)
                proc.send_signal(signal.SIGKILL)
            stdout, stderr = proc.communicate(timeout=120)
            resumed += b"resuming after line" in stderr
            if proc.returncode == -signal.SIGKILL:
                kills += 1
                continue
            assert proc.returncode == 0, stderr.decode()[-2000:]
            break
        assert json.loads(stdout) == json.loads(reference.stdout), trial
        assert out.read_bytes() == whole.read_bytes(), trial
        assert b"invalid event" in stderr or b"resuming" in stderr
    # of the 12 kills, enough landed before the end, and after a checkpoint, to matter
    assert kills >= 4, kills
    assert resumed >= 4, resumed


def _cli(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(main, ["replay", *args, "--format", "json", *SETTINGS])
    return result.exit_code, result.output


def test_a_checkpoint_at_the_end_of_a_file_that_grew_goes_on_with_the_new_lines(
    tmp_path: Path,
) -> None:
    """Also the schedule of the state's upkeep: a label set that went quiet leaves the
    windows at the engine's next upkeep (every 60 s of event time) once it is empty, so it
    is still listed at the end of the file here, as in one replay of the whole file."""
    events = []
    for i in range(120):  # app a in the first 20 s, b all along; 10 lines a batch
        app = "a" if i < 20 and i % 2 else "b"
        events.append({"type": "retrieval", "query_id": f"q{i}", "ts": 1.7e9 + i,
                       "labels": {"app": app}, "results": [{"doc_id": "d1"}],
                       "qrels": [{"doc_id": "d1", "rel": 1}]})  # fmt: skip
    lines = [json.dumps(e).encode() + b"\n" for e in events]
    whole, grown = tmp_path / "whole.jsonl", tmp_path / "grown.jsonl"
    whole.write_bytes(b"".join(lines))
    common = ["--batch-size", "10", "--set", "windows.sizes=[60s]", "--set", "windows.buckets=6"]
    code, expected = _cli(str(whole), *common)
    assert code == 0, expected
    grown.write_bytes(b"".join(lines[:100]))
    directory = str(tmp_path / "ckpt")
    code, _ = _cli(str(grown), *common, "--checkpoint-dir", directory)
    assert code == 0
    grown.write_bytes(b"".join(lines))  # 20 more lines
    code, output = _cli(str(grown), *common, "--checkpoint-dir", directory)
    assert code == 0, output
    assert "resuming after line 100" in output
    result = json.loads(output[output.index("{") :])
    assert "app=a" in json.loads(expected)["windows"]  # empty, not yet pruned
    assert result == json.loads(expected)


def test_a_checkpoint_of_another_input_is_refused_with_what_differs(
    events_file: Path, tmp_path: Path
) -> None:
    directory = str(tmp_path / "ckpt")
    code, _ = _cli(str(events_file), "--checkpoint-dir", directory)
    assert code == 0
    other = tmp_path / "other.jsonl"
    data = bytearray(events_file.read_bytes())
    data[1000] ^= 1  # one bit of another file
    other.write_bytes(bytes(data))
    code, output = _cli(str(other), "--checkpoint-dir", directory)
    assert code == 1
    assert "is of another input" in output
    assert "differs in those bytes" in output
    other.write_bytes(events_file.read_bytes()[:5000])
    code, output = _cli(str(other), "--checkpoint-dir", directory)
    assert code == 1
    assert "is shorter (5000 bytes)" in output


def test_a_checkpoint_taken_with_other_settings_is_refused_naming_them(
    events_file: Path, tmp_path: Path
) -> None:
    directory = str(tmp_path / "ckpt")
    code, _ = _cli(str(events_file), "--checkpoint-dir", directory)
    assert code == 0
    code, output = _cli(
        str(events_file), "--checkpoint-dir", directory, "--set", "windows.sizes=[5m]"
    )
    assert code == 1
    assert "other settings (engine.windows differ)" in output
    code, output = _cli(str(events_file), "--checkpoint-dir", directory, "--batch-size", "9")
    assert code == 1
    assert "(batch_size differ)" in output
    out = tmp_path / "q.jsonl"
    code, output = _cli(str(events_file), "--checkpoint-dir", directory, "--per-query", str(out))
    assert code == 1
    assert "(per_query differ)" in output


def test_a_damaged_checkpoint_is_a_clear_error(events_file: Path, tmp_path: Path) -> None:
    directory = tmp_path / "ckpt"
    code, _ = _cli(str(events_file), "--checkpoint-dir", str(directory))
    assert code == 0
    path = checkpoint_path(directory)
    path.write_bytes(path.read_bytes()[:1000])
    code, output = _cli(str(events_file), "--checkpoint-dir", str(directory))
    assert code == 1
    assert f"{path} is damaged" in output
    assert "Traceback" not in output


def test_a_checkpoint_of_an_older_engine_snapshot_is_refused(
    events_file: Path, tmp_path: Path
) -> None:
    """A checkpoint whose engine state is of another version (1: grouped by kind) stops the
    replay with exit 1 and what to do; it is never read as this version's."""
    directory = tmp_path / "ckpt"
    code, _ = _cli(str(events_file), "--checkpoint-dir", str(directory))
    assert code == 0
    saved = read_checkpoint(directory)
    assert saved is not None
    assert saved.state["version"] == 2
    old = {**saved.state, "version": 1}
    write_checkpoint(directory, dataclasses.replace(saved, state=old))
    code, output = _cli(str(events_file), "--checkpoint-dir", str(directory))
    assert code == 1
    assert "the snapshot is of version 1; this version of ragstream reads version 2" in output
    assert "remove it or use another --checkpoint-dir" in output
    assert "Traceback" not in output


def test_a_per_query_output_shorter_than_at_the_checkpoint_is_a_clear_error(
    events_file: Path, tmp_path: Path
) -> None:
    directory, out = str(tmp_path / "ckpt"), tmp_path / "q.jsonl"
    code, _ = _cli(str(events_file), "--checkpoint-dir", directory, "--per-query", str(out))
    assert code == 0
    assert out.stat().st_size > 0
    out.write_bytes(b"")  # not the output that replay wrote
    code, output = _cli(str(events_file), "--checkpoint-dir", directory, "--per-query", str(out))
    assert code == 1
    assert f"{out} has 0 bytes, fewer than the" in output
    assert "it is not that replay's per-query output" in output
