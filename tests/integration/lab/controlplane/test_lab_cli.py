"""aicr-lab: the control plane, chart repository and fabric simulator start detached, describe themselves, stop;
the control plane survives restarts of its own processes; binaries are built once and reused."""

import json
import os
import subprocess
import threading
import time

import pytest

from aicr_lab import lab as aicr_lab
from aicr_lab.controlplane import build, processes
from aicr_lab.controlplane.rest import Rest


def test_up_binds_nodes_to_fabric_machines_and_down_stops_everything(tmp_path):
    if os.environ.get("AICR_TEST_KUBECONFIG"):
        pytest.skip("starts a lab of its own")
    lab = aicr_lab.up(tmp_path, nodes=3, machines=2)
    pids = aicr_lab.all_pids(lab)
    try:
        assert set(pids) == {"chart-repo", "fabric-sim", "controlplane/etcd", "controlplane/kube-apiserver",
                             "controlplane/kube-controller-manager", "controlplane/kube-scheduler", "controlplane/kwok"}
        assert all(url.startswith(("http://127.0.0.1:", "https://127.0.0.1:")) for url in (lab["kube_url"], lab["charts_url"], lab["fabric_url"]))
        assert lab["kube_url"].startswith("https://")
        assert set(lab["kubeconfigs"]) >= {"release", "fabric", "stack", "crd-publisher", "site", "reconciler", "nobody"}
        machines = json.loads((tmp_path / "fabric.json").read_text())["machines"]
        nodes = Rest.from_kubeconfig(lab["kubeconfigs"]["fabric"]).get("/api/v1/nodes")["items"]
        assert {n["metadata"]["name"]: n["spec"]["providerID"] for n in nodes} == {
            "node-0": "fsas-cdi://%s" % machines["node-0"],
            "node-1": "fsas-cdi://%s" % machines["node-1"],
            "node-2": "kwok://aicr-lab/node-2",
        }
        assert all(aicr_lab.status(tmp_path)["running"].values())
    finally:
        assert aicr_lab.down(tmp_path) is True
    assert not any(processes.alive(pid) for pid in pids.values())
    assert aicr_lab.down(tmp_path) is False


def test_build_reuses_binaries_whose_stamp_matches(monkeypatch):
    calls = []
    real_run = subprocess.run
    monkeypatch.setattr(build.subprocess, "run", lambda argv, **kw: calls.append(argv) or real_run(argv, **kw))  # pylint: disable=subprocess-run-check
    paths = build.ensure_binaries(log=lambda line: None)
    assert set(paths) == {"kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl", "etcd", "kwok"}
    assert all(os.access(p, os.X_OK) for p in paths.values())
    assert [argv for argv in calls if "build" in argv] == [], "a built, stamped binary was built again"
    assert all("/controlplane/%s-" % d in paths[b] for d, (_m, bins) in build.TARGETS.items() for b in bins)


def _configmap(rest, namespace, name):
    return rest.create("/api/v1/namespaces/%s/configmaps" % namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})


def test_restarting_the_api_server_keeps_state_and_ends_open_watches(private_kube):
    namespace = private_kube.create_namespace("restart")
    rest = Rest.from_kubeconfig(private_kube.kubeconfig_for("release"))
    created = _configmap(rest, namespace, "before")
    ended = threading.Event()
    import http.client  # pylint: disable=import-outside-toplevel

    watcher = http.client.HTTPSConnection(rest.host, rest.port, context=rest.context, timeout=120)
    watcher.request("GET", "/api/v1/namespaces/%s/configmaps?watch=true&resourceVersion=%s" % (namespace, created["metadata"]["resourceVersion"]))
    response = watcher.getresponse()
    assert response.status == 200

    def drain():
        try:
            while response.read1(65536):
                pass
        except (OSError, http.client.HTTPException):
            pass
        ended.set()

    threading.Thread(target=drain, daemon=True).start()
    seen_down = {}

    def while_down():
        # the API server is really gone: a request now cannot connect
        probe = Rest.from_kubeconfig(private_kube.kubeconfig_for("release"), timeout=2)
        try:
            probe.get("/api/v1/namespaces/%s/configmaps/before" % namespace)
        except OSError as exc:
            seen_down["error"] = type(exc).__name__
        assert ended.wait(30), "an open watch outlived the API server"

    private_kube.restart("kube-apiserver", down=while_down)
    assert "error" in seen_down
    rest.close()
    assert rest.get("/api/v1/namespaces/%s/configmaps/before" % namespace)["metadata"]["uid"] == created["metadata"]["uid"]
    _configmap(rest, namespace, "after")


def test_restarting_etcd_keeps_state(private_kube):
    namespace = private_kube.create_namespace("etcd")
    rest = Rest.from_kubeconfig(private_kube.kubeconfig_for("release"))
    created = _configmap(rest, namespace, "kept")
    private_kube.restart("etcd")
    deadline = time.monotonic() + 60
    while True:  # the API server reconnects to etcd on its own; wait for that, not for a fixed time
        try:
            assert rest.get("/api/v1/namespaces/%s/configmaps/kept" % namespace)["metadata"]["uid"] == created["metadata"]["uid"]
            break
        except Exception:  # pylint: disable=broad-except
            if time.monotonic() > deadline:
                raise
            rest.close()
            time.sleep(0.1)
    _configmap(rest, namespace, "written-after")
