"""A failed health check tells what it found without quoting secrets (issue 35): its ``actual`` goes verbatim into the
task's ``msg`` and the ClusterStack status (``components[].healthCheck``, the HealthChecksPassed condition)."""

import json

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common import assertions
from ansible_collections.aicr.runtime.plugins.module_utils._release import health
from ansible_collections.aicr.runtime.plugins.module_utils._stack import model

SECRET = "hunter2-s3cr3t"


class OneObject(object):
    """A read-only cluster holding one object (what run_check reads through)."""

    def __init__(self, obj):
        self.obj = dict(obj, apiVersion="v1")

    def is_namespaced(self, api_version, kind):
        return True

    def get(self, api_version, kind, name, namespace=None):
        return self.obj

    def list(self, api_version, kind, namespace=None, label_selector=None):
        return [self.obj]


def check(kind, resource):
    return yaml.safe_dump({"apiVersion": "chainsaw.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "c"},
                           "spec": {"steps": [{"name": "s", "try": [{"assert": {"resource": dict(
                               {"apiVersion": "v1", "kind": kind, "metadata": {"name": "x", "namespace": "apps"}}, **resource)}}]}]}})


def failure(obj, resource):
    parsed = assertions.parse_check(check(obj["kind"], resource), "db")
    with pytest.raises(health.HealthCheckFailed) as failed:
        health.run_check(OneObject(obj), parsed, "apps", 0.0, 0.01, lambda: 0.0, lambda s: None)
    return failed.value


def secret_free(failed):
    entry = model.health_entry(failed.entry)
    text = json.dumps([failed.msg, failed.entry, entry])
    assert SECRET not in text, text
    return failed.entry


META = {"name": "x", "namespace": "apps"}


@pytest.mark.parametrize("obj,resource,expression", [
    ({"kind": "Secret", "metadata": META, "data": {"password": SECRET}}, {"data": {"password": "other"}}, "data.password"),
    ({"kind": "Secret", "metadata": META, "data": {"tls.crt": SECRET}}, {"data": {"tls.crt": "other"}}, "data.tls.crt"),
    ({"kind": "Secret", "metadata": META, "stringData": {"x": SECRET}}, {"(stringData.x)": "other"}, "(stringData.x)"),
    ({"kind": "ConfigMap", "metadata": META, "data": {"db_password": SECRET}}, {"data": {"db_password": "other"}}, "data.db_password"),
    ({"kind": "ConfigMap", "metadata": META, "data": {"cfg": {"apiKey": SECRET, "mode": "a"}}}, {"data": {"cfg": {"mode": "b"}}}, None),
    ({"kind": "ConfigMap", "metadata": META, "data": {"url": "postgres://app:%s@db/x" % SECRET}}, {"data": {"url": "other"}}, "data.url"),
])
def test_a_failure_hides_what_is_secret_and_keeps_the_rest(obj, resource, expression):
    entry = secret_free(failure(obj, resource))
    assert entry["status"] == "Failed" and entry["resource"] == "%s apps/x" % obj["kind"]
    if expression:
        assert entry["expression"] == expression


def test_the_message_still_says_what_differs():
    failed = failure({"kind": "ConfigMap", "metadata": META, "data": {"db_password": SECRET, "mode": "a"}}, {"data": {"db_password": "other"}})
    assert failed.entry["actual"] == '"<hidden>"' and failed.entry["expected"] == '"<hidden>"'
    assert "data.db_password: expected \"<hidden>\", got \"<hidden>\"" in failed.msg
    plain = failure({"kind": "ConfigMap", "metadata": META, "data": {"mode": "a"}}, {"data": {"mode": "b"}})
    assert plain.entry["actual"] == '"a"' and plain.entry["expected"] == '"b"', "a value that is not secret is shown as it is"
    whole = failure({"kind": "Secret", "metadata": META, "type": "Opaque", "data": {"password": SECRET}}, {"data": {"(length(@))": 2}})
    assert SECRET not in whole.msg
    mapping = failure({"kind": "Secret", "metadata": META, "type": "Opaque", "data": {"password": SECRET, "user": "u"}}, {"(data)": "x"})
    assert mapping.entry["actual"] == '{"password": "<hidden>", "user": "<hidden>"}', "which keys a Secret has is shown, not what they hold"


def test_status_conditions_built_from_a_failure_carry_no_secret():
    failed = failure({"kind": "Secret", "metadata": META, "data": {"token": SECRET}}, {"data": {"token": "other"}})
    conditions = model.gate_conditions({"components": [{"name": "db", "health": failed.entry}]})
    assert conditions[0]["type"] == "HealthChecksPassed" and SECRET not in json.dumps(conditions)
