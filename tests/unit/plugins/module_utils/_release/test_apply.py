"""Object identity, labels and comparison."""

import pytest
from hypothesis import given, strategies as st

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._release import apply


@pytest.mark.parametrize("text,expected", [
    ("Widget", "widget"),
    ("my_Demo..widget", "my-demo-widget"),
    ("--Lead-and-trail--", "lead-and-trail"),
    ("gpu-operator.v26.3", "gpu-operator-v26-3"),
    ("ÄÖ name", "name"),
])
def test_slug(text, expected):
    assert apply.slug(text) == expected


@given(st.text())
def test_slug_shape(text):
    result = apply.slug(text)
    assert result == result.lower()
    assert not result.startswith("-") and not result.endswith("-")
    assert "--" not in result
    assert all(ch.isalnum() or ch == "-" for ch in result)


def test_identity_with_and_without_kind_name():
    doc = {"apiVersion": "example.aicr.io/v1", "kind": "Widget", "metadata": {"name": "Demo_Widget"}}
    assert apply.object_identity("example-operator", "post", 0, doc) == "example-operator-post-widget-demo-widget"
    assert apply.object_identity("c", "pre", 3, {"apiVersion": "v1", "data": {}}) == "c-pre-3"
    assert apply.object_identity("c", "pre", 1, {"kind": "X", "metadata": {"name": "..."}}) == "c-pre-1"


def test_manifest_object_labels_and_errors():
    mobj = apply.ManifestObject("agent", "post", 0, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "labels": {"a": "b"}}}, "prod-east")
    labels = mobj.body["metadata"]["labels"]
    assert labels["a"] == "b"
    assert labels[apply.STACK_LABEL] == "prod-east"
    assert labels[apply.COMPONENT_LABEL] == "agent"
    assert labels[apply.OBJECT_ID_LABEL] == "agent-post-configmap-cfg"
    with pytest.raises(AicrError, match="document 2 of component agent"):
        apply.ManifestObject("agent", "pre", 2, {"kind": "ConfigMap"}, "s")


def test_label_value_is_valid():
    value = apply.label_value("x" * 80 + "/..")
    assert len(value) <= 63 and value[-1].isalnum()


def test_plan_and_apply_against_fake(fake_cluster):
    fake_cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    doc = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg"}, "data": {"k": "v"}}
    mobj = apply.ManifestObject("c", "post", 0, doc, "s")
    assert apply.plan_object(fake_cluster, mobj, "ns") == ("create", "does not exist")
    assert mobj.namespace == "ns"
    apply.apply_object(fake_cluster, mobj, "ns")
    assert apply.plan_object(fake_cluster, mobj, "ns")[0] == "unchanged"
    changed = apply.ManifestObject("c", "post", 0, dict(doc, data={"k": "w"}), "s")
    assert apply.plan_object(fake_cluster, changed, "ns")[0] == "update"
    crd_less = apply.ManifestObject("c", "post", 1, {"apiVersion": "x.io/v1", "kind": "Widget", "metadata": {"name": "w"}}, "s")
    assert apply.plan_object(fake_cluster, crd_less, "ns")[0] == "create"
    with pytest.raises(AicrError, match="not served"):
        apply.apply_object(fake_cluster, crd_less, "ns")


def test_cluster_scoped_objects_lose_namespace(fake_cluster):
    mobj = apply.ManifestObject("c", "pre", 0, {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
                                                "metadata": {"name": "r", "namespace": "ns"}}, "s")
    assert mobj.place(fake_cluster, "ns") is True
    assert "namespace" not in mobj.body["metadata"]


def test_comparable_ignores_server_fields():
    live = {"kind": "X", "metadata": {"name": "a", "resourceVersion": "3", "managedFields": [{}], "uid": "u"}, "status": {"x": 1}, "spec": {"a": 1}}
    dry = {"kind": "X", "metadata": {"name": "a", "resourceVersion": "4"}, "spec": {"a": 1}}
    assert apply.comparable(live) == apply.comparable(dry)
    assert apply.comparable(dict(dry, spec={"a": 2})) != apply.comparable(live)
