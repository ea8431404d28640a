"""KubernetesClusterView against the Kubernetes API emulator (in-process)."""

import time

import pytest

from aicr_emulators.kube.pytest_fixture import start_emulator
from kubernetes import client as k8s_client

from ansible_collections.aicr.runtime.plugins.module_utils.common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils.fabric.nodes import KubernetesClusterView, parse_quantity, split_ref
from ansible_collections.aicr.runtime.plugins.module_utils.kube import build_api_client

MACHINE = "cb765435-c696-502d-9ae2-781e57375583"


def crd(group, version, plural, kind, scope="Namespaced"):
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "%s.%s" % (plural, group)},
        "spec": {"group": group, "scope": scope, "names": {"plural": plural, "kind": kind, "singular": kind.lower()},
                 "versions": [{"name": version, "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
    }


def wait_for_group(api_client, group):
    apis = k8s_client.ApisApi(api_client)
    deadline = time.time() + 10
    while time.time() < deadline:
        if any(g.name == group for g in apis.get_api_versions().groups):
            return
        time.sleep(0.05)
    raise AssertionError("CRD group %s never served" % group)


@pytest.fixture(scope="module")
def kube(tmp_path_factory):
    nodes = [
        {"name": "fab-0", "providerID": "fsas-cdi://%s" % MACHINE, "capacity": {"cpu": "8", "memory": "1Gi", "pods": "110", "nvidia.com/gpu": "2"}},
        {"name": "ocp-1", "providerID": "baremetalhost:///openshift-machine-api/host-1",
         "annotations": {"machine.openshift.io/machine": "openshift-machine-api/worker-1"}},
        {"name": "ocp-2", "annotations": {"machine.openshift.io/machine": "openshift-machine-api/worker-2"}},
        {"name": "plain-3"},
        {"name": "bad-4", "annotations": {"machine.openshift.io/machine": "no-slash"}},
    ]
    handle = start_emulator(tmp_path_factory.mktemp("kube"), in_process=True, nodes=nodes)
    api_client = build_api_client(handle.kubeconfig)
    ext = k8s_client.ApiextensionsV1Api(api_client)
    ext.create_custom_resource_definition(crd("machine.openshift.io", "v1beta1", "machines", "Machine"))
    ext.create_custom_resource_definition(crd("metal3.io", "v1alpha1", "baremetalhosts", "BareMetalHost"))
    wait_for_group(api_client, "metal3.io")
    wait_for_group(api_client, "machine.openshift.io")
    core = k8s_client.CoreV1Api(api_client)
    core.create_namespace({"metadata": {"name": "openshift-machine-api"}})
    custom = k8s_client.CustomObjectsApi(api_client)
    for name, bmh, annotations in (("worker-1", "host-1", {"cluster-manager.cdi.io/machine": "machine-from-bmh"}), ("worker-2", "host-2", {})):
        custom.create_namespaced_custom_object("machine.openshift.io", "v1beta1", "openshift-machine-api", "machines", {
            "apiVersion": "machine.openshift.io/v1beta1", "kind": "Machine",
            "metadata": {"name": name, "annotations": {"metal3.io/BareMetalHost": "openshift-machine-api/%s" % bmh}}})
        custom.create_namespaced_custom_object("metal3.io", "v1alpha1", "openshift-machine-api", "baremetalhosts", {
            "apiVersion": "metal3.io/v1alpha1", "kind": "BareMetalHost", "metadata": {"name": bmh, "annotations": annotations}})
    yield handle, api_client
    handle.stop()


@pytest.fixture(scope="module")
def view(kube):
    return KubernetesClusterView(kube[1])


def test_provider_id_resolves(view):
    assert view.machine_for_node("fab-0") == MACHINE


def test_openshift_annotation_chain_resolves(view):
    assert view.machine_for_node("ocp-1") == "machine-from-bmh"


@pytest.mark.parametrize("node, text", [
    ("ocp-2", "BareMetalHost openshift-machine-api/host-2 has no annotation cluster-manager.cdi.io/machine"),
    ("plain-3", "does not resolve to a fabric machine"),
    ("bad-4", "annotation machine.openshift.io/machine is 'no-slash'; expected <namespace>/<name>"),
    ("ghost", "node: ghost does not exist in the cluster"),
])
def test_unresolvable_nodes_say_why(view, node, text):
    with pytest.raises(AicrError) as info:
        view.machine_for_node(node)
    assert text in info.value.msg


def test_gpu_pods_and_allocatable(kube, view):
    core = k8s_client.CoreV1Api(kube[1])
    assert view.gpu_allocatable("fab-0") == 2
    core.create_namespaced_pod("default", {
        "metadata": {"name": "trainer"},
        "spec": {"nodeName": "fab-0", "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}})
    core.create_namespaced_pod("default", {
        "metadata": {"name": "web"}, "spec": {"nodeName": "fab-0", "containers": [{"name": "c", "image": "x"}]}})
    core.create_namespaced_pod("default", {
        "metadata": {"name": "elsewhere"},
        "spec": {"nodeName": "plain-3", "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
    assert view.gpu_pods("fab-0") == [{"namespace": "default", "name": "trainer", "gpus": 2}]
    assert view.gpu_pods("ocp-1") == []


def test_resource_slices_and_claims(kube, view):
    custom = k8s_client.CustomObjectsApi(kube[1])
    custom.create_cluster_custom_object("resource.k8s.io", "v1", "resourceslices", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "fab-0-gpu"},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": "fab-0", "pool": {"name": "fab-0", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "gpu-0", "attributes": {"uuid": {"string": "GPU-aaaa"}}},
                             {"name": "gpu-1", "attributes": {"uuid": {"string": "GPU-bbbb"}}}]}})
    assert view.slice_device_ids("fab-0") == {"gpu-0", "GPU-aaaa", "gpu-1", "GPU-bbbb"}
    assert view.slice_device_ids("plain-3") == set()
    claim = custom.create_namespaced_custom_object("resource.k8s.io", "v1", "default", "resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "one-gpu"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}})
    claim["status"] = {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": "fab-0", "device": "gpu-1"}]}},
                       "reservedFor": [{"resource": "pods", "name": "trainer", "uid": "u"}]}
    custom.replace_namespaced_custom_object_status("resource.k8s.io", "v1", "default", "resourceclaims", "one-gpu", claim)
    claims = view.device_claims("fab-0")
    assert claims == [{"namespace": "default", "name": "one-gpu", "devices": ["gpu-1", "GPU-bbbb"], "pods": ["default/trainer"]}]
    assert view.device_claims("plain-3") == []


def test_operator_presence_and_secrets(kube, view):
    api_client = kube[1]
    assert view.operator_present() is False
    k8s_client.ApiextensionsV1Api(api_client).create_custom_resource_definition(
        crd("cro.hpsys.ibm.ie.com", "v1alpha1", "composableresources", "ComposableResource", scope="Cluster"))
    wait_for_group(api_client, "cro.hpsys.ibm.ie.com")
    assert view.operator_present() is True
    k8s_client.CoreV1Api(api_client).create_namespaced_secret("default", {
        "metadata": {"name": "fti"}, "stringData": {"username": "u", "password": "p", "other": "ignored"}})
    assert view.read_secret("default", "fti") == {"username": "u", "password": "p"}
    with pytest.raises(AicrError) as info:
        view.read_secret("default", "missing")
    assert "Secret default/missing does not exist" in info.value.msg


@pytest.mark.parametrize("value, expected", [(None, 0), ("2", 2), (3, 3), ("1.0", 1), ("lots", 0)])
def test_parse_quantity(value, expected):
    assert parse_quantity(value) == expected


def test_split_ref():
    assert split_ref("a/b", "x", "o") == ("a", "b")
    with pytest.raises(AicrError):
        split_ref("a/b/c", "x", "o")
