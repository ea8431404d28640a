"""Drift on the lab (issue 39, item 1), through ansible-playbook as the least-privilege identity ``release``, with helm 3 and
helm 4: the example recipe's example-monitoring and example-agent releases are installed (the agent's DaemonSet pinned to
``kubernetes.io/os: linux`` nodes by an override); an HorizontalPodAutoscaler (minReplicas 2) targets the exporter
Deployment and the lab's HPA controller scales it; the lab's admin edits the exporter Deployment's part-of label, deletes
the scrape ConfigMap and scales the agent DaemonSet down to no node (its nodeSelector set to match nothing).
``drift: report`` names those three (JSON pointer, manager) - never the HPA's replicas - and writes nothing (audit log);
``drift: correct`` re-applies exactly those three objects (no helm) and leaves the HPA's replicas alone. (That a corrected
stack reports no drift again: the unit tests.)"""

import json
import subprocess
from pathlib import Path

import pytest

from lab_support import audit_mutations, example_catalog, wait_until

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
EXAMPLE_REPO = "https://charts.aicr.example/examples"
IDENTITY = "release"
OTHERS = ["example-crds", "example-operator", "example-config", "example-jobs"]
SELECTOR = "/spec/template/spec/nodeSelector/kubernetes.io~1os"

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


def kubectl(kube, *argv, stdin=None):
    """kubectl as the lab's admin (the other identity that drifts the objects)."""
    return subprocess.run([str(BIN / "kubectl"), "--kubeconfig", kube.kubeconfig] + list(argv), input=stdin, capture_output=True, text=True,
                          check=True).stdout


def get(kube, kind, name=None):
    ns_args = ["-n", kube.namespace, "-o", "json"]
    doc = json.loads(kubectl(kube, "get", kind, *([name] if name else []), *ns_args))
    return doc if name else doc["items"]


def autoscale(kube, deployment):
    """An HPA (minReplicas 2) on ``deployment``: the lab's kube-controller-manager scales it up through the scale
    subresource as it would in any cluster (below minReplicas it needs no metrics); returns once it has."""
    kubectl(kube, "apply", "-n", kube.namespace, "-f", "-", stdin=json.dumps({
        "apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": deployment},
        "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": deployment}, "minReplicas": 2, "maxReplicas": 2}}))
    wait_until(lambda: get(kube, "deployment", deployment)["spec"]["replicas"] == 2, 60, "the HPA to scale %s to 2" % deployment)


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_report_names_an_edited_a_deleted_and_a_scaled_down_object_not_hpa_replicas_then_correct_restores_exactly_those(
        run_playbook, kube, tmp_path, example_repo, helm):
    params = {"catalog": str(example_catalog(tmp_path, kube.namespace)), "criteria": {"service": "kind", "accelerator": "h100", "intent": "training"},
              "kubeconfig": kube.kubeconfig_for(IDENTITY), "helm_binary": str(BIN / helm), "mirrors": {EXAMPLE_REPO: example_repo.url},
              "lease_namespace": kube.namespace, "stack": kube.namespace, "skip": OTHERS,
              "overrides": {"example-agent": {"values": {"nodeSelector": {"kubernetes.io/os": "linux"}}}}}
    first = run_playbook("release_converge.yml", extravars=params)
    assert first.rc == 0, first.stdout[-5000:]
    ns = kube.namespace
    deployment = get(kube, "deployment")[0]
    name, part_of = deployment["metadata"]["name"], deployment["metadata"]["labels"]["app.kubernetes.io/part-of"]
    autoscale(kube, name)  # replicas the HPA owns: never drift
    # a field helm set that starts no rollout
    kubectl(kube, "patch", "deployment", name, "-n", ns, "--type", "json", "--field-manager", "lab-admin",
            "-p", json.dumps([{"op": "replace", "path": "/metadata/labels/app.kubernetes.io~1part-of", "value": "drifted"}]))
    configmap = "example-monitoring-scrape-config"
    kubectl(kube, "delete", "configmap", configmap, "-n", ns)
    daemonset = get(kube, "daemonset")[0]["metadata"]["name"]
    # a DaemonSet has no replicas: it is scaled down to no node by a nodeSelector that matches none
    kubectl(kube, "patch", "daemonset", daemonset, "-n", ns, "--type", "json", "--field-manager", "lab-admin",
            "-p", json.dumps([{"op": "replace", "path": SELECTOR, "value": "none"}]))

    mark = kube.audit_mark()
    report = run_playbook("release_converge.yml", extravars=dict(params, drift="report"))
    assert report.rc == 0, report.stdout[-5000:]
    res = report.result("Roll out")
    assert res["changed"] is False
    drifts = dict((c["name"], c["drift"]) for c in res["components"])
    found = drifts["example-monitoring"]
    assert sorted((e["kind"], e["name"], e["state"]) for e in found) == [("ConfigMap", configmap, "missing"), ("Deployment", name, "drifted")]
    edited = [e for e in found if e["kind"] == "Deployment"][0]
    assert edited["fields"] == [{"path": "/metadata/labels/app.kubernetes.io~1part-of", "manager": "lab-admin"}], "the HPA's replicas are no drift"
    assert [(e["kind"], e["name"], e["state"], e["fields"]) for e in drifts["example-agent"]] == [
        ("DaemonSet", daemonset, "drifted", [{"path": SELECTOR, "manager": "lab-admin"}])]
    assert audit_mutations(kube, mark, IDENTITY) == [], "drift: report writes nothing"

    mark = kube.audit_mark()
    correct = run_playbook("release_converge.yml", extravars=dict(params, drift="correct"))
    assert correct.rc == 0, correct.stdout[-5000:]
    res = correct.result("Roll out")
    assert sorted(a.split(": ")[1].split(" (")[0] for a in res["actions"] if a.startswith("correct drift")) == [
        "ConfigMap %s/%s" % (ns, configmap), "DaemonSet %s/%s" % (ns, daemonset), "Deployment %s/%s" % (ns, name)]
    written = set((e["verb"], e.get("resource"), e.get("name")) for e in audit_mutations(kube, mark, IDENTITY) if e.get("resource") != "leases")
    assert written == {("patch", "deployments", name), ("patch", "configmaps", configmap), ("patch", "daemonsets", daemonset)}, written
    assert not [e for e in kube.audit(since=mark, user=kube.user(IDENTITY)) if "helm" in e.get("userAgent", "").lower()], "never a helm upgrade"
    live = get(kube, "deployment", name)
    assert live["metadata"]["labels"]["app.kubernetes.io/part-of"] == part_of
    assert live["spec"]["replicas"] == 2, "the HPA's replicas are never forced back"
    assert get(kube, "configmap", configmap)["data"]["scrape.yaml"]
    assert get(kube, "daemonset", daemonset)["spec"]["template"]["spec"]["nodeSelector"] == {"kubernetes.io/os": "linux"}
