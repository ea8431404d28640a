"""Constraint expressions, versions and Snapshot reading (AICR's pkg/constraints, pkg/version, pkg/snapshotter)."""

import json

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import constraints as cons
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import snapshot as snap_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import versions


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
    assert versions.Expression.parse(expr).evaluate(actual) is passed


@pytest.mark.parametrize("expr,msg", [
    ("", "constraint expression cannot be empty"), (">=", "constraint value cannot be empty after operator"),
    ("!ubuntu", "bare '!' prefix is invalid"),
])
def test_expression_errors(expr, msg):
    with pytest.raises(ValueError) as exc:
        versions.Expression.parse(expr)
    assert msg in str(exc.value)


@pytest.mark.parametrize("text,error", [  # AICR's error texts
    ("", "[INVALID_REQUEST] empty version string: version string is empty"),
    ("1.2.3.4", "[INVALID_REQUEST] too many version components: version has more than 3 components"),
    ("1.x", '[INVALID_REQUEST] non-numeric component: "x": version component is not numeric'),
    ("1..2", "[INVALID_REQUEST] empty component: version component is not numeric"),
    ("1.-2", "[INVALID_REQUEST] negative component: -2: version component cannot be negative"),
])
def test_version_parse_errors(text, error):
    with pytest.raises(versions.VersionError) as exc:
        versions.Version.parse(text)
    assert str(exc.value) == error


def test_evaluate_not_found_and_invalid():
    """The error of each outcome is AICR's text (a warning's reason, or the refusal's message)."""
    snap = _snap({"version": "v1.35.2"})
    ok = cons.evaluate({"name": "K8s.server.version", "value": ">= 1.34"}, snap)
    assert ok.passed and ok.actual == "v1.35.2" and ok.error is None
    missing = cons.evaluate({"name": "OS.release.ID", "value": "ubuntu"}, snap)
    assert not missing.passed and missing.error_code == cons.NOT_FOUND
    assert missing.error == "[NOT_FOUND] value not found in snapshot: [NOT_FOUND] measurement type not found in snapshot"
    missing_key = cons.evaluate({"name": "K8s.server.platform", "value": "linux/amd64"}, snap)
    assert missing_key.error == "[NOT_FOUND] value not found in snapshot: [NOT_FOUND] key not found in subtype"
    bad_path = cons.evaluate({"name": "Deployment.gpu-operator.version", "value": ">= v24.6.0"}, snap)
    assert bad_path.error_code == cons.INVALID
    assert bad_path.error == "[INVALID_REQUEST] invalid constraint path: [INVALID_REQUEST] invalid measurement type in constraint path"
    bad_version = cons.evaluate({"name": "K8s.server.version", "value": ">= 1.x"}, snap)
    assert bad_version.error == ('[INVALID_REQUEST] cannot parse expected version: [INVALID_REQUEST] non-numeric component: "x": '
                                 'version component is not numeric')
    short = cons.evaluate({"name": "K8s.server", "value": "x"}, snap)
    assert short.error == "[INVALID_REQUEST] invalid constraint path: [INVALID_REQUEST] invalid constraint path: expected format {Type}.{Subtype}.{Key}"
    bad_expr = cons.evaluate({"name": "K8s.server.version", "value": "!x"}, snap)
    assert bad_expr.error == ("[INVALID_REQUEST] invalid constraint expression: [INVALID_REQUEST] bare '!' prefix is invalid; use '!=' or "
                              "the separate node-set form") and bad_expr.actual == "v1.35.2"


@pytest.mark.parametrize("name,parsed", [
    ("OS.sysctl./proc/sys/kernel/osrelease", ("OS", "sysctl", "/proc/sys/kernel/osrelease", None)),
    ("NodeTopology.label.nvidia.com/gpu.present", ("NodeTopology", "label", "nvidia.com/gpu.present", None)),
    ("SystemD.containerd.service.ActiveState", ("SystemD", "containerd.service", "ActiveState", None)),  # units have dots
    ("NetworkTopology.pfs[0].driver", ("NetworkTopology", "pfs", "driver", ("index", 0))),
    ("NetworkTopology.pfs[name=eth0].mtu", ("NetworkTopology", "pfs", "mtu", ("predicate", ("name", "eth0")))),
])
def test_paths(name, parsed):
    assert cons.parse_path(name) == parsed


