"""deploy/helm/ragstream: `helm lint` and `helm template` over a matrix of values, every
rendered object validated offline as deploy/kubernetes/ is, the agent's configuration
accepted by `check-config`, and the rules and the dashboard the same as the plain files."""

from __future__ import annotations

import copy
import functools
import json
import subprocess
import sys
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from ragstream import __version__
from ragstream.cli import main
from ragstream.config import load_settings
from tests.deploy.schemas import (
    KUBERNETES_VERSIONS,
    check_rules,
    is_operator_kind,
    kubernetes_errors,
    operator_errors,
)
from tests.grafana.generator import generator
from tests.support.helm import CHART, helm, render

ROOT = Path(__file__).parents[2]
Doc = dict[str, Any]

_SCRAM = {
    "kafka": {
        "bootstrapServers": "kafka-0.kafka:9093,kafka-1.kafka:9093",
        "topics": ["rag-events", "rag-feedback"],
        "deadLetterTopic": "rag-events-dlq",
        "security": {
            "protocol": "SASL_SSL",
            "sasl": {
                "mechanism": "SCRAM-SHA-512",
                "username": "ragstream",
                "passwordSecret": {"name": "kafka-user", "key": "password"},
            },
            "tls": {"caSecret": {"name": "kafka-cluster-ca", "key": "ca.crt"}},
        },
    }
}

# The values cases: each renders, lints and validates.
CASES: dict[str, Doc] = {
    "defaults": {},
    "monitoring": {
        "serviceMonitor": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
        "prometheusRule": {"enabled": True, "labels": {"release": "kube-prometheus-stack"}},
        "grafanaDashboard": {"enabled": True, "annotations": {"grafana_folder": "RAG"}},
    },
    "scram-tls": _SCRAM,
    "oauth-endpoint": {
        "kafka": {
            "security": {
                "protocol": "SASL_SSL",
                "sasl": {
                    "mechanism": "OAUTHBEARER",
                    "oauth": {
                        "tokenEndpoint": "https://sso.example.com/realms/kafka/protocol/openid-connect/token",
                        "clientId": "ragstream",
                        "scope": "kafka",
                        "clientSecretSecret": {"name": "ragstream-oauth"},
                    },
                },
            }
        }
    },
    "oauth-token-file": {
        "kafka": {
            "security": {
                "protocol": "SASL_SSL",
                "sasl": {
                    "mechanism": "OAUTHBEARER",
                    "oauth": {"tokenFile": "/var/run/kafka-token/token"},
                },
            }
        },
        "extraVolumes": [
            {
                "name": "kafka-token",
                "projected": {
                    "sources": [
                        {
                            "serviceAccountToken": {
                                "path": "token",
                                "audience": "kafka",
                                "expirationSeconds": 3600,
                            }
                        }
                    ]
                },
            }
        ],
        "extraVolumeMounts": [
            {"name": "kafka-token", "mountPath": "/var/run/kafka-token", "readOnly": True}
        ],
    },
    "mtls": {
        "kafka": {
            "security": {
                "protocol": "SSL",
                "tls": {
                    "caSecret": {"name": "kafka-ca"},
                    "clientCertSecret": {"name": "ragstream-kafka-tls"},
                    "keyPasswordSecret": {"name": "ragstream-kafka-key"},
                    "checkHostname": False,
                },
            }
        }
    },
    "judge-labels-config": {
        "labels": {"keys": ["app", "index"], "maxValues": 20},
        "judge": {
            "kind": "openai",
            "sampling": {"rate": 0.1, "maxPerSecond": 2, "budgetPerDay": 5.0},
            "openai": {
                "baseUrl": "http://vllm.ml.svc:8000/v1",
                "model": "qwen2.5-7b-instruct",
                "apiKeySecret": {"name": "ragstream-judge"},
            },
        },
        "config": {"windows": {"sizes": ["1m", "5m", "1h"]}, "log_level": "DEBUG"},
    },
    "sidecar": {
        "deployment": {"enabled": False},
        "podMonitor": {
            "enabled": True,
            "selector": {"app.kubernetes.io/name": "rag-service"},
            "labels": {"release": "prom"},
        },
        "prometheusRule": {
            "enabled": True,
            "runbookBaseUrl": "https://wiki.example.com/ragstream",
            "alerts": {
                "RagstreamRetrievalQualityDrift": {"severity": "critical", "for": "5m"},
                "RagstreamFreshnessDecay": {"maxAgeDays": 30},
                "RagstreamConsumerLagHigh": {"messages": 2500000},
            },
        },
        "grafanaDashboard": {"enabled": True},
        **_SCRAM,
    },
    "dashboard-drill-down": {
        "grafanaDashboard": {
            "enabled": True,
            "traces": {
                "url": "http://jaeger.tracing:16686/trace/${__value.raw}",
                "tempoDatasourceUid": "tempo",
            },
            "worstQueries": {"enabled": True, "table": "analytics.query_results"},
        },
    },
    "standalone-podmonitor": {
        "podMonitor": {"enabled": True, "interval": "30s"},
        "prometheusRule": {"enabled": True},
    },
    "names-resources": {
        "fullnameOverride": "rag-quality",
        "image": {"repository": "registry.example.com/ragstream", "tag": "0.1.0-1"},
        "imagePullSecrets": [{"name": "registry"}],
        "replicaCount": 4,
        "commonLabels": {"team": "search"},
        "podLabels": {"tier": "monitoring"},
        "resources": {
            "requests": {"cpu": "500m", "memory": "512Mi"},
            "limits": {"memory": "2Gi"},
        },
        "securityContext": {"runAsUser": 20000, "runAsGroup": 20000},
        "podSecurityContext": {"fsGroup": 20000},
        "podDisruptionBudget": {"enabled": False},
        "service": {"port": 9500},
        "nodeSelector": {"kubernetes.io/os": "linux"},
        "tolerations": [{"key": "monitoring", "operator": "Exists", "effect": "NoSchedule"}],
    },
}


