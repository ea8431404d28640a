"""fabric_device through ansible-playbook against the fabric simulator and, for the node-level tests, the lab's real
control plane: the module and the composable_gpu role run as the least-privilege identity ``fabric`` (the shipped
aicr-runtime:fabric and aicr-runtime:stack ClusterRoles), on fake nodes of the test's own whose providerIDs name the
simulator's machines; the simulator patches their nvidia.com/gpu capacity as a device plugin would."""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from aicr_lab.controlplane.rest import Rest
from aicr_lab.fabric.pytest_fixture import start_simulator
from aicr_lab.fabric.state import DEFAULT_POOL

from lab_support import LEASE_NAMESPACE, alive, bound_to_shipped_roles, grant_secret_read, module_process, token_kubeconfig
from lab_support import request_status, wait_for_default_service_account, wait_until

TASK = "Converge fabric devices"
REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "fabric_device.yml"


def dump(obj):
    return json.dumps(obj, indent=2, sort_keys=True, default=str)[:6000]


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    handle = start_simulator(tmp_path_factory.mktemp("fabric-sim"), machines=4)
    yield handle
    handle.stop()


@pytest.fixture
def fabric(sim):
    sim.control.reset(rf_tasks=False)  # reset() keeps the options it was last given
    state = sim.control.state()
    base = dict(sim.credentials, provider="fti_fm", endpoint=sim.endpoint, tenant_id=state["tenant_id"], cluster_id=state["cluster_id"],
                ca_path=sim.ca_path, timeout=5, poll_interval=0.05, settle_timeout=2, force_detach=True)
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


@pytest.mark.parametrize("provider", ["fti_cm", "redfish", "redfish_tasks"])
def test_other_providers_converge(run_playbook, sim, fabric, provider):
    base, machines = fabric
    tasks = provider == "redfish_tasks"
    if tasks:
        # the Redfish service answers its actions 202 with a task monitor that is done at the third read
        sim.control.configure(rf_tasks=2)
        provider = "redfish"
    options = dict(base, provider=provider, machine_id=machines[1], model="H100", count=2)
    sim.control.clear_requests()
    first = _run(run_playbook, options)
    assert first["changed"] is True and len(first["attached"]) == 2, dump(first)
    assert [d["status"] for d in first["devices"]] == ["ok", "ok"]
    monitors = sim.control.requests(op="task")
    assert [e["status"] for e in monitors] == ([202, 202, 204] * 2 if tasks else []), monitors
    sim.control.clear_requests()
    again = _run(run_playbook, options)
    assert again["changed"] is False and sim.control.requests(mutating=True) == []
    down = _run(run_playbook, dict(options, count=0))
    assert len(down["detached"]) == 2 and sim.control.devices(machines[1]) == []


