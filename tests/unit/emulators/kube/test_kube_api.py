"""CRUD, selectors, conflicts, dry run, patches, server-side apply and errors through the official client."""

import base64
import uuid

import pytest
from kube_testlib import api_client, client, deployment, error_body, raw, wait_for

from aicr_emulators.kube import protobuf
from aicr_emulators.kube.pytest_fixture import start_emulator


@pytest.fixture(scope="module")
def kube(tmp_path_factory):
    with start_emulator(tmp_path_factory.mktemp("kube-api"), in_process=True) as handle:
        yield handle


@pytest.fixture
def ns(kube):
    name = "t-" + uuid.uuid4().hex[:8]
    client.CoreV1Api(api_client(kube)).create_namespace({"metadata": {"name": name}})
    return name


@pytest.fixture
def core(kube):
    return client.CoreV1Api(api_client(kube))


@pytest.fixture
def apps(kube):
    return client.AppsV1Api(api_client(kube))


def test_discovery_lists_builtin_groups_and_resources(kube):
    api = api_client(kube)
    assert client.VersionApi(api).get_code().git_version == "v1.35.0"
    groups = {g.name: g for g in client.ApisApi(api).get_api_versions().groups}
    for group in ("apps", "batch", "apiextensions.k8s.io", "rbac.authorization.k8s.io", "resource.k8s.io",
                  "admissionregistration.k8s.io", "policy", "networking.k8s.io", "scheduling.k8s.io",
                  "coordination.k8s.io", "storage.k8s.io", "autoscaling", "apiregistration.k8s.io", "node.k8s.io"):
        assert group in groups, group
    assert groups["autoscaling"].preferred_version.version == "v2"
    resources = {r.name: r for r in client.CoreV1Api(api).get_api_resources().resources}
    assert resources["configmaps"].namespaced and not resources["namespaces"].namespaced
    assert "pods/status" in resources and "watch" in resources["pods"].verbs
    apps_res = {r.name for r in client.AppsV1Api(api).get_api_resources().resources}
    assert {"deployments", "deployments/status", "deployments/scale", "controllerrevisions"} <= apps_res


def test_configmap_crud_and_resource_version(core, ns):
    created = core.create_namespaced_config_map(ns, {"metadata": {"name": "c1", "labels": {"a": "1"}}, "data": {"k": "v"}})
    assert created.metadata.uid and created.metadata.creation_timestamp
    assert created.metadata.generation is None
    got = core.read_namespaced_config_map("c1", ns)
    assert got.data == {"k": "v"} and got.metadata.resource_version == created.metadata.resource_version
    got.data["k"] = "w"
    updated = core.replace_namespaced_config_map("c1", ns, got)
    assert int(updated.metadata.resource_version) > int(created.metadata.resource_version)
    # a write with the stale resourceVersion conflicts
    got.data["k"] = "x"
    with pytest.raises(client.ApiException) as err:
        core.replace_namespaced_config_map("c1", ns, got)
    assert err.value.status == 409
    status = error_body(err.value)
    assert status["kind"] == "Status" and status["reason"] == "Conflict"
    assert "the object has been modified" in status["message"]
    # a no-op update keeps the resourceVersion
    same = core.replace_namespaced_config_map("c1", ns, updated)
    assert same.metadata.resource_version == updated.metadata.resource_version
    core.delete_namespaced_config_map("c1", ns)
    with pytest.raises(client.ApiException) as err:
        core.read_namespaced_config_map("c1", ns)
    assert err.value.status == 404
    assert error_body(err.value)["details"] == {"name": "c1", "kind": "configmaps", "group": ""}


def test_create_errors_are_apiserver_shaped(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "dup"}})
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_config_map(ns, {"metadata": {"name": "dup"}})
    assert err.value.status == 409 and error_body(err.value)["reason"] == "AlreadyExists"
    assert error_body(err.value)["message"] == 'configmaps "dup" already exists'
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_config_map("missing-ns", {"metadata": {"name": "x"}})
    assert err.value.status == 404 and error_body(err.value)["message"] == 'namespaces "missing-ns" not found'
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_config_map(ns, {"metadata": {"name": "Bad_Name"}})
    assert err.value.status == 422
    body = error_body(err.value)
    assert body["reason"] == "Invalid" and body["details"]["causes"][0]["field"] == "metadata.name"
    generated = core.create_namespaced_config_map(ns, {"metadata": {"generateName": "gen-"}})
    assert generated.metadata.name.startswith("gen-") and len(generated.metadata.name) == 9