@functools.cache
def _rendered(case: str) -> tuple[Doc, ...]:
    return tuple(render(CASES[case]))


def _docs(case: str) -> list[Doc]:
    return copy.deepcopy(list(_rendered(case)))


def _one(case: str, kind: str) -> Doc:
    found = [d for d in _docs(case) if d["kind"] == kind]
    assert len(found) == 1, f"{case}: {len(found)} {kind}"
    return found[0]


def _configmap(case: str) -> Doc:
    (found,) = [
        d for d in _docs(case) if d["kind"] == "ConfigMap" and "ragstream.yaml" in d.get("data", {})
    ]
    return found


def _values(case: str) -> Doc:
    """The chart's values with the case's merged over them, as Helm merges them."""
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    return _merge(defaults, CASES[case])


def _merge(base: Doc, override: Doc) -> Doc:
    merged = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _merge(merged[key], value)
        else:
            merged[key] = value
    return merged


@pytest.mark.parametrize("case", CASES)
def test_helm_lint_passes_strictly(case: str) -> None:
    done = helm("lint", "--strict", str(CHART), values=CASES[case])
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 chart(s) failed" in done.stdout


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
@pytest.mark.parametrize("case", CASES)
def test_every_rendered_object_is_valid_for_the_api(case: str, version: str) -> None:
    docs = [d for d in _docs(case) if not is_operator_kind(d)]
    assert docs
    for doc in docs:
        assert kubernetes_errors(doc, version) == [], f"{doc['kind']}/{doc['metadata']['name']}"


@pytest.mark.parametrize("case", CASES)
def test_every_rendered_operator_object_is_valid_for_its_crd(case: str) -> None:
    for doc in [d for d in _docs(case) if is_operator_kind(d)]:
        assert operator_errors(doc) == [], f"{doc['kind']}/{doc['metadata']['name']}"


def test_the_cases_render_every_kind_the_chart_has() -> None:
    kinds = {(d["apiVersion"], d["kind"]) for case in CASES for d in _docs(case)}
    assert kinds == {
        ("v1", "ConfigMap"),
        ("v1", "Service"),
        ("apps/v1", "Deployment"),
        ("policy/v1", "PodDisruptionBudget"),
        ("monitoring.coreos.com/v1", "PodMonitor"),
        ("monitoring.coreos.com/v1", "ServiceMonitor"),
        ("monitoring.coreos.com/v1", "PrometheusRule"),
    }
    templates = {p.name for p in (CHART / "templates").glob("*.yaml")}
    assert templates == {
        "configmap.yaml",
        "deployment.yaml",
        "service.yaml",
        "poddisruptionbudget.yaml",
        "servicemonitor.yaml",
        "podmonitor.yaml",
        "prometheusrule.yaml",
        "grafana-dashboard.yaml",
    }


