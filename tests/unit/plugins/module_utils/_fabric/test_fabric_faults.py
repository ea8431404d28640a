"""Every simulator fault, on attach and on detach, for the engine against the HTTPS simulator.

For each case: the run ends with a clear result or a clear error; the fabric (simulator state) holds
exactly the devices it should (no leak, no double attach); the number of mutating requests is the
expected one; with the fault cleared a re-run converges, and one more run changes nothing and sends
no mutating request.
"""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target

# Each case waits on real retry back-offs far more than it computes: spread them over the xdist workers (conftest.py).
XDIST_SPREAD = True

# (id, fault rules, ok?, error text, devices on the machine afterwards, mutating requests or None)
ATTACH = [
    ("latency_short", [{"op": "attach", "action": "latency", "delay": 0.1, "times": None}], True, None, 2, 2),
    ("latency_beyond_timeout", [{"op": "attach", "action": "latency", "delay": 2.0}], True, None, 2, 2),
    ("http500_fti", [{"op": "attach", "action": "error", "status": 500, "body": "fti"}], True, None, 2, 3),
    ("http502_html", [{"op": "attach", "action": "error", "status": 502, "body": "html"}], True, None, 2, 3),
    ("http503_plain", [{"op": "attach", "action": "error", "status": 503, "body": "plain"}], True, None, 2, 3),
    ("http500_empty", [{"op": "attach", "action": "error", "status": 500, "body": "empty"}], True, None, 2, 3),
    ("http503_persistent", [{"op": "attach", "action": "error", "status": 503, "body": "fti", "times": None}], False, "HTTP 503", 0, 2),
    ("http404_fti", [{"op": "attach", "action": "error", "status": 404, "body": "fti"}], False, "HTTP 404: E40400", 0, 1),
    ("http409_html", [{"op": "attach", "action": "error", "status": 409, "body": "html"}], False, "HTML page: 409", 0, 1),
    ("http409_plain", [{"op": "attach", "action": "error", "status": 409, "body": "plain"}], False, "HTTP 409: 409 simulated failure", 0, 1),
    ("commit_then_500", [{"op": "attach", "action": "commit_then_fail", "status": 500}], True, None, 2, 2),
    ("commit_then_409_html", [{"op": "attach", "action": "commit_then_fail", "status": 409, "body": "html"}], True, None, 2, 2),
    ("reset_before_commit", [{"op": "attach", "action": "reset"}], True, None, 2, 3),
    ("reset_after_commit", [{"op": "attach", "action": "reset", "commit": True}], True, None, 2, 2),
    ("token_expires_mid_run", [{"op": "attach", "action": "expire_token", "skip": 1}], True, None, 2, 3),
    ("unauthorized_once", [{"op": "attach", "action": "unauthorized"}], True, None, 2, 3),
    ("unauthorized_always", [{"op": "attach", "action": "unauthorized", "times": None}], False, "authentication rejected (HTTP 401", 0, 2),
    ("malformed_jwt", [{"op": "token", "action": "malformed_jwt", "value": "not-a-jwt"}], False, "malformed JWT", 0, 0),
    ("jwt_without_exp", [{"op": "token", "action": "malformed_jwt", "value": "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4In0.c2ln"}], False, "no numeric exp", 0, 0),
    ("op_status_warning", [{"op": "attach", "action": "op_status", "value": "1003", "times": None}], True, None, 2, 2),
    ("op_status_critical", [{"op": "attach", "action": "op_status", "value": "2001"}], False, "rolled back", 0, 2),
    ("op_status_empty", [{"op": "attach", "action": "op_status", "value": ""}], False, "res_op_status is empty", 0, 2),
    ("op_status_unknown", [{"op": "attach", "action": "op_status", "value": "9xyz"}], False, "not recognised", 0, 2),
    ("empty_machine_list", [{"op": "read", "action": "empty_machines"}], False, "empty machine list", 0, 0),
    ("empty_machine_list_after_attach", [{"op": "read", "action": "empty_machines", "skip": 1}], False, "empty machine list", 1, 1),
    ("response_omits_device", [{"op": "read", "action": "omit_device", "skip": 1}], True, None, 2, 2),
    ("pool_exhausted_precheck", [{"op": "available", "action": "pool_exhausted"}], False, "2 × A100 requested, 0 free, nothing attached", 0, 0),
    ("pool_exhausted_on_attach", [{"op": "attach", "action": "pool_exhausted"}], False, "HTTP 409: E40901", 0, 1),
    ("partial_attach", [{"op": "attach", "action": "partial_attach"}], False, "rolled back", 0, 2),
]

