"""The fabric simulator itself: token endpoint, provider shapes, faults, control API, CLI, kube wiring (a real control plane)."""

import pytest

from aicr_lab.fabric.kube_sync import NodeGpuSync
from aicr_lab.fabric.pytest_fixture import start_simulator


# --- wire shapes as CoHDI's clients send and parse them -------------------------------------------------------
# CRO = CoHDI/composable-resource-operator @ 38251b7, DRA = CoHDI/composable-dra-driver @ d30f6eb (read, not copied).


@pytest.mark.parametrize("private_kube", [[{"name": "node-0"}]], indirect=True)
def test_kube_sync_patches_node_allocatable(tmp_path, private_kube):
    # a control plane of its own with one node: the sync patches node status (the shared cluster's nodes stay untouched),
    # and the simulator's second machine (node-1) has no node there
    from kubernetes import client as k8s_client  # pylint: disable=import-outside-toplevel

    sim = start_simulator(tmp_path / "sim", machines=2, kubeconfig=private_kube.kubeconfig, local_gpus=1)
    try:
        sim.control.seed("node-0", "A100", 2)
        core = sim.sync.api
        assert core.read_node("node-0").status.allocatable["nvidia.com/gpu"] == "3"
        assert core.read_node("node-0").status.capacity["nvidia.com/gpu"] == "3"
        assert isinstance(sim.sync, NodeGpuSync) and any("node-1" in e for e in sim.sync.errors)
        assert isinstance(core, k8s_client.CoreV1Api)
    finally:
        sim.stop()
