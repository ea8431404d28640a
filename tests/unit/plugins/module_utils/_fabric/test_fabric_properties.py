"""Property: whatever the fabric does with each mutation (applies it or not, answers or not), the service never
leaves more devices than asked for, never detaches a device it was not asked to, and a clean re-run converges."""

from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import FabricBackend, Device
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.service import FabricService
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import AmbiguousOutcome, FabricHTTPError

# What the fabric does with one mutation: (applied?, how it answers)
OUTCOMES = st.tuples(st.booleans(), st.sampled_from(["ok", "timeout", "http500", "http409"]))


class ScriptedBackend(FabricBackend):
    name = "scripted"

    class _T:
        counts = {}

    def __init__(self, script, start):
        super(ScriptedBackend, self).__init__(self._T())
        self.script = list(script)
        self.devices = [Device("r%d" % i, "GPU-%d" % i, "gpu", "A100") for i in range(start)]
        self.serial = start
        self.mutations = 0

    def read_machine(self, machine_id):
        return list(self.devices)

    def _outcome(self):
        return self.script.pop(0) if self.script else (True, "ok")

    @staticmethod
    def _answer(how):
        if how == "timeout":
            raise AmbiguousOutcome("timed out", kind="transport")
        if how == "http500":
            raise AmbiguousOutcome("HTTP 500", kind="response", status=500)
        if how == "http409":
            raise FabricHTTPError("HTTP 409", status=409)

    def attach(self, machine_id, dtype, model, devices):
        self.mutations += 1
        applied, how = self._outcome()
        if applied:
            self.devices.append(Device("r%d" % self.serial, "GPU-%d" % self.serial, "gpu", "A100"))
            self.serial += 1
        self._answer(how)

    def detach(self, machine_id, device, devices):
        self.mutations += 1
        applied, how = self._outcome()
        if applied:
            self.devices = [d for d in self.devices if d.res_uuid != device.res_uuid]
        self._answer(how)


def run(backend, target):
    service = FabricService(backend, force_detach=True, poll_interval=0, settle_timeout=0, sleep=lambda s: None)
    try:
        return service.run([target]), None
    except AicrError as exc:
        return None, exc


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(start=st.integers(0, 4), count=st.integers(0, 4), script=st.lists(OUTCOMES, max_size=12))
def test_count_is_never_exceeded_and_rerun_converges(start, count, script):
    backend = ScriptedBackend(script, start)
    before = set(d.res_uuid for d in backend.devices)
    result, error = run(backend, Target(machine_id="m", model="A100", count=count))
    now = len(backend.devices)
    if count >= start:
        assert now <= count  # never a double attach
        assert before <= set(d.res_uuid for d in backend.devices)  # growing never detaches anything it was given
    else:
        assert now >= count  # shrinking never removes more than the surplus
    if error is None:
        assert now == count
        assert len(result["attached"]) == max(0, count - start) and len(result["detached"]) == max(0, start - count)
    # each wanted change costs at most two requests (one re-send after a no-effect ambiguous outcome)
    assert backend.mutations <= 2 * abs(count - start) + 2
    backend.script = []
    result, error = run(backend, Target(machine_id="m", model="A100", count=count))
    assert error is None and len(backend.devices) == count
    backend.mutations = 0
    result, error = run(backend, Target(machine_id="m", model="A100", count=count))
    assert result["changed"] is False and backend.mutations == 0


@settings(max_examples=200, deadline=None)
@given(start=st.integers(1, 4), script=st.lists(OUTCOMES, max_size=8), pick=st.integers(0, 3))
def test_named_detach_touches_nothing_else(start, script, pick):
    backend = ScriptedBackend(script, start)
    victim = backend.devices[pick % start].res_uuid
    others = set(d.res_uuid for d in backend.devices) - {victim}
    run(backend, Target(machine_id="m", state="absent", devices=[victim]))
    assert others <= set(d.res_uuid for d in backend.devices)
    backend.script = []
    _result, error = run(backend, Target(machine_id="m", state="absent", devices=[victim]))
    assert error is None and set(d.res_uuid for d in backend.devices) == others
