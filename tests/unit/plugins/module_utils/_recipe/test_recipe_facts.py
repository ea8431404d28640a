"""cluster_facts' engine: node objects and /version -> AICR Snapshot (the lab run is tests/integration/test_cluster_facts.py)."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import constraints as cons
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import facts
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import snapshot as snap_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import topology

VERSION = {"gitVersion": "v1.34.2-eks-113cf36", "platform": "linux/amd64", "goVersion": "go1.24.4"}


def node(name, os_image="Ubuntu 24.04.1 LTS", kernel="6.8.0-1028-aws", labels=None, gpus=None, taints=None, provider="aws:///us-west-2a/i-0abc"):
    obj = {"metadata": {"name": name, "labels": dict(labels or {})},
           "spec": {"providerID": provider, "taints": taints or []},
           "status": {"nodeInfo": {"osImage": os_image, "kernelVersion": kernel, "operatingSystem": "linux",
                                   "containerRuntimeVersion": "containerd://2.0.4", "kubeletVersion": "v1.34.2-eks-1"},
                      "capacity": {"cpu": "8"}}}
    if gpus is not None:
        obj["status"]["capacity"]["nvidia.com/gpu"] = str(gpus)
    return obj


def reading(snap, path):
    mtype, sub, key = path.split(".", 2)
    return snap_mod.data(snap, mtype, sub).get(key)


def test_gpu_nodes_are_reported_and_snapshot_has_aicr_shape():
    gpu_labels = {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/cuda.driver-version.full": "580.95.05"}
    nodes = [node("cpu-0", os_image="Ubuntu 22.04.4 LTS", kernel="5.15.0-1"),
             node("gpu-0", labels=gpu_labels, gpus=8, taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]),
             node("gpu-1", labels=gpu_labels, gpus=8, taints=[{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])]
    snap, chosen, conflicts = facts.build_snapshot(VERSION, nodes)
    assert snap_mod.check(snap) == snap and snap["kind"] == "Snapshot" and snap["apiVersion"] == "aicr.run/v1alpha2"
    assert [v["name"] for v in chosen] == ["gpu-0", "gpu-1"] and conflicts == []
    assert reading(snap, "K8s.server.version") == "v1.34.2-eks-113cf36"
    assert reading(snap, "K8s.node.provider") == "eks" and reading(snap, "K8s.node.container-runtime-version") == "2.0.4"
    assert reading(snap, "K8s.node.provider-id") is None  # two nodes: no single provider id
    assert reading(snap, "OS.release.ID") == "ubuntu" and reading(snap, "OS.release.VERSION_ID") == "24.04"
    assert reading(snap, "OS.sysctl./proc/sys/kernel/osrelease") == "6.8.0-1028-aws"
    assert reading(snap, "GPU.device.gpu.model") == "NVIDIA-H100-80GB-HBM3" and reading(snap, "GPU.device.gpu-count") == 8
    assert reading(snap, "GPU.device.driver") == "580.95.05"
    assert reading(snap, "NodeTopology.summary.node-count") == 3
    assert reading(snap, "NodeTopology.taint.nvidia.com/gpu") == "NoSchedule|present|gpu-0,gpu-1"
    assert reading(snap, "NodeTopology.label.nvidia.com/gpu.product") == "NVIDIA-H100-80GB-HBM3|gpu-0,gpu-1"
    # AICR's fingerprint: the provider, the GPU product label over the nodes, the OS release, every node counted
    assert snap_mod.criteria_from_snapshot(snap) == {"service": "eks", "accelerator": "h100", "os": "ubuntu", "nodes": 3}
    # the snapshot satisfies / fails the real catalog's constraints through the evaluator
    assert cons.evaluate({"name": "OS.sysctl./proc/sys/kernel/osrelease", "value": ">= 6.8"}, snap).passed
    assert cons.evaluate({"name": "K8s.server.version", "value": ">= 1.34"}, snap).passed
    assert not cons.evaluate({"name": "K8s.server.version", "value": ">= 1.35"}, snap).passed


def test_disagreeing_nodes_leave_the_reading_absent():
    nodes = [node("a", kernel="6.8.0-1"), node("b", kernel="6.5.0-2")]
    snap, chosen, conflicts = facts.build_snapshot(VERSION, nodes)
    assert [v["name"] for v in chosen] == ["a", "b"]  # no GPU node: all nodes
    assert reading(snap, "OS.sysctl./proc/sys/kernel/osrelease") is None
    assert {"reading": "OS.sysctl./proc/sys/kernel/osrelease", "values": {"a": "6.8.0-1", "b": "6.5.0-2"}} in conflicts
    result = cons.evaluate({"name": "OS.sysctl./proc/sys/kernel/osrelease", "value": ">= 6.8"}, snap)
    assert result.error_code == cons.NOT_FOUND  # the overlay is excluded, not passed on one node's word
    snap, chosen, _conflicts = facts.build_snapshot(VERSION, nodes, nodes=["b"])
    assert reading(snap, "OS.sysctl./proc/sys/kernel/osrelease") == "6.5.0-2" and reading(snap, "K8s.node.source-node") == "b"


def test_unknown_os_image_and_nfd_labels():
    nfd = {"feature.node.kubernetes.io/system-os_release.ID": "rhel", "feature.node.kubernetes.io/system-os_release.VERSION_ID": "9.4"}
    snap, chosen, _conflicts = facts.build_snapshot({"gitVersion": "v1.37.2"}, [node("n", os_image="Some Distro 1", labels=nfd)])
    assert reading(snap, "OS.release.ID") == "rhel" and chosen[0]["os_release_source"] == "nfd-label"
    snap, chosen, _conflicts = facts.build_snapshot({"gitVersion": "v1.37.2"}, [node("n", os_image="Some Distro 1")])
    assert snap_mod.measurement(snap, "OS")["subtypes"][0]["subtype"] == "sysctl"  # no release: absent, not guessed
    assert chosen[0]["os_release"] == {} and snap_mod.measurement(snap, "GPU") is None
    assert snap_mod.criteria_from_snapshot(snap) == {"service": "eks", "nodes": 1}


def test_unknown_node_is_an_error():
    with pytest.raises(AicrError) as exc:
        facts.build_snapshot(VERSION, [node("a")], nodes=["ghost"])
    assert exc.value.msg == "nodes: node 'ghost' not found in the cluster (nodes: a)"


@pytest.mark.parametrize("ref", ["ns", "ns/", "/name", "cm://a/b/c"])
def test_bad_configmap_reference(ref):
    with pytest.raises(AicrError) as exc:
        facts.read_configmap_snapshot(None, ref)
    assert exc.value.msg == "from_configmap: %r is not namespace/name (or cm://namespace/name)" % ref


class _Refusing:
    """A cluster client whose API server refuses every request with ``status``."""

    def __init__(self, status):
        self.status = status

    def get(self, *_args):
        raise ClusterError("cluster: GET /api/v1/namespaces/gpu-operator/configmaps/aicr-snapshot returned %d: no" % self.status,
                           status=self.status)


def test_a_refused_configmap_read_names_the_role_to_bind_and_where():
    with pytest.raises(AicrError) as exc:
        facts.read_configmap_snapshot(_Refusing(403), "cm://gpu-operator/aicr-snapshot")
    assert exc.value.msg == ("from_configmap: this identity may not read ConfigMap gpu-operator/aicr-snapshot; bind the ClusterRole "
                             "aicr-runtime:facts-configmap in namespace gpu-operator with a RoleBinding (meta/rbac/facts-configmap.yaml) - "
                             "cluster: GET /api/v1/namespaces/gpu-operator/configmaps/aicr-snapshot returned 403: no")
    assert exc.value.details["field"] == "from_configmap"
    assert exc.value.details["rbac"] == {"kind": "ClusterRole", "name": "aicr-runtime:facts-configmap", "namespace": "gpu-operator",
                                         "files": ["meta/rbac/facts-configmap.yaml"]}
    with pytest.raises(ClusterError) as other:  # any other failure is the client's own one line
        facts.read_configmap_snapshot(_Refusing(500), "gpu-operator/aicr-snapshot")
    assert other.value.status == 500


# -- one validation pass before the cluster is reached (issue 36) ----------------------------------------------------------

def test_options_are_checked_before_the_cluster_is_reached():
    """An unreachable kubeconfig would otherwise be the first (and only) thing to fail."""
    with pytest.raises(AicrError) as err:
        facts.collect({"nodes": ["Bad Node", "gpu-0"], "node_selector": "a=b=c", "from_configmap": "Bad_NS/snap",
                       "kubeconfig": "/nonexistent/kubeconfig"})
    assert [e["field"] for e in err.value.details["errors"]] == ["nodes[0]", "node_selector", "from_configmap"]
    assert err.value.msg.startswith("nodes[0]: 'Bad Node' is not a DNS-1123 subdomain; allowed: a DNS-1123 subdomain")


@pytest.mark.parametrize("selector", ["nvidia.com/gpu.present=true", "a,b!=c", "!a", "zone in (a, b),tier notin (x)", "a==b", "a="])
def test_label_selectors_kubernetes_accepts(selector):
    assert facts.selector_problem(selector) is None


@pytest.mark.parametrize("selector", ["a=b=c", "a b", "=x", "a in (b", "a=b c", "Bad Key/x=1", "a=" + "v" * 64])
def test_label_selectors_kubernetes_refuses(selector):
    assert facts.selector_problem(selector) is not None


@pytest.mark.parametrize("ref", ["nope", "ns/", "/name", "a/b/c"])
def test_a_configmap_reference_is_namespace_slash_name(ref):
    with pytest.raises(AicrError) as err:
        facts.check_params({"from_configmap": ref})
    assert err.value.msg == "from_configmap: %r is not namespace/name (or cm://namespace/name)" % ref


def test_a_yaml_file_that_is_no_snapshot_is_refused(tmp_path):
    """{a: 1} read as an empty snapshot: cluster_facts returned it, recipe_resolve resolved the fallback recipe."""
    path = tmp_path / "values.yaml"
    path.write_text("a: 1\n")
    with pytest.raises(AicrError) as err:
        facts.collect({"from_file": str(path)})
    assert err.value.msg.startswith("snapshot %s: not a Snapshot: neither kind: Snapshot nor measurements; allowed: " % path)


def _subtype(snap, name):
    return snap_mod.subtype(snap_mod.measurement(snap, "NodeTopology"), name)


def test_topology_writes_aicrs_folded_data_and_lossless_items():
    """AICR v0.19.0's topology collector writes both encodings; the items reference the data entry they fold onto."""
    nodes = [node("a", labels={"pool": "x", "zone": "z1"}, taints=[{"key": "t", "value": "1", "effect": "NoSchedule"}]),
             node("b", labels={"pool": "y", "zone": "z1"}, taints=[{"key": "t", "value": "2", "effect": "NoSchedule"}])]
    snap, _chosen, _conflicts = facts.build_snapshot(VERSION, nodes)
    labels, taints = _subtype(snap, "label"), _subtype(snap, "taint")
    assert labels["data"]["pool.x"] == "x|a" and labels["data"]["zone"] == "z1|a,b"
    assert {"context": {"key": "pool", "value": "x"}, "data": {"node-count": 1, "node-list-ref": "pool.x", "truncated": False}} in labels["items"]
    # two taints of one key and effect fold onto one data key (AICR's collision): the items carry their own lists
    assert taints["data"]["t.NoSchedule"] in ("1|a", "2|b")
    assert [i["data"] for i in taints["items"]] == [
        {"node-count": 1, "node-list": "a", "truncated": False}, {"node-count": 1, "node-list": "b", "truncated": False}]
    assert _subtype(snap, "summary")["data"] == {"node-count": 2, "taint-count": 2, "label-count": len(labels["items"])}
    decoded = dict(((r.key, r.value), r.nodes) for r in topology.label_readings(labels))
    assert decoded[("pool", "y")] == ["b"] and decoded[("zone", "z1")] == ["a", "b"]


