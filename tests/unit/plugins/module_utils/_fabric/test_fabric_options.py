"""fabric_device's one validation pass (``_fabric/options.py``): every bad number and target refused at once, naming the
field, before the cluster or the fabric is contacted (issue 36: ``max_workers: 0`` silently ran with 8, ``timeout: -1`` failed
with ``unexpected ValueError`` after the token request was sent)."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric import run as fabric_run
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
    ("count", -1, "options: count -1 must be an integer >= 0 with state=present"),
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
