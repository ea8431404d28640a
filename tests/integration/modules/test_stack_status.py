"""stack_status module against the lab's real kube-apiserver, as the least-privilege identities: CRD install, updates,
check/diff mode, ConfigMap backend, errors."""

import json

import pytest
import yaml

from modules_testlib import run_main

from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import client_for
from ansible_collections.aicr.runtime.plugins.module_utils._stack import store
from ansible_collections.aicr.runtime.plugins.modules import stack_status


def run(capsys, args):
    return run_main(stack_status, capsys, args)


def test_install_crd_then_update_status(capsys, private_kube):
    # a cluster of its own: the CRD starts absent. install_crd is stack_reconcile's step, so its identity
    reconciler = private_kube.kubeconfig_for("reconciler")
    code, out = run(capsys, {"install_crd": True, "kubeconfig": reconciler, "_ansible_check_mode": True})
    assert code == 0 and out["changed"] and out["actions"] == ["would create CRD clusterstacks.runtime.aicr.io"]
    code, out = run(capsys, {"install_crd": True, "kubeconfig": reconciler})
    assert code == 0 and out["changed"] and out["actions"] == ["create CRD clusterstacks.runtime.aicr.io"]
    code, out = run(capsys, {"install_crd": True, "kubeconfig": reconciler})
    assert code == 0 and not out["changed"]

    kubeconfig = private_kube.kubeconfig_for("stack")
    api = client_for(kubeconfig)
    # created by its owner (the lab's admin): the stack identity may write its status only
    private_kube.rest.create(store.stack_path(), {"apiVersion": "runtime.aicr.io/v1alpha1", "kind": "ClusterStack", "metadata": {"name": "gpu"},
                                                  "spec": {"catalog": {"source": "/c"}}})
    args = {"name": "gpu", "kubeconfig": kubeconfig, "phase": "Ready", "observed_generation": 1,
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
    code, out = run(capsys, {"name": "gpu", "kubeconfig": kubeconfig})
    assert code == 0 and not out["changed"] and out["status"]["phase"] == "Ready", "no update options: a read"
    with open(kubeconfig, "r", encoding="utf-8") as handle:
        user = yaml.safe_load(handle)["users"][0]["user"]
    with open(user["client-key"], "r", encoding="utf-8") as handle:
        key = handle.read().strip().splitlines()[1]
    # a kubeconfig path is not a secret (issue 15): shown as given, never masked; what the file holds never appears
    assert out["invocation"]["module_args"]["kubeconfig"] == kubeconfig and key not in json.dumps(out)


def test_configmap_backend(capsys, kube):
    base = {"name": "lab", "backend": "configmap", "namespace": kube.namespace, "kubeconfig": kube.kubeconfig_for("stack")}
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
    ({"name": "gpu", "conditions": [{"type": "Ready", "status": "True"}]}, "conditions[0].type: Ready is not allowed here"),
    ({"name": "absent"}, "name: ClusterStack 'absent' not found"),
    ({"name": "gpu", "phase": "Done"}, "value of phase must be one of"),
])
def test_errors_are_one_line(capsys, kube, stacks, args, message):
    # ClusterStacks are cluster-scoped and the cluster is shared: "gpu" is an existing stack of the test's own,
    # "absent" a name no other test uses
    kubeconfig = kube.kubeconfig_for("stack")
    if args.get("name") == "gpu":
        args = dict(args, name=stacks.create("gpu", {"catalog": {"source": "/c"}}))
    elif args.get("name") == "absent":
        args = dict(args, name=stacks.name("absent"))
        message = message.replace("'absent'", "'%s'" % args["name"])
    code, out = run(capsys, dict(args, kubeconfig=kubeconfig))
    assert code == 1 and message in out["msg"] and "\n" not in out["msg"]


def test_a_configmap_specs_secrets_stay_out_of_the_diff_and_the_invocation(capsys, kube):
    # issue 35: the diff and the invocation of stack_status carried a spec's secrets as given
    base = {"name": "lab-secret", "backend": "configmap", "namespace": kube.namespace, "kubeconfig": kube.kubeconfig_for("stack")}
    spec = {"catalog": {"source": "/c"}, "componentOverrides": {"db": {"values": {"password": "first-s3cret", "replicas": 1}}}}
    code, out = run(capsys, dict(base, spec=spec, _ansible_diff=True))
    assert code == 0 and out["changed"] and "first-s3cret" not in json.dumps(out)
    changed = {"catalog": {"source": "/c"}, "componentOverrides": {"db": {"values": {"password": "second-s3cret", "replicas": 2}}}}
    code, out = run(capsys, dict(base, spec=changed, _ansible_diff=True))
    assert code == 0 and out["changed"] and "s3cret" not in json.dumps(out)
    assert out["diff"]["before"]["spec"]["componentOverrides"]["db"]["values"] == {"password": "<hidden>", "replicas": 1}
    assert out["diff"]["after"]["spec"]["componentOverrides"]["db"]["values"] == {"password": "<changed>", "replicas": 2}
