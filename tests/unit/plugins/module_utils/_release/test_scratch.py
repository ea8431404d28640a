"""A failed run leaves no trace it created only for itself (issue 36): a gated_release run that failed before installing
anything left its inventory ConfigMap (promising a release that never was) and the lease namespace it created.

Now such a run removes the inventory it created and the lease namespace it created (when it holds nothing else); when
something was installed the inventory stays (the record of ownership); nothing that existed before the run is removed;
and a missing lease namespace is created only for an identity that could use Leases in it."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._release.inventory import Inventory
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import lease_name

from release_helpers import comp, engine, make_charts

FRESH = "fresh-lease-ns"
SCHEMA = {"type": "object", "properties": {"replicaCount": {"type": "integer"}}}


def inventory_of(cluster, namespace=FRESH, stack="test"):
    return cluster.get("v1", "ConfigMap", Inventory(cluster, stack, namespace).name, namespace)


def namespace_of(cluster, name=FRESH):
    return cluster.get("v1", "Namespace", name)


def rollout(fakes, cluster, components, **opts):
    helm = fakes.FakeHelm(cluster, make_charts(fakes))
    helm.schemas["y"] = SCHEMA
    opts.setdefault("lease_namespace", FRESH)
    return engine(cluster, helm, components, validate_chart_schema=True, **opts).run()


UNREADABLE = "unreadable"  # a namespace the API server cannot say anything about: y fails at its gate, before any change


def unreadable(cluster_class):
    class Unreadable(cluster_class):
        """Reading namespace ``unreadable`` fails (a 500): the run holds its Lease and wrote its inventory ahead, and then
        fails at y's gate without a mutating call (the values check before the Lease passed)."""

        def get(self, api_version, kind, name, namespace=None):
            if kind == "Namespace" and name == UNREADABLE:
                raise ClusterError("cluster: GET /api/v1/namespaces/%s returned 500: etcdserver: request timed out" % name, status=500)
            return super(Unreadable, self).get(api_version, kind, name, namespace)
    return Unreadable()


BAD_Y = comp("y", namespace=UNREADABLE)


def test_values_a_chart_refuses_stop_the_run_before_the_lease_namespace_or_the_inventory_is_made(fakes, fake_cluster):
    result = rollout(fakes, fake_cluster, [comp("y", values={"replicaCount": "lots"})])
    assert "violate the chart's values.schema.json" in result["failed_message"], result
    assert fake_cluster.mutations() == [], "the values check runs before the Lease: nothing to clean up"
    assert inventory_of(fake_cluster) is None and namespace_of(fake_cluster) is None


def test_a_run_that_installed_nothing_removes_the_inventory_and_the_lease_namespace_it_created(fakes):
    fake_cluster = unreadable(fakes.FakeCluster)
    result = rollout(fakes, fake_cluster, [BAD_Y])
    assert "etcdserver: request timed out" in result["failed_message"], result
    assert ("apply", "ConfigMap", FRESH, Inventory(fake_cluster, "test", FRESH).name) in fake_cluster.audit, "the inventory was written ahead"
    assert inventory_of(fake_cluster) is None, "an inventory that records nothing installed"
    assert namespace_of(fake_cluster) is None, "the lease namespace this run created"
    assert fake_cluster.get("coordination.k8s.io/v1", "Lease", lease_name("test"), FRESH) is None
    assert "remove namespace %s: created by this run for its Lease, which installed nothing" % FRESH in result["actions"], result["actions"]
    assert any(a.startswith("remove inventory ConfigMap %s/" % FRESH) for a in result["actions"]), result["actions"]


def test_when_something_was_installed_the_inventory_and_its_namespace_stay(fakes):
    fake_cluster = unreadable(fakes.FakeCluster)
    result = rollout(fakes, fake_cluster, [comp("x"), comp("y", ["x"], namespace=UNREADABLE)])
    assert result["failed_message"] and [c["phase"] for c in result["components"]] == ["Ready", "Failed"], result
    assert "x" in inventory_of(fake_cluster)["data"]["inventory"], "the record of what the stack owns"
    assert namespace_of(fake_cluster) is not None


