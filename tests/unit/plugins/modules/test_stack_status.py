"""stack_status module against the Kubernetes API emulator: CRD install, updates, check/diff mode, ConfigMap backend, errors."""

import json

import pytest

from modules_testlib import run_main

from ansible_collections.aicr.runtime.plugins.module_utils.kube import build_api_client
from ansible_collections.aicr.runtime.plugins.module_utils.stack import store
from ansible_collections.aicr.runtime.plugins.modules import stack_status


def run(capsys, args):
    return run_main(stack_status, capsys, args)


def test_install_crd_then_update_status(capsys, kube):
    code, out = run(capsys, {"install_crd": True, "kubeconfig": kube.kubeconfig, "_ansible_check_mode": True})
    assert code == 0 and out["changed"] and out["actions"] == ["would create CRD clusterstacks.runtime.aicr.io"]
    code, out = run(capsys, {"install_crd": True, "kubeconfig": kube.kubeconfig})
    assert code == 0 and out["changed"] and out["actions"] == ["create CRD clusterstacks.runtime.aicr.io"]
    code, out = run(capsys, {"install_crd": True, "kubeconfig": kube.kubeconfig})
    assert code == 0 and not out["changed"]

    api = store.Api(build_api_client(kube.kubeconfig))
    api.request("POST", store.stack_path(), body={"apiVersion": "runtime.aicr.io/v1alpha1", "kind": "ClusterStack", "metadata": {"name": "gpu"},
                                                  "spec": {"catalog": {"source": "/c"}}})
    args = {"name": "gpu", "kubeconfig": kube.kubeconfig, "phase": "Ready", "observed_generation": 1,
            "components": [{"name": "a", "phase": "Unchanged", "revision": 2}], "replace_components": True,
            "conditions": [{"type": "ComponentsReady", "status": "True", "reason": "AllReady", "message": "1/1"}],
            "events": [{"type": "Reconciled", "message": "generation 1 converged"}]}
    code, out = run(capsys, dict(args, _ansible_check_mode=True, _ansible_diff=True))
    assert code == 0 and out["changed"] and out["actions"] == ["would update status of stack gpu (phase Ready)"]
    assert out["diff"]["before"] == {"status": {}} and out["diff"]["after"]["status"]["phase"] == "Ready"
    assert api.request("GET", store.stack_path("gpu")).get("status") in (None, {}), "check mode writes nothing"
    code, out = run(capsys, args)
    assert code == 0 and out["changed"] and out["generation"] == 1 and out["conflicts"] == 0
    assert out["status"]["readyComponents"] == "1/1" and out["status"]["components"][0]["revision"] == 2
    assert [e["type"] for e in out["events"]] == ["ComponentReady", "PhaseReady", "Reconciled"]
    code, out = run(capsys, {"name": "gpu", "kubeconfig": kube.kubeconfig})
    assert code == 0 and not out["changed"] and out["status"]["phase"] == "Ready", "no update options: a read"
    assert kube.kubeconfig not in json.dumps(out) and kube.token not in json.dumps(out)


def test_configmap_backend(capsys, kube):
    base = {"name": "lab", "backend": "configmap", "kubeconfig": kube.kubeconfig}
    spec = {"catalog": {"source": "/c"}}
    code, out = run(capsys, dict(base, spec=spec, _ansible_check_mode=True))
    assert code == 0 and out["changed"] and out["generation"] == 1 and out["actions"] == ["would set spec of stack lab (generation 1)"]
    code, out = run(capsys, dict(base, spec=spec, phase="Pending"))
    assert code == 0 and out["changed"] and out["status"]["phase"] == "Pending"
    code, out = run(capsys, dict(base, spec=dict(spec, suspend=True), _ansible_diff=True))
    assert code == 0 and out["changed"] and out["generation"] == 2 and out["diff"]["after"]["spec"]["suspend"] is True
    code, out = run(capsys, dict(base, spec=dict(spec, suspend=True), phase="Pending"))
    assert code == 0 and not out["changed"]


@pytest.mark.parametrize("args, message", [
    ({}, "name: missing; allowed: a stack name (or install_crd=true alone)"),
    ({"name": "gpu", "spec": {}}, "spec: only allowed with backend=configmap"),
    ({"name": "gpu", "conditions": [{"type": "Ready", "status": "True"}]}, "conditions[].type: Ready is not allowed here"),
    ({"name": "absent"}, "name: ClusterStack 'absent' not found"),
    ({"name": "gpu", "phase": "Done"}, "value of phase must be one of"),
])
def test_errors_are_one_line(capsys, kube, args, message):
    code, out = run(capsys, dict(args, kubeconfig=kube.kubeconfig))
    assert code == 1 and message in out["msg"] and "\n" not in out["msg"]
