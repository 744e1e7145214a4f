"""`ragstream schema`: print the JSON Schema of the events, or of the result records."""

from __future__ import annotations

import json
from typing import Literal, get_args

import click

from ragstream.events.json_schema import SchemaKind, event_json_schema
from ragstream.sinks.results import result_json_schema

__all__ = ["schema"]


@click.command("schema", short_help="Print the JSON Schema of the events.")
@click.option(
    "--type",
    "kind",
    type=click.Choice([*get_args(SchemaKind), "result"]),
    default="all",
    show_default=True,
    help="Event type to describe; `all` is the union discriminated by `type`; `result`: "
    "the records of the results topic and of `replay --per-query` (docs/results.md).",
)
@click.option(
    "--indent",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Indentation of the JSON; 0 prints it on one line.",
)
def schema(kind: SchemaKind | Literal["result"], indent: int) -> None:
    """Print the JSON Schema (draft 2020-12) of the events, for producers in any language,
    or of the result records, for their consumers."""
    document = result_json_schema() if kind == "result" else event_json_schema(kind)
    if indent:
        click.echo(json.dumps(document, indent=indent, ensure_ascii=False))
    else:
        click.echo(json.dumps(document, separators=(",", ":"), ensure_ascii=False))