def test_what_existed_before_the_run_is_never_removed(fakes):
    fake_cluster = unreadable(fakes.FakeCluster)
    fake_cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": FRESH}})
    first = rollout(fakes, fake_cluster, [comp("x")])
    assert not first.get("failed_message"), first
    before = inventory_of(fake_cluster)
    # the next run fails before installing anything: the inventory it found and the namespace it found stay as they were
    result = rollout(fakes, fake_cluster, [comp("x"), BAD_Y])
    assert result["failed_message"], result
    assert inventory_of(fake_cluster)["metadata"]["uid"] == before["metadata"]["uid"]
    assert namespace_of(fake_cluster) is not None


def test_an_inventory_another_writer_touched_is_not_removed(fakes, fake_cluster):
    class Edited(type(fake_cluster)):
        """A second field manager writes the inventory while the run goes on (a kubectl edit)."""

        def apply(self, obj, dry_run=False, field_manager="aicr-runtime"):
            written = super(Edited, self).apply(obj, dry_run=dry_run, field_manager=field_manager)
            if obj["kind"] == "ConfigMap" and not dry_run and field_manager == "aicr-runtime":
                live = self.objects[("v1", "ConfigMap", obj["metadata"]["namespace"], obj["metadata"]["name"])]
                live["metadata"]["managedFields"].append({"manager": "kubectl-edit", "operation": "Update"})
            return written

    cluster = unreadable(Edited)
    result = rollout(fakes, cluster, [BAD_Y])
    assert result["failed_message"], result
    assert inventory_of(cluster) is not None
    assert namespace_of(cluster) is not None and any("was left: it holds ConfigMap" in w for w in result["warnings"]), result.get("warnings")


def test_a_lease_namespace_this_identity_could_not_use_is_never_created(fakes, fake_cluster):
    class Reviewing(type(fake_cluster)):
        """An API server whose authorizer says no to Leases in a namespace no RoleBinding exists in."""

        def create(self, obj):
            if obj["kind"] == "SelfSubjectAccessReview":
                assert obj["spec"]["resourceAttributes"] == {"namespace": FRESH, "verb": "create", "group": "coordination.k8s.io", "resource": "leases"}
                return dict(obj, status={"allowed": False})
            return super(Reviewing, self).create(obj)

    cluster = Reviewing()
    with pytest.raises(AicrError) as refused:
        rollout(fakes, cluster, [comp("x")])
    assert refused.value.msg == (
        "lease_namespace: namespace %s does not exist, and this identity could not use the stack's Lease there once created (a namespace it "
        "creates has no RoleBinding): create the namespace and bind the Role aicr-runtime:lease in it first (meta/rbac/aicr-system.yaml; "
        "examples/rbac/lease-rolebinding.yaml); nothing was changed" % FRESH)
    assert refused.value.details["field"] == "lease_namespace" and refused.value.details["rbac"]["name"] == "aicr-runtime:lease"
    assert cluster.mutations() == []


def test_a_lease_the_run_may_not_take_takes_the_namespace_it_created_with_it(fakes, fake_cluster):
    class Refusing(type(fake_cluster)):
        """Namespaces may be created; Leases are refused (a Role bound nowhere yet)."""

        def get(self, api_version, kind, name, namespace=None):
            if kind == "Lease":
                raise ClusterError("cluster: GET /apis/coordination.k8s.io/v1/namespaces/%s/leases/%s returned 403: forbidden" % (namespace, name),
                                   status=403, reason="forbidden", request={"verb": "get", "resource": "leases", "group": "coordination.k8s.io"})
            return super(Refusing, self).get(api_version, kind, name, namespace)

    cluster = Refusing()
    expected = r"^lease: this identity may not get leases \(coordination.k8s.io\) in namespace %s \(lease_namespace\); bind the Role aicr-runtime:lease"
    with pytest.raises(AicrError, match=expected % FRESH):
        rollout(fakes, cluster, [comp("x")])
    assert namespace_of(cluster) is None
    assert [a[:2] for a in cluster.mutations()] == [("create", "Namespace"), ("delete", "Namespace")]
