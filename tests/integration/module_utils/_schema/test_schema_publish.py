"""CRD publication (schema/publish.py) against the lab's real kube-apiserver, as the least-privilege ``crd-publisher``
identity: create, no-op re-run without writes, check/diff mode, breaking-change refusal and allow_breaking,
Established/NamesAccepted wait, conflicts, deletion."""

import json
import threading
import time
import uuid

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._kube import crd as kube_crd
from ansible_collections.aicr.runtime.plugins.module_utils._schema import engine, publish

BASE_VALUES = "# -- Replicas.\nreplicaCount: 1\nimage:\n  # -- Image tag.\n  tag: v1\nlogLevel: 2\n"
PUBLISHER = "crd-publisher"


@pytest.fixture
def domain(kube):
    """A CRD domain of the test's own (CRDs are cluster-scoped, the cluster is shared): the test's CRDs are
    ``<plural>.<chart>.bundles.<domain>``; every CRD under it is deleted after the test (and waited for)."""
    name = "t%s.aicr.io" % uuid.uuid4().hex[:8]
    yield name
    path = kube_crd.BASE_PATH
    mine = [c["metadata"]["name"] for c in kube.rest.get(path)["items"] if c["metadata"]["name"].endswith("." + name)]
    for crd_name in mine:
        kube.rest.delete("%s/%s" % (path, crd_name))
    deadline = time.monotonic() + 120
    while any(kube.get("%s/%s" % (path, n)) is not None for n in mine):
        assert time.monotonic() < deadline, "the test's CRDs were never deleted"
        time.sleep(0.05)


@pytest.fixture
def cluster(client):
    """The engine's client as crd_publish runs it: the ``crd-publisher`` identity."""
    return client(PUBLISHER)


@pytest.fixture
def admin(client):
    """Test set-up and inspection only: custom resources of the published CRDs (no collection identity writes those)."""
    return client("admin")


def crd_of(tmp_path, name, text, domain):
    """The values_schema CRD of a values file (chart name ``name``, group ``<name>.bundles.<domain>``)."""
    path = tmp_path / ("%s-%d.yaml" % (name, abs(hash(text))))
    path.write_text(text)
    return engine.run({"values_files": [str(path)], "output": "crd", "name": name, "domain": domain})["crd"]


def _mutations(kube, mark):
    return kube.audit(since=mark, mutating=True, user=kube.user(PUBLISHER))


def writes(kube, mark):
    """Mutating requests of the publisher since ``mark`` that were not dry runs."""
    return [(e["verb"], e["path"]) for e in _mutations(kube, mark) if "dryRun=All" not in (e.get("query") or "")]


def dry_runs(kube, mark):
    return [e["path"] for e in _mutations(kube, mark) if "dryRun=All" in (e.get("query") or "")]


def values_schema(crd):
    return crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["values"]


def go(kube, crd, check_mode=False, **params):
    params.setdefault("wait_sleep", 0.05)
    params.setdefault("wait_timeout", 30)
    return publish.publish(dict(params, definition=crd, kubeconfig=kube.kubeconfig_for(PUBLISHER)), check_mode=check_mode)