@pytest.mark.parametrize("item,message", [
    ({"context": {"value": "x"}, "data": {"node-count": 1, "node-list": "a", "truncated": False}}, "missing required context field 'key'"),
    ({"context": {"key": "k", "value": "x"}, "data": {"node-count": 1, "truncated": False}}, "carries neither"),
    ({"context": {"key": "k", "value": "x"}, "data": {"node-count": 1, "node-list": "a", "node-list-ref": "k", "truncated": False}}, "carries both"),
    ({"context": {"key": "k", "value": "x"}, "data": {"node-count": 1, "node-list-ref": "other", "truncated": False}}, "names 'other'"),
    ({"context": {"key": "k", "value": "x"}, "data": {"node-count": 2, "node-list": "a", "truncated": False}}, "'node-count' is 2"),
    ({"context": {"key": "k", "value": "x"}, "data": {"node-count": 3, "node-list": "a (+2 more)", "truncated": False}}, "truncation marker"),
])
def test_inconsistent_items_are_refused(item, message):
    with pytest.raises(ValueError, match=message):
        topology.label_readings({"data": {"k": "x|a"}, "items": [item]})
    truncated = {"context": {"key": "k", "value": "x"}, "data": {"node-count": 3, "node-list": "a (+2 more)", "truncated": True}}
    assert topology.label_readings({"items": [truncated]})[0].truncated


def test_provider_names_as_aicrs_collector():
    assert [facts._provider(p) for p in ("aws:///x", "gce://p/z/n", "azure:///s", "oci://x", "ocid1.instance.oc1.iad.x", "linode://58291",
                                         "kind://docker/k/n", "")] == ["eks", "gke", "aks", "oke", "oke", "lke", "kind", ""]