DETACH = [
    ("latency_short", [{"op": "detach", "action": "latency", "delay": 0.1, "times": None}], True, None, 0, 2),
    ("latency_beyond_timeout", [{"op": "detach", "action": "latency", "delay": 2.0}], True, None, 0, 2),
    ("http500_fti", [{"op": "detach", "action": "error", "status": 500, "body": "fti"}], True, None, 0, 3),
    ("http502_html", [{"op": "detach", "action": "error", "status": 502, "body": "html"}], True, None, 0, 3),
    ("http503_plain", [{"op": "detach", "action": "error", "status": 503, "body": "plain"}], True, None, 0, 3),
    ("http500_empty", [{"op": "detach", "action": "error", "status": 500, "body": "empty"}], True, None, 0, 3),
    ("http503_persistent", [{"op": "detach", "action": "error", "status": 503, "times": None}], False, "HTTP 503", 2, 2),
    ("http404_fti", [{"op": "detach", "action": "error", "status": 404, "body": "fti"}], False, "HTTP 404: E40400", 2, 1),
    ("http409_html", [{"op": "detach", "action": "error", "status": 409, "body": "html"}], False, "HTML page: 409", 2, 1),
    ("commit_then_500", [{"op": "detach", "action": "commit_then_fail", "status": 500}], True, None, 0, 2),
    ("commit_then_404", [{"op": "detach", "action": "commit_then_fail", "status": 404, "body": "plain"}], True, None, 0, 2),
    ("reset_before_commit", [{"op": "detach", "action": "reset"}], True, None, 0, 3),
    ("reset_after_commit", [{"op": "detach", "action": "reset", "commit": True}], True, None, 0, 2),
    ("token_expires_mid_run", [{"op": "detach", "action": "expire_token", "skip": 1}], True, None, 0, 3),
    ("unauthorized_once", [{"op": "detach", "action": "unauthorized"}], True, None, 0, 3),
    ("unauthorized_always", [{"op": "detach", "action": "unauthorized", "times": None}], False, "authentication rejected", 2, 2),
    ("malformed_jwt", [{"op": "token", "action": "malformed_jwt"}], False, "malformed JWT", 2, 0),
    ("op_status_warning", "1001", True, None, 0, 2),
    ("op_status_critical", "2001", True, None, 0, 2),
    ("op_status_empty", "", True, None, 0, 2),
    ("op_status_unknown", "zz", True, None, 0, 2),
    ("empty_machine_list", [{"op": "read", "action": "empty_machines"}], False, "empty machine list", 2, 0),
    ("empty_machine_list_after_detach", [{"op": "read", "action": "empty_machines", "skip": 1}], False, "empty machine list", 1, 1),
    ("response_omits_device", [{"op": "read", "action": "omit_device", "skip": 1}], True, None, 0, 2),
    ("pool_exhausted", [{"op": "available", "action": "pool_exhausted"}, {"op": "attach", "action": "pool_exhausted"}], True, None, 0, 2),
    ("partial_attach", [{"op": "attach", "action": "partial_attach"}], True, None, 0, 2),
]


def _targets(fab, scenario):
    if scenario == "attach":
        return [Target(machine_id=fab.machines[0], model="A100", count=2)]
    return [Target(machine_id=fab.machines[0], model="A100", state="absent")]


