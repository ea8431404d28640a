"""The official ``kubernetes`` Python client against the lab: CRUD, watch, server-side apply conflicts.

The client is configured from a kubeconfig with a client certificate and the lab CA, as the
collection's ``module_utils/_kube/connection.py`` configures it, and acts as the ``release`` identity; the
admin client only does what that identity is not granted (deleting a namespace, writing /status).
"""

import threading
import time

import pytest
from kubernetes import client, dynamic, watch
from kubernetes.client.rest import ApiException

pytestmark = pytest.mark.helm


@pytest.fixture
def core(api_client):
    return client.CoreV1Api(api_client)


def test_configmap_crud_with_resource_versions(core, ns):
    created = core.create_namespaced_config_map(ns, {"metadata": {"name": "c1", "labels": {"team": "a"}}, "data": {"k": "v"}})
    assert created.metadata.uid and created.metadata.resource_version and created.metadata.creation_timestamp
    read = core.read_namespaced_config_map("c1", ns)
    assert read.data == {"k": "v"} and read.metadata.resource_version == created.metadata.resource_version

    read.data["k"] = "v2"
    replaced = core.replace_namespaced_config_map("c1", ns, read)
    assert replaced.data == {"k": "v2"}
    assert int(replaced.metadata.resource_version) > int(created.metadata.resource_version)

    stale = core.read_namespaced_config_map("c1", ns)
    stale.metadata.resource_version = created.metadata.resource_version
    with pytest.raises(ApiException) as conflict:
        core.replace_namespaced_config_map("c1", ns, stale)
    assert conflict.value.status == 409

    patched = core.patch_namespaced_config_map("c1", ns, {"data": {"extra": "1"}, "metadata": {"labels": {"team": "b"}}})
    assert patched.data == {"k": "v2", "extra": "1"} and patched.metadata.labels == {"team": "b"}

    core.create_namespaced_config_map(ns, {"metadata": {"name": "c2", "labels": {"team": "a"}}})
    assert [c.metadata.name for c in core.list_namespaced_config_map(ns, label_selector="team=a").items] == ["c2"]
    assert [c.metadata.name for c in core.list_namespaced_config_map(ns, field_selector="metadata.name=c1").items] == ["c1"]

    with pytest.raises(ApiException) as exists:
        core.create_namespaced_config_map(ns, {"metadata": {"name": "c2"}})
    assert exists.value.status == 409

    core.delete_namespaced_config_map("c1", ns)
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_config_map("c1", ns)
    assert gone.value.status == 404


def test_deployment_generation_and_status_are_separate(api_client, admin_api, core, ns):
    apps = client.AppsV1Api(api_client)
    template = {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}
    body = {"metadata": {"name": "d"}, "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}}, "template": template}}
    created = apps.create_namespaced_deployment(ns, body)
    assert created.metadata.generation == 1
    apps.patch_namespaced_deployment("d", ns, {"metadata": {"labels": {"only": "metadata"}}})
    assert apps.read_namespaced_deployment("d", ns).metadata.generation == 1, "a metadata change does not bump generation"
    apps.patch_namespaced_deployment("d", ns, {"spec": {"replicas": 2}})
    assert apps.read_namespaced_deployment("d", ns).metadata.generation == 2
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        dep = apps.read_namespaced_deployment("d", ns)
        if dep.status is not None and dep.status.observed_generation == 2 and dep.status.available_replicas == 2:
            break
        time.sleep(0.1)
    assert dep.status.available_replicas == 2 and dep.status.observed_generation == 2
    # a spec change through /status is ignored (admin: the release identity may not write deployments/status at all)
    client.AppsV1Api(admin_api).patch_namespaced_deployment_status("d", ns, {"spec": {"replicas": 7}})
    assert apps.read_namespaced_deployment("d", ns).spec.replicas == 2
    with pytest.raises(ApiException) as forbidden:
        apps.patch_namespaced_deployment_status("d", ns, {"spec": {"replicas": 7}})
    assert forbidden.value.status == 403 and "deployments/status" in forbidden.value.body


def test_namespace_delete_cascades(admin_api, core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "inside"}})
    # the release identity creates namespaces but may not delete one
    with pytest.raises(ApiException) as forbidden:
        core.delete_namespace(ns)
    assert forbidden.value.status == 403
    client.CoreV1Api(admin_api).delete_namespace(ns)
    # the namespace controller empties it, then removes it (seconds on a real cluster)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            core.read_namespace(ns)
        except ApiException as exc:
            assert exc.status == 404
            break
        time.sleep(0.1)
    else:
        pytest.fail("namespace %s still there after 60s" % ns)
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_config_map("inside", ns)
    assert gone.value.status == 404


def test_watch_from_a_resource_version(core, ns):
    start_rv = core.list_namespaced_config_map(ns).metadata.resource_version

    def mutate():
        # no need to wait for the watch to start: it replays every change after start_rv
        core.create_namespaced_config_map(ns, {"metadata": {"name": "w", "labels": {"watch": "me"}}, "data": {"n": "1"}})
        core.create_namespaced_config_map(ns, {"metadata": {"name": "other"}})
        core.patch_namespaced_config_map("w", ns, {"data": {"n": "2"}})
        core.delete_namespaced_config_map("w", ns)

    worker = threading.Thread(target=mutate)
    worker.start()
    seen = []
    stream = watch.Watch()
    for event in stream.stream(core.list_namespaced_config_map, ns, label_selector="watch=me", resource_version=start_rv, timeout_seconds=20):
        seen.append((event["type"], event["object"].metadata.name, (event["object"].data or {}).get("n")))
        if event["type"] == "DELETED":
            stream.stop()
    worker.join()
    assert seen == [("ADDED", "w", "1"), ("MODIFIED", "w", "2"), ("DELETED", "w", "2")]


