"""Configuration errors in plain words, and the effective configuration with secrets masked."""

from __future__ import annotations

import difflib
import json
import os
import typing
from collections.abc import Mapping

import yaml
from pydantic import BaseModel, ValidationError

from ragstream.config.settings import Settings
from ragstream.durations import format_duration

__all__ = ["describe_sources", "explain_error", "render_settings"]


def _env_name(location: tuple[int | str, ...]) -> str:
    names: list[str] = []
    for part in location:
        if isinstance(part, int):  # a list item: the variable holds the whole list
            break
        names.append(part.upper())
    return "RAGSTREAM_" + "__".join(names)


def _section(annotation: object) -> type[BaseModel] | None:
    """The model a field holds: itself, or the item of a list or an optional."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    for argument in typing.get_args(annotation):
        model = _section(argument)
        if model is not None:
            return model
    return None


def _known_names(model: type[BaseModel], parents: tuple[int | str, ...]) -> list[str]:
    """The settings known where `parents` leads inside `model` (none if it leads nowhere)."""
    current: type[BaseModel] | None = model
    for part in parents:
        if isinstance(part, int):  # an item of a list of sections: the same model
            continue
        field = current.model_fields.get(part) if current is not None else None
        current = _section(field.annotation) if field is not None else None
    return list(current.model_fields) if current is not None else []


def _unknown(
    model: type[BaseModel], location: tuple[int | str, ...], environ: Mapping[str, str]
) -> str:
    """`kafka.bootstrap_server: unknown setting; did you mean kafka.bootstrap_servers?`"""
    dotted = ".".join(str(part) for part in location)
    *parents, name = location
    known = _known_names(model, tuple(parents))
    prefix = "".join(f"{part}." for part in parents)
    close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6)
    if close:
        text = f"{dotted}: unknown setting; did you mean {prefix}{close[0]}?"
    else:
        where = f"{prefix.rstrip('.')} has" if parents else "the top level has"
        text = f"{dotted}: unknown setting ({where}: {', '.join(known)})"
    variable = _env_name(location)
    if variable in {key.upper() for key in environ}:  # names are read case-insensitively
        text += f"  [set by the environment variable {variable}]"
    return text


def explain_error(
    error: Exception,
    model: type[BaseModel] = Settings,
    environ: Mapping[str, str] | None = None,
) -> str:
    """One line per problem: where it is, what was given, what is expected.

    An unknown setting is named with the closest known one (or those known at its level),
    and with its environment variable only if that variable is set (`environ`, default
    the process environment); a rule across fields (a section's validator) is its own
    message, which names the settings and what to write; every other problem names the
    variable that would set it.
    """
    environ = os.environ if environ is None else environ
    if isinstance(error, ValidationError):
        lines: list[str] = []
        for item in error.errors(include_url=False):
            location = tuple(item["loc"])
            if item["type"] == "extra_forbidden" and location:
                lines.append(f"  - {_unknown(model, location, environ)}")
                continue
            given = item.get("input")
            message = str(item["msg"]).removeprefix("Value error, ")
            if isinstance(given, dict):  # a rule across fields: its message names them
                lines.append(f"  - {message}")
                continue
            dotted = ".".join(str(part) for part in location)
            if item["type"] == "missing":
                message = "is required"
            lines.append(
                f"  - {dotted} (given: {given!r}): {message}  [env: {_env_name(location)}]"
            )
        count = sum(line.startswith("  - ") for line in "\n".join(lines).splitlines())
        return "\n".join([f"the configuration has {count} problem(s):", *lines])
    if isinstance(error, FileNotFoundError):
        return str(error)
    if isinstance(error, yaml.YAMLError | json.JSONDecodeError | ValueError):
        return f"the configuration file cannot be read: {error}"
    return f"the configuration cannot be loaded: {error}"


def render_settings(settings: BaseModel, fmt: str = "yaml") -> str:
    """The effective configuration as YAML or JSON; secrets print as `**********`."""
    data = settings.model_dump(mode="json")
    if fmt == "json":
        return json.dumps(data, indent=2, sort_keys=True)
    return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def describe_sources(settings: Settings) -> str:
    """What each topic carries and, with a trace topic, how spans become events, as YAML
    comments (`check-config` prints them after the configuration)."""
    k, t = settings.kafka, settings.traces
    lines = ["# sources (kafka.formats):"]
    for topic in k.topics:
        fmt = k.formats.get(topic, "ragstream")
        what = (
            "ragstream events (schema v1)"
            if fmt == "ragstream"
            else (f"OpenTelemetry traces, {fmt} (the Collector's kafka exporter encoding)")
        )
        lines.append(f"#   {topic}: {what}")
    if all(k.formats.get(topic, "ragstream") == "ragstream" for topic in k.topics):
        return "\n".join(lines)
    if any(k.formats.get(topic) == "otlp_proto" for topic in k.topics):
        from ragstream.traces.reader import TraceSupportError, format_reader

        try:
            format_reader("otlp_proto")
        except TraceSupportError:
            lines.append(
                "#   NOT READY: the OpenTelemetry protobuf definitions are not installed "
                "(pip install 'ragstream[otlp]')"
            )
    query_id = t.query_id_attribute or "the trace id (32 hex digits)"
    ids = ", ".join(t.doc_id_keys) or "(none)"
    time_key = f"metadata {t.doc_time_key}" if t.doc_time_key else "none (the retrieval's time)"
    labels = dict(t.labels)
    label_lines = [f"{key} <- {labels.get(key, key)}" for key in settings.labels.keys] or [
        "none (labels.keys is empty)"
    ]
    lines += [
        "# traces -> events (traces.*; docs/opentelemetry.md):",
        f"#   span kind: {t.span_kind}; query_id: {query_id}",
        f"#   RETRIEVER span -> retrieval event at once: results = {t.documents}.N.document.*,"
        f" doc_id = .id, else metadata {ids}, else a digest of .content; score = .score;"
        f" t_doc = {time_key}; query = {t.input_value}",
        "#   a trace closes when its root span (no parent, or a parent in another service)"
        " and a RETRIEVER span have arrived, or "
        f"{format_duration(t.wait)} after its last span (at most {t.max_open} open per"
        " partition); then one answer event: question and answer of its top-most CHAIN,"
        f" AGENT or LLM span ({t.input_value} / {t.output_value}; of a JSON object the keys"
        f" {', '.join(t.question_keys)} / {', '.join(t.answer_keys)}; an LLM's last"
        f" {t.input_messages} user message / {t.output_messages}, reasoning parts left out;"
        " a JSON structure without them: the last human / AI message, else the retrieval's"
        " query / the last LLM answer), contexts = what the model saw: the last RERANKER"
        f" span's {t.reranked_documents}, else the retrieved documents, narrowed to those its"
        f" prompt quotes; model = {t.model_name}",
        "#   other span kinds are counted and skipped, and so are records whose"
        " otelcol.signal header names another signal; feedback events use the same query_id",
        "#   labels (span attribute, else resource attribute): " + "; ".join(label_lines),
    ]
    return "\n".join(lines)
