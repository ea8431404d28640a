"""CRD publication (schema/publish.py) against the lab's real kube-apiserver, as the least-privilege ``crd-publisher``
identity: create, no-op re-run without writes, check/diff mode, breaking-change refusal and allow_breaking,
Established/NamesAccepted wait, conflicts, deletion."""


import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._kube import crd as kube_crd
from ansible_collections.aicr.runtime.plugins.module_utils._schema import publish

PUBLISHER = "crd-publisher"


@pytest.fixture
def cluster(client):
    """The engine's client as crd_publish runs it: the ``crd-publisher`` identity."""
    return client(PUBLISHER)


def _mutations(kube, mark):
    return kube.audit(since=mark, mutating=True, user=kube.user(PUBLISHER))


def writes(kube, mark):
    """Mutating requests of the publisher since ``mark`` that were not dry runs."""
    return [(e["verb"], e["path"]) for e in _mutations(kube, mark) if "dryRun=All" not in (e.get("query") or "")]


class NeverEstablished(object):
    """A cluster whose CRD never gets conditions (a real API server establishes a valid CRD at once)."""

    def __init__(self):
        self.live = None
        self.calls = []

    def request(self, method, path, query=None, body=None, content_type=None):
        self.calls.append((method, (query or {}).get("dryRun")))
        if method == "GET":
            if self.live is None:
                raise ClusterError("cluster: GET %s returned 404: not found" % path, status=404)
            return self.live
        result = dict(body, status={})
        if method == "PATCH" and not (query or {}).get("dryRun"):
            self.live = result
        return result


def test_wait_timeout_names_the_crd():
    cluster = NeverEstablished()
    crd = {"apiVersion": kube_crd.API_VERSION, "kind": kube_crd.KIND, "metadata": {"name": "things.x.io"},
           "spec": {"group": "x.io", "names": {"plural": "things", "kind": "Thing"}, "scope": "Namespaced", "versions": []}}
    now = [0.0]
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        now[0] += seconds

    with pytest.raises(AicrError) as caught:
        publish.publish({"definition": crd, "wait_timeout": 3, "wait_sleep": 1}, cluster=cluster, sleep=sleep, clock=lambda: now[0])
    assert caught.value.msg == ("wait_timeout: CRD things.x.io not Established after 3s (not established yet); "
                                "allowed: a longer wait_timeout or a cluster that establishes it")
    assert sleeps == [1, 1, 1]
    assert cluster.calls[:3] == [("GET", None), ("PATCH", "All"), ("PATCH", None)]
    result = publish.publish({"definition": crd, "wait": False}, cluster=cluster)
    assert result["changed"] is False and result["established"] is False and "waited" not in result


def test_assess_requires_accepted_names():
    obj = {"apiVersion": kube_crd.API_VERSION, "kind": kube_crd.KIND, "metadata": {"name": "things.x.io"},
           "spec": {"names": {"plural": "things", "kind": "Thing"}},
           "status": {"conditions": [{"type": "Established", "status": "True"}, {"type": "NamesAccepted", "status": "True"}],
                      "acceptedNames": {"plural": "things", "kind": "OldThing"}}}
    assert kube_crd.assess(obj) == ("Pending", "accepted names are not the applied names yet")
    obj["status"]["acceptedNames"]["kind"] = "Thing"
    assert kube_crd.assess(obj)[0] == "Ready"
    obj["status"]["conditions"][1]["status"] = "False"
    assert kube_crd.assess(obj)[0] == "Failed"


def test_load_definition_forms(tmp_path):
    crd = {"apiVersion": kube_crd.API_VERSION, "kind": kube_crd.KIND, "metadata": {"name": "things.x.io", "resourceVersion": "7", "uid": "u"},
           "spec": {"group": "x.io", "names": {"plural": "things", "kind": "Thing"}}, "status": {"conditions": []}}
    loaded = publish.load_definition(definition=crd)
    assert loaded["metadata"] == {"name": "things.x.io"} and "status" not in loaded and crd["metadata"]["uid"] == "u"
    text = yaml.safe_dump_all([{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}, crd])
    assert publish.load_definition(definition=text)["spec"]["names"]["kind"] == "Thing"
    src = tmp_path / "crd.yaml"
    src.write_text(text)
    assert publish.load_definition(src=str(src))["metadata"]["name"] == "things.x.io"