def test_server_side_apply_conflicts_and_force(api_client, core, ns):
    resources = dynamic.DynamicClient(api_client)
    cms = resources.resources.get(api_version="v1", kind="ConfigMap")
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa", "namespace": ns}, "data": {"owned": "by-a", "a-only": "x"}}
    cms.server_side_apply(body=body, name="ssa", namespace=ns, field_manager="manager-a")
    # re-applying the same object is a no-op: resourceVersion unchanged
    before = core.read_namespaced_config_map("ssa", ns).metadata.resource_version
    cms.server_side_apply(body=body, name="ssa", namespace=ns, field_manager="manager-a")
    assert core.read_namespaced_config_map("ssa", ns).metadata.resource_version == before

    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa", "namespace": ns}, "data": {"owned": "by-b", "b-only": "y"}}
    with pytest.raises(ApiException) as conflict:
        cms.server_side_apply(body=other, name="ssa", namespace=ns, field_manager="manager-b")
    assert conflict.value.status == 409
    assert "manager-a" in conflict.value.body and ".data.owned" in conflict.value.body
    assert core.read_namespaced_config_map("ssa", ns).data == {"owned": "by-a", "a-only": "x"}

    cms.server_side_apply(body=other, name="ssa", namespace=ns, field_manager="manager-b", force_conflicts=True)
    live = core.read_namespaced_config_map("ssa", ns)
    assert live.data == {"owned": "by-b", "a-only": "x", "b-only": "y"}
    managers = {m.manager: m.fields_v1 for m in live.metadata.managed_fields}
    assert "f:owned" in managers["manager-b"]["f:data"] and "f:owned" not in managers["manager-a"]["f:data"]

    # manager-a drops a field it alone owns: the field is removed
    cms.server_side_apply(body={"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa", "namespace": ns}, "data": {}},
                          name="ssa", namespace=ns, field_manager="manager-a")
    assert core.read_namespaced_config_map("ssa", ns).data == {"owned": "by-b", "b-only": "y"}


def test_dry_run_writes_nothing(core, ns):
    core.create_namespaced_config_map(ns, {"metadata": {"name": "dry"}}, dry_run="All")
    with pytest.raises(ApiException) as gone:
        core.read_namespaced_config_map("dry", ns)
    assert gone.value.status == 404


def test_custom_resources_validated_against_the_crd_schema(api_client, admin_api, core, repo_root, ns, widgets_crd):
    import yaml  # pylint: disable=import-outside-toplevel

    crd = yaml.safe_load((repo_root / "examples" / "charts" / "example-crds" / "crds" / "widgets.example.aicr.io.yaml").read_text())
    ext = client.ApiextensionsV1Api(api_client)
    try:
        ext.create_custom_resource_definition(crd)
    except ApiException as exc:  # the shared cluster may hold it already (the example-crds chart installs it)
        assert exc.status == 409, exc.body
    deadline = time.monotonic() + 30
    while True:
        conds = ext.read_custom_resource_definition("widgets.example.aicr.io").status.conditions or []
        if any(c.type == "Established" and c.status == "True" for c in conds):
            break
        assert time.monotonic() < deadline, "widgets.example.aicr.io not Established after 30s: %s" % conds
        time.sleep(0.1)
    custom = client.CustomObjectsApi(api_client)
    args = ("example.aicr.io", "v1alpha1", ns, "widgets")
    created = custom.create_namespaced_custom_object(*args, {"apiVersion": "example.aicr.io/v1alpha1", "kind": "Widget", "metadata": {"name": "w"},
                                                             "spec": {"size": 2, "unknown": "pruned"}})
    assert created["spec"] == {"size": 2, "color": "green"}, "unknown field pruned, default applied"
    with pytest.raises(ApiException) as invalid:
        custom.create_namespaced_custom_object(*args, {"apiVersion": "example.aicr.io/v1alpha1", "kind": "Widget", "metadata": {"name": "bad"},
                                                       "spec": {"size": "big", "color": "purple"}})
    assert invalid.value.status == 422
    assert "spec.size" in invalid.value.body and "spec.color" in invalid.value.body
    # /status is a subresource of its own in RBAC: the release identity is not granted widgets/status
    status = client.CustomObjectsApi(admin_api).patch_namespaced_custom_object_status(
        *args, "w", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}})
    assert status["status"]["conditions"][0]["type"] == "Ready"
    assert status["metadata"]["generation"] == 1, "a /status write does not bump generation"


def test_paged_list_and_delete_collection(admin_api, core, ns):
    for index in range(7):
        core.create_namespaced_config_map(ns, {"metadata": {"name": "p%d" % index, "labels": {"parity": "odd" if index % 2 else "even"}}})
    names, token, pages = [], None, 0
    while True:
        page = core.list_namespaced_config_map(ns, limit=3, _continue=token, label_selector="parity")
        names += [c.metadata.name for c in page.items]
        pages += 1
        token = page.metadata._continue  # pylint: disable=protected-access
        if not token:
            break
    assert sorted(names) == ["p%d" % i for i in range(7)] and pages == 3
    # deletecollection is a verb of its own: the collection never uses it, so its roles do not grant it
    with pytest.raises(ApiException) as forbidden:
        core.delete_collection_namespaced_config_map(ns, label_selector="parity=odd")
    assert forbidden.value.status == 403 and "deletecollection" in forbidden.value.body
    client.CoreV1Api(admin_api).delete_collection_namespaced_config_map(ns, label_selector="parity=odd")
    assert sorted(c.metadata.name for c in core.list_namespaced_config_map(ns, label_selector="parity").items) == ["p0", "p2", "p4", "p6"]
