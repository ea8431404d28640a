"""cluster_facts module: argument handling and the file path (the cluster path runs on the lab, tests/integration)."""

import json

from ansible_collections.aicr.runtime.plugins.modules import cluster_facts

from modules_testlib import run_main  # pylint: disable=import-error

SNAPSHOT = {"kind": "Snapshot", "apiVersion": "aicr.run/v1alpha2", "measurements": [
    {"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1.34.2-eks-113cf36"}},
                                 {"subtype": "node", "data": {"provider": "eks"}}]},
    {"type": "NodeTopology", "subtypes": [{"subtype": "summary", "data": {"node-count": 2}},
                                          {"subtype": "label", "data": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3|gpu-0,gpu-1"}}]},
]}


def test_reads_an_agent_snapshot_file(capsys, tmp_path):
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(SNAPSHOT))
    code, out = run_main(cluster_facts, capsys, {"from_file": str(path)})
    assert code == 0 and out["changed"] is False and out["source"] == "file"
    assert out["snapshot"]["measurements"] == SNAPSHOT["measurements"]
    assert out["criteria"] == {"service": "eks", "accelerator": "h100", "nodes": 2} and "warnings" not in out
    _code, checked = run_main(cluster_facts, capsys, {"from_file": str(path), "_ansible_check_mode": True})
    assert checked["snapshot"] == out["snapshot"]


def test_reads_the_former_snapshot_version_with_a_warning(capsys, tmp_path, monkeypatch):
    """Snapshots this collection wrote before issue 38 (aicr.nvidia.com/v1alpha1) are read as aicr.run/v1alpha2, which AICR needs."""
    path = tmp_path / "old.json"
    path.write_text(json.dumps(dict(SNAPSHOT, apiVersion="aicr.nvidia.com/v1alpha1")))
    texts = []  # the engine's warnings are given to AnsibleModule.warn (call_engine), never passed to exit_json
    monkeypatch.setattr(cluster_facts.AnsibleModule, "warn", lambda self, text: texts.append(text))
    code, out = run_main(cluster_facts, capsys, {"from_file": str(path)})
    assert code == 0 and out["snapshot"]["apiVersion"] == "aicr.run/v1alpha2" and out["criteria"]["service"] == "eks"
    assert texts == ["snapshot %s: apiVersion aicr.nvidia.com/v1alpha1 is the former version of this collection's snapshots; "
                     "read as aicr.run/v1alpha2, which AICR v0.19.0 requires (write it again with aicr.runtime.cluster_facts)" % path]
    path.write_text(json.dumps(dict(SNAPSHOT, apiVersion="aicr.run/v1alpha1")))
    code, out = run_main(cluster_facts, capsys, {"from_file": str(path)})
    assert code == 1 and out["msg"] == ("snapshot %s: unsupported apiVersion 'aicr.run/v1alpha1' (expected aicr.run/v1alpha2, "
                                        "or aicr.nvidia.com/v1alpha1)" % path)


def test_not_a_snapshot_fails_in_one_line(capsys, tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text("kind: RecipeResult\n")
    code, out = run_main(cluster_facts, capsys, {"from_file": str(path)})
    assert code == 1 and out["msg"] == "snapshot %s: document has kind 'RecipeResult', expected 'Snapshot'" % path
    assert out["field"] == "snapshot" and "exception" not in out


def test_file_and_configmap_are_exclusive(capsys, tmp_path):
    code, out = run_main(cluster_facts, capsys, {"from_file": str(tmp_path / "x"), "from_configmap": "ns/name"})
    assert code == 1 and "mutually exclusive" in out["msg"]
