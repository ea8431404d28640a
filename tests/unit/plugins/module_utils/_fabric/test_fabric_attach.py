"""One attach alone (``_fabric/attach.py``): the in-memory backend, the real reads and recorder, and stand-ins for the
drain check and the detach it is given - no service, no plan."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.attach import Attacher
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.changes import Changes
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.context import RunContext, RunOptions
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.reads import MachineReads
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import MachineRun, Target

from test_fabric_detach import Checks  # pylint: disable=import-error
from test_fabric_service import MemoryBackend  # pylint: disable=import-error


class Critical(MemoryBackend):
    """Every attached device comes up critical."""

    def attach(self, machine_id, dtype, model, devices):
        self.calls.append(("attach", machine_id, model))
        self.add(machine_id, model, dtype, health="critical", warnings=["res_op_status critical"])


class Detacher:
    """Detaches as told: ``fail`` names the devices whose detach fails."""

    def __init__(self, backend, fail=()):
        self.backend = backend
        self.fail = set(fail)
        self.calls = []

    def detach_one(self, run, target, device, devices, safety=True, rollback=False, notify=True):
        self.calls.append((device.res_uuid, safety, rollback))
        if device.res_uuid in self.fail:
            raise AicrError("detach of %s refused by the fabric" % device.res_uuid)
        self.backend.detach(run.machine_id, device, devices)
        run.rolled_back.append(run.tag(device.to_result()))
        return [d for d in devices if d.res_uuid != device.res_uuid]


def attacher(backend, checks=None, detacher=None):
    ctx = RunContext(backend, options=RunOptions(poll_interval=0, settle_timeout=0, wait_timeout=1), sleep=lambda s: None)
    return Attacher(ctx, checks or Checks(), MachineReads(ctx), Changes(), detacher or Detacher(backend))


TARGET = Target(machine_id="m0", model="A100", count=2)


def test_an_unusable_device_whose_rollback_fails_stays_attached_by_this_run():
    backend = Critical(["m0"])
    run = MachineRun("m0", None)
    failing = Detacher(backend, fail=["r-1"])
    with pytest.raises(AicrError) as info:
        attacher(backend, detacher=failing).attach_one(run, TARGET, [])
    assert info.value.msg == ("machine m0: attached device r-1 failed and rolling it back failed too: detach of r-1 refused by the fabric")
    assert failing.calls == [("r-1", False, True)], "rolled back without a drain check: the device is ours and unused"
    assert [d["res_uuid"] for d in run.attached] == ["r-1"] and [a["action"] for a in run.actions] == ["attach"]


def test_undo_stops_at_the_first_drain_refusal_and_says_what_is_where():
    backend = MemoryBackend(["m0"])
    run = MachineRun("m0", None)
    mine = [backend.add("m0").to_result(), backend.add("m0").to_result(), backend.add("m0").to_result()]
    detach = Detacher(backend)
    with pytest.raises(AicrError) as info:
        attacher(backend, checks=Checks(busy=["r-2"]), detacher=detach).undo(run, TARGET, mine, AicrError("pool empty"), 4, 4, stays=("r-9",))
    assert info.value.msg == ("machine m0: attach 4 of 4 failed: pool empty; rolling back stopped: machine m0: refusing to detach r-2: "
                              "in use; still attached by this run: r-1, r-2, r-9; rolled back: r-3")
    assert info.value.details["kept"] == ["r-1", "r-2", "r-9"] and detach.calls == [("r-3", False, True)]
