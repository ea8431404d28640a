"""The fabric simulator itself: token endpoint, provider shapes, faults, control API, CLI, kube wiring (a real control plane)."""

import base64
import json
import ssl
import subprocess
import sys
import time

import pytest
import requests

from aicr_lab.fabric import cli
from aicr_lab.fabric.state import Fabric
from simulator_client import FM, api, sim  # noqa: F401  pylint: disable=import-error,unused-import


def _payload(token):
    part = token.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def test_token_endpoint_issues_expiring_jwts(api):
    answer = api.token()
    assert answer.status_code == 200
    payload = _payload(answer.json()["access_token"])
    assert 590 <= payload["exp"] - time.time() <= 600
    assert api.token(password="nope").status_code == 401
    assert api.token(client_secret="nope").json()["error"] == "unauthorized_client"
    assert api.sim.control.state()["tokens_issued"] == 1


def test_api_requires_a_valid_token(api):
    path = "%s/machines/%s" % (FM, api.machines[0])
    assert api.call("GET", path, token="", params={"tenant_uuid": api.tenant}).status_code == 401
    assert api.call("GET", path, token="a.b.c", params={"tenant_uuid": api.tenant}).status_code == 401
    assert api.call("GET", path, params={"tenant_uuid": api.tenant}).status_code == 200
    api.sim.control.expire_tokens()
    assert api.call("GET", path, params={"tenant_uuid": api.tenant}).json()["error_description"] == "token expired"


def test_fm_attach_detach_and_pool(api):
    machine = api.machines[0]
    answer = api.fm_attach(machine)
    assert answer.status_code == 200
    res = answer.json()["data"]["machines"][0]["resources"][0]
    assert res["res_type"] == "gpu" and res["res_op_status"] == "0000" and res["res_serial_num"].startswith("GPU-")
    assert res["res_spec"]["condition"] == [{"column": "model", "operator": "eq", "value": "A100"}]
    assert api.sim.control.state()["pool"]["A100"] == 15
    free = api.call("GET", "%s/machines/%s/available-reserved-resources" % (FM, machine),
                    params={"tenant_uuid": api.tenant, "res_type": "gpu", "condition": json.dumps({"column": "model", "operator": "eq", "value": "H100"})})
    assert free.json()["reserved_res_num_per_fabric"] == 8
    spec = {"res_type": "gpu", "res_uuid": res["res_uuid"], "res_num": 1}
    gone = api.call("DELETE", "%s/machines/%s/update" % (FM, machine), params={"tenant_uuid": api.tenant}, json=api.fm_body(machine, spec))
    assert gone.status_code == 200 and gone.json()["data"]["machines"][0]["resources"] == []
    again = api.call("DELETE", "%s/machines/%s/update" % (FM, machine), params={"tenant_uuid": api.tenant}, json=api.fm_body(machine, spec))
    assert again.status_code == 404 and again.json()["detail"]["code"] == "E40402"


# --- wire shapes as CoHDI's clients send and parse them -------------------------------------------------------
# CRO = CoHDI/composable-resource-operator @ 38251b7, DRA = CoHDI/composable-dra-driver @ d30f6eb (read, not copied).

def test_fm_free_pool_condition_is_one_object_and_the_answer_is_top_level(api):
    """DRA pkg/client/client.go:147-164 (GetFMAvailableReservedResources): query tenant_uuid, res_type=gpu and condition =
    json.Marshal(Condition{Column: "model", Operator: "eq", Value: M}) - ONE object; the answer unmarshals into
    FMAvailableReservedResources (pkg/client/types.go:21-24): top-level fabric_id and reserved_res_num_per_fabric."""
    machine = api.machines[0]
    path = "%s/machines/%s/available-reserved-resources" % (FM, machine)
    condition = json.dumps({"column": "model", "operator": "eq", "value": "A100"}, separators=(",", ":"))  # Go's json.Marshal
    answer = api.call("GET", path, params={"tenant_uuid": api.tenant, "res_type": "gpu", "condition": condition})
    assert answer.status_code == 200
    assert answer.json() == {"fabric_id": 1, "reserved_res_num_per_fabric": 16}
    as_list = api.call("GET", path, params={"tenant_uuid": api.tenant, "res_type": "gpu",
                                            "condition": json.dumps([{"column": "model", "operator": "eq", "value": "A100"}])})
    assert as_list.status_code == 400
    assert as_list.json()["status"] == 400 and as_list.json()["detail"]["code"] == "invalid_parameter"
    # model names are the fabric's, exactly: a different case is another (absent) model
    lower = api.call("GET", path, params={"tenant_uuid": api.tenant, "res_type": "gpu",
                                          "condition": json.dumps({"column": "model", "operator": "eq", "value": "a100"})})
    assert lower.json()["reserved_res_num_per_fabric"] == 0
    api.sim.control.fault(op="available", action="pool_size", value=1)
    assert api.call("GET", path, params={"tenant_uuid": api.tenant, "res_type": "gpu", "condition": condition}).json()["reserved_res_num_per_fabric"] == 1


