"""The lab's control plane is a real, secure Kubernetes: TLS, RBAC, real controllers, kwok stages, audit log."""

import http.client
import json
import socket
import ssl
import subprocess
import threading
import urllib.error
import urllib.request
from datetime import datetime

import pytest

from aicr_lab.controlplane import build, processes, stages
from aicr_lab.controlplane.rest import ApiError, Rest
from aicr_lab.kube import Kube


def _deployment(name, namespace, annotations=None, replicas=1):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}, "annotations": annotations or {}},
                                  "spec": {"containers": [{"name": "c", "image": "registry.example/c:1"}]}}}}


def _job(name, namespace, annotations=None):
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "namespace": namespace},
            "spec": {"backoffLimit": 0, "template": {"metadata": {"annotations": annotations or {}},
                                                     "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}}


def _watch_until(rest, path, predicate, timeout=30):
    """Watch one collection until an event's object satisfies ``predicate``; return that object."""
    listing = rest.get(path)
    for item in listing.get("items", []):
        if predicate(item):
            return item
    conn = http.client.HTTPSConnection(rest.host, rest.port, context=rest.context, timeout=timeout + 5)
    conn.request("GET", "%s?watch=true&resourceVersion=%s&timeoutSeconds=%d" % (path, listing["metadata"]["resourceVersion"], timeout),
                 headers={"Accept": "application/json"})
    response = conn.getresponse()
    buffered = b""
    while True:
        chunk = response.read1(65536)
        if not chunk:
            break
        buffered += chunk
        while b"\n" in buffered:
            line, buffered = buffered.split(b"\n", 1)
            event = json.loads(line)
            if predicate(event["object"]):
                conn.close()
                return event["object"]
    conn.close()
    raise AssertionError("no object of %s matched within %ss" % (path, timeout))


def _condition(obj, kind):
    for condition in (obj.get("status") or {}).get("conditions") or []:
        if condition["type"] == kind:
            return condition["status"]
    return None


def test_version_is_the_pinned_release(lab_kube):
    version = lab_kube.rest.get("/version")
    assert version["gitVersion"] == build.kubernetes_version()
    assert (version["major"], version["minor"]) == tuple(build.kubernetes_version().lstrip("v").split(".")[:2])


def test_tls_is_verified_and_the_serving_certificate_names_loopback(lab_kube):
    context = ssl.create_default_context()  # the system store does not trust the lab's CA
    with pytest.raises(urllib.error.URLError) as excinfo:
        urllib.request.urlopen(lab_kube.server + "/version", context=context, timeout=10)  # nosec - loopback lab
    assert "CERTIFICATE_VERIFY_FAILED" in str(excinfo.value)
    trusting = ssl.create_default_context(cafile=lab_kube.ca_file)
    with urllib.request.urlopen(lab_kube.server + "/version", context=trusting, timeout=10) as response:  # nosec
        assert json.loads(response.read())["gitVersion"] == build.kubernetes_version()


def test_a_client_without_credentials_is_refused(lab_kube):
    anonymous = Rest(lab_kube.server, lab_kube.ca_file)
    with pytest.raises(ApiError) as excinfo:
        anonymous.get("/api/v1/namespaces/default/configmaps")
    assert excinfo.value.status == 403
    assert 'User "system:anonymous" cannot list resource "configmaps"' in excinfo.value.body["message"]


def test_identities_have_only_their_shipped_roles(lab_kube, kube):
    release = Rest.from_kubeconfig(lab_kube.kubeconfig_for("release"))
    release.create("/api/v1/namespaces/%s/configmaps" % kube.namespace,
                   {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "allowed"}})
    with pytest.raises(ApiError) as excinfo:
        release.get("/api/v1/nodes")
    assert excinfo.value.status == 403 and 'User "aicr-lab:release" cannot list resource "nodes"' in excinfo.value.body["message"]
    nobody = Rest.from_kubeconfig(lab_kube.kubeconfig_for("nobody"))
    with pytest.raises(ApiError) as excinfo:
        nobody.get("/api/v1/namespaces/%s/configmaps" % kube.namespace)
    assert excinfo.value.status == 403
    fabric = Rest.from_kubeconfig(lab_kube.kubeconfig_for("fabric"))
    assert {n["metadata"]["name"] for n in fabric.get("/api/v1/nodes")["items"]} >= {"node-0", "node-1", "node-2"}


def test_nodes_are_ready_kwok_nodes_with_the_pinned_kubelet_version(lab_kube):
    nodes = lab_kube.rest.get("/api/v1/nodes")["items"]
    assert nodes
    for node in nodes:
        assert node["metadata"]["annotations"][stages.FAKE_NODE_ANNOTATION] == "fake"
        assert _condition(node, "Ready") == "True"
        assert node["status"]["nodeInfo"]["kubeletVersion"] == build.kubernetes_version()
        assert node["status"]["allocatable"]["cpu"] == "16"


def test_a_deployment_becomes_available_through_the_real_controllers(kube):
    kube.rest.create("/apis/apps/v1/namespaces/%s/deployments" % kube.namespace, _deployment("web", kube.namespace, replicas=2))
    ready = _watch_until(kube.rest, "/apis/apps/v1/namespaces/%s/deployments" % kube.namespace,
                         lambda d: (d.get("status") or {}).get("availableReplicas") == 2)
    assert _condition(ready, "Available") == "True"
    pods = kube.rest.get("/api/v1/namespaces/%s/pods" % kube.namespace)["items"]
    assert len(pods) == 2 and all(p["spec"]["nodeName"].startswith("node-") for p in pods)
    assert all(_condition(p, "Ready") == "True" for p in pods), json.dumps([p["status"] for p in pods], indent=1)


def test_ready_after_delays_readiness_by_the_annotated_duration(kube):
    kube.rest.create("/api/v1/namespaces/%s/pods" % kube.namespace, {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "slow", "annotations": {stages.READY_AFTER: "1500ms"}},
        "spec": {"containers": [{"name": "c", "image": "x"}]}})
    pod = _watch_until(kube.rest, "/api/v1/namespaces/%s/pods" % kube.namespace, lambda p: _condition(p, "Ready") == "True")
    started = pod["status"]["containerStatuses"][0]["state"]["running"]["startedAt"]
    ready_at = next(c["lastTransitionTime"] for c in pod["status"]["conditions"] if c["type"] == "Ready")
    delta = (datetime.fromisoformat(ready_at.replace("Z", "+00:00")) - datetime.fromisoformat(started.replace("Z", "+00:00"))).total_seconds()
    # the API's timestamps have a resolution of one second: 1.5 s shows as 1 or 2
    assert 1 <= delta <= 3


