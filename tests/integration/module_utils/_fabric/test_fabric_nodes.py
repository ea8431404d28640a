"""KubernetesClusterView against the lab's real kube-apiserver, as the least-privilege ``fabric`` identity.

The nodes are the test module's own (a control plane of its own, started once for the module): fabric
providerIDs, OpenShift Machine/BareMetalHost annotations, a node that resolves to nothing. Set-up
(CRDs, Machines, pods, ResourceSlices, claims, Secrets) is done as the lab's admin; every read the
fabric engine makes goes through the ``fabric`` identity, so RBAC is the shipped ClusterRole's.
"""

import os

import pytest

from kubernetes import client as k8s_client

from aicr_lab.kube import Kube
from waiting import wait_for  # pylint: disable=import-error

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.nodes import KubernetesClusterView
from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import build_api_client, client_for

MACHINE = "cb765435-c696-502d-9ae2-781e57375583"
NODES = [
    {"name": "fab-0", "providerID": "fsas-cdi://%s" % MACHINE, "capacity": {"cpu": "8", "memory": "1Gi", "pods": "110", "nvidia.com/gpu": "2"}},
    {"name": "ocp-1", "providerID": "baremetalhost:///openshift-machine-api/host-1",
     "annotations": {"machine.openshift.io/machine": "openshift-machine-api/worker-1"}},
    {"name": "ocp-2", "providerID": "", "annotations": {"machine.openshift.io/machine": "openshift-machine-api/worker-2"}},
    {"name": "plain-3", "providerID": ""},
    {"name": "bad-4", "providerID": "", "annotations": {"machine.openshift.io/machine": "no-slash"}},
]


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
    wait_for(lambda: any(g.name == group for g in apis.get_api_versions().groups), 30, "CRD group %s never served" % group)


@pytest.fixture(scope="module")
def kube(tmp_path_factory):
    """A control plane of the module's own, with its own nodes (the shared cluster's nodes are node-0 … node-2)."""
    if os.environ.get("AICR_TEST_KUBECONFIG"):
        pytest.skip("needs nodes of its own; not run against AICR_TEST_KUBECONFIG's cluster")
    handle = Kube.start(tmp_path_factory.mktemp("fabric-nodes") / "controlplane", nodes=NODES)
    namespace = handle.create_namespace("fabric-nodes")
    api_client = build_api_client(handle.kubeconfig)  # admin: set-up only
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
    handle.namespace = namespace
    handle.api_client = api_client
    yield handle
    handle.stop()


@pytest.fixture(scope="module")
def view(kube):
    """The engine's view as fabric_device runs it: the ``fabric`` identity."""
    return KubernetesClusterView(client_for(kube.kubeconfig_for("fabric")))


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
    ns = kube.namespace
    core = k8s_client.CoreV1Api(kube.api_client)
    assert view.gpu_allocatable("fab-0") == 2
    core.create_namespaced_pod(ns, {
        "metadata": {"name": "trainer"},
        "spec": {"nodeName": "fab-0", "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "2"}}}]}})
    core.create_namespaced_pod(ns, {
        "metadata": {"name": "web"}, "spec": {"nodeName": "fab-0", "containers": [{"name": "c", "image": "x"}]}})
    core.create_namespaced_pod(ns, {
        "metadata": {"name": "elsewhere"},
        "spec": {"nodeName": "plain-3", "containers": [{"name": "c", "image": "x", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
    assert view.gpu_pods("fab-0") == [{"namespace": ns, "name": "trainer", "gpus": 2}]
    assert view.gpu_pods("ocp-1") == []


def test_resource_slices_and_claims(kube, view):
    ns = kube.namespace
    custom = k8s_client.CustomObjectsApi(kube.api_client)
    custom.create_cluster_custom_object("resource.k8s.io", "v1", "resourceslices", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "fab-0-gpu"},
        "spec": {"driver": "gpu.nvidia.com", "nodeName": "fab-0", "pool": {"name": "fab-0", "generation": 1, "resourceSliceCount": 1},
                 "devices": [{"name": "gpu-0", "attributes": {"uuid": {"string": "GPU-aaaa"}}},
                             {"name": "gpu-1", "attributes": {"uuid": {"string": "GPU-bbbb"}}}]}})
    assert view.slice_device_ids("fab-0") == {"gpu-0", "GPU-aaaa", "gpu-1", "GPU-bbbb"}
    assert view.slice_device_ids("plain-3") == set()
    claim = custom.create_namespaced_custom_object("resource.k8s.io", "v1", ns, "resourceclaims", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "one-gpu"},
        "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}})
    # reserved for the real pod (the resourceclaim controller drops reservations of pods that do not exist)
    trainer = k8s_client.CoreV1Api(kube.api_client).read_namespaced_pod("trainer", ns)
    claim["status"] = {"allocation": {"devices": {"results": [{"request": "gpu", "driver": "gpu.nvidia.com", "pool": "fab-0", "device": "gpu-1"}]}},
                       "reservedFor": [{"resource": "pods", "name": "trainer", "uid": trainer.metadata.uid}]}
    custom.replace_namespaced_custom_object_status("resource.k8s.io", "v1", ns, "resourceclaims", "one-gpu", claim)
    claims = view.device_claims("fab-0")
    assert claims == [{"namespace": ns, "name": "one-gpu", "devices": ["gpu-1", "GPU-bbbb"], "pods": ["%s/trainer" % ns]}]
    assert view.device_claims("plain-3") == []


def test_operator_presence_and_secrets(kube, view):
    ns = kube.namespace
    api_client = kube.api_client
    assert view.operator_present() is False
    k8s_client.ApiextensionsV1Api(api_client).create_custom_resource_definition(
        crd("cro.hpsys.ibm.ie.com", "v1alpha1", "composableresources", "ComposableResource", scope="Cluster"))
    wait_for_group(api_client, "cro.hpsys.ibm.ie.com")
    assert view.operator_present() is True
    k8s_client.CoreV1Api(api_client).create_namespaced_secret(ns, {
        "metadata": {"name": "fti"}, "stringData": {"username": "u", "password": "p", "other": "ignored"}})
    # the fabric identity reads Secrets only where aicr-runtime:fabric-credentials is bound to it (a RoleBinding)
    with pytest.raises(AicrError) as denied:
        view.read_secret(ns, "fti")
    # the refusal names the role to bind there, as docs/rbac.md promises, and the API server's own words
    assert denied.value.msg.startswith("credentials_secret: this identity may not read Secret %s/fti; bind the ClusterRole "
                                       "aicr-runtime:fabric-credentials in namespace %s with a RoleBinding (meta/rbac/fabric-credentials.yaml) - 403 "
                                       % (ns, ns)), denied.value.msg
    assert 'User "aicr-lab:fabric" cannot get resource "secrets"' in denied.value.msg
    assert denied.value.details["rbac"] == {"kind": "ClusterRole", "name": "aicr-runtime:fabric-credentials", "namespace": ns,
                                            "files": ["meta/rbac/fabric-credentials.yaml"]}
    assert denied.value.details["field"] == "credentials_secret" and denied.value.details["status"] == 403
    kube.rest.create("/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings" % ns, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "fabric-credentials"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "aicr-runtime:fabric-credentials"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": kube.user("fabric")}]})
    kube.wait_authorized("fabric", ns, "", "secrets")  # the authorizer learns of the new RoleBinding from a watch
    assert view.read_secret(ns, "fti") == {"username": "u", "password": "p"}
    with pytest.raises(AicrError) as info:
        view.read_secret(ns, "missing")
    assert "Secret %s/missing does not exist" % ns in info.value.msg
