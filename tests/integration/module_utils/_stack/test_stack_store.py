"""Status stores against the lab's real kube-apiserver, as the least-privilege identities: CRD install, CRD subresource,
ConfigMap backend, 409 retry, the transition hook."""

import json

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import client_for
from ansible_collections.aicr.runtime.plugins.module_utils._stack import engine as stack_engine
from ansible_collections.aicr.runtime.plugins.module_utils._stack import crd, status, store


@pytest.fixture
def api(stack_client):
    """The status writer's identity (``stack``) on the shared cluster, where the ClusterStack CRD is installed."""
    return stack_client


def test_crd_install_is_idempotent_and_check_mode_safe(private_kube):
    # a cluster of its own: the CRD starts absent (the shared cluster's CRD is never deleted under other tests)
    stack = client_for(private_kube.kubeconfig_for("stack"))
    with pytest.raises(AicrError, match="backend: crd is not usable; the ClusterStack CRD clusterstacks.runtime.aicr.io is not installed"):
        store.CrdStore(stack).list()
    # installing the CRD is stack_reconcile's (install_crd), so its identity
    api = client_for(private_kube.kubeconfig_for("reconciler"))
    assert stack_engine.ensure_crd(api, crd.build_crd(), check_mode=True) == (True, "would create CRD clusterstacks.runtime.aicr.io")
    assert private_kube.get("/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusterstacks.runtime.aicr.io") is None, "check mode"
    assert stack_engine.ensure_crd(api, crd.build_crd()) == (True, "create CRD clusterstacks.runtime.aicr.io")
    assert store.CrdStore(stack).list() == [], "Established means served: the stack identity lists at once"
    assert stack_engine.ensure_crd(api, crd.build_crd()) == (False, "CRD clusterstacks.runtime.aicr.io unchanged"), \
        "what the API server stores (with its defaults) still compares equal"
    changed = crd.build_crd()
    changed["spec"]["versions"][0]["additionalPrinterColumns"].pop()
    assert stack_engine.ensure_crd(api, changed, check_mode=True) == (True, "would update CRD clusterstacks.runtime.aicr.io")
    assert stack_engine.ensure_crd(api, crd.build_crd())[0] is False
    assert stack_engine.ensure_crd(api, changed) == (True, "update CRD clusterstacks.runtime.aicr.io")
    assert stack_engine.ensure_crd(api, changed)[0] is False
    assert stack_engine.ensure_crd(api, crd.build_crd()) == (True, "update CRD clusterstacks.runtime.aicr.io")


def test_status_goes_through_the_subresource_and_no_op_writes_nothing(api, stacks):
    plain = stacks.create("plain")
    writer = status.StatusWriter(store.CrdStore(api), plain)
    _before, after, changed, events = writer.apply({"phase": "Resolving", "observed_generation": 1})
    assert changed and after["status"]["phase"] == "Resolving" and events[0]["type"] == "PhaseResolving"
    assert after["metadata"]["generation"] == 1, "a status write bumps no generation"
    rv = after["metadata"]["resourceVersion"]
    _before, again, changed, events = writer.apply({"phase": "Resolving", "observed_generation": 1})
    assert not changed and events == [] and again["metadata"]["resourceVersion"] == rv and writer.writes == 1
    check = status.StatusWriter(store.CrdStore(api), plain, check_mode=True)
    _before, would, changed, _events = check.apply({"phase": "Ready"})
    assert changed and would["status"]["phase"] == "Ready"
    assert store.CrdStore(api).read(plain)["status"]["phase"] == "Resolving"
    listed = store.CrdStore(api).list()
    assert plain in [o["metadata"]["name"] for o in listed]


