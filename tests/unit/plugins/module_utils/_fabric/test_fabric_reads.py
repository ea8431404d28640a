"""Reads that wait alone (``_fabric/reads.py``): a scripted machine, the context's clock and pause - no service."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import Device
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.context import RunContext, RunOptions
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.reads import MachineReads
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import MachineRun, Target
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import RESPONSE, TASK, TRANSPORT, AmbiguousOutcome, FabricHTTPError

from doubles import FakeClock  # pylint: disable=import-error


class Scripted:
    """A backend whose machine reads answer from a list (the last answer repeats; an exception is raised)."""

    def __init__(self, answers):
        self.answers = list(answers)
        self.reads = 0

    def read_machine(self, machine_id):
        self.reads += 1
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer


def reads_over(backend, **options):
    clock = FakeClock()
    pauses = []

    def pause(seconds):
        pauses.append(seconds)
        clock.advance(seconds)

    settings = dict(poll_interval=1, settle_timeout=5, wait_timeout=4)
    settings.update(options)
    return MachineReads(RunContext(backend, options=RunOptions(**settings), clock=clock, sleep=pause)), pauses


def found(devices):
    return devices[0] if devices else None


def test_a_transport_timeout_is_re_read_until_the_change_shows_an_answer_once():
    device = Device("r-1", "GPU-1", "gpu", "A100")
    backend = Scripted([[], [], [device]])
    reads, pauses = reads_over(backend)
    hit, devices = reads.reread(MachineRun("m0", None), found, AmbiguousOutcome("timed out", TRANSPORT), 5)
    assert hit is device and devices == [device] and backend.reads == 3 and pauses == [1.0, 1.0]
    for error in (FabricHTTPError("409", status=409), AmbiguousOutcome("500", RESPONSE), AmbiguousOutcome("task", TASK)):
        backend = Scripted([[]])
        reads, pauses = reads_over(backend)
        assert reads.reread(MachineRun("m0", None), found, error, 5) == (None, []) and backend.reads == 1 and pauses == []


def test_send_again_only_after_an_unknown_outcome_and_within_mutation_retries():
    reads, _pauses = reads_over(None, mutation_retries=1)
    timeout = AmbiguousOutcome("timed out", TRANSPORT)
    assert reads.send_again(timeout, 1) is True and reads.send_again(timeout, 2) is False
    assert reads.send_again(AmbiguousOutcome("task", TASK), 1) is False and reads.send_again(FabricHTTPError("409"), 1) is False


def test_a_failing_re_read_after_a_change_is_recorded_then_raised_and_settle_times_out():
    reads, _pauses = reads_over(Scripted([AicrError("machine m0: read failed")]))
    failures = []
    with pytest.raises(AicrError) as info:
        reads.reread_after(MachineRun("m0", None), Target(machine_id="m0", model="A100", count=1), "attach of a gpu", found, None, 5,
                           failures.append)
    assert failures == [info.value]
    assert info.value.msg == ("machine m0: attach of a gpu sent, then re-reading the machine failed: machine m0: read failed; its "
                              "outcome is not known - re-run to converge (nothing re-sent)")
    reads, pauses = reads_over(Scripted([[]]))
    with pytest.raises(AicrError) as info:
        reads.settle(MachineRun("m0", None), [], lambda devices: False, "machine m0: devices still in progress")
    assert info.value.msg == "machine m0: devices still in progress after 4s (wait_timeout)" and pauses == [1.0] * 4