def _background_playbook(installed_collection, tmp_path, options):
    """``fabric_device.yml`` with ``options`` started in the background, as AWX starts a job: (process, output file)."""
    (tmp_path / "vars.json").write_text(json.dumps({"fabric": options}))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(installed_collection.parents[2]), ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1",
               ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"), ANSIBLE_REMOTE_TMP=str(tmp_path / "ansible"))
    output = tmp_path / "output.txt"
    with output.open("wb") as out:
        proc = subprocess.Popen([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", "-e", "@%s" % (tmp_path / "vars.json"),
                                 str(PLAYBOOK)], stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    return proc, output


def test_sigterm_starts_no_attach_after_it_and_says_what_was_done(sim, fabric, installed_collection, tmp_path):
    """AWX's cancel: SIGTERM to the module while it attaches three devices (each attach takes the fabric 2 s). The attach
    in flight is finished, no other is started, and the task fails saying which were done."""
    base, machines = fabric
    sim.control.configure(latency=2.0)
    sim.control.clear_requests()
    proc, output = _background_playbook(installed_collection, tmp_path, dict(base, machine_id=machines[2], model="A100", count=3))
    try:
        wait_until(lambda: sim.control.requests(op="attach") or proc.poll() is not None, 120, "the first attach to reach the fabric")
        assert proc.poll() is None, output.read_text()[-3000:]
        module = wait_until(lambda: module_process(proc.pid, "fabric_device"), 60, "the module's process")
        os.kill(module, signal.SIGTERM)
        assert proc.wait(timeout=120) == 2
        assert not alive(module)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        sim.control.configure(latency=0.0)
    text = output.read_text()
    attaches = sim.control.requests(op="attach")
    on_fabric = [d["res_uuid"] for d in sim.control.devices(machines[2])]
    # the attach in flight when the signal came was finished (the next one may have been in flight too on a slow machine);
    # none was started after it, and each one the fabric did is named in the message
    assert 1 <= len(attaches) < 3 and len(on_fabric) == len(attaches), (attaches, on_fabric)
    assert "fabric_device: cancelled (SIGTERM) - done before: attach of a gpu A100 to machine %s sent" % machines[2] in text, text[-3000:]
    for res_uuid in on_fabric:
        assert "%s attached to machine %s" % (res_uuid, machines[2]) in text
    assert "not done: everything not listed as done (nothing else was started)" in text and "Traceback" not in text
    # the failed result says what was done: changed, and each device attached before the signal (it said changed: false)
    failed, _end = json.JSONDecoder().raw_decode(text[text.index("FAILED! => ") + len("FAILED! => "):])
    assert failed["changed"] is True and failed["cancelled"] is True, dump(failed)
    assert sorted(d["res_uuid"] for d in failed["attached"]) == sorted(d for d in on_fabric if "%s attached to" % d in text), dump(failed)


def test_fault_ambiguous_attach_through_ansible(run_playbook, sim, fabric):
    base, machines = fabric
    sim.control.fault(op="attach", action="latency", delay=2.5)
    options = dict(base, machine_id=machines[2], model="A100", count=1, timeout=1, settle_timeout=4)
    result = _run(run_playbook, options)
    assert result["changed"] is True and result["attached"][0]["res_uuid"], dump(result)
    assert result["actions"][0]["adopted"] is True
    assert len(sim.control.devices(machines[2])) == 1
    assert len(sim.control.requests(op="attach")) == 1


def test_an_attach_still_being_added_at_wait_timeout_fails_reporting_it_attached(run_playbook, sim, fabric):
    """Issue 36: provider fti_cm, count 1, the Cluster Manager keeps the device ADDING past wait_timeout. The task fails -
    and its result says what was done: changed, the device attached with its pending state, the change in pending;
    the fabric has the device."""
    base, machines = fabric
    polls = sim.options["cm_polls"]
    sim.control.configure(cm_polls=10 ** 6)  # ADDING until the test ends
    try:
        failed = _run(run_playbook, dict(base, provider="fti_cm", machine_id=machines[3], model="A100", count=1, wait_timeout=1), expect_failure=True)
    finally:
        sim.control.configure(cm_polls=polls)
    on_fabric = sim.control.devices(machines[3])
    assert len(on_fabric) == 1, on_fabric
    device = on_fabric[0]["res_uuid"]
    assert failed["msg"] == ("machine %s: device %s still being added after 1s (wait_timeout); it stays attached (status pending) - re-run to "
                             "converge, or raise wait_timeout" % (machines[3], device)), dump(failed)
    assert failed["changed"] is True, dump(failed)
    assert [(d["res_uuid"], d["status"]) for d in failed["attached"]] == [(device, "pending")], dump(failed)
    assert [(a["action"], a["res_uuid"], a["pending"], a["status"]) for a in failed["pending"]] == [("attach", device, True, "pending")], dump(failed)
    assert len(sim.control.requests(op="attach")) == 1


def test_all_or_nothing_through_ansible(run_playbook, sim, fabric):
    base, machines = fabric
    sim.control.fault(op="available", action="pool_size", value=1, times=None)
    short = _run(run_playbook, dict(base, machine_id=machines[0], model="A100", count=3), expect_failure=True)
    assert short["msg"] == "machine %s: 3 × A100 requested, 1 free, nothing attached" % machines[0], dump(short)
    assert sim.control.requests(mutating=True) == [] and sim.control.devices(machines[0]) == []
    sim.control.clear_faults()
    sim.control.fault(op="attach", action="error", status=409, body="error_text", message="insufficient_resources", skip=1)
    failed = _run(run_playbook, dict(base, machine_id=machines[0], model="A100", count=2), expect_failure=True)
    assert "attach 2 of 2 failed: attach gpu A100 to machine %s: HTTP 409: insufficient_resources;" % machines[0] in failed["msg"], dump(failed)
    assert failed["msg"].endswith("nothing attached") and "rolled back the 1 this run attached" in failed["msg"]
    assert len(failed["rolled_back"]) == 1 and failed["attached"] == [] and failed["devices"] == []
    assert sim.control.devices(machines[0]) == [] and failed["changed"] is True


def test_model_names_are_the_fabrics_and_http_is_refused(run_playbook, sim, fabric):
    base, machines = fabric
    sim.control.reset(pool={"a100": {"type": "gpu", "count": 2}})
    try:
        result = _run(run_playbook, dict(base, machine_id=machines[0], model="A100", count=1))
        assert [d["model"] for d in result["devices"]] == ["a100"], dump(result)
        assert any("model A100 matched the fabric's a100 in the pool" in w for w in result["fabric_warnings"]), dump(result)
        gone = _run(run_playbook, dict(base, machine_id=machines[0], model="B200", state="absent"))
        assert gone["changed"] is False and any("no gpu of model B200 on the machine (it holds: a100)" in w for w in gone["fabric_warnings"])
    finally:
        sim.control.reset(pool=DEFAULT_POOL)  # reset() keeps the options it was last given
    plain = _run(run_playbook, dict(base, endpoint="http://" + sim.endpoint, machine_id=machines[0], model="a100", count=1), expect_failure=True)
    assert plain["msg"].startswith("endpoint: http://%s is plain http" % sim.endpoint) and "allow_http=true" in plain["msg"], dump(plain)


IDENTITY = "fabric"
CREDENTIALS = "fti-credentials"


@pytest.fixture
def wired(kube, fabric_nodes, tmp_path):
    """The fabric simulator over two fake nodes of this test's own, its credentials in a Secret of the test's namespace.

    Reading that Secret is the one thing the module needs beyond the identity's cluster-wide roles: the shipped
    aicr-runtime:fabric-credentials ClusterRole, bound by a RoleBinding in the Secret's namespace only."""
    sim = fabric_nodes.simulator(tmp_path / "sim")
    kube.rest.create("/api/v1/namespaces/%s/secrets" % kube.namespace,
                     {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": CREDENTIALS}, "stringData": sim.credentials})
    grant_secret_read(kube, IDENTITY, kube.namespace)
    wait_for_default_service_account(kube, kube.namespace)
    return kube, sim, fabric_nodes


def _wired_options(sim, kube, **extra):
    state = sim.control.state()
    options = dict(provider="fti_fm", endpoint=sim.endpoint, tenant_id=state["tenant_id"], ca_path=sim.ca_path, timeout=5, poll_interval=0.1,
                   kubeconfig=kube.kubeconfig_for(IDENTITY), credentials_secret={"name": CREDENTIALS, "namespace": kube.namespace}, model="A100")
    options.update(extra)
    return options


def _pod(kube, name, node, gpus=1):
    """A pod bound to ``node`` using GPUs (created as admin: set-up, not the code under test)."""
    return kube.rest.create("/api/v1/namespaces/%s/pods" % kube.namespace, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
                            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "trainer",
                                                                       "resources": {"limits": {"nvidia.com/gpu": str(gpus)}}}]}})


