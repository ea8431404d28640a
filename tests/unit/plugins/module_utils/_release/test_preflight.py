"""The readiness pre-flight: the recipe's constraints on a snapshot (AICR's evaluator), before any change."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._release import preflight
from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release import execute
from recipe_helpers import snapshot

CONSTRAINTS = [{"name": "K8s.server.version", "value": ">= 1.32.4"}, {"name": "OS.release.ID", "value": "ubuntu"},
               {"name": "OS.release.VERSION_ID", "value": "24.04"}, {"name": "OS.sysctl./proc/sys/kernel/osrelease", "value": ">= 6.8"}]
GOOD = snapshot({"K8s.server.version": "v1.33.1", "OS.release.ID": "ubuntu", "OS.release.VERSION_ID": "24.04",
                 "OS.sysctl./proc/sys/kernel/osrelease": "6.8.0-1024-aws"})
BAD = snapshot({"K8s.server.version": "v1.33.1", "OS.release.ID": "ubuntu", "OS.release.VERSION_ID": "22.04",
                "OS.sysctl./proc/sys/kernel/osrelease": "5.15.0-1051-aws"})


def recipe(constraints=None):
    constraints = CONSTRAINTS if constraints is None else constraints
    return {"recipe_name": "r", "recipe": {"constraints": constraints, "componentRefs": []},
            "components": [{"name": "app", "type": "Helm", "chart": "app", "repository": "https://charts.example/repo", "version": "1.0.0",
                            "namespace": "apps", "values": {}}]}


def test_every_constraint_met():
    result = preflight.run("auto", recipe(), GOOD)
    assert result["passed"] and result["failed"] == [] and [c["outcome"] for c in result["constraints"]] == ["passed"] * 4
    assert result["constraints"][3] == {"name": "OS.sysctl./proc/sys/kernel/osrelease", "expected": ">= 6.8", "actual": "6.8.0-1024-aws",
                                        "outcome": "passed", "message": ""}


def test_each_failing_constraint_is_listed_with_expected_and_actual():
    result = preflight.run("auto", recipe(), BAD)
    assert not result["passed"] and result["failed"] == ["OS.release.VERSION_ID", "OS.sysctl./proc/sys/kernel/osrelease"]
    assert preflight.failure_message(result) == (
        "preflight: 2 of 4 constraint(s) not met on the given snapshot; nothing was changed: OS.release.VERSION_ID expected 24.04, got 22.04; "
        "OS.sysctl./proc/sys/kernel/osrelease expected >= 6.8, got 5.15.0-1051-aws")


def test_a_missing_measurement_is_skipped_and_an_invalid_one_fails_closed():
    partial = snapshot({"K8s.server.version": "v1.33.1"})
    result = preflight.run("auto", recipe(CONSTRAINTS[:1] + [{"name": "OS.release.ID", "value": "ubuntu"}]), partial)
    assert result["passed"] and result["skipped"] == ["OS.release.ID"]
    broken = preflight.run("auto", recipe([{"name": "K8s.server.version", "value": ">= banana"}]), partial)
    assert not broken["passed"] and broken["constraints"][0]["outcome"] == "error"
    assert ('K8s.server.version (>= banana): cannot parse expected version: [INVALID_REQUEST] non-numeric component: "banana"'
            in preflight.failure_message(broken))  # AICR's words


def test_modes():
    assert preflight.run("auto", recipe(), None) is None and preflight.run("never", recipe(), BAD) is None
    with pytest.raises(AicrError, match="preflight: 'sometimes' is not allowed; use auto, live, never"):
        preflight.run("sometimes", recipe(), GOOD)
    assert preflight.run("auto", [{"name": "x"}], BAD)["constraints"] == []  # a components list has no constraints


def test_live_mode_reads_the_cluster_as_cluster_facts_does(fakes):
    class Facts(fakes.FakeCluster):
        def get_path(self, path):
            assert path == "/version"
            return {"gitVersion": "v1.31.0"}

    cluster = Facts()
    cluster.add_node("n1")
    result = preflight.run("live", recipe(CONSTRAINTS[:1]), None, cluster)
    assert result["source"] == "cluster" and result["constraints"][0]["actual"] == "v1.31.0" and not result["passed"]
    assert "on the cluster's facts" in preflight.failure_message(result)


def test_live_mode_says_why_it_read_the_nodes_when_the_identity_may_not(fakes):
    class Forbidden(fakes.FakeCluster):
        def get_path(self, path):
            return {"gitVersion": "v1.31.0"}

        def list(self, *args, **kwargs):
            raise ClusterError('GET /api/v1/nodes returned 403: nodes is forbidden: User "u" cannot list resource "nodes"', status=403)

    with pytest.raises(AicrError) as raised:
        preflight.run("live", recipe(CONSTRAINTS[:1]), None, Forbidden())
    assert raised.value.msg == ("preflight: live: the cluster's facts could not be read (this mode needs get/list on nodes; give a snapshot "
                                "or use preflight: never otherwise): GET /api/v1/nodes returned 403: nodes is forbidden: User \"u\" cannot "
                                "list resource \"nodes\"")
    assert raised.value.details == {"status": 403, "field": "preflight", "value": "live"}


def params(snap, **extra):
    out = {"recipe": recipe(), "snapshot": snap, "poll_interval": 0.01, "timeout": 10, "render_cache": False, "stack": "t"}
    out.update(extra)
    return out


@pytest.mark.parametrize("check_mode", [False, True])
def test_execute_refuses_before_any_request(fakes, check_mode):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, {"app": lambda v, r, ns: [fakes.deployment(r)]})
    result = execute(params(BAD), check_mode=check_mode, cluster=cluster, helm=helm)
    assert result["failed_message"].startswith("preflight: 2 of 4 constraint(s) not met")
    assert result["preflight"]["failed"] == ["OS.release.VERSION_ID", "OS.sysctl./proc/sys/kernel/osrelease"]
    assert result["changed"] is False and result["components"] == [] and cluster.mutations() == [] and helm.calls == []


def test_execute_passes_and_reports_it(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, {"app": lambda v, r, ns: [fakes.deployment(r)]})
    result = execute(params(GOOD, validate_values=False), cluster=cluster, helm=helm)
    assert "failed_message" not in result, result.get("failed_message")
    assert result["preflight"]["passed"] and [c["phase"] for c in result["components"]] == ["Ready"]
