"""The chart renders, lints, validates against Kubernetes' schemas and passes checkov.

Rendering and linting use Helm's own Go SDK (helm-python-sdk ships it as a native library, so no
helm binary is needed). checkov lives in its own pinned tool environment (`make checkov`), because
its pins conflict with ours.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import helm_python as helm
import kubernetes_validate
import pytest
import yaml

from gateway.config_schema import render as render_schema
from gateway.config_schema import values_schema
from gateway.settings import load_settings

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "helm" / "llm-gateway"
PRODUCTION = CHART / "values-production.yaml"
CHECKOV = REPO / ".tools" / "checkov" / "bin" / "checkov"
KUBERNETES_VERSION = "1.37.0"
NAMESPACE = "llm-gateway"
# Custom resources have no schema in kubernetes-validate; they are checked by hand below.
CUSTOM_KINDS = {"ServiceMonitor"}


def _values(name: str) -> dict[str, Any]:
    if name == "default":
        return {}
    loaded: dict[str, Any] = yaml.safe_load(PRODUCTION.read_text())
    return loaded


def render(values: dict[str, Any]) -> dict[str, str]:
    with helm.Chart.load(CHART) as chart:
        chart.validate_schema(values)
        return chart.render(values, name="llm-gateway", namespace=NAMESPACE, is_install=True)


def manifests(rendered: dict[str, str]) -> Iterator[dict[str, Any]]:
    for path, text in rendered.items():
        if path.endswith(".yaml"):
            yield from (doc for doc in yaml.safe_load_all(text) if doc)


def by_kind(values: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The first object of each kind (the migration hook's ConfigMap comes after the pods')."""
    objects: dict[str, dict[str, Any]] = {}
    for doc in manifests(render(values)):
        objects.setdefault(doc["kind"], doc)
    return objects


def by_name(values: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in manifests(render(values))}


@pytest.mark.parametrize("values_name", ["default", "production"])
def test_every_manifest_is_valid_kubernetes(values_name: str) -> None:
    docs = list(manifests(render(_values(values_name))))
    assert docs
    for doc in docs:
        if doc["kind"] in CUSTOM_KINDS:
            continue
        kubernetes_validate.validate(doc, KUBERNETES_VERSION, strict=True)


@pytest.mark.parametrize("values_name", ["default", "production"])
def test_lint_finds_nothing_worse_than_info(values_name: str) -> None:
    report = helm.lint(CHART, _values(values_name), strict=True, namespace=NAMESPACE)
    assert report["errors"] == []
    assert [m for m in report["messages"] if m["severity"] >= 2] == []


def test_default_values_render_the_expected_objects() -> None:
    kinds = set(by_kind({}))
    assert kinds == {
        "ConfigMap",
        "Deployment",
        "HorizontalPodAutoscaler",
        "Job",
        "NetworkPolicy",
        "PodDisruptionBudget",
        "Service",
        "ServiceAccount",
    }