def _allocatable_gpus(kube, node):
    return kube.rest.get("/api/v1/nodes/%s" % node)["status"]["allocatable"].get("nvidia.com/gpu")


def test_node_attach_verify_visible_and_drain_check(run_playbook, wired):
    kube, sim, nodes = wired
    node0 = nodes.names[0]
    creds = sim.credentials

    result = _run(run_playbook, _wired_options(sim, kube, node=node0, count=2, verify_visible=True))
    assert result["changed"] is True and len(result["attached"]) == 2, dump(result)
    assert all(d["node"] == node0 for d in result["devices"])
    assert _allocatable_gpus(kube, node0) == "2"
    assert creds["password"] not in dump(result)

    _pod(kube, "trainer", node0)
    refused = _run(run_playbook, _wired_options(sim, kube, node=node0, count=1), expect_failure=True)
    assert "pods on node %s request nvidia.com/gpu: %s/trainer" % (node0, kube.namespace) in refused["msg"], dump(refused)
    assert len(sim.control.devices(node0)) == 2

    forced = _run(run_playbook, _wired_options(sim, kube, node=node0, count=1, force_detach=True))
    assert len(forced["detached"]) == 1
    assert _allocatable_gpus(kube, node0) == "1"

    sim.control.clear_requests()
    again = _run(run_playbook, _wired_options(sim, kube, node=node0, count=1, verify_visible=True))
    assert again["changed"] is False and sim.control.requests(mutating=True) == []


