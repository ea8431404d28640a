"""The gated rollout engine against the in-memory cluster and helm fakes."""

import threading

import pytest
import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import StackLease
from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan
from ansible_collections.aicr.runtime.plugins.module_utils._kube.readiness import READY, assess
from release_helpers import comp, engine, make_charts, write


@pytest.fixture
def example(tmp_path, fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, make_charts(fakes, {"crds": 0.05, "operator": 0.05}))
    widget_doc = {"apiVersion": "example.aicr.io/v1", "kind": "Widget", "spec": {"size": 1},
                  "metadata": {"name": "demo", "annotations": {fakes.READY_AFTER: "0.02"}}}
    widget = write(tmp_path, "widget.yaml", [widget_doc])
    pre_cm = write(tmp_path, "pre.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "operator-settings"}, "data": {"a": "1"}}])
    cfg = write(tmp_path, "cfg.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-config"}, "data": {"site": "lab"}}, None])
    recipe = {"recipe_name": "example", "components": [
        comp("crds"),
        comp("operator", ["crds"], pre=[pre_cm], post=[widget]),
        comp("agent", ["operator"], values={"replicas": 1}),
        comp("monitoring", []),
        comp("config", ["crds"], chart="", post=[cfg]),
    ]}
    return cluster, helm, recipe


def test_converges_then_rerun_is_a_noop(example):
    cluster, helm, recipe = example
    result = engine(cluster, helm, recipe).run()
    assert "failed_message" not in result, result.get("failed_message")
    assert result["changed"] is True
    phases = dict((c["name"], c["phase"]) for c in result["components"])
    assert phases == {"crds": "Ready", "operator": "Ready", "agent": "Ready", "monitoring": "Ready", "config": "Ready"}
    assert [[c["name"] for c in w["components"]] for w in result["waves"]] == [["crds", "monitoring"], ["operator", "config"], ["agent"]]
    operator = [c for c in result["components"] if c["name"] == "operator"][0]
    assert [o["id"] for o in operator["objects"]] == ["operator-pre-configmap-operator-settings", "operator-post-widget-demo"]
    assert operator["revision"] == 1 and operator["kind"] == "release"
    config = [c for c in result["components"] if c["name"] == "config"][0]
    assert config["kind"] == "objects" and config["revision"] is None
    widget = cluster.get("example.aicr.io/v1", "Widget", "demo", "apps")
    assert widget["metadata"]["labels"]["aicr.io/component"] == "operator"
    assert widget["metadata"]["labels"]["aicr.io/stack"] == "test"
    assert result["summary"]["deployed_components"][0] in ("crds", "monitoring")
    assert result["summary"]["component_count"] == 5
    assert any(a.startswith("install crds") for a in result["actions"])

    upgrades, mutations = len(helm.upgrades()), len(cluster.mutations())
    again = engine(cluster, helm, recipe).run()
    assert again["changed"] is False
    assert len(helm.upgrades()) == upgrades, "a no-op run must not call helm upgrade"
    assert len(cluster.mutations()) == mutations, cluster.mutations()[mutations:]
    assert set(c["phase"] for c in again["components"]) == {"Unchanged"}
    assert again["actions"] == []


@pytest.mark.parametrize("version, skips", [((1, 37), True), ((1, 27), True), ((1, 26), False), (None, False)])
def test_helm_skips_its_openapi_download_only_on_a_server_that_validates_fields(example, version, skips):
    cluster, helm, recipe = example
    cluster.version = version
    result = engine(cluster, helm, recipe).run()
    assert "failed_message" not in result, result.get("failed_message")
    assert helm.server_validates_fields is skips


def test_a_namespace_is_read_once_per_run_however_many_components_install_into_it(fakes):
    class CountingCluster(fakes.FakeCluster):
        namespace_reads = 0

        def get(self, api_version, kind, name, namespace=None):
            if kind == "Namespace" and name == "apps":
                CountingCluster.namespace_reads += 1
            return super(CountingCluster, self).get(api_version, kind, name, namespace)

    cluster = CountingCluster()
    helm = fakes.FakeHelm(cluster, make_charts(fakes))
    recipe = {"components": [comp("x"), comp("y", ["x"]), comp("z", ["y"])]}
    result = engine(cluster, helm, recipe).run()
    assert "failed_message" not in result, result.get("failed_message")
    assert [c["phase"] for c in result["components"]] == ["Ready"] * 3
    assert cluster.get("v1", "Namespace", "apps") is not None
    assert CountingCluster.namespace_reads == 2, "one read at the first gate (created then), the check above"
    assert result["actions"].count("create namespace apps") == 1


