"""Configuration: durations, precedence (file < env < flags), secrets, plain-word errors."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from ragstream.cli import main
from ragstream.config import load_settings
from ragstream.durations import format_duration, parse_duration
from tests.support import defaults
from tests.support.defaults import engine_config


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("90s", 90.0),
        ("5m", 300.0),
        ("1.5h", 5400.0),
        ("24h", 86400.0),
        ("7d", 604800.0),
        ("250ms", 0.25),
        ("2w", 1209600.0),
        (" 10 ", 10.0),
        (42, 42.0),
        (0.5, 0.5),
    ],
)
def test_durations_parse(text: str | float, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "5x", "-1s", "m", "1e3s", True, None, [1]])
def test_bad_durations_say_how_to_write_one(bad: object) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(bad)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (60.0, "1m"),
        (86400.0, "24h"),
        (604800.0, "1w"),
        (90.0, "90s"),
        (0.25, "250ms"),
        (5400.0, "90m"),
    ],
)
def test_durations_format_to_the_shortest_exact_unit(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text
    assert parse_duration(text) == seconds


def test_flags_override_env_which_overrides_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "ragstream.yaml"
    config.write_text(
        "kafka:\n  bootstrap_servers: from-file:9092\n  group_id: file-group\n"
        "windows:\n  sizes: [1h, 1m]\nhttp:\n  port: 1111\n"
    )
    monkeypatch.setenv("RAGSTREAM_KAFKA__BOOTSTRAP_SERVERS", "from-env:9092")
    monkeypatch.setenv("RAGSTREAM_HTTP__PORT", "2222")
    settings = load_settings(config, {"http": {"port": 3333}})
    assert settings.kafka.bootstrap_servers == "from-env:9092"
    assert settings.kafka.group_id == "file-group"
    assert settings.http.port == 3333
    assert settings.windows.sizes == [60.0, 3600.0]
    assert settings.join.label_ttl == 900.0


def test_toml_files_work_too(tmp_path: Path) -> None:
    config = tmp_path / "ragstream.toml"
    config.write_text('[metrics]\ncutoffs = [10, 5]\nhalf_lives = ["1d"]\n')
    settings = load_settings(config)
    assert settings.metrics.cutoffs == [5, 10]
    assert settings.metrics.half_lives == [86400.0]


def test_check_config_masks_secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGSTREAM_KAFKA__SECURITY__PROTOCOL", "SASL_SSL")
    monkeypatch.setenv("RAGSTREAM_KAFKA__SECURITY__SASL_PASSWORD", "hunter2-secret")
    args = [
        "check-config",
        "--format",
        "json",
        "--set",
        "kafka.security.sasl_mechanism=PLAIN",
        "--set",
        "kafka.security.sasl_username=svc",
        "--topic",
        "a",
        "--topic",
        "b",
    ]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output
    assert "hunter2" not in result.output
    data = json.loads(result.output)
    assert data["kafka"]["security"]["sasl_password"] == "**********"
    assert data["kafka"]["topics"] == ["a", "b"]


def test_check_config_explains_every_problem_in_plain_words(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("kafka:\n  max_batch: 0\n  bootsrap_servers: x\nwindows:\n  sizes: [5x]\n")
    result = CliRunner().invoke(main, ["check-config", "--config", str(config)])
    assert result.exit_code == 1
    assert "3 problem(s)" in result.output
    assert "kafka.max_batch (given: 0): Input should be greater than or equal to 1" in result.output
    assert "kafka.bootsrap_servers" in result.output
    assert "kafka.bootsrap_servers: unknown setting; did you mean kafka.bootstrap_servers?" in (
        result.output
    )
    assert "cannot read '5x' as a duration" in result.output
    assert "RAGSTREAM_WINDOWS__SIZES" in result.output
    assert "Traceback" not in result.output


def test_missing_config_file_is_a_clear_error(tmp_path: Path) -> None:
    result = CliRunner().invoke(main, ["check-config", "--config", str(tmp_path / "nope.yaml")])
    assert result.exit_code == 1
    assert "configuration file not found" in result.output


def test_sasl_without_credentials_is_rejected() -> None:
    result = CliRunner().invoke(
        main, ["check-config", "--set", "kafka.security.protocol=SASL_PLAINTEXT"]
    )
    assert result.exit_code == 1
    assert "needs sasl_mechanism, sasl_username and sasl_password" in result.output


def test_the_documented_example_configuration_is_valid(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RAGSTREAM_KAFKA__SECURITY__SASL_PASSWORD", "from-a-secret")
    example = Path(__file__).parents[2] / "deploy" / "ragstream.example.yaml"
    settings = load_settings(example)
    assert settings.kafka.security.protocol == "SASL_SSL"
    assert settings.labels.keys == ["app", "index"]
    assert settings.judge.sampling.label_rules[0].rate == 0.2
    assert "from-a-secret" not in repr(settings)


def test_the_engine_config_from_default_settings_is_the_engines_default() -> None:
    """With drift detection on (the agent's default; the engine's is off), at the
    detectors' own defaults."""
    from ragstream.config import DriftSettings, Settings
    from ragstream.wiring import engine_config as from_settings

    assert from_settings(Settings(drift=DriftSettings(enabled=False))) == engine_config()
    config = from_settings(Settings())
    assert config.drift is not None
    assert dataclasses.replace(config, drift=None) == engine_config()
    at_defaults = defaults.drift_config()
    assert (config.drift.metrics, config.drift.pairs, config.drift.settle) == (
        at_defaults.metrics,
        at_defaults.pairs,
        at_defaults.settle,
    )


