"""Health checks as gates in the rollout engine (against the in-memory cluster and helm fakes), and their options."""

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common import assertions
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._release import health
from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import GatedRelease, Options
from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan


def comp(name, deps=(), asserts=None):
    out = {"name": name, "type": "Helm", "chart": name, "repository": "https://charts.example/repo", "version": "1.0.0",
           "namespace": "apps", "values": {}, "dependencies": list(deps)}
    if asserts is not None:
        out["health_check_asserts"] = asserts
    return out


def deployment_check(name, expr="(availableReplicas > `0`)", timeout="2s"):
    return yaml.safe_dump({"apiVersion": "chainsaw.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "%s-health-check" % name},
                           "spec": {"timeouts": {"assert": timeout}, "steps": [{"name": "validate-deployment", "try": [
                               {"assert": {"resource": {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "apps"},
                                                        "status": {expr: True}}}},
                               {"error": {"resource": {"apiVersion": "v1", "kind": "Pod", "metadata": {"namespace": "apps"},
                                                       "status": {"phase": "Failed"}}}}]}]}})


def run(fakes, recipe, **opts):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, dict((c["name"], lambda v, r, ns: [fakes.deployment(r, delay=0.0)]) for c in recipe))
    plan = build_plan(recipe)
    hopts = health.HealthOptions(opts.pop("health_checks", True), opts.pop("health_check_timeout", None), opts.pop("health_check_skip", None))
    checks = health.parse_all(health.checks_of(recipe), plan.order, hopts)
    options = Options(stack="t", poll_interval=0.01, timeout=20, health=hopts, **opts)
    return GatedRelease(cluster, helm, plan, options, checks=checks).run(), cluster, helm


def by_name(result):
    return dict((c["name"], c) for c in result["components"])


def test_a_passing_check_gates_its_dependent_which_then_runs(fakes):
    recipe = [comp("operator", asserts=deployment_check("operator")), comp("agent", ["operator"])]
    result, _cluster, _helm = run(fakes, recipe)
    comps = by_name(result)
    assert "failed_message" not in result, result.get("failed_message")
    assert comps["operator"]["health"]["status"] == "Passed" and comps["operator"]["health"]["operations"] == 2
    assert "health check passed (2 operations)" in comps["operator"]["message"]
    assert comps["agent"]["phase"] == "Ready" and comps["agent"]["health"] == {"status": "Skipped", "message": "no health check"}
    assert result["summary"]["health_checks"] == {"Passed": 1, "Skipped": 1}


def test_a_failing_check_fails_the_component_and_blocks_its_dependent(fakes):
    # the fake's Deployment never reports `unavailableReplicas`: the check waits until its own timeout (300 ms), then fails
    recipe = [comp("operator", asserts=deployment_check("operator", expr="(unavailableReplicas > `0`)", timeout="300ms")),
              comp("agent", ["operator"]), comp("other")]
    result, _cluster, helm = run(fakes, recipe)
    comps = by_name(result)
    assert comps["operator"]["phase"] == "Failed" and comps["agent"]["phase"] == "Blocked" and comps["other"]["phase"] == "Ready"
    assert comps["agent"]["blocked_by"] == ["operator"] and "agent" not in [u[1] for u in helm.upgrades()] and "operator" in [u[1] for u in helm.upgrades()]
    h = comps["operator"]["health"]
    assert (h["status"], h["step"], h["resource"], h["expression"], h["expected"], h["actual"]) == (
        "Failed", "validate-deployment", "Deployment apps/operator", "status.(unavailableReplicas > `0`)", "true", "null")
    assert comps["operator"]["message"].startswith("component operator: health check operator-health-check failed after ")
    assert "step validate-deployment: assert Deployment apps/operator" in comps["operator"]["message"]
    assert "failed: operator (component operator: health check" in result["failed_message"]