def eventually(call, timeout=30):
    """The apiserver serves an updated schema shortly after the update (each apiserver swaps its CR handler asynchronously)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return call()
        except ClusterError as exc:
            if exc.status != 422 or time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def custom_resource(crd, name, values, namespace):
    spec = crd["spec"]
    return {"apiVersion": "%s/%s" % (spec["group"], spec["versions"][0]["name"]), "kind": spec["names"]["kind"],
            "metadata": {"name": name, "namespace": namespace}, "spec": {"version": "1.0.0", "values": values}}


def cr_path(crd, namespace, name=None):
    spec = crd["spec"]
    path = "/apis/%s/%s/namespaces/%s/%s" % (spec["group"], spec["versions"][0]["name"], namespace, spec["names"]["plural"])
    return path + ("/" + name if name else "")


def test_create_then_rerun_makes_no_write(kube, domain, tmp_path):
    crd = crd_of(tmp_path, "pubfirst", BASE_VALUES, domain)
    name = crd["metadata"]["name"]
    mark = kube.audit_mark()
    result = go(kube, crd)
    assert result["changed"] is True and result["action"] == "create" and result["old_found"] is False
    assert result["actions"] == ["create CRD %s by server-side apply" % name]
    assert result["findings"] == [] and result["breaking"] is False
    assert result["established"] is True and result["conditions"]["Established"]["status"] == "True"
    assert result["conditions"]["NamesAccepted"]["status"] == "True"
    assert result["crd"]["status"]["acceptedNames"]["kind"] == "Pubfirst" and "managedFields" not in result["crd"]["metadata"]
    assert result["diff"]["before"] == {} and result["diff"]["after"]["spec"]["group"] == "pubfirst.bundles.%s" % domain
    patches = [e for e in kube.audit(since=mark, verb="patch", user=kube.user(PUBLISHER)) if "dryRun" not in (e.get("query") or "")]
    assert len(patches) == 1 and "fieldManager=aicr-runtime" in patches[0]["query"] and patches[0]["code"] in (200, 201)
    # a server-side apply (the audit log has no content type): the API server recorded an Apply by aicr-runtime
    managed = kube.rest.get("%s/%s" % (kube_crd.BASE_PATH, name))["metadata"]["managedFields"]
    assert [(m["manager"], m["operation"]) for m in managed if m["manager"] == "aicr-runtime"] == [("aicr-runtime", "Apply")]

    mark = kube.audit_mark()
    again = go(kube, crd)
    assert again["changed"] is False and again["action"] == "unchanged" and again["actions"] == []
    assert again["old_found"] is True and again["findings"] == [] and again["established"] is True
    assert writes(kube, mark) == [] and len(dry_runs(kube, mark)) == 1
    assert again["diff"]["before"] == again["diff"]["after"]


def test_check_mode_creates_nothing(kube, domain, cluster, tmp_path):
    crd = crd_of(tmp_path, "pubcheck", BASE_VALUES, domain)
    mark = kube.audit_mark()
    result = go(kube, crd, check_mode=True)
    assert result["changed"] is True and result["action"] == "create" and result["established"] is False
    assert result["diff"]["after"]["spec"]["names"]["plural"] == "pubchecks" and "waited" not in result
    assert writes(kube, mark) == []
    assert kube_crd.read_live(cluster, crd["metadata"]["name"]) is None


def test_compatible_update_applies_and_diff_shows_it(kube, domain, cluster, tmp_path):
    crd = crd_of(tmp_path, "pubupdate", BASE_VALUES, domain)
    go(kube, crd)
    newer = crd_of(tmp_path, "pubupdate", BASE_VALUES + "# -- Extra arguments.\nextraArgs: []\n", domain)
    mark = kube.audit_mark()
    check = go(kube, newer, check_mode=True)
    assert check["changed"] is True and check["action"] == "update" and writes(kube, mark) == []
    assert "extraArgs" not in values_schema(check["diff"]["before"])["properties"]
    assert "extraArgs" in values_schema(check["diff"]["after"])["properties"]
    result = go(kube, newer)
    assert result["changed"] is True and result["action"] == "update" and result["breaking"] is False and result["established"] is True
    assert [verb for verb, _path in writes(kube, mark)] == ["patch"]
    live = kube_crd.read_live(cluster, crd["metadata"]["name"])
    assert "extraArgs" in values_schema(live)["properties"]
    assert go(kube, newer)["changed"] is False


def test_breaking_change_refused_then_allowed(kube, domain, cluster, admin, tmp_path):
    ns = kube.namespace
    crd = crd_of(tmp_path, "pubbreak", BASE_VALUES, domain)
    go(kube, crd)
    eventually(lambda: admin.request("POST", cr_path(crd, ns), body=custom_resource(crd, "old", {"replicaCount": 2, "logLevel": 3}, ns)))
    broken = crd_of(tmp_path, "pubbreak", BASE_VALUES.replace("logLevel: 2\n", "").replace("replicaCount: 1", "replicaCount: one"), domain)
    mark = kube.audit_mark()
    with pytest.raises(AicrError) as caught:
        go(kube, broken)
    msg = caught.value.msg
    assert "\n" not in msg
    assert msg.startswith("definition: 3 breaking change(s) to the live CRD pubbreaks.pubbreak.bundles.%s: " % domain)
    assert "existingFieldRemoval ^.spec.values.logLevel" in msg and "type ^.spec.values.replicaCount" in msg
    assert msg.endswith("allowed: compatible changes only, or allow_breaking: true")
    details = caught.value.details
    assert details["breaking"] is True and details["old_found"] is True
    assert {(f["rule"], f["path"]) for f in details["findings"] if f["severity"] == "error"} == {
        ("existingFieldRemoval", "^.spec.values.logLevel"), ("type", "^.spec.values.logLevel"), ("type", "^.spec.values.replicaCount")}
    assert _mutations(kube, mark) == []
    assert "logLevel" in values_schema(kube_crd.read_live(cluster, crd["metadata"]["name"]))["properties"]

    result = go(kube, broken, allow_breaking=True)
    assert result["changed"] is True and result["action"] == "update" and result["breaking"] is True
    assert result["actions"] == ["update CRD pubbreaks.pubbreak.bundles.%s by server-side apply (3 breaking change(s) allowed)" % domain]
    live = kube_crd.read_live(cluster, crd["metadata"]["name"])
    assert values_schema(live)["properties"]["replicaCount"]["type"] == "string"
    created = eventually(lambda: admin.request("POST", cr_path(crd, ns), body=custom_resource(crd, "new", {"replicaCount": "two", "image": {"tag": "v2"}}, ns)))
    assert created["spec"]["values"] == {"replicaCount": "two", "image": {"tag": "v2"}}
    with pytest.raises(ClusterError) as rejected:
        admin.request("POST", cr_path(crd, ns), body=custom_resource(crd, "bad", {"replicaCount": 3}, ns))
    assert rejected.value.status == 422
    # the same breaking CRD again: findings against the live CRD are gone, nothing to do
    assert go(kube, broken)["changed"] is False


def test_severities_relax_the_refusal(kube, domain, tmp_path):
    crd = crd_of(tmp_path, "pubsev", BASE_VALUES, domain)
    go(kube, crd)
    fewer = crd_of(tmp_path, "pubsev", BASE_VALUES.replace("logLevel: 2\n", ""), domain)
    result = go(kube, fewer, severities={"field_removed": "warn", "type_changed": "warn"})
    assert result["changed"] is True and result["breaking"] is False
    assert [(f["rule"], f["severity"]) for f in result["findings"] if f["path"] == "^.spec.values.logLevel"][0] == ("existingFieldRemoval", "warn")
    assert result["summary"].startswith("0 breaking change(s),")


def test_names_not_accepted_fails_at_once(kube, domain, tmp_path):
    first = crd_of(tmp_path, "pubnames", BASE_VALUES, domain)
    go(kube, first)
    clash = json.loads(json.dumps(first))
    clash["spec"]["names"].update(plural="othernames", singular="othername")
    clash["metadata"]["name"] = "othernames." + clash["spec"]["group"]
    began = time.monotonic()
    with pytest.raises(AicrError) as caught:
        go(kube, clash, wait_timeout=30)
    assert time.monotonic() - began < 20, "a names conflict fails at once, not at wait_timeout"
    assert caught.value.msg.startswith("definition: CRD othernames.pubnames.bundles.%s is not usable: names not accepted: " % domain)
    assert caught.value.details["conditions"]["NamesAccepted"]["status"] == "False"


def test_conflicts_with_another_manager(kube, domain, tmp_path):
    crd = crd_of(tmp_path, "pubowned", BASE_VALUES, domain)
    kube.rest.create(kube_crd.BASE_PATH, crd)  # created by another manager (the lab's admin; an Update, not an apply)
    changed = json.loads(json.dumps(crd))
    values_schema(changed)["properties"]["logLevel"]["description"] = "Verbosity."
    with pytest.raises(AicrError) as caught:
        go(kube, changed)
    assert "conflicts with fields owned by other managers" in caught.value.msg and caught.value.details["status"] == 409
    result = go(kube, changed, force_conflicts=True)
    assert result["changed"] is True and result["action"] == "update"
    assert go(kube, changed)["changed"] is False


def test_absent_deletes_and_waits(kube, domain, cluster, admin, tmp_path):
    ns = kube.namespace
    crd = crd_of(tmp_path, "pubgone", BASE_VALUES, domain)
    go(kube, crd)
    eventually(lambda: admin.request("POST", cr_path(crd, ns), body=custom_resource(crd, "one", {"replicaCount": 1}, ns)))
    mark = kube.audit_mark()
    check = go(kube, crd, check_mode=True, state="absent")
    assert check["changed"] is True and check["action"] == "delete" and writes(kube, mark) == []
    result = go(kube, crd, state="absent")
    assert result["changed"] is True and result["action"] == "delete" and "waited" in result
    assert kube_crd.read_live(cluster, crd["metadata"]["name"]) is None
    assert kube.get(cr_path(crd, ns, "one")) is None, "the API server removed the custom resources with their CRD"
    again = go(kube, crd, state="absent")
    assert again["changed"] is False and again["action"] == "absent"


def test_a_crd_being_deleted_is_waited_for_then_created_again(kube, domain, client, admin, tmp_path):
    """A CRD whose deletion waits for a custom resource's finalizer is not taken as installed: publication waits until it
    is gone, then creates it (check mode reads it as absent)."""
    crd = crd_of(tmp_path, "pubgone", BASE_VALUES, domain)
    name = crd["metadata"]["name"]
    assert go(kube, crd)["action"] == "create"
    ns = kube.namespace
    held = custom_resource(crd, "held", {"replicaCount": 2}, ns)
    held["metadata"]["finalizers"] = ["example.aicr.io/hold"]
    eventually(lambda: admin.request("POST", cr_path(crd, ns), body=held))
    kube.rest.delete("%s/%s" % (kube_crd.BASE_PATH, name))
    deadline = time.monotonic() + 30
    while not (kube.get("%s/%s" % (kube_crd.BASE_PATH, name)) or {}).get("metadata", {}).get("deletionTimestamp"):
        assert time.monotonic() < deadline, "the CRD never started terminating"
        time.sleep(0.05)

    mark = kube.audit_mark()
    planned = go(kube, crd, check_mode=True)
    assert planned["action"] == "create" and planned["old_found"] is False and writes(kube, mark) == []

    publisher = client(PUBLISHER)
    seen_terminating = threading.Event()
    original = publisher.request

    def watched_request(method, path, *args, **kwargs):
        answer = original(method, path, *args, **kwargs)
        if method == "GET" and path.endswith("/" + name) and (answer.get("metadata") or {}).get("deletionTimestamp"):
            seen_terminating.set()
        return answer

    publisher.request = watched_request
    outcome = {}
    worker = threading.Thread(target=lambda: outcome.update(result=publish.publish(
        {"definition": crd, "wait_sleep": 0.05, "wait_timeout": 60}, cluster=publisher)))
    worker.start()
    assert seen_terminating.wait(30), "publication never read the terminating CRD"
    for _attempt in range(10):  # the CRD's finalizer controller marks the CR deleted meanwhile: a 409, read it again
        item = admin.get_path(cr_path(crd, ns, "held"))
        item["metadata"]["finalizers"] = []
        try:
            admin.request("PUT", cr_path(crd, ns, "held"), body=item)  # the CR goes, then the CRD
            break
        except ClusterError as exc:
            if exc.status != 409:
                raise
    worker.join(90)
    result = outcome["result"]
    assert result["action"] == "create" and result["changed"] is True and result["established"] is True
    live = kube.get("%s/%s" % (kube_crd.BASE_PATH, name))
    assert live is not None and not live["metadata"].get("deletionTimestamp")


# --- state: absent deletes only a CRD this collection manages (on a double) ---------------------------------------------------