def test_fm_machine_and_attach_answers_have_the_fields_cro_reads(api):
    """CRO internal/cdi/fti/fm/api/get.go:19-47 (GetMachineResponse: data.machines[] with fabric_uuid, fabric_id, mach_uuid,
    mach_id, mach_name, tenant_uuid, mach_status int, mach_status_detail, resources[] with res_uuid, res_name, res_type,
    res_status int, res_op_status string, res_serial_num, res_spec.condition[]); the PATCH answer is the same
    (api/scale_up.go:43-69, ScaleUpResponse) and CRO reads data.machines[0].resources[0] of it (fm/client.go:190-196)."""
    machine = api.machines[0]
    attached = api.fm_attach(machine).json()
    item = attached["data"]["machines"][0]
    assert set(item) >= {"fabric_uuid", "fabric_id", "mach_uuid", "mach_id", "mach_name", "tenant_uuid", "mach_status", "mach_status_detail",
                         "resources"}
    assert isinstance(item["fabric_id"], int) and isinstance(item["mach_id"], int) and isinstance(item["mach_status"], int)
    res = item["resources"][0]
    assert set(res) == {"res_uuid", "res_name", "res_type", "res_status", "res_op_status", "res_serial_num", "res_spec"}
    assert isinstance(res["res_status"], int) and isinstance(res["res_op_status"], str) and res["res_op_status"][:1] == "0"
    read = api.call("GET", "%s/machines/%s" % (FM, machine), params={"tenant_uuid": api.tenant}).json()
    assert read["data"]["machines"][0]["resources"] == item["resources"]


def test_fm_request_bodies_as_cro_sends_them(api):
    """CRO fm/client.go:115-156 (AddResource: PATCH machines/{m}/update?tenant_uuid=T, ScaleUpBody of api/scale_up.go:19-41 with
    res_spec.condition a LIST and res_num 1) and fm/client.go:250-293 (RemoveResource: DELETE with ScaleDownBody of
    api/scale_down.go:19-41 naming res_uuid; 200 or 204 is success)."""
    machine = api.machines[0]
    up = {"tenants": {"tenant_uuid": api.tenant, "machines": [{"mach_uuid": machine, "resources": [{"res_specs": [
        {"res_type": "gpu", "res_spec": {"condition": [{"column": "model", "operator": "eq", "value": "A100"}]}, "res_num": 1}]}]}]}}
    answer = api.call("PATCH", "%s/machines/%s/update" % (FM, machine), params={"tenant_uuid": api.tenant}, json=up)
    assert answer.status_code == 200
    res_uuid = answer.json()["data"]["machines"][0]["resources"][0]["res_uuid"]
    down = {"tenants": {"tenant_uuid": api.tenant, "machines": [{"mach_uuid": machine, "resources": [{"res_specs": [
        {"res_type": "gpu", "res_uuid": res_uuid, "res_num": 1}]}]}]}}
    assert api.call("DELETE", "%s/machines/%s/update" % (FM, machine), params={"tenant_uuid": api.tenant}, json=down).status_code in (200, 204)
    logged = [e for e in api.sim.control.requests() if e["route"] in ("fm.attach", "fm.detach")]
    assert [e["body"] for e in logged] == [up, down] and all(e["query"] == {"tenant_uuid": api.tenant} for e in logged)


