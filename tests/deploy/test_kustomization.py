"""deploy/kubernetes/kustomization.yaml: `kustomize build` makes the standalone form with
its rules, every object valid offline, and an overlay changes the site's values."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.deploy.schemas import (
    KUBERNETES_VERSIONS,
    documents,
    is_operator_kind,
    kubernetes_errors,
    operator_errors,
)
from tests.support.helm import kustomize_build

ROOT = Path(__file__).parents[2]
KUBE = ROOT / "deploy" / "kubernetes"
Doc = dict[str, Any]


def _key(doc: Doc) -> tuple[str, str, str]:
    return doc["apiVersion"], doc["kind"], doc["metadata"]["name"]


def test_the_base_is_the_standalone_form_with_its_rules() -> None:
    built = kustomize_build(KUBE)
    expected = [
        doc
        for name in ("config.yaml", "standalone.yaml", "prometheusrule.yaml")
        for doc in documents(KUBE / name)
    ]
    assert sorted(built, key=_key) == sorted(expected, key=_key)


def _overlay(tmp_path: Path) -> list[Doc]:
    overlay = tmp_path / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "apiVersion": "kustomize.config.k8s.io/v1beta1",
                "kind": "Kustomization",
                "namespace": "rag",
                "resources": [os.path.relpath(KUBE, overlay)],  # a base is named relatively
                "images": [
                    {
                        "name": "ragstream",
                        "newName": "registry.example.com/ragstream",
                        "newTag": "0.1.0-1",
                    }
                ],
                "labels": [{"pairs": {"release": "kube-prometheus-stack"}}],
                "patches": [
                    {
                        "target": {"kind": "Deployment", "name": "ragstream"},
                        "patch": "- op: replace\n  path: /spec/replicas\n  value: 3\n",
                    }
                ],
            }
        )
    )
    return kustomize_build(overlay)


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_an_overlay_builds_valid_objects_with_the_sites_values(
    tmp_path: Path, version: str
) -> None:
    built = _overlay(tmp_path)
    assert len(built) == len(kustomize_build(KUBE))
    for doc in built:
        assert doc["metadata"]["namespace"] == "rag"
        assert doc["metadata"]["labels"]["release"] == "kube-prometheus-stack"
        errors = operator_errors(doc) if is_operator_kind(doc) else kubernetes_errors(doc, version)
        assert errors == [], _key(doc)
    (deployment,) = [d for d in built if d["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 3
    (agent,) = deployment["spec"]["template"]["spec"]["containers"]
    assert agent["image"] == "registry.example.com/ragstream:0.1.0-1"
