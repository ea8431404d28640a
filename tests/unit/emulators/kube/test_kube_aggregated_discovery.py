"""Aggregated discovery (apidiscovery.k8s.io/v2 at /api and /apis): document shape and content negotiation."""

import pytest
from kube_testlib import api_client, client, raw, wait_for

from aicr_emulators.kube.pytest_fixture import start_emulator
from aicr_emulators.kube.server import negotiate_aggregated_discovery

V2 = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
V2BETA1 = "application/json;g=apidiscovery.k8s.io;v=v2beta1;as=APIGroupDiscoveryList"
PROTOBUF_V2 = "application/vnd.kubernetes.protobuf;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
CLIENT_GO_ACCEPT = ",".join((V2, V2BETA1, "application/json"))

GADGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gizmos.aggregated.aicr.io"},
    "spec": {"group": "aggregated.aicr.io", "scope": "Cluster",
             "names": {"plural": "gizmos", "singular": "gizmo", "kind": "Gizmo", "shortNames": ["gz"],
                       "categories": ["all"]},
             "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


@pytest.fixture(scope="module")
def kube(tmp_path_factory):
    with start_emulator(tmp_path_factory.mktemp("kube-aggregated"), in_process=True) as handle:
        yield handle


def _aggregated(kube, path, accept=CLIENT_GO_ACCEPT):
    status, headers, body = raw(kube, "GET", path, headers={"Accept": accept})
    assert status == 200
    return headers, body


def _resources(doc, group, version):
    groups = {item["metadata"]["name"]: item for item in doc["items"]}
    versions = {entry["version"]: entry for entry in groups[group]["versions"]}
    return {res["resource"]: res for res in versions[version]["resources"]}


@pytest.mark.parametrize("accept, expected", [
    (CLIENT_GO_ACCEPT, "v2"),
    (V2BETA1 + ",application/json", "v2beta1"),
    (",".join((PROTOBUF_V2, V2, "application/json")), "v2"),  # protobuf is not produced: JSON aggregated is next
    (PROTOBUF_V2 + ",application/json", None),
    ("application/json", None),
    ("", None),
    ("*/*", None),
    (V2 + ";q=0.5,application/json;q=0.9", None),  # the client prefers the legacy form
    ("application/json;q=0.5," + V2, "v2"),
    (V2 + ";q=0", None),
    ("application/json;g=apidiscovery.k8s.io;v=v1;as=APIGroupDiscoveryList,application/json", None),
])
def test_accept_header_negotiation(accept, expected):
    assert negotiate_aggregated_discovery(accept) == expected


def test_apis_serves_aggregated_named_groups(kube):
    headers, doc = _aggregated(kube, "/apis")
    assert headers["Content-Type"] == V2 and "Accept" in headers["Vary"]
    assert doc["kind"] == "APIGroupDiscoveryList" and doc["apiVersion"] == "apidiscovery.k8s.io/v2"
    names = [item["metadata"]["name"] for item in doc["items"]]
    assert "" not in names and "apps" in names and "apiextensions.k8s.io" in names
    assert names == [name for name, _versions in kube.emulator.registry.groups()]
    for item in doc["items"]:
        assert item["versions"] and all(v["freshness"] == "Current" and v["resources"] for v in item["versions"])
    deployments = _resources(doc, "apps", "v1")["deployments"]
    assert deployments["responseKind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    assert deployments["scope"] == "Namespaced" and deployments["singularResource"] == "deployment"
    assert deployments["shortNames"] == ["deploy"] and "all" in deployments["categories"]
    assert {"get", "list", "watch", "create", "patch", "delete"} <= set(deployments["verbs"])
    subs = {sub["subresource"]: sub for sub in deployments["subresources"]}
    assert subs["status"] == {"subresource": "status", "verbs": ["get", "patch", "update"],
                              "responseKind": {"group": "apps", "version": "v1", "kind": "Deployment"}}
    assert subs["scale"]["responseKind"] == {"group": "autoscaling", "version": "v1", "kind": "Scale"}
    crds = _resources(doc, "apiextensions.k8s.io", "v1")["customresourcedefinitions"]
    assert crds["scope"] == "Cluster"


def test_api_serves_aggregated_core_group(kube):
    headers, doc = _aggregated(kube, "/api")
    assert headers["Content-Type"] == V2
    assert [item["metadata"]["name"] for item in doc["items"]] == [""]
    resources = _resources(doc, "", "v1")
    assert resources["pods"]["responseKind"] == {"group": "", "version": "v1", "kind": "Pod"}
    assert resources["namespaces"]["scope"] == "Cluster" and resources["configmaps"]["shortNames"] == ["cm"]
    pod_subs = {sub["subresource"]: sub for sub in resources["pods"]["subresources"]}
    assert pod_subs["eviction"] == {"subresource": "eviction", "verbs": ["create"],
                                    "responseKind": {"group": "policy", "version": "v1", "kind": "Eviction"}}
    assert {"status", "log"} <= set(pod_subs)


def test_aggregated_matches_legacy_discovery(kube):
    """Every resource of the legacy per-group-version documents is in the aggregated one, and no other."""
    _h, doc = _aggregated(kube, "/apis")
    for item in doc["items"]:
        for version in item["versions"]:
            _s, _h, legacy = raw(kube, "GET", "/apis/%s/%s" % (item["metadata"]["name"], version["version"]))
            legacy_names = sorted(r["name"] for r in legacy["resources"])
            aggregated_names = sorted([r["resource"] for r in version["resources"]] + [
                r["resource"] + "/" + s["subresource"] for r in version["resources"] for s in r.get("subresources", [])])
            assert aggregated_names == legacy_names


def test_v2beta1_and_legacy_are_still_served(kube):
    headers, doc = _aggregated(kube, "/apis", V2BETA1)
    assert headers["Content-Type"] == V2BETA1 and doc["apiVersion"] == "apidiscovery.k8s.io/v2beta1"
    _s, headers, legacy = raw(kube, "GET", "/apis", headers={"Accept": "application/json"})
    assert headers["Content-Type"] == "application/json" and legacy["kind"] == "APIGroupList"
    _s, _h, legacy = raw(kube, "GET", "/api", headers={"Accept": PROTOBUF_V2 + ",application/json"})
    assert legacy["kind"] == "APIVersions"


def test_etag_revalidation(kube):
    headers, _doc = _aggregated(kube, "/api")
    status, _h, body = raw(kube, "GET", "/api", headers={"Accept": CLIENT_GO_ACCEPT, "If-None-Match": headers["ETag"]})
    assert status == 304 and body == b""


def test_custom_resource_group_appears_when_established_and_goes_when_deleted(kube):
    ext = client.ApiextensionsV1Api(api_client(kube))
    ext.create_custom_resource_definition(GADGET_CRD)

    def gizmos():
        _h, doc = _aggregated(kube, "/apis")
        groups = {item["metadata"]["name"]: item for item in doc["items"]}
        return groups.get("aggregated.aicr.io")

    group = wait_for(gizmos)
    assert [v["version"] for v in group["versions"]] == ["v1"]
    gizmo = group["versions"][0]["resources"][0]
    assert gizmo["resource"] == "gizmos" and gizmo["scope"] == "Cluster" and gizmo["singularResource"] == "gizmo"
    assert gizmo["responseKind"] == {"group": "aggregated.aicr.io", "version": "v1", "kind": "Gizmo"}
    assert gizmo["shortNames"] == ["gz"] and gizmo["categories"] == ["all"]
    assert [sub["subresource"] for sub in gizmo["subresources"]] == ["status"]
    ext.delete_custom_resource_definition("gizmos.aggregated.aicr.io")
    wait_for(lambda: gizmos() is None)
