"""The cluster checks alone (``_fabric/checks.py``), given a run context over the in-memory cluster - no service."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import Device
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.checks import ClusterChecks
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.context import RunContext, RunOptions
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.nodes import KubernetesClusterView
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import MachineRun, Target

from doubles import FakeClock, FakeCluster  # pylint: disable=import-error


class CountingView(KubernetesClusterView):
    def __init__(self, client):
        super(CountingView, self).__init__(client)
        self.reads = []

    def gpu_pods(self, node):
        self.reads.append(("pods", node))
        return super(CountingView, self).gpu_pods(node)

    def device_claims(self, node):
        self.reads.append(("claims", node))
        return super(CountingView, self).device_claims(node)


def test_a_nodes_users_are_read_once_per_run_and_every_detach_on_it_is_checked():
    fake = FakeCluster()
    fake.add_node("n0", "m0")
    fake.add_gpu_pod("n0", "ml", "trainer", 1)
    view = CountingView(fake)
    checks = ClusterChecks(RunContext(backend=None, cluster=view))
    run = MachineRun("m0", "n0")
    target = Target(machine_id="m0", node="n0", model="A100", state="absent")
    for uuid in ("r-1", "r-2"):
        with pytest.raises(AicrError) as info:
            checks.check_detach(run, target, Device(uuid, "GPU-" + uuid, "gpu", "A100"))
        assert "pods on node n0 request nvidia.com/gpu: ml/trainer" in info.value.msg
    checks.check_detach(run, target, Device("c-1", None, "cxl", "CXL"))  # memory: pods requesting GPUs do not block it
    assert view.reads == [("pods", "n0"), ("claims", "n0")], "read once for the run, not once per device"
    ClusterChecks(RunContext(backend=None, cluster=None, options=RunOptions(force_detach=True))).check_detach(
        MachineRun("m0", None), target, Device("r-1", "GPU-1", "gpu", "A100"))  # force_detach: nothing asked


def test_verify_visible_waits_on_the_contexts_clock_and_pause():
    fake = FakeCluster()
    clock = FakeClock()
    seen = {"gpus": 0}
    fake.add_node("n0", "m0", allocatable=lambda: seen["gpus"])
    pauses = []

    def pause(seconds):
        pauses.append(seconds)
        clock.advance(seconds)
        seen["gpus"] = 1 if len(pauses) >= 2 else 0

    ctx = RunContext(backend=None, cluster=KubernetesClusterView(fake), options=RunOptions(wait_timeout=10, poll_interval=2),
                     clock=clock, sleep=pause)
    run = MachineRun("m0", "n0")
    run.attached.append({"type": "gpu", "serial": "GPU-9", "res_uuid": "r-9"})
    ClusterChecks(ctx).verify_visible(run, [Device("r-9", "GPU-9", "gpu", "A100")])
    assert pauses == [2.0, 2.0]
    waits = []

    def wait(seconds):
        waits.append(seconds)
        clock.advance(seconds)

    seen["gpus"] = 0
    never = RunContext(backend=None, cluster=KubernetesClusterView(fake), options=RunOptions(wait_timeout=10, poll_interval=2),
                       clock=clock, sleep=wait)
    with pytest.raises(AicrError) as info:
        ClusterChecks(never).verify_visible(run, [Device("r-9", "GPU-9", "gpu", "A100")])
    assert "does not show the attached GPUs GPU-9 after 10s" in info.value.msg and waits == [2.0] * 5
