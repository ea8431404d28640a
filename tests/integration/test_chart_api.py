"""The chart_api role through playbooks/publish_chart_api.yml (installed collection) against the lab's real control plane,
as the least-privilege identity ``crd-publisher`` (the shipped aicr-runtime:crd-publisher ClusterRole): publish
example-operator's values as a CRD, re-run without writes, refuse a breaking chart update with its findings named,
apply it with chart_api_allow_breaking, and custom resources whose .spec.values follow the published schema are
validated (and pruned) by the real API server."""

import shutil
import time
from pathlib import Path

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import build_api_client
from ansible_collections.aicr.runtime.plugins.module_utils._kube.client import KubeClient as KubeCluster
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError

from lab_support import wait_until

REPO_ROOT = Path(__file__).resolve().parents[2]
CRD_NAME = "exampleoperators.example-operator.bundles.aicr.io"
CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + CRD_NAME
INVENTORY = {"clusters": {"hosts": {"lab": {"ansible_connection": "local"}}}}
IDENTITY = "crd-publisher"


@pytest.fixture
def kube_without_crd(kube):
    """The session's cluster with no CRD of this name (cluster-scoped: removed before and after the test)."""
    def gone():
        if kube.get(CRD_PATH):
            kube.rest.delete(CRD_PATH)
            wait_until(lambda: kube.get(CRD_PATH) is None, 60, "CRD %s to be deleted" % CRD_NAME)
    gone()
    yield kube
    gone()


@pytest.fixture
def chart(tmp_path):
    """A copy of the example chart the test may change."""
    target = tmp_path / "example-operator"
    shutil.copytree(str(REPO_ROOT / "examples" / "charts" / "example-operator"), str(target))
    return target


def publish(run_playbook, installed_collection, kube_without_crd, chart, check=False, diff=False, **extra):
    extravars = dict(chart_api_chart=str(chart), chart_api_kubeconfig=kube_without_crd.kubeconfig_for(IDENTITY), chart_api_wait_sleep=0.1, **extra)
    return run_playbook(str(installed_collection / "playbooks" / "publish_chart_api.yml"), extravars=extravars, inventory=INVENTORY,
                        check=check, diff=diff)


def writes(kube_without_crd, mark):
    """What the role (as crd-publisher) wrote after ``mark``, server-side dry runs left out."""
    return [(e["verb"], e["path"]) for e in kube_without_crd.audit(since=mark, mutating=True, user=kube_without_crd.user(IDENTITY))
            if "dryRun=All" not in (e.get("query") or "")]


def values_properties(crd):
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["values"]["properties"]


def custom_resource(name, values, namespace):
    return {"apiVersion": "example-operator.bundles.aicr.io/v1alpha1", "kind": "ExampleOperator", "metadata": {"name": name, "namespace": namespace},
            "spec": {"version": "0.1.0", "values": values}}


def cr_path(namespace):
    return "/apis/example-operator.bundles.aicr.io/v1alpha1/namespaces/%s/exampleoperators" % namespace


