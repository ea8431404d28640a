"""What stack_info returns of a stack hides its secrets (issue 35): the spec, and kubectl's copy of it in the
last-applied-configuration annotation; ``show_values`` returns both as they are."""

import datetime
import json

from ansible_collections.aicr.runtime.plugins.module_utils._stack import engine

SPEC = {"catalog": {"source": "/nowhere"}, "criteria": {"service": "kind"},
        "componentOverrides": {"db": {"version": "1.0.0", "values": {"auth": {"enabled": True, "password": "pw-s3cret-1"},
                                                                     "connectionString": "Server=db;Password=pw-s3cret-2"}}},
        "repositoryMirrors": {"https://charts.example": {"url": "https://ops:pw-s3cret-3@mirror.internal", "plain_http": False}}}
STACK = {"metadata": {"name": "gpu", "generation": 1, "annotations": {
    engine.LAST_APPLIED: json.dumps({"apiVersion": "runtime.aicr.io/v1alpha1", "kind": "ClusterStack", "metadata": {"name": "gpu"}, "spec": SPEC}),
    "team": "ml"}}, "spec": SPEC, "status": {}}
NOW = datetime.datetime(2026, 1, 1, tzinfo=datetime.timezone.utc)


def test_describe_hides_the_secrets_of_the_spec_and_of_its_last_applied_copy():
    described = engine.describe(STACK, 300, False, NOW)
    assert "s3cret" not in json.dumps(described)
    values = described["spec"]["componentOverrides"]["db"]["values"]
    assert values == {"auth": {"enabled": True, "password": "<hidden>"}, "connectionString": "<hidden>"}
    assert described["spec"]["repositoryMirrors"]["https://charts.example"]["url"] == "https://ops:<hidden>@mirror.internal"
    assert described["spec"]["criteria"] == {"service": "kind"} and described["annotations"]["team"] == "ml"
    applied = json.loads(described["annotations"][engine.LAST_APPLIED])
    assert applied["spec"]["componentOverrides"]["db"]["values"]["auth"]["password"] == "<hidden>"
    assert STACK["spec"]["componentOverrides"]["db"]["values"]["auth"]["password"] == "pw-s3cret-1", "the stack itself is not changed"


def test_show_values_returns_the_stack_as_it_is():
    described = engine.describe(STACK, 300, False, NOW, show_values=True)
    assert described["spec"] == SPEC and described["annotations"] == STACK["metadata"]["annotations"]


def test_an_annotation_that_is_not_json_is_hidden_whole():
    shown = engine.shown_annotations({engine.LAST_APPLIED: "{not json password=x"})
    assert shown == {engine.LAST_APPLIED: "<hidden>"}


def test_the_spec_a_configmap_stack_is_given_is_no_log():
    assert {"pw-s3cret-1", "Server=db;Password=pw-s3cret-2", "pw-s3cret-3"} <= engine.spec_secrets({"spec": SPEC})