def _check_case(fab, scenario, provider, rules, ok, error_text, after, mutations):
    want = 2 if scenario == "attach" else 0
    if scenario == "detach":
        seeded = fab.control.seed(fab.machines[0], "A100", 2)
        if isinstance(rules, str):
            fab.control.set_device(seeded[0]["res_uuid"], op_status=rules)
    fab.control.clear_requests()
    for rule in rules if isinstance(rules, list) else []:
        fab.control.fault(**rule)

    result, error = fab.run(_targets(fab, scenario), provider)
    if ok:
        assert error is None, error.msg
        assert result["changed"] is True
        done = result["attached"] if scenario == "attach" else result["detached"]
        assert len(done) == 2
    else:
        assert result is None, "expected a failure"
        assert error_text in error.msg, error.msg
        assert "\n" not in error.msg and "Traceback" not in error.msg
    assert len(fab.devices()) == after, fab.devices()
    assert all(d["model"] == "A100" for d in fab.devices())
    if mutations is not None:
        assert len(fab.mutations()) == mutations, fab.mutations()
    # nothing leaked anywhere else on the fabric
    assert all(fab.devices(i) == [] for i in range(1, len(fab.machines)))

    fab.control.clear_faults()
    result, error = fab.run(_targets(fab, scenario), provider)
    assert error is None, error.msg
    assert len(fab.devices()) == want
    fab.control.clear_requests()
    result, error = fab.run(_targets(fab, scenario), provider)
    assert error is None and result["changed"] is False
    assert fab.mutations() == []
    return result


@pytest.mark.parametrize("case", ATTACH, ids=[c[0] for c in ATTACH])
def test_fm_attach_faults(fab, case):
    _check_case(fab, "attach", "fti_fm", *case[1:])


@pytest.mark.parametrize("case", DETACH, ids=[c[0] for c in DETACH])
def test_fm_detach_faults(fab, case):
    _check_case(fab, "detach", "fti_fm", *case[1:])


ASYNC_ATTACH = [
    ("latency_beyond_timeout", [{"op": "attach", "action": "latency", "delay": 2.0}], True, None, 2, 2),
    ("http500_fti", [{"op": "attach", "action": "error", "status": 500}], True, None, 2, 3),
    ("http409_html", [{"op": "attach", "action": "error", "status": 409, "body": "html"}], False, "HTML page: 409", 0, 1),
    ("commit_then_500", [{"op": "attach", "action": "commit_then_fail", "status": 500}], True, None, 2, 2),
    ("reset_after_commit", [{"op": "attach", "action": "reset", "commit": True}], True, None, 2, 2),
    ("unauthorized_once", [{"op": "attach", "action": "unauthorized"}], True, None, 2, 3),
    ("op_status_critical", [{"op": "attach", "action": "op_status", "value": "2001"}], False, "rolled back", 0, 2),
    ("empty_machine_list", [{"op": "read", "action": "empty_machines"}], False, None, 0, 0),
    ("response_omits_device", [{"op": "read", "action": "omit_device", "skip": 1}], True, None, 2, 2),
    ("pool_exhausted_on_attach", [{"op": "attach", "action": "pool_exhausted"}], False, "HTTP 409", 0, 1),
    ("partial_attach", [{"op": "attach", "action": "partial_attach"}], False, "rolled back", 0, 2),
]

ASYNC_DETACH = [
    ("latency_beyond_timeout", [{"op": "detach", "action": "latency", "delay": 2.0}], True, None, 0, 2),
    ("http500_fti", [{"op": "detach", "action": "error", "status": 500}], True, None, 0, 3),
    ("commit_then_500", [{"op": "detach", "action": "commit_then_fail", "status": 500}], True, None, 0, 2),
    ("reset_before_commit", [{"op": "detach", "action": "reset"}], True, None, 0, 3),
    ("op_status_critical", "2001", True, None, 0, 2),
    ("empty_machine_list", [{"op": "read", "action": "empty_machines"}], False, None, 2, 0),
]