def test_conflict_from_a_concurrent_spec_edit_is_retried_and_keeps_both(api, stacks):
    busy = stacks.create("busy")
    crd_store = store.CrdStore(api)
    writer = status.StatusWriter(crd_store, busy, sleep=lambda _s: None)
    calls = []

    def mutate(status, obj):
        calls.append(obj["metadata"]["resourceVersion"])
        if len(calls) == 1:  # someone edits the spec between our read and our write
            stacks.edit_spec(busy, {"catalog": {"source": "/elsewhere"}, "skipComponents": ["x"]})
        status["phase"] = "Deploying"
        status["observedGeneration"] = 1
        return status

    _before, after, changed = writer.update(mutate)
    assert changed and writer.conflicts == 1 and len(calls) == 2
    final = crd_store.read(busy)
    assert final["spec"]["skipComponents"] == ["x"] and final["metadata"]["generation"] == 2
    assert final["status"]["phase"] == "Deploying" and final["status"]["observedGeneration"] == 1
    assert after["status"] == final["status"]


def test_conflicts_give_up_after_the_retries(api, stacks):
    hot = stacks.create("hot")
    writer = status.StatusWriter(store.CrdStore(api), hot, retries=2, sleep=lambda _s: None)

    def mutate(status, obj):
        stacks.edit_spec(hot, {"catalog": {"source": "/v%s" % obj["metadata"]["resourceVersion"]}})  # its owner, at every attempt
        status["phase"] = "Ready"
        return status

    with pytest.raises(AicrError, match="status write kept conflicting after 2 retries"):
        writer.update(mutate)


def test_component_transition_hook_writes_each_transition(api, stacks):
    writer = status.StatusWriter(store.CrdStore(api), stacks.create("live"))
    writer.on_component_transition({"name": "a", "phase": "Deploying"})
    writer.on_component_transition({"name": "a", "phase": "Ready", "revision": 1})
    _b, after, changed, _e = writer.on_component_transition({"name": "a", "phase": "Ready", "revision": 1})
    assert not changed and writer.writes == 2
    assert [h["message"] for h in after["status"]["history"]] == ["component a new -> Deploying", "component a Deploying -> Ready"]


def test_missing_stack_is_a_clear_error(api, stacks):
    # (a missing CRD: test_crd_install_is_idempotent_and_check_mode_safe, on a cluster of its own)
    nope = stacks.name("nope")
    with pytest.raises(AicrError, match="name: ClusterStack '%s' not found" % nope):
        store.CrdStore(api).read(nope)
    with pytest.raises(AicrError, match="backend: 'etcd' is not allowed; allowed: crd, configmap"):
        store.make_store(api, "etcd")


