"""KubeClient: REST paths, discovery per group/version, errors and retries (against a stub transport)."""

import json

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._kube import client as cluster_mod
from ansible_collections.aicr.runtime.plugins.module_utils._kube.client import KubeClient
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError, NotServed

DISCOVERY = {
    "/api/v1": {"resources": [{"name": "configmaps", "kind": "ConfigMap", "namespaced": True},
                              {"name": "namespaces", "kind": "Namespace", "namespaced": False},
                              {"name": "namespaces/status", "kind": "Namespace", "namespaced": False}]},
    "/apis/rbac.authorization.k8s.io/v1": {"resources": [{"name": "clusterroles", "kind": "ClusterRole", "namespaced": False}]},
}


class Response:
    def __init__(self, status, body):
        self.status = status
        self.data = json.dumps(body).encode() if not isinstance(body, bytes) else body


class Transport:
    """Records requests; answers discovery, then scripted responses per (method, path)."""

    def __init__(self, script=None):
        self.script = dict(script or {})
        self.calls = []

    def request(self, method, url, body=None, headers=None, **_kwargs):
        path = url.split("http://kube", 1)[1]
        self.calls.append((method, path, body, headers))
        bare = path.split("?", 1)[0]
        answers = self.script.get((method, bare))
        if answers:
            return answers.pop(0) if isinstance(answers, list) else answers
        if method == "GET" and bare in DISCOVERY:
            return Response(200, DISCOVERY[bare])
        return Response(404, {"message": "not found"})


class Config:
    host = "http://kube"

    @staticmethod
    def auth_settings():
        return {"BearerToken": {"in": "header", "key": "authorization", "value": "Bearer t0k"}}


class ApiClient:
    def __init__(self, transport):
        self.configuration = Config()
        self.rest_client = type("Rest", (), {"pool_manager": transport})()


@pytest.fixture(autouse=True)
def no_sleep(monkeypatch):
    monkeypatch.setattr(cluster_mod.time, "sleep", lambda _s: None)
    monkeypatch.setattr(cluster_mod.cancel, "pause", lambda _s: None)


def test_paths_discovery_and_headers():
    transport = Transport({("GET", "/api/v1/namespaces/ns/configmaps/a:b"): Response(200, {"kind": "ConfigMap"})})
    kube = KubeClient(ApiClient(transport))
    assert kube.get("v1", "ConfigMap", "a:b", "ns") == {"kind": "ConfigMap"}
    assert kube.is_namespaced("v1", "Namespace") is False
    assert kube.get("rbac.authorization.k8s.io/v1", "ClusterRole", "r", "ignored") is None
    assert [c[1] for c in transport.calls] == ["/api/v1", "/api/v1/namespaces/ns/configmaps/a:b", "/apis/rbac.authorization.k8s.io/v1",
                                               "/apis/rbac.authorization.k8s.io/v1/clusterroles/r"]
    headers = transport.calls[1][3]
    assert headers["authorization"] == "Bearer t0k" and headers["User-Agent"] == "aicr-runtime/gated_release"


def test_apply_is_server_side_with_field_manager():
    transport = Transport({("PATCH", "/api/v1/namespaces/ns/configmaps/c"): Response(200, {"ok": True})})
    kube = KubeClient(ApiClient(transport))
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}, dry_run=True)
    method, path, body, headers = transport.calls[-1]
    assert method == "PATCH" and headers["Content-Type"] == "application/apply-patch+yaml"
    assert "fieldManager=aicr-runtime" in path and "force=true" in path and "dryRun=All" in path
    assert json.loads(body)["metadata"]["name"] == "c"


def test_unknown_kind_and_group():
    kube = KubeClient(ApiClient(Transport()))
    with pytest.raises(NotServed, match="kind Widget is not served"):
        kube.is_namespaced("v1", "Widget")
    with pytest.raises(NotServed, match="apiVersion example.io/v1 is not served"):
        kube.is_namespaced("example.io/v1", "Widget")
    assert kube.list("example.io/v1", "Widget") == []
    assert kube.delete("example.io/v1", "Widget", "w", "ns") is False


def test_reads_and_applies_are_retried_writes_are_not():
    busy = [Response(503, {"message": "busy"}), Response(429, {"message": "slow down"}), Response(200, {"kind": "ConfigMap"})]
    transport = Transport({("GET", "/api/v1/namespaces/ns/configmaps/c"): busy,
                           ("POST", "/api/v1/namespaces/ns/configmaps"): [Response(503, {"message": "busy"})]})
    kube = KubeClient(ApiClient(transport))
    assert kube.get("v1", "ConfigMap", "c", "ns") == {"kind": "ConfigMap"}
    with pytest.raises(ClusterError, match="returned 503: busy") as err:
        kube.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}})
    assert err.value.status == 503
    assert sum(1 for c in transport.calls if c[0] == "POST") == 1


def test_errors_are_one_line_and_bodies_not_json():
    transport = Transport({("GET", "/api/v1/namespaces/ns/configmaps/c"): Response(403, {"message": "forbidden: user x"}),
                           ("GET", "/api/v1/namespaces/ns/configmaps/d"): Response(200, b"<html>")})
    kube = KubeClient(ApiClient(transport))
    with pytest.raises(ClusterError, match=r"^cluster: GET /api/v1/namespaces/ns/configmaps/c returned 403: forbidden: user x$"):
        kube.get("v1", "ConfigMap", "c", "ns")
    with pytest.raises(ClusterError, match="not JSON"):
        kube.get("v1", "ConfigMap", "d", "ns")


def test_server_version_is_read_once_and_parsed_as_providers_write_it():
    transport = Transport({("GET", "/version"): Response(200, {"major": "1", "minor": "27+", "gitVersion": "v1.27.3-gke.100"})})
    kube = KubeClient(ApiClient(transport))
    assert kube.server_version() == (1, 27)
    assert kube.server_version() == (1, 27)
    assert [c[1] for c in transport.calls] == ["/version"]
    assert cluster_mod.version_tuple({"major": "1", "minor": "37"}) == (1, 37)
    assert cluster_mod.version_tuple({"major": "1", "minor": ""}) is None
    assert cluster_mod.version_tuple(None) is None


def test_server_version_unreadable_is_none_and_asked_again():
    transport = Transport({("GET", "/version"): [Response(403, {"message": "forbidden"}), Response(200, {"major": "1", "minor": "30"})]})
    kube = KubeClient(ApiClient(transport))
    assert kube.server_version() is None
    assert kube.server_version() == (1, 30)