EMPTY_MACHINE = {"fti_cm": "returned no machine", "redfish": "Links.ResourceBlocks is missing"}


@pytest.mark.parametrize("provider", ["fti_cm", "redfish"])
@pytest.mark.parametrize("case", ASYNC_ATTACH, ids=[c[0] for c in ASYNC_ATTACH])
def test_async_providers_attach_faults(fab, provider, case):
    if provider == "redfish" and case[0] == "unauthorized_once":
        pytest.skip("Redfish uses basic authentication: there is no token to refresh")
    error_text = case[3] or EMPTY_MACHINE[provider]
    if provider == "redfish" and case[0] == "pool_exhausted_on_attach":
        error_text = "HTTP 409: Base.1.8.ResourceInUse"
    _check_case(fab, "attach", provider, case[1], case[2], error_text, case[4], case[5])


@pytest.mark.parametrize("provider", ["fti_cm", "redfish"])
@pytest.mark.parametrize("case", ASYNC_DETACH, ids=[c[0] for c in ASYNC_DETACH])
def test_async_providers_detach_faults(fab, provider, case):
    _check_case(fab, "detach", provider, case[1], case[2], case[3] or EMPTY_MACHINE[provider], case[4], case[5])


def test_unauthorized_on_redfish_is_a_clear_error(fab):
    fab.control.fault(op="attach", action="unauthorized")
    result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=1)], "redfish")
    assert result is None and "authentication rejected (HTTP 401" in error.msg
    assert fab.devices() == []


def test_warning_status_is_returned(fab):
    fab.control.fault(op="attach", action="op_status", value="1003", times=None)
    result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=1)])
    assert error is None
    assert result["devices"][0]["status"] == "warning"
    assert "res_op_status 1003 is a warning" in result["devices"][0]["warnings"][0]
    assert any("1003" in w for w in result["warnings"])


def test_token_fetched_once_per_run_and_again_after_expiry(fab):
    service = fab.service()
    result = service.run([Target(machine_id=m, model="A100", count=1) for m in fab.machines])
    assert result["token_requests"] == 1
    assert fab.control.state()["tokens_issued"] == 1
    fab.control.expire_tokens()
    result = service.run([Target(machine_id=m, model="A100", count=2) for m in fab.machines])
    assert result["token_requests"] == 2


# --- all or nothing (issue #19) ------------------------------------------------------------------------------------

def test_free_pool_smaller_than_asked_attaches_nothing(fab):
    fab.control.fault(op="available", action="pool_size", value=1, times=None)
    result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=3)])
    assert result is None
    assert error.msg == "machine %s: 3 × A100 requested, 1 free, nothing attached" % fab.machines[0]
    assert error.details["free"] == 1 and error.details["needed"] == 3 and error.details["attached"] == []
    assert fab.mutations() == [] and fab.devices() == []
    # the query went out as composable-dra-driver sends it (pkg/client/client.go:151-164): condition ONE object
    query = fab.control.requests(op="available")[0]["query"]
    assert query["res_type"] == "gpu" and query["condition"] == '{"column":"model","operator":"eq","value":"A100"}'


def test_machines_sharing_a_pool_add_their_deficits_up(fab):
    fab.control.fault(op="available", action="pool_size", value=3, times=None)
    result, error = fab.run([Target(machine_id=m, model="A100", count=2) for m in fab.machines[:2]])
    assert result is None and error.msg.startswith("2 of 2 machines failed: ")
    assert "machine %s: 2 × A100 requested (4 with %s on the same pool), 3 free, nothing attached" % (fab.machines[0], fab.machines[1]) in error.msg
    assert fab.mutations() == [] and fab.devices(0) == [] and fab.devices(1) == []
    fab.control.clear_faults()
    fab.control.fault(op="available", action="pool_size", value=4, times=None)
    result, error = fab.run([Target(machine_id=m, model="A100", count=2) for m in fab.machines[:2]])
    assert error is None and len(result["attached"]) == 4


