"""The advice a 403 on a namespaced object gets: which shipped role to bind, where, from which file."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import (
    FACTS_CONFIGMAP_ROLE, LEASE_ROLE, STACK_CONFIGMAP_ROLE, ClusterError, binding_advice)

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
