"""One machine's plan and converge alone (``_fabric/converge.py``): the in-memory backend, the real reads and recorder,
stand-ins for the model resolution, the drain check, the attach and the detach it is given - no service, no threads."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.changes import Changes
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.context import RunContext, RunOptions
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.converge import MachineConverge
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.reads import MachineReads
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import MachineRun, Target

from test_fabric_attach import Detacher  # pylint: disable=import-error
from test_fabric_detach import Checks  # pylint: disable=import-error
from test_fabric_service import MemoryBackend  # pylint: disable=import-error


class Models:
    """Resolves nothing; notes each deficit (no pool is asked)."""

    def __init__(self):
        self.needs = []

    def resolve_model(self, run, target, devices):
        pass

    def pool_need(self, run, target, devices, deficit):
        self.needs.append((run.machine_id, target.model, deficit))


class Attacher:
    """Attaches through the backend until ``fail_at`` (1-based); ``undo`` notes what it was asked to roll back."""

    def __init__(self, backend, fail_at=None):
        self.backend = backend
        self.fail_at = fail_at
        self.undone = []

    def attach_one(self, run, target, devices):
        if self.fail_at is not None and len(run.attached) + 1 == self.fail_at:
            raise AicrError("pool empty")
        device = self.backend.add(run.machine_id, target.model)
        run.attached.append(run.tag(device.to_result()))
        return devices + [device]

    def undo(self, run, target, mine, error, nth, deficit, stays=()):
        self.undone.append(([d["res_uuid"] for d in mine], error.msg, nth, deficit))
        raise AicrError("undone")


def converger(backend, attacher=None, detacher=None, models=None, **options):
    ctx = RunContext(backend, options=RunOptions(poll_interval=0, **options), sleep=lambda s: None)
    return MachineConverge(ctx, models or Models(), Checks(), MachineReads(ctx), Changes(), attacher or Attacher(backend),
                           detacher or Detacher(backend))


def test_plan_reads_once_and_notes_the_deficit_nothing_else():
    backend = MemoryBackend(["m0"])
    backend.add("m0", "A100")
    models = Models()
    run = MachineRun("m0", None)
    converger(backend, models=models).plan(run, [Target(machine_id="m0", model="A100", count=3),
                                                 Target(machine_id="m0", model="H100", state="absent")])
    assert models.needs == [("m0", "A100", 2)] and backend.calls == [("read", "m0")] and run.error is None
    assert [d["res_uuid"] for d in run.before] == ["r-1"]


def test_a_failed_attach_after_others_hands_them_to_undo_unless_partial():
    backend = MemoryBackend(["m0"])
    attacher = Attacher(backend, fail_at=3)
    run = MachineRun("m0", None)
    with pytest.raises(AicrError, match="undone"):
        converger(backend, attacher=attacher).present(run, Target(machine_id="m0", model="A100", count=4), [])
    assert attacher.undone == [(["r-1", "r-2"], "pool empty", 3, 4)]
    run = MachineRun("m0", None)
    with pytest.raises(AicrError) as info:
        converger(backend, attacher=Attacher(backend, fail_at=2), partial=True).present(run, Target(machine_id="m0", model="A100", count=2), [])
    assert info.value.msg == "machine m0: attach 2 of 2 failed: pool empty; partial=true keeps the 1 attached: r-3"


def test_the_surplus_is_chosen_by_health_then_newest_and_converge_records_the_machine():
    backend = MemoryBackend(["m0"])
    backend.add("m0"), backend.add("m0", health="warning", warnings=["hot"]), backend.add("m0")
    detacher = Detacher(backend)
    run = MachineRun("m0", None)
    run.initial = backend.read_machine("m0")
    converger(backend, detacher=detacher).converge(run, [Target(machine_id="m0", model="A100", count=1)])
    assert [c[0] for c in detacher.calls] == ["r-2", "r-3"] and [d.res_uuid for d in run.devices] == ["r-1"]
    assert [d["res_uuid"] for d in run.after] == ["r-1"] and run.error is None and run.warnings == ["hot"]
