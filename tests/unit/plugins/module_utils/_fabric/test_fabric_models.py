"""Model spellings and the all-or-nothing pool check alone (``_fabric/models.py``): given a backend only - no service, no
run context, no machine read."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import Device
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.models import ModelsAndPools
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import MachineRun, Target

from test_fabric_service import MemoryBackend  # pylint: disable=import-error


class SharedPool(MemoryBackend):
    """m0 and m1 draw on one pool; m2 on its own. The pool lists its models."""

    def pool_key(self, machine_id):
        return "pool-b" if machine_id == "m2" else "pool-a"

    def pool_models(self, machine_id, dtype):
        return ["A100", "H100"]


def test_deficits_on_one_pool_are_added_up_and_fail_every_machine_on_it():
    backend = SharedPool(["m0", "m1", "m2"], pool={"A100": 3})
    models = ModelsAndPools(backend)
    runs = [MachineRun(m, "node-" + m) for m in ("m0", "m1", "m2")]
    for run in runs:
        models.pool_need(run, Target(machine_id=run.machine_id, model="A100", count=2), [], 2)
    models.check_pools(runs)
    assert runs[0].error == "machine m0: 2 × A100 requested (4 with node-m1 on the same pool), 3 free, nothing attached"
    assert runs[1].error == "machine m1: 2 × A100 requested (4 with node-m0 on the same pool), 3 free, nothing attached"
    assert runs[0].error_details == {"free": 3, "needed": 2, "pool_needed": 4, "model": "A100"}
    assert runs[2].error is None, "its own pool covers it"
    assert backend.mutations() == [] and backend.calls == [], "nothing read, nothing sent: only the pool was asked"


def test_a_models_spelling_is_the_fabrics_and_an_unknown_one_names_what_there_is():
    models = ModelsAndPools(SharedPool(["m0"]))
    run = MachineRun("m0", None)
    held = [Device("r-1", "GPU-1", "gpu", "A100")]
    target = Target(machine_id="m0", model="h100", count=1)
    models.resolve_model(run, target, held)
    assert (target.model, target.requested_model) == ("H100", "h100")
    assert run.warnings == ["machine m0: model h100 matched the fabric's H100 in the pool (case-insensitive); write model: H100 to "
                            "silence this warning"]
    with pytest.raises(AicrError) as info:
        models.resolve_model(run, Target(machine_id="m0", model="B200", count=1), held)
    assert info.value.details["machine_models"] == ["A100"] and info.value.details["pool_models"] == ["A100", "H100"]