def test_components_reaching_their_gates_together_read_their_namespace_once(fakes):
    """Four independent components of one namespace open their gates at once: one reads it, three wait for its answer.
    The first read holds on until a second one arrives (or 0.5 s pass), so concurrent reads cannot miss each other."""
    second_read = threading.Event()

    class CountingCluster(fakes.FakeCluster):
        namespace_reads = 0

        def get(self, api_version, kind, name, namespace=None):
            if kind == "Namespace" and name == "apps":
                CountingCluster.namespace_reads += 1
                if CountingCluster.namespace_reads == 1:
                    second_read.wait(0.5)
                else:
                    second_read.set()
            return super(CountingCluster, self).get(api_version, kind, name, namespace)

    cluster = CountingCluster()
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    helm = fakes.FakeHelm(cluster, make_charts(fakes))
    result = engine(cluster, helm, {"components": [comp(name) for name in ("a", "b", "c", "d")]}, concurrency=4).run()
    assert "failed_message" not in result, result.get("failed_message")
    assert CountingCluster.namespace_reads == 1
    assert not second_read.is_set()


def test_check_mode_is_the_plan_and_mutates_nothing(example):
    cluster, helm, recipe = example
    result = engine(cluster, helm, recipe, check_mode=True).run()
    assert result["changed"] is True
    assert cluster.mutations() == [] and helm.upgrades() == []
    wave1 = result["waves"][0]["components"]
    assert wave1[0] == {"name": "crds", "action": "install", "reason": "release crds not found in namespace apps", "objects": {}}
    assert "would install operator (release operator not found in namespace apps)" in result["actions"]
    assert any(a.startswith("would apply object operator-post-widget-demo (kind Widget") for a in result["actions"])
    assert all(c["phase"] == "Pending" for c in result["components"])


def test_values_change_upgrades_with_reason_and_diff(example):
    cluster, helm, recipe = example
    engine(cluster, helm, recipe).run()
    recipe["components"][2]["values"] = {"replicas": 2}
    check = engine(cluster, helm, recipe, check_mode=True, diff=True).run()
    agent = [c for c in check["components"] if c["name"] == "agent"][0]
    assert (agent["action"], agent["reason"]) == ("upgrade", "values changed")
    assert check["diff"] == [{"before_header": "agent values (revision 1)", "after_header": "agent values (upgrade)",
                              "before": "replicas: 1\n", "after": "replicas: 2\n"}]
    before = len(helm.upgrades())
    result = engine(cluster, helm, recipe).run()
    assert [c[1] for c in helm.upgrades()[before:]] == ["agent"]
    assert result["changed"] is True
    assert [c for c in result["components"] if c["name"] == "agent"][0]["revision"] == 2


def test_diff_never_shows_a_secret_value_neither_the_deployed_one_nor_the_new_one(example):
    """The deployed values are read back from the release Secret: under a sensitive key they are <hidden>, and a changed
    one is <changed> after; the user's own sensitive paths add to that."""
    cluster, helm, recipe = example
    recipe["components"][2]["values"] = {"replicas": 1, "auth": {"adminPassword": "old-pa55", "user": "u1"}, "apiKey": "k-same",
                                         "extra": {"credential": "c-old"}}
    engine(cluster, helm, recipe).run()
    recipe["components"][2]["values"] = {"replicas": 2, "auth": {"adminPassword": "new-pa55", "user": "u1"}, "apiKey": "k-same",
                                         "extra": {"credential": "c-new"}}
    check = engine(cluster, helm, recipe, check_mode=True, diff=True, sensitive_values=["password", "apiKey", "extra.credential"]).run()
    [diff] = check["diff"]
    text = repr(check)
    for secret in ("old-pa55", "new-pa55", "k-same", "c-old", "c-new"):
        assert secret not in text
    before = {"replicas": 1, "auth": {"adminPassword": "<hidden>", "user": "u1"}, "apiKey": "<hidden>", "extra": {"credential": "<hidden>"}}
    after = {"replicas": 2, "auth": {"adminPassword": "<changed>", "user": "u1"}, "apiKey": "<hidden>", "extra": {"credential": "<changed>"}}
    assert yaml.safe_load(diff["before"]) == before
    assert yaml.safe_load(diff["after"]) == after


def test_object_change_is_applied_without_helm(example, tmp_path):
    cluster, helm, recipe = example
    engine(cluster, helm, recipe).run()
    before = len(helm.upgrades())
    recipe["components"][4]["manifest_paths"] = [write(tmp_path, "cfg2.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-config"},
                                                                                "data": {"site": "prod"}}])]
    result = engine(cluster, helm, recipe).run()
    assert len(helm.upgrades()) == before
    config = [c for c in result["components"] if c["name"] == "config"][0]
    assert config["phase"] == "Ready" and config["objects"][0]["action"] == "update"
    assert cluster.get("v1", "ConfigMap", "site-config", "apps")["data"] == {"site": "prod"}


