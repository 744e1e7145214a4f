"""The `drift` settings: the detectors' own defaults, checks against windows and metrics,
what check-config shows, and what the wiring builds."""

from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pydantic import BaseModel, ValidationError

from ragstream.cli import main
from ragstream.config import DriftSettings, explain_error, load_settings
from ragstream.config.drift import AdwinSettings, PageHinkleySettings, PsiSettings, ZScoreSettings
from ragstream.drift import Adwin, PageHinkley, Psi, ZScore
from ragstream.pipeline.drift_config import DriftConfig
from ragstream.wiring import drift_config, engine_config


@pytest.mark.parametrize(
    ("section", "detector"),
    [
        (ZScoreSettings, ZScore),
        (PsiSettings, Psi),
        (PageHinkleySettings, PageHinkley),
        (AdwinSettings, Adwin),
    ],
)
def test_each_detectors_defaults_are_its_classs_defaults(
    section: type[BaseModel], detector: type[object]
) -> None:
    parameters = inspect.signature(detector).parameters
    settings = section().model_dump(exclude={"enabled"})
    own = {
        name: p.default.value if hasattr(p.default, "value") else p.default
        for name, p in parameters.items()
        if name in settings
    }
    assert settings == own
    missing = set(parameters) - set(settings)
    assert missing <= {"min_std"}  # Page-Hinkley's numerical floor is not a setting
    detector(**settings)  # and they are accepted as they are


def test_the_defaults_build_the_engines_drift_config() -> None:
    config = drift_config(DriftSettings())
    assert config is not None
    assert (config.metrics, config.pairs, config.settle) == (
        DriftConfig().metrics,
        DriftConfig().pairs,
        DriftConfig().settle,
    )
    assert dict(config.zscore or ()) == ZScoreSettings().params()
    assert drift_config(DriftSettings(enabled=False)) is None
    off = drift_config(DriftSettings(adwin=AdwinSettings(enabled=False)))
    assert off is not None
    assert off.adwin is None
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
