"""Configuration errors say what to write: a rule across settings names them (never
`(top level)` nor an environment variable that cannot exist), and a negative duration is
called one."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from ragstream.cli import main
from ragstream.config import load_settings
from ragstream.durations import parse_duration


def _check_config(*assignments: str) -> str:
    args = ["check-config"]
    for assignment in assignments:
        args += ["--set", assignment]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    return result.output


def test_a_rule_across_settings_says_what_to_write() -> None:
    output = _check_config(
        "windows.sizes=[1m, 5m]",
        "drift.window_pairs=[[5m, 10m]]",
        "drift.metrics=[ndcg@20]",
    )
    assert "(top level)" not in output
    assert "[env: RAGSTREAM_]" not in output
    assert "2 problem(s)" in output
    assert (
        "  - drift.window_pairs: window pair 5m/10m: 10m not in windows.sizes;"
        " write windows.sizes: [1m, 5m, 10m], or leave the pair out"
    ) in output
    assert (
        "  - drift.metrics: metric ndcg@20: cutoff 20 not in metrics.cutoffs;"
        " write metrics.cutoffs: [1, 3, 5, 10, 20], or watch a configured cutoff"
    ) in output


def test_what_the_message_says_to_write_is_accepted() -> None:
    settings = load_settings(
        overrides={
            "windows": {"sizes": ["1m", "5m", "10m"]},
            "metrics": {"cutoffs": [1, 3, 5, 10, 20]},
            "drift": {"window_pairs": [["5m", "10m"]], "metrics": ["ndcg@20"]},
        }
    )
    assert settings.drift.window_pairs == [(300.0, 600.0)]


def test_settle_names_its_setting_and_the_bound() -> None:
    output = _check_config("drift.window_pairs=[[1m, 1h]]", "drift.settle=1m")
    assert "  - drift.settle (1m): settle must be shorter than the short window of 1m/1h;" in (
        output
    )
    assert "write a drift.settle below 1m" in output
    assert "[env:" not in output


def test_a_section_rule_has_no_section_variable() -> None:
    output = _check_config("kafka.security.protocol=SASL_SSL")
    assert "  - kafka.security: protocol SASL_SSL needs sasl_mechanism" in output
    assert "RAGSTREAM_KAFKA__SECURITY]" not in output
    output = _check_config("kafka.formats={spans: otlp_proto}")
    assert "add it to kafka.topics or leave it out of kafka.formats" in output


@pytest.mark.parametrize("text", ["-10m", "-1.5h", " -90 ", "-250ms"])
def test_a_negative_duration_is_called_one(text: str) -> None:
    with pytest.raises(ValueError, match="is a negative duration") as error:
        parse_duration(text)
    assert "use a number and a unit" not in str(error.value)


def test_a_negative_duration_in_the_configuration() -> None:
    output = _check_config("join.label_ttl=-10m")
    assert "join.label_ttl (given: '-10m'): '-10m' is a negative duration" in output
    assert "[env: RAGSTREAM_JOIN__LABEL_TTL]" in output  # a plain setting keeps its variable


@pytest.mark.parametrize("text", ["-", "--10m", "-x", "10m-"])
def test_what_is_no_duration_at_all_still_asks_for_a_number_and_a_unit(text: str) -> None:
    with pytest.raises(ValueError, match="use a number and a unit"):
        parse_duration(text)
