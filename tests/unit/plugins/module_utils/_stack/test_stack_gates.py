"""PreflightPassed / HealthChecksPassed and the per-component healthCheck entry of the ClusterStack status."""

from ansible_collections.aicr.runtime.plugins.module_utils._stack import model, status

from test_stack_live import MemoryStore

NOW = "2026-12-01T10:00:00Z"
PASSED_PRE = {"passed": True, "source": "snapshot", "skipped": [], "failed": [],
              "constraints": [{"name": "K8s.server.version", "expected": ">= 1.30", "actual": "v1.33.1", "outcome": "passed"}]}
FAILED_PRE = {"passed": False, "source": "snapshot", "skipped": [], "failed": ["OS.release.VERSION_ID"],
              "constraints": [{"name": "OS.release.VERSION_ID", "expected": "24.04", "actual": "22.04", "outcome": "failed"}]}
FAILED_HEALTH = {"status": "Failed", "check": "op-health-check", "step": "validate-deployment", "resource": "Deployment apps/op",
                 "expression": "status.(availableReplicas > `0`)", "expected": "true", "actual": "null", "duration": 3.2,
                 "message": "health check op-health-check failed after 3.2s: ..."}


def comp(name, phase, health=None, blocked_by=()):
    out = {"name": name, "kind": "release", "phase": phase, "namespace": "apps", "blocked_by": list(blocked_by), "message": phase}
    if health is not None:
        out["health"] = health
    return out


def conds(result):
    return dict((c["type"], c) for c in model.gate_conditions(result))


def test_preflight_condition_says_which_constraint_failed():
    assert conds({"preflight": PASSED_PRE})["PreflightPassed"] == {
        "type": "PreflightPassed", "status": "True", "reason": "ConstraintsMet", "message": "1 constraint(s) met on the snapshot"}
    failed = conds({"preflight": FAILED_PRE})["PreflightPassed"]
    assert (failed["status"], failed["reason"], failed["message"]) == ("False", "ConstraintsNotMet", "OS.release.VERSION_ID expected 24.04, got 22.04")
    assert conds({}) == {}


def test_health_condition_from_the_components():
    ok = [comp("op", "Ready", {"status": "Passed", "message": "2 operation(s) passed"}),
          comp("agent", "Ready", {"status": "Skipped", "message": "no health check"})]
    assert conds({"components": ok})["HealthChecksPassed"]["status"] == "True"
    bad = [comp("op", "Failed", FAILED_HEALTH), comp("agent", "Blocked", {"status": "NotRun"}, ["op"])]
    cond = conds({"components": bad})["HealthChecksPassed"]
    assert (cond["status"], cond["reason"]) == ("False", "HealthCheckFailed") and cond["message"].startswith("op: health check op-health-check failed")
    assert conds({"components": [comp("op", "Pending", {"status": "NotRun"})]})["HealthChecksPassed"]["status"] == "Unknown"


def test_status_entry_carries_the_failing_check_and_a_full_update_sets_the_condition():
    new, events = model.apply_update({}, {"phase": "Degraded", "components": [comp("op", "Failed", FAILED_HEALTH), comp("agent", "Blocked", None, ["op"])],
                                          "replace_components": True}, now=NOW)
    entry = dict((c["name"], c) for c in new["components"])["op"]
    assert entry["healthCheck"] == {"status": "Failed", "check": "op-health-check", "step": "validate-deployment", "resource": "Deployment apps/op",
                                    "expression": "status.(availableReplicas > `0`)", "expected": "true", "actual": "null",
                                    "message": FAILED_HEALTH["message"]}
    cond = dict((c["type"], c) for c in new["conditions"])
    assert cond["HealthChecksPassed"]["status"] == "False"
    assert cond["Ready"]["message"].startswith("HealthChecksPassed: op: health check")
    # a partial (live) update does not decide the condition; an explicit condition wins over the derived one
    partial, _events = model.apply_update({}, {"components": [comp("op", "Failed", FAILED_HEALTH)]}, now=NOW)
    assert "conditions" not in partial
    explicit, _events = model.apply_update({}, {"components": [comp("op", "Failed", FAILED_HEALTH)], "replace_components": True,
                                                "conditions": [{"type": "HealthChecksPassed", "status": "Unknown", "reason": "Manual"}]}, now=NOW)
    assert dict((c["type"], c) for c in explicit["conditions"])["HealthChecksPassed"]["reason"] == "Manual"


def test_a_component_being_verified_keeps_its_last_check():
    before, _events = model.apply_update({}, {"components": [comp("op", "Ready", {"status": "Passed", "message": "2 operation(s) passed"})]}, now=NOW)
    during, _events = model.apply_update(before, {"components": [comp("op", "Deploying")]}, now=NOW)
    assert during["components"][0]["healthCheck"] == {"status": "Passed", "message": "2 operation(s) passed"}


def test_write_gates_writes_once_and_not_again_when_unchanged():
    memory = MemoryStore({})
    writer = status.StatusWriter(memory, "s")
    result = {"preflight": PASSED_PRE, "components": [comp("op", "Ready", {"status": "Passed", "message": "1 operation(s) passed"})]}
    assert status.write_gates(writer, result) is None and len(memory.writes) == 1
    types = [c["type"] for c in memory.obj["status"]["conditions"]]
    assert types == ["PreflightPassed", "HealthChecksPassed"]
    assert status.write_gates(writer, result) is None and len(memory.writes) == 1  # a no-op run writes nothing
    failing = MemoryStore({}, fail_writes=99)
    assert "the gate conditions were not written" in status.write_gates(status.StatusWriter(failing, "s"), result)
