"""fabric_device's one validation pass (``_fabric/options.py``): every bad number and target refused at once, naming the
field, before the cluster or the fabric is contacted (issue 36: ``max_workers: 0`` silently ran with 8, ``timeout: -1`` failed
with ``unexpected ValueError`` after the token request was sent)."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._entry import fabric_device as fabric_run
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.options import check_options
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target
from ansible_collections.aicr.runtime.plugins.modules.fabric_device import argument_spec


def params(**overrides):
    """fabric_device's parameters as AnsibleModule hands them over (every option, its default) plus ``overrides``."""
    values = dict((name, spec.get("default")) for name, spec in argument_spec().items())
    values.update(provider="fti_cm", endpoint="127.0.0.1:9", tenant_id="t", cluster_id="c", machine_id="m-0", model="A100", count=1)
    values.update(overrides)
    return values


@pytest.fixture
def untouched(monkeypatch):
    """Fails the test when the run reaches the cluster or builds a fabric backend (which would send the token request)."""
    monkeypatch.setattr(fabric_run, "_client", lambda _p: pytest.fail("the cluster was contacted"))
    monkeypatch.setattr(fabric_run, "build_backend", lambda *a, **k: pytest.fail("the fabric was contacted"))


def refused(**overrides):
    with pytest.raises(AicrError) as caught:
        fabric_run.run(params(**overrides))
    return caught.value


@pytest.mark.parametrize("field, value, message", [
    ("max_workers", 0, "max_workers: 0 is not allowed; use 1 to 256"),
    ("max_workers", -3, "max_workers: -3 is not allowed; use 1 to 256"),
    ("wait_timeout", 0, "wait_timeout: 0 is not allowed; use more than 0 and at most 86400 seconds"),
    ("wait_timeout", -1, "wait_timeout: -1 is not allowed; use more than 0 and at most 86400 seconds"),
    ("poll_interval", -5, "poll_interval: -5 is not allowed; use more than 0 and at most 86400 seconds"),
    ("poll_interval", 0.0, "poll_interval: 0.0 is not allowed; use more than 0 and at most 86400 seconds"),
    ("timeout", 0, "timeout: 0 is not allowed; use more than 0 and at most 86400 seconds"),
    ("timeout", -1.0, "timeout: -1.0 is not allowed; use more than 0 and at most 86400 seconds"),
    ("timeout", 1e300, "timeout: 1e+300 is not allowed; use more than 0 and at most 86400 seconds"),
    ("settle_timeout", 0.0, "settle_timeout: 0.0 is not allowed; use more than 0 and at most 86400 seconds"),
    ("orphan_grace", -1, "orphan_grace: -1 is not allowed; use 0 or more seconds"),
    ("count", -1, "count: -1 is not allowed; use 0 or more"),
])
def test_a_bad_number_is_refused_naming_the_field(untouched, field, value, message):
    error = refused(**{field: value})
    assert error.msg == message
    assert error.details["field"] == (field if field != "count" else "count")
    assert "\n" not in error.msg


def test_zero_is_allowed_where_documented(untouched, monkeypatch):
    """``count: 0`` (detach them all) and ``orphan_grace: 0`` (detach at once) are values, not errors: the run goes on to
    build its backend."""
    monkeypatch.setattr(fabric_run, "build_backend", lambda *a, **k: (item for item in ()).throw(RuntimeError("backend reached")))
    with pytest.raises(RuntimeError, match="backend reached"):
        fabric_run.run(params(count=0, orphan_grace=0))


def test_every_problem_is_listed(untouched):
    """The issue's case: ``wait_timeout: -1, poll_interval: -5`` and more, all in ``errors``, nothing contacted."""
    error = refused(wait_timeout=-1, poll_interval=-5, timeout=0, max_workers=0, machine_id=None,
                    machines=[{"machine_id": "m-0", "count": -2}, {"node": None, "machine_id": None, "state": "absent", "count": 1}])
    fields = [e["field"] for e in error.details["errors"]]
    assert fields == ["timeout", "wait_timeout", "poll_interval", "max_workers", "machines[0].count", "machines[1].node", "machines[1].count"]
    assert error.msg.startswith("timeout: 0 is not allowed") and error.msg.endswith("(and 6 more problems, listed in errors)")


def test_a_bad_stack_comes_first_and_the_rest_is_listed(untouched):
    error = refused(stack="gpu prod", max_workers=0)
    assert error.msg.startswith("stack: 'gpu prod' is not a DNS-1123 label")
    assert [e["field"] for e in error.details["errors"]] == ["stack", "max_workers"]


