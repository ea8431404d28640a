"""A 403 on what lives in the lease namespace - the stack's Lease and its inventory ConfigMap - names the verb, the
resource, the namespace and the Role to bind there (issue 36; docs/rbac.md promises it). The inventory is the first thing
a run reads there, so without the Role a run failed with the bare 403 of a ConfigMap, no hint."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError, request_target
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import StackLease

from release_helpers import comp, engine, make_charts

HINT = "bind the Role aicr-runtime:lease in namespace aicr-system with a RoleBinding (meta/rbac/aicr-system.yaml; examples/rbac/lease-rolebinding.yaml)"


def forbidden(method, path):
    return ClusterError("cluster: %s %s returned 403: forbidden" % (method, path), status=403, reason="forbidden", request=request_target(method, path))


def refusing(fake_cluster, kinds, verbs):
    """``fake_cluster``'s class, refusing ``verbs`` (get, apply, replace) on ``kinds`` in aicr-system as RBAC would."""
    base = type(fake_cluster)
    plural = {"ConfigMap": "configmaps", "Lease": "leases"}

    def path(api_version, kind, name):
        prefix = "/api/v1" if api_version == "v1" else "/apis/" + api_version
        return "%s/namespaces/aicr-system/%s/%s" % (prefix, plural[kind], name)

    class Refusing(base):
        def get(self, api_version, kind, name, namespace=None):
            if kind in kinds and "get" in verbs and namespace == "aicr-system":
                raise forbidden("GET", path(api_version, kind, name))
            return base.get(self, api_version, kind, name, namespace)

        def replace(self, obj):
            meta = obj["metadata"]
            if obj["kind"] in kinds and "replace" in verbs:
                raise forbidden("PUT", path(obj["apiVersion"], obj["kind"], meta["name"]))
            return base.replace(self, obj)

    cluster = Refusing()
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "aicr-system"}})
    return cluster


@pytest.mark.parametrize("check_mode", [False, True], ids=["run", "check-mode"])
def test_a_403_on_the_inventory_names_the_role_to_bind(fakes, fake_cluster, check_mode):
    cluster = refusing(fake_cluster, ("ConfigMap",), ("get",))
    with pytest.raises(AicrError) as refused:
        engine(cluster, fakes.FakeHelm(cluster, make_charts(fakes)), [comp("x")], lease_namespace="aicr-system", check_mode=check_mode).run()
    assert refused.value.msg == ("inventory: this identity may not get configmaps in namespace aicr-system (lease_namespace); %s - cluster: GET "
                                 "/api/v1/namespaces/aicr-system/configmaps/aicr-runtime-test-inventory returned 403: forbidden" % HINT)
    assert refused.value.details["request"]["verb"] == "get" and refused.value.details["request"]["resource"] == "configmaps"
    assert refused.value.details["inventory"] == "aicr-system/aicr-runtime-test-inventory"


def test_a_refused_renewal_loses_the_lease_at_once_naming_the_role(fake_cluster):
    cluster = refusing(fake_cluster, ("Lease",), ("replace",))
    lease = StackLease(cluster, "s", namespace="aicr-system", duration=60, identity="me")
    lease._current = cluster.create({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",  # pylint: disable=protected-access
                                     "metadata": {"name": lease.name, "namespace": "aicr-system"}, "spec": {"holderIdentity": "me"}})
    lease._renewed_at = lease.monotonic()  # pylint: disable=protected-access
    assert lease.renew() is False
    assert lease.lost.startswith("its renewal was refused (403): lease: this identity may not update leases (coordination.k8s.io) in namespace "
                                 "aicr-system (lease_namespace); " + HINT), lease.lost
    with pytest.raises(AicrError, match="lost the Lease of stack s: its renewal was refused"):
        lease.check()
