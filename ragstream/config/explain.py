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

__all__ = ["explain_error", "render_settings"]


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
    the process environment); every other problem names the variable that would set it.
    """
    environ = os.environ if environ is None else environ
    if isinstance(error, ValidationError):
        lines = [f"the configuration has {error.error_count()} problem(s):"]
        for item in error.errors(include_url=False):
            location = tuple(item["loc"])
            if item["type"] == "extra_forbidden" and location:
                lines.append(f"  - {_unknown(model, location, environ)}")
                continue
            dotted = ".".join(str(part) for part in location) or "(top level)"
            given = item.get("input")
            shown = "" if isinstance(given, dict) else f" (given: {given!r})"
            message = str(item["msg"]).removeprefix("Value error, ")
            if item["type"] == "missing":
                message = "is required"
            lines.append(f"  - {dotted}{shown}: {message}  [env: {_env_name(location)}]")
        return "\n".join(lines)
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
