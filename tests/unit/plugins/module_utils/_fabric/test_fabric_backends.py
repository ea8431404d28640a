"""Backend parsing of odd answers: missing fields and unexpected shapes are errors naming the machine, never crashes."""

import json

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import OK, WARNING, CRITICAL, UNKNOWN, READY, PENDING, FAILED
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.factory import build_backend
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.fti_cm import ClusterManagerBackend
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.fti_fm import FabricManagerBackend, model_of
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.redfish import RedfishBackend
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import Response


class StubTransport:
    """Answers GETs from a path -> JSON map; records every request."""

    base_url = "https://fabric.example"  # the links a backend follows are resolved against it

    def __init__(self, answers):
        self.answers = answers
        self.sent = []
        self.counts = {}

    def request(self, method, path, params=None, json_body=None, form=None, authenticate=True, what=None):
        self.sent.append((method, path, params, json_body))
        answer = self.answers.get(path, {}) if method == "GET" else {}
        return Response(200, answer if isinstance(answer, str) else json.dumps(answer), "application/json")


class NoTokens:
    fetches = 0


FM_PATH = "/fabric_manager/api/v1/machines/m1"


def fm(answer):
    return FabricManagerBackend(StubTransport({FM_PATH: answer}), "t1", NoTokens())


def res(**fields):
    base = {"res_uuid": "r1", "res_type": "gpu", "res_op_status": "0000", "res_serial_num": "GPU-1",
            "res_spec": {"condition": [{"column": "model", "operator": "eq", "value": "A100"}]}}
    base.update(fields)
    return {k: v for k, v in base.items() if v is not None}


@pytest.mark.parametrize("answer, text", [
    ({}, "machine m1: the fabric's answer has no data object"),
    ({"data": {}}, "machine m1: the fabric's answer has no machine list"),
    ({"data": {"machines": []}}, "machine m1: the fabric returned an empty machine list"),
    ({"data": {"machines": [{"mach_uuid": "other"}]}}, "machine m1: the fabric's answer does not contain this machine"),
    ({"data": {"machines": [{"mach_uuid": "m1", "resources": {}}]}}, "machine m1: resources is not a list"),
    ({"data": {"machines": [{"mach_uuid": "m1", "resources": [res(res_uuid=None)]}]}}, "machine m1: field res_uuid is missing"),
    ({"data": {"machines": [{"mach_uuid": "m1", "resources": [res(res_type=None)]}]}}, "machine m1 device r1: field res_type is missing"),
    ("<html>oops</html>", "read machine m1: response is not JSON (HTML page: oops)"),
])
def test_fm_bad_machine_answers(answer, text):
    with pytest.raises(AicrError) as info:
        fm(answer).read_machine("m1")
    assert text in info.value.msg


def test_fm_device_fields_and_status():
    resources = [res(), res(res_uuid="r2", res_op_status="1001"), res(res_uuid="r3", res_op_status=None)]
    backend = fm({"data": {"machines": [{"mach_uuid": "m1", "resources": resources}]}})
    devices = backend.read_machine("m1")
    assert [(d.res_uuid, d.serial, d.type, d.model, d.health) for d in devices] == [
        ("r1", "GPU-1", "gpu", "A100", OK), ("r2", "GPU-1", "gpu", "A100", WARNING), ("r3", "GPU-1", "gpu", "A100", UNKNOWN)]
    assert devices[2].to_result()["status"] == "unknown" and "res_op_status is empty" in devices[2].warnings[0]
    backend.attach("m1", "gpu", "A100", devices)
    method, path, params, body = backend.transport.sent[-1]
    assert (method, path, params) == ("PATCH", FM_PATH + "/update", {"tenant_uuid": "t1"})
    assert body["tenants"]["machines"][0]["resources"][0]["res_specs"] == [
        {"res_type": "gpu", "res_spec": {"condition": [{"column": "model", "operator": "eq", "value": "A100"}]}, "res_num": 1}]
    backend.detach("m1", devices[0], devices)
    method, path, params, body = backend.transport.sent[-1]
    assert method == "DELETE" and body["tenants"]["machines"][0]["resources"][0]["res_specs"] == [{"res_type": "gpu", "res_uuid": "r1", "res_num": 1}]


class PoolTransport(StubTransport):
    def __init__(self, pool_answer):
        super(PoolTransport, self).__init__({FM_PATH + "/available-reserved-resources": pool_answer})


