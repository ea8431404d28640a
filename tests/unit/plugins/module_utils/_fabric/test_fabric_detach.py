"""One detach alone (``_fabric/detach.py``): the in-memory backend, the drain check it is given (a stand-in here), the
real reads and recorder - no service, no plan."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.changes import Changes
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.context import RunContext, RunOptions
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.detach import Detacher
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.reads import MachineReads
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import MachineRun, Target
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import TRANSPORT, AmbiguousOutcome

from test_fabric_service import MemoryBackend  # pylint: disable=import-error


class Checks:
    """A drain check that refuses the devices named in ``busy`` and notes every device it was asked about."""

    def __init__(self, busy=()):
        self.busy = set(busy)
        self.asked = []

    def check_detach(self, run, target, device):
        self.asked.append(device.res_uuid)
        if device.res_uuid in self.busy:
            raise AicrError("%s: refusing to detach %s: in use" % (target.label, device.res_uuid))


class TimesOutAfterDetaching(MemoryBackend):
    """Detaches, then answers as a gateway that timed out."""

    def detach(self, machine_id, device, devices):
        super(TimesOutAfterDetaching, self).detach(machine_id, device, devices)
        raise AmbiguousOutcome("gateway timeout", TRANSPORT, status=504)


def detacher(backend, checks, **options):
    settings = dict(poll_interval=0, settle_timeout=0, wait_timeout=1)
    settings.update(options)
    ctx = RunContext(backend, options=RunOptions(**settings), sleep=lambda s: None)
    return Detacher(ctx, checks, MachineReads(ctx), Changes())


def test_the_drain_check_it_is_given_refuses_before_anything_is_sent():
    backend = MemoryBackend(["m0"])
    busy, free = backend.add("m0"), backend.add("m0")
    checks = Checks(busy=[busy.res_uuid])
    run = MachineRun("m0", "n0")
    target = Target(machine_id="m0", node="n0", model="A100", state="absent")
    with pytest.raises(AicrError, match="refusing to detach r-1: in use"):
        detacher(backend, checks).detach_one(run, target, busy, backend.read_machine("m0"))
    left = detacher(backend, checks).detach_one(run, target, free, backend.read_machine("m0"))
    assert checks.asked == ["r-1", "r-2"] and backend.mutations() == [("detach", "m0", "r-2")] and [d.res_uuid for d in left] == ["r-1"]
    detacher(backend, Checks(busy=[busy.res_uuid])).detach_one(run, target, busy, left, safety=False, rollback=True)
    assert backend.machines["m0"] == [] and [d["res_uuid"] for d in run.rolled_back] == ["r-1"], "safety=False: the caller checked"


def test_an_unknown_outcome_with_the_device_gone_counts_as_detached_and_check_mode_sends_nothing():
    backend = TimesOutAfterDetaching(["m0"])
    device = backend.add("m0")
    run = MachineRun("m0", None)
    target = Target(machine_id="m0", model="A100", state="absent")
    detacher(backend, Checks(), check_mode=True).detach_one(run, target, device, backend.read_machine("m0"))
    assert backend.mutations() == [] and [a["action"] for a in run.actions] == ["detach"]
    assert detacher(backend, Checks()).detach_one(run, target, device, backend.read_machine("m0")) == []
    assert [d["res_uuid"] for d in run.detached] == ["r-1"] and backend.mutations() == [("detach", "m0", "r-1")], "sent once"
    assert run.warnings == ["machine m0: detach of r-1 answered 'gateway timeout' but the device is gone; counted as detached"]
