"""Watches (resourceVersion, bookmarks, initial events) and CRDs (establish, discovery, validation, pruning)."""

import json
import threading
import urllib.request
import uuid

import pytest
from kube_testlib import api_client, client, error_body, raw, wait_for
from kubernetes import watch

from aicr_emulators.kube.pytest_fixture import start_emulator


@pytest.fixture(scope="module")
def kube(tmp_path_factory):
    with start_emulator(tmp_path_factory.mktemp("kube-watch"), in_process=True, bookmark_seconds=0.2) as handle:
        yield handle


@pytest.fixture
def ns(kube):
    name = "w-" + uuid.uuid4().hex[:8]
    core = client.CoreV1Api(api_client(kube))
    core.create_namespace({"metadata": {"name": name}})
    wait_for(lambda: core.list_namespaced_config_map(name, field_selector="metadata.name=kube-root-ca.crt").items)
    return name


def _stream_lines(kube, path, count, timeout=5):
    """Read ``count`` watch events from a raw watch URL."""
    req = urllib.request.Request(kube.url + path, headers={"Authorization": "Bearer " + kube.token})
    out = []
    with urllib.request.urlopen(req, timeout=timeout) as resp:
        assert resp.headers["Content-Type"] == "application/json"
        for line in resp:
            out.append(json.loads(line))
            if len(out) >= count:
                break
    return out


def test_watch_from_resource_version_sees_later_changes_only(kube, ns):
    core = client.CoreV1Api(api_client(kube))
    core.create_namespaced_config_map(ns, {"metadata": {"name": "before"}})
    start = core.list_namespaced_config_map(ns).metadata.resource_version
    core.create_namespaced_config_map(ns, {"metadata": {"name": "w1", "labels": {"x": "1"}}})
    core.patch_namespaced_config_map("w1", ns, {"data": {"a": "b"}})
    core.delete_namespaced_config_map("w1", ns)
    events = []
    for event in watch.Watch().stream(core.list_namespaced_config_map, ns, resource_version=start, timeout_seconds=1):
        events.append((event["type"], event["object"].metadata.name))
        if len(events) == 3:
            break
    assert events == [("ADDED", "w1"), ("MODIFIED", "w1"), ("DELETED", "w1")]


def test_watch_streams_live_events_with_label_selector_transitions(kube, ns):
    core = client.CoreV1Api(api_client(kube))
    start = core.list_namespaced_config_map(ns).metadata.resource_version
    got = []

    def consume():
        for event in watch.Watch().stream(core.list_namespaced_config_map, ns, label_selector="sel=yes",
                                          resource_version=start, timeout_seconds=3):
            got.append((event["type"], event["object"].metadata.name))
            if len(got) == 3:
                return

    worker = threading.Thread(target=consume)
    worker.start()
    core.create_namespaced_config_map(ns, {"metadata": {"name": "other"}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "live", "labels": {"sel": "no"}}})
    core.patch_namespaced_config_map("live", ns, {"metadata": {"labels": {"sel": "yes"}}})  # now matches: ADDED
    core.patch_namespaced_config_map("live", ns, {"data": {"k": "v"}})  # MODIFIED
    core.patch_namespaced_config_map("live", ns, {"metadata": {"labels": {"sel": "no"}}})  # stops matching: DELETED
    worker.join(5)
    assert got == [("ADDED", "live"), ("MODIFIED", "live"), ("DELETED", "live")]


def test_send_initial_events_ends_with_marked_bookmark(kube, ns):
    core = client.CoreV1Api(api_client(kube))
    core.create_namespaced_config_map(ns, {"metadata": {"name": "i1"}})
    core.create_namespaced_config_map(ns, {"metadata": {"name": "i2"}})
    rv = core.list_namespaced_config_map(ns).metadata.resource_version
    path = ("/api/v1/namespaces/%s/configmaps?watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan"
            "&allowWatchBookmarks=true&timeoutSeconds=2" % ns)
    events = _stream_lines(kube, path, 4)
    added = sorted(e["object"]["metadata"]["name"] for e in events if e["type"] == "ADDED")
    assert added == ["i1", "i2", "kube-root-ca.crt"]
    bookmark = events[3]
    assert bookmark["type"] == "BOOKMARK" and bookmark["object"]["kind"] == "ConfigMap"
    assert bookmark["object"]["metadata"]["annotations"] == {"k8s.io/initial-events-end": "true"}
    assert int(bookmark["object"]["metadata"]["resourceVersion"]) >= int(rv)