@pytest.mark.parametrize("kind, check", [
    # CRO internal/cdi/fti/fm/api/common.go:31-40 (ErrorBody: status int, detail.code, detail.message, detail.data)
    ("fti", lambda b: b == {"status": 409, "detail": {"code": "E40900", "message": "no room", "data": {}}}),
    # DRA pkg/client/client.go:312-320 (unsuccessfulResponse: status a STRING, detail.code, detail.message a string)
    ("fti_dra", lambda b: b == {"status": "409", "detail": {"code": "E40900", "message": "no room"}}),
    # CRO common.go:38 (ErrorDetail.Message json.RawMessage) and fm/client.go:60-72 (formatFMErrorDetail: a string or raw JSON)
    ("fti_raw", lambda b: b["detail"]["message"] == {"reason": "no room"}),
    # other servers: {"error": "<text>"}, which CRO decodes as an empty code and message
    ("error_text", lambda b: b == {"error": "no room"}),
])
def test_error_body_shapes(api, kind, check):
    api.sim.control.fault(op="attach", action="error", status=409, body=kind, message="no room")
    answer = api.fm_attach(api.machines[0])
    assert answer.status_code == 409 and check(answer.json()), answer.text
    assert api.sim.control.devices(api.machines[0]) == []


def test_token_form_keys_are_logged_without_values(api):
    """CRO internal/cdi/fti/token.go:118-127: client_id, client_secret, username, password, scope=openid,
    response_type="id_token token", grant_type=password (DRA pkg/client/client.go:95 spells it "response")."""
    api.token(response_type="id_token token")
    entry = api.sim.control.requests(op="token")[-1]
    assert entry["form_keys"] == sorted(["client_id", "client_secret", "grant_type", "password", "response_type", "scope", "username"])
    assert "s3cret-password" not in json.dumps(entry)


def test_fm_rejects_bad_requests(api):
    machine = api.machines[0]
    spec = {"res_type": "gpu", "res_spec": {"condition": []}, "res_num": 2}
    answer = api.call("PATCH", "%s/machines/%s/update" % (FM, machine), params={"tenant_uuid": api.tenant}, json=api.fm_body(machine, spec))
    assert answer.status_code == 400 and "res_num 1" in answer.json()["detail"]["message"]
    assert api.call("GET", "%s/machines/%s" % (FM, machine), params={"tenant_uuid": "other"}).status_code == 403
    assert api.call("GET", "%s/machines/nope" % FM, params={"tenant_uuid": api.tenant}).status_code == 404
    assert api.fm_attach(machine, model="B200").status_code == 409


def test_cm_devices_become_complete_after_polls(api):
    machine = api.machines[1]
    base = "/cluster_manager/cluster_autoscaler/v3/tenants/%s/clusters/%s/machines/%s" % (api.tenant, api.state["cluster_id"], machine)
    specs = api.call("GET", base).json()["data"]["cluster"]["machine"]["resspecs"]
    a100 = [s for s in specs if s["selector"]["expression"]["conditions"][0]["value"] == "A100"][0]
    assert a100["device_count"] == 0
    answer = api.call("POST", base + "/actions/resize", json={"increase_resource_count": {"spec_uuid": a100["spec_uuid"], "device_count": 1}})
    assert answer.status_code == 202
    statuses = []
    for _poll in range(4):
        spec = [s for s in api.call("GET", base).json()["data"]["cluster"]["machine"]["resspecs"] if s["spec_uuid"] == a100["spec_uuid"]][0]
        statuses.append(spec["devices"][0]["status"])
    assert statuses == ["ADDING", "ADDING", "ADD_COMPLETE", "ADD_COMPLETE"]
    device = spec["devices"][0]
    assert device["detail"]["res_op_status"] == "0000"
    empty = {"remove_resources": {"spec_uuid": a100["spec_uuid"], "device_count": 0, "devices": []}}
    assert api.call("POST", base + "/actions/resize", json=empty).status_code == 400
    api.call("POST", base + "/actions/resize", json={"remove_resources": {"spec_uuid": a100["spec_uuid"], "device_count": 0, "devices": [device["device_id"]]}})
    seen = [len([s for s in api.call("GET", base).json()["data"]["cluster"]["machine"]["resspecs"] if s["spec_uuid"] == a100["spec_uuid"]][0]["devices"])
            for _poll in range(4)]
    assert seen == [1, 1, 0, 0]


