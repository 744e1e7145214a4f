"""Trace topics in the configuration: per-topic formats, the `traces` settings, what
`check-config` says, and a missing `otlp` extra."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner
from pydantic import ValidationError

from ragstream.cli import main
from ragstream.config import Settings, TraceSettings, load_settings
from ragstream.pipeline.engine import Engine
from ragstream.traces import TraceReader, TraceSupportError
from ragstream.wiring import engine_config
from ragstream.wiring.engine import trace_mapping
from tests.support import defaults
from tests.traces._rag import RagApp, per_trace

CONFIG = """
kafka:
  topics: [rag-feedback, otlp_spans, otlp_json_spans]
  formats: {otlp_spans: otlp_proto, otlp_json_spans: otlp_json}
labels:
  keys: [service, env]
traces:
  labels: {service: service.name, env: deployment.environment}
  wait: 45s
"""


def test_the_mapping_is_filled_from_the_settings() -> None:
    """The mapping has no defaults of its own: the settings' (OpenInference's names) reach
    it, and so does every value set."""
    mapping = trace_mapping(Settings().traces)
    assert (mapping.span_kind, mapping.documents, mapping.query_id) == (
        "openinference.span.kind",
        "retrieval.documents",
        None,
    )
    assert mapping.labels == (("service", "service.name"),)
    changed = trace_mapping(
        TraceSettings(query_id_attribute="session.id", wait=5.0, max_open=3, doc_id_keys=["k"])
    )
    assert (changed.query_id, changed.wait, changed.max_open, changed.doc_id_keys) == (
        "session.id",
        5.0,
        3,
        ("k",),
    )


def test_formats_reach_the_engine(tmp_path: Path) -> None:
    path = tmp_path / "ragstream.yaml"
    path.write_text(CONFIG)
    config = engine_config(load_settings(path))
    assert config.formats == (("otlp_json_spans", "otlp_json"), ("otlp_spans", "otlp_proto"))
    assert config.traces.wait == 45.0
    engine = Engine(config)
    assert engine.traces is not None
    assert engine.traces.formats == {"otlp_spans": "otlp_proto", "otlp_json_spans": "otlp_json"}
    assert Engine(engine_config(Settings())).traces is None  # no trace topic: no trace reader


def test_a_format_for_a_topic_not_consumed_is_an_error() -> None:
    with pytest.raises(ValidationError, match=r"kafka\.formats names spans, not in kafka\.topics"):
        load_settings(overrides={"kafka": {"topics": ["a"], "formats": {"spans": "otlp_proto"}}})
    with pytest.raises(ValidationError, match="otlp_proto"):
        load_settings(overrides={"kafka": {"topics": ["a"], "formats": {"a": "zipkin_proto"}}})


def test_check_config_says_what_each_topic_carries_and_how_spans_map(tmp_path: Path) -> None:
    path = tmp_path / "ragstream.yaml"
    path.write_text(CONFIG)
    result = CliRunner().invoke(main, ["check-config", "--config", str(path)])
    assert result.exit_code == 0, result.output
    out = result.output
    assert "#   rag-feedback: ragstream events (schema v1)" in out
    assert "#   otlp_spans: OpenTelemetry traces, otlp_proto" in out
    assert "#   otlp_json_spans: OpenTelemetry traces, otlp_json" in out
    assert "query_id: the trace id (32 hex digits)" in out
    assert "RETRIEVER span -> retrieval event" in out
    assert "45s after its last span" in out
    assert "service <- service.name; env <- deployment.environment" in out
    assert yaml.safe_load(out)["kafka"]["formats"]["otlp_spans"] == "otlp_proto"  # still YAML
    plain = CliRunner().invoke(main, ["check-config"])
    assert "traces -> events" not in plain.output  # no trace topic: no mapping to explain


def test_an_otlp_proto_topic_without_the_protobuf_definitions_is_a_clear_error(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delitem(sys.modules, "ragstream.traces.otlp_proto", raising=False)
    monkeypatch.setitem(sys.modules, "google.protobuf.message", None)  # as if not installed
    with pytest.raises(TraceSupportError, match=r"pip install 'ragstream\[otlp\]'"):
        Engine(defaults.engine_config(formats=(("spans", "otlp_proto"),)))
    reader = TraceReader(
        {"spans": "otlp_json"}, defaults.trace_mapping()
    )  # OTLP/JSON needs no extra
    assert reader.formats == {"spans": "otlp_json"}


def test_check_config_says_not_ready_when_opentelemetry_is_not_installed_at_all(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The install of the demo (no `otlp` extra) has no `opentelemetry` package at all."""
    monkeypatch.delitem(sys.modules, "ragstream.traces.otlp_proto", raising=False)
    for name in [m for m in sys.modules if m == "opentelemetry" or m.startswith("opentelemetry.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if not installed
    path = tmp_path / "ragstream.yaml"
    path.write_text(CONFIG)
    result = CliRunner().invoke(main, ["check-config", "--config", str(path)])
    assert result.exit_code == 0, result.output
    assert "NOT READY: the OpenTelemetry protobuf definitions are not installed" in result.output


@pytest.mark.filterwarnings("ignore:Calling .text\\(\\) as a method:DeprecationWarning")
def test_replay_reads_a_file_of_otlp_json_requests(rag_app: RagApp, tmp_path: Path) -> None:
    """One OTLP/JSON request per line, as the Collector's file exporter writes them."""
    rag_app.exporter.take()
    for question in ["reset my password", "close my account", "export invoices"]:
        rag_app.ask(question)
    path = tmp_path / "spans.jsonl"
    lines = [v for export in rag_app.exporter.exports for _, v in per_trace(export, "otlp_json")]
    path.write_bytes(b"\n".join(lines) + b"\n")
    runner = CliRunner()
    args = ["replay", "--input-format", "otlp_json", "--format", "json", str(path)]
    result = runner.invoke(main, args)
    assert result.exit_code == 0, result.output
    summary = json.loads(result.output)
    assert summary["lines"] == {"read": 21, "blank": 0}
    as_events = runner.invoke(main, ["replay", "--format", "json", str(path)])
    assert as_events.exit_code == 1  # read as ragstream events, no line is one
    assert "unknown_type" in as_events.output or "schema" in as_events.output
    assert summary["events"] == {"answer/processed": 3, "retrieval/processed": 3}
