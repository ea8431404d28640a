"""kubectl v1.37.2 against the lab: apply (client-side and server-side), diff, wait, rollout status, get -l.

kubectl acts as the least-privilege ``release`` identity (a client certificate of the lab CA):
every call below is one the shipped roles grant; the first test shows what a call they do not
grant looks like. Manifests carry no namespace: kubectl's ``-n`` puts them in the test's own.
"""

import json

import pytest
import yaml

from aicr_lab.controlplane import stages

from fidelity_clients import Cli, wait_until

pytestmark = pytest.mark.helm


def deployment(name="web", replicas=1, image="registry.example.aicr.io/web:1", labels=None, pod_annotations=None):
    labels = dict({"app": name, "tier": "front"}, **(labels or {}))
    template_meta = {"labels": {"app": name}}
    if pod_annotations:
        template_meta["annotations"] = pod_annotations
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": template_meta,
                "spec": {"containers": [{"name": "main", "image": image, "ports": [{"containerPort": 8080}]}]},
            },
        },
    }


def configmap(name, data, labels=None):
    # no `labels: {}` when there are none: the API server stores no empty map, so kubectl's three-way
    # merge would find `labels: {}` missing from the live object and report every re-apply "configured"
    metadata = {"name": name, "labels": labels} if labels else {"name": name}
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata, "data": data}


def manifest(*docs):
    return yaml.safe_dump_all(docs)


def settled(kubectl, ns, name):
    """Wait until the Deployment controller has nothing left to write: observed, available, NewReplicaSetAvailable.

    Before that the controller still updates .status (a real one does it in several writes), which a
    resourceVersion comparison or a diff would pick up."""
    def probe():
        deploy = kubectl.json("get", "deployment", name, "-n", ns, "--show-managed-fields")
        status = deploy.get("status", {})
        progressing = [c for c in status.get("conditions", []) if c["type"] == "Progressing"]
        done = (status.get("observedGeneration") == deploy["metadata"]["generation"]
                and status.get("availableReplicas", 0) == status.get("updatedReplicas", -1) == deploy["spec"]["replicas"]
                and progressing and progressing[0].get("reason") == "NewReplicaSetAvailable")
        return deploy if done else None
    return wait_until(probe, 60, "deployment %s to settle" % name)


def test_a_call_the_identity_is_not_granted_is_forbidden_by_rbac(kubectl, kube, client_env, ns):
    assert kubectl.run("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}").stdout == kube.user("release")
    assert kubectl.run("auth", "can-i", "create", "deployments", "-n", ns).stdout.strip() == "yes"
    denied = kubectl.run("auth", "can-i", "create", "clusterroles", check=False)
    assert denied.returncode == 1 and denied.stdout.strip() == "no"
    nobody = Cli("kubectl", kube.kubeconfig_for("nobody"), client_env)
    result = nobody.run("get", "configmaps", "-n", ns, check=False)
    assert result.returncode == 1
    assert 'User "%s" cannot list resource "configmaps"' % kube.user("nobody") in result.stderr and "Forbidden" in result.stderr


def test_client_side_apply_create_unchanged_configure(kubectl, ns):
    docs = manifest(configmap("settings", {"a": "1"}), deployment())
    out = kubectl.run("apply", "-n", ns, "-f", "-", stdin=docs).stdout
    assert "configmap/settings created" in out and "deployment.apps/web created" in out
    out = kubectl.run("apply", "-n", ns, "-f", "-", stdin=docs).stdout
    assert "configmap/settings unchanged" in out and "deployment.apps/web unchanged" in out
    out = kubectl.run("apply", "-n", ns, "-f", "-", stdin=manifest(configmap("settings", {"a": "2", "b": "3"}), deployment(replicas=3))).stdout
    assert "configmap/settings configured" in out and "deployment.apps/web configured" in out
    cm = kubectl.json("get", "configmap", "settings", "-n", ns)
    assert cm["data"] == {"a": "2", "b": "3"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in cm["metadata"]["annotations"]
    # a key dropped from the applied manifest is pruned from the live object (three-way merge)
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=manifest(configmap("settings", {"b": "3"})))
    assert kubectl.json("get", "configmap", "settings", "-n", ns)["data"] == {"b": "3"}
    deploy = kubectl.json("get", "deployment", "web", "-n", ns)
    assert deploy["spec"]["replicas"] == 3 and deploy["metadata"]["generation"] == 2


