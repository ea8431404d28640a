"""Constraint expressions, versions and Snapshot reading (AICR's pkg/constraints, pkg/version, pkg/snapshotter)."""

import json

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import constraints as cons
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import snapshot as snap_mod


def _snap(data, mtype="K8s", sub="server"):
    return snap_mod.check({"kind": "Snapshot", "measurements": [{"type": mtype, "subtypes": [{"subtype": sub, "data": data}]}]})


@pytest.mark.parametrize("expr,actual,passed", [
    (">= 1.34", "v1.34.0", True), (">= 1.34", "v1.33.9", False), (">= 1.34", "v1.34.7-eks-1", True),
    (">= 1.32.4", "v1.32.4-gke.100", True), (">= 1.32.4", "v1.32.3", False), (">= 1.32.4", "1.33", True),
    (">= 1.32.4", "1.32", True),  # precision stops at the shorter side, as AICR compares
    ("> 1.30", "1.30.9", False), ("> 1.30", "1.31", True), ("< 2", "1.99.99", True), ("<= 6.8", "6.8.0-1028-aws", True),
    (">= 6.8", "6.7.12", False), (">= v24.6.0", "v24.6.0", True), (">= v25.10.0", "v25.9.3", False),
    ("ubuntu", "ubuntu", True), ("ubuntu", "Ubuntu", False), ("24.04", "24.04", True), ("24.04", "24.4", False),
    ("== 24.04", "24.4", True),  # == on version-looking values compares versions
    ("!= 1.2", "1.2.0", False), ("!= abc", "abd", True), ("== abc", " abc ", True), ("Install", "None", False),
])
def test_expression_both_sides(expr, actual, passed):
    assert cons.Expression.parse(expr).evaluate(actual) is passed


@pytest.mark.parametrize("expr,msg", [
    ("", "constraint expression cannot be empty"), (">=", "constraint value cannot be empty after operator"),
    ("!ubuntu", "bare '!' prefix is invalid"),
])
def test_expression_errors(expr, msg):
    with pytest.raises(ValueError) as exc:
        cons.Expression.parse(expr)
    assert msg in str(exc.value)


@pytest.mark.parametrize("text,error", [("", "empty"), ("1.2.3.4", "more than 3"), ("1.x", "non-numeric"), ("1..2", "empty component")])
def test_version_parse_errors(text, error):
    with pytest.raises(cons.VersionError) as exc:
        cons.Version.parse(text)
    assert error in str(exc.value)


def test_evaluate_not_found_and_invalid():
    snap = _snap({"version": "v1.35.2"})
    ok = cons.evaluate({"name": "K8s.server.version", "value": ">= 1.34"}, snap)
    assert ok.passed and ok.actual == "v1.35.2" and ok.error is None
    missing = cons.evaluate({"name": "OS.release.ID", "value": "ubuntu"}, snap)
    assert not missing.passed and missing.error_code == cons.NOT_FOUND and "measurement type OS not found" in missing.error
    missing_key = cons.evaluate({"name": "K8s.server.platform", "value": "linux/amd64"}, snap)
    assert missing_key.error_code == cons.NOT_FOUND and "key platform not found" in missing_key.error
    bad_path = cons.evaluate({"name": "Deployment.gpu-operator.version", "value": ">= v24.6.0"}, snap)
    assert bad_path.error_code == cons.INVALID and "invalid measurement type 'Deployment'" in bad_path.error
    bad_version = cons.evaluate({"name": "K8s.server.version", "value": ">= 1.x"}, snap)
    assert bad_version.error_code == cons.INVALID and "cannot parse expected version" in bad_version.error
    short = cons.evaluate({"name": "K8s.server", "value": "x"}, snap)
    assert short.error_code == cons.INVALID and "{Type}.{Subtype}.{Key}" in short.error


def test_dotted_key_and_non_string_readings():
    snap = _snap({"/proc/sys/kernel/osrelease": "6.8.0-51-generic", "gpu-count": 8, "mig": True}, "OS", "sysctl")
    assert cons.evaluate({"name": "OS.sysctl./proc/sys/kernel/osrelease", "value": ">= 6.8"}, snap).passed
    assert cons.evaluate({"name": "OS.sysctl.gpu-count", "value": ">= 8"}, snap).passed
    assert cons.evaluate({"name": "OS.sysctl.mig", "value": "true"}, snap).passed


def _gpu_nodes(data):
    return _snap(data, "NodeTopology", "label")