def test_never_ready_and_fail_annotations(kube):
    ns = kube.namespace
    kube.rest.create("/apis/apps/v1/namespaces/%s/deployments" % ns, _deployment("never", ns, {stages.NEVER_READY: "true"}))
    kube.rest.create("/apis/batch/v1/namespaces/%s/jobs" % ns, _job("failing", ns, {stages.FAIL: "true"}))
    kube.rest.create("/apis/batch/v1/namespaces/%s/jobs" % ns, _job("fine", ns))
    failed = _watch_until(kube.rest, "/apis/batch/v1/namespaces/%s/jobs" % ns,
                          lambda j: j["metadata"]["name"] == "failing" and _condition(j, "Failed") == "True")
    assert failed["status"].get("failed") == 1
    _watch_until(kube.rest, "/apis/batch/v1/namespaces/%s/jobs" % ns, lambda j: j["metadata"]["name"] == "fine" and _condition(j, "Complete") == "True")
    pods = [p for p in kube.rest.get("/api/v1/namespaces/%s/pods" % ns)["items"] if p["metadata"]["name"].startswith("never-")]
    assert pods and pods[0]["status"]["phase"] == "Running" and _condition(pods[0], "Ready") == "False"
    never = kube.rest.get("/apis/apps/v1/namespaces/%s/deployments/never" % ns)
    assert not (never.get("status") or {}).get("availableReplicas")


def test_audit_marks_bracket_exactly_the_requests_in_between(kube):
    release = Rest.from_kubeconfig(kube.kubeconfig_for("release"))
    before = kube.audit_mark()
    release.create("/api/v1/namespaces/%s/configmaps" % kube.namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "one"}})
    middle = kube.audit_mark()
    release.get("/api/v1/namespaces/%s/configmaps/one" % kube.namespace)
    first = kube.audit(since=before, user=kube.user("release"))
    assert [(e["verb"], e["resource"], e["name"], e["code"]) for e in first] == [
        ("create", "configmaps", "one", 201), ("get", "configmaps", "one", 200)]
    second = kube.audit(since=middle, user=kube.user("release"))
    assert [(e["verb"], e["name"]) for e in second] == [("get", "one")]
    assert kube.audit(since=middle, user=kube.user("release"), mutating=True) == []