def test_unknown_node_fails_with_the_reason(run_playbook, wired):
    kube, sim, _nodes = wired
    result = _run(run_playbook, _wired_options(sim, kube, node="ghost", count=1, credentials_secret=None, **sim.credentials), expect_failure=True)
    assert "node: ghost does not exist in the cluster" in result["msg"], dump(result)


ROLE_TASK = "Converge the fabric devices of every node"


def _role(run_playbook, sim, kube, nodes, expect_failure=False, **variables):
    state = sim.control.state()
    extravars = {"composable_gpu_endpoint": sim.endpoint, "composable_gpu_tenant_id": state["tenant_id"], "composable_gpu_ca_path": sim.ca_path,
                 "composable_gpu_kubeconfig": kube.kubeconfig_for(IDENTITY), "composable_gpu_poll_interval": 1,
                 "composable_gpu_nodes": list(nodes.names),
                 "composable_gpu_credentials_secret": {"name": CREDENTIALS, "namespace": kube.namespace}}
    extravars.update(("composable_gpu_" + k, v) for k, v in variables.items())
    run = run_playbook("fabric_role.yml", extravars=extravars)
    if expect_failure:
        assert run.rc != 0
        return run
    assert run.rc == 0, run.stdout[-4000:]
    return run


def _models(sim, node):
    return sorted(d["model"] for d in sim.control.devices(node))


def test_role_spreads_requests_scales_down_and_detaches(run_playbook, wired):
    kube, sim, nodes = wired
    node0, node1 = nodes.names
    requests = [{"name": "train", "model": "A100", "size": 2, "allocation_policy": "samenode", "target_node": node1},
                {"name": "serve", "model": "H100", "size": 2, "allocation_policy": "differentnode"}]
    run = _role(run_playbook, sim, kube, nodes, requests=requests)
    result = run.result(ROLE_TASK)
    assert result["changed"] is True and len(result["attached"]) == 4, dump(result)
    assert _models(sim, node0) == ["H100"] and _models(sim, node1) == ["A100", "A100", "H100"]

    sim.control.clear_requests()
    again = _role(run_playbook, sim, kube, nodes, requests=requests).result(ROLE_TASK)
    assert again["changed"] is False and sim.control.requests(mutating=True) == []

    smaller = [dict(requests[0], size=1), dict(requests[1], size=1)]
    down = _role(run_playbook, sim, kube, nodes, requests=smaller, force_detach=True).result(ROLE_TASK)
    assert len(down["detached"]) == 2, dump(down)
    assert _models(sim, node0) == ["H100"] and _models(sim, node1) == ["A100"]

    gone = _role(run_playbook, sim, kube, nodes, requests=smaller, state="absent", force_detach=True).result(ROLE_TASK)
    assert len(gone["detached"]) == 2
    assert sim.control.devices(node0) == [] and sim.control.devices(node1) == []


def test_role_rejects_impossible_placement(run_playbook, wired):
    kube, sim, nodes = wired
    run = _role(run_playbook, sim, kube, nodes, expect_failure=True,
                requests=[{"name": "wide", "model": "A100", "size": 3, "allocation_policy": "differentnode"}])
    assert "request wide: differentnode needs 3 nodes, 2 managed" in run.stdout, run.stdout[-3000:]
    assert sim.control.requests(mutating=True) == []
    # a negative size is the role's to refuse, naming it - never a count of -1 for fabric_device (issue 36)
    run = _role(run_playbook, sim, kube, nodes, expect_failure=True, requests=[{"name": "minus", "model": "A100", "size": -1}])
    assert "composable_gpu_requests[0].size: -1 is not allowed; use 0 or more (request minus)" in run.stdout, run.stdout[-3000:]
    assert sim.control.requests(mutating=True) == []


