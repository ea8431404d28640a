"""ClusterStack status model: conditions, history FIFO, components, phases, Ready condition."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import timeutil
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._stack import model

T0, T1, T2 = "2026-11-29T10:00:00Z", "2026-11-29T10:05:00Z", "2026-11-29T10:10:00Z"


def test_condition_transition_time_moves_only_when_status_changes():
    conds = model.set_condition([], "ComponentsReady", "False", "Deploying", "2/6", 1, now=T0)
    assert conds == [{"type": "ComponentsReady", "status": "False", "reason": "Deploying", "message": "2/6", "observedGeneration": 1,
                      "lastTransitionTime": T0}]
    same = model.set_condition(conds, "ComponentsReady", "False", "Deploying", "4/6", 2, now=T1)
    assert same[0]["lastTransitionTime"] == T0 and same[0]["message"] == "4/6" and same[0]["observedGeneration"] == 2
    flipped = model.set_condition(same, "ComponentsReady", True, "AllReady", "6/6", 2, now=T2)
    assert flipped[0]["status"] == "True" and flipped[0]["lastTransitionTime"] == T2
    assert conds[0]["message"] == "2/6", "the input list is never mutated"


def test_conditions_keep_a_stable_order_and_reject_unknown_values():
    conds = model.set_condition([], "CatalogCurrent", "Unknown", now=T0)
    conds = model.set_condition(conds, "RecipeResolved", "True", "Resolved", now=T0)
    conds = model.set_condition(conds, "Ready", "False", "Reconciling", now=T0)
    assert [c["type"] for c in conds] == ["Ready", "RecipeResolved", "CatalogCurrent"]
    assert conds[2]["reason"] == "Unknown"
    with pytest.raises(AicrError, match=r"conditions\[\]\.type: 'Healthy' is not allowed; allowed: Ready, "):
        model.set_condition(conds, "Healthy", "True")
    with pytest.raises(AicrError, match=r"conditions\[\]\.status: 'yes' is not allowed"):
        model.set_condition(conds, "Ready", "yes")


def test_history_is_a_fifo_of_fifty():
    history = []
    for index in range(120):
        history = model.add_events(history, [{"type": "T", "message": "event %d" % index}], now=T0)
        assert len(history) <= model.HISTORY_LIMIT
    assert len(history) == 50
    assert history[0]["message"] == "event 70" and history[-1]["message"] == "event 119"
    assert model.add_events([], ["plain"], now=T1) == [{"time": T1, "type": "Info", "message": "plain"}]
    with pytest.raises(AicrError, match=r"events\[\]"):
        model.add_events([], [{"type": "x"}])


def test_component_entries_from_gated_release_results():
    result = {"name": "example-operator", "kind": "release", "phase": "Unchanged", "chart": "example-operator", "version": "1.0.0",
              "revision": 3, "namespace": "aicr-demo", "blocked_by": [], "message": "unchanged", "objects": [{"id": "x"}]}
    entry = model.component_entry(result, now=T0)
    assert entry == {"name": "example-operator", "kind": "release", "namespace": "aicr-demo", "chart": "example-operator", "version": "1.0.0",
                     "revision": 3, "ready": True, "phase": "Ready", "blockedBy": [], "message": "unchanged", "lastTransitionTime": T0}
    later = model.component_entry(dict(result, phase="Ready"), previous=entry, now=T1)
    assert later["lastTransitionTime"] == T0
    with pytest.raises(AicrError, match=r"components\[x\]\.phase: 'Exploded' is not allowed"):
        model.component_entry({"name": "x", "phase": "Exploded"})


def test_merge_records_transitions_and_drops_removed_components():
    current, events = model.merge_components([], [{"name": "a", "phase": "Deploying"}, {"name": "b", "phase": "Pending"}], now=T0)
    assert [e["type"] for e in events] == ["ComponentDeploying", "ComponentPending"]
    current, events = model.merge_components(current, [{"name": "a", "phase": "Failed", "message": "timed out"}], now=T1)
    assert [c["name"] for c in current] == ["a", "b"] and current[0]["phase"] == "Failed"
    assert events == [{"type": "ComponentFailed", "message": "component a Deploying -> Failed: timed out"}]
    current, events = model.merge_components(current, [{"name": "b", "phase": "Blocked", "blocked_by": ["a"]}], now=T1)
    assert events[0]["message"] == "component b Pending -> Blocked (blocked by a)"
    current, events = model.merge_components(current, [{"name": "a", "phase": "Removed"}], now=T2)
    assert [c["name"] for c in current] == ["b"]
    replaced, _events = model.merge_components(current, [{"name": "c", "phase": "Ready"}], replace=True, now=T2)
    assert [c["name"] for c in replaced] == ["c"]


def test_apply_update_phase_ready_condition_history_and_observed_generation():
    status, events = model.apply_update({}, {"phase": "Resolving"}, now=T0, generation=1)
    assert status["phase"] == "Resolving" and events == [{"type": "PhaseResolving", "message": "phase new -> Resolving"}]
    assert model.get_condition(status, "Ready")["reason"] == "Reconciling"
    status, _events = model.apply_update(status, {"recipe": {"name": "r", "catalogVersion": "1.0.0", "catalogDigest": "sha256:1"},
                                                  "conditions": [{"type": "RecipeResolved", "status": "True", "reason": "Resolved"}]}, now=T1)
    assert status["recipe"]["resolvedAt"] == T1
    status, events = model.apply_update(status, {"recipe": {"name": "r", "catalogVersion": "1.0.0", "catalogDigest": "sha256:1"}}, now=T2)
    assert status["recipe"]["resolvedAt"] == T1 and events == [], "an unchanged recipe keeps resolvedAt and records nothing"
    status, events = model.apply_update(status, {"phase": "Ready", "observed_generation": 4,
                                                 "components": [{"name": "a", "phase": "Ready"}, {"name": "b", "phase": "Unchanged"}]}, now=T2)
    ready = model.get_condition(status, "Ready")
    assert ready["status"] == "True" and ready["observedGeneration"] == 4 and ready["lastTransitionTime"] == T2
    assert status["observedGeneration"] == 4 and status["readyComponents"] == "2/2"
    assert model.get_condition(status, "RecipeResolved")["lastTransitionTime"] == T1
    assert [e["type"] for e in status["history"]] == ["PhaseResolving", "RecipeResolved", "ComponentReady", "ComponentReady", "PhaseReady"]
    with pytest.raises(AicrError, match="Ready is not allowed here"):
        model.apply_update(status, {"conditions": [{"type": "Ready", "status": "True"}]})
    with pytest.raises(AicrError, match=r"phase: 'Done' is not allowed; allowed: Pending, Resolving"):
        model.apply_update(status, {"phase": "Done"})


def test_failed_phase_names_the_failing_condition():
    status, _events = model.apply_update({}, {"phase": "Degraded", "conditions": [
        {"type": "ComponentsReady", "status": "False", "reason": "RolloutFailed", "message": "failed: x (timed out)"}]}, now=T0)
    ready = model.get_condition(status, "Ready")
    assert ready["status"] == "False" and ready["reason"] == "Degraded" and ready["message"] == "ComponentsReady: failed: x (timed out)"


def test_same_status_ignores_reconcile_bookkeeping_and_parse_time():
    assert model.same_status({"phase": "Ready", "reconcile": {"lastReconcileTime": T0}}, {"phase": "Ready", "reconcile": {"lastReconcileTime": T1}})
    assert not model.same_status({"phase": "Ready"}, {"phase": "Failed"})
    assert timeutil.parse(T0).minute == 0 and timeutil.parse("2026-11-29T10:00:00.123Z").microsecond == 123000
    assert timeutil.parse("") is None and timeutil.parse("yesterday") is None
    assert timeutil.parse(timeutil.now_rfc3339()) is not None