def test_label_and_field_selectors_filter(core, ns):
    for name, labels in (("a", {"owner": "helm", "name": "x"}), ("b", {"owner": "helm", "name": "y"}),
                         ("c", {"owner": "other"}), ("d", {})):
        core.create_namespaced_config_map(ns, {"metadata": {"name": name, "labels": labels}})

    def names(**kw):
        return sorted(i.metadata.name for i in core.list_namespaced_config_map(ns, **kw).items if i.metadata.name != "kube-root-ca.crt")

    assert names(label_selector="owner=helm,name=x") == ["a"]
    assert names(label_selector="owner=helm") == ["a", "b"]
    assert names(label_selector="owner!=helm") == ["c", "d"]
    assert names(label_selector="name in (x,y)") == ["a", "b"]
    assert names(label_selector="owner,!name") == ["c"]
    assert names(field_selector="metadata.name=c") == ["c"]
    assert names(field_selector="metadata.name!=c", label_selector="owner") == ["a", "b"]
    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_config_map(ns, field_selector="data.k=v")
    assert err.value.status == 400 and "field label not supported" in error_body(err.value)["message"]
    with pytest.raises(client.ApiException) as err:
        core.list_namespaced_config_map(ns, label_selector="a in (")
    assert err.value.status == 400


def test_pagination_with_limit_and_continue(core, ns):
    for idx in range(7):
        core.create_namespaced_config_map(ns, {"metadata": {"name": "p%d" % idx, "labels": {"page": "yes"}}})
    seen, token = [], None
    while True:
        page = core.list_namespaced_config_map(ns, label_selector="page=yes", limit=3, _continue=token)
        seen += [i.metadata.name for i in page.items]
        token = page.metadata._continue  # pylint: disable=protected-access
        if not token:
            break
        assert page.metadata.remaining_item_count > 0
    assert seen == ["p%d" % i for i in range(7)]


def test_secret_string_data_and_protobuf_body(kube, core, ns):
    sec = core.create_namespaced_secret(ns, {"metadata": {"name": "s1"}, "stringData": {"user": "admin"}})
    assert sec.type == "Opaque" and base64.b64decode(sec.data["user"]) == b"admin" and sec.string_data is None
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_secret(ns, {"metadata": {"name": "s2"}, "data": {"x": "not base64!"}})
    assert err.value.status == 400
    # a protobuf body as helm's storage driver sends it (k8s magic + runtime.Unknown + v1.Secret)
    body = protobuf.encode({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                            "metadata": {"name": "sh.helm.release.v1.r.v1", "labels": {"owner": "helm", "name": "r"}},
                            "data": {"release": base64.b64encode(b"payload").decode()}})
    status, _h, out = raw(kube, "POST", "/api/v1/namespaces/%s/secrets" % ns, body, "application/vnd.kubernetes.protobuf",
                          headers={"Accept": "application/vnd.kubernetes.protobuf, application/json"})
    assert status == 201, out
    assert out["type"] == "helm.sh/release.v1" and base64.b64decode(out["data"]["release"]) == b"payload"
    listed = core.list_namespaced_secret(ns, label_selector="owner=helm,name=r").items
    assert [s.metadata.name for s in listed] == ["sh.helm.release.v1.r.v1"]