def test_periodic_bookmarks_and_expired_resource_version(kube, ns):
    rv = client.CoreV1Api(api_client(kube)).list_namespaced_config_map(ns).metadata.resource_version
    events = _stream_lines(kube, "/api/v1/namespaces/%s/configmaps?watch=true&resourceVersion=%s&allowWatchBookmarks=true"
                           "&timeoutSeconds=3" % (ns, rv), 2)
    assert [e["type"] for e in events] == ["BOOKMARK", "BOOKMARK"]
    assert int(events[0]["object"]["metadata"]["resourceVersion"]) >= int(rv)
    assert "annotations" not in events[0]["object"]["metadata"]
    kube.emulator.store.compacted_rv = int(rv) + 1  # pretend the event log was compacted past rv
    try:
        events = _stream_lines(kube, "/api/v1/namespaces/%s/configmaps?watch=true&resourceVersion=%s" % (ns, rv), 1)
    finally:
        kube.emulator.store.compacted_rv = 0
    assert events[0]["type"] == "ERROR" and events[0]["object"]["code"] == 410
    assert events[0]["object"]["reason"] == "Expired"


CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.aicr.io"},
    "spec": {
        "group": "example.aicr.io", "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
            "additionalPrinterColumns": [{"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                                         {"name": "Phase", "type": "string", "jsonPath": ".status.phase", "priority": 1}],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "required": ["size"], "properties": {
                    "size": {"type": "integer", "minimum": 1},
                    "mode": {"type": "string", "enum": ["fast", "slow"], "default": "slow"},
                    "port": {"x-kubernetes-int-or-string": True},
                    "note": {"type": "string", "nullable": True},
                    "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "tags": {"type": "array", "items": {"type": "string"}},
                }},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
            }}}}],
    },
}


@pytest.fixture(scope="module")
def widgets(kube):
    api = api_client(kube)
    client.ApiextensionsV1Api(api).create_custom_resource_definition(CRD)

    def established():
        crd = client.ApiextensionsV1Api(api).read_custom_resource_definition("widgets.example.aicr.io")
        return any(c.type == "Established" and c.status == "True" for c in (crd.status.conditions or []))

    wait_for(established)
    wait_for(lambda: raw(kube, "GET", "/apis/example.aicr.io/v1")[0] == 200)
    return client.CustomObjectsApi(api)