def test_failure_blocks_exactly_dependents_and_rerun_finishes(example):
    cluster, helm, recipe = example
    helm.fail["operator"] = "chart not found"
    result = engine(cluster, helm, recipe).run()
    phases = dict((c["name"], (c["phase"], c["blocked_by"])) for c in result["components"])
    assert phases["operator"] == ("Failed", [])
    assert phases["agent"] == ("Blocked", ["operator"])
    assert phases["crds"][0] == phases["monitoring"][0] == phases["config"][0] == "Ready"
    assert result["failed_message"].startswith("gated_release: 2 of 5 components did not converge; failed: operator (helm upgrade --install operator failed")
    assert "blocked: agent (by operator)" in result["failed_message"]
    del helm.fail["operator"]
    again = engine(cluster, helm, recipe).run()
    phases = dict((c["name"], c["phase"]) for c in again["components"])
    assert phases == {"crds": "Unchanged", "operator": "Ready", "agent": "Ready", "monitoring": "Unchanged", "config": "Unchanged"}


def test_timeout_names_the_resource_and_rerun_after_fix(fakes):
    cluster = fakes.FakeCluster()
    delays = {"x": 3600.0}
    helm = fakes.FakeHelm(cluster, make_charts(fakes, delays))
    recipe = [comp("x"), comp("y", ["x"])]
    result = engine(cluster, helm, recipe, timeout=0.2).run()
    x = result["components"][0]
    assert x["phase"] == "Failed"
    assert x["message"] == "component x: timed out waiting for release x: Deployment apps/x not ready: 0 of 1 replicas ready"
    assert result["components"][1]["phase"] == "Blocked"
    cluster.clock.advance(4000)  # the cause is fixed: the deployment becomes available
    again = engine(cluster, helm, recipe, timeout=5).run()
    assert [c["phase"] for c in again["components"]] == ["Unchanged", "Ready"]
    assert [c[1] for c in helm.upgrades()] == ["x", "y"]


def test_failed_workload_fails_fast(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, make_charts(fakes))
    result = engine(cluster, helm, [comp("x", values={"fail": "image pull"})], timeout=30).run()
    assert result["components"][0]["phase"] == "Failed"
    assert "Deployment apps/x failed (progress deadline exceeded: image pull)" in result["components"][0]["message"]


def test_skip_disable_override_and_unmanaged_dependency(example):
    cluster, helm, recipe = example
    result = engine(cluster, helm, recipe, skip_components=["crds"], component_overrides={
        "monitoring": {"enabled": False}, "agent": {"version": "2.0.0", "values": {"extra": True}}}).run()
    names = [c["name"] for c in result["components"]]
    assert "crds" not in names and "monitoring" not in names
    assert {"name": "crds", "reason": "skip_components"} in result["summary"]["skipped_components"]
    agent = [c for c in result["components"] if c["name"] == "agent"][0]
    assert agent["version"] == "2.0.0" and agent["dependencies"] == ["operator"]
    operator = [c for c in result["components"] if c["name"] == "operator"][0]
    # the Widget kind comes from the skipped crds component: the unmanaged dependency counts as satisfied,
    # the object then cannot be applied and operator fails, blocking agent.
    assert operator["phase"] == "Failed" and "not served" in operator["message"]
    assert agent["phase"] == "Blocked"


def test_unknown_override_is_an_error(example):
    _cluster, _helm, recipe = example
    with pytest.raises(AicrError, match=r"unknown components \['nope'\]"):
        build_plan(recipe, component_overrides={"nope": {}})
    with pytest.raises(AicrError, match="unknown keys"):
        build_plan(recipe, component_overrides={"agent": {"colour": "red"}})


def test_skip_deployment_order_is_one_wave(example):
    _cluster, _helm, recipe = example
    plan = build_plan(recipe, skip_deployment_order=True)
    assert plan.waves() == [{"wave": 1, "components": ["crds", "operator", "agent", "monitoring", "config"]}]


