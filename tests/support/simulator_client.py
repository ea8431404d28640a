"""The fabric simulator as the tests of both suites reach it: a module-wide simulator (``sim``), reset for each test and
wrapped in a :class:`Client` (``api``) that holds a token and speaks the FTI Fabric Manager's request shapes."""

import pytest
import requests

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