@pytest.mark.parametrize("case", CASES)
def test_the_configuration_passes_check_config_and_names_mounted_files(
    case: str, tmp_path: Path
) -> None:
    config = tmp_path / "ragstream.yaml"
    config.write_text(_configmap(case)["data"]["ragstream.yaml"])
    result = CliRunner().invoke(main, ["check-config", "--config", str(config)])
    assert result.exit_code == 0, result.output
    settings = load_settings(config)
    values = _values(case)
    assert settings.kafka.bootstrap_servers == values["kafka"]["bootstrapServers"]
    assert settings.kafka.topics == values["kafka"]["topics"]
    assert settings.kafka.security.protocol == values["kafka"]["security"]["protocol"]
    assert settings.labels.keys == values["labels"]["keys"]
    assert settings.judge.kind == values["judge"]["kind"]
    assert settings.http.port == values["service"]["port"]
    security = settings.kafka.security
    files = [
        security.sasl_password_file,
        security.sasl_oauth_client_secret_file,
        security.ssl_cafile,
        security.ssl_certfile,
        security.ssl_keyfile,
        security.ssl_password_file,
        settings.judge.openai.api_key_file if settings.judge.kind == "openai" else None,
    ]
    named = {PurePosixPath(str(f)) for f in files if f is not None}
    if not values["deployment"]["enabled"]:
        return  # the sidecar's mounts: test_the_sidecar_snippet_...
    pod = _one(case, "Deployment")["spec"]["template"]["spec"]
    (agent,) = pod["containers"]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounted: set[PurePosixPath] = set()
    for mount in agent["volumeMounts"]:
        secret = volumes[mount["name"]].get("secret")
        if secret is None:
            continue
        assert mount["readOnly"] is True
        assert secret["defaultMode"] == 0o440
        mounted |= {PurePosixPath(mount["mountPath"]) / i["path"] for i in secret["items"]}
    assert mounted == named  # every secret file the agent reads is mounted, and no other
    if security.sasl_oauth_token_file is not None:
        extra = {m["mountPath"] for m in agent["volumeMounts"]}
        assert str(PurePosixPath(str(security.sasl_oauth_token_file)).parent) in extra


def test_the_cases_cover_every_kafka_credential() -> None:
    seen: set[str] = set()
    for case in CASES:
        security = yaml.safe_load(_configmap(case)["data"]["ragstream.yaml"])["kafka"]["security"]
        seen |= set(security)
    assert seen == {
        "protocol",
        "sasl_mechanism",
        "sasl_username",
        "sasl_password_file",
        "sasl_oauth_token_endpoint",
        "sasl_oauth_client_id",
        "sasl_oauth_scope",
        "sasl_oauth_client_secret_file",
        "sasl_oauth_token_file",
        "ssl_cafile",
        "ssl_certfile",
        "ssl_keyfile",
        "ssl_password_file",
        "ssl_check_hostname",
    }