def test_absent_removes_in_reverse_dependency_order(example):
    cluster, helm, recipe = example
    engine(cluster, helm, recipe).run()
    result = engine(cluster, helm, recipe, state="absent", concurrency=1).run()
    assert result["changed"] is True
    uninstalls = [c[1] for c in helm.calls if c[0] == "uninstall"]
    assert uninstalls.index("agent") < uninstalls.index("operator") < uninstalls.index("crds")
    assert set(c["phase"] for c in result["components"]) == {"Removed"}
    assert cluster.get("example.aicr.io/v1", "Widget", "demo", "apps") is None
    assert cluster.get("v1", "ConfigMap", "site-config", "apps") is None
    assert cluster.list("v1", "Secret", label_selector="owner=helm") == []
    again = engine(cluster, helm, recipe, state="absent").run()
    assert again["changed"] is False


def test_prune_removes_what_the_recipe_no_longer_has(example):
    cluster, helm, recipe = example
    engine(cluster, helm, recipe).run()
    smaller = {"components": [c for c in recipe["components"] if c["name"] not in ("agent", "config")]}
    kept = engine(cluster, helm, smaller).run()
    assert kept["changed"] is False and cluster.get("apps/v1", "Deployment", "agent", "apps") is not None
    check = engine(cluster, helm, smaller, prune=True, check_mode=True).run()
    assert sorted(c["name"] for c in check["components"] if c["action"] == "remove") == ["agent", "config"]
    pruned = engine(cluster, helm, smaller, prune=True).run()
    assert pruned["changed"] is True
    assert dict((c["name"], c["phase"]) for c in pruned["components"])["agent"] == "Removed"
    assert cluster.get("apps/v1", "Deployment", "agent", "apps") is None
    assert cluster.get("v1", "ConfigMap", "site-config", "apps") is None
    assert engine(cluster, helm, smaller, prune=True).run()["changed"] is False


def test_lease_held_by_another_run_fails_with_holder(example):
    cluster, helm, recipe = example
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "aicr-system"}})  # the default lease_namespace
    other = StackLease(cluster, "test", namespace="aicr-system", identity="alice@ci/42", message="site.yml on prod", duration=60)
    other.acquire()
    try:
        with pytest.raises(AicrError, match=r"stack test is being rolled out by alice@ci/42 \(site.yml on prod\)"):
            engine(cluster, helm, recipe).run()
        assert helm.upgrades() == []
    finally:
        other.release()


def test_stale_lease_is_taken_over(example):
    cluster, helm, recipe = example
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "aicr-system"}})  # the default lease_namespace
    stale = StackLease(cluster, "test", namespace="aicr-system", identity="bob@old/1", duration=5)
    stale.acquire()
    stale._stop.set()  # pylint: disable=protected-access  # bob crashed: no renewal, no release
    stale._thread.join()  # pylint: disable=protected-access
    lease = cluster.get("coordination.k8s.io/v1", "Lease", "aicr-runtime-test", "aicr-system")
    lease["spec"]["renewTime"] = "2000-01-01T00:00:00.000000Z"
    cluster.replace(lease)
    result = engine(cluster, helm, recipe).run()
    assert result["summary"]["lease_taken_over_from"]["holder"] == "bob@old/1"
    assert cluster.get("coordination.k8s.io/v1", "Lease", "aicr-runtime-test", "aicr-system") is None


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data())
def test_gate_order_under_random_readiness_delays(fakes, data):
    names = ["x", "y", "z", "crds", "operator", "agent", "monitoring", "jobs"]
    count = data.draw(st.integers(min_value=2, max_value=len(names)))
    order = names[:count]
    deps = dict((n, sorted(data.draw(st.sets(st.sampled_from(order[:i]), max_size=2))) if i else []) for i, n in enumerate(order))
    delays = dict((n, data.draw(st.sampled_from([0.0, 0.01, 0.03, 0.06]))) for n in order)
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, make_charts(fakes, delays))
    violations = []
    lock = threading.Lock()
    original = helm.upgrade

    def checked_upgrade(release, namespace, *args, **kwargs):
        for dep in deps[release]:
            state = assess(cluster.get("apps/v1", "Deployment", dep, "apps"))[0]
            if state != READY:
                with lock:
                    violations.append((release, dep, state))
        return original(release, namespace, *args, **kwargs)

    helm.upgrade = checked_upgrade
    recipe = [comp(n, deps[n]) for n in order]
    result = engine(cluster, helm, recipe, concurrency=data.draw(st.integers(min_value=1, max_value=4))).run()
    assert not violations
    assert all(c["phase"] == "Ready" for c in result["components"]), result.get("failed_message")


