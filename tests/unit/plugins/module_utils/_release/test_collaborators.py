"""Each collaborator of a gated_release run built alone over a run context (``_release.context.RunContext``) and the fakes,
not through ``GatedRelease``: the surveyor, the values checker, the chart-CRD manager, the deployer (with a recording
early starter: the small interface it calls), the early starter, the remover, the rollbacker and the reporter (with
stub collaborators). None of these could be written while they were mixins of one class."""

import types

import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import FAILED, READY, STACK_LABEL
from ansible_collections.aicr.runtime.plugins.module_utils._release.chartcrds import ChartCrdManager
from ansible_collections.aicr.runtime.plugins.module_utils._release.context import Namespaces
from ansible_collections.aicr.runtime.plugins.module_utils._release.deploy import Deployer
from ansible_collections.aicr.runtime.plugins.module_utils._release.early import DONE, EarlyStarter
from ansible_collections.aicr.runtime.plugins.module_utils._release.inventory import LAST_KNOWN_GOOD
from ansible_collections.aicr.runtime.plugins.module_utils._release.remove import Remover
from ansible_collections.aicr.runtime.plugins.module_utils._release.result import ComponentState, Reporter
from ansible_collections.aicr.runtime.plugins.module_utils._release.rollback import RollBacker
from ansible_collections.aicr.runtime.plugins.module_utils._release.survey import Surveyor
from ansible_collections.aicr.runtime.plugins.module_utils._release.valuescheck import ValuesChecker

from release_helpers import CRD, comp, context, make_charts

REPO = "https://charts.example/repo"
NOT_MANAGING = types.SimpleNamespace(managing=lambda: False)  # a ChartCrdManager with chart_crds: helm


def fakes_of(fakes):
    cluster = fakes.FakeCluster()
    return cluster, fakes.FakeHelm(cluster, make_charts(fakes))


def states_of(ctx, **actions):
    """``ctx.states`` set by hand: ``{name: action}`` (what a survey would have found)."""
    for name, action in actions.items():
        st = ComponentState(ctx.plan.by_name[name])
        st.action, st.reason = action, "by hand"
        ctx.states[name] = st
    return ctx.states


class RecordingEarlyStarter:
    """What the deployer calls of an early starter, recorded (no helm is started early)."""

    def __init__(self):
        self.calls = []

    def take(self, name):
        self.calls.append(("take", name))

    def drop(self, early, reason):
        self.calls.append(("drop", reason))

    def finish(self, early, remaining):
        raise AssertionError("no helm was started early")

    def installed_from(self, name, path):
        self.calls.append(("installed_from", name))

    def write_state(self, st, docs, installed=True):
        self.calls.append(("write_state", st.comp.name, installed))

    def written(self, name, state):
        self.calls.append(("written", name, state))


def test_the_surveyor_alone_plans_from_the_cluster_and_reports_a_release_its_inventory_does_not_list(fakes):
    cluster, helm = fakes_of(fakes)
    ctx = context(cluster, helm, [comp("x"), comp("y", ["x"])])
    # x deployed as this stack would (its digest label), but the stack's inventory does not list it
    helm.upgrade("x", "apps", "x", REPO, "1.0.0", {}, ctx.release_labels(ctx.plan.by_name["x"]))
    ctx.inventory.load(ctx.action, ctx.warn)
    surveyor = Surveyor(ctx)
    surveyor.survey(objects=False)
    x, y = ctx.states["x"], ctx.states["y"]
    assert (x.action, x.revision, x.release_foreign) == ("unchanged", 1, True)
    assert (y.action, y.reason) == ("install", "release y not found in namespace apps")
    assert [(c["kind"], c["name"]) for c in ctx.foreign_claims] == [("release", "x")]
    assert surveyor.mutation_planned() is True


def test_the_values_checker_alone_refuses_bad_values_and_pulls_each_chart_once(fakes, tmp_path):
    cluster, helm = fakes_of(fakes)
    helm.schemas = {"x": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}
    ctx = context(cluster, helm, [comp("x", values={"replicas": "two"}), comp("y", ["x"])], workdir=tmp_path, validate_values=True)
    states_of(ctx, x="install", y="unchanged")
    checker = ValuesChecker(ctx, NOT_MANAGING)
    refused = checker.check_up_front()
    assert [(st.comp.name, field) for st, field in refused] == [("x", "values")]
    assert ctx.states["x"].phase == FAILED and "violate the chart's values.schema.json" in ctx.states["x"].message
    # the archive pulled for the check is the one the gate (and an early start) installs from: not pulled again
    again = checker.local_chart(ctx.plan.by_name["x"], "x", REPO, [])
    assert again.startswith(str(tmp_path)) and [c[1] for c in helm.calls if c[0] == "pull"] == ["x"]


def test_the_chart_crd_manager_alone_labels_and_applies_a_charts_crds(fakes, tmp_path):
    cluster, helm = fakes_of(fakes)
    helm.chart_files = {"x": {"crds/widgets.yaml": yaml.safe_dump(CRD)}}
    ctx = context(cluster, helm, [comp("x")], workdir=tmp_path, chart_crds="managed")
    states_of(ctx, x="install")
    crds = ChartCrdManager(ctx)
    assert crds.managing()
    archive = helm.pull("x", REPO, "1.0.0", str(tmp_path / "charts"))
    crds.apply(ctx.states["x"], archive, deadline=ctx.clock() + 10)
    live = cluster.get("apiextensions.k8s.io/v1", "CustomResourceDefinition", CRD["metadata"]["name"])
    assert live["metadata"]["labels"][STACK_LABEL] == "test"
    result = crds.into({"changed": True, "actions": []})
    assert [(e["component"], e["name"]) for e in result["chart_crds"]] == [("x", CRD["metadata"]["name"])]
    assert ctx.actions and ctx.actions[0].endswith("CRD widgets.example.aicr.io of the chart of x by server-side apply")