def test_redfish_composition(api):
    root = api.session.get(api.sim.url + "/redfish/v1", auth=("admin", "s3cret-password"), verify=api.sim.ca_path, timeout=5).json()
    assert root["CompositionService"]["@odata.id"] == "/redfish/v1/CompositionService"
    blocks = api.session.get(api.sim.url + "/redfish/v1/CompositionService/ResourceBlocks", params={"$expand": "."},
                             auth=("admin", "s3cret-password"), verify=api.sim.ca_path, timeout=5).json()
    assert blocks["Members@odata.count"] == 28
    gpu = [b for b in blocks["Members"] if b["ResourceBlockType"] == ["Processor"]][0]
    assert gpu["CompositionStatus"]["CompositionState"] == "Unused" and gpu["Status"]["Health"] == "OK"
    target = "/redfish/v1/Systems/%s/Actions/ComputerSystem.AddResourceBlock" % api.machines[0]
    body = {"ResourceBlock": {"@odata.id": gpu["@odata.id"]}}
    answer = api.session.post(api.sim.url + target, json=body, auth=("admin", "s3cret-password"), verify=api.sim.ca_path, timeout=5)
    assert answer.status_code == 204
    twice = api.session.post(api.sim.url + target, json=body, auth=("admin", "s3cret-password"), verify=api.sim.ca_path, timeout=5)
    assert twice.status_code == 409 and twice.json()["error"]["code"] == "Base.1.8.ResourceInUse"
    system = api.session.get(api.sim.url + "/redfish/v1/Systems/%s" % api.machines[0], auth=("admin", "s3cret-password"), verify=api.sim.ca_path,
                             timeout=5).json()
    assert system["Links"]["ResourceBlocks"] == [{"@odata.id": gpu["@odata.id"]}]
    assert api.session.get(api.sim.url + "/redfish/v1", auth=("admin", "bad"), verify=api.sim.ca_path, timeout=5).status_code == 401


def test_redfish_actions_as_tasks(api):
    """Option rf_tasks: 202 with a task monitor that answers 202 that many times, then the action's answer, then 404."""
    api.sim.control.configure(rf_tasks=1)
    rf = dict(auth=("admin", "s3cret-password"), verify=api.sim.ca_path, timeout=5)
    blocks = api.session.get(api.sim.url + "/redfish/v1/CompositionService/ResourceBlocks", params={"$expand": "."}, **rf).json()
    gpu = [b for b in blocks["Members"] if b["ResourceBlockType"] == ["Processor"]][0]
    target = "/redfish/v1/Systems/%s/Actions/ComputerSystem.AddResourceBlock" % api.machines[0]
    answer = api.session.post(api.sim.url + target, json={"ResourceBlock": {"@odata.id": gpu["@odata.id"]}}, **rf)
    assert answer.status_code == 202 and answer.headers["Retry-After"] == "0" and answer.json()["TaskState"] == "Running"
    monitor = api.sim.url + answer.headers["Location"]
    system = api.sim.url + "/redfish/v1/Systems/%s" % api.machines[0]
    assert api.session.get(monitor, **rf).status_code == 202
    assert api.session.get(system, **rf).json()["Links"]["ResourceBlocks"] == []  # not applied while the task runs
    assert api.session.get(monitor, **rf).status_code == 204
    assert api.session.get(system, **rf).json()["Links"]["ResourceBlocks"] == [{"@odata.id": gpu["@odata.id"]}]
    assert api.session.get(monitor, **rf).status_code == 404  # its answer was given once
    assert api.session.get(monitor, auth=("admin", "bad"), verify=api.sim.ca_path, timeout=5).status_code == 401


@pytest.mark.parametrize("body, check", [
    ("fti", lambda r: r.json()["detail"]["code"] == "E50200"),
    ("plain", lambda r: r.headers["Content-Type"] == "text/plain"),
    ("html", lambda r: "<title>502 Bad Gateway</title>" in r.text),
    ("empty", lambda r: r.text == ""),
])
def test_error_faults_apply_nothing(api, body, check):
    api.sim.control.fault(op="attach", action="error", status=502, body=body)
    answer = api.fm_attach(api.machines[0])
    assert answer.status_code == 502 and check(answer)
    assert api.sim.control.devices(api.machines[0]) == []
    assert api.fm_attach(api.machines[0]).status_code == 200  # times=1: the fault is used up


