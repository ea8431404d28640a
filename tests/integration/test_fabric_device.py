"""fabric_device through ansible-playbook against the fabric simulator (and the Kubernetes emulator when present)."""

import json

import pytest

from aicr_emulators.fabric.pytest_fixture import start_simulator

TASK = "Converge fabric devices"


def dump(obj):
    return json.dumps(obj, indent=2, sort_keys=True, default=str)[:6000]


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    handle = start_simulator(tmp_path_factory.mktemp("fabric-sim"), machines=4)
    yield handle
    handle.stop()


@pytest.fixture
def fabric(sim):
    sim.control.reset()
    state = sim.control.state()
    base = dict(sim.credentials, provider="fti_fm", endpoint=sim.endpoint, tenant_id=state["tenant_id"], cluster_id=state["cluster_id"],
                ca_path=sim.ca_path, timeout=2, poll_interval=0.05, settle_timeout=1.5, force_detach=True)
    machines = sorted(state["machines"], key=lambda m: state["machines"][m]["name"])
    return base, machines


def _run(run_playbook, options, check=False, diff=False, expect_failure=False):
    run = run_playbook("fabric_device.yml", extravars={"fabric": options, "fabric_expect_failure": expect_failure}, check=check, diff=diff)
    assert run.rc == 0, run.stdout[-4000:]
    result = dict(run.result(TASK))
    result["failed"] = TASK in run.failed_tasks
    assert result["failed"] is expect_failure, dump(result)
    return result


def test_attach_is_idempotent_and_check_mode_mutates_nothing(run_playbook, sim, fabric):
    base, machines = fabric
    options = dict(base, machine_id=machines[0], model="A100", count=2)
    planned = _run(run_playbook, options, check=True)
    assert planned["changed"] is True, dump(planned)
    assert [a["action"] for a in planned["actions"]] == ["attach", "attach"]
    assert sim.control.requests(mutating=True) == []
    assert sim.control.devices(machines[0]) == []

    first = _run(run_playbook, options, diff=True)
    assert first["changed"] is True and len(first["attached"]) == 2, dump(first)
    assert first["token_requests"] == 1
    assert sorted(d["res_uuid"] for d in first["devices"]) == sorted(d["res_uuid"] for d in sim.control.devices(machines[0]))
    assert first["diff"]["before"]["machines"][machines[0]] == []
    assert len(first["diff"]["after"]["machines"][machines[0]]) == 2

    sim.control.clear_requests()
    second = _run(run_playbook, options)
    assert second["changed"] is False, dump(second)
    assert sim.control.requests(mutating=True) == []
    assert len(sim.control.devices(machines[0])) == 2


def test_multi_machine_detach_and_secrets_not_returned(run_playbook, sim, fabric):
    base, machines = fabric
    for machine in machines:
        sim.control.seed(machine, "A100", 1)
    options = dict(base, model="A100", state="absent", machines=[{"machine_id": m} for m in machines])
    result = _run(run_playbook, options)
    assert result["changed"] is True and len(result["detached"]) == len(machines), dump(result)
    assert all(sim.control.devices(m) == [] for m in machines)
    text = dump(result)
    assert base["password"] not in text and base["client_secret"] not in text


def test_bad_credentials_fail_cleanly(run_playbook, sim, fabric):
    base, machines = fabric
    options = dict(base, machine_id=machines[0], model="A100", count=1, password="wrong-password")
    result = _run(run_playbook, options, expect_failure=True)
    assert result.get("failed") is True, dump(result)
    assert "token request" in result["msg"] and "refused" in result["msg"], dump(result)
    assert "wrong-password" not in dump(result)
    assert sim.control.devices(machines[0]) == []


def test_tls_verification_is_on_by_default(run_playbook, sim, fabric):
    base, machines = fabric
    options = dict(base, machine_id=machines[0], model="A100", count=1)
    del options["ca_path"]
    result = _run(run_playbook, options, expect_failure=True)
    assert "TLS verification failed" in result["msg"], dump(result)
    relaxed = _run(run_playbook, dict(options, validate_certs=False))
    assert relaxed["changed"] is True


@pytest.mark.parametrize("provider", ["fti_cm", "redfish"])
def test_other_providers_converge(run_playbook, sim, fabric, provider):
    base, machines = fabric
    options = dict(base, provider=provider, machine_id=machines[1], model="H100", count=2)
    first = _run(run_playbook, options)
    assert first["changed"] is True and len(first["attached"]) == 2, dump(first)
    assert [d["status"] for d in first["devices"]] == ["ok", "ok"]
    sim.control.clear_requests()
    again = _run(run_playbook, options)
    assert again["changed"] is False and sim.control.requests(mutating=True) == []
    down = _run(run_playbook, dict(options, count=0))
    assert len(down["detached"]) == 2 and sim.control.devices(machines[1]) == []