def test_the_deployer_alone_installs_a_component_and_tells_its_early_starter(fakes, tmp_path):
    cluster, helm = fakes_of(fakes)
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "aicr-system"}})  # the inventory's (the run's scratch)
    ctx = context(cluster, helm, [comp("x")], workdir=tmp_path)
    ctx.inventory.load(ctx.action, ctx.warn)
    surveyor = Surveyor(ctx)
    surveyor.survey(objects=False)
    early = RecordingEarlyStarter()
    namespaces = Namespaces(ctx)
    deployer = Deployer(ctx, surveyor, ValuesChecker(ctx, NOT_MANAGING), NOT_MANAGING, early, Remover(ctx), namespaces)
    assert deployer.deploy("x", ctx.clock() + 30) == READY
    assert [u[1] for u in helm.upgrades()] == ["x"]
    assert early.calls == [("take", "x"), ("write_state", "x", True), ("written", "x", DONE)]
    assert "create namespace apps" in ctx.actions and any(a.startswith("install x (chart x 1.0.0 into namespace apps") for a in ctx.actions)
    assert ctx.inventory.entry("x"), "what it installs is written ahead into the inventory"


def test_the_early_starter_alone_is_inert_until_a_helm_that_can_start_early_opens_its_gates(fakes):
    cluster, helm = fakes_of(fakes)  # the fake helm cannot start early (no supports_early_start)
    ctx = context(cluster, helm, [comp("x"), comp("y", ["x"])])
    states_of(ctx, x="install", y="install")
    early = EarlyStarter(ctx, charts=None, namespaces=None)
    for started in (False, True):
        if started:
            early.start(helm)
        assert early.take("y") is None
        assert early.write_state(ctx.states["x"], [], installed=True) is None
        early.written("x", DONE)
        early.abandon_blocked("y")
    early.stop()
    assert helm.calls == [] and ctx.actions == []


def test_the_remover_alone_orders_removal_and_leaves_an_object_it_does_not_own(fakes):
    cluster, helm = fakes_of(fakes)
    ctx = context(cluster, helm, [comp("x"), comp("y", ["x"])])
    states_of(ctx, x="unchanged", y="unchanged")
    ctx.leftovers = [("old", {"namespace": "apps", "dependencies": ["y"]})]
    remover = Remover(ctx)
    order, entries, deps = remover.removal_entries(include_plan=True)
    assert order == ["x", "y", "old"]
    assert deps == {"x": ["y"], "y": ["old"], "old": []}  # dependents first: y waits for old, x for y
    assert entries["x"]["planned_release"] == "x" and entries["old"] == {"namespace": "apps", "dependencies": ["y"]}
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm", "namespace": "apps", "labels": {STACK_LABEL: "other"}}})
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "namespace": "apps", "id": "x/post/0"}
    assert remover.delete_refs("x", [ref], ctx.clock() + 5) is False
    assert cluster.get("v1", "ConfigMap", "cm", "apps") is not None
    assert ctx.warnings == ["left ConfigMap apps/cm alone: the inventory lists it for component x, but it belongs to stack other; "
                            "stack test does not delete it"]


def test_the_rollbacker_alone_plans_from_the_inventorys_last_known_good(fakes):
    records = {"x": {"release_record": {LAST_KNOWN_GOOD: {"revision": 3, "digest": "d"}}}}
    inventory = types.SimpleNamespace(loaded_entry=lambda name: records.get(name) or {})
    ctx = context(fakes.FakeCluster(), None, [comp("x"), comp("y"), comp("z")], inventory=inventory, on_failure="rollback")
    for st in states_of(ctx, x="upgrade", y="upgrade", z="install").values():
        st.deployed = object() if st.action == "upgrade" else None
    rollbacker = RollBacker(ctx)
    assert rollbacker.planned() == [
        "would roll back x to revision 3 if its gate fails (on_failure: rollback)",
        "would not roll back y if its gate fails: no last known good revision is recorded (on_failure: rollback)"]
    assert rollbacker.roll_back_failed() == []  # nothing failed


def test_the_reporter_alone_reports_the_plan_and_a_refusal(fakes):
    ctx = context(fakes.FakeCluster(), None, [comp("x"), comp("y", ["x"])], check_mode=True)
    states_of(ctx, x="install", y="unchanged")
    rollbacker = types.SimpleNamespace(planned=lambda: ["would roll back nothing"])
    reporter = Reporter(ctx, rollbacker, NOT_MANAGING)
    result = reporter.result(None, None)
    assert result["changed"] is True
    assert result["actions"] == ["would install x (by hand)", "would roll back nothing"]
    assert [w["components"][0]["name"] for w in result["waves"]] == ["x", "y"]
    ctx.states["x"].phase, ctx.states["x"].message = FAILED, "component x: bad values"
    refused = reporter.refused_up_front([(ctx.states["x"], "values")])
    assert refused["changed"] is False and refused["errors"] == [{"field": "values", "component": "x", "message": "component x: bad values"}]
    assert refused["failed_message"].startswith("gated_release: 1 of 2 components refused before anything was installed")
    assert ctx.states["y"].message == "not started: the values of x were refused before anything was installed"
