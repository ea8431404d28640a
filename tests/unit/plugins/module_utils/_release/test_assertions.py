"""The chainsaw / kyverno-json assertion trees (``_common.assertions``): matching rules, and every construct it does not
evaluate failing closed with a message naming it."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import assertions
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError


def tree(raw):
    return assertions.Tree(raw, "test")


def failures(raw, obj):
    return assertions.match(tree(raw), obj)


def test_plain_fields_scalars_and_numbers():
    assert failures({"status": {"phase": "Running", "replicas": 1}}, {"status": {"phase": "Running", "replicas": 1.0, "extra": 1}}) == []
    assert failures({"status": {"phase": "Running"}}, {"status": {"phase": "Pending"}}) == [("status.phase", "Running", "Pending")]
    assert failures({"status": {"phase": "Running"}}, {"status": {}})[0][0] == "status.phase"
    assert "field not found" in failures({"status": {"phase": "Running"}}, {})[0][1]
    assert failures({"ready": True}, {"ready": 1}) == [("ready", True, 1)]  # a boolean is not a number
    assert failures({"status": "True"}, {"status": True}) == [("status", "True", True)]


def test_jmespath_keys_and_the_catalogs_comparisons():
    raw = {"status": {"(availableReplicas > `0`)": True}}
    assert failures(raw, {"status": {"availableReplicas": 2}}) == []
    assert failures(raw, {"status": {"availableReplicas": 0}}) == [("status.(availableReplicas > `0`)", True, False)]
    assert failures(raw, {"status": {}}) == [("status.(availableReplicas > `0`)", True, None)]  # null > 0 is null, not false
    conditions = {"status": {"(conditions[?type == 'Established'])": [{"status": "True"}]}}
    assert failures(conditions, {"status": {"conditions": [{"type": "NamesAccepted", "status": "True"}, {"type": "Established", "status": "True"}]}}) == []
    assert failures(conditions, {"status": {"conditions": [{"type": "Established", "status": "False"}]}})[0][1:] == ("True", "False")
    assert "lengths" in failures(conditions, {"status": {"conditions": []}})[0][1]


def test_lists_match_element_by_element_with_the_same_length():
    assert failures({"items": [{"a": 1}, {"b": 2}]}, {"items": [{"a": 1, "x": 0}, {"b": 2}]}) == []
    assert "lengths of slices" in failures({"items": [{"a": 1}]}, {"items": [{"a": 1}, {"a": 1}]})[0][1]
    assert failures({"items": [{"a": 1}]}, {"items": "x"})[0][1] == "a list of 1"


def test_empty_mapping_needs_a_value_and_rhs_expressions_are_evaluated():
    assert failures({"spec": {}}, {"spec": {"x": 1}}) == []
    assert failures({"spec": {}}, {"spec": None}) == [("spec", "a value", None)]
    assert failures({"status": {"numberReady": "(desiredNumberScheduled)"}}, {"status": {"numberReady": 3}}) == [("status.numberReady", None, 3)]


def test_foreach_iterates_every_element():
    raw = {"spec": {"~.(containers)": {"(image != null)": True}}}
    assert failures(raw, {"spec": {"containers": [{"image": "a"}, {"image": "b"}]}}) == []
    assert failures(raw, {"spec": {"containers": [{"image": "a"}, {"name": "b"}]}})[0][0] == "spec.~.(containers)[1].(image != null)"
    assert "iterate" in failures({"~items": {"a": 1}}, {"items": 3})[0][1]


def check_text(steps, annotations=None):
    import yaml
    return yaml.safe_dump({"apiVersion": "chainsaw.kyverno.io/v1alpha1", "kind": "Test",
                           "metadata": dict({"name": "t"}, **({"annotations": annotations} if annotations else {})),
                           "spec": {"timeouts": {"assert": "1m30s"}, "steps": steps}})


DEPLOY = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "x", "namespace": "n"}}


def test_a_chainsaw_test_is_read_with_its_timeout_and_operations():
    check = assertions.parse_check(check_text([{"name": "one", "try": [{"assert": {"resource": DEPLOY}}, {"error": {"resource": DEPLOY}}],
                                                "catch": [{"script": {"content": "kubectl describe"}}]}]), "comp")
    assert (check.timeout, [o.op for o in check.operations], check.operations[0].step) == (90.0, ["assert", "error"], "one")
    assert check.operations[1].describe() == "error Deployment n/x"


def test_raw_resource_documents_are_asserted_as_aicr_does():
    import yaml
    check = assertions.parse_check(yaml.safe_dump_all([DEPLOY, dict(DEPLOY, kind="Service")]), "comp")
    assert [o.kind for o in check.operations] == ["Deployment", "Service"] and check.timeout is None


@pytest.mark.parametrize("steps, words", [
    ([{"try": [{"apply": {"resource": DEPLOY}}]}], "operation 1 (apply) is not supported"),
    ([{"try": [{"script": {"content": "true"}}]}], "operation 1 (script) is not supported"),
    ([{"try": [{"assert": {"file": "x.yaml"}}]}], "uses file, which is not supported"),
    ([{"try": [{"assert": {"resource": dict(DEPLOY, status={"(x_k8s_exists(@))": True})}}]}], "calls x_k8s_exists, which is not supported"),
    ([{"try": [{"assert": {"resource": dict(DEPLOY, status={"(replicas > $min)": True})}}]}], "uses a binding"),
    ([{"try": [{"assert": {"resource": dict(DEPLOY, status={"(replicas >>> 1)": True})}}]}], "is not valid JMESPath"),
    ([{"try": [{"assert": {"resource": dict(DEPLOY, status={"replicas->n": 1})}}]}], "binds a name"),
    ([{"try": [{"assert": {"resource": {"apiVersion": "(v)", "kind": "Deployment"}}}]}], "literal apiVersion and kind"),
    ([{"use": {"template": "x"}}], "use not supported"),
])
def test_unsupported_constructs_fail_closed_naming_them(steps, words):
    with pytest.raises(AicrError) as failure:
        assertions.parse_check(check_text(steps), "comp")
    assert words in failure.value.msg and "health check of comp" in failure.value.msg


def test_other_documents_and_durations_fail_closed():
    with pytest.raises(AicrError, match="kind 'StepTemplate' is not supported"):
        assertions.parse_check("apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: StepTemplate\n", "comp")
    with pytest.raises(AicrError, match="neither a Chainsaw Test nor a resource"):
        assertions.parse_check("apiVersion: v1\nkind: ConfigMap\n", "comp")
    with pytest.raises(AicrError, match="not a duration"):
        assertions.parse_check(check_text([]).replace("1m30s", "soon"), "comp")
    assert [assertions.parse_duration(t, "x") for t in ("5m", "1h2m3s", "250ms", 7)] == [300.0, 3723.0, 0.25, 7.0]


def test_without_jmespath_the_message_names_the_package(monkeypatch):
    monkeypatch.setattr(assertions, "HAS_JMESPATH", False)
    with pytest.raises(AicrError) as failure:
        assertions.parse_check(check_text([]), "comp")
    assert "'jmespath' is required" in failure.value.msg and failure.value.details["missing_library"] == "jmespath"


def test_evaluate_assert_any_candidate_and_error_none():
    op = assertions.parse_check(check_text([{"try": [{"assert": {"resource": dict(DEPLOY, status={"ready": 1})}}]}]), "c").operations[0]
    good = dict(DEPLOY, status={"ready": 1})
    bad = dict(DEPLOY, status={"ready": 0})
    assert assertions.evaluate(op, [bad, good]) == (True, None)
    passed, detail = assertions.evaluate(op, [bad])
    assert not passed and detail["message"] == "status.ready: expected 1, got 0" and detail["resource"] == "Deployment n/x"
    err = assertions.parse_check(check_text([{"try": [{"error": {"resource": dict(DEPLOY, status={"ready": 0})}}]}]), "c").operations[0]
    assert assertions.evaluate(err, []) == (True, None) and assertions.evaluate(err, [good]) == (True, None)
    passed, detail = assertions.evaluate(err, [good, bad])
    assert not passed and detail["resource"] == "Deployment n/x" and "matches the error condition" in detail["message"]
