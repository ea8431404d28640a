"""crd_publish module against the lab's real kube-apiserver, as the least-privilege ``crd-publisher`` identity: result keys,
diff only in diff mode, refusal as fail_json with findings."""

import json
import uuid

import pytest

from modules_testlib import run_main

from ansible_collections.aicr.runtime.plugins.modules import crd_publish

CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


@pytest.fixture
def group(lab_kube):
    """A CRD group of the test's own (CRDs are cluster-scoped, the cluster is shared); its CRD is deleted afterwards."""
    name = "m%s.mod.aicr.io" % uuid.uuid4().hex[:6]
    yield name
    lab_kube.rest.delete("%s/widgets.%s" % (CRDS, name))


def crd(group, properties):
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {"values": {"type": "object", "properties": properties}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "widgets.%s" % group},
            "spec": {"group": group, "scope": "Namespaced",
                     "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
                     "versions": [{"name": "v1alpha1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}]}}


def run(capsys, args):
    return run_main(crd_publish, capsys, args)


def live_values(kube, group):
    live = kube.get("%s/widgets.%s" % (CRDS, group))
    return live["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["values"]["properties"]


def test_publish_refuse_and_allow(capsys, kube, group, tmp_path):
    base = {"kubeconfig": kube.kubeconfig_for("crd-publisher"), "wait_sleep": 0.05, "wait_timeout": 30}
    code, out = run(capsys, dict(base, definition=crd(group, {"size": {"type": "integer"}, "mode": {"type": "string"}})))
    assert code == 0 and out["changed"] is True and out["action"] == "create" and out["established"] is True
    assert "diff" not in out and out["invocation"]["module_args"]["kubeconfig"] == kube.kubeconfig_for("crd-publisher")
    assert sorted(live_values(kube, group)) == ["mode", "size"]

    code, out = run(capsys, dict(base, definition=crd(group, {"size": {"type": "string"}}), _ansible_diff=True))
    assert code == 1 and out["failed"] is True and out["breaking"] is True and out["changed"] is False
    assert out["msg"].startswith("definition: 3 breaking change(s) to the live CRD widgets.%s: " % group)
    assert {(f["rule"], f["path"]) for f in out["findings"] if f["severity"] == "error"} == {
        ("existingFieldRemoval", "^.spec.values.mode"), ("type", "^.spec.values.mode"), ("type", "^.spec.values.size")}
    assert live_values(kube, group)["size"] == {"type": "integer"}, "refused: the live CRD is untouched"

    src = tmp_path / "crd.json"
    src.write_text(json.dumps(crd(group, {"size": {"type": "string"}})))
    code, out = run(capsys, dict(base, src=str(src), allow_breaking=True, _ansible_diff=True, _ansible_check_mode=True))
    assert code == 0 and out["changed"] is True and out["action"] == "update" and out["established"] is False
    assert "mode" in out["diff"]["before"]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["values"]["properties"]
    assert "mode" in live_values(kube, group), "check mode writes nothing"
    code, out = run(capsys, dict(base, src=str(src), allow_breaking=True))
    assert code == 0 and out["changed"] is True and out["action"] == "update"
    assert live_values(kube, group) == {"size": {"type": "string"}}
    code, out = run(capsys, dict(base, src=str(src)))
    assert code == 0 and out["changed"] is False and out["action"] == "unchanged"


def test_argument_errors(capsys, kube):
    code, out = run(capsys, {"kubeconfig": kube.kubeconfig_for("crd-publisher")})
    assert code == 1 and "one of the following is required: definition, src" in out["msg"]
    code, out = run(capsys, {"kubeconfig": kube.kubeconfig_for("crd-publisher"), "definition": "kind: ConfigMap\n"})
    assert code == 1 and out["msg"] == "definition: the text holds no CustomResourceDefinition; allowed: a document with kind CustomResourceDefinition"