def _widget(name, **spec):
    return {"apiVersion": "example.aicr.io/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec}


def test_crd_is_established_and_discoverable(kube, widgets):
    crd = client.ApiextensionsV1Api(api_client(kube)).read_custom_resource_definition("widgets.example.aicr.io")
    conds = {c.type: c.status for c in crd.status.conditions}
    assert conds["Established"] == "True" and conds["NamesAccepted"] == "True"
    assert crd.status.accepted_names.kind == "Widget" and crd.status.stored_versions == ["v1"]
    status, _h, resources = raw(kube, "GET", "/apis/example.aicr.io/v1")
    assert status == 200
    names = {r["name"]: r for r in resources["resources"]}
    assert names["widgets"]["kind"] == "Widget" and names["widgets"]["shortNames"] == ["wd"] and "widgets/status" in names
    _s, _h, groups = raw(kube, "GET", "/apis")
    assert "example.aicr.io" in [g["name"] for g in groups["groups"]]
    _s, _h, index = raw(kube, "GET", "/openapi/v3")
    _s, _h, doc = raw(kube, "GET", index["paths"]["apis/example.aicr.io/v1"]["serverRelativeURL"])
    patch = doc["paths"]["/apis/example.aicr.io/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]


def test_custom_resource_defaults_pruning_and_preserved_fields(kube, widgets, ns):
    body = _widget("w1", size=2, port="http", note=None, free={"any": {"thing": 1}}, unknownField=True)
    body["topLevelUnknown"] = 1
    out = widgets.create_namespaced_custom_object("example.aicr.io", "v1", ns, "widgets", body)
    assert out["spec"] == {"size": 2, "port": "http", "note": None, "free": {"any": {"thing": 1}}, "mode": "slow"}
    assert "topLevelUnknown" not in out and out["metadata"]["generation"] == 1
    out = widgets.patch_namespaced_custom_object("example.aicr.io", "v1", ns, "widgets", "w1", {"spec": {"port": 8080}})
    assert out["spec"]["port"] == 8080 and out["metadata"]["generation"] == 2
    out = widgets.patch_namespaced_custom_object_status("example.aicr.io", "v1", ns, "widgets", "w1",
                                                        {"status": {"phase": "Ready"}})
    assert out["status"] == {"phase": "Ready"} and out["metadata"]["generation"] == 2
    status, _h, table = raw(kube, "GET", "/apis/example.aicr.io/v1/namespaces/%s/widgets" % ns,
                            headers={"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"})
    assert status == 200 and [c["name"] for c in table["columnDefinitions"]] == ["Name", "Size", "Phase", "Age"]
    assert table["rows"][0]["cells"][:3] == ["w1", 2, "Ready"]


def test_custom_resource_validation_errors(widgets, ns):
    with pytest.raises(client.ApiException) as err:
        widgets.create_namespaced_custom_object("example.aicr.io", "v1", ns, "widgets",
                                                _widget("bad", size="big", mode="medium", tags=["a", 3]))
    body = error_body(err.value)
    assert err.value.status == 422 and body["reason"] == "Invalid"
    assert body["details"]["kind"] == "Widget" and body["details"]["group"] == "example.aicr.io"
    fields = {c["field"]: c for c in body["details"]["causes"]}
    assert fields["spec.size"]["reason"] == "FieldValueTypeInvalid"
    assert "spec.size in body must be of type integer" in fields["spec.size"]["message"]
    assert fields["spec.mode"]["reason"] == "FieldValueNotSupported"
    assert 'supported values: "fast", "slow"' in fields["spec.mode"]["message"]
    assert fields["spec.tags[1]"]["reason"] == "FieldValueTypeInvalid"
    assert body["message"].startswith('Widget.example.aicr.io "bad" is invalid: [')
    with pytest.raises(client.ApiException) as err:
        widgets.create_namespaced_custom_object("example.aicr.io", "v1", ns, "widgets", _widget("nosize", mode="fast"))
    assert error_body(err.value)["details"]["causes"] == [
        {"reason": "FieldValueRequired", "message": "Required value", "field": "spec.size"}]
    with pytest.raises(client.ApiException) as err:
        widgets.create_namespaced_custom_object("example.aicr.io", "v1", ns, "widgets", _widget("small", size=0))
    assert "should be greater than or equal to 1" in error_body(err.value)["message"]


def test_strategic_merge_patch_is_refused_for_custom_resources(kube, widgets, ns):
    widgets.create_namespaced_custom_object("example.aicr.io", "v1", ns, "widgets", _widget("smp", size=1))
    status, _h, body = raw(kube, "PATCH", "/apis/example.aicr.io/v1/namespaces/%s/widgets/smp" % ns, {"spec": {"size": 2}},
                           "application/strategic-merge-patch+json")
    assert status == 415 and body["reason"] == "UnsupportedMediaType"


def test_crd_delete_removes_its_custom_resources(kube):
    api = api_client(kube)
    ext = client.ApiextensionsV1Api(api)
    crd = json.loads(json.dumps(CRD))
    crd["metadata"]["name"] = "gadgets.example.aicr.io"
    crd["spec"]["names"] = {"plural": "gadgets", "kind": "Gadget"}
    crd["spec"]["scope"] = "Cluster"
    ext.create_custom_resource_definition(crd)
    wait_for(lambda: raw(kube, "GET", "/apis/example.aicr.io/v1/gadgets")[0] == 200)
    custom = client.CustomObjectsApi(api)
    custom.create_cluster_custom_object("example.aicr.io", "v1", "gadgets", {
        "apiVersion": "example.aicr.io/v1", "kind": "Gadget", "metadata": {"name": "g1"}, "spec": {"size": 1}})
    ext.delete_custom_resource_definition("gadgets.example.aicr.io")
    wait_for(lambda: raw(kube, "GET", "/apis/example.aicr.io/v1/gadgets")[0] == 404)
    assert not kube.emulator.store.iter_objects("example.aicr.io", "gadgets")
    with pytest.raises(client.ApiException) as err:
        ext.read_custom_resource_definition("gadgets.example.aicr.io")
    assert err.value.status == 404


def test_invalid_crd_is_rejected(kube):
    crd = json.loads(json.dumps(CRD))
    crd["metadata"]["name"] = "wrong.example.aicr.io"
    status, _h, body = raw(kube, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    assert status == 422 and "must be spec.names.plural" in body["message"]


def test_watch_thread_ends_when_the_client_disconnects(kube):
    def watch_threads():
        return [t for t in threading.enumerate() if t.name == "kube-emulator-watch"]

    wait_for(lambda: not watch_threads())
    req = urllib.request.Request(kube.url + "/api/v1/namespaces?watch=true&resourceVersion=0",
                                 headers={"Authorization": "Bearer " + kube.token})
    resp = urllib.request.urlopen(req, timeout=5)  # pylint: disable=consider-using-with
    resp.readline()
    assert watch_threads()
    resp.close()
    wait_for(lambda: not watch_threads())
