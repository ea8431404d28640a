"""Fixtures for the fabric engine tests: one simulator per session, reset per test, and a fake cluster."""

import pytest

from aicr_lab.fabric.pytest_fixture import start_simulator
from aicr_lab.fabric.state import DEFAULT_POOL

from ansible_collections.aicr.runtime.plugins.module_utils.common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils.fabric.factory import build_backend
from ansible_collections.aicr.runtime.plugins.module_utils.fabric.nodes import ClusterView
from ansible_collections.aicr.runtime.plugins.module_utils.fabric.service import FabricService, Target

REQUEST_TIMEOUT = 1.0  # seconds; the "long latency" faults use 2.0


class FakeCluster(ClusterView):
    """In-memory ClusterView: nodes -> machines, pods, claims, allocatable, slices, operator presence, secrets."""

    def __init__(self, nodes=None):
        self.nodes = dict(nodes or {})
        self.pods = {}
        self.claims = {}
        self.allocatable = {}
        self.slices = {}
        self.operator = False
        self.secrets = {}
        self.calls = []

    def machine_for_node(self, node):
        self.calls.append(("machine_for_node", node))
        if node not in self.nodes:
            raise AicrError("node: %s does not exist in the cluster" % node, field="node")
        return self.nodes[node]

    def gpu_pods(self, node):
        self.calls.append(("gpu_pods", node))
        return list(self.pods.get(node, []))

    def device_claims(self, node):
        self.calls.append(("device_claims", node))
        return list(self.claims.get(node, []))

    def gpu_allocatable(self, node):
        value = self.allocatable.get(node, 0)
        return value() if callable(value) else value

    def slice_device_ids(self, node):
        value = self.slices.get(node, set())
        return set(value() if callable(value) else value)

    def operator_present(self):
        return self.operator

    def read_secret(self, namespace, name):
        if (namespace, name) not in self.secrets:
            raise AicrError("credentials_secret: Secret %s/%s does not exist" % (namespace, name), field="credentials_secret")
        return dict(self.secrets[(namespace, name)])


class Fabric:
    """One test's view of the simulator plus helpers to run the service against it."""

    def __init__(self, sim):
        self.sim = sim
        self.control = sim.control
        state = self.control.state()
        self.tenant_id = state["tenant_id"]
        self.cluster_id = state["cluster_id"]
        self.machines = sorted(state["machines"], key=lambda m: state["machines"][m]["name"])
        self.nodes = dict((state["machines"][m]["node"], m) for m in self.machines)

    def backend(self, provider="fti_fm", timeout=REQUEST_TIMEOUT, **credentials):
        creds = dict(self.sim.credentials)
        creds.update(credentials)
        return build_backend(provider, self.sim.endpoint, creds, tenant_id=self.tenant_id, cluster_id=self.cluster_id,
                             ca_path=self.sim.ca_path, timeout=timeout, read_retries=1)

    def service(self, provider="fti_fm", cluster=None, backend=None, **options):
        settings = dict(poll_interval=0.02, settle_timeout=3.0, wait_timeout=10, force_detach=True)
        settings.update(options)
        return FabricService(backend or self.backend(provider), cluster=cluster, **settings)

    def run(self, targets, provider="fti_fm", **options):
        """(result, None) or (None, AicrError)."""
        try:
            return self.service(provider, **options).run(targets), None
        except AicrError as exc:
            return None, exc

    def devices(self, index=0):
        return self.control.devices(self.machines[index])

    def models(self, index=0):
        return sorted(d["model"] for d in self.devices(index))

    def mutations(self, op=None):
        entries = self.control.requests(mutating=True)
        return [e for e in entries if op is None or e["op"] == op]


@pytest.fixture(scope="session")
def fabric_sim(tmp_path_factory):
    handle = start_simulator(tmp_path_factory.mktemp("fabric-sim"), machines=4, cm_polls=1)
    yield handle
    handle.stop()


@pytest.fixture
def fab(fabric_sim):
    fabric_sim.control.reset(machines=4, pool=DEFAULT_POOL, cm_polls=1, latency=0.0, read_latency=0.0, token_ttl=3600)
    return Fabric(fabric_sim)


@pytest.fixture
def present():
    def make(machine_id=None, count=2, model="A100", **kw):
        return Target(machine_id=machine_id, model=model, count=count, **kw)

    return make