@pytest.mark.parametrize("provider", ["fti_fm", "fti_cm", "redfish"])
@pytest.mark.parametrize("fault", [
    {"op": "attach", "action": "error", "status": 409, "body": "fti", "skip": 2},
    {"op": "attach", "action": "error", "status": 503, "body": "error_text", "skip": 2, "times": None},
], ids=["definite_409", "persistent_503"])
def test_failure_on_the_nth_of_n_attaches_rolls_back(fab, provider, fault):
    fab.control.fault(**fault)
    result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=3)], provider)
    assert result is None
    assert "machine %s: attach 3 of 3 failed: " % fab.machines[0] in error.msg
    assert error.msg.endswith("nothing attached") and "rolled back the 2 this run attached" in error.msg, error.msg
    assert fab.devices() == []
    assert error.details["attached"] == [] and len(error.details["rolled_back"]) == 2
    assert error.details["kept"] == []
    assert error.details["devices"] == []  # exactly which devices are where: none on the machine
    # a gateway's 503 is an unknown outcome: the third attach, not seen, is reported as pending (it may still land)
    unknown = [{"action": "attach", "res_uuid": None, "pending": True}] if fault["status"] == 503 else []
    assert [a["action"] for a in error.details["actions"]] == ["attach", "attach"] + [u["action"] for u in unknown] + ["detach", "detach"]
    assert [dict((k, a[k]) for k in ("action", "res_uuid", "pending")) for a in error.details["pending"]] == unknown
    assert all(a.get("rollback") for a in error.details["actions"][-2:])
    detaches = fab.mutations("detach")
    assert len(detaches) == 2
    fab.control.clear_faults()
    result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=3)], provider)
    assert error is None and len(fab.devices()) == 3


def test_partial_keeps_what_was_attached(fab):
    fab.control.fault(op="attach", action="error", status=409, skip=2)
    result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=3)], partial=True)
    assert result is None and "attach 3 of 3 failed" in error.msg and "partial=true keeps the 2 attached" in error.msg
    assert len(fab.devices()) == 2 and len(error.details["attached"]) == 2 and error.details["rolled_back"] == []
    assert sorted(error.details["kept"]) == sorted(d["res_uuid"] for d in fab.devices())


# --- model names: the fabric's spelling ------------------------------------------------------------------------------

LOWER_POOL = {"a100": {"type": "gpu", "count": 4}, "H100": {"type": "gpu", "count": 2}}


@pytest.mark.parametrize("provider", ["fti_fm", "fti_cm", "redfish"])
def test_wrong_case_model_present_attaches_the_fabrics_spelling(fab, provider):
    fab.control.reset(machines=4, pool=LOWER_POOL, cm_polls=1)
    result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=2)], provider)
    assert error is None, error.msg
    assert fab.models() == ["a100", "a100"]
    assert any("model A100 matched the fabric's a100" in w and "write model: a100" in w for w in result["warnings"]), result["warnings"]
    fab.control.clear_requests()
    again, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=2)], provider)
    assert error is None and again["changed"] is False and fab.mutations() == []
    assert any("matched the fabric's a100 on the machine" in w for w in again["warnings"])


@pytest.mark.parametrize("provider", ["fti_fm", "fti_cm", "redfish"])
def test_wrong_case_model_absent_detaches_and_an_unknown_model_says_so(fab, provider):
    fab.control.reset(machines=4, pool=LOWER_POOL, cm_polls=1)
    fab.control.seed(fab.machines[0], "a100", 2)
    fab.control.seed(fab.machines[0], "H100", 1)
    result, error = fab.run([Target(machine_id=fab.machines[0], model="B200", state="absent")], provider)
    assert error is None and result["changed"] is False
    assert any("no gpu of model B200 on the machine (it holds: H100, a100); nothing to detach" in w for w in result["warnings"]), result["warnings"]
    result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", state="absent")], provider)
    assert error is None, error.msg
    assert len(result["detached"]) == 2 and fab.models() == ["H100"]
    assert any("model A100 matched the fabric's a100 on the machine" in w for w in result["warnings"])


