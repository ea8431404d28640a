"""Stack Lease and recipe normalisation (plan)."""

import datetime
import time

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.client import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import validate_values
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import MESSAGE_ANNOTATION, StackLease, lease_name
from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan


def lease_obj(cluster, stack="prod"):
    return cluster.get("coordination.k8s.io/v1", "Lease", lease_name(stack), "default")


def test_lease_lifecycle_and_holder_message(fake_cluster):
    lease = StackLease(fake_cluster, "prod-east", identity="me@host/1", message="site.yml", duration=15).acquire()
    try:
        obj = lease_obj(fake_cluster, "prod-east")
        assert lease_name("prod-east") == "aicr-runtime-prod-east"
        assert obj["spec"]["holderIdentity"] == "me@host/1" and obj["spec"]["leaseDurationSeconds"] == 15
        assert obj["metadata"]["annotations"][MESSAGE_ANNOTATION] == "site.yml"
        holder, message, stale, _renewed = StackLease(fake_cluster, "prod-east").holder()
        assert (holder, message, stale) == ("me@host/1", "site.yml", False)
        with pytest.raises(AicrError, match=r"stack prod-east is being rolled out by me@host/1 \(site.yml\)"):
            StackLease(fake_cluster, "prod-east", identity="other@x/2").acquire()
    finally:
        lease.release()
    assert lease_obj(fake_cluster, "prod-east") is None


def test_lease_is_renewed_in_the_background(fake_cluster):
    lease = StackLease(fake_cluster, "prod", identity="me", duration=5)
    lease.duration = 0.15  # renew every 0.05 s for the test
    lease.acquire()
    try:
        first = lease_obj(fake_cluster)["spec"]["renewTime"]
        deadline = time.time() + 5
        while lease_obj(fake_cluster)["spec"]["renewTime"] == first and time.time() < deadline:
            time.sleep(0.02)
        assert lease_obj(fake_cluster)["spec"]["renewTime"] > first
    finally:
        lease.release()


def test_stale_lease_takeover_counts_a_transition(fake_cluster):
    now = [datetime.datetime(2026, 1, 1, 12, 0, 0)]
    old = StackLease(fake_cluster, "prod", identity="crashed", duration=10, clock=lambda: now[0])
    old.acquire()
    old._stop.set()  # pylint: disable=protected-access
    old._thread.join()  # pylint: disable=protected-access
    now[0] += datetime.timedelta(seconds=11)
    new = StackLease(fake_cluster, "prod", identity="me", duration=10, clock=lambda: now[0]).acquire()
    try:
        assert new.taken_over == {"holder": "crashed", "message": ""}
        assert lease_obj(fake_cluster)["spec"]["leaseTransitions"] == 1
    finally:
        new.release()


def test_lease_race_is_reported(fake_cluster):
    class Racing:
        def __getattr__(self, name):
            return getattr(fake_cluster, name)

        def create(self, obj):
            raise ClusterError("already exists", status=409)

    with pytest.raises(AicrError, match="another run acquired Lease default/aicr-runtime-prod"):
        StackLease(Racing(), "prod").acquire()


def test_plan_from_recipe_resolve_output(tmp_path):
    (tmp_path / "components" / "x" / "manifests").mkdir(parents=True)
    recipe = {"recipe_name": "r", "catalog_root": str(tmp_path), "components": [
        {"name": "a", "type": "Helm", "chart": "a", "repository": "https://r", "version": "1", "namespace": "", "values": {"k": 1},
         "dependencies": [], "external_dependencies": ["external"], "manifest_files": ["components/x/manifests/m.yaml"]},
        {"name": "b", "type": "Kustomize", "dependencies": []},
        {"name": "c", "type": "Helm", "chart": "", "dependencies": ["a", "b"], "manifest_paths": ["/abs/m.yaml"]},
    ]}
    plan = build_plan(recipe)
    assert plan.order == ["a", "c"]
    a, c = plan.by_name["a"], plan.by_name["c"]
    assert a.namespace == "default" and a.manifest_paths == [str(tmp_path / "components/x/manifests/m.yaml")]
    assert a.gate == [] and c.gate == ["a"], "unmanaged dependencies (external_dependencies, Kustomize b) count as satisfied"
    assert c.manifest_only and c.kind == "objects" and c.manifest_paths == ["/abs/m.yaml"]
    assert plan.skipped == [{"name": "b", "reason": "type Kustomize is not deployed by gated_release (only Helm)"}]
    assert plan.reverse_deps() == {"a": ["c"], "c": []}
    with pytest.raises(AicrError, match="relative path"):
        build_plan([{"name": "z", "chart": "z", "manifest_files": ["rel.yaml"]}])
    with pytest.raises(AicrError, match="cycle"):
        build_plan([{"name": "p", "chart": "p", "dependencies": ["q"]}, {"name": "q", "chart": "q", "dependencies": ["p"]}])


def test_values_are_validated_against_schemas():
    plan = build_plan([{"name": "a", "chart": "a", "values": {"replicas": "two", "image": {"tag": 1}}}])
    schema = {"type": "object", "properties": {"replicas": {"type": "integer"}, "image": {"type": "object", "properties": {"tag": {"type": "string"}}}}}
    with pytest.raises(AicrError) as err:
        validate_values(plan, {"a": schema})
    assert err.value.msg.startswith("values: 2 value(s) do not match the component schemas; first: a: values.image.tag: violates type string")
    assert "two" not in str(err.value.details["problems"])
    validate_values(plan, {"a": {"type": "object"}})
    validate_values(plan, {})
