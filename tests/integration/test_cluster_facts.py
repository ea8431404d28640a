"""cluster_facts on the lab's real API server, as the least-privilege ``facts`` identity, then recipe_resolve with its snapshot.

The test adds GPU nodes of its own (kwok keeps them Ready) with NFD-style OS labels, GPU feature discovery labels and an
``nvidia.com/gpu`` capacity, through the admin client; the collection only reads, and the audit log shows it.
"""

import json
import os
import subprocess
import uuid

import pytest

from lab_support import wait_until
from aicr_lab.controlplane.cluster import node_object

GPU_LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
              "nvidia.com/cuda.driver-version.full": "580.95.05",
              "feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
              "feature.node.kubernetes.io/system-os_release.VERSION_ID": "24.04"}


@pytest.fixture
def gpu_nodes(kube):
    tag = uuid.uuid4().hex[:6]
    names = {"new": "facts-%s-new" % tag, "old": "facts-%s-old" % tag}
    kernels = {"new": "6.8.0-1028-aws", "old": "6.5.0-1024-aws"}
    for index, (kind, name) in enumerate(sorted(names.items())):
        spec = {"name": name, "labels": dict(GPU_LABELS, **{"kubernetes.io/hostname": name, "aicr-lab/facts-test": tag}),
                "capacity": {"cpu": "8", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": "8"},
                "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}],
                "nodeInfo": {"kernelVersion": kernels[kind], "osImage": "Ubuntu 24.04.2 LTS"}}
        kube.rest.create("/api/v1/nodes", node_object(spec, 150 + index))

    def ready():
        for name in names.values():
            node = kube.get("/api/v1/nodes/%s" % name) or {}
            if not any(c["type"] == "Ready" and c["status"] == "True" for c in (node.get("status") or {}).get("conditions") or []):
                return False
        return True

    wait_until(ready, 60, "nodes %s Ready" % ", ".join(names.values()))
    yield names
    for name in names.values():
        kube.rest.delete("/api/v1/nodes/%s" % name)


def _data(snapshot, mtype, subtype):
    for m in snapshot["measurements"]:
        if m["type"] == mtype:
            for st in m["subtypes"]:
                if st["subtype"] == subtype:
                    return st["data"]
    return {}


def test_facts_then_resolve_against_the_cluster(run_playbook, kube, gpu_nodes, shared_dir, tmp_path):
    mark = kube.audit_mark()
    extravars = {"kubeconfig": kube.kubeconfig_for("facts"), "catalog": str(shared_dir / "aicr" / "catalog"),
                 "cache_dir": str(tmp_path / "cache"), "facts_nodes": [gpu_nodes["new"]],
                 "criteria": {"service": "eks", "intent": "training"}, "snapshot_file": str(tmp_path / "snapshot.yaml")}
    run = run_playbook("cluster_facts.yml", extravars=extravars)
    assert run.rc == 0, run.stdout[-4000:]
    facts = run.result("Read the cluster")
    assert facts["changed"] is False and facts["source"] == "cluster"
    snap = facts["snapshot"]
    assert snap["kind"] == "Snapshot" and snap["apiVersion"] == "aicr.run/v1alpha2"
    version = kube.get("/version")["gitVersion"]
    assert _data(snap, "K8s", "server")["version"] == version
    assert _data(snap, "OS", "release") == {"ID": "ubuntu", "VERSION_ID": "24.04"}
    assert _data(snap, "OS", "sysctl") == {"/proc/sys/kernel/osrelease": "6.8.0-1028-aws"}
    assert _data(snap, "GPU", "device") == {"gpu.model": "NVIDIA-H100-80GB-HBM3", "gpu-count": 8, "driver": "580.95.05"}
    node_data = _data(snap, "K8s", "node")
    assert node_data["source-node"] == gpu_nodes["new"] and node_data["container-runtime-name"] == "containerd"
    labels = _data(snap, "NodeTopology", "label")
    assert labels["aicr-lab/facts-test"].split("|")[1] == ",".join(sorted(gpu_nodes.values()))
    # AICR's fingerprint: kwok nodes carry no providerID, so no service; every node of the cluster is counted
    node_count = _data(snap, "NodeTopology", "summary")["node-count"]
    assert facts["criteria"] == {"accelerator": "h100", "os": "ubuntu", "nodes": node_count} and node_count >= 2
    assert [n["name"] for n in facts["nodes"]] == [gpu_nodes["new"]]

    plan = run.result("Resolve against the snapshot")
    assert plan.get("failed") is not True, plan.get("msg")
    assert plan["recipe_name"] == "h100-eks-ubuntu-training" and plan["relaxed_dimensions"] == []
    assert plan["snapshot_criteria"] == facts["criteria"] and plan["recipe"]["criteria"]["nodes"] == node_count
    assert "excludedOverlays" not in plan["recipe"]["metadata"]
    assert run.result("Read the saved snapshot back")["snapshot"] == snap

    # read-only: the facts identity made no mutating call
    assert kube.audit(since=mark, mutating=True, user=kube.user("facts")) == []

    # the node with the old kernel: the os-ubuntu mixin's kernel floor excludes the ubuntu leaf; the task says why
    run = run_playbook("cluster_facts.yml", extravars=dict(extravars, facts_nodes=[gpu_nodes["old"]]), check=True)
    assert run.rc == 0, run.stdout[-4000:]
    plan = run.result("Resolve against the snapshot")
    assert "recipe" not in plan and "\n" not in plan["msg"]  # failed (failed_when: false keeps the play going)
    assert {"name": "h100-eks-ubuntu-training", "reason": "mixin-constraint-failed"} in plan["excludedOverlays"]
    assert {"overlay": "h100-eks-ubuntu-training", "constraint": "OS.sysctl./proc/sys/kernel/osrelease", "expected": ">= 6.8",
            "actual": "6.5.0-1024-aws", "reason": "mixin-constraint-failed: expected >= 6.8, got 6.5.0-1024-aws"} in plan["constraintWarnings"]

    # both nodes: they disagree on the kernel, so the reading is absent and named in conflicts
    run = run_playbook("cluster_facts.yml", extravars=dict(extravars, facts_nodes=sorted(gpu_nodes.values())))
    facts = run.result("Read the cluster")
    assert "sysctl" not in [st["subtype"] for m in facts["snapshot"]["measurements"] if m["type"] == "OS" for st in m["subtypes"]]
    assert any(c["reading"] == "OS.sysctl./proc/sys/kernel/osrelease" for c in facts["conflicts"])


AICR_BINARY = os.environ.get("AICR_ORACLE_AICR")


@pytest.mark.skipif(not AICR_BINARY, reason="AICR_ORACLE_AICR is not set: the AICR CLI v0.19.0, built outside the clone "
                                            "(docs/modules/recipe_resolve.md, Conformance), is needed to compare with")
@pytest.mark.parametrize("criteria", [{"service": "eks", "intent": "training"}, {"intent": "inference"}, {}], ids=["eks-training", "inference", "none"])
def test_a_lab_snapshot_resolves_as_aicr_does(run_playbook, kube, gpu_nodes, shared_dir, tmp_path, criteria):
    """Issue 38's acceptance: cluster_facts' Snapshot of the lab, saved as a file, gives recipe_resolve and
    ``aicr recipe --snapshot`` the same RecipeResult (or the same refusal)."""
    snapshot_file = tmp_path / "snapshot.yaml"
    extravars = {"kubeconfig": kube.kubeconfig_for("facts"), "catalog": str(shared_dir / "aicr" / "catalog"), "cache_dir": str(tmp_path / "cache"),
                 "facts_nodes": [gpu_nodes["new"]], "criteria": criteria, "snapshot_file": str(snapshot_file)}
    run = run_playbook("cluster_facts_aicr.yml", extravars=extravars)
    assert run.rc == 0, run.stdout[-4000:]
    plan = run.result("Resolve against the snapshot file")
    argv = [AICR_BINARY, "--log-json", "recipe", "--snapshot", str(snapshot_file), "--format", "json"]
    for dim, value in sorted(criteria.items()):
        argv += ["--" + dim, value]
    aicr = subprocess.run(argv, cwd=str(tmp_path), env={"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "KUBECONFIG": os.devnull},
                          capture_output=True, check=False, timeout=120)
    if aicr.returncode == 0:
        assert plan.get("failed") is not True, plan.get("msg")
        assert plan["recipe"] == json.loads(aicr.stdout.decode("utf-8"))
    else:
        failed = [json.loads(line) for line in aicr.stderr.decode("utf-8").splitlines() if line.startswith("{")]
        error = [r["error"] for r in failed if r.get("msg") == "command failed"][0]
        assert "recipe" not in plan and "] " + plan["msg"] in error


def test_facts_needs_its_role(run_playbook, kube, shared_dir, tmp_path):
    run = run_playbook("cluster_facts.yml", extravars={"kubeconfig": kube.kubeconfig_for("nobody"), "catalog": str(shared_dir / "aicr" / "catalog"),
                                                       "cache_dir": str(tmp_path / "cache")})
    assert run.rc != 0
    assert run.failed_tasks == ["Read the cluster"]
    failed = run.result("Read the cluster")
    assert "403" in failed["msg"] and "\n" not in failed["msg"] and "Traceback" not in run.stdout, failed["msg"]


SNAPSHOT_BODY = ("kind: Snapshot\napiVersion: aicr.run/v1alpha2\nmeasurements:\n- type: K8s\n  subtypes:\n  - subtype: server\n"
                 "    data: {version: v1.34.2-eks-113cf36}\n  - subtype: node\n    data: {provider: eks}\n")


def _read_snapshot_configmap(run_playbook, kube, tmp_path, namespace):
    """cluster_facts from_configmap as the facts identity, on a Snapshot ConfigMap the test's admin stored in ``namespace``."""
    kube.rest.create("/api/v1/namespaces/%s/configmaps" % namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "aicr-snapshot"},
                                                                      "data": {"snapshot.yaml": SNAPSHOT_BODY}})
    playbook = tmp_path / "cm.yml"
    playbook.write_text("- hosts: localhost\n  gather_facts: false\n  tasks:\n    - name: Read\n      aicr.runtime.cluster_facts:\n"
                        "        kubeconfig: \"{{ kubeconfig }}\"\n        from_configmap: \"cm://%s/aicr-snapshot\"\n" % namespace)
    return run_playbook(str(playbook), extravars={"kubeconfig": kube.kubeconfig_for("facts")})