@pytest.mark.parametrize("kwargs, message", [
    ({}, "definition/src: one of them is required (the CRD to publish)"),
    ({"definition": {"a": 1}, "src": "x.yaml"}, "definition/src: give one of them, not both"),
    ({"src": "/nonexistent/crd.yaml"}, "src: file /nonexistent/crd.yaml does not exist"),
    ({"definition": "kind: Namespace\n"}, "definition: the text holds no CustomResourceDefinition; allowed: a document with kind CustomResourceDefinition"),
    ({"definition": "a: [\n"}, "definition: the text is not valid YAML (did not find expected node content)"),
    ({"definition": 5}, "definition: a int is not allowed; allowed: a mapping or YAML text"),
    ({"definition": {"apiVersion": "apiextensions.k8s.io/v1beta1", "kind": "CustomResourceDefinition"}},
     "definition: apiVersion/kind apiextensions.k8s.io/v1beta1/CustomResourceDefinition is not allowed; "
     "allowed: apiextensions.k8s.io/v1/CustomResourceDefinition"),
    ({"definition": {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {}}},
     "definition: metadata.name is missing; allowed: <plural>.<group>"),
    ({"definition": {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "a.x.io"},
                     "spec": {"group": "x.io", "names": {"plural": "things"}}}},
     "definition: metadata.name a.x.io is not allowed; allowed: things.x.io (<plural>.<group>)"),
])
def test_load_definition_errors(kwargs, message):
    with pytest.raises(AicrError) as caught:
        publish.load_definition(**kwargs)
    assert caught.value.msg.split(" (and ")[0] == message  # the first problem; every one is in errors


GOOD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "things.x.io"},
        "spec": {"group": "x.io", "names": {"plural": "things", "kind": "Thing"}, "scope": "Namespaced", "versions": [{"name": "v1"}]}}


@pytest.mark.parametrize("params, message", [
    ({"state": "gone"}, "state: 'gone' is not allowed; use one of present, absent"),
    ({"wait_sleep": 0}, "wait_sleep: 0 is not allowed; use more than 0 and at most 60 seconds"),
    ({"wait_timeout": -1}, "wait_timeout: -1 is not allowed; use more than 0 and at most 86400 seconds"),
    ({"wait_timeout": 0}, "wait_timeout: 0 is not allowed; use more than 0 and at most 86400 seconds"),  # 0 was accepted (no wait at all)
    ({"wait_sleep": "soon"}, "wait_sleep: 'soon' is not allowed; use a number"),
    ({"severities": {"enum_removed": "fatal"}}, "severities.enum_removed: 'fatal' is not allowed; use one of error, warn, ignore"),
])
def test_parameter_errors(params, message):
    with pytest.raises(AicrError) as caught:
        publish.publish(dict(params, definition=GOOD), cluster=NeverEstablished())
    assert caught.value.msg == message


def test_the_options_and_the_definition_are_checked_in_one_pass_before_the_cluster():
    """Every problem, the options' and the CRD's names by apiextensions' rules, listed at once; no request is made."""
    bad = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "Things.x_y"},
           "spec": {"group": "x_y", "names": {"plural": "Things", "kind": "thing", "singular": "Thing"}, "scope": "Global",
                    "versions": [{"name": "V1"}]}}
    with pytest.raises(AicrError) as caught:
        publish.publish({"definition": bad, "wait_timeout": 0, "state": "present"}, cluster=object())  # any request would raise
    assert [e["field"] for e in caught.value.details["errors"]] == [
        "wait_timeout", "definition.spec.group", "definition.spec.names.kind", "definition.spec.names.plural", "definition.spec.names.singular",
        "definition.spec.scope", "definition.spec.versions[0].name"]
    assert caught.value.msg.endswith("(and 6 more problems, listed in errors)")


# --- state: absent deletes only a CRD this collection manages (on a double) ---------------------------------------------------