def test_protobuf_namespace_from_hand_assembled_bytes(kube, core):
    # TypeMeta{apiVersion:"v1", kind:"Namespace"}, raw = Namespace{metadata{name:"pb-ns", labels{a:b}}}
    type_meta = b"\x0a\x02v1\x12\x09Namespace"
    labels_entry = b"\x0a\x01a\x12\x01b"
    meta = b"\x0a\x05pb-ns" + b"\x5a" + bytes([len(labels_entry)]) + labels_entry
    raw_ns = b"\x0a" + bytes([len(meta)]) + meta
    body = b"k8s\x00" + b"\x0a" + bytes([len(type_meta)]) + type_meta + b"\x12" + bytes([len(raw_ns)]) + raw_ns
    status, _h, out = raw(kube, "POST", "/api/v1/namespaces", body, "application/vnd.kubernetes.protobuf")
    assert status == 201, out
    got = core.read_namespace("pb-ns")
    assert got.metadata.labels["a"] == "b" and got.status.phase == "Active"
    status, _h, out = raw(kube, "POST", "/api/v1/namespaces", b"not-protobuf", "application/vnd.kubernetes.protobuf")
    assert status == 415 and out["reason"] == "UnsupportedMediaType"


def test_dry_run_on_every_mutating_verb(core, ns):
    dry = core.create_namespaced_config_map(ns, {"metadata": {"name": "dry"}, "data": {"a": "1"}}, dry_run="All")
    assert dry.metadata.name == "dry"
    with pytest.raises(client.ApiException):
        core.read_namespaced_config_map("dry", ns)
    core.create_namespaced_config_map(ns, {"metadata": {"name": "real"}, "data": {"a": "1"}})
    core.patch_namespaced_config_map("real", ns, {"data": {"a": "2"}}, dry_run="All")
    core.patch_namespaced_config_map("real", ns, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "real"},
                                                  "data": {"a": "3"}}, dry_run="All", field_manager="m", force=True,
                                     _content_type="application/apply-patch+yaml")
    cur = core.read_namespaced_config_map("real", ns)
    cur.data = {"a": "4"}
    core.replace_namespaced_config_map("real", ns, cur, dry_run="All")
    core.delete_namespaced_config_map("real", ns, dry_run="All")
    assert core.read_namespaced_config_map("real", ns).data == {"a": "1"}
    with pytest.raises(client.ApiException) as err:
        core.delete_namespaced_config_map("real", ns, dry_run="Everything")
    assert err.value.status == 400


def test_merge_json_and_strategic_patches(apps, ns):
    dep = deployment("web")
    dep["spec"]["template"]["spec"]["containers"] = [
        {"name": "a", "image": "a:1", "env": [{"name": "X", "value": "1"}, {"name": "Y", "value": "2"}]},
        {"name": "b", "image": "b:1"}]
    apps.create_namespaced_deployment(ns, dep)
    # strategic merge: containers merge by name, env by name
    smp = {"spec": {"template": {"spec": {"containers": [{"name": "a", "image": "a:2", "env": [{"name": "Y", "value": "3"}]}]}}}}
    out = apps.patch_namespaced_deployment("web", ns, smp)
    containers = {c.name: c for c in out.spec.template.spec.containers}
    assert containers["a"].image == "a:2" and containers["b"].image == "b:1"
    assert {e.name: e.value for e in containers["a"].env} == {"X": "1", "Y": "3"}
    # $patch: delete removes one list element
    out = apps.patch_namespaced_deployment("web", ns, {"spec": {"template": {"spec": {"containers": [
        {"name": "b", "$patch": "delete"}]}}}})
    assert [c.name for c in out.spec.template.spec.containers] == ["a"]
    # JSON merge patch replaces lists wholesale
    out = apps.patch_namespaced_deployment("web", ns, {"spec": {"template": {"spec": {"containers": [
        {"name": "z", "image": "z:1"}]}}}}, _content_type="application/merge-patch+json")
    assert [c.name for c in out.spec.template.spec.containers] == ["z"]
    # JSON patch
    out = apps.patch_namespaced_deployment("web", ns, [{"op": "replace", "path": "/spec/replicas", "value": 4},
                                                       {"op": "add", "path": "/metadata/labels", "value": {"l": "v"}}],
                                           _content_type="application/json-patch+json")
    assert out.spec.replicas == 4 and out.metadata.labels == {"l": "v"}
    with pytest.raises(client.ApiException) as err:
        apps.patch_namespaced_deployment("web", ns, [{"op": "test", "path": "/spec/replicas", "value": 9}],
                                         _content_type="application/json-patch+json")
    assert err.value.status == 422