def test_configmap_backend_generation_follows_the_spec(api, kube):
    cms = store.ConfigMapStore(api, kube.namespace)
    spec = {"catalog": {"source": "/c"}, "criteria": {"service": "kind"}}
    changed, before, after = cms.ensure_spec("lab", spec, check_mode=True)
    assert changed and before is None and after["metadata"]["generation"] == 1
    with pytest.raises(AicrError, match="stack 'lab' has no ConfigMap aicr-stack-lab in namespace %s" % kube.namespace):
        cms.read("lab")
    assert cms.ensure_spec("lab", spec)[0] is True
    assert cms.ensure_spec("lab", spec)[0] is False
    writer = status.StatusWriter(cms, "lab")
    writer.apply({"phase": "Ready", "observed_generation": 1})
    changed, before, after = cms.ensure_spec("lab", dict(spec, skipComponents=["a"]))
    assert changed and before["metadata"]["generation"] == 1 and after["metadata"]["generation"] == 2
    assert after["status"]["phase"] == "Ready" and after["status"]["observedGeneration"] == 1, "a spec change keeps the status"
    listed = cms.list()
    assert [s["metadata"]["name"] for s in listed] == ["lab"] and listed[0]["spec"]["skipComponents"] == ["a"]
    cm = api.request("GET", cms.path("lab"))
    assert cm["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "aicr-runtime", "runtime.aicr.io/stack": "lab"}


def test_configmap_backend_refused_names_the_role_to_bind_there(api, kube):
    # the stack identity's ClusterRole grants no ConfigMaps: the backend's role is bound in the test namespace only
    refused = "%s: this identity may not keep stacks in ConfigMaps of namespace default; bind the ClusterRole " \
              "aicr-runtime:stack-configmap in namespace default with a RoleBinding \\(meta/rbac/stack-configmap.yaml\\) - .*403"
    cms = store.make_store(api, "configmap", "default", "status_namespace")
    for call in (cms.list, lambda: cms.read("lab"), lambda: cms.ensure_spec("lab", {"criteria": {}})):
        with pytest.raises(AicrError, match=refused % "status_namespace") as caught:
            call()
        assert "\n" not in caught.value.msg and caught.value.details["status"] == 403
        assert caught.value.details["rbac"]["name"] == "aicr-runtime:stack-configmap" and caught.value.details["rbac"]["namespace"] == "default"
    with pytest.raises(AicrError, match=refused % "namespace"):
        store.ConfigMapStore(api, "default").list()
    assert store.ConfigMapStore(api, kube.namespace).list() == [], "where it is bound"


# --- issue #35, item 2: which ConfigMap is a stack ------------------------------------------------------------------

def forge(kube, name, stack, spec, manager=None):
    """A ConfigMap labelled for ``stack`` written by someone else than the store (the lab's admin, field manager
    ``aicr-lab``; ``manager``: the one it claims with ``?fieldManager=``)."""
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": kube.namespace,
                         "labels": {"app.kubernetes.io/managed-by": "aicr-runtime", "runtime.aicr.io/stack": stack}},
            "data": {"spec": json.dumps(spec), "status": "{}", "generation": "1"}}
    return kube.rest.request("POST", "/api/v1/namespaces/%s/configmaps" % kube.namespace, body=body,
                             query={"fieldManager": manager} if manager else None)


def info_of(kube, **params):
    """stack_info's engine as the ``stack`` identity on the test's namespace."""
    return stack_engine.info(dict({"backend": "configmap", "namespace": kube.namespace, "kubeconfig": kube.kubeconfig_for("stack")}, **params))


REAL = {"catalog": {"source": "/real"}, "criteria": {"service": "kind"}}
FORGED = {"catalog": {"source": "https://evil.example/catalog"}, "criteria": {"service": "kind"}}


def test_the_store_writes_its_configmaps_with_its_field_manager(api, kube):
    cms = store.ConfigMapStore(api, kube.namespace)
    cms.ensure_spec("gpu", REAL)
    cm = api.request("GET", cms.path("gpu"))
    assert "aicr-runtime" in [m["manager"] for m in cm["metadata"]["managedFields"]]
    status.StatusWriter(cms, "gpu").apply({"phase": "Ready", "observed_generation": 1})
    assert cms.read("gpu")["status"]["phase"] == "Ready" and cms.list()[0]["metadata"]["name"] == "gpu" and cms.foreign_claims == []


def test_a_forged_configmap_labelled_for_a_stack_is_a_foreign_claim_not_the_stack(api, kube):
    """The issue's attack: a second ConfigMap labelled ``gpu`` made stack_reconcile converge the forger's spec (the base
    commit took the stack's name from the label and listed both as ``gpu``)."""
    cms = store.ConfigMapStore(api, kube.namespace)
    cms.ensure_spec("gpu", REAL)
    forge(kube, "evil", "gpu", FORGED)
    forge(kube, "aicr-stack-other", "gpu", FORGED)  # a name of the store's shape, with a label that disagrees
    listed = cms.list()
    assert [(s["metadata"]["name"], s["spec"]) for s in listed] == [("gpu", REAL)], "only the stack's own ConfigMap"
    claims = dict((c["name"], c) for c in cms.foreign_claims)
    assert sorted(claims) == ["aicr-stack-other", "evil"]
    assert claims["evil"]["message"] == ("foreign claim: ConfigMap %s/evil (claims stack gpu) is not named aicr-stack-<stack name> "
                                         "(a DNS-1123 label); ignored" % kube.namespace)
    assert claims["aicr-stack-other"]["reason"] == "has the label runtime.aicr.io/stack=gpu, which is not its name's stack other"
    assert claims["evil"]["managers"] == ["aicr-lab"] and claims["evil"]["claims_stack"] == "gpu" and claims["evil"]["kind"] == "ConfigMap"

    result = info_of(kube, names=["gpu"])
    assert [(s["name"], s["spec"]) for s in result["stacks"]] == [("gpu", REAL)] and result["refused"] == []
    assert sorted(c["name"] for c in result["foreign_claims"]) == ["aicr-stack-other", "evil"], "reported whatever names says"
    assert [w for w in result["warnings"] if w.startswith("foreign claim: ConfigMap %s/evil " % kube.namespace)]