@pytest.mark.parametrize("name,error", [
    ("", "constraint path cannot be empty"), ("K8s", "invalid constraint path: expected format {Type}.{Subtype}[selector].{Key}"),
    ("K8s.[0].x", "invalid constraint path: subtype before '[' is empty"), ("K8s.a[0.x", "invalid constraint path: unclosed item selector bracket"),
    ("K8s.a[].x", "invalid constraint path: item selector is empty"),
    ("K8s.a[k=].x", "invalid constraint path: predicate selector requires non-empty key and value"),
    ("K8s.a[x].y", "invalid constraint path: item selector must be an integer index or 'key=value' predicate"),
    ("K8s.a[-1].y", "invalid constraint path: item index cannot be negative"), ("K8s.a[0]x", "invalid constraint path: expected '.' after item selector"),
    ("K8s.a[0].", "invalid constraint path: missing key after item selector"), ("K8s.a.", "invalid constraint path: subtype or key is empty"),
])
def test_path_errors(name, error):
    with pytest.raises(cons.PathError) as exc:
        cons.parse_path(name)
    assert str(exc.value) == "[INVALID_REQUEST] " + error


def test_item_selectors():
    items = [{"context": {"name": "eth0"}, "data": {"mtu": 9000, "driver": "mlx5"}}, {"context": {"name": "eth1"}, "data": {"mtu": 1500}}]
    snap = snap_mod.check({"measurements": [{"type": "NetworkTopology", "subtypes": [{"subtype": "pfs", "items": items}]}]})
    assert cons.evaluate({"name": "NetworkTopology.pfs[name=eth1].mtu", "value": "1500"}, snap).passed
    assert cons.evaluate({"name": "NetworkTopology.pfs[0].driver", "value": "mlx5"}, snap).passed
    assert cons.evaluate({"name": "NetworkTopology.pfs[5].driver", "value": "x"}, snap).error.endswith("[NOT_FOUND] item index out of bounds")
    assert cons.evaluate({"name": "NetworkTopology.pfs[1].driver", "value": "x"}, snap).error.endswith("[NOT_FOUND] key not found in item")
    items[1]["context"]["name"] = "eth0"
    snap = snap_mod.check({"measurements": [{"type": "NetworkTopology", "subtypes": [{"subtype": "pfs", "items": items}]}]})
    both = cons.evaluate({"name": "NetworkTopology.pfs[name=eth0].mtu", "value": "1500"}, snap)
    # AICR wraps whatever the extraction says as "not found": the overlay is excluded, not the resolution failed
    assert both.error_code == cons.NOT_FOUND and both.error.endswith("[CONFLICT] item predicate matches multiple entries")


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
    with pytest.raises(AicrError) as exc:  # typeless entries are left out; none left is no snapshot (AICR's loader)
        snap_mod.check({"measurements": [{"subtypes": []}, None]})
    assert "contains no usable measurements" in exc.value.msg
    assert snap_mod.check({"measurements": [{"type": "Disk"}]})["measurements"] == [{"type": "Disk", "subtypes": []}]
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


def _labels(**by_product):
    """A NodeTopology label subtype in AICR's folded encoding: one product -> plain key, several -> ``key.value``."""
    key = snap_mod.GPU_PRODUCT_LABEL
    if len(by_product) == 1:
        return dict((key, "%s|%s" % item) for item in by_product.items())
    return dict(("%s.%s" % (key, value), "%s|%s" % (value, nodes)) for value, nodes in by_product.items())