def test_generation_bumps_on_spec_change_only(apps, ns):
    created = apps.create_namespaced_deployment(ns, deployment("gen"))
    assert created.metadata.generation == 1
    out = apps.patch_namespaced_deployment("gen", ns, {"metadata": {"labels": {"x": "y"}}})
    assert out.metadata.generation == 1
    out = apps.patch_namespaced_deployment("gen", ns, {"spec": {"replicas": 3}})
    assert out.metadata.generation == 2


def test_status_subresource_is_separate_from_spec(apps, ns):
    apps.create_namespaced_deployment(ns, deployment("st", replicas=2))
    wait_for(lambda: apps.read_namespaced_deployment("st", ns).status.ready_replicas == 2)
    # a status write through the main resource is ignored
    out = apps.patch_namespaced_deployment("st", ns, {"status": {"replicas": 99}}, _content_type="application/merge-patch+json")
    assert out.status.replicas == 2
    # a spec write through /status is ignored, the status part is kept
    out = apps.patch_namespaced_deployment_status("st", ns, {"spec": {"replicas": 7}, "status": {"observedGeneration": 42}},
                                                  _content_type="application/merge-patch+json")
    assert out.spec.replicas == 2 and out.status.observed_generation == 42


def test_server_side_apply_conflicts_force_and_field_removal(core, ns):
    def apply(data, manager, force=None, labels=None):
        body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}, "data": data}
        if labels:
            body["metadata"]["labels"] = labels
        return core.patch_namespaced_config_map("ssa", ns, body, field_manager=manager, force=force,
                                                _content_type="application/apply-patch+yaml")

    created = apply({"a": "1", "b": "2"}, "alice")
    assert [(m.manager, m.operation) for m in created.metadata.managed_fields] == [("alice", "Apply")]
    assert created.metadata.managed_fields[0].fields_v1 == {"f:data": {"f:a": {}, "f:b": {}}}
    # same value from another applier: shared ownership, no conflict
    apply({"a": "1"}, "bob")
    with pytest.raises(client.ApiException) as err:
        apply({"a": "changed"}, "bob")
    body = error_body(err.value)
    assert err.value.status == 409 and body["reason"] == "Conflict"
    assert body["message"] == 'Apply failed with 1 conflict: conflict with "alice" using v1: .data.a'
    assert body["details"]["causes"] == [{"reason": "FieldManagerConflict", "message": 'conflict with "alice" using v1',
                                          "field": ".data.a"}]
    forced = apply({"a": "changed"}, "bob", force=True)
    owners = {m.manager: m.fields_v1 for m in forced.metadata.managed_fields}
    assert owners["bob"] == {"f:data": {"f:a": {}}} and owners["alice"] == {"f:data": {"f:b": {}}}
    # alice stops applying b: it is removed (nobody else owns it)
    out = apply({}, "alice", labels={"team": "x"})
    assert out.data == {"a": "changed"} and out.metadata.labels == {"team": "x"}
    # an update by another manager takes ownership of what it changed
    out = core.patch_namespaced_config_map("ssa", ns, {"data": {"a": "edited"}}, field_manager="editor")
    owners = {m.manager: m for m in out.metadata.managed_fields}
    assert owners["editor"].operation == "Update" and "bob" not in owners
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_config_map("ssa", ns, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa"}},
                                         _content_type="application/apply-patch+yaml")
    assert err.value.status == 400 and "fieldManager is required" in error_body(err.value)["message"]


