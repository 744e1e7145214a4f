"""Configuration errors in plain words, and the effective configuration with secrets masked."""

from __future__ import annotations

import json

import yaml
from pydantic import BaseModel, ValidationError

__all__ = ["explain_error", "render_settings"]


def _env_name(location: tuple[int | str, ...]) -> str:
    names: list[str] = []
    for part in location:
        if isinstance(part, int):  # a list item: the variable holds the whole list
            break
        names.append(part.upper())
    return "RAGSTREAM_" + "__".join(names)


def explain_error(error: Exception) -> str:
    """One line per problem: where it is, what was given, what is expected."""
    if isinstance(error, ValidationError):
        lines = [f"the configuration has {error.error_count()} problem(s):"]
        for item in error.errors(include_url=False):
            location = tuple(item["loc"])
            dotted = ".".join(str(part) for part in location) or "(top level)"
            given = item.get("input")
            shown = "" if isinstance(given, dict) else f" (given: {given!r})"
            message = str(item["msg"]).removeprefix("Value error, ")
            if item["type"] == "extra_forbidden":
                message = "is not a known setting; check the spelling and the section"
            elif item["type"] == "missing":
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