def test_fault_commit_then_fail_on_detach_through_ansible(run_playbook, sim, fabric):
    base, machines = fabric
    seeded = sim.control.seed(machines[3], "H100", 2)
    sim.control.fault(op="detach", action="commit_then_fail", status=502, body="html")
    options = dict(base, machine_id=machines[3], state="absent", devices=[seeded[0]["res_uuid"]])
    result = _run(run_playbook, options)
    assert result["changed"] is True and [d["res_uuid"] for d in result["detached"]] == [seeded[0]["res_uuid"]], dump(result)
    assert any("HTML page: 502 Bad Gateway" in w for w in result["fabric_warnings"])
    assert [d["res_uuid"] for d in sim.control.devices(machines[3])] == [seeded[1]["res_uuid"]]
    assert len(sim.control.requests(op="detach")) == 1
    sim.control.clear_requests()
    again = _run(run_playbook, options)
    assert again["changed"] is False and sim.control.requests(mutating=True) == []


def test_check_mode_on_cluster_manager_plans_detach_by_id(run_playbook, sim, fabric):
    base, machines = fabric
    seeded = sim.control.seed(machines[3], "A100", 3)
    options = dict(base, provider="fti_cm", machine_id=machines[3], model="A100", count=1)
    planned = _run(run_playbook, options, check=True, diff=True)
    assert [(a["action"], a["res_uuid"]) for a in planned["actions"]] == [("detach", seeded[2]["res_uuid"]), ("detach", seeded[1]["res_uuid"])]
    assert len(planned["diff"]["after"]["machines"][machines[3]]) == 1
    assert sim.control.requests(mutating=True) == [] and len(sim.control.devices(machines[3])) == 3


def test_role_prunes_devices_no_longer_requested_with_the_drain_check(run_playbook, wired):
    kube, sim, nodes = wired
    node1 = nodes.names[1]
    requests = [{"name": "train", "model": "A100", "size": 2, "target_node": node1}]
    held = [{"node": node1, "type": "gpu", "model": "A100"}]
    _role(run_playbook, sim, kube, nodes, requests=requests)
    assert _models(sim, node1) == ["A100", "A100"]
    # A held node/type/model that is still requested is left to the request.
    sim.control.clear_requests()
    same = _role(run_playbook, sim, kube, nodes, requests=requests, prune=held).result(ROLE_TASK)
    assert same["changed"] is False and sim.control.requests(mutating=True) == []

    # No request any more: the held devices go to zero, but not while a pod uses GPUs on the node.
    _pod(kube, "prune-user", node1)
    try:
        refused = _role(run_playbook, sim, kube, nodes, expect_failure=True, requests=[], prune=held)
        assert "pods on node %s request nvidia.com/gpu: %s/prune-user" % (node1, kube.namespace) in refused.stdout, refused.stdout[-3000:]
        assert len(sim.control.devices(node1)) == 2
    finally:
        # gone at once (no kubelet to wait for): the next run must not see it
        kube.rest.delete("/api/v1/namespaces/%s/pods/prune-user" % kube.namespace, gracePeriodSeconds=0)
    gone = _role(run_playbook, sim, kube, nodes, requests=[], prune=held).result(ROLE_TASK)
    assert len(gone["detached"]) == 2 and sim.control.devices(node1) == [], dump(gone)
    assert [(m["node"], m["model"], m["count"]) for m in gone["invocation"]["module_args"]["machines"]] == [(node1, "A100", 0)]

    bad = _role(run_playbook, sim, kube, nodes, expect_failure=True, requests=[], prune=[{"node": node1, "model": ""}])
    assert "composable_gpu_prune[0]: node and model are required" in bad.stdout, bad.stdout[-3000:]