def test_server_side_apply_merges_lists_by_key(apps, ns):
    base = deployment("ssa-dep")
    base["spec"]["template"]["spec"]["containers"] = [{"name": "a", "image": "a:1", "ports": [{"containerPort": 80}]}]
    apps.patch_namespaced_deployment("ssa-dep", ns, base, field_manager="one", _content_type="application/apply-patch+yaml")
    sidecar = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "ssa-dep"},
               "spec": {"template": {"spec": {"containers": [{"name": "b", "image": "b:1"}]}}}}
    out = apps.patch_namespaced_deployment("ssa-dep", ns, sidecar, field_manager="two",
                                           _content_type="application/apply-patch+yaml")
    assert sorted(c.name for c in out.spec.template.spec.containers) == ["a", "b"]
    assert out.spec.template.spec.containers[0].ports[0].protocol == "TCP"
    # once the controller is done, re-applying the same config changes nothing (same resourceVersion, no duplicated ports)
    wait_for(lambda: apps.read_namespaced_deployment("ssa-dep", ns).status.ready_replicas == 1)
    before = apps.read_namespaced_deployment("ssa-dep", ns)
    again = apps.patch_namespaced_deployment("ssa-dep", ns, base, field_manager="one",
                                             _content_type="application/apply-patch+yaml")
    assert again.metadata.resource_version == before.metadata.resource_version
    assert len(again.spec.template.spec.containers[0].ports) == 1


def test_builtin_schema_validation(kube, apps, core, ns):
    bad = deployment("bad")
    bad["spec"]["replicas"] = "three"
    status, _h, body = raw(kube, "POST", "/apis/apps/v1/namespaces/%s/deployments" % ns, bad)
    assert status == 400 and body["reason"] == "BadRequest" and "cannot unmarshal string" in body["message"]
    missing = deployment("missing")
    del missing["spec"]["selector"]
    status, _h, body = raw(kube, "POST", "/apis/apps/v1/namespaces/%s/deployments" % ns, missing)
    assert status == 422 and "spec.selector: Required value" in body["message"]
    unknown = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "u"}, "data": {"a": "b"}, "bogus": 1}
    path = "/api/v1/namespaces/%s/configmaps" % ns
    status, _h, body = raw(kube, "POST", path + "?fieldValidation=Strict", unknown)
    assert status == 400 and body["message"] == 'strict decoding error: unknown field "bogus"'
    status, headers, body = raw(kube, "POST", path, unknown)
    assert status == 201 and "bogus" not in body
    assert headers["Warning"] == '299 - "unknown field \\"bogus\\""'
    assert core.read_namespaced_config_map("u", ns).data == {"a": "b"}


def test_immutable_fields(apps, core, ns):
    apps.create_namespaced_deployment(ns, deployment("imm"))
    with pytest.raises(client.ApiException) as err:
        apps.patch_namespaced_deployment("imm", ns, {"spec": {"selector": {"matchLabels": {"app": "other"}},
                                                              "template": {"metadata": {"labels": {"app": "other"}}}}})
    assert err.value.status == 422 and "field is immutable" in error_body(err.value)["message"]
    core.create_namespaced_config_map(ns, {"metadata": {"name": "frozen"}, "data": {"a": "1"}, "immutable": True})
    with pytest.raises(client.ApiException) as err:
        core.patch_namespaced_config_map("frozen", ns, {"data": {"a": "2"}})
    assert err.value.status == 422


def test_statefulset_spec_updates_are_restricted_and_system_namespaces_protected(apps, core, ns):
    sts = deployment("db")
    sts["kind"] = "StatefulSet"
    sts["spec"]["serviceName"] = "db"
    apps.create_namespaced_stateful_set(ns, sts)
    apps.patch_namespaced_stateful_set("db", ns, {"spec": {"replicas": 2}})
    with pytest.raises(client.ApiException) as err:
        apps.patch_namespaced_stateful_set("db", ns, {"spec": {"serviceName": "other"}})
    assert err.value.status == 422 and "updates to statefulset spec for fields other than" in error_body(err.value)["message"]
    with pytest.raises(client.ApiException) as err:
        core.delete_namespace("kube-system")
    assert err.value.status == 403


def test_scale_subresource(apps, ns):
    apps.create_namespaced_deployment(ns, deployment("sc", replicas=1))
    scale = apps.read_namespaced_deployment_scale("sc", ns)
    assert scale.spec.replicas == 1 and scale.status.selector == "app=sc"
    apps.patch_namespaced_deployment_scale("sc", ns, {"spec": {"replicas": 3}})
    assert apps.read_namespaced_deployment("sc", ns).spec.replicas == 3


