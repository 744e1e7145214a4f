"""`ragstream schema`: valid draft 2020-12, and it agrees with the decoder on the examples."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from click.testing import CliRunner

from ragstream.cli import main
from ragstream.events import decode_event

from ._examples import INVALID_OBJECTS, VALID, to_bytes

_DIALECT = "https://json-schema.org/draft/2020-12/schema"


def _schema(*args: str) -> dict[str, Any]:
    result = CliRunner().invoke(main, ["schema", *args])
    assert result.exit_code == 0, result.output
    document = json.loads(result.output)
    assert isinstance(document, dict)
    return document


def _validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(
        schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
    )


@pytest.mark.parametrize("kind", ["all", "retrieval", "answer", "feedback"])
def test_schema_is_valid_draft_2020_12_with_described_fields(kind: str) -> None:
    schema = _schema("--type", kind)
    assert schema["$schema"] == _DIALECT
    assert schema["title"].endswith("(schema v1)")
    _validator(schema)
    models = schema.get("$defs", {}) if kind == "all" else {kind: schema}
    events = [m for m in models.values() if "query_id" in m.get("properties", {})]
    assert len(events) == (3 if kind == "all" else 1)
    for model in events:
        assert model["required"][0] == "type"
        for name, field in model["properties"].items():
            assert field.get("title"), name
            assert field.get("description"), name


def test_default_is_the_union_and_indent_zero_is_one_line() -> None:
    result = CliRunner().invoke(main, ["schema", "--indent", "0"])
    assert result.exit_code == 0
    assert result.output.count("\n") == 1
    assert json.loads(result.output) == _schema("--indent", "4") == _schema()
    assert [ref["$ref"] for ref in _schema()["oneOf"]] == [
        "#/$defs/RetrievalEvent",
        "#/$defs/AnswerEvent",
        "#/$defs/FeedbackEvent",
    ]


def test_unknown_type_option_is_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["schema", "--type", "click"])
    assert result.exit_code == 2


@pytest.mark.parametrize("name", VALID)
def test_schema_accepts_every_valid_example(name: str) -> None:
    message = VALID[name]
    _validator(_schema()).validate(message)
    _validator(_schema("--type", message["type"])).validate(message)
    decode_event(to_bytes(message))


@pytest.mark.parametrize(("reason", "message"), INVALID_OBJECTS.values(), ids=INVALID_OBJECTS)
def test_schema_rejects_what_the_decoder_rejects(reason: str, message: dict[str, Any]) -> None:
    with pytest.raises(jsonschema.ValidationError):
        _validator(_schema()).validate(message)
    with pytest.raises(ValueError, match=reason):
        decode_event(to_bytes(message))


def test_schema_allows_unknown_fields_like_the_decoder() -> None:
    message = dict(VALID["feedback"], future_field={"x": 1})
    _validator(_schema()).validate(message)
    decode_event(to_bytes(message))