def test_each_device_transition_reaches_the_stack_status(run_playbook, wired):
    kube, sim, nodes = wired
    node1 = nodes.names[1]
    configmaps = "/api/v1/namespaces/%s/configmaps" % kube.namespace
    # the stack as the ConfigMap store writes it (field manager aicr-runtime): one made otherwise is a foreign claim
    kube.rest.request("POST", configmaps, query={"fieldManager": "aicr-runtime"},
                      body={"apiVersion": "v1", "kind": "ConfigMap",
                            "metadata": {"name": "aicr-stack-lab", "labels": {"runtime.aicr.io/stack": "lab"}},
                            "data": {"spec": "{}", "status": json.dumps({"phase": "Attaching"}), "generation": "1"}})

    def status():
        return json.loads(kube.rest.get(configmaps + "/aicr-stack-lab")["data"]["status"])

    live = {"status_stack": "lab", "status_backend": "configmap", "status_namespace": kube.namespace, "force_detach": True}
    requests = [{"name": "train", "model": "A100", "size": 2, "target_node": node1}]
    up = _role(run_playbook, sim, kube, nodes, requests=requests, **live).result(ROLE_TASK)
    assert up["live_status"]["transitions"] == 2 and up["live_status"]["backend"] == "configmap", dump(up)
    now = status()
    assert sorted(d["resUUID"] for d in now["devices"]) == sorted(d["res_uuid"] for d in sim.control.devices(node1))
    assert [h["type"] for h in now["history"]] == ["DeviceAttached", "DeviceAttached"] and now["phase"] == "Attaching"

    # Nothing to do: no transition, no write.
    version = kube.rest.get(configmaps + "/aicr-stack-lab")["metadata"]["resourceVersion"]
    mark = kube.audit_mark()
    again = _role(run_playbook, sim, kube, nodes, requests=requests, **live).result(ROLE_TASK)
    assert again["changed"] is False and again["live_status"]["transitions"] == again["live_status"]["writes"] == 0
    assert kube.rest.get(configmaps + "/aicr-stack-lab")["metadata"]["resourceVersion"] == version
    assert kube.audit(since=mark, mutating=True, user=kube.user(IDENTITY)) == []

    down = _role(run_playbook, sim, kube, nodes, requests=[dict(requests[0], size=0)], **live).result(ROLE_TASK)
    assert down["live_status"]["transitions"] == 2
    now = status()
    assert now["devices"] == [] and [h["type"] for h in now["history"]][-2:] == ["DeviceDetached", "DeviceDetached"]

    # A stack that does not exist: a warning, the fabric run itself goes on.
    ghost = dict(live)
    ghost["status_stack"] = "ghost"
    other = _role(run_playbook, sim, kube, nodes, requests=requests, **ghost).result(ROLE_TASK)
    assert len(other["attached"]) == 2 and "live_status" not in other
    assert any("live status disabled" in w for w in other["fabric_warnings"]), dump(other)


def _records(kube, stack):
    obj = kube.get("/api/v1/namespaces/%s/configmaps/aicr-devices-%s" % (kube.namespace, stack))
    return json.loads(obj["data"]["records"]) if obj else None


