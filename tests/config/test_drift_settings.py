"""The `drift` settings: the detectors' defaults (there only), checks against windows and metrics,
what check-config shows, and what the wiring builds."""

from __future__ import annotations

import dataclasses
import inspect
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pydantic import ValidationError

import ragstream.drift
from ragstream.cli import main
from ragstream.config import DriftSettings, explain_error, load_settings
from ragstream.config.drift import AdwinSettings, ZScoreSettings
from ragstream.drift import DETECTORS, SEQUENTIAL, WINDOWED
from ragstream.wiring import drift_config, engine_config
from tests.support import defaults


@pytest.mark.parametrize("name", DETECTORS)
def test_each_registered_detector_has_its_section_and_its_defaults_only_there(name: str) -> None:
    """A registered detector's section (of its name) gives its registered parameters type;
    those name every argument of its class, which has no default of its own."""
    kind = WINDOWED.get(name) or SEQUENTIAL[name]
    section = getattr(DriftSettings(), name)
    params = section.params()
    assert type(params) is kind.params
    fields = [f.name for f in dataclasses.fields(params)]
    assert fields == [n for n in section.model_dump() if n != "enabled"]
    detector = kind.params.__name__.removesuffix("Params")
    signature = inspect.signature(getattr(ragstream.drift, detector)).parameters
    assert [n for n in signature if n != "min_std"] == fields  # Page-Hinkley's numeric floor
    assert all(signature[n].default is inspect.Parameter.empty for n in fields)
    built = (
        WINDOWED[name].build((2,), params) if name in WINDOWED else SEQUENTIAL[name].build(params)
    )
    assert built.snapshot()["kind"] in {name, f"{name}_bank"}
    assert set(DriftSettings.model_fields) >= set(DETECTORS)


def test_the_defaults_build_the_engines_drift_config() -> None:
    config = drift_config(DriftSettings())
    assert config is not None
    assert (config.metrics, config.pairs, config.settle) == (
        defaults.drift_config().metrics,
        defaults.drift_config().pairs,
        defaults.drift_config().settle,
    )
    assert config.params("zscore") == ZScoreSettings().params()
    assert drift_config(DriftSettings(enabled=False)) is None
    off = drift_config(DriftSettings(adwin=AdwinSettings(enabled=False)))
    assert off is not None
    assert off.params("adwin") is None
    assert [kind for kind, _ in off.sequential()] == ["page_hinkley"]


def test_metric_names_are_read_as_everywhere() -> None:
    settings = DriftSettings(metrics=["nDCG@10", "mrr", "P@5"])
    assert settings.metrics == ["ndcg@10", "rr", "precision@5"]
    for bad, reason in (
        ("ndcg_decayed@10", "plain"),
        ("nonsense", "unknown metric"),
        ("rr,rr", "unknown metric"),
    ):
        with pytest.raises(ValidationError, match=reason):
            DriftSettings(metrics=[bad])
    with pytest.raises(ValidationError, match="twice"):
        DriftSettings(metrics=["rr", "mrr"])


def test_pairs_and_cutoffs_must_be_configured() -> None:
    with pytest.raises(ValidationError) as error:
        load_settings(
            overrides={
                "windows": {"sizes": ["1m", "5m"]},
                "drift": {"window_pairs": [["1m", "10m"]], "metrics": ["ndcg@20"]},
            }
        )
    text = explain_error(error.value, environ={})
    assert "window pair 1m/10m: 10m not in windows.sizes" in text
    assert "metric ndcg@20: cutoff 20 not in metrics.cutoffs" in text
    with pytest.raises(ValidationError, match="settle must be shorter"):
        load_settings(overrides={"drift": {"window_pairs": [["1m", "1h"]], "settle": "1m"}})
    with pytest.raises(ValidationError, match="short < long"):
        DriftSettings(window_pairs=[("1h", "5m")])


def test_default_pairs_follow_the_configured_windows() -> None:
    settings = load_settings(overrides={"windows": {"sizes": ["1m", "5m", "1h"]}})
    assert settings.drift.window_pairs == [(300.0, 3600.0)]
    none = load_settings(overrides={"windows": {"sizes": ["1m", "10m"]}})
    assert none.drift.window_pairs == []
    config = engine_config(none)
    assert config.drift is not None
    assert config.drift.pairs == ()
    explicit = load_settings(
        overrides={
            "windows": {"sizes": ["10s", "1m"]},
            "drift": {"window_pairs": [["10s", "1m"]], "settle": "2s"},
        }
    )
    assert explicit.drift.window_pairs == [(10.0, 60.0)]
    assert engine_config(explicit, drift=False).drift is None


def test_check_config_shows_the_drift_section() -> None:
    result = CliRunner().invoke(
        main, ["check-config", "--format", "json", "--set", "drift.zscore.threshold=4"]
    )
    assert result.exit_code == 0, result.output
    drift = json.loads(result.output)["drift"]
    assert drift["metrics"] == ["ndcg@10", "rr"]
    assert drift["window_pairs"] == [["5m", "1h"], ["1h", "24h"]]
    assert drift["settle"] == "2m"
    assert drift["zscore"]["threshold"] == 4.0
    assert drift["adwin"]["delta"] == 1e-5
    assert drift["page_hinkley"]["enabled"] is True


def test_the_example_configuration_lists_the_drift_defaults(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RAGSTREAM_KAFKA__SECURITY__SASL_PASSWORD", "x")
    example = Path(__file__).parents[2] / "deploy" / "ragstream.example.yaml"
    listed = yaml.safe_load(example.read_text())["drift"]
    assert load_settings(example).drift.model_dump() == DriftSettings().model_dump()
    assert set(listed) == set(DriftSettings.model_fields)  # every setting is listed
    for name in ("zscore", "psi", "page_hinkley", "adwin"):
        assert set(listed[name]) == set(getattr(DriftSettings(), name).model_dump())