@pytest.mark.parametrize("data,expected", [
    # service: K8s.node.provider, raw OCI / Linode provider IDs normalised; the server version says nothing (v0.19.0)
    ({"K8s": {"node": {"provider": "eks"}}}, {"service": "eks"}),
    ({"K8s": {"node": {"provider": "ocid1.instance.oc1.iad.x"}}}, {"service": "oke"}),
    ({"K8s": {"node": {"provider": "oci://ocid1.instance.oc1.phx.y"}}}, {"service": "oke"}),
    ({"K8s": {"node": {"provider": "oci"}}}, {"service": "oke"}),
    ({"K8s": {"node": {"provider": "linode://58291"}}}, {"service": "lke"}),
    ({"K8s": {"node": {"provider": "linode"}}}, {"service": "lke"}),
    ({"K8s": {"node": {"provider": "EKS"}}}, {"service": "eks"}),
    ({"K8s": {"node": {"provider": "aws"}}}, {}),  # a scheme the collector would have named eks; not a service
    ({"K8s": {"node": {"provider": 7}}}, {}),  # not a string: not read
    ({"K8s": {"server": {"version": "v1.34.2-eks-113cf36"}}}, {}),
    # accelerator: the GPU product label over the nodes, else the PCI model when it is one of AICR's accelerators
    ({"NodeTopology": {"label": _labels(**{"NVIDIA-H100-80GB-HBM3": "g0,g1"})}}, {"accelerator": "h100"}),
    ({"NodeTopology": {"label": _labels(**{"NVIDIA-L40S": "g0"})}}, {"accelerator": "l40s"}),
    ({"NodeTopology": {"label": _labels(**{"NVIDIA-GH200-480GB": "g0"})}}, {}),
    ({"NodeTopology": {"label": _labels(**{"NVIDIA-H100-80GB-HBM3": "g0", "NVIDIA-L40S": "g1"})}}, {}),
    ({"NodeTopology": {"label": _labels(**{"NVIDIA-H100-80GB-HBM3": "g0", "NVIDIA-L40S": "g1"})}, "GPU": {"hardware": {"model": "h100"}}}, {}),
    ({"NodeTopology": {"label": _labels(**{"Tesla-T4": "g0"})}, "GPU": {"hardware": {"model": "h100"}}}, {"accelerator": "h100"}),
    ({"GPU": {"hardware": {"model": "gb200", "driver-loaded": True}}}, {"accelerator": "gb200"}),
    ({"GPU": {"hardware": {"model": "t4"}}}, {}),
    ({"GPU": {"smi": {"gpu.model": "NVIDIA H100"}}}, {}),  # not a subtype v0.19.0 reads
    # os: OS.release.ID folded onto the criteria values
    ({"OS": {"release": {"ID": "ubuntu"}}}, {"os": "ubuntu"}),
    ({"OS": {"release": {"ID": "amzn"}}}, {"os": "amazonlinux"}),
    ({"OS": {"release": {"ID": " RedHat "}}}, {"os": "rhel"}),
    ({"OS": {"release": {"ID": "ol"}}}, {"os": "ol"}),
    ({"OS": {"release": {"ID": "plan9"}}}, {}),
    # nodes: NodeTopology.summary.node-count (every node), an integer above 0
    ({"NodeTopology": {"summary": {"node-count": 12}}}, {"nodes": 12}),
    ({"NodeTopology": {"summary": {"node-count": 12.0}}}, {"nodes": 12}),
    ({"NodeTopology": {"summary": {"node-count": 0}}}, {}),
    ({"NodeTopology": {"summary": {"node-count": "12"}}}, {}),
])
def test_criteria_fingerprint(data, expected):
    snap = snap_mod.check({"measurements": [{"type": t, "subtypes": [{"subtype": s, "data": d} for s, d in subs.items()]}
                                            for t, subs in data.items()]})
    assert snap_mod.criteria_from_snapshot(snap) == expected


def test_fingerprint_reads_the_lossless_items_first():
    items = [{"context": {"key": snap_mod.GPU_PRODUCT_LABEL, "value": v}, "data": {"node-count": 1, "node-list": n, "truncated": False}}
             for v, n in (("NVIDIA-B200", "g0"), ("NVIDIA-B200", "g1"))]
    # the folded data (two keys sharing the prefix) would read as two products; the items say one
    labels = {"subtype": "label", "data": {snap_mod.GPU_PRODUCT_LABEL + ".a": "a|x", snap_mod.GPU_PRODUCT_LABEL + ".b": "b|y"}, "items": items}
    snap = snap_mod.check({"measurements": [{"type": "NodeTopology", "subtypes": [labels]}]})
    assert snap_mod.criteria_from_snapshot(snap) == {"accelerator": "b200"}
    labels["items"][1]["data"]["node-count"] = 5  # inconsistent items: undecodable, the dimension is left empty
    snap = snap_mod.check({"measurements": [{"type": "NodeTopology", "subtypes": [labels]}]})
    assert snap_mod.criteria_from_snapshot(snap) == {}
    assert snap_mod.fingerprint(snap)["accelerator"] == ""