def test_cluster_scoped_and_reviews(kube):
    api = api_client(kube)
    rbac = client.RbacAuthorizationV1Api(api)
    rule = {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}
    rbac.create_cluster_role({"metadata": {"name": "reader"}, "rules": [rule]})
    assert rbac.read_cluster_role("reader").rules[0].verbs == ["get"]
    review = client.AuthorizationV1Api(api).create_self_subject_access_review(
        {"spec": {"resourceAttributes": {"verb": "delete", "resource": "nodes"}}})
    assert review.status.allowed is True
    sched = client.SchedulingV1Api(api)
    assert sched.read_priority_class("system-node-critical").value == 2000001000


def test_openapi_v3_declares_field_validation(kube):
    status, _h, index = raw(kube, "GET", "/openapi/v3")
    assert status == 200 and "apis/apps/v1" in index["paths"] and "api/v1" in index["paths"]
    status, _h, doc = raw(kube, "GET", index["paths"]["apis/apps/v1"]["serverRelativeURL"])
    assert status == 200 and doc["openapi"].startswith("3.")
    patch = doc["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}"]["patch"]
    assert "fieldValidation" in [p["name"] for p in patch["parameters"]]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "apps", "version": "v1", "kind": "Deployment"}
    status, headers, body = raw(kube, "GET", "/openapi/v2", headers={"Accept": "application/com.github.proto-openapi.spec.v2@v1.0+protobuf"})
    assert status == 200 and "protobuf" in headers["Content-Type"] and body.startswith(b"\x0a\x032.0")


def test_table_answers_have_per_kind_columns(kube, core, apps, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "row"}, "data": {"a": "1", "b": "2"}})
    accept = {"Accept": "application/json;as=Table;v=v1;g=meta.k8s.io,application/json"}
    status, _h, table = raw(kube, "GET", "/api/v1/namespaces/%s/configmaps?fieldSelector=metadata.name%%3Drow" % ns,
                            headers=accept)
    assert status == 200 and table["kind"] == "Table"
    assert [c["name"] for c in table["columnDefinitions"]] == ["Name", "Data", "Age"]
    assert table["rows"][0]["cells"][:2] == ["row", 2] and table["rows"][0]["object"]["kind"] == "PartialObjectMetadata"
    apps.create_namespaced_deployment(ns, deployment("tab", replicas=2))
    wait_for(lambda: apps.read_namespaced_deployment("tab", ns).status.ready_replicas == 2)
    _s, _h, table = raw(kube, "GET", "/apis/apps/v1/namespaces/%s/deployments/tab?includeObject=Object" % ns, headers=accept)
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:5] == ["Name", "Ready", "Up-to-date", "Available", "Age"]
    assert table["rows"][0]["cells"][:4] == ["tab", "2/2", 2, 2] and table["rows"][0]["object"]["kind"] == "Deployment"
    svc = core.create_namespaced_service(ns, {"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}})
    assert 30000 <= svc.spec.ports[0].node_port <= 32767


def test_printer_columns_json_path():
    from aicr_emulators.kube.tables import human_duration, json_path  # pylint: disable=import-outside-toplevel
    obj = {"spec": {"size": 3, "items": ["a", "b"]}, "status": {"conditions": [
        {"type": "Ready", "status": "True"}, {"type": "Synced", "status": "False"}]}}
    assert json_path(obj, ".spec.size") == 3
    assert json_path(obj, '.status.conditions[?(@.type=="Ready")].status') == "True"
    assert json_path(obj, ".spec.items[1]") == "b"
    assert json_path(obj, ".spec.missing") is None
    assert [human_duration(s) for s in (5, 150, 3600, 90000, 10 ** 6)] == ["5s", "2m30s", "60m", "25h", "11d"]


def test_wrong_token_is_refused_and_missing_token_allowed(kube):
    status, _h, body = raw(kube, "GET", "/api/v1/namespaces", headers={"Authorization": "Bearer wrong"})
    assert status == 401 and body["reason"] == "Unauthorized"
    status, _h, _b = raw(kube, "GET", "/api/v1/namespaces", token=False)
    assert status == 200