def test_overall_timeout_stops_the_rollout_and_names_what_did_not_start(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, make_charts(fakes, {"x": 3600.0}))
    result = engine(cluster, helm, [comp("x"), comp("y", ["x"]), comp("z")], overall_timeout=0.3, timeout=60, concurrency=1).run()
    phases = dict((c["name"], (c["phase"], c["message"])) for c in result["components"])
    assert phases["x"][0] == "Failed" and "timed out waiting for release x: Deployment apps/x not ready" in phases["x"][1]
    assert phases["y"] == ("Blocked", "blocked: dependency x failed")
    assert phases["z"] == ("Blocked", "overall timeout reached before it could start")


def test_values_checked_against_every_chart_before_anything_is_installed(fakes):
    """Issue 36: y was installed, then x refused at its gate and z blocked - a half-applied stack. Now nothing starts."""
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, make_charts(fakes))
    schema = {"type": "object", "required": ["image"], "properties": {"replicas": {"type": "integer"}, "image": {"type": "string"}}}
    helm.schemas = {"x": schema, "y": schema}
    helm.defaults = {"x": {"image": "nginx"}, "y": {"image": "nginx"}}
    recipe = [comp("y", values={"replicas": 2}), comp("x", ["y"], values={"replicas": "two"}), comp("z", ["x"])]
    mark = len(cluster.audit)
    result = engine(cluster, helm, recipe, validate_values=True).run()
    phases = dict((c["name"], (c["phase"], c["message"])) for c in result["components"])
    # the path and the rule, never the value (values may be secret)
    assert phases["x"] == ("Failed", "values: component x: 1 value(s) violate the chart's values.schema.json; "
                                     "first: values.replicas: violates type integer")
    assert phases["y"] == phases["z"] == ("Pending", "not started: the values of x were refused before anything was installed")
    assert result["failed_message"] == ("gated_release: 1 of 3 components refused before anything was installed (nothing was changed): "
                                        "x (values: component x: 1 value(s) violate the chart's values.schema.json; first: values.replicas: "
                                        "violates type integer)")
    assert result["errors"] == [{"field": "values", "component": "x", "message": phases["x"][1]}]
    assert result["changed"] is False and helm.upgrades() == [] and cluster.audit[mark:] == [], "no Lease, no namespace, no release: nothing written"
    assert sorted(c[1] for c in helm.calls if c[0] == "pull") == ["x", "y", "z"], "every chart pulled up front, at once"


def test_valid_values_install_from_the_charts_checked_up_front_pulled_once(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, make_charts(fakes))
    schema = {"type": "object", "required": ["image"], "properties": {"replicas": {"type": "integer"}, "image": {"type": "string"}}}
    helm.schemas = {"x": schema, "y": schema}
    helm.defaults = {"x": {"image": "nginx"}, "y": {"image": "nginx"}}
    result = engine(cluster, helm, [comp("x", values={"replicas": 1}), comp("y", ["x"], values={"replicas": 2})], validate_values=True).run()
    assert "failed_message" not in result, result["failed_message"]
    assert set(c["phase"] for c in result["components"]) == {"Ready"}, "chart defaults (image) are merged before validation"
    assert [c[1] for c in helm.calls if c[0] == "pull"] == ["x", "y"], "each chart pulled once: the gate installs what was checked"
    assert [c[3].rsplit("/", 1)[-1] for c in helm.upgrades()] == ["x-1.0.0.tgz", "y-1.0.0.tgz"], "installed from the validated archives"
    again = engine(cluster, helm, [comp("x", values={"replicas": 1}), comp("y", ["x"], values={"replicas": 2})], validate_values=True).run()
    assert again["changed"] is False and [c[1] for c in helm.calls if c[0] == "pull"] == ["x", "y"], "an unchanged release is not checked again"


def test_check_mode_reports_values_the_chart_schema_would_refuse(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, make_charts(fakes))
    schema = {"type": "object", "properties": {"replicas": {"type": "integer"}}}
    helm.schemas = {"x": schema, "y": schema}
    mark = len(cluster.audit)
    result = engine(cluster, helm, [comp("x", values={"replicas": "two"}), comp("y", values={"replicas": 2})], validate_values=True,
                    check_mode=True).run()
    phases = dict((c["name"], (c["phase"], c["message"])) for c in result["components"])
    # the path and the rule, never the value (values may be secret)
    assert phases["x"] == ("Failed", "values: component x: 1 value(s) violate the chart's values.schema.json; "
                                     "first: values.replicas: violates type integer")
    assert phases["y"][0] == "Pending"
    assert "x (values: component x" in result["failed_message"]
    assert helm.upgrades() == [] and cluster.audit[mark:] == [], "check mode pulls charts but changes nothing"
    # a refusal would change nothing: not the plan's changed and "would install" (issue 36)
    assert result["changed"] is False and not any(a.startswith("would ") for a in result["actions"])