def test_audit_sees_concurrent_requests_answered_before_the_read(kube):
    release = Rest.from_kubeconfig(kube.kubeconfig_for("release"))
    mark = kube.audit_mark()

    def create(index):
        Rest.from_kubeconfig(kube.kubeconfig_for("release")).create(
            "/api/v1/namespaces/%s/configmaps" % kube.namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c%d" % index}})

    threads = [threading.Thread(target=create, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    release.close()
    assert len(kube.audit(since=mark, user=kube.user("release"), verb="create")) == 8


def test_fault_proxy_keeps_the_identity_and_injects_faults(kube):
    with kube.fault_proxy() as proxy:
        via = Rest.from_kubeconfig(proxy.kubeconfig_for(kube.kubeconfig_for("release")))
        path = "/api/v1/namespaces/%s/configmaps" % kube.namespace
        mark = kube.audit_mark()
        via.create(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "through"}})
        created = kube.audit(since=mark, verb="create", namespace=kube.namespace)
        assert [e["user"] for e in created] == [kube.user("release")]
        proxy.add_fault(code=429, count=1, verbs=["list"], retry_after=2)
        with pytest.raises(ApiError) as excinfo:
            via.get(path)
        assert excinfo.value.status == 429 and excinfo.value.body["details"]["retryAfterSeconds"] == 2
        assert via.get(path)["items"]  # the rule's count is spent
        proxy.add_fault(code=503, count=None, verbs=["mutating"])
        with pytest.raises(ApiError) as excinfo:
            via.create(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "refused"}})
        assert excinfo.value.status == 503
        # answered by the proxy: the API server never saw the refused create
        assert [e["user"] for e in kube.audit(since=mark, verb="create", namespace=kube.namespace)] == [kube.user("release")]
        proxy.clear()
        proxy.add_cut(count=1, verbs=["get"])
        one_shot = http.client.HTTPSConnection("127.0.0.1", proxy.port, context=via.context, timeout=10)
        one_shot.request("GET", path + "/through")
        with pytest.raises((http.client.RemoteDisconnected, ConnectionResetError)):  # cut before an answer
            one_shot.getresponse()
        one_shot.close()
        assert via.get(path + "/through")["metadata"]["name"] == "through"
    assert [r["fault"] for r in proxy.requests] == [None, 429, None, 503, "cut", None]


def test_kubectl_is_the_pinned_release_and_talks_to_the_lab(lab_kube):
    kubectl = build.ensure_binaries()["kubectl"]
    out = subprocess.run([kubectl, "--kubeconfig", lab_kube.kubeconfig_for("fabric"), "get", "nodes", "-o", "name"],
                         capture_output=True, text=True, check=True).stdout
    assert "node/node-0" in out
    client = json.loads(subprocess.run([kubectl, "version", "--client", "-o", "json"], capture_output=True, text=True, check=True).stdout)
    assert client["clientVersion"]["gitVersion"] == build.kubernetes_version()


def test_a_port_taken_before_the_apiserver_binds_it_is_picked_again(tmp_path, monkeypatch):
    """Two labs starting at once may pick the same port: the server that finds it taken starts again on another."""
    taken = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    real, picks = processes.free_port, []

    def pick(host="127.0.0.1"):
        picks.append(host)
        return taken.getsockname()[1] if len(picks) == 3 else real(host)  # the third pick is kube-apiserver's

    monkeypatch.setattr(processes, "free_port", pick)
    try:
        handle = Kube.start(tmp_path / "controlplane", nodes=[])
        try:
            assert handle.plane.ports["kube-apiserver"] != taken.getsockname()[1] and len(picks) >= 4
            assert "address already in use" in handle.plane._log("kube-apiserver")  # pylint: disable=protected-access
            assert handle.rest.request("GET", "/readyz", accept="text/plain") == "ok"
        finally:
            handle.stop()
    finally:
        taken.close()
