"""stack_info and stack_status check their options in one pass before the cluster is reached (issue 36): a kubeconfig
that does not exist would be the first thing to fail otherwise, hiding every option problem."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._stack import crd as stack_crd
from ansible_collections.aicr.runtime.plugins.module_utils._stack import engine, model

UNREACHABLE = {"kubeconfig": "/nonexistent/kubeconfig"}


def refusal(call, **params):
    with pytest.raises(AicrError) as err:
        call(dict(UNREACHABLE, **params))
    return err.value


def test_stack_status_lists_every_problem_before_the_cluster():
    error = refusal(engine.update_status, name="My Stack/../x", namespace="Bad NS", backend="crd", spec={"catalog": {}}, phase="Done",
                    observed_generation=-1, conditions=[{"type": "Bogus", "status": "maybe"}, {"type": "Ready", "status": "True"}, "x"],
                    components=[{"phase": "Weird"}], devices=["gpu"], events=[5], recipe={"nam": "x"}, reconcile={"resyncSeconds": -1},
                    catalog={"autoUpdateSource": "me"})
    assert [e["field"] for e in error.details["errors"]] == [
        "namespace", "name", "spec", "phase", "observed_generation", "conditions[0].type", "conditions[0].status", "conditions[1].type",
        "conditions[2]", "components[0].name", "components[0].phase", "devices[0]", "events[0]", "recipe.nam", "catalog.autoUpdateSource",
        "reconcile.resyncSeconds"]
    assert error.msg.startswith("namespace: 'Bad NS' is not a DNS-1123 label; allowed: a DNS-1123 label")
    assert error.msg.endswith("(and 15 more problems, listed in errors)")
    assert "recipe: nam is not known; did you mean name? allowed: " in [e["message"] for e in error.details["errors"]][13]


def test_stack_status_without_a_name_is_refused_before_the_cluster():
    assert refusal(engine.update_status).msg == "name: missing; allowed: a stack name (or install_crd=true alone)"


def test_a_spec_past_the_limits_is_refused_before_it_is_written(monkeypatch):
    """The store reads a stack's spec within the limits: what it could not read again is never written."""
    monkeypatch.setenv("AICR_RUNTIME_MAX_NODES", "50")
    error = refusal(engine.update_status, name="gpu", backend="configmap", spec={"componentOverrides": {"a": {"values": list(range(100))}}})
    assert error.msg.startswith("spec: refused, more than 50 nodes: past the nodes limit of 50")


@pytest.mark.parametrize("params, message", [
    ({"names": ["My Stack/../x"]}, "names[0]: 'My Stack/../x' is not a DNS-1123 label; allowed: a DNS-1123 label"),
    ({"resync_interval": -5}, "resync_interval: -5 is not allowed; allowed: zero or more seconds"),
    ({"resync_interval": "5 parsecs"}, "resync_interval: '5 parsecs' is not allowed; allowed: seconds or a duration like 30s, 5m, 1h30m"),
    ({"namespace": "Bad NS"}, "namespace: 'Bad NS' is not a DNS-1123 label"),
    ({"backend": "etcd"}, "backend: 'etcd' is not allowed; use one of crd, configmap"),
])
def test_stack_info_refuses_before_the_cluster(params, message):
    assert refusal(engine.info, **params).msg.startswith(message)


def test_stack_info_lists_every_problem():
    error = refusal(engine.info, names=["ok", "Not OK"], resync_interval=True, namespace="-x-")
    assert [e["field"] for e in error.details["errors"]] == ["namespace", "names[1]", "resync_interval"]


def test_the_update_keys_are_the_status_schema_s():
    status = stack_crd.status_schema()["properties"]
    for field, keys in model.UPDATE_MAPPINGS.items():
        assert sorted(keys) == sorted(status[field]["properties"]), field