def test_health_check_timeout_overrides_the_checks_own(fakes):
    recipe = [comp("operator", asserts=deployment_check("operator", expr="(unavailableReplicas > `0`)", timeout="1h"))]
    result, _c, _h = run(fakes, recipe, health_check_timeout=0.2)
    assert by_name(result)["operator"]["health"]["status"] == "Failed"
    assert by_name(result)["operator"]["duration"] < 20  # not the check's hour, nor the component's timeout


def test_health_checks_off_and_skip(fakes):
    failing = deployment_check("operator", expr="(unavailableReplicas > `0`)", timeout="100ms")
    result, _c, _h = run(fakes, [comp("operator", asserts=failing)], health_checks=False)
    assert by_name(result)["operator"]["phase"] == "Ready"
    assert by_name(result)["operator"]["health"]["status"] == "Skipped" and "health_checks: false" in by_name(result)["operator"]["health"]["message"]
    result, _c, _h = run(fakes, [comp("operator", asserts=failing)], health_check_skip=["operator"])
    assert by_name(result)["operator"]["phase"] == "Ready" and by_name(result)["operator"]["health"]["message"] == "skipped (health_check_skip)"
    with pytest.raises(AicrError, match="health_check_skip: unknown components"):
        run(fakes, [comp("operator")], health_check_skip=["nope"])
    with pytest.raises(AicrError, match="health_check_timeout: -1 is not allowed"):
        health.HealthOptions(True, -1)


def test_check_mode_reports_the_check_as_not_run_and_reads_nothing_for_it(fakes):
    recipe = [comp("operator", asserts=deployment_check("operator"))]
    result, cluster, _h = run(fakes, recipe, check_mode=True)
    assert by_name(result)["operator"]["health"] == {"status": "NotRun", "check": "operator-health-check", "operations": 2,
                                                     "message": "runs once the component is Ready"}
    assert cluster.mutations() == []


def test_a_rerun_checks_again_and_stays_a_noop(fakes):
    recipe = [comp("operator", asserts=deployment_check("operator"))]
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, {"operator": lambda v, r, ns: [fakes.deployment(r)]})
    plan = build_plan(recipe)
    checks = health.parse_all(health.checks_of(recipe), plan.order, health.HealthOptions())
    GatedRelease(cluster, helm, plan, Options(stack="t", poll_interval=0.01), checks=checks).run()
    before = len(cluster.mutations())
    again = GatedRelease(cluster, helm, build_plan(recipe), Options(stack="t", poll_interval=0.01), checks=checks).run()
    assert again["changed"] is False and len(cluster.mutations()) == before
    assert by_name(again)["operator"]["phase"] == "Unchanged" and by_name(again)["operator"]["health"]["status"] == "Passed"


def test_a_check_that_cannot_be_evaluated_fails_before_anything_runs():
    bad = deployment_check("operator", expr="(x_k8s_exists(@))")
    with pytest.raises(AicrError, match="calls x_k8s_exists, which is not supported"):
        health.parse_all(health.checks_of([comp("operator", asserts=bad)]), ["operator"], health.HealthOptions())


def test_checks_come_from_the_recipes_component_refs():
    recipe = {"recipe": {"componentRefs": [{"name": "a", "healthCheckAsserts": "x"}, {"name": "b"}, {"name": "c", "healthCheckAsserts": " "}]},
              "components": [{"name": "d", "health_check_asserts": "y"}]}
    assert health.checks_of(recipe) == {"a": "x", "d": "y"}


def test_a_refused_read_names_the_request(fakes):
    from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError

    class Refusing(fakes.FakeCluster):
        def get(self, api_version, kind, name, namespace=None):
            raise ClusterError("cluster: GET ... forbidden", status=403)

    check = assertions.parse_check(deployment_check("operator"), "operator")
    with pytest.raises(AicrError, match=r"reading Deployment apps/operator was refused \(403\)"):
        health.run_check(Refusing(), check, "apps", 0.0, 0.01, lambda: 0.0, lambda s: None)