@pytest.mark.parametrize("case", [c for c in CASES if _values(c)["deployment"]["enabled"]])
def test_the_deployment_is_the_documented_standalone_form(case: str) -> None:
    values = _values(case)
    deployment = _one(case, "Deployment")
    spec = deployment["spec"]
    assert spec["replicas"] == values["replicaCount"]
    assert spec["strategy"]["rollingUpdate"]["maxSurge"] == 0
    pod = spec["template"]
    labels = pod["metadata"]["labels"]
    assert all(labels.get(k) == v for k, v in spec["selector"]["matchLabels"].items())
    assert pod["metadata"]["annotations"]["prometheus.io/port"] == str(values["service"]["port"])
    (agent,) = pod["spec"]["containers"]
    assert agent["image"] == f"{values['image']['repository']}:{values['image']['tag'] or '0.1.0'}"
    assert agent["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert agent["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert agent["resources"] == values["resources"]
    assert agent["securityContext"] == _merge(
        yaml.safe_load((CHART / "values.yaml").read_text())["securityContext"],
        values["securityContext"],
    )
    assert agent["securityContext"]["readOnlyRootFilesystem"] is True
    assert agent["securityContext"]["capabilities"] == {"drop": ["ALL"]}
    assert pod["spec"]["automountServiceAccountToken"] is False
    assert pod["spec"]["securityContext"]["fsGroup"] == agent["securityContext"]["runAsGroup"]
    args = agent["args"]
    (config,) = [m for m in agent["volumeMounts"] if m["name"] == "config"]
    assert args[args.index("--config") + 1] == f"{config['mountPath']}/ragstream.yaml"
    service = _one(case, "Service")
    assert all(labels.get(k) == v for k, v in service["spec"]["selector"].items())
    assert service["spec"]["ports"][0]["port"] == values["service"]["port"]
    assert {p["name"] for p in agent["ports"]} == {"ragstream"}
    assert service["spec"]["ports"][0]["targetPort"] == "ragstream"
    for doc in _docs(case):
        assert all(doc["metadata"]["labels"].get(k) == v for k, v in values["commonLabels"].items())


def _scraped(case: str) -> tuple[Doc, dict[str, str]]:
    """The case's one monitor and the labels of the pods it must select."""
    monitors = [d for d in _docs(case) if d["kind"] in ("ServiceMonitor", "PodMonitor")]
    (monitor,) = monitors
    if monitor["kind"] == "ServiceMonitor":
        target = _one(case, "Service")["metadata"]["labels"]
    elif _values(case)["deployment"]["enabled"]:
        target = _one(case, "Deployment")["spec"]["template"]["metadata"]["labels"]
    else:
        target = {"app.kubernetes.io/name": "rag-service"}  # the case's RAG service
    return monitor, target


@pytest.mark.parametrize("case", ["monitoring", "sidecar", "standalone-podmonitor"])
def test_the_monitor_selects_the_agent_and_names_the_job_the_rules_expect(case: str) -> None:
    monitor, target = _scraped(case)
    selector = monitor["spec"]["selector"]["matchLabels"]
    assert all(target.get(k) == v for k, v in selector.items())
    # the job label is the rules' default selector, job="ragstream", in both forms
    endpoints = monitor["spec"].get("endpoints") or monitor["spec"]["podMetricsEndpoints"]
    for endpoint in endpoints:
        assert endpoint["relabelings"] == [
            {"action": "replace", "targetLabel": "job", "replacement": "ragstream"}
        ]
    rules = yaml.safe_load((CHART / "values.yaml").read_text())["prometheusRule"]
    assert rules["selector"] == 'job="ragstream"'
    values = _values(case)
    key = "serviceMonitor" if monitor["kind"] == "ServiceMonitor" else "podMonitor"
    assert all(monitor["metadata"]["labels"][k] == v for k, v in values[key]["labels"].items())
    # the Service's port, or the container's (named to be unique in a pod it joins)
    port = "metrics" if monitor["kind"] == "ServiceMonitor" else "ragstream"
    assert [e["port"] for e in endpoints] == [port]


def test_a_service_monitor_needs_the_deployment() -> None:
    done = helm(
        "template",
        "rag",
        str(CHART),
        values={"deployment": {"enabled": False}, "serviceMonitor": {"enabled": True}},
    )
    assert done.returncode != 0
    assert "serviceMonitor.enabled needs deployment.enabled" in done.stderr


def test_sasl_without_a_mechanism_is_refused_by_name() -> None:
    done = helm(
        "template",
        "rag",
        str(CHART),
        values={"kafka": {"security": {"protocol": "SASL_SSL"}}},
    )
    assert done.returncode != 0
    assert "kafka.security.protocol SASL_SSL needs kafka.security.sasl.mechanism" in done.stderr


def _plain_rules(values: Doc, tmp_path: Path) -> Doc:
    path = tmp_path / "values.yaml"
    path.write_text(yaml.safe_dump(values))
    script = str(ROOT / "scripts" / "prometheus_rule.py")
    done = subprocess.run(
        [sys.executable, script, "--values", str(path), "--output", "-"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    rules: Doc = yaml.safe_load(done.stdout)
    return rules


@pytest.mark.parametrize("case", ["monitoring", "sidecar", "standalone-podmonitor"])
def test_the_chart_rules_are_the_plain_rule_file_made_with_the_same_values(
    case: str, tmp_path: Path
) -> None:
    rule = _one(case, "PrometheusRule")
    assert rule["spec"] == _plain_rules(CASES[case], tmp_path)
    assert all(
        rule["metadata"]["labels"][k] == v
        for k, v in _values(case)["prometheusRule"]["labels"].items()
    )
    if case == "monitoring":  # the defaults: the checked-in rule file
        plain = yaml.safe_load((ROOT / "deploy" / "prometheus" / "ragstream.rules.yml").read_text())
        assert rule["spec"] == plain


@pytest.mark.prometheus
def test_the_chart_rules_with_other_values_pass_promtool() -> None:
    spec = _one("sidecar", "PrometheusRule")["spec"]
    done = check_rules(spec)
    assert done.returncode == 0, done.stdout + done.stderr
    alerts = {r["alert"]: r for g in spec["groups"] for r in g["rules"] if "alert" in r}
    drift = alerts["RagstreamRetrievalQualityDrift"]
    assert (drift["labels"]["severity"], drift["for"]) == ("critical", "5m")
    assert "> 30 * 86400" in alerts["RagstreamFreshnessDecay"]["expr"]
    assert "> 2500000\n" in alerts["RagstreamConsumerLagHigh"]["expr"]
    assert alerts["RagstreamDown"]["annotations"]["runbook_url"] == (
        "https://wiki.example.com/ragstream#ragstreamdown"
    )


def test_the_dashboard_configmap_is_the_dashboard_for_grafanas_sidecar() -> None:
    (configmap,) = [d for d in _docs("monitoring") if d["metadata"]["name"].endswith("-dashboard")]
    assert configmap["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert configmap["metadata"]["annotations"] == {"grafana_folder": "RAG"}
    (text,) = configmap["data"].values()
    dashboard = json.loads((ROOT / "grafana" / "ragstream-dashboard.json").read_text())
    assert json.loads(text) == dashboard
    assert not [d for d in _docs("defaults") if d["metadata"]["name"].endswith("-dashboard")]


def test_the_dashboard_options_render_as_the_generator_writes_them() -> None:
    """traces and worstQueries make the dashboard scripts/grafana_dashboard.py writes with
    --trace-url, --trace-datasource and --worst-queries."""
    gen = generator()
    (configmap,) = [
        d for d in _docs("dashboard-drill-down") if d["metadata"]["name"].endswith("-dashboard")
    ]
    (text,) = configmap["data"].values()
    traces = gen.Traces("http://jaeger.tracing:16686/trace/${__value.raw}", "tempo")
    expected = gen.build(
        gen.DEFAULT_LABEL_KEYS, traces=traces, results_table="analytics.query_results"
    )
    assert json.loads(text) == expected
    for values in (
        {"traces": {"url": "http://jaeger.tracing:16686/trace/${__value.raw}"}},
        {"traces": {"tempoDatasourceUid": "tempo"}},
        {"worstQueries": {"enabled": True}},
    ):
        (doc,) = [
            d
            for d in render({"grafanaDashboard": {"enabled": True, **values}})
            if d["metadata"]["name"].endswith("-dashboard")
        ]
        options = values.get("traces", {})
        expected = gen.build(
            gen.DEFAULT_LABEL_KEYS,
            traces=gen.Traces(options.get("url", ""), options.get("tempoDatasourceUid", "")),
            results_table=gen.RESULTS_TABLE if "worstQueries" in values else "",
        )
        assert json.loads(doc["data"]["ragstream-dashboard.json"]) == expected, values


def test_the_charts_dashboard_is_a_copy_of_the_dashboard() -> None:
    """Helm reads only files inside the chart: it keeps a copy, byte for byte."""
    copied = CHART / "files" / "ragstream-dashboard.json"
    assert copied.read_bytes() == (ROOT / "grafana" / "ragstream-dashboard.json").read_bytes(), (
        "cp grafana/ragstream-dashboard.json deploy/helm/ragstream/files/"
    )


def test_the_chart_is_this_release() -> None:
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    assert chart["appVersion"] == __version__


def _sidecar_snippet() -> Doc:
    text = (ROOT / "docs" / "deploy.md").read_text()
    section = text.split("**The sidecar form with the chart.**", 1)[1]
    snippet: Doc = yaml.safe_load(section.split("```yaml\n", 1)[1].split("```", 1)[0])
    return snippet


@pytest.mark.parametrize("version", KUBERNETES_VERSIONS)
def test_the_sidecar_snippet_is_the_charts_container_in_a_valid_deployment(version: str) -> None:
    snippet = _sidecar_snippet()
    docs = render({}, release="ragstream")
    (deployment,) = [d for d in docs if d["kind"] == "Deployment"]
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    (sidecar,) = snippet["initContainers"]
    expected = copy.deepcopy(container)
    del expected["readinessProbe"]  # a sidecar's readiness is its pod's
    expected["restartPolicy"] = "Always"
    expected["volumeMounts"] = [dict(m, name="ragstream-config") for m in container["volumeMounts"]]
    assert sidecar == expected
    (volume,) = snippet["volumes"]
    configmaps = [d["metadata"]["name"] for d in docs if d["kind"] == "ConfigMap"]
    assert volume["configMap"]["name"] in configmaps
    # the snippet in a RAG service's Deployment, beside its own container
    labels = {"app.kubernetes.io/name": "rag-service"}
    service = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "rag-service", "labels": labels},
        "spec": {
            "selector": {"matchLabels": labels},
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    **snippet,
                    "containers": [{"name": "rag-service", "image": "rag-service:1.0"}],
                },
            },
        },
    }
    assert kubernetes_errors(service, version) == []
    assert kubernetes_errors(service, "1.27.0")  # no native sidecars before 1.29