def test_fm_free_pool_query_and_answer_as_the_dra_driver_has_them():
    """composable-dra-driver pkg/client/client.go:147-164 (condition ONE json.Marshal'ed object) and pkg/client/types.go:21-24
    (top-level fabric_id, reserved_res_num_per_fabric)."""
    backend = FabricManagerBackend(PoolTransport({"fabric_id": 3, "reserved_res_num_per_fabric": 5}), "t1", NoTokens())
    assert backend.free_count("m1", "gpu", "L40S") == 5
    method, path, params, body = backend.transport.sent[-1]
    assert (method, path, body) == ("GET", FM_PATH + "/available-reserved-resources", None)
    assert params == {"tenant_uuid": "t1", "res_type": "gpu", "condition": '{"column":"model","operator":"eq","value":"L40S"}'}
    assert backend.pool_key("m1") == "fabric 3" and backend.pool_key("m2") == "machine m2"
    wrapped = FabricManagerBackend(PoolTransport({"data": {"fabric_id": 3, "reserved_res_num_per_fabric": 0}}), "t1", NoTokens())
    assert wrapped.free_count("m1", "gpu", "L40S") == 0


@pytest.mark.parametrize("answer, text", [
    ({"data": {"count": 3, "resources": []}}, "got count, resources"),
    ({}, "got an empty object"),
    ({"reserved_res_num_per_fabric": "3"}, "got reserved_res_num_per_fabric"),
    ({"reserved_res_num_per_fabric": True}, "got reserved_res_num_per_fabric"),
    ([], "got list"),
])
def test_fm_free_pool_answer_without_the_count_is_an_error_not_a_skipped_check(answer, text):
    backend = FabricManagerBackend(PoolTransport(answer), "t1", NoTokens())
    with pytest.raises(AicrError) as info:
        backend.free_count("m1", "gpu", "A100")
    assert info.value.msg.startswith("free pool for machine m1: the answer has no reserved_res_num_per_fabric count")
    assert text in info.value.msg and "nothing attached" in info.value.msg


def test_model_of_shapes():
    assert model_of({"condition": [{"column": "vendor", "operator": "eq", "value": "x"}, {"column": "model", "operator": "eq", "value": "H100"}]}) == "H100"
    assert model_of({"conditions": [{"column": "model", "operator": "eq", "value": "A100"}]}) == "A100"
    assert model_of(None) is None and model_of({"condition": "x"}) is None


CM_PATH = "/cluster_manager/cluster_autoscaler/v3/tenants/t1/clusters/c1/machines/m1"


def cm_answer(devices, device_count=None):
    return {"data": {"cluster": {"machine": {"uuid": "m1", "resspecs": [{
        "spec_uuid": "s1", "type": "gpu", "device_count": len(devices) if device_count is None else device_count,
        "selector": {"expression": {"conditions": [{"column": "model", "operator": "eq", "value": "A100"}]}},
        "devices": devices}]}}}}


def cm_device(serial, status, op="0000"):
    return {"device_id": serial, "status": status, "detail": {"res_uuid": "r-" + serial, "res_type": "gpu", "res_op_status": op}}


def test_cm_phases_and_resize_bodies():
    answer = cm_answer([cm_device("GPU-1", "ADD_COMPLETE"), cm_device("GPU-2", "ADDING"), cm_device("GPU-3", "ADD_FAILED", "2001"),
                        cm_device("GPU-4", "WEIRD")])
    backend = ClusterManagerBackend(StubTransport({CM_PATH: answer}), "t1", "c1", NoTokens())
    devices = backend.read_machine("m1")
    assert [(d.phase, d.health) for d in devices] == [(READY, OK), (PENDING, OK), (FAILED, CRITICAL), ("unknown", OK)]
    assert "not recognised" in devices[3].warnings[0]
    backend.attach("m1", "gpu", "A100", devices)
    assert backend.transport.sent[-1][3] == {"increase_resource_count": {"spec_uuid": "s1", "device_count": 5}}
    backend.detach("m1", devices[0], devices)
    assert backend.transport.sent[-1][3] == {"remove_resources": {"spec_uuid": "s1", "device_count": 3, "devices": ["GPU-1"]}}
    with pytest.raises(AicrError) as info:
        backend.attach("m1", "gpu", "H100", devices)
    assert "machine m1: no Cluster Manager resource spec for type gpu model H100" in info.value.msg


@pytest.mark.parametrize("answer, text", [
    ({"data": {}}, "has no data.cluster.machine"),
    ({"data": {"cluster": {"machine": {}}}}, "returned no machine"),
    ({"data": {"cluster": {"machine": {"uuid": "m1"}}}}, "resspecs is missing"),
    (cm_answer([{"status": "ADDING"}]), "machine m1: field device_id is missing"),
])
def test_cm_bad_answers(answer, text):
    backend = ClusterManagerBackend(StubTransport({CM_PATH: answer}), "t1", "c1", NoTokens())
    with pytest.raises(AicrError) as info:
        backend.read_machine("m1")
    assert text in info.value.msg


def redfish(system, blocks, root=None, service=None):
    answers = {"/redfish/v1": root or {"CompositionService": {"@odata.id": "/rf/cs"}, "Systems": {"@odata.id": "/rf/Systems"}},
               "/rf/cs": service or {"ResourceBlocks": {"@odata.id": "/rf/cs/RB"}}, "/rf/Systems/s1": system}
    answers.update(blocks)
    return RedfishBackend(StubTransport(answers))


