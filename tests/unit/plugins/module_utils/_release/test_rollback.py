"""on_failure: rollback (``_release.rollback``) against the in-memory cluster and helm fakes."""

import copy
import json

from ansible_collections.aicr.runtime.plugins.module_utils._release import rollback
from ansible_collections.aicr.runtime.plugins.module_utils._release.inventory import LAST_KNOWN_GOOD

from release_helpers import comp, engine, make_charts

WIDGETS = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.example.aicr.io"},
           "spec": {"group": "example.aicr.io", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"},
                    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {"type": "object", "properties": {}}}}]}}


def widgets(fields):
    crd = copy.deepcopy(WIDGETS)
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"] = dict((f, {"type": "string"}) for f in fields)
    return crd


def setup(fakes, names):
    cluster = fakes.FakeCluster()
    charts = make_charts(fakes)
    charts["crdop"] = lambda values, release, ns: [fakes.deployment(release, fail=values.get("fail")), widgets(values.get("fields") or ["a"])]
    return cluster, fakes.FakeHelm(cluster, charts)


def by_name(result):
    return dict((c["name"], c) for c in result["components"])


def inventory(cluster):
    cm = cluster.get("v1", "ConfigMap", "aicr-runtime-test-inventory", "aicr-system")
    return json.loads(cm["data"]["inventory"])["components"]


def revision_of(cluster, name):
    secrets = cluster.list("v1", "Secret", namespace="apps", label_selector="owner=helm,name=%s,status=deployed" % name)
    return [int(s["metadata"]["labels"]["version"]) for s in secrets]


def rollbacks(helm):
    return [c[1:] for c in helm.calls if c[0] == "rollback"]


def first_run(cluster, helm, recipe, **opts):
    result = engine(cluster, helm, recipe, **opts).run()
    assert "failed_message" not in result, result.get("failed_message")
    return result


def test_a_passing_gate_records_the_last_known_good_revision(fakes):
    cluster, helm = setup(fakes, ())
    result = first_run(cluster, helm, [comp("x")])
    assert inventory(cluster)["x"]["release_record"][LAST_KNOWN_GOOD] == {"revision": 1, "digest": inventory(cluster)["x"]["release_record"]["digest"]}
    assert by_name(result)["x"]["last_known_good"] == 1


def test_the_failing_component_is_rolled_back_and_its_blocked_dependent_left_alone(fakes):
    cluster, helm = setup(fakes, ())
    first_run(cluster, helm, [comp("x"), comp("y", ["x"])])
    result = engine(cluster, helm, [comp("x", values={"fail": "image pull"}), comp("y", ["x"], values={"v": 2})], on_failure="rollback").run()
    comps = by_name(result)
    assert comps["x"]["phase"] == "Failed" and comps["y"]["phase"] == "Blocked"
    assert rollbacks(helm) == [("x", "apps", 1)]
    entry = comps["x"]["rollback"]
    assert (entry["status"], entry["from"], entry["to"], entry["revision"]) == ("rolled_back", 2, 1, 3)
    assert entry["reason"].startswith("its gate failed: ") and "image pull" in entry["reason"]
    assert result["rollbacks"] == [entry]
    assert "rolled back from revision 2 to 1 (now revision 3)" in comps["x"]["message"]
    assert "roll back x from revision 2 to 1" in " ".join(result["actions"])
    assert revision_of(cluster, "x") == [3] and revision_of(cluster, "y") == [1]  # y: never upgraded, not rolled back
    x = inventory(cluster)["x"]["release_record"]
    assert (x["revision"], x[LAST_KNOWN_GOOD]["revision"]) == (3, 1)
    # the rolled-back revision carries the digest of revision 1: the next run sees the failed change again and upgrades
    assert x["digest"] == x[LAST_KNOWN_GOOD]["digest"]