def test_production_values_add_ingress_and_service_monitor_and_pin_the_digest() -> None:
    objects = by_kind(_values("production"))
    monitor = objects["ServiceMonitor"]
    service = objects["Service"]
    assert (
        monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    )
    assert monitor["spec"]["endpoints"][0] == {
        "port": "http",
        "path": "/metrics",
        "interval": "15s",
    }
    assert objects["Ingress"]["spec"]["tls"][0]["secretName"] == "llm-gateway-tls"
    container = objects["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    assert "@sha256:" in container["image"]


def test_deployment_is_hardened_and_drains_within_the_grace_period() -> None:
    objects = by_kind(_values("production"))
    pod = objects["Deployment"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    security = container["securityContext"]
    assert pod["automountServiceAccountToken"] is False
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert security["readOnlyRootFilesystem"] is True
    assert security["capabilities"]["drop"] == ["ALL"]
    assert security["seccompProfile"] == {"type": "RuntimeDefault"}
    assert {"name": "tmp", "mountPath": "/tmp"} in container["volumeMounts"]
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    env = {e["name"]: e for e in container["env"]}
    drain = int(env["GATEWAY_SHUTDOWN_DRAIN_SECONDS"]["value"])
    pause = container["lifecycle"]["preStop"]["sleep"]["seconds"]
    assert pod["terminationGracePeriodSeconds"] > pause + drain
    assert container["args"][:1] == ["serve"]
    assert "0.0.0.0" in container["args"]


def test_the_usage_spool_is_an_empty_dir_the_gateway_is_pointed_at() -> None:
    # An emptyDir outlives the container: restarted after a kill -9 or an OOM kill, the gateway
    # finds the entries the killed process had not written yet.
    pod = by_kind({})["Deployment"]["spec"]["template"]["spec"]
    container = pod["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    mounts = {m["name"]: m["mountPath"] for m in container["volumeMounts"]}
    volumes = {v["name"]: v for v in pod["volumes"]}
    assert env["GATEWAY_USAGE_SPOOL_DIR"] == mounts["usage-spool"]
    assert mounts["usage-spool"] == "/var/lib/llm-gateway/usage-spool"
    assert "sizeLimit" in volumes["usage-spool"]["emptyDir"]

    off = by_kind({"usageSpool": {"enabled": False}})["Deployment"]["spec"]["template"]["spec"]
    assert "GATEWAY_USAGE_SPOOL_DIR" not in {e["name"] for e in off["containers"][0]["env"]}
    assert "usage-spool" not in {v["name"] for v in off["volumes"]}


def test_secrets_come_from_secret_refs_never_the_config_map() -> None:
    objects = by_kind(_values("production"))
    container = objects["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    refs = {
        e["name"]: e["valueFrom"]["secretKeyRef"]["name"]
        for e in container["env"]
        if "valueFrom" in e
    }
    assert refs == {
        "GATEWAY_DATABASE_URL": "llm-gateway-database",
        "GATEWAY_ADMIN_KEY": "llm-gateway-admin",
        "OPENAI_API_KEY": "llm-gateway-providers",
        "ANTHROPIC_API_KEY": "llm-gateway-providers",
    }
    config = yaml.safe_load(objects["ConfigMap"]["data"]["gateway.yaml"])
    assert "database_url" not in config
    assert {m["api_key_env"] for m in config["models"] if "api_key_env" in m} <= set(refs)


def test_migration_job_is_a_pre_install_and_pre_upgrade_hook() -> None:
    job = by_kind({})["Job"]
    annotations = job["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    container = job["spec"]["template"]["spec"]["containers"][0]
    assert container["args"] == ["migrate", "--config", "/etc/llm-gateway/gateway.yaml"]


@pytest.mark.parametrize("values_name", ["default", "production"])
def test_the_migration_job_mounts_the_same_config_as_the_pods(values_name: str) -> None:
    objects = by_name(_values(values_name))
    job = objects[("Job", "llm-gateway-migrate")]
    pod = job["spec"]["template"]["spec"]
    mount = next(m for m in pod["containers"][0]["volumeMounts"] if m["name"] == "config")
    assert mount["mountPath"] == "/etc/llm-gateway"
    volume = next(v for v in pod["volumes"] if v["name"] == "config")
    hook_config = objects[("ConfigMap", volume["configMap"]["name"])]
    # A pre-install hook runs before the release's own ConfigMap exists: its copy is a hook too,
    # created before the Job (lower weight).
    annotations = hook_config["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert int(annotations["helm.sh/hook-weight"]) < int(
        job["metadata"]["annotations"]["helm.sh/hook-weight"]
    )
    assert hook_config["data"] == objects[("ConfigMap", "llm-gateway")]["data"]


def test_the_committed_config_schema_is_generated_from_the_settings_model() -> None:
    committed = (CHART / "values.schema.json").read_text()
    regenerated = render_schema(values_schema(json.loads(committed)))
    assert committed == regenerated, (
        "values.schema.json is stale: run "
        "`.venv/bin/python -m gateway.config_schema helm/llm-gateway/values.schema.json`"
    )


@pytest.mark.parametrize(
    "config",
    [
        {"log_levle": "debug"},
        {"log_level": "verbose"},
        {"models": [{"name": "x", "provider": "skynet"}]},
        {"tool_loop": {"max_tool_rounds": "many"}},
        {"database_pool": {"size": 0}},
    ],
)
def test_a_bad_config_block_fails_schema_validation_and_lint(config: dict[str, Any]) -> None:
    with helm.Chart.load(CHART) as chart, pytest.raises(helm.HelmValuesError):
        chart.validate_schema({"config": config})
    report = helm.lint(CHART, {"config": config}, strict=True, namespace=NAMESPACE)
    assert report["errors"]


def test_the_shipped_gateway_config_passes_the_chart_schema() -> None:
    shipped = yaml.safe_load((REPO / "config" / "gateway.yaml").read_text())
    with helm.Chart.load(CHART) as chart:
        chart.validate_schema({"config": shipped})


def test_schema_refuses_secrets_in_the_config_map() -> None:
    with helm.Chart.load(CHART) as chart, pytest.raises(helm.HelmValuesError):
        chart.validate_schema({"config": {"database_url": "postgresql://u:p@db/x"}})


def test_a_grace_period_shorter_than_the_drain_is_refused() -> None:
    values = {
        "shutdown": {"drainSeconds": 60, "preStopSeconds": 5, "terminationGracePeriodSeconds": 30}
    }
    with pytest.raises(helm.HelmRenderError, match="terminationGracePeriodSeconds"):
        render(values)


def test_checkov_passes_on_the_rendered_manifests(tmp_path: Path) -> None:
    if not CHECKOV.exists():
        if os.environ.get("CI"):
            pytest.fail("checkov is not installed: run `make checkov`")
        pytest.skip("checkov is not installed here: `make test` installs it (`make checkov`)")
    for name in ("default", "production"):
        out = tmp_path / name
        out.mkdir()
        for doc in manifests(render(_values(name))):
            kind, obj = doc["kind"].lower(), doc["metadata"]["name"]
            (out / f"{kind}-{obj}.yaml").write_text(yaml.safe_dump(doc))
    result = subprocess.run(
        [
            str(CHECKOV),
            "--config-file",
            str(CHART / "checkov.yaml"),
            "-d",
            str(tmp_path),
            "-o",
            "json",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "BC_SKIP_MAPPING": "TRUE"},
        check=False,
    )
    report = json.loads(result.stdout)
    failed = [
        f"{c['check_id']} {c['resource']} {c['file_path']}"
        for c in report["results"]["failed_checks"]
    ]
    assert failed == []
    assert result.returncode == 0, result.stderr[-2000:]
    assert report["summary"]["passed"] > 100


@pytest.mark.parametrize("values_name", ["default", "production"])
def test_the_config_map_is_a_valid_gateway_config(values_name: str, tmp_path: Path) -> None:
    objects = by_kind(_values(values_name))
    path = tmp_path / "gateway.yaml"
    path.write_text(objects["ConfigMap"]["data"]["gateway.yaml"])
    settings = load_settings(path)  # raises ConfigError naming any bad key
    assert settings.models


def test_trusted_proxies_reach_the_gateway_config_of_pods_and_migrations(tmp_path: Path) -> None:
    objects = by_name({"forwardedAllowIps": ["10.42.0.0/16", "192.0.2.7"]})
    texts = {
        objects[("ConfigMap", name)]["data"]["gateway.yaml"]
        for name in ("llm-gateway", "llm-gateway-migrate")
    }
    [text] = texts  # the same in both
    path = tmp_path / "gateway.yaml"
    path.write_text(text)
    assert load_settings(path).forwarded_allow_ips == ["10.42.0.0/16", "192.0.2.7"]
    assert "forwarded_allow_ips" not in by_kind({})["ConfigMap"]["data"]["gateway.yaml"]
    both = {"forwardedAllowIps": ["10.0.0.1"], "config": {"forwarded_allow_ips": ["10.0.0.2"]}}
    with pytest.raises(helm.HelmRenderError, match="not both"):
        render(both)
    with helm.Chart.load(CHART) as chart, pytest.raises(helm.HelmValuesError):
        chart.validate_schema({"forwardedAllowIps": ["*"]})


def test_extra_env_is_rendered_after_the_secret_refs() -> None:
    values = {"extraEnv": [{"name": "GATEWAY_DATABASE_POOL__SIZE", "value": "20"}]}
    deployment = by_kind(values)["Deployment"]
    kubernetes_validate.validate(deployment, KUBERNETES_VERSION, strict=True)
    env = deployment["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[-1] == {"name": "GATEWAY_DATABASE_POOL__SIZE", "value": "20"}


def test_workers_default_to_the_cpu_limit_or_are_set() -> None:
    def args(values: dict[str, Any]) -> list[str]:
        container = by_kind(values)["Deployment"]["spec"]["template"]["spec"]["containers"][0]
        found: list[str] = container["args"]
        return found

    assert "--workers" not in args({})  # the CLI reads the pod's CPU limit
    assert args({"workers": 3})[-2:] == ["--workers", "3"]
    with pytest.raises(Exception, match="workers"):
        render({"workers": 0})


def test_the_mcp_token_key_comes_from_its_secret() -> None:
    values = {"mcpTokenKey": {"existingSecret": "llm-gateway-mcp-tokens", "key": "token-key"}}
    container = by_kind(values)["Deployment"]["spec"]["template"]["spec"]["containers"][0]
    env = {e["name"]: e for e in container["env"]}
    assert env["GATEWAY_MCP_TOKEN_KEY"]["valueFrom"]["secretKeyRef"] == {
        "name": "llm-gateway-mcp-tokens",
        "key": "token-key",
    }
    assert "GATEWAY_MCP_TOKEN_KEY" not in {
        e["name"]
        for e in by_kind({})["Deployment"]["spec"]["template"]["spec"]["containers"][0]["env"]
    }