def create_cr(cluster, name, values, namespace, timeout=30):
    """POST a custom resource; an updated schema is served shortly after the CRD update (422 retried meanwhile)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return cluster.request("POST", cr_path(namespace), body=custom_resource(name, values, namespace))
        except ClusterError as exc:
            if exc.status != 422 or time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def test_publish_refuse_breaking_then_allow(run_playbook, installed_collection, kube_without_crd, chart):
    cluster = KubeCluster(build_api_client(kube_without_crd.kubeconfig))  # the lab's admin: set-up and inspection
    namespace = kube_without_crd.namespace

    # check mode on a cluster without the CRD: planned, nothing written
    mark = kube_without_crd.audit_mark()
    planned = publish(run_playbook, installed_collection, kube_without_crd, chart, check=True, diff=True)
    assert planned.rc == 0, planned.stdout[-4000:]
    applied = planned.result("Apply the CRD and wait until it is Established")
    assert applied["changed"] is True and applied["action"] == "create" and applied["diff"]["before"] == {}
    assert writes(kube_without_crd, mark) == [] and CRD_NAME not in [
        c["metadata"]["name"] for c in cluster.request("GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions")["items"]]

    first = publish(run_playbook, installed_collection, kube_without_crd, chart)
    assert first.rc == 0, first.stdout[-4000:]
    applied = first.result("Apply the CRD and wait until it is Established")
    assert applied["changed"] is True and applied["action"] == "create" and applied["established"] is True
    assert applied["conditions"]["Established"]["status"] == "True" and applied["conditions"]["NamesAccepted"]["status"] == "True"
    assert first.result("Compare the CRD with the live one")["old_found"] is False
    assert "Refuse breaking changes to the live CRD" not in first.failed_tasks
    report = first.result("Report the published API")["msg"]
    assert report[0] == "CRD %s: create, Established" % CRD_NAME
    assert report[1].startswith("custom resources: apiVersion example-operator.bundles.aicr.io/v1alpha1, kind ExampleOperator (Namespaced)")
    assert report[2] == "compared with the live CRD: none (first publication)"
    assert first.changed_tasks == ["Apply the CRD and wait until it is Established"]

    chart_values = yaml.safe_load((chart / "values.yaml").read_text())
    created = create_cr(cluster, "defaults", chart_values, namespace)
    assert created["spec"]["values"] == chart_values
    with pytest.raises(ClusterError) as rejected:
        cluster.request("POST", cr_path(namespace), body=custom_resource("bad", {"replicaCount": "two"}, namespace))
    assert rejected.value.status == 422 and "spec.values.replicaCount" in rejected.value.msg

    mark = kube_without_crd.audit_mark()
    second = publish(run_playbook, installed_collection, kube_without_crd, chart)
    assert second.rc == 0, second.stdout[-4000:]
    assert second.changed_tasks == []
    again = second.result("Apply the CRD and wait until it is Established")
    assert again["action"] == "unchanged" and again["established"] is True
    assert second.result("Report the published API")["msg"][2] == "compared with the live CRD: 0 breaking change(s), 0 warning(s)"
    assert writes(kube_without_crd, mark) == []

    # a chart update that removes a values key and changes a type: refused, findings named, CRD untouched
    text = (chart / "values.yaml").read_text()
    text = text.replace("# -- Log verbosity (0-5).\nlogLevel: 2\n", "").replace("replicaCount: 1", "replicaCount: \"1\"")
    (chart / "values.yaml").write_text(text)
    mark = kube_without_crd.audit_mark()
    refused = publish(run_playbook, installed_collection, kube_without_crd, chart)
    assert refused.rc != 0
    assert refused.failed_tasks == ["Refuse breaking changes to the live CRD"]
    msg = refused.result("Refuse breaking changes to the live CRD")["msg"]
    assert "\n" not in msg
    assert msg.startswith("chart_api: 3 breaking change(s) to the live CRD %s: " % CRD_NAME)
    assert "existingFieldRemoval ^.spec.values.logLevel: removed field : v1alpha1.^.spec.values.logLevel" in msg, msg
    assert 'type ^.spec.values.replicaCount: type changed : "integer" -> "string"' in msg
    assert msg.endswith("allowed: compatible changes only, or chart_api_allow_breaking: true")
    assert refused.results("Apply the CRD and wait until it is Established") == []
    assert writes(kube_without_crd, mark) == []
    live = cluster.request("GET", CRD_PATH)
    assert "logLevel" in values_properties(live) and values_properties(live)["replicaCount"]["type"] == "integer"

    allowed = publish(run_playbook, installed_collection, kube_without_crd, chart, diff=True, chart_api_allow_breaking=True)
    assert allowed.rc == 0, allowed.stdout[-4000:]
    applied = allowed.result("Apply the CRD and wait until it is Established")
    assert applied["changed"] is True and applied["action"] == "update" and applied["breaking"] is True and applied["established"] is True
    assert "logLevel" in values_properties(applied["diff"]["before"]) and "logLevel" not in values_properties(applied["diff"]["after"])
    assert allowed.result("Report the published API")["msg"][3] == "breaking changes applied (chart_api_allow_breaking)"
    live = cluster.request("GET", CRD_PATH)
    assert "logLevel" not in values_properties(live) and values_properties(live)["replicaCount"]["type"] == "string"

    new_values = yaml.safe_load(text)
    assert new_values["replicaCount"] == "1"
    created = create_cr(cluster, "updated", new_values, namespace)
    assert created["spec"]["values"] == new_values
    pruned = cluster.request("POST", cr_path(namespace), body=custom_resource("pruned", dict(new_values, logLevel=4), namespace))
    assert "logLevel" not in pruned["spec"]["values"]

    # the role removes what it published
    removed = publish(run_playbook, installed_collection, kube_without_crd, chart, chart_api_state="absent")
    assert removed.rc == 0, removed.stdout[-4000:]
    assert removed.result("Remove the CRD and every custom resource of its kind")["action"] == "delete"
    with pytest.raises(ClusterError) as gone:
        cluster.request("GET", CRD_PATH)
    assert gone.value.status == 404