@pytest.mark.parametrize("value,data,passed,code", [
    ("k=true", {"cloud.google.com/gke-accelerator": "a|n1,n2", "k": "true|n1,n2"}, True, None),
    ("k=true", {"cloud.google.com/gke-accelerator": "a|n1,n2", "k": "true|n1"}, False, None),
    ("k=true", {"cloud.google.com/gke-accelerator": "a|n1,n2", "k.true": "true|n1", "k.false": "false|n2"}, False, None),
    ("!k", {"cloud.google.com/gke-accelerator": "a|n1,n2", "other": "x|n1"}, True, None),
    ("!k", {"cloud.google.com/gke-accelerator": "a|n1", "k": "true|n1"}, False, None),
    ("!k", {"k": "true|n1"}, False, cons.NOT_FOUND),  # empty GPU-node universe: never vacuously true
    ("!k", {"cloud.google.com/gke-accelerator": "a|n1,n2 (+3 more)"}, False, cons.INVALID),  # truncated
    ("!k", {"cloud.google.com/gke-accelerator": "a|n1", "k.true": "true|n1"}, False, cons.INVALID),  # ambiguous
    (">= 1", {"cloud.google.com/gke-accelerator": "a|n1"}, False, cons.INVALID),  # not the node-set grammar
])
def test_gpu_nodes_label(value, data, passed, code):
    result = cons.evaluate({"name": cons.GPU_NODES_LABEL, "value": value}, _gpu_nodes(data))
    assert result.passed is passed and result.error_code == code


def test_gpu_nodes_label_without_topology_is_not_found():
    result = cons.evaluate({"name": cons.GPU_NODES_LABEL, "value": "!k"}, _snap({"version": "v1"}))
    assert result.error_code == cons.NOT_FOUND


# -- snapshots ---------------------------------------------------------------------------

def test_check_fails_closed_on_other_documents():
    with pytest.raises(AicrError) as exc:
        snap_mod.check({"kind": "RecipeResult", "measurements": []})
    assert exc.value.msg == "snapshot: document has kind 'RecipeResult', expected 'Snapshot'"
    with pytest.raises(AicrError) as exc:
        snap_mod.check({"kind": "Snapshot", "apiVersion": "v9", "measurements": []})
    assert "unsupported apiVersion 'v9'" in exc.value.msg
    with pytest.raises(AicrError) as exc:
        snap_mod.check({"measurements": [{"type": "Disk"}]})
    assert "measurements[0].type must be one of K8s, GPU, OS, SystemD, NodeTopology, got 'Disk'" in exc.value.msg
    with pytest.raises(AicrError):
        snap_mod.load(42)


def test_load_file_yaml_json_and_facts_result(tmp_path):
    doc = {"kind": "Snapshot", "apiVersion": "aicr.nvidia.com/v1alpha1",
           "measurements": [{"type": "OS", "subtypes": [{"subtype": "release", "data": {"ID": "ubuntu", "VERSION_ID": "24.04"}}]}]}
    (tmp_path / "s.json").write_text(json.dumps(doc))
    (tmp_path / "s.yaml").write_text("kind: Snapshot\nmeasurements:\n- type: OS\n  subtypes:\n  - subtype: release\n"
                                     "    data: {ID: ubuntu, VERSION_ID: '24.04'}\n")
    from_json = snap_mod.load(str(tmp_path / "s.json"))
    assert snap_mod.load(str(tmp_path / "s.yaml")) == from_json
    assert snap_mod.load({"snapshot": doc, "nodes": []}) == from_json
    (tmp_path / "bad.yaml").write_text("kind: [")
    with pytest.raises(AicrError) as exc:
        snap_mod.load(str(tmp_path / "bad.yaml"))
    assert exc.value.msg.startswith("snapshot %s: malformed YAML" % (tmp_path / "bad.yaml"))
    with pytest.raises(AicrError) as exc:
        snap_mod.load(str(tmp_path / "none.yaml"))
    assert "file does not exist" in exc.value.msg


@pytest.mark.parametrize("data,expected", [
    ({"K8s": {"server": {"version": "v1.34.2-eks-113cf36"}}}, {"service": "eks"}),
    ({"K8s": {"server": {"version": "v1.33.5-gke.1308000"}}}, {"service": "gke"}),
    ({"K8s": {"server": {"version": "v1.33.5+lke2"}}}, {"service": "lke"}),
    ({"K8s": {"server": {"version": "v1.35.0", "service": "oke"}}}, {"service": "oke"}),
    ({"K8s": {"server": {"version": "v1.35.0-eks-1", "service": "oke"}}}, {"service": "eks"}),  # the marker wins, as in AICR
    ({"K8s": {"server": {"version": "v1.37.2"}}}, {}),  # nothing guessed
    ({"GPU": {"smi": {"gpu.model": "NVIDIA GB200"}}}, {"accelerator": "gb200"}),
    ({"GPU": {"device": {"model": "NVIDIA-H100-80GB-HBM3"}}}, {"accelerator": "h100"}),
    ({"GPU": {"smi": {"gpu.model": "NVIDIA L40S"}}}, {"accelerator": "l40"}),
    ({"GPU": {"smi": {"gpu.model": "NVIDIA H200"}}}, {}),
    ({"OS": {"release": {"ID": "ubuntu"}}}, {"os": "ubuntu"}),
    ({"OS": {"release": {"ID": "al2023"}}}, {"os": "amazonlinux"}),
    ({"OS": {"release": {"ID": "plan9"}}}, {}),
])
def test_criteria_fingerprint(data, expected):
    snap = snap_mod.check({"measurements": [{"type": t, "subtypes": [{"subtype": s, "data": d} for s, d in subs.items()]}
                                            for t, subs in data.items()]})
    assert snap_mod.criteria_from_snapshot(snap) == expected