class LiveCRD:
    """One live CRD with the given field managers and labels; records DELETEs (and their body) and then reads as gone."""

    def __init__(self, managers, labels):
        self.live = {"apiVersion": kube_crd.API_VERSION, "kind": kube_crd.KIND,
                     "metadata": {"name": "things.x.io", "uid": "u-1", "resourceVersion": "42", "labels": labels,
                                  "managedFields": [{"manager": m, "operation": "Apply", "fieldsV1": {}} for m in managers]},
                     "spec": {"group": "x.io", "names": {"plural": "things", "kind": "Thing"}, "scope": "Namespaced", "versions": []}}
        self.deleted = []

    def request(self, method, path, query=None, body=None, content_type=None):
        if method == "GET":
            if self.live is None:
                raise ClusterError("cluster: GET %s returned 404: not found" % path, status=404)
            return self.live
        if method == "DELETE":
            self.deleted.append(body)
            self.live = None
            return {}
        raise AssertionError("unexpected %s" % method)


THINGS = {"apiVersion": kube_crd.API_VERSION, "kind": kube_crd.KIND, "metadata": {"name": "things.x.io"},
          "spec": {"group": "x.io", "names": {"plural": "things", "kind": "Thing"}, "scope": "Namespaced", "versions": []}}
OURS = {"app.kubernetes.io/managed-by": "aicr-runtime"}


@pytest.mark.parametrize("managers, labels, owner", [
    (["helm"], {"app.kubernetes.io/managed-by": "Helm"}, "field managers helm, label app.kubernetes.io/managed-by=Helm"),
    (["kubectl-client-side-apply"], {}, "field managers kubectl-client-side-apply, label app.kubernetes.io/managed-by not set"),
    (["tenant-operator"], OURS, "field managers tenant-operator, label app.kubernetes.io/managed-by=aicr-runtime"),  # the label alone is data
    (["aicr-runtime", "helm"], {"app.kubernetes.io/managed-by": "Helm"}, "field managers aicr-runtime, helm, label app.kubernetes.io/managed-by=Helm"),
])
@pytest.mark.parametrize("check_mode", [False, True])
def test_absent_refuses_a_crd_this_collection_does_not_manage(managers, labels, owner, check_mode):
    cluster = LiveCRD(managers, labels)
    with pytest.raises(AicrError) as caught:
        publish.publish({"definition": THINGS, "state": "absent", "wait": False}, cluster=cluster, check_mode=check_mode)
    assert caught.value.msg == ("definition: CRD things.x.io is not managed by aicr-runtime (%s); not deleted, nor any custom resource of its kind; "
                                "allowed: adopt: true to delete it anyway" % owner)
    assert cluster.deleted == [] and cluster.live is not None


def test_absent_with_adopt_deletes_a_foreign_crd_pinned_to_what_was_read():
    cluster = LiveCRD(["helm"], {"app.kubernetes.io/managed-by": "Helm"})
    result = publish.publish({"definition": THINGS, "state": "absent", "adopt": True, "wait": False}, cluster=cluster)
    assert result["changed"] is True and result["action"] == "delete"
    assert cluster.deleted[0]["preconditions"] == {"uid": "u-1", "resourceVersion": "42"}


def test_absent_deletes_a_crd_this_collection_manages():
    cluster = LiveCRD(["aicr-runtime", "kube-apiserver"], OURS)
    result = publish.publish({"definition": THINGS, "state": "absent", "wait": False}, cluster=cluster)
    assert result["changed"] is True and result["action"] == "delete" and len(cluster.deleted) == 1


def test_present_labels_the_crd_as_managed_unless_the_definition_says_otherwise():
    cluster = NeverEstablished()
    publish.publish({"definition": THINGS, "wait": False}, cluster=cluster)
    assert cluster.live["metadata"]["labels"] == OURS and "labels" not in THINGS["metadata"]
    theirs = dict(THINGS, metadata={"name": "things.x.io", "labels": {"app.kubernetes.io/managed-by": "Helm"}})
    publish.publish({"definition": theirs, "wait": False}, cluster=cluster)
    assert cluster.live["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "Helm"}