def test_the_shipped_fabric_role_and_the_lease_role_alone_serve_a_stack_and_the_sweep(run_playbook, sim, fabric, kube, tmp_path):
    """An identity bound to exactly aicr-runtime:fabric (cluster-wide: no ConfigMaps, no Leases) and the Role
    aicr-runtime:lease in aicr-system, the default stack_namespace: a stack's attach (records, its fabric Lease), the
    converged re-run, the prune and the orphan sweep all work there; a stack_namespace without the Role is refused with
    what to bind, before any change."""
    base, machines = fabric
    stack = "rbac-%s" % kube.namespace[-6:]
    unbound = kube.create_namespace("fab-unbound", lease_role=False)
    records_path = "/api/v1/namespaces/%s/configmaps/aicr-devices-%s" % (LEASE_NAMESPACE, stack)
    try:
        with bound_to_shipped_roles(kube, unbound, "fabric-only", "aicr-runtime:fabric") as token:
            options = dict(base, machine_id=machines[1], model="A100", kubeconfig=token_kubeconfig(kube, token, tmp_path / "fabric-only"), stack=stack)
            # the bindings are new: wait until the authorizer has them (the records' list allowed in aicr-system)
            as_identity = Rest(kube.server, kube.ca_file, token=token)
            try:
                wait_until(lambda: request_status(lambda: as_identity.get("/api/v1/namespaces/%s/configmaps" % LEASE_NAMESPACE)) != 403, 30,
                           "the new RoleBinding in aicr-system")
                for elsewhere in ("kube-system", "default", unbound):  # no ConfigMap of the cluster outside stack_namespace
                    assert request_status(lambda: as_identity.get("/api/v1/namespaces/%s/configmaps" % elsewhere)) == 403, elsewhere
            finally:
                as_identity.close()
            attached = _run(run_playbook, dict(options, count=2))
            assert len(attached["attached"]) == 2 and attached["lease"] == "%s/aicr-fabric-%s" % (LEASE_NAMESPACE, stack), dump(attached)
            assert len(json.loads(kube.get(records_path)["data"]["records"])) == 2
            sim.control.clear_requests()
            again = _run(run_playbook, dict(options, count=2))
            assert again["changed"] is False and again["lease"] is None and sim.control.requests(mutating=True) == [], dump(again)
            pruned = _run(run_playbook, dict(options, count=0))
            assert len(pruned["detached"]) == 2 and json.loads(kube.get(records_path)["data"]["records"]) == [], dump(pruned)
            swept = _run(run_playbook, dict(options, count=0, orphans="report"))
            assert swept["orphans"]["mode"] == "report", dump(swept)

            refused = _run(run_playbook, dict(options, count=1, stack_namespace=unbound), expect_failure=True)
            assert refused["msg"].startswith("stack_namespace: reading the device records in namespace %s failed: " % unbound), dump(refused)
            assert refused["msg"].endswith("; bind the Role aicr-runtime:lease in namespace %s with a RoleBinding (meta/rbac/aicr-system.yaml; "
                                           "examples/rbac/lease-rolebinding.yaml)" % unbound), dump(refused)
            assert refused["rbac"]["name"] == "aicr-runtime:lease" and refused["rbac"]["namespace"] == unbound and refused["status"] == 403
            assert sim.control.requests(op="attach") == [], "refused before any attach"
    finally:
        for leftover in (records_path, "/api/v1/namespaces/%s/configmaps/aicr-fabric-orphans" % LEASE_NAMESPACE):
            if kube.get(leftover):
                kube.rest.delete(leftover)


def test_two_runs_of_one_stack_at_once_the_second_fails_and_nothing_is_attached_twice(run_playbook, wired, installed_collection, tmp_path):
    """Two AWX jobs of one stack at the same moment: the first holds the stack's fabric Lease while the fabric holds its
    first attach (a ``hold`` fault, released by the test); the second fails naming it and changes nothing."""
    kube, sim, nodes = wired
    node0 = nodes.names[0]
    options = _wired_options(sim, kube, node=node0, count=2, stack="solo", stack_namespace=kube.namespace)
    sim.control.clear_requests()
    sim.control.fault(op="attach", action="hold")
    mark = kube.audit_mark()
    first, output = _background_playbook(installed_collection, tmp_path, options)
    try:
        wait_until(lambda: sim.control.requests(op="attach") or first.poll() is not None, 120, "the first run's attach to reach the fabric")
        assert first.poll() is None, output.read_text()[-3000:]
        second = _run(run_playbook, options, expect_failure=True)
        sim.control.release()
        assert first.wait(timeout=120) == 0, output.read_text()[-3000:]
    finally:
        sim.control.release()
        if first.poll() is None:
            os.killpg(first.pid, signal.SIGKILL)
            first.wait(timeout=30)
    assert second["msg"].startswith("lease: stack solo is being converged on the fabric by "), dump(second)
    # (the simulator's user name is "aicr": no_log masks it everywhere in the output, the Lease's name too)
    assert "fabric_device of stack solo" in second["msg"] and second["lease"].endswith("-fabric-solo"), dump(second)
    assert len(sim.control.requests(op="attach")) == 2, "only the run holding the Lease attached"
    assert len(sim.control.devices(node0)) == 2 and len(_records(kube, "solo")) == 2
    assert kube.get("/apis/coordination.k8s.io/v1/namespaces/%s/leases/aicr-fabric-solo" % kube.namespace) is None, "released"
    writes = [(e["verb"], e["resource"]) for e in kube.audit(since=mark, mutating=True, user=kube.user(IDENTITY))]
    assert writes[0] == ("create", "leases") and ("patch", "configmaps") in writes, "no record written before the Lease: %s" % writes