def test_dependents_upgraded_in_the_run_are_rolled_back_in_reverse_order_untouched_ones_left(fakes):
    # without the deployment order the dependents are upgraded while their dependency fails its gate
    cluster, helm = setup(fakes, ())
    recipe = [comp("x"), comp("y", ["x"]), comp("z", ["y"]), comp("monitoring"), comp("agent", ["x"])]
    first_run(cluster, helm, recipe, skip_deployment_order=True)
    changed = [comp("x", values={"fail": "crash"}), comp("y", ["x"], values={"v": 2}), comp("z", ["y"], values={"v": 2}),
               comp("monitoring", values={"v": 2}), comp("agent", ["x"])]
    result = engine(cluster, helm, changed, skip_deployment_order=True, on_failure="rollback").run()
    assert rollbacks(helm) == [("x", "apps", 1), ("z", "apps", 1), ("y", "apps", 1)]
    assert [(e["component"], e["status"]) for e in result["rollbacks"]] == [("x", "rolled_back"), ("z", "rolled_back"), ("y", "rolled_back")]
    assert by_name(result)["z"]["rollback"]["reason"] == "upgraded in this run and depends on x, which was rolled back"
    assert by_name(result)["z"]["phase"] == "Ready"
    # monitoring (upgraded, independent) and agent (unchanged dependent) are left as they are
    assert revision_of(cluster, "monitoring") == [2] and revision_of(cluster, "agent") == [1]
    assert "rollback" not in by_name(result)["monitoring"] and "rollback" not in by_name(result)["agent"]
    inv = inventory(cluster)
    assert inv["monitoring"]["release_record"][LAST_KNOWN_GOOD]["revision"] == 2
    assert inv["y"]["release_record"][LAST_KNOWN_GOOD]["revision"] == 1  # rolled back: its new revision is not good


def test_hold_is_unchanged(fakes):
    cluster, helm = setup(fakes, ())
    first_run(cluster, helm, [comp("x")])
    result = engine(cluster, helm, [comp("x", values={"fail": "image pull"})]).run()
    assert by_name(result)["x"]["phase"] == "Failed" and rollbacks(helm) == [] and revision_of(cluster, "x") == [2]
    assert "rollbacks" not in result and "rollback" not in by_name(result)["x"]
    assert inventory(cluster)["x"]["release_record"][LAST_KNOWN_GOOD]["revision"] == 1  # kept for a later rollback


def test_check_mode_says_what_would_be_rolled_back_and_changes_nothing(fakes):
    cluster, helm = setup(fakes, ())
    first_run(cluster, helm, [comp("x"), comp("y", ["x"])])
    writes = cluster.mutations()
    result = engine(cluster, helm, [comp("x", values={"fail": "image pull"}), comp("y", ["x"])], on_failure="rollback", check_mode=True).run()
    assert "would roll back x to revision 1 if its gate fails (on_failure: rollback)" in result["actions"]
    assert not any(a.startswith("would roll back y") for a in result["actions"])  # y is not upgraded
    assert result["rollbacks"] == [] and rollbacks(helm) == [] and cluster.mutations() == writes


def test_a_fresh_install_is_left_not_uninstalled(fakes):
    cluster, helm = setup(fakes, ())
    result = engine(cluster, helm, [comp("x", values={"fail": "image pull"})], on_failure="rollback").run()
    entry = by_name(result)["x"]["rollback"]
    assert entry["status"] == "left" and "installed in this run" in entry["message"]
    assert rollbacks(helm) == [] and not [c for c in helm.calls if c[0] == "uninstall"] and revision_of(cluster, "x") == [1]


def test_a_breaking_crd_change_refuses_the_rollback(fakes):
    cluster, helm = setup(fakes, ())
    first_run(cluster, helm, [comp("crdop", values={"fields": ["a"]})])
    result = engine(cluster, helm, [comp("crdop", values={"fields": ["a", "b"], "fail": "crash"})], on_failure="rollback").run()
    entry = by_name(result)["crdop"]["rollback"]
    assert entry["status"] == "refused" and rollbacks(helm) == [] and revision_of(cluster, "crdop") == [2]
    assert entry["message"].startswith("rollback from revision 2 to 1 refused: it would be a breaking CRD change: CRD widgets.example.aicr.io: ")


