"""recipe_resolve and the recipe lookup, driven through ansible-playbook against the installed collection."""

import json
import os
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE_CATALOG = REPO / "examples" / "catalog"
H100_EKS_UBUNTU_TRAINING = {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"}


@pytest.fixture
def real_catalog(shared_dir):
    return str(shared_dir / "aicr" / "catalog")


@pytest.fixture
def cache_dir(tmp_path):
    return str(tmp_path / "cache")


def _ok(run):
    assert run.rc == 0, run.stdout[-4000:]
    assert "Traceback" not in run.stdout
    return run.result("Resolve")


def test_real_catalog_h100_eks_ubuntu_training(run_playbook, real_catalog, cache_dir):
    run = run_playbook("recipe_resolve.yml", extravars={"catalog": real_catalog, "criteria": H100_EKS_UBUNTU_TRAINING, "cache_dir": cache_dir})
    res = _ok(run)
    assert res["changed"] is False
    assert res["recipe_name"] == "h100-eks-ubuntu-training"
    rec = res["recipe"]
    assert rec["apiVersion"] == "aicr.run/v1alpha2"
    assert rec["criteria"]["service"] == "eks" and rec["criteria"]["os"] == "ubuntu"
    assert rec["metadata"]["appliedOverlays"][0] == "base" and "h100-eks-ubuntu-training" in rec["metadata"]["appliedOverlays"]
    assert {"name": "OS.release.ID", "value": "ubuntu"} in rec["constraints"]
    order = rec["deploymentOrder"]
    assert order.index("cert-manager") < order.index("gpu-operator") < order.index("nvsentinel")
    comps = dict((c["name"], c) for c in res["components"])
    assert comps["gpu-operator"]["repository"] == "https://helm.ngc.nvidia.com/nvidia"
    assert comps["nodewright-operator"]["chart_ref"].startswith("oci://ghcr.io/nvidia/nodewright/charts/")
    assert res["graph"].startswith("flowchart TD")
    assert os.listdir(os.path.join(cache_dir, "parsed")), "parsed catalog cached on disk"


def test_example_catalog(run_playbook, cache_dir):
    run = run_playbook("recipe_resolve.yml", extravars={
        "catalog": str(EXAMPLE_CATALOG), "cache_dir": cache_dir,
        "criteria": {"service": "kind", "accelerator": "h100", "intent": "training"},
        "profile": "agentMode=enforce", "skip_components": ["example-jobs"],
        "component_overrides": {"example-operator": {"version": "0.1.0", "values": {"replicaCount": 2}}},
    })
    res = _ok(run)
    assert res["recipe"]["deploymentOrder"] == ["example-crds", "example-config", "example-monitoring", "example-operator", "example-agent"]
    comps = dict((c["name"], c) for c in res["components"])
    assert comps["example-operator"]["values"]["replicaCount"] == 2
    assert comps["example-agent"]["values"]["env"]["AGENT_MODE"] == "enforce"
    assert comps["example-config"]["manifest_only"] is True
    assert res["recipe"]["metadata"]["selectedProfile"] == {
        "name": "agentMode", "value": "enforce", "ownedPaths": {"example-agent": ["enabled", "env.AGENT_MODE"]}}
    assert "h100-kind-training: example-crds -> example-config" in run.stdout


def test_tarball_catalog(run_playbook, tmp_path, cache_dir):
    tarball = tmp_path / "catalog.tar.gz"
    with tarfile.open(str(tarball), "w:gz") as archive:
        archive.add(str(EXAMPLE_CATALOG), arcname="recipes")
    run = run_playbook("recipe_resolve.yml", extravars={
        "catalog": str(tarball), "cache_dir": cache_dir, "criteria": {"service": "kind", "accelerator": "h100", "intent": "inference"}})
    res = _ok(run)
    assert res["catalog_root"].startswith(os.path.join(cache_dir, "catalogs"))
    op = [c for c in res["components"] if c["name"] == "example-operator"][0]
    assert op["manifest_paths"][0].startswith(res["catalog_root"]) and os.path.isfile(op["manifest_paths"][0])
    direct = _ok(run_playbook("recipe_resolve.yml", extravars={
        "catalog": str(EXAMPLE_CATALOG), "cache_dir": cache_dir, "criteria": {"service": "kind", "accelerator": "h100", "intent": "inference"}}))
    assert direct["catalog_digest"] == res["catalog_digest"]
    assert direct["recipe"] == res["recipe"]


def test_check_mode(run_playbook, cache_dir):
    run = run_playbook("recipe_resolve.yml", check=True, extravars={
        "catalog": str(EXAMPLE_CATALOG), "cache_dir": cache_dir, "criteria": {"service": "kind"}})
    res = _ok(run)
    assert res["changed"] is False
    assert res["recipe"]["deploymentOrder"] == ["example-crds", "example-config", "example-monitoring", "example-operator"]
    assert run.changed_tasks == []
    assert not os.path.exists(os.path.join(cache_dir, "parsed")), "check mode must not write the parsed-catalog cache"


def test_lookup(run_playbook, cache_dir):
    run = run_playbook("recipe_lookup.yml", extravars={"catalog": str(EXAMPLE_CATALOG), "cache_dir": cache_dir})
    assert run.rc == 0, run.stdout[-4000:]
    report = run.result("Report")["msg"]
    assert report["order"] == ["example-crds", "example-config", "example-monitoring", "example-jobs", "example-operator", "example-agent"]
    assert report["name"] == "kind-training"
    assert report["components"] == ["example-crds", "example-config", "example-monitoring", "example-jobs", "example-operator"]


def test_errors(run_playbook, real_catalog, tmp_path):
    broken = tmp_path / "broken"
    broken.mkdir()
    for path in EXAMPLE_CATALOG.rglob("*"):
        if path.is_file():
            dest = broken / path.relative_to(EXAMPLE_CATALOG)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(path.read_bytes())
    (broken / "overlays" / "kind.yaml").write_text("kind: RecipeMetadata\nmetadata: {name: kind}\nspec:\n  criteria: {service: kind\n")
    run = run_playbook("recipe_errors.yml", extravars={
        "catalog": str(EXAMPLE_CATALOG), "broken_catalog": str(broken), "real_catalog": real_catalog})
    assert run.rc == 0, run.stdout[-4000:]
    expected = {
        "Bad criteria value": "criteria.service: invalid service type 'mars' (valid: aks, bcm, eks, gke, kind, lke, metal3, ocp, oke)",
        "Missing catalog": "catalog: %s/does-not-exist does not exist (give a recipes/ directory or a .tar.gz of one)" % EXAMPLE_CATALOG,
        "Malformed catalog": "catalog file overlays/kind.yaml: malformed YAML at line 5, column 1: did not find expected ',' or '}'",
        "OS guard": "service 'gke' has no OS-agnostic recipe for accelerator 'h100'; specify an OS (valid: cos)",
        "Unknown profile value": 'profile "agentMode" has no value "panic"; valid values: [enforce observe]',
    }
    failed = run.failed_tasks
    for task, msg in expected.items():
        res = run.result(task)
        assert task in failed, task
        assert res["msg"] == msg, (task, res["msg"])
        assert "\n" not in res["msg"] and "module_stderr" not in res, task
        # ansible-core 2.19 marks failures without a traceback as "(traceback unavailable)"
        assert "Traceback" not in str(res.get("exception", "")), task
    assert "Lookup error" in failed
    recorded = run.result("Report")["messages"]
    assert set(recorded) == {"bad_criteria", "missing_catalog", "malformed_catalog", "os_guard", "profile", "lookup"}
    assert recorded["os_guard"] == expected["OS guard"]
    assert "no recipe provides os 'ubuntu' for criteria(service=kind, os=ubuntu)" in recorded["lookup"]
    assert "Traceback" not in run.stdout


def test_lookup_with_a_snapshot(run_playbook, real_catalog, cache_dir, tmp_path):
    """The lookup takes `snapshot` (a file here, a mapping for kind): fingerprinted criteria, relaxation."""
    snapshot = {"kind": "Snapshot", "apiVersion": "aicr.run/v1alpha2", "measurements": [
        {"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1.35.1-eks-113cf36"}},
                                     {"subtype": "node", "data": {"provider": "eks"}}]},
        {"type": "OS", "subtypes": [{"subtype": "release", "data": {"ID": "ubuntu", "VERSION_ID": "24.04"}},
                                    {"subtype": "sysctl", "data": {"/proc/sys/kernel/osrelease": "6.8.0-1028-aws"}}]},
        {"type": "NodeTopology", "subtypes": [{"subtype": "label", "data": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3|gpu-0"}}]}]}
    path = tmp_path / "snapshot.json"
    path.write_text(json.dumps(snapshot))
    kind = json.loads(json.dumps(snapshot))
    kind["measurements"][0]["subtypes"] = [{"subtype": "server", "data": {"version": "v1.35.0"}}, {"subtype": "node", "data": {"provider": "kind"}}]
    run = run_playbook("recipe_snapshot_lookup.yml", extravars={"catalog": real_catalog, "cache_dir": cache_dir, "snapshot_file": str(path),
                                                                "kind_snapshot": kind})
    assert run.rc == 0, run.stdout[-4000:]
    report = run.result("Report")["msg"]
    assert report["name"] == "h100-eks-ubuntu-training"
    assert report["derived"] == {"service": "eks", "accelerator": "h100", "os": "ubuntu"}
    assert report["excluded"] == [] and report["relaxed"] == ["os"]
