"""KubernetesClusterView against the lab's real kube-apiserver, as the least-privilege ``fabric`` identity.

The nodes are the test module's own (a control plane of its own, started once for the module): fabric
providerIDs, OpenShift Machine/BareMetalHost annotations, a node that resolves to nothing. Set-up
(CRDs, Machines, pods, ResourceSlices, claims, Secrets) is done as the lab's admin; every read the
fabric engine makes goes through the ``fabric`` identity, so RBAC is the shipped ClusterRole's.
"""

import os
from pathlib import Path

import pytest
import yaml

from kubernetes import client as k8s_client

from aicr_lab.kube import Kube
from waiting import wait_for  # pylint: disable=import-error

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.nodes import FABRIC_CREDENTIALS_ROLE, parse_quantity, split_ref
from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import build_api_client

COLLECTION = Path(__file__).resolve().parents[5]
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


@pytest.mark.parametrize("value, expected", [(None, 0), ("2", 2), (3, 3), ("1.0", 1), ("lots", 0)])
def test_parse_quantity(value, expected):
    assert parse_quantity(value) == expected


def test_split_ref():
    assert split_ref("a/b", "x", "o") == ("a", "b")
    with pytest.raises(AicrError):
        split_ref("a/b/c", "x", "o")


def test_the_advised_credentials_role_is_the_one_shipped():
    kind, name, path = FABRIC_CREDENTIALS_ROLE
    documents = yaml.safe_load_all((COLLECTION / path).read_text(encoding="utf-8"))
    role = next(doc for doc in documents if doc and doc.get("kind") == kind and doc["metadata"]["name"] == name)
    assert {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]} in role["rules"]
    assert name in (COLLECTION / "docs" / "rbac.md").read_text(encoding="utf-8")
