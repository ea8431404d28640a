"""cluster_facts module: argument handling and the file path (the cluster path runs on the lab, tests/integration)."""

import json

import pytest

from ansible.module_utils.testing import patch_module_args

from ansible_collections.aicr.runtime.plugins.modules import cluster_facts

SNAPSHOT = {"kind": "Snapshot", "apiVersion": "aicr.nvidia.com/v1alpha1", "measurements": [
    {"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1.34.2-eks-113cf36"}}]},
    {"type": "GPU", "subtypes": [{"subtype": "smi", "data": {"gpu.model": "NVIDIA H100 80GB HBM3", "gpu-count": 8}}]},
]}


def run_module(capsys, args):
    with patch_module_args(args):
        with pytest.raises(SystemExit) as exc:
            cluster_facts.main()
    return exc.value.code, json.loads(capsys.readouterr().out)


def test_reads_an_agent_snapshot_file(capsys, tmp_path):
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(SNAPSHOT))
    code, out = run_module(capsys, {"from_file": str(path)})
    assert code == 0 and out["changed"] is False and out["source"] == "file"
    assert out["snapshot"]["measurements"] == SNAPSHOT["measurements"]
    assert out["criteria"] == {"service": "eks", "accelerator": "h100"}
    _code, checked = run_module(capsys, {"from_file": str(path), "_ansible_check_mode": True})
    assert checked["snapshot"] == out["snapshot"]


def test_not_a_snapshot_fails_in_one_line(capsys, tmp_path):
    path = tmp_path / "recipe.yaml"
    path.write_text("kind: RecipeResult\n")
    code, out = run_module(capsys, {"from_file": str(path)})
    assert code == 1 and out["msg"] == "snapshot %s: document has kind 'RecipeResult', expected 'Snapshot'" % path
    assert out["field"] == "snapshot" and "exception" not in out


def test_file_and_configmap_are_exclusive(capsys, tmp_path):
    code, out = run_module(capsys, {"from_file": str(tmp_path / "x"), "from_configmap": "ns/name"})
    assert code == 1 and "mutually exclusive" in out["msg"]
