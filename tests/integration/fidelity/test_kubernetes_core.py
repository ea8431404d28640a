"""kubernetes.core (k8s, k8s_info, helm) against the lab: a playbook that is idempotent on its second run.

kubernetes.core comes from PyPI's ``ansible`` wheel (see kubernetes_core.py), not Galaxy.  The
playbook is written at test time (ansible-lint would otherwise need kubernetes.core installed).
It runs as the least-privilege ``release`` identity (its kubeconfig: a client certificate and the
lab CA), in a namespace of its own that the playbook creates.
"""

import json
import os
import sys
from pathlib import Path

import pytest
import yaml

FIDELITY_DIR = Path(__file__).resolve().parent
sys.path.insert(0, str(FIDELITY_DIR))
import kubernetes_core  # noqa: E402  pylint: disable=wrong-import-position

pytestmark = [pytest.mark.helm, pytest.mark.slow]

REPO_ROOT = FIDELITY_DIR.parents[2]


def playbook(kubeconfig, admin_kubeconfig, repo_url, helm_binary, NS):  # pylint: disable=invalid-name,too-many-arguments
    deployment = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": NS, "labels": {"app": "web", "suite": "fidelity"}},
        "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}},
                              "spec": {"containers": [{"name": "main", "image": "registry.example.aicr.io/web:1"}]}}},
    }
    auth = {"kubeconfig": str(kubeconfig)}
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}
    tasks = [
        # as admin: k8s state=present re-sends a present object as a patch, and patching namespaces is not
        # granted to the release identity (the collection creates a missing namespace, never patches one)
        {"name": "Namespace", "kubernetes.core.k8s": dict(kubeconfig=str(admin_kubeconfig), state="present", definition=namespace)},
        {"name": "ConfigMap", "kubernetes.core.k8s": dict(auth, state="present", definition={
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings", "namespace": NS, "labels": {"suite": "fidelity"}},
            "data": {"mode": "demo"}})},
        {"name": "Deployment by server-side apply, waited for", "kubernetes.core.k8s": dict(
            auth, state="present", apply=True, server_side_apply={"field_manager": "aicr-fidelity"}, definition=deployment,
            wait=True, wait_timeout=120, wait_condition={"type": "Available", "status": "True"})},
        {"name": "Helm release", "kubernetes.core.helm": dict(
            auth, binary_path=str(helm_binary), name="op", chart_ref="example-operator", chart_repo_url=repo_url, chart_version="0.1.0",
            release_namespace=NS, values={"replicaCount": 2}, wait=True, wait_timeout="120s")},
        {"name": "Deployments", "kubernetes.core.k8s_info": dict(auth, kind="Deployment", namespace=NS), "register": "deployments"},
        {"name": "Labelled objects", "kubernetes.core.k8s_info": dict(auth, kind="ConfigMap", namespace=NS, label_selectors=["suite=fidelity"]),
         "register": "labelled"},
        {"name": "Release info", "kubernetes.core.helm_info": dict(auth, binary_path=str(helm_binary), name="op", release_namespace=NS),
         "register": "release"},
    ]
    return [{"name": "kubernetes.core against the lab", "hosts": "localhost", "gather_facts": False, "tasks": tasks}]


@pytest.fixture(scope="session")
def kubernetes_core_path():
    return kubernetes_core.ensure()


@pytest.mark.parametrize("helm_binary", ["helm3", "helm4"])
def test_playbook_converges_then_is_idempotent(run_playbook, kube, new_namespace, example_repo, kubernetes_core_path, tmp_path, helm_binary):
    book = tmp_path / "kubernetes_core.yml"
    ns = new_namespace("kcore-fid")
    book.write_text(yaml.safe_dump(playbook(kube.kubeconfig_for("release"), kube.kubeconfig, example_repo.url, Path(sys.executable).parent / helm_binary, ns),
                                   sort_keys=False))
    env = {"ANSIBLE_COLLECTIONS_PATH": os.pathsep.join([str(REPO_ROOT / ".build" / "collections"), str(kubernetes_core_path)])}

    first = run_playbook(book, envvars=env)
    assert first.rc == 0, first.stdout[-6000:]
    assert sorted(first.changed_tasks) == sorted(["Namespace", "ConfigMap", "Deployment by server-side apply, waited for", "Helm release"])
    deployments = {d["metadata"]["name"]: d for d in first.result("Deployments")["resources"]}
    assert sorted(deployments) == ["op-example-operator", "web"]
    assert all(d["status"].get("availableReplicas") == 2 for d in deployments.values()), json.dumps([d["status"] for d in deployments.values()])
    assert [c["metadata"]["name"] for c in first.result("Labelled objects")["resources"]] == ["settings"]
    release = first.result("Release info")["status"]
    assert release["status"] == "deployed" and release["values"] == {"replicaCount": 2}

    second = run_playbook(book, envvars=env)
    assert second.rc == 0, second.stdout[-6000:]
    assert second.changed_tasks == [], "second run must change nothing:\n%s" % second.stdout[-6000:]
