"""Offline validators for deploy/: Kubernetes' OpenAPI schemas, the Prometheus Operator's
CRDs, the Compose specification, and promtool.

- Kubernetes kinds: the JSON Schemas that `kubernetes-validate` ships for every Kubernetes
  version, in their strict form (an unknown field is an error, as `kubectl apply
  --validate=strict` makes it), for each of `KUBERNETES_VERSIONS`.
- `monitoring.coreos.com/v1` kinds: the pydantic models that `cloudcoil` generates from the
  operator's CRDs, read with unknown fields forbidden and by their CRD (camelCase) names only.
- Compose: `compose-spec.json` as vendored by `check-jsonschema`.
- Rule content: `promtool check rules` (Debian's prometheus package, scripts/prometheus.sh).
"""

from __future__ import annotations

import json
import subprocess
import tempfile
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import pydantic
import yaml
from cloudcoil.models.prometheus_operator import v1 as operator_v1

from tests.support.prometheus import promtool

__all__ = [
    "KUBERNETES_VERSIONS",
    "check_rules",
    "compose_errors",
    "documents",
    "is_operator_kind",
    "kubernetes_errors",
    "operator_errors",
    "walk",
]

KUBERNETES_VERSIONS = ("1.29.0", "1.37.0")
"""The oldest version with native sidecars on by default, and the newest the pinned
kubernetes-validate ships."""

_OPERATOR_GROUP = "monitoring.coreos.com/v1"
_OPERATOR_KINDS: dict[str, type[pydantic.BaseModel]] = {
    "PodMonitor": operator_v1.PodMonitor,
    "ServiceMonitor": operator_v1.ServiceMonitor,
    "PrometheusRule": operator_v1.PrometheusRule,
}


def documents(path: Path) -> list[dict[str, Any]]:
    """The YAML documents of a manifest file (empty ones left out)."""
    with path.open(encoding="utf-8") as stream:
        docs = [doc for doc in yaml.safe_load_all(stream) if doc is not None]
    for doc in docs:
        if not isinstance(doc, dict):
            raise ValueError(f"{path}: a document is not a mapping: {doc!r}")
    return docs


def is_operator_kind(doc: dict[str, Any]) -> bool:
    return doc.get("apiVersion") == _OPERATOR_GROUP


def kubernetes_errors(doc: dict[str, Any], version: str) -> list[str]:
    """What the strict OpenAPI schema of Kubernetes `version` finds wrong in `doc`."""
    try:
        kubernetes_validate.validate(doc, version, strict=True)
    except kubernetes_validate.ValidationError as error:
        path = ".".join(str(part) for part in error.path)
        return [f"{path}: {error.message}"]
    except kubernetes_validate.SchemaNotFoundError as error:
        return [str(error.message)]
    return []


def operator_errors(doc: dict[str, Any]) -> list[str]:
    """What the Prometheus Operator's CRD schema (as cloudcoil's models) finds wrong."""
    model = _OPERATOR_KINDS.get(str(doc.get("kind")))
    if model is None or not is_operator_kind(doc):
        return [f"no Prometheus Operator schema for {doc.get('apiVersion')} {doc.get('kind')}"]
    try:
        model.model_validate(doc, extra="forbid", by_alias=True, by_name=False)
    except pydantic.ValidationError as error:
        return [
            f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}"
            for item in error.errors()
        ]
    return []


def _compose_schema() -> dict[str, Any]:
    vendor = resources.files("check_jsonschema.builtin_schemas.vendor")
    schema: dict[str, Any] = json.loads(vendor.joinpath("compose-spec.json").read_text("utf-8"))
    return schema


def compose_errors(compose: dict[str, Any]) -> list[str]:
    """What the Compose specification's JSON Schema finds wrong in a compose file."""
    schema = _compose_schema()
    validator_class = jsonschema.validators.validator_for(schema)
    validator = validator_class(schema, format_checker=validator_class.FORMAT_CHECKER)
    return [
        f"{'.'.join(str(part) for part in error.absolute_path) or '<root>'}: {error.message}"
        for error in sorted(validator.iter_errors(compose), key=lambda e: list(e.absolute_path))
    ]


def check_rules(groups: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """`promtool check rules` on a rule file made of `groups` (a PrometheusRule's spec)."""
    with tempfile.TemporaryDirectory(prefix="ragstream-rules-") as tmp:
        path = Path(tmp) / "rules.yml"
        path.write_text(yaml.safe_dump(groups, sort_keys=False), encoding="utf-8")
        return promtool("check", "rules", str(path))


def walk(node: Any) -> Iterator[Any]:
    """Every mapping and list inside `node`, depth first."""
    yield node
    children = node.values() if isinstance(node, dict) else node if isinstance(node, list) else ()
    for child in children:
        yield from walk(child)
