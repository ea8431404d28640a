"""The recorder of a run's changes alone (``_fabric/changes.py``): hand-made runs and a records stand-in - no service,
no fabric."""

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import Device
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.changes import Changes
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import MachineRun, Target


class Records:
    def __init__(self, fail=None):
        self.forgotten = []
        self.confirmed = []
        self.fail = fail

    def forget(self, uuids):
        if self.fail:
            raise AicrError(self.fail)
        self.forgotten.extend(uuids)

    def confirm(self, intent, device, adopted=False):
        if self.fail:
            raise AicrError(self.fail)
        self.confirmed.append((intent["id"], device.res_uuid, adopted))


def gpu(n):
    return Device("r-%d" % n, "GPU-%d" % n, "gpu", "A100")


TARGET = Target(machine_id="m0", model="A100", count=1)


def test_a_rolled_back_device_leaves_attached_its_record_is_forgotten_and_the_hook_told():
    records, told = Records(), []
    changes = Changes(records, told.append)
    run = MachineRun("m0", "n0")
    changes.attached(run, TARGET, gpu(1), adopted=False)
    changes.detached(run, TARGET, gpu(1), rollback=True, notify=True)
    assert run.attached == [] and [d["res_uuid"] for d in run.rolled_back] == ["r-1"] and run.detached == []
    assert [(a["action"], a.get("rollback")) for a in run.actions] == [("attach", None), ("detach", True)]
    assert records.forgotten == ["r-1"]
    assert [(t["event"], t["res_uuid"], t["node"]) for t in told] == [("attached", "r-1", "n0"), ("detached", "r-1", "n0")]
    changes.detached(run, TARGET, gpu(2), rollback=False, notify=False, pending=AicrError("still removing"))
    assert run.actions[-1]["pending"] is True and run.actions[-1]["reason"] == "still removing"
    assert records.forgotten == ["r-1"] and len(told) == 2, "still on the machine: record kept; an orphan's detach is no transition"


def test_a_failing_status_hook_is_a_warning_given_once_and_at_most_five():
    def broken(record):
        raise ValueError("status store down for %s" % record["res_uuid"][-1])

    changes = Changes(None, broken)
    run = MachineRun("m0", None)
    for n in (1, 1, 2, 3, 4, 5, 6, 7):
        changes.transition(run, "attached", gpu(n))
    assert len(changes.transition_warnings) == 5
    assert changes.transition_warnings[0] == "on_transition: the status callback failed for attached r-1: ValueError: status store down for 1"


def test_failing_record_writes_are_warnings_and_check_modes_plan_is_read_from_the_actions():
    changes = Changes(Records(fail="writing ConfigMap x failed"))
    run = MachineRun("m0", None)
    intent = {"id": "i-1"}
    changes.record(run, intent, gpu(3), adopted=False)
    changes.forget(run, gpu(4))
    assert intent["res_uuid"] == "r-3" and [w.split(";")[0] for w in run.warnings] == ["m0: writing ConfigMap x failed",
                                                                                       "m0: detached r-4 but writing ConfigMap x failed"]
    run.before = [gpu(5).to_result(), gpu(6).to_result()]
    Changes.action(run, "detach", TARGET, gpu(5))
    Changes.action(run, "attach", TARGET)
    assert [(d["res_uuid"], d["status"]) for d in Changes.planned_after(run)] == [("r-6", "ok"), (None, "planned")]
