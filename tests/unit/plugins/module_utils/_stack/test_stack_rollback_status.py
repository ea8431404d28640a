"""The ClusterStack status of on_failure: rollback: lastKnownGood per component, rolledBack and its history event."""

from ansible_collections.aicr.runtime.plugins.module_utils._stack import model

ROLLED = {"component": "x", "status": "rolled_back", "from": 2, "to": 1, "revision": 3, "reason": "its gate failed: not Ready",
          "message": "rolled back from revision 2 to 1 (now revision 3)"}


def test_a_rolled_back_component_keeps_its_last_known_good_and_records_the_rollback_once():
    status, _events = model.apply_update({}, {"components": [{"name": "x", "phase": "Ready", "revision": 1, "last_known_good": 1}]})
    assert status["components"][0]["lastKnownGood"] == 1
    failed = {"name": "x", "phase": "Failed", "revision": 3, "last_known_good": 1, "message": "gate", "rollback": ROLLED}
    status, events = model.apply_update(status, {"components": [failed]})
    entry = status["components"][0]
    assert entry["rolledBack"] == {"status": "rolled_back", "from": 2, "to": 1, "revision": 3, "reason": "its gate failed: not Ready",
                                   "message": "rolled back from revision 2 to 1 (now revision 3)"}
    assert entry["lastKnownGood"] == 1
    assert [e["type"] for e in events] == ["ComponentFailed", "RolledBack"]
    assert events[1]["message"] == "component x: rolled back from revision 2 to 1 (now revision 3) (its gate failed: not Ready)"
    status, events = model.apply_update(status, {"components": [failed]})
    assert events == []  # the same rollback is not recorded twice
    status, _events = model.apply_update(status, {"components": [{"name": "x", "phase": "Ready", "revision": 4}]})
    assert "rolledBack" not in status["components"][0] and status["components"][0]["lastKnownGood"] == 1


def test_a_refused_rollback_is_its_own_event():
    refused = dict(ROLLED, status="refused", revision=None, message="rollback from revision 2 to 1 refused: it would be a breaking CRD change")
    _status, events = model.apply_update({}, {"components": [{"name": "x", "phase": "Failed", "rollback": refused}]})
    assert [e["type"] for e in events] == ["ComponentFailed", "RollbackRefused"]