def test_an_additive_crd_change_back_is_rolled_back(fakes):
    cluster, helm = setup(fakes, ())
    first_run(cluster, helm, [comp("crdop", values={"fields": ["a", "b"]})])
    result = engine(cluster, helm, [comp("crdop", values={"fields": ["a"], "fail": "crash"})], on_failure="rollback").run()
    assert by_name(result)["crdop"]["rollback"]["status"] == "rolled_back" and rollbacks(helm) == [("crdop", "apps", 1)]


def test_without_a_last_known_good_revision_the_rollback_is_refused(fakes):
    cluster, helm = setup(fakes, ())
    first_run(cluster, helm, [comp("x")])
    cm = cluster.get("v1", "ConfigMap", "aicr-runtime-test-inventory", "aicr-system")
    doc = json.loads(cm["data"]["inventory"])
    del doc["components"]["x"]["release_record"][LAST_KNOWN_GOOD]  # written by a collection before lastKnownGood
    cm["data"]["inventory"] = json.dumps(doc)
    cluster.apply(cm)
    result = engine(cluster, helm, [comp("x", values={"fail": "image pull"})], on_failure="rollback").run()
    entry = by_name(result)["x"]["rollback"]
    assert entry["status"] == "refused" and "no last known good revision" in entry["message"] and rollbacks(helm) == []


def test_on_failure_is_checked(fakes):
    cluster, helm = setup(fakes, ())
    try:
        engine(cluster, helm, [comp("x")], on_failure="rollbak")
    except Exception as exc:  # pylint: disable=broad-except
        assert "on_failure" in str(exc) and "did you mean rollback?" in str(exc)
    else:
        raise AssertionError("on_failure: rollbak was accepted")


def test_breaking_crd_change_rules():
    assert rollback.breaking_crd_change({"w": widgets(["a"])}, {"w": widgets(["a"])}) is None
    assert rollback.breaking_crd_change({"w": widgets(["a"])}, {}) == "CRD w is not in the revision rolled back to"
    assert rollback.breaking_crd_change({}, {"w": widgets(["a"])}) is None


def clocked_run(fakes, spent, overall_timeout=100):
    """x upgraded to a failing revision while ``spent`` seconds of the run pass (a fake clock); the timeouts helm rollback got."""
    cluster, helm = setup(fakes, ())
    first_run(cluster, helm, [comp("x")])
    clock, budgets = fakes.FakeClock(), []
    upgrade, roll_back = helm.upgrade, helm.rollback

    def slow_upgrade(release, *args, **kwargs):
        clock.advance(spent)
        return upgrade(release, *args, **kwargs)

    def timed_rollback(release, namespace, revision, timeout=None):
        budgets.append(timeout)
        return roll_back(release, namespace, revision, timeout=timeout)

    helm.upgrade, helm.rollback = slow_upgrade, timed_rollback
    run = engine(cluster, helm, [comp("x", values={"fail": "image pull"})], on_failure="rollback", overall_timeout=overall_timeout)
    run.ctx.clock = clock
    return run.run(), helm, budgets


def test_the_rollback_gets_what_remains_of_overall_timeout_not_its_whole_timeout(fakes):
    result, helm, budgets = clocked_run(fakes, spent=95)
    assert by_name(result)["x"]["rollback"]["status"] == "rolled_back" and rollbacks(helm) == [("x", "apps", 1)]
    assert len(budgets) == 1 and 0 < budgets[0] <= 5, budgets  # timeout 10, 5 s of overall_timeout left


def test_a_rollback_with_no_time_left_is_not_started_and_says_it_ran_out_of_time(fakes):
    result, helm, budgets = clocked_run(fakes, spent=101)
    entry = by_name(result)["x"]["rollback"]
    assert (entry["status"], entry["from"], entry["to"]) == ("failed", 2, 1), entry
    assert entry["message"] == "not rolled back from revision 2 to 1: out of time (overall_timeout 100s spent)"
    assert rollbacks(helm) == [] and budgets == [] and revision_of(helm.cluster, "x") == [2]


def test_rollback_budget():
    assert rollback.rollback_budget(10, None, 50) == 10
    assert rollback.rollback_budget(10, 100, 50) == 10
    assert rollback.rollback_budget(10, 100, 97) == 3
    assert rollback.rollback_budget(10, 100, 101) == 0
