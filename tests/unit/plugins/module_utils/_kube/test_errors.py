"""The advice a 403 on a namespaced object gets: which shipped role to bind, where, from which file."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import (
    FACTS_CONFIGMAP_ROLE, LEASE_ROLE, STACK_CONFIGMAP_ROLE, ClusterError, binding_advice, refusal, request_target)

COLLECTION = Path(__file__).resolve().parents[5]
ROLES = (LEASE_ROLE, STACK_CONFIGMAP_ROLE, FACTS_CONFIGMAP_ROLE)


def test_a_403_names_the_role_the_namespace_and_the_files():
    refused = ClusterError("cluster: GET /api/v1/namespaces/gpu/configmaps returned 403: no", status=403)
    advice, details = binding_advice(refused, STACK_CONFIGMAP_ROLE, "gpu")
    assert advice == "bind the ClusterRole aicr-runtime:stack-configmap in namespace gpu with a RoleBinding (meta/rbac/stack-configmap.yaml)"
    assert details == {"rbac": {"kind": "ClusterRole", "name": "aicr-runtime:stack-configmap", "namespace": "gpu",
                                "files": ["meta/rbac/stack-configmap.yaml"]}}


@pytest.mark.parametrize("status", [0, 401, 404, 409, 500])
def test_any_other_failure_gets_no_advice(status):
    assert binding_advice(ClusterError("cluster: failed", status=status), LEASE_ROLE, "aicr-system") == ("", {})
    assert binding_advice(ValueError("not a cluster error"), LEASE_ROLE, "aicr-system") == ("", {})


@pytest.mark.parametrize("role", ROLES, ids=[role[1] for role in ROLES])
def test_each_advised_role_is_shipped_in_the_first_file_it_names_and_the_others_exist(role):
    kind, name, files = role
    first, *others = files.split("; ")
    documents = yaml.safe_load_all((COLLECTION / first).read_text(encoding="utf-8"))
    assert any(doc and doc.get("kind") == kind and doc["metadata"]["name"] == name for doc in documents), (kind, name, first)
    for other in others:
        assert (COLLECTION / other).is_file(), other


@pytest.mark.parametrize("method, path, target", [
    ("GET", "/apis/coordination.k8s.io/v1/namespaces/aicr-system/leases/aicr-runtime-s",
     {"verb": "get", "resource": "leases", "group": "coordination.k8s.io", "namespace": "aicr-system", "name": "aicr-runtime-s"}),
    ("GET", "/api/v1/namespaces/gpu/configmaps", {"verb": "list", "resource": "configmaps", "group": "", "namespace": "gpu"}),
    ("PATCH", "/api/v1/namespaces/gpu/configmaps/inv?fieldManager=aicr-runtime",
     {"verb": "patch", "resource": "configmaps", "group": "", "namespace": "gpu", "name": "inv"}),
    ("PUT", "/apis/runtime.aicr.io/v1alpha1/clusterstacks/s/status",
     {"verb": "update", "resource": "clusterstacks/status", "group": "runtime.aicr.io", "name": "s"}),
    ("POST", "/api/v1/namespaces", {"verb": "create", "resource": "namespaces", "group": ""}),
    ("DELETE", "/api/v1/namespaces/gone", {"verb": "delete", "resource": "namespaces", "group": "", "name": "gone"}),
    ("GET", "/version", {}), ("GET", "/api/v1", {}), ("GET", "/apis/apps/v1", {}),
])
def test_the_request_names_what_rbac_checked(method, path, target):
    assert request_target(method, path) == target


def test_a_403_on_the_lease_names_the_verb_the_resource_the_namespace_and_the_role():
    refused = ClusterError("cluster: PUT /apis/coordination.k8s.io/v1/namespaces/ns/leases/l returned 403: forbidden by a webhook", status=403,
                           request=request_target("PUT", "/apis/coordination.k8s.io/v1/namespaces/ns/leases/l"))
    error = refusal(refused, "lease", LEASE_ROLE, "ns", "lease_namespace", lease="ns/l")
    assert error.msg == ("lease: this identity may not update leases (coordination.k8s.io) in namespace ns (lease_namespace); bind the Role "
                         "aicr-runtime:lease in namespace ns with a RoleBinding (meta/rbac/aicr-system.yaml; examples/rbac/lease-rolebinding.yaml) - "
                         "cluster: PUT /apis/coordination.k8s.io/v1/namespaces/ns/leases/l returned 403: forbidden by a webhook")
    assert error.details == {"field": "lease_namespace", "status": 403, "lease": "ns/l", "rbac": {
        "kind": "Role", "name": "aicr-runtime:lease", "namespace": "ns", "files": ["meta/rbac/aicr-system.yaml", "examples/rbac/lease-rolebinding.yaml"]},
        "request": {"verb": "update", "resource": "leases", "group": "coordination.k8s.io", "namespace": "ns", "name": "l"}}
    assert refusal(ClusterError("cluster: failed", status=409), "lease", LEASE_ROLE, "ns", "lease_namespace") is None
