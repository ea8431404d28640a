"""The example catalog (examples/catalog): resolutions, profile, and its manifests rendered with Helm."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod

REPO = Path(__file__).resolve().parents[4]
CATALOG = str(REPO / "examples" / "catalog")
TRAINING = {"service": "kind", "accelerator": "h100", "intent": "training"}


def _resolve(criteria, **kw):
    return resolve_mod.resolve(CATALOG, criteria, persist_cache=False, **kw)


def _helm():
    candidate = Path(sys.executable).parent / "helm"
    if candidate.is_file():
        return str(candidate)
    return shutil.which("helm")


@pytest.mark.helm
@pytest.mark.parametrize("component,kind", [("example-operator", "Widget"), ("example-config", "ConfigMap")])
def test_example_manifests_render_with_helm(tmp_path, component, kind):
    helm = _helm()
    if not helm:
        pytest.skip("helm not installed (make helm)")
    out = _resolve(TRAINING)
    comp = [c for c in out["components"] if c["name"] == component][0]
    chart = tmp_path / "chart"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: %s-post\nversion: 0.1.0\n" % component)
    for path in comp["manifest_paths"]:
        shutil.copy(path, str(chart / "templates" / os.path.basename(path)))
    (chart / "values.yaml").write_text(yaml.safe_dump({component: comp["values"]}))
    rendered = subprocess.run([helm, "template", "post", str(chart), "--namespace", comp["namespace"]],
                              check=True, capture_output=True, text=True).stdout
    docs = [d for d in yaml.safe_load_all(rendered) if d]
    assert [d["kind"] for d in docs] == [kind]
    doc = docs[0]
    assert doc["metadata"]["namespace"] == "aicr-demo"
    if kind == "Widget":
        assert doc["apiVersion"] == "example.aicr.io/v1alpha1"
        assert doc["spec"] == {"size": 3, "color": "green", "owner": "example-operator"}
    else:
        assert doc["data"] == {"cluster": "kind", "workload": "training", "logLevel": "info"}
