"""Drift on the lab (issue 39, item 1), through ansible-playbook as the least-privilege identity ``release``: the example
recipe's example-monitoring release is installed; the lab's admin edits its exporter Deployment's part-of label and deletes its
scrape ConfigMap; ``drift: report`` names both (JSON pointer, manager) and writes nothing (audit log); ``drift: correct``
re-applies exactly those two objects (no helm). (That a corrected stack reports no drift again: the unit tests.)"""

import json
import subprocess
from pathlib import Path

import pytest

from lab_support import audit_mutations, example_catalog

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
EXAMPLE_REPO = "https://charts.aicr.example/examples"
IDENTITY = "release"
OTHERS = ["example-crds", "example-operator", "example-agent", "example-config", "example-jobs"]

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


def kubectl(kube, *argv):
    """kubectl as the lab's admin (the other identity that drifts the objects)."""
    return subprocess.run([str(BIN / "kubectl"), "--kubeconfig", kube.kubeconfig] + list(argv), capture_output=True, text=True, check=True).stdout


def test_report_names_an_edited_and_a_deleted_object_and_writes_nothing_then_correct_restores_exactly_those(run_playbook, kube, tmp_path, example_repo):
    params = {"catalog": str(example_catalog(tmp_path, kube.namespace)), "criteria": {"service": "kind", "accelerator": "h100", "intent": "training"},
              "kubeconfig": kube.kubeconfig_for(IDENTITY), "helm_binary": str(BIN / "helm3"), "mirrors": {EXAMPLE_REPO: example_repo.url},
              "lease_namespace": kube.namespace, "stack": kube.namespace, "skip": OTHERS}
    first = run_playbook("release_converge.yml", extravars=params)
    assert first.rc == 0, first.stdout[-5000:]
    ns = kube.namespace
    deployment = json.loads(kubectl(kube, "get", "deployment", "-n", ns, "-o", "json"))["items"][0]
    name, part_of = deployment["metadata"]["name"], deployment["metadata"]["labels"]["app.kubernetes.io/part-of"]
    # a field helm set that starts no rollout (the test waits on nothing but the runs)
    kubectl(kube, "patch", "deployment", name, "-n", ns, "--type", "json", "--field-manager", "lab-admin",
            "-p", json.dumps([{"op": "replace", "path": "/metadata/labels/app.kubernetes.io~1part-of", "value": "drifted"}]))
    configmap = "example-monitoring-scrape-config"
    kubectl(kube, "delete", "configmap", configmap, "-n", ns)

    mark = kube.audit_mark()
    report = run_playbook("release_converge.yml", extravars=dict(params, drift="report"))
    assert report.rc == 0, report.stdout[-5000:]
    res = report.result("Roll out")
    assert res["changed"] is False
    found = dict((c["name"], c["drift"]) for c in res["components"])["example-monitoring"]
    assert sorted((e["kind"], e["name"], e["state"]) for e in found) == [("ConfigMap", configmap, "missing"), ("Deployment", name, "drifted")]
    edited = [e for e in found if e["kind"] == "Deployment"][0]
    assert edited["fields"] == [{"path": "/metadata/labels/app.kubernetes.io~1part-of", "manager": "lab-admin"}]
    assert audit_mutations(kube, mark, IDENTITY) == [], "drift: report writes nothing"

    mark = kube.audit_mark()
    correct = run_playbook("release_converge.yml", extravars=dict(params, drift="correct"))
    assert correct.rc == 0, correct.stdout[-5000:]
    res = correct.result("Roll out")
    assert sorted(a.split(": ")[1].split(" (")[0] for a in res["actions"] if a.startswith("correct drift")) == [
        "ConfigMap %s/%s" % (ns, configmap), "Deployment %s/%s" % (ns, name)]
    written = set((e["verb"], e.get("resource"), e.get("name")) for e in audit_mutations(kube, mark, IDENTITY) if e.get("resource") != "leases")
    assert written == {("patch", "deployments", name), ("patch", "configmaps", configmap)}, written
    assert not [e for e in kube.audit(since=mark, user=kube.user(IDENTITY)) if "helm" in e.get("userAgent", "").lower()], "never a helm upgrade"
    live = json.loads(kubectl(kube, "get", "deployment", name, "-n", ns, "-o", "json"))
    assert live["metadata"]["labels"]["app.kubernetes.io/part-of"] == part_of
    assert json.loads(kubectl(kube, "get", "configmap", configmap, "-n", ns, "-o", "json"))["data"]["scrape.yaml"]