def test_snapshot_from_a_configmap(run_playbook, kube, tmp_path):
    """An AICR agent's ConfigMap (data.snapshot.yaml), read as the facts identity, which aicr-runtime:facts-configmap
    lets read ConfigMaps in the test's namespace (a RoleBinding there)."""
    run = _read_snapshot_configmap(run_playbook, kube, tmp_path, kube.namespace)
    assert run.rc == 0, run.stdout[-4000:]
    res = run.result("Read")
    assert res["source"] == "configmap" and res["criteria"] == {"service": "eks"}


def test_a_snapshot_configmap_outside_the_bound_namespace_is_refused_in_one_line(run_playbook, kube, tmp_path):
    """aicr-runtime:facts (bound cluster-wide, for nodes) grants no ConfigMaps: where aicr-runtime:facts-configmap is not
    bound, the read is refused, and the message says which role to bind where."""
    kube.require_lab("the lab's identities")
    namespace = kube.create_namespace("facts-unbound", lease_role=False)
    run = _read_snapshot_configmap(run_playbook, kube, tmp_path, namespace)
    assert run.rc != 0 and run.failed_tasks == ["Read"]
    msg = run.result("Read")["msg"]
    assert msg.startswith("from_configmap: this identity may not read ConfigMap %s/aicr-snapshot; bind the ClusterRole "
                          "aicr-runtime:facts-configmap in namespace %s with a RoleBinding (meta/rbac/facts-configmap.yaml) - "
                          % (namespace, namespace)), msg
    assert "403" in msg and "\n" not in msg and "Traceback" not in run.stdout, msg