def test_server_side_apply_conflict_and_force(kubectl, kube, ns):
    out = kubectl.run("apply", "-n", ns, "--server-side", "--field-manager", "team-a", "-f", "-", stdin=manifest(deployment(replicas=2))).stdout
    assert "deployment.apps/web serverside-applied" in out
    kubectl.run("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s")
    before = settled(kubectl, ns, "web")
    mark = kube.audit_mark()
    kubectl.run("apply", "-n", ns, "--server-side", "--field-manager", "team-a", "-f", "-", stdin=manifest(deployment(replicas=2)))
    deploy = kubectl.json("get", "deployment", "web", "-n", ns, "--show-managed-fields")
    assert deploy["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"], "an identical apply writes nothing"
    assert deploy["metadata"]["managedFields"] == before["metadata"]["managedFields"]
    # the apply did reach the server (as the release identity): a PATCH answered 200 that stored nothing
    applies = kube.audit(since=mark, verb="patch", resource="deployments", namespace=ns, user=kube.user("release"))
    assert [(e["name"], e["code"]) for e in applies] == [("web", 200)]
    assert "team-a" in {m["manager"] for m in deploy["metadata"]["managedFields"] if m["operation"] == "Apply"}
    clash = kubectl.run("apply", "-n", ns, "--server-side", "--field-manager", "team-b", "-f", "-", stdin=manifest(deployment(replicas=5)), check=False)
    assert clash.returncode != 0
    assert "conflict" in clash.stderr.lower() and "team-a" in clash.stderr and ".spec.replicas" in clash.stderr
    assert kubectl.json("get", "deployment", "web", "-n", ns)["spec"]["replicas"] == 2
    kubectl.run("apply", "-n", ns, "--server-side", "--field-manager", "team-b", "--force-conflicts", "-f", "-", stdin=manifest(deployment(replicas=5)))
    deploy = kubectl.json("get", "deployment", "web", "-n", ns, "--show-managed-fields")
    assert deploy["spec"]["replicas"] == 5
    owners = {m["manager"]: json.dumps(m.get("fieldsV1", {})) for m in deploy["metadata"]["managedFields"]}
    assert '"f:replicas"' in owners["team-b"]
    assert '"f:replicas"' not in owners.get("team-a", "")


def test_diff_reports_no_change_then_the_change(kubectl, ns):
    docs = manifest(deployment(replicas=1))
    kubectl.run("apply", "-n", ns, "--server-side", "-f", "-", stdin=docs)
    # status settles first: diff compares the live object with a dry-run, a status update in between shows up
    kubectl.run("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s")
    settled(kubectl, ns, "web")
    same = kubectl.run("diff", "-n", ns, "--server-side", "-f", "-", stdin=docs, check=False)
    assert same.returncode == 0 and same.stdout == "", same.stderr
    changed = kubectl.run("diff", "-n", ns, "--server-side", "-f", "-", stdin=manifest(deployment(replicas=4)), check=False)
    assert changed.returncode == 1, changed.stderr
    assert "-  replicas: 1" in changed.stdout and "+  replicas: 4" in changed.stdout
    assert kubectl.json("get", "deployment", "web", "-n", ns)["spec"]["replicas"] == 1, "diff must not change anything"
    client_side = kubectl.run("diff", "-n", ns, "-f", "-", stdin=manifest(configmap("new", {"k": "v"})), check=False)
    assert client_side.returncode == 1 and "+  k: v" in client_side.stdout


def test_wait_available_rollout_status_and_label_selection(kubectl, ns):
    docs = manifest(deployment("web", replicas=2), deployment("api", replicas=1, labels={"tier": "back"}),
                    configmap("front-settings", {"x": "1"}, labels={"tier": "front"}))
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=docs)
    kubectl.run("wait", "--for=condition=Available", "deployment/web", "deployment/api", "-n", ns, "--timeout=60s")
    out = kubectl.run("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s").stdout
    assert 'deployment "web" successfully rolled out' in out
    kubectl.run("set", "image", "deployment/web", "main=registry.example.aicr.io/web:2", "-n", ns)
    out = kubectl.run("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s").stdout
    assert 'deployment "web" successfully rolled out' in out
    assert kubectl.json("get", "deployment", "web", "-n", ns)["status"]["updatedReplicas"] == 2
    names = kubectl.run("get", "deployments,configmaps", "-n", ns, "-l", "tier=front", "-o", "name").stdout.split()
    assert sorted(names) == ["configmap/front-settings", "deployment.apps/web"]
    names = kubectl.run("get", "deployments", "-n", ns, "-l", "tier!=front", "-o", "name").stdout.split()
    assert names == ["deployment.apps/api"]
    names = kubectl.run("get", "deployments", "-n", ns, "-l", "tier in (front,back),app", "-o", "name").stdout.split()
    assert sorted(names) == ["deployment.apps/api", "deployment.apps/web"]
    pods = kubectl.json("get", "pods", "-n", ns, "-l", "app=web")["items"]
    assert len(pods) == 2 and all(p["status"]["phase"] == "Running" for p in pods)