@pytest.mark.parametrize(
    ("values", "found"),
    [
        (
            {"prometheusRule": {"alerts": {"RagstreamDown": {"severity": "page"}}}},
            "at '/prometheusRule/alerts/RagstreamDown/severity': value must be one of",
        ),
        ({"serviceMonitors": {"enabled": True}}, "additional properties 'serviceMonitors'"),
        ({"kafka": {"security": {"protocol": "TLS"}}}, "at '/kafka/security/protocol'"),
        ({"replicaCount": "2"}, "at '/replicaCount'"),
        (
            {"grafanaDashboard": {"traces": {"url": "http://jaeger:16686/trace/"}}},
            "at '/grafanaDashboard/traces/url'",
        ),
        (
            {"grafanaDashboard": {"worstQueries": {"table": "results; DROP TABLE x"}}},
            "at '/grafanaDashboard/worstQueries/table'",
        ),
    ],
)
def test_the_values_schema_refuses_a_misspelt_key_or_a_wrong_value(values: Doc, found: str) -> None:
    done = helm("template", "rag", str(CHART), values=values)
    assert done.returncode != 0
    assert found in done.stderr


def test_numbers_given_with_set_render_as_from_a_values_file(tmp_path: Path) -> None:
    """`--set` makes integers and strings ("0.25") of what `-f` makes floats: the rules
    read alike, and the values schema takes both."""
    args = ["prometheusRule.enabled=true"]
    args += ["prometheusRule.alerts.RagstreamConsumerLagHigh.messages=2500000"]
    args += ["prometheusRule.alerts.RagstreamJudgeFailures.ratio=0.25"]
    done = helm("template", "rag", str(CHART), *[a for arg in args for a in ("--set", arg)])
    assert done.returncode == 0, done.stderr
    (rule,) = [d for d in yaml.safe_load_all(done.stdout) if d and d["kind"] == "PrometheusRule"]
    values = {
        "prometheusRule": {
            "alerts": {
                "RagstreamConsumerLagHigh": {"messages": 2500000},
                "RagstreamJudgeFailures": {"ratio": 0.25},
            }
        }
    }
    assert rule["spec"] == _plain_rules(values, tmp_path)
    alerts = {r["alert"]: r for g in rule["spec"]["groups"] for r in g["rules"] if "alert" in r}
    assert "> 2500000\n" in alerts["RagstreamConsumerLagHigh"]["expr"]
    assert "> 0.25\n" in alerts["RagstreamJudgeFailures"]["expr"]
