"""kubectl 1.31 against the emulator: apply (client-side and server-side), diff, wait, rollout status, get -l."""

import json

import pytest
import yaml

pytestmark = pytest.mark.helm

NS = "kubectl-fid"


def deployment(name="web", replicas=1, image="registry.example.aicr.io/web:1", labels=None):
    labels = dict({"app": name, "tier": "front"}, **(labels or {}))
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": NS, "labels": labels},
        "spec": {
            "replicas": replicas,
            "selector": {"matchLabels": {"app": name}},
            "template": {
                "metadata": {"labels": {"app": name}},
                "spec": {"containers": [{"name": "main", "image": image, "ports": [{"containerPort": 8080}]}]},
            },
        },
    }


def configmap(name, data, labels=None):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": NS, "labels": labels or {}}, "data": data}


def manifest(*docs):
    return yaml.safe_dump_all(docs)


@pytest.fixture
def ns(kubectl):
    kubectl.run("create", "namespace", NS)
    return NS


def test_client_side_apply_create_unchanged_configure(kubectl, ns):
    docs = manifest(configmap("settings", {"a": "1"}), deployment())
    out = kubectl.run("apply", "-f", "-", stdin=docs).stdout
    assert "configmap/settings created" in out and "deployment.apps/web created" in out
    out = kubectl.run("apply", "-f", "-", stdin=docs).stdout
    assert "configmap/settings unchanged" in out and "deployment.apps/web unchanged" in out
    out = kubectl.run("apply", "-f", "-", stdin=manifest(configmap("settings", {"a": "2", "b": "3"}), deployment(replicas=3))).stdout
    assert "configmap/settings configured" in out and "deployment.apps/web configured" in out
    cm = kubectl.json("get", "configmap", "settings", "-n", ns)
    assert cm["data"] == {"a": "2", "b": "3"}
    assert "kubectl.kubernetes.io/last-applied-configuration" in cm["metadata"]["annotations"]
    # a key dropped from the applied manifest is pruned from the live object (three-way merge)
    kubectl.run("apply", "-f", "-", stdin=manifest(configmap("settings", {"b": "3"})))
    assert kubectl.json("get", "configmap", "settings", "-n", ns)["data"] == {"b": "3"}
    deploy = kubectl.json("get", "deployment", "web", "-n", ns)
    assert deploy["spec"]["replicas"] == 3 and deploy["metadata"]["generation"] == 2


def test_server_side_apply_conflict_and_force(kubectl, ns):
    out = kubectl.run("apply", "--server-side", "--field-manager", "team-a", "-f", "-", stdin=manifest(deployment(replicas=2))).stdout
    assert "deployment.apps/web serverside-applied" in out
    kubectl.run("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s")
    settled = kubectl.json("get", "deployment", "web", "-n", ns, "--show-managed-fields")
    kubectl.run("apply", "--server-side", "--field-manager", "team-a", "-f", "-", stdin=manifest(deployment(replicas=2)))
    deploy = kubectl.json("get", "deployment", "web", "-n", ns, "--show-managed-fields")
    assert deploy["metadata"]["resourceVersion"] == settled["metadata"]["resourceVersion"], "an identical apply writes nothing"
    assert deploy["metadata"]["managedFields"] == settled["metadata"]["managedFields"]
    assert "team-a" in {m["manager"] for m in deploy["metadata"]["managedFields"] if m["operation"] == "Apply"}
    clash = kubectl.run("apply", "--server-side", "--field-manager", "team-b", "-f", "-", stdin=manifest(deployment(replicas=5)), check=False)
    assert clash.returncode != 0
    assert "conflict" in clash.stderr.lower() and "team-a" in clash.stderr and ".spec.replicas" in clash.stderr
    assert kubectl.json("get", "deployment", "web", "-n", ns)["spec"]["replicas"] == 2
    kubectl.run("apply", "--server-side", "--field-manager", "team-b", "--force-conflicts", "-f", "-", stdin=manifest(deployment(replicas=5)))
    deploy = kubectl.json("get", "deployment", "web", "-n", ns, "--show-managed-fields")
    assert deploy["spec"]["replicas"] == 5
    owners = {m["manager"]: json.dumps(m.get("fieldsV1", {})) for m in deploy["metadata"]["managedFields"]}
    assert '"f:replicas"' in owners["team-b"]
    assert '"f:replicas"' not in owners.get("team-a", "")


