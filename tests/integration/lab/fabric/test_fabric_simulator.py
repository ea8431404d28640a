"""The fabric simulator itself: token endpoint, provider shapes, faults, control API, CLI, kube wiring (a real control plane)."""

import pytest
import requests

from aicr_lab.fabric.kube_sync import NodeGpuSync
from aicr_lab.fabric.pytest_fixture import start_simulator

FM = "/fabric_manager/api/v1"


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    handle = start_simulator(tmp_path_factory.mktemp("sim"), machines=2, cm_polls=2, token_ttl=600)
    yield handle
    handle.stop()


@pytest.fixture
def api(sim):
    sim.control.reset(machines=2, cm_polls=2, token_ttl=600, rf_tasks=False)
    return Client(sim)


class Client:
    def __init__(self, sim):
        self.sim = sim
        self.state = sim.control.state()
        self.tenant = self.state["tenant_id"]
        self.machines = sorted(self.state["machines"], key=lambda m: self.state["machines"][m]["name"])
        self.session = requests.Session()
        self.session.trust_env = False
        self._token = None

    def token(self, **overrides):
        form = dict(grant_type="password", scope="openid", client_id="aicr", client_secret="client-s3cret", username="admin", password="s3cret-password")
        form.update(overrides)
        return self.session.post(self.sim.url + "/id_manager/realms/cdi/protocol/openid-connect/token", data=form, verify=self.sim.ca_path, timeout=5)

    def call(self, method, path, token=None, **kwargs):
        if token is None:
            if self._token is None:
                self._token = self.token().json()["access_token"]
            token = self._token
        headers = {"Authorization": "Bearer " + token} if token else {}
        return self.session.request(method, self.sim.url + path, headers=headers, verify=self.sim.ca_path, timeout=5, **kwargs)

    def fm_body(self, machine, spec):
        return {"tenants": {"tenant_uuid": self.tenant, "machines": [{"mach_uuid": machine, "resources": [{"res_specs": [spec]}]}]}}

    def fm_attach(self, machine, model="A100"):
        spec = {"res_type": "gpu", "res_spec": {"condition": [{"column": "model", "operator": "eq", "value": model}]}, "res_num": 1}
        return self.call("PATCH", "%s/machines/%s/update" % (FM, machine), params={"tenant_uuid": self.tenant}, json=self.fm_body(machine, spec))


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
