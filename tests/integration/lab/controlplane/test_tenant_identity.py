"""The lab's adversarial ``tenant``: admin of ``tenant-a``, ConfigMaps and Secrets in ``default``, nothing else.

tests/integration/test_adversarial_tenant.py attacks the collection as this identity; what it proves holds only if
the identity has exactly an ordinary tenant's rights. Each right is asked of the API server's own authorizer (a
SubjectAccessReview, the decision a request meets), and the kubeconfig is used for real once each way.
"""

import pytest

from aicr_lab.controlplane import identities
from aicr_lab.controlplane.rest import ApiError, Rest

TENANT = identities.TENANT
TENANT_NS = identities.TENANT_NAMESPACE
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def allowed(kube, verb, resource, namespace="", group="", name=""):
    """Whether the authorizer lets the tenant ``verb`` ``resource`` (``namespace`` "" : cluster-wide)."""
    attributes = {"verb": verb, "group": group, "resource": resource}
    if namespace:
        attributes["namespace"] = namespace
    if name:
        attributes["name"] = name
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": identities.user_name(TENANT), "groups": [identities.USERS_GROUP], "resourceAttributes": attributes}}
    return bool(kube.rest.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", review).get("status", {}).get("allowed"))


@pytest.fixture
def tenant_kube(kube):
    kube.require_lab("the lab's identities")
    # ``admin`` is an aggregated ClusterRole the controller-manager fills in: wait until the tenant has it
    kube.wait_authorized(TENANT, TENANT_NS, "apps", "deployments", "create")
    return kube


WRITES = ("create", "update", "patch", "delete")


def test_the_tenant_is_admin_of_its_namespace(tenant_kube):
    for verb in WRITES + ("get", "list"):
        for group, resource in (("", "secrets"), ("", "configmaps"), ("apps", "deployments"), ("", "serviceaccounts"),
                                ("rbac.authorization.k8s.io", "rolebindings")):
            assert allowed(tenant_kube, verb, resource, TENANT_NS, group), (verb, resource)


def test_the_tenant_writes_configmaps_and_secrets_in_default_and_nothing_else_there(tenant_kube):
    for verb in WRITES + ("get", "list"):
        for resource in ("configmaps", "secrets"):
            assert allowed(tenant_kube, verb, resource, "default"), (verb, resource)
    for group, resource in (("apps", "deployments"), ("", "serviceaccounts"), ("coordination.k8s.io", "leases"),
                            ("rbac.authorization.k8s.io", "rolebindings"), ("", "pods")):
        assert not allowed(tenant_kube, "create", resource, "default", group), resource


def test_the_tenant_reaches_no_other_namespace_and_nothing_cluster_wide(tenant_kube):
    for namespace in (identities.LEASE_NAMESPACE, "kube-system", tenant_kube.namespace):
        for verb in WRITES + ("get", "list"):
            for group, resource in (("", "configmaps"), ("", "secrets"), ("coordination.k8s.io", "leases"), ("apps", "deployments")):
                assert not allowed(tenant_kube, verb, resource, namespace, group), (namespace, verb, resource)
    for group, resource in (("", "namespaces"), ("", "nodes"), ("apiextensions.k8s.io", "customresourcedefinitions"),
                            ("rbac.authorization.k8s.io", "clusterroles"), ("rbac.authorization.k8s.io", "clusterrolebindings"),
                            ("runtime.aicr.io", "clusterstacks")):
        for verb in ("create", "delete", "list"):
            assert not allowed(tenant_kube, verb, resource, "", group), (verb, resource)
    # every namespace's Secrets at once (a cluster-wide list) is not a tenant's either
    assert not allowed(tenant_kube, "list", "secrets")
    bindings = tenant_kube.rest.get(RBAC + "/clusterrolebindings")["items"]
    assert [b["metadata"]["name"] for b in bindings
            if any(s.get("name") == identities.user_name(TENANT) for s in b.get("subjects") or [])] == []


def test_the_tenant_kubeconfig_is_that_user(tenant_kube):
    rest = Rest.from_kubeconfig(tenant_kube.kubeconfig_for(TENANT))
    try:
        created = rest.create("/api/v1/namespaces/%s/configmaps" % TENANT_NS,
                              {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "probe-"}})
        rest.delete("/api/v1/namespaces/%s/configmaps/%s" % (TENANT_NS, created["metadata"]["name"]))
        with pytest.raises(ApiError) as excinfo:
            rest.create("/api/v1/namespaces/%s/configmaps" % identities.LEASE_NAMESPACE,
                        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "aicr-runtime-forged-inventory"}})
        assert excinfo.value.status == 403
        assert 'User "aicr-lab:tenant" cannot create resource "configmaps"' in excinfo.value.body["message"]
    finally:
        rest.close()


def test_a_tenant_namespace_of_a_test_own(tenant_kube):
    name = tenant_kube.create_tenant_namespace("tenant-b")
    try:
        assert allowed(tenant_kube, "create", "secrets", name)
        assert not allowed(tenant_kube, "create", "secrets", tenant_kube.namespace)
    finally:
        tenant_kube.rest.delete("/api/v1/namespaces/%s" % name, propagationPolicy="Background")
        tenant_kube.namespaces.remove(name)
