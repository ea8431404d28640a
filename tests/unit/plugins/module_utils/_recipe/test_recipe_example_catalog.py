"""The example catalog (examples/catalog): resolutions, profile, and its manifests rendered with Helm."""

import os
from pathlib import Path

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod

REPO = Path(__file__).resolve().parents[5]
CATALOG = str(REPO / "examples" / "catalog")
CHARTS = REPO / "examples" / "charts"
TRAINING = {"service": "kind", "accelerator": "h100", "intent": "training"}
INFERENCE = {"service": "kind", "accelerator": "h100", "intent": "inference"}


def _resolve(criteria, **kw):
    return resolve_mod.resolve(CATALOG, criteria, persist_cache=False, **kw)


@pytest.mark.parametrize("criteria,applied,order", [
    (TRAINING, ["base", "kind", "kind-training", "h100-kind-training"],
     ["example-crds", "example-config", "example-monitoring", "example-jobs", "example-operator", "example-agent"]),
    (INFERENCE, ["base", "kind", "h100-kind-inference"],
     ["example-crds", "example-config", "example-monitoring", "example-operator", "example-agent"]),
    ({"service": "kind", "intent": "training"}, ["base", "kind", "kind-training"],
     ["example-crds", "example-config", "example-monitoring", "example-jobs", "example-operator"]),
    ({"service": "kind"}, ["base", "kind"], ["example-crds", "example-config", "example-monitoring", "example-operator"]),
])
def test_example_recipes(criteria, applied, order):
    out = _resolve(criteria)
    assert out["recipe"]["metadata"]["appliedOverlays"] == applied
    assert out["recipe"]["deploymentOrder"] == order


def test_example_components_point_at_example_charts():
    out = _resolve(TRAINING)
    comps = dict((c["name"], c) for c in out["components"])
    assert set(comps) == {"example-crds", "example-operator", "example-agent", "example-monitoring", "example-jobs", "example-config"}
    for name, comp in comps.items():
        assert comp["namespace"] == "aicr-demo"
        if name == "example-config":
            assert comp["manifest_only"] and comp["chart"] == "" and comp["repository"] == ""
            continue
        assert comp["repository"] == "https://charts.aicr.example/examples"
        assert comp["version"] == "0.1.0"
        assert (CHARTS / comp["chart"] / "Chart.yaml").is_file(), "no example chart %s" % comp["chart"]
        chart = yaml.safe_load((CHARTS / comp["chart"] / "Chart.yaml").read_text())
        assert chart["version"] == comp["version"]
    assert comps["example-jobs"]["chart"] == "example-hooks"
    assert comps["example-operator"]["dependencies"] == ["example-crds"]
    assert comps["example-agent"]["dependencies"] == ["example-operator"]
    assert comps["example-jobs"]["dependencies"] == ["example-monitoring"]
    assert comps["example-config"]["dependencies"] == ["example-crds"]
    assert comps["example-monitoring"]["dependencies"] == []
    assert comps["example-operator"]["manifest_files"] == ["components/example-operator/manifests/widget.yaml"]
    assert os.path.isfile(comps["example-operator"]["manifest_paths"][0])
    refs = dict((r["name"], r) for r in out["recipe"]["componentRefs"])
    assert "example-operator-health-check" in refs["example-operator"]["healthCheckAsserts"]


def test_example_profile():
    default = _resolve(TRAINING)
    assert default["recipe"]["metadata"]["selectedProfile"]["value"] == "observe"
    agent = [c for c in default["components"] if c["name"] == "example-agent"][0]
    assert agent["values"]["env"] == {"AGENT_MODE": "observe", "AGENT_INTERVAL": "15s"}
    enforce = _resolve(TRAINING, profile="agentMode=enforce")
    agent = [c for c in enforce["components"] if c["name"] == "example-agent"][0]
    assert agent["values"]["env"]["AGENT_MODE"] == "enforce"
    assert {"name": "NodeTopology.gpu-nodes.label", "value": "example.aicr.io/agent-enforce=true"} in enforce["recipe"]["constraints"]


def test_example_inference_values():
    out = _resolve(INFERENCE)
    op = [c for c in out["components"] if c["name"] == "example-operator"][0]
    assert op["values_files"] == ["components/example-operator/values.yaml", "components/example-operator/values-inference.yaml"]
    assert op["values"]["replicaCount"] == 2 and op["values"]["widget"] == {"name": "demo-widget", "size": 5, "color": "blue"}
    assert {"name": "K8s.node.allocatable-gpus", "value": ">= 1"} in out["recipe"]["constraints"]


def test_example_catalog_rejects_uncovered_os():
    with pytest.raises(AicrError) as err:
        _resolve({"service": "kind", "os": "ubuntu"})
    assert err.value.msg == "no recipe provides os 'ubuntu' for criteria(service=kind, os=ubuntu)"