def test_fault_ambiguous_attach_through_ansible(run_playbook, sim, fabric):
    base, machines = fabric
    sim.control.fault(op="attach", action="latency", delay=2.5)
    options = dict(base, machine_id=machines[2], model="A100", count=1, settle_timeout=4)
    result = _run(run_playbook, options)
    assert result["changed"] is True and result["attached"][0]["res_uuid"], dump(result)
    assert result["actions"][0]["adopted"] is True
    assert len(sim.control.devices(machines[2])) == 1
    assert len(sim.control.requests(op="attach")) == 1


@pytest.fixture(scope="module")
def wired(tmp_path_factory):
    """A Kubernetes emulator whose nodes carry fsas-cdi:// providerIDs, and a simulator updating their GPU count."""
    from aicr_emulators.kube.pytest_fixture import start_emulator  # pylint: disable=import-outside-toplevel
    from aicr_emulators.fabric.state import Fabric  # pylint: disable=import-outside-toplevel

    machines = list(Fabric(machines=2).machines)
    nodes = [{"name": "node-%d" % i, "providerID": "fsas-cdi://%s" % m, "capacity": {"cpu": "8", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": "0"}}
             for i, m in enumerate(machines)]
    base = tmp_path_factory.mktemp("wired")
    kube = start_emulator(base / "kube", nodes=nodes)
    sim = start_simulator(base / "sim", machines=2, kubeconfig=kube.kubeconfig)
    yield kube, sim
    sim.stop()
    kube.stop()


def _wired_options(sim, kube, **extra):
    state = sim.control.state()
    options = dict(provider="fti_fm", endpoint=sim.endpoint, tenant_id=state["tenant_id"], ca_path=sim.ca_path, timeout=5, poll_interval=0.1,
                   kubeconfig=kube.kubeconfig, credentials_secret={"name": "fti-credentials", "namespace": "default"}, model="A100")
    options.update(extra)
    return options


def test_node_attach_verify_visible_and_drain_check(run_playbook, wired):
    from kubernetes import client as k8s_client  # pylint: disable=import-outside-toplevel
    from kubernetes import config as k8s_config  # pylint: disable=import-outside-toplevel

    kube, sim = wired
    sim.control.reset(machines=2)
    api = k8s_config.new_client_from_config(config_file=kube.kubeconfig)
    core = k8s_client.CoreV1Api(api)
    creds = sim.credentials
    core.create_namespaced_secret("default", {"metadata": {"name": "fti-credentials"}, "stringData": creds})

    result = _run(run_playbook, _wired_options(sim, kube, node="node-0", count=2, verify_visible=True))
    assert result["changed"] is True and len(result["attached"]) == 2, dump(result)
    assert all(d["node"] == "node-0" for d in result["devices"])
    assert core.read_node("node-0").status.allocatable["nvidia.com/gpu"] == "2"
    assert creds["password"] not in dump(result)

    core.create_namespaced_pod("default", {"metadata": {"name": "trainer"}, "spec": {"nodeName": "node-0", "containers": [
        {"name": "c", "image": "trainer", "resources": {"limits": {"nvidia.com/gpu": "1"}}}]}})
    refused = _run(run_playbook, _wired_options(sim, kube, node="node-0", count=1), expect_failure=True)
    assert "pods on node node-0 request nvidia.com/gpu: default/trainer" in refused["msg"], dump(refused)
    assert len(sim.control.devices("node-0")) == 2

    forced = _run(run_playbook, _wired_options(sim, kube, node="node-0", count=1, force_detach=True))
    assert len(forced["detached"]) == 1
    assert core.read_node("node-0").status.allocatable["nvidia.com/gpu"] == "1"

    sim.control.clear_requests()
    again = _run(run_playbook, _wired_options(sim, kube, node="node-0", count=1, verify_visible=True))
    assert again["changed"] is False and sim.control.requests(mutating=True) == []


def test_unknown_node_fails_with_the_reason(run_playbook, wired):
    kube, sim = wired
    result = _run(run_playbook, _wired_options(sim, kube, node="ghost", count=1, credentials_secret=None, **sim.credentials), expect_failure=True)
    assert "node: ghost does not exist in the cluster" in result["msg"], dump(result)
