"""examples/charts: lint and render with the real helm 3 and 4; schemas, subchart values, hooks."""

import json
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest
import yaml

CHARTS = Path(__file__).resolve().parents[4] / "examples" / "charts"
NAMES = ["example-agent", "example-crds", "example-hooks", "example-monitoring", "example-operator"]
HELMS = ["helm3", "helm4"]

pytestmark = pytest.mark.helm


def helm(binary, *args, check=True):
    result = subprocess.run([str(Path(sys.executable).parent / binary)] + [str(a) for a in args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    if check:
        assert result.returncode == 0, result.stderr
    return result


def render(binary, chart, *args):
    out = helm(binary, "template", "rel", CHARTS / chart, "--namespace", "ns1", *args).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


def by_kind(docs):
    found = {}
    for doc in docs:
        found.setdefault(doc["kind"], []).append(doc)
    return found


def test_the_catalog_names_exist_with_version_0_1_0():
    assert sorted(p.name for p in CHARTS.iterdir() if (p / "Chart.yaml").is_file()) == NAMES
    for name in NAMES + ["example-monitoring/charts/example-exporter"]:
        meta = yaml.safe_load((CHARTS / name / "Chart.yaml").read_text())
        assert (meta["apiVersion"], meta["version"]) == ("v2", "0.1.0")
        values = (CHARTS / name / "values.yaml").read_text()
        assert values.count("\n#") + values.startswith("#") >= 2, "%s/values.yaml documents its values in comments" % name


@pytest.mark.parametrize("binary", HELMS)
@pytest.mark.parametrize("chart", NAMES)
def test_lint_strict(binary, chart):
    result = helm(binary, "lint", "--strict", CHARTS / chart, check=False)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("binary", HELMS)
def test_operator_renders_deployment_service_serviceaccount_from_values(binary):
    kinds = by_kind(render(binary, "example-operator", "--set", "replicaCount=2", "--set-string", "nodeSelector.gpu=true",
                           "--set", "tolerations[0].key=k", "--set", "tolerations[0].operator=Exists", "--set", "image.tag=9.9"))
    assert sorted(kinds) == ["Deployment", "Service", "ServiceAccount"]
    deploy = kinds["Deployment"][0]
    pod = deploy["spec"]["template"]["spec"]
    assert deploy["spec"]["replicas"] == 2
    assert pod["nodeSelector"] == {"gpu": "true"}
    assert pod["tolerations"] == [{"key": "k", "operator": "Exists"}]
    assert pod["containers"][0]["image"] == "registry.example.aicr.io/example-operator:9.9"
    assert pod["containers"][0]["resources"]["requests"] == {"cpu": "10m", "memory": "64Mi"}
    assert pod["serviceAccountName"] == kinds["ServiceAccount"][0]["metadata"]["name"]
    assert kinds["Service"][0]["spec"]["selector"] == deploy["spec"]["selector"]["matchLabels"]
    assert all(d["metadata"]["namespace"] == "ns1" for docs in kinds.values() for d in docs)


@pytest.mark.parametrize("binary", HELMS)
@pytest.mark.parametrize("chart,bad,message", [
    ("example-operator", "replicaCount=many", "replicaCount"),
    ("example-operator", "image.pullPolicy=Sometimes", "pullPolicy"),
    ("example-hooks", "settings.mode=lax", "mode"),
])
def test_values_schema_rejects_bad_values(binary, chart, bad, message):
    result = helm(binary, "template", "rel", CHARTS / chart, "--set", bad, check=False)
    assert result.returncode != 0 and message in result.stderr


def test_shipped_schemas_accept_the_default_values():
    schemas = sorted(CHARTS.glob("*/values.schema.json"))
    assert [p.parent.name for p in schemas] == ["example-hooks", "example-operator"]
    for path in schemas:
        schema = json.loads(path.read_text())
        jsonschema.validators.validator_for(schema).check_schema(schema)
        jsonschema.validate(yaml.safe_load((path.parent / "values.yaml").read_text()), schema)


def test_crd_is_namespaced_with_status_subresource_and_a_real_schema():
    crd = yaml.safe_load((CHARTS / "example-crds" / "crds" / "widgets.example.aicr.io.yaml").read_text())
    spec = crd["spec"]
    assert crd["metadata"]["name"] == "widgets.example.aicr.io"
    assert (spec["group"], spec["scope"], spec["names"]["kind"]) == ("example.aicr.io", "Namespaced", "Widget")
    (version,) = spec["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    assert version["subresources"] == {"status": {}}
    props = version["schema"]["openAPIV3Schema"]["properties"]
    assert props["spec"]["properties"]["size"]["type"] == "integer"
    assert props["spec"]["properties"]["color"]["enum"] == ["red", "green", "blue"]
    assert props["status"]["properties"]["conditions"]["type"] == "array"


@pytest.mark.parametrize("binary", HELMS)
def test_crds_chart_renders_a_widget_and_includes_the_crd_on_request(binary):
    kinds = by_kind(render(binary, "example-crds", "--set", "widget.size=7", "--include-crds"))
    assert sorted(kinds) == ["CustomResourceDefinition", "Widget"]
    assert kinds["Widget"][0]["spec"] == {"size": 7, "color": "green"}
    assert "Widget" not in by_kind(render(binary, "example-crds", "--set", "widget.create=false"))


@pytest.mark.parametrize("binary", HELMS)
def test_agent_is_a_daemonset_tolerating_gpu_nodes(binary):
    kinds = by_kind(render(binary, "example-agent", "--set", "nodeSelector.role=gpu"))
    assert sorted(kinds) == ["DaemonSet"]
    pod = kinds["DaemonSet"][0]["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"role": "gpu"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in pod["tolerations"]


@pytest.mark.parametrize("binary", HELMS)
def test_monitoring_passes_values_to_its_subchart(binary):
    kinds = by_kind(render(binary, "example-monitoring", "--set", "example-exporter.replicaCount=3", "--set", "example-exporter.port=9555",
                           "--set", "global.scrapeInterval=15s"))
    assert sorted(kinds) == ["ConfigMap", "Deployment", "Service"]
    deploy = kinds["Deployment"][0]
    assert deploy["metadata"]["name"] == "rel-example-exporter"
    assert deploy["spec"]["replicas"] == 3
    assert deploy["spec"]["template"]["metadata"]["annotations"]["example.aicr.io/scrape-interval"] == "15s"
    assert deploy["spec"]["template"]["spec"]["containers"][0]["ports"][0]["containerPort"] == 9555
    assert "rel-example-exporter.ns1.svc:9555" in kinds["ConfigMap"][0]["data"]["scrape.yaml"]
    disabled = by_kind(render(binary, "example-monitoring", "--set", "example-exporter.enabled=false"))
    assert sorted(disabled) == ["ConfigMap"]


@pytest.mark.parametrize("binary", HELMS)
def test_hooks_chart_has_a_post_install_upgrade_job_with_delete_policy(binary):
    kinds = by_kind(render(binary, "example-hooks"))
    assert sorted(kinds) == ["ConfigMap", "Job"]
    annotations = kinds["Job"][0]["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "post-install,post-upgrade"
    assert annotations["helm.sh/hook-delete-policy"] == "before-hook-creation,hook-succeeded"
    assert kinds["ConfigMap"][0]["data"]["features"] == "metrics,tracing"


def test_templates_are_not_yaml_files_for_the_linters():
    """Go templates are not YAML: ansible-test's yamllint parses every *.yaml in the collection."""
    templates = [p for p in CHARTS.rglob("*") if p.parent.name == "templates" and p.is_file()]
    assert templates
    assert not [p for p in templates if p.suffix in (".yaml", ".yml")]
    for path in CHARTS.rglob("*.yaml"):
        assert len(list(yaml.safe_load_all(path.read_text()))) == 1, path