@pytest.mark.parametrize("target, problem", [
    (Target(machine_id="m0"), {"field": "count", "message": "count: required with state=present; use 0 or more", "value": None,
                               "allowed": {"minimum": 0}}),
    (Target(machine_id="m0", count=-1), {"field": "count", "message": "count: -1 is not allowed; use 0 or more", "value": -1, "allowed": {"minimum": 0}}),
    (Target(machine_id="m0", count=1, dtype="fpga"), {"field": "type", "message": "type: 'fpga' is not allowed; use one of gpu, cxlmemory",
                                                      "value": "fpga", "allowed": ["gpu", "cxlmemory"]}),
    (Target(machine_id="m0", devices=["x"], count=0), {"field": "devices", "value": "['x']",
                                                       "message": "devices: names fabric ids to detach and needs state=absent; use count with state=present"}),
    (Target(machine_id="m0", count=1, state="absent"), {"field": "count", "value": 1, "message": "count: 1 is not allowed with state=absent (count is for "
                                                        "state=present); give devices, or nothing to detach every gpu"}),
    (Target(count=1), {"field": "node", "message": "node: give node or machine_id (neither is set)", "value": None, "allowed": ["node", "machine_id"]}),
    (Target(machine_id="m0", count=1, state="gone"), {"field": "state", "message": "state: 'gone' is not allowed; use one of present, absent",
                                                      "value": "gone", "allowed": ["present", "absent"]}),
])
def test_a_bad_target_is_one_problem_of_the_one_shape(target, problem):
    """``Target.check`` reports through ``Problems`` (field, message, value, allowed) - in the pass of check_options, the only one."""
    with pytest.raises(AicrError) as caught:
        check_options(params(), [target])
    assert caught.value.details["errors"] == [problem]
    assert caught.value.msg == problem["message"]


def test_a_single_machines_item_is_named_by_its_index(untouched):
    error = refused(machine_id=None, machines=[{"machine_id": "m-0", "count": -2}])
    assert [e["field"] for e in error.details["errors"]] == ["machines[0].count"]


# --- nothing reaches the fabric: its request log, on the HTTPS simulator -------------------------------------------------

BAD_OPTIONS = [
    {"timeout": -1}, {"timeout": 0}, {"timeout": 0.0}, {"timeout": 1e300},
    {"wait_timeout": -1}, {"wait_timeout": 0},
    {"poll_interval": -5}, {"poll_interval": 0},
    {"settle_timeout": 0}, {"settle_timeout": -2.5},
    {"max_workers": 0}, {"max_workers": 257},
    {"orphan_grace": -1},
    {"count": -1}, {"count": None},
    {"type": "fpga"}, {"state": "gone"},
    {"machine_id": None},
    {"devices": ["x"], "count": None},
    {"state": "absent", "count": 1},
    {"machine_id": None, "machines": [{"machine_id": "m-0", "count": -2}]},
    {"stack": "gpu prod"}, {"status_stack": "GPU"},
    {"wait_timeout": -1, "poll_interval": -5},  # the case
]


@pytest.fixture
def on_the_simulator(fab, monkeypatch):
    """fabric_device's parameters against the HTTPS simulator (valid credentials); the cluster is never to be contacted."""
    monkeypatch.setattr(fabric_run, "_client", lambda _p: pytest.fail("the cluster was contacted"))

    def make(**overrides):
        values = params(provider="fti_cm", endpoint=fab.sim.endpoint, ca_path=fab.sim.ca_path, tenant_id=fab.tenant_id, cluster_id=fab.cluster_id,
                        machine_id=fab.machines[0], **fab.sim.credentials)
        values.update(overrides)
        return values

    fab.control.clear_requests()
    return make


@pytest.mark.parametrize("bad", BAD_OPTIONS, ids=lambda bad: ",".join("%s=%s" % item for item in sorted(bad.items())))
@pytest.mark.parametrize("check_mode", [False, True], ids=["run", "check"])
def test_no_bad_option_reaches_the_fabric(fab, on_the_simulator, bad, check_mode):
    """Every bad option is refused naming its field before a request - the token request included - reaches the fabric
    (``timeout: -1`` used to fail with ``unexpected ValueError`` after the token request was sent)."""
    with pytest.raises(AicrError) as caught:
        fabric_run.run(on_the_simulator(**bad), check_mode=check_mode)
    assert any(key in caught.value.msg for key in bad), caught.value.msg  # the one line names the field
    assert "\n" not in caught.value.msg and "unexpected" not in caught.value.msg
    assert fab.control.requests() == [], "the fabric was contacted: %s" % fab.control.requests()
    assert fab.devices() == []


def test_the_same_parameters_without_the_bad_option_reach_the_fabric(fab, on_the_simulator):
    """The control: valid parameters do reach the simulator, so an empty request log above means nothing was sent."""
    result = fabric_run.run(on_the_simulator(wait_timeout=30, poll_interval=0.05))
    assert result["changed"] is True and fab.control.requests(op="token") and len(fab.devices()) == 1