def test_two_stacks_on_one_node_each_prune_only_their_own_and_orphans_are_reported(run_playbook, wired):
    kube, sim, nodes = wired
    node0 = nodes.names[0]
    owned = {"stack_namespace": kube.namespace}
    alpha = _run(run_playbook, _wired_options(sim, kube, node=node0, count=2, stack="alpha", **owned))
    beta = _run(run_playbook, _wired_options(sim, kube, node=node0, count=1, stack="beta", **owned))
    assert len(alpha["attached"]) == 2 and len(beta["attached"]) == 1 and len(sim.control.devices(node0)) == 3, dump(beta)
    assert sorted(r["res_uuid"] for r in _records(kube, "alpha")) == sorted(d["res_uuid"] for d in alpha["owned"])
    assert [d["res_uuid"] for d in beta["owned"]] == [r["res_uuid"] for r in _records(kube, "beta")]

    # a device nobody recorded: reported by the sweep (as the fabric identity), never detached within the grace period
    stray = sim.control.seed(node0, "A100", 1)[0]["res_uuid"]
    sim.control.clear_requests()
    report = _run(run_playbook, _wired_options(sim, kube, orphans="detach", **owned))
    assert [(d["res_uuid"], d["action"], d["node"]) for d in report["orphans"]["devices"]] == [(stray, "within_grace", node0)], dump(report)
    assert report["changed"] is False and sim.control.requests(mutating=True) == []
    assert any("no stack records: %s" % stray in w for w in report["fabric_warnings"])

    # alpha prunes: only its own two go
    pruned = _run(run_playbook, _wired_options(sim, kube, node=node0, count=0, stack="alpha", **owned))
    assert sorted(d["res_uuid"] for d in pruned["detached"]) == sorted(d["res_uuid"] for d in alpha["owned"]), dump(pruned)
    assert sorted(d["res_uuid"] for d in sim.control.devices(node0)) == sorted([stray, beta["owned"][0]["res_uuid"]])
    assert _records(kube, "alpha") == [] and len(_records(kube, "beta")) == 1

    # grace 0: the orphan goes (drain check: no pod on the node), beta's device stays
    swept = _run(run_playbook, _wired_options(sim, kube, orphans="detach", orphan_grace=0, **owned))
    assert [(d["res_uuid"], d["action"]) for d in swept["orphans"]["devices"]] == [(stray, "detached")], dump(swept)
    assert [d["res_uuid"] for d in sim.control.devices(node0)] == [beta["owned"][0]["res_uuid"]]


def test_role_owns_devices_per_stack_and_adopts_the_ones_from_before(run_playbook, wired):
    kube, sim, nodes = wired
    node1 = nodes.names[1]
    before = [d["res_uuid"] for d in sim.control.seed(node1, "A100", 2)]  # attached before the stack kept records
    requests = [{"name": "train", "model": "A100", "size": 2, "target_node": node1}]
    prune = [{"node": node1, "type": "gpu", "model": "A100", "res_uuid": u} for u in before]
    sim.control.clear_requests()
    run = _role(run_playbook, sim, kube, nodes, requests=requests, prune=prune, stack="train", stack_namespace=kube.namespace)
    result = run.result(ROLE_TASK)
    assert sim.control.requests(mutating=True) == [] and sorted(d["res_uuid"] for d in result["records"]["adopted"]) == sorted(before), dump(result)
    assert sorted(r["res_uuid"] for r in _records(kube, "train")) == sorted(before)
    again = _role(run_playbook, sim, kube, nodes, requests=requests, prune=prune, stack="train", stack_namespace=kube.namespace).result(ROLE_TASK)
    assert again["changed"] is False and sim.control.requests(mutating=True) == []
    report = _role(run_playbook, sim, kube, nodes, requests=requests, stack="train", stack_namespace=kube.namespace, orphans="report").result(ROLE_TASK)
    assert report["orphans"]["devices"] == [] and report["orphans"]["mode"] == "report", dump(report)