@pytest.mark.parametrize("provider, text", [
    ("fti_fm", "1 × B200 requested, 0 free, nothing attached; no free gpu is spelled B200 or b200 (the machine holds: H100)"),
    ("redfish", "model B200 is not a gpu model of this fabric; the machine holds H100, the pool offers H100, a100"),
    ("fti_cm", "model B200 is not a gpu model of this fabric; the machine holds H100, the pool offers H100, a100"),
], ids=["fti_fm", "redfish", "fti_cm"])
def test_model_the_fabric_does_not_know_fails_listing_its_models(fab, provider, text):
    fab.control.reset(machines=4, pool=LOWER_POOL, cm_polls=1)
    fab.control.seed(fab.machines[0], "H100", 1)
    result, error = fab.run([Target(machine_id=fab.machines[0], model="B200", count=1)], provider)
    assert result is None and text in error.msg, error.msg
    assert fab.mutations() == [] and fab.models() == ["H100"]


@pytest.mark.parametrize("provider", ["fti_fm", "fti_cm", "redfish"])
def test_absent_of_a_known_model_the_machine_does_not_hold_is_quiet(fab, provider):
    result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", state="absent")], provider)
    assert error is None and result["changed"] is False and fab.mutations() == []
    assert not any("nothing to detach" in w for w in result["warnings"]), result["warnings"]
    result, error = fab.run([Target(machine_id=fab.machines[0], model="a100", state="absent")], provider)
    assert any("no gpu of model a100 on the machine (it holds: no gpu); nothing to detach" in w for w in result["warnings"]), result["warnings"]


# --- a gateway gives up while the manager still applies the change ----------------------------------------------------------


def _wait_late_commit(fab, op):
    """Until the ``late_commit`` fault's change has landed (or was refused) on the fabric: the run's outcome is judged after it."""
    import time  # pylint: disable=import-outside-toplevel
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pending = [e for e in fab.control.requests(op=op) if e.get("late_commit") == "pending"]
        if not pending:
            return [e["late_commit"] for e in fab.control.requests(op=op) if e.get("late_commit")]
        time.sleep(0.05)
    raise AssertionError("the late commit never landed")


@pytest.mark.parametrize("provider", ["fti_fm", "fti_cm", "redfish"])
@pytest.mark.parametrize("status", [502, 503, 504])
def test_a_gateway_error_while_the_manager_still_attaches_leaves_one_device(fab, provider, status):
    fab.control.clear_requests()
    fab.control.fault(op="attach", action="late_commit", status=status, delay=0.5)
    result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=1)], provider)
    assert _wait_late_commit(fab, "attach") == ["applied"]
    assert error is None, error.msg
    # the answer was the gateway's: the machine was re-read until the manager's attach showed, then adopted - never sent again
    assert len(fab.devices()) == 1, fab.devices()
    assert len(fab.mutations("attach")) == 1, fab.mutations()
    assert len(result["attached"]) == 1
    assert any("HTTP %d" % status in w and "adopted it (not attached twice)" in w for w in result["warnings"]), result["warnings"]
    fab.control.clear_requests()
    again, error = fab.run([Target(machine_id=fab.machines[0], model="A100", count=1)], provider)
    assert error is None and again["changed"] is False and fab.mutations() == []


@pytest.mark.parametrize("provider", ["fti_fm", "fti_cm", "redfish"])
def test_a_gateway_timeout_while_the_manager_still_detaches_counts_it_detached(fab, provider):
    fab.control.seed(fab.machines[0], "A100", 1)
    fab.control.clear_requests()
    fab.control.fault(op="detach", action="late_commit", status=504, delay=0.5)
    result, error = fab.run([Target(machine_id=fab.machines[0], model="A100", state="absent")], provider)
    assert _wait_late_commit(fab, "detach") == ["applied"]
    assert error is None, error.msg
    assert fab.devices() == [] and len(result["detached"]) == 1
    assert len(fab.mutations("detach")) == 1, fab.mutations()