def block(block_id, health="OK", state="Composed", kind="Processor"):
    obj = {"Id": block_id, "ResourceBlockType": [kind], "CompositionStatus": {"CompositionState": state}, "Status": {"Health": health}}
    if kind == "Processor":
        obj["Processors"] = [{"Model": "A100", "UUID": "GPU-" + block_id}]
    elif kind == "Memory":
        obj["Memory"] = [{"Model": "CXL", "SerialNumber": "SN-" + block_id}]
    if health is None:
        del obj["Status"]["Health"]
    return obj


def test_redfish_blocks_map_to_devices():
    links = {"Links": {"ResourceBlocks": [{"@odata.id": "/rf/cs/RB/%s" % b} for b in ("b1", "b2", "b3", "b4", "b5")]}}
    backend = redfish(links, {"/rf/cs/RB/b1": block("b1"), "/rf/cs/RB/b2": block("b2", "Warning"), "/rf/cs/RB/b3": block("b3", None, "Composing"),
                              "/rf/cs/RB/b4": block("b4", "OK", "Composed", "Memory"), "/rf/cs/RB/b5": block("b5", "Critical", "Failed", "Storage")})
    devices = backend.read_machine("s1")
    assert [(d.res_uuid, d.type, d.model, d.serial, d.health, d.phase) for d in devices] == [
        ("b1", "gpu", "A100", "GPU-b1", OK, READY), ("b2", "gpu", "A100", "GPU-b2", WARNING, READY), ("b3", "gpu", "A100", "GPU-b3", UNKNOWN, PENDING),
        ("b4", "cxlmemory", "CXL", "SN-b4", OK, READY), ("b5", None, None, None, CRITICAL, FAILED)]
    assert "Status.Health is missing" in devices[2].warnings[0]
    assert any("neither Processor nor Memory" in w for w in devices[4].warnings)


@pytest.mark.parametrize("system, root, service, text", [
    ({"Id": "s1"}, None, None, "system s1: Links.ResourceBlocks is missing"),
    ({"Links": {"ResourceBlocks": [{}]}}, None, None, "system s1: a Links.ResourceBlocks entry has no @odata.id"),
    ({}, {"Systems": {"@odata.id": "/rf/Systems"}}, None, "Redfish service root: CompositionService/@odata.id is missing"),
    ({}, None, {"ServiceEnabled": False}, "is disabled (ServiceEnabled false)"),
])
def test_redfish_bad_answers(system, root, service, text):
    with pytest.raises(AicrError) as info:
        redfish(system, {}, root, service).read_machine("s1")
    assert text in info.value.msg


def test_redfish_attach_picks_distinct_free_blocks():
    collection = {"Members": [dict(block("f1", state="Unused"), **{"@odata.id": "/rf/cs/RB/f1"}),
                              dict(block("f2", state="Unused"), **{"@odata.id": "/rf/cs/RB/f2"}),
                              dict(block("u1", state="Composed"), **{"@odata.id": "/rf/cs/RB/u1"})]}
    backend = redfish({"Links": {"ResourceBlocks": []}}, {"/rf/cs/RB": collection})
    assert backend.free_count("s1", "gpu", "A100") == 2
    backend.attach("s1", "gpu", "A100", [])
    backend.attach("s1", "gpu", "A100", [])
    chosen = [sent[3]["ResourceBlock"]["@odata.id"] for sent in backend.transport.sent if sent[0] == "POST"]
    assert chosen == ["/rf/cs/RB/f1", "/rf/cs/RB/f2"]
    assert backend.free_count("s1", "gpu", "A100") == 0
    with pytest.raises(AicrError) as info:
        backend.attach("s1", "gpu", "A100", [])
    assert "no free resource block of type gpu model A100" in info.value.msg


@pytest.mark.parametrize("provider, kwargs, text", [
    ("nvlink", {}, "provider: 'nvlink' is not one of fti_fm, fti_cm, redfish"),
    ("redfish", {"credentials": {"username": "u"}}, "username and password are required for provider redfish"),
    ("fti_fm", {"credentials": {"username": "u", "password": "p", "client_id": "c", "realm": "r"}}, "tenant_id: required for provider fti_fm"),
    ("fti_cm", {"credentials": {"username": "u", "password": "p", "client_id": "c", "realm": "r"}, "tenant_id": "t"}, "cluster_id: required"),
    ("fti_fm", {"credentials": {"username": "u", "password": "p"}, "tenant_id": "t"}, "credentials: realm, client_id required"),
])
def test_factory_validates(provider, kwargs, text):
    credentials = kwargs.pop("credentials", {})
    with pytest.raises(AicrError) as info:
        build_backend(provider, "127.0.0.1:1", credentials, **kwargs)
    assert text in info.value.msg