def test_diff_reports_no_change_then_the_change(kubectl, ns):
    docs = manifest(deployment(replicas=1))
    kubectl.run("apply", "--server-side", "-f", "-", stdin=docs)
    # status settles first: diff compares the live object with a dry-run, a status update in between shows up (on a real cluster too)
    kubectl.run("rollout", "status", "deployment/web", "-n", ns, "--timeout=60s")
    same = kubectl.run("diff", "--server-side", "-f", "-", stdin=docs, check=False)
    assert same.returncode == 0 and same.stdout == "", same.stderr
    changed = kubectl.run("diff", "--server-side", "-f", "-", stdin=manifest(deployment(replicas=4)), check=False)
    assert changed.returncode == 1, changed.stderr
    assert "-  replicas: 1" in changed.stdout and "+  replicas: 4" in changed.stdout
    assert kubectl.json("get", "deployment", "web", "-n", ns)["spec"]["replicas"] == 1, "diff must not change anything"
    client_side = kubectl.run("diff", "-f", "-", stdin=manifest(configmap("new", {"k": "v"})), check=False)
    assert client_side.returncode == 1 and "+  k: v" in client_side.stdout


def test_wait_available_rollout_status_and_label_selection(kubectl, ns):
    docs = manifest(deployment("web", replicas=2), deployment("api", replicas=1, labels={"tier": "back"}),
                    configmap("front-settings", {"x": "1"}, labels={"tier": "front"}))
    kubectl.run("apply", "-f", "-", stdin=docs)
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
    never = deployment("stuck")
    never["metadata"]["annotations"] = {"emulator.aicr.io/never-ready": "true"}
    kubectl.run("apply", "-f", "-", stdin=manifest(never))
    result = kubectl.run("wait", "--for=condition=Available", "deployment/stuck", "-n", ns, "--timeout=3s", check=False)
    assert result.returncode != 0 and "timed out" in result.stderr


@pytest.fixture
def widgets(kubectl, ns, repo_root):
    """The example Widget CRD, Established, and one Widget w1 of size 4."""
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
    kubectl.run("apply", "-f", "-", stdin=manifest(deployment("bg"), deployment("orphaned", labels={"app": "orphaned"})))
    kubectl.run("rollout", "status", "deployment/bg", "deployment/orphaned", "-n", ns, "--timeout=60s")
    kubectl.run("delete", "deployment", "bg", "-n", ns, "--cascade=background", "--wait", "--timeout=30s")
    kubectl.run("wait", "--for=delete", "replicasets,pods", "-l", "app=bg", "-n", ns, "--timeout=30s")
    kubectl.run("delete", "deployment", "orphaned", "-n", ns, "--cascade=orphan", "--wait", "--timeout=30s")
    replicasets = kubectl.json("get", "replicasets", "-n", ns, "-l", "app=orphaned")["items"]
    assert len(replicasets) == 1 and not replicasets[0]["metadata"].get("ownerReferences"), "orphaned: kept, owner reference removed"


def test_delete_cascade_foreground(kubectl, ns):
    kubectl.run("apply", "-f", "-", stdin=manifest(deployment("fg")))
    kubectl.run("rollout", "status", "deployment/fg", "-n", ns, "--timeout=60s")
    kubectl.run("delete", "deployment", "fg", "-n", ns, "--cascade=foreground", "--wait", "--timeout=20s")
    assert kubectl.json("get", "replicasets,pods", "-n", ns, "-l", "app=fg")["items"] == []