def test_a_configmap_at_the_stacks_own_name_not_written_by_the_collection_is_refused(api, kube):
    forge(kube, "aicr-stack-squat", "squat", FORGED)  # written with kubectl (here: the lab's admin), not through the store
    cms = store.ConfigMapStore(api, kube.namespace)
    assert cms.list() == [] and [c["name"] for c in cms.foreign_claims] == ["aicr-stack-squat"]
    assert cms.foreign_claims[0]["reason"] == "was not written by aicr-runtime (field managers: aicr-lab)"
    for call in (lambda: cms.read("squat"), lambda: cms.ensure_spec("squat", REAL), lambda: status.StatusWriter(cms, "squat").apply({"phase": "Ready"})):
        with pytest.raises(AicrError, match=r"^name: stack squat: foreign claim: ConfigMap %s/aicr-stack-squat \(claims stack squat\) was not "
                                            r"written by aicr-runtime \(field managers: aicr-lab\); ignored; allowed: " % kube.namespace) as caught:
            call()
        assert caught.value.details["foreign_claims"][0]["name"] == "aicr-stack-squat"
    cm = kube.rest.get(cms.path("squat"))
    assert json.loads(cm["data"]["spec"]) == FORGED and [m["manager"] for m in cm["metadata"]["managedFields"]] == ["aicr-lab"], "nothing written"


def test_two_configmaps_with_the_collections_field_manager_refuse_the_stack_by_name(api, kube):
    cms = store.ConfigMapStore(api, kube.namespace)
    cms.ensure_spec("gpu", REAL)
    cms.ensure_spec("cpu", REAL)
    forge(kube, "copy", "gpu", FORGED, manager="aicr-runtime")  # who knows the field manager can claim it too
    assert [s["metadata"]["name"] for s in cms.list()] == ["cpu"]
    assert cms.refused == {"gpu": "stack gpu: refused, 2 ConfigMaps of namespace %s claim it with field manager aicr-runtime: aicr-stack-gpu, copy; "
                                  "allowed: one, aicr-stack-gpu - delete the other" % kube.namespace}
    result = info_of(kube)
    assert [s["name"] for s in result["stacks"]] == ["cpu"] and result["refused"] == [{"name": "gpu", "msg": cms.refused["gpu"]}]
    assert [c["name"] for c in result["foreign_claims"]] == ["copy"] and cms.refused["gpu"] in result["warnings"]
    assert info_of(kube, names=["cpu"])["refused"] == [], "refused only among the stacks asked for"


def test_a_clusterstack_whose_name_is_no_stack_name_is_refused_not_folded(api, stacks):
    dotted = stacks.create("dotted.stack")  # a valid object name (a DNS subdomain), not a stack name
    plain = stacks.create("plain")
    crd_store = store.CrdStore(api)
    names = [o["metadata"]["name"] for o in crd_store.list()]
    assert plain in names and dotted not in names
    assert crd_store.refused[dotted] == ("stack %s: refused, ClusterStack name %r is not a DNS-1123 label; allowed: a DNS-1123 label: lowercase "
                                         "letters, digits and '-', starting and ending with a letter or digit, at most 63 characters" % (dotted, dotted))