@pytest.mark.parametrize(
    ("setting", "named", "closest"),
    [
        ("nonsense=1", "nonsense", None),
        ("kafka.bootstrap_server=x", "kafka.bootstrap_server", "kafka.bootstrap_servers"),
        ("windw.sizes=[1m]", "windw", "windows"),
        ("judge.openai.modl=m", "judge.openai.modl", "judge.openai.model"),
    ],
)
def test_an_unknown_setting_is_named_with_the_closest_known_one(
    setting: str, named: str, closest: str | None
) -> None:
    result = CliRunner().invoke(main, ["check-config", "--set", setting])
    assert result.exit_code == 1
    assert f"{named}: unknown setting" in result.output
    assert "[env:" not in result.output  # no variable exists for a setting that does not
    if closest is None:
        assert "did you mean" not in result.output
        assert "kafka, windows" in result.output  # the settings known at that level
    else:
        assert f"did you mean {closest}?" in result.output


def test_an_unknown_setting_from_the_environment_names_its_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGSTREAM_KAFKA__GROUP", "g")
    result = CliRunner().invoke(main, ["check-config"])
    assert result.exit_code == 1
    assert (
        "kafka.group: unknown setting; did you mean kafka.group_id?"
        "  [set by the environment variable RAGSTREAM_KAFKA__GROUP]"
    ) in result.output


def test_the_fetch_size_reaches_the_kafka_consumer(monkeypatch: pytest.MonkeyPatch) -> None:
    from ragstream.pipeline.engine import Engine
    from ragstream.wiring.kafka import kafka_source

    engine = Engine(engine_config())
    default = kafka_source(load_settings(None, {}), engine).config.fetch_partition_bytes
    assert default == 4 << 20
    monkeypatch.setenv("RAGSTREAM_KAFKA__FETCH_PARTITION_BYTES", "1048576")
    source = kafka_source(load_settings(None, {}), engine)
    assert source.config.fetch_partition_bytes == 1 << 20


def test_the_trace_id_field_from_the_environment_reaches_the_engine(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from ragstream.wiring import engine_config as from_settings

    assert load_settings().exemplars.trace_id_field is None
    assert from_settings(load_settings()).trace_id_field is None
    monkeypatch.setenv("RAGSTREAM_EXEMPLARS__TRACE_ID_FIELD", "trace_id")
    settings = load_settings()
    assert settings.exemplars.trace_id_field == "trace_id"
    assert from_settings(settings).trace_id_field == "trace_id"


@pytest.mark.parametrize("name", ["query_id", "results", "type", ""])
def test_a_trace_id_field_of_the_schema_is_named_with_its_variable(
    monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    monkeypatch.setenv("RAGSTREAM_EXEMPLARS__TRACE_ID_FIELD", name)
    result = CliRunner().invoke(main, ["check-config"])
    assert result.exit_code != 0
    assert "exemplars.trace_id_field" in result.output
    assert "a field of the event schema" in result.output
    assert "RAGSTREAM_EXEMPLARS__TRACE_ID_FIELD" in result.output