def test_commit_then_fail_applies_the_change(api):
    api.sim.control.fault(op="attach", action="commit_then_fail", status=500)
    assert api.fm_attach(api.machines[0]).status_code == 500
    assert len(api.sim.control.devices(api.machines[0])) == 1


def test_late_commit_answers_the_gateway_error_then_applies_the_change(api):
    api.sim.control.fault(op="attach", action="late_commit", status=504, delay=0.3)
    answer = api.fm_attach(api.machines[0])
    assert answer.status_code == 504 and "<html" in answer.text
    assert api.sim.control.devices(api.machines[0]) == []  # not yet: the manager is still applying it
    deadline = time.monotonic() + 10
    while api.sim.control.requests(op="attach")[0]["late_commit"] == "pending" and time.monotonic() < deadline:
        time.sleep(0.05)
    assert api.sim.control.requests(op="attach")[0]["late_commit"] == "applied"
    assert len(api.sim.control.devices(api.machines[0])) == 1


def test_reset_drops_the_connection(api):
    api.sim.control.fault(op="attach", action="reset", commit=True)
    with pytest.raises(requests.exceptions.ConnectionError):
        api.fm_attach(api.machines[0])
    assert len(api.sim.control.devices(api.machines[0])) == 1


def test_skip_and_times_and_request_log(api):
    api.sim.control.fault(op="read", action="empty_machines", skip=1, times=2)
    path = "%s/machines/%s" % (FM, api.machines[0])
    lengths = [len(api.call("GET", path, params={"tenant_uuid": api.tenant}).json()["data"]["machines"]) for _poll in range(4)]
    assert lengths == [1, 0, 0, 1]
    log = api.sim.control.requests(op="read")
    assert [e["fault"] for e in log] == [None, "empty_machines", "empty_machines", None]
    assert api.sim.control.requests(mutating=True) == []


def test_device_override_and_seed(api):
    added = api.sim.control.seed(api.machines[0], "H100", 2)
    api.sim.control.set_device(added[0]["serial"], op_status="")
    path = "%s/machines/%s" % (FM, api.machines[0])
    resources = api.call("GET", path, params={"tenant_uuid": api.tenant}).json()["data"]["machines"][0]["resources"]
    assert [r["res_op_status"] for r in resources] == ["", "0000"]
    assert api.sim.control.requests(mutating=True) == []


def test_state_listener_counts_gpus():
    fabric = Fabric(machines=1, pool={"A100": {"type": "gpu", "count": 2}, "CXL": {"type": "cxlmemory", "count": 1}})
    seen = []
    fabric.listeners.append(lambda fab, machine: seen.append(fab.gpu_count(machine)))
    machine = list(fabric.machines.values())[0]
    fabric.attach(machine, "gpu", "A100")
    fabric.attach(machine, "cxlmemory", "CXL")
    device = fabric.attach(machine, "gpu", "A100", phase="adding")
    assert seen[-3:] == [1, 1, 1]
    fabric.advance(machine)
    fabric.advance(machine)
    fabric.advance(machine)
    assert seen[-1] == 2
    fabric.detach(machine, device["res_uuid"])
    assert seen[-1] == 1


def test_cli_serves_and_writes_info(tmp_path):
    info = tmp_path / "info.json"
    proc = subprocess.Popen([sys.executable, "-m", "aicr_lab.fabric.cli", "--state-dir", str(tmp_path / "state"), "--machines", "3",
                             "--info-file", str(info)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.time() + 20
        while not info.exists() and time.time() < deadline:
            time.sleep(0.05)
        data = json.loads(info.read_text())
        assert len(data["machines"]) == 3 and data["endpoint"].startswith("127.0.0.1:")
        context = ssl.create_default_context(cafile=data["ca_path"])
        assert context is not None
        answer = requests.get(data["url"] + "/_sim/state", verify=data["ca_path"], timeout=5)
        assert answer.status_code == 200 and len(answer.json()["machines"]) == 3
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    assert proc.returncode == 0


def test_cli_parser_defaults():
    args = cli.build_parser().parse_args([])
    assert args.machines == 8 and args.latency == 0.0 and args.cm_polls == 2