def test_wait_times_out_on_a_never_ready_deployment(kubectl, ns):
    # kwok runs the pod but never marks it Ready: the Deployment controller never reports Available
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=manifest(deployment("stuck", pod_annotations={stages.NEVER_READY: "true"})))
    wait_until(lambda: [p for p in kubectl.json("get", "pods", "-n", ns, "-l", "app=stuck")["items"]
                        if p.get("status", {}).get("phase") == "Running"], 60, "the stuck pod to run")
    result = kubectl.run("wait", "--for=condition=Available", "deployment/stuck", "-n", ns, "--timeout=3s", check=False)
    assert result.returncode != 0 and "timed out" in result.stderr
    # the pod runs, and neither it nor its container is Ready
    pods = kubectl.json("get", "pods", "-n", ns, "-l", "app=stuck")["items"]
    assert [p["status"]["phase"] for p in pods] == ["Running"]
    assert [c for p in pods for c in p["status"].get("conditions", []) if c["type"] == "Ready" and c["status"] == "True"] == []
    assert [c["ready"] for p in pods for c in p["status"]["containerStatuses"]] == [False]


@pytest.fixture
def widgets(kubectl, ns, repo_root, widgets_crd):  # pylint: disable=unused-argument
    """The example Widget CRD, Established, and one Widget w1 of size 4 (the release identity may install that CRD)."""
    crd = repo_root / "examples" / "charts" / "example-crds" / "crds" / "widgets.example.aicr.io.yaml"
    kubectl.run("apply", "-f", str(crd))
    kubectl.run("wait", "--for=condition=Established", "crd/widgets.example.aicr.io", "--timeout=30s")
    widget = {"apiVersion": "example.aicr.io/v1alpha1", "kind": "Widget", "metadata": {"name": "w1", "namespace": ns}, "spec": {"size": 4}}
    kubectl.run("apply", "-f", "-", stdin=manifest(widget))
    return widget


def test_custom_resources_defaulted_and_validated(kubectl, ns, widgets):
    assert kubectl.json("get", "widget", "w1", "-n", ns)["spec"] == {"size": 4, "color": "green"}, "the schema default for color"
    assert kubectl.run("get", "wdg", "-n", ns, "-o", "name").stdout.split() == ["widget.example.aicr.io/w1"], "short name"
    bad = dict(widgets, metadata={"name": "w2", "namespace": ns}, spec={"size": 4, "color": "purple"})
    result = kubectl.run("apply", "-f", "-", stdin=manifest(bad), check=False)
    assert result.returncode != 0 and "spec.color" in result.stderr and "Unsupported value" in result.stderr
    too_big = dict(widgets, metadata={"name": "w3", "namespace": ns}, spec={"size": 11})
    result = kubectl.run("apply", "-f", "-", stdin=manifest(too_big), check=False)
    assert result.returncode != 0 and "spec.size" in result.stderr


def test_table_output_uses_the_crd_printer_columns(kubectl, ns, widgets):
    table = kubectl.run("get", "widgets", "-n", ns).stdout.splitlines()
    assert table[0].split()[:3] == ["NAME", "SIZE", "COLOR"]
    assert table[1].split()[:3] == ["w1", "4", "green"]


def test_delete_cascade_background_and_orphan(kubectl, ns):
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=manifest(deployment("bg"), deployment("orphaned", labels={"app": "orphaned"})))
    kubectl.run("rollout", "status", "deployment/bg", "deployment/orphaned", "-n", ns, "--timeout=60s")
    kubectl.run("delete", "deployment", "bg", "-n", ns, "--cascade=background", "--wait", "--timeout=30s")
    kubectl.run("wait", "--for=delete", "replicasets,pods", "-l", "app=bg", "-n", ns, "--timeout=30s")
    kubectl.run("delete", "deployment", "orphaned", "-n", ns, "--cascade=orphan", "--wait", "--timeout=30s")
    replicasets = kubectl.json("get", "replicasets", "-n", ns, "-l", "app=orphaned")["items"]
    assert len(replicasets) == 1 and not replicasets[0]["metadata"].get("ownerReferences"), "orphaned: kept, owner reference removed"


def test_delete_cascade_foreground(kubectl, ns):
    kubectl.run("apply", "-n", ns, "-f", "-", stdin=manifest(deployment("fg")))
    kubectl.run("rollout", "status", "deployment/fg", "-n", ns, "--timeout=60s")
    # the garbage collector deletes the ReplicaSet, and it its pods, before the Deployment goes
    kubectl.run("delete", "deployment", "fg", "-n", ns, "--cascade=foreground", "--wait", "--timeout=60s")
    assert kubectl.json("get", "replicasets,pods", "-n", ns, "-l", "app=fg")["items"] == []
