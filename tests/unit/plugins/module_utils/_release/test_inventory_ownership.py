"""Authority only from the inventory the stack alone writes (issue 35): prune and state=absent remove only what the
stack's inventory lists *and* what the live cluster still holds as the stack recorded it; a release or object labelled
for the stack that the inventory does not list is reported (``foreign_claims``, a ``foreign claim:`` warning), never
removed. Ownership is read again right before each mutation, and the inventory is written ahead of every change."""

import json

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import GatedRelease, Options
from ansible_collections.aicr.runtime.plugins.module_utils._release.inventory import Inventory
from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan
from doubles import encode_release
from release_helpers import comp, write

COREDNS = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "coredns", "namespace": "kube-system"}, "spec": {"replicas": 2}}


def run(cluster, helm, recipe, stack="mine", on_transition=None, **opts):
    opts.setdefault("poll_interval", 0.01)
    opts.setdefault("timeout", 10)
    return GatedRelease(cluster, helm, build_plan(recipe), Options(stack=stack, **opts), on_transition=on_transition).run()


def charts(fakes):
    return dict((name, (lambda values, release, namespace: [fakes.deployment(release)])) for name in ("agent", "tool", "web", "other"))


def inventory_of(cluster, stack="mine"):
    inv = Inventory(cluster, stack, "aicr-system")
    cm = cluster.get("v1", "ConfigMap", inv.name, inv.namespace)
    return json.loads(cm["data"]["inventory"]) if cm else None


def forge_release(cluster, namespace, name, stack, docs, digest="forged", version=1):
    """What a tenant who may write Secrets in ``namespace`` writes: a helm release record labelled for ``stack``."""
    record = {"name": name, "namespace": namespace, "version": version, "info": {"status": "deployed"},
              "chart": {"metadata": {"name": name, "version": "1.0.0"}}, "config": {}, "manifest": "\n---\n".join(yaml.safe_dump(d) for d in docs)}
    labels = {"owner": "helm", "name": name, "status": "deployed", "version": str(version), "aicr.io/stack": stack, "aicr.io/component": name,
              "aicr.io/digest": digest}
    return cluster.create({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                           "metadata": {"name": "sh.helm.release.v1.%s.v%d" % (name, version), "namespace": namespace, "labels": labels},
                           "data": {"release": encode_release(record)}})


def latest_secret(cluster, name, namespace):
    secrets = cluster.list("v1", "Secret", namespace=namespace, label_selector="owner=helm,name=%s" % name)
    return max(secrets, key=lambda s: int(s["metadata"]["labels"]["version"]))


def uninstalls(helm):
    return [c for c in helm.calls if c[0] == "uninstall"]


def test_a_forged_release_in_another_namespace_is_neither_pruned_nor_removed_and_is_reported(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    cluster.create(dict(COREDNS))
    recipe = {"recipe_name": "mine", "components": [comp("agent"), comp("tool", namespace="tenant-a")]}
    assert run(cluster, helm, recipe)["summary"]["failed"] == []
    # the tenant may write Secrets in tenant-a (where the stack deploys tool) and in tenant-b (where it deploys nothing)
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "tenant-b"}})
    forge_release(cluster, "tenant-a", "evil", "mine", [COREDNS])
    forge_release(cluster, "tenant-b", "evil2", "mine", [COREDNS])
    for state, prune in (("present", True), ("absent", False)):
        result = run(cluster, helm, recipe, state=state, prune=prune)
        assert cluster.get("apps/v1", "Deployment", "coredns", "kube-system") is not None, state
        assert [c for c in uninstalls(helm) if c[1] in ("evil", "evil2")] == [], state
        assert latest_secret(cluster, "evil", "tenant-a") is not None
        # both reported: the cluster-wide list (the identity may) sees tenant-b too, where the stack deploys nothing
        found = sorted(result["foreign_claims"], key=lambda c: c["name"])
        assert [dict(c, reason=None, message=None) for c in found] == [
            {"kind": "release", "name": name, "namespace": namespace, "claims_stack": "mine", "reason": None, "message": None}
            for name, namespace in (("evil", "tenant-a"), ("evil2", "tenant-b"))]
        assert all("not in its inventory" in c["reason"] for c in found)
        for where in ("tenant-a/evil", "tenant-b/evil2"):
            assert any(w.startswith("foreign claim: release %s " % where) for w in result["warnings"]), result["warnings"]
        assert "evil" not in [c["name"] for c in result["components"]]
    assert ("delete", "Deployment", "kube-system", "coredns") not in cluster.audit
    assert sorted(c[1] for c in uninstalls(helm)) == ["agent", "tool"]  # absent removed the stack's own releases


def _recording_lists(cluster, cluster_wide_secrets=True):
    """Record every list call; with ``cluster_wide_secrets=False`` a Secret list of every namespace is refused (403), as
    for a release identity bound per namespace."""
    from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError

    lists = []
    real_list = cluster.list

    def recording_list(api_version, kind, namespace=None, **kwargs):
        if "aicr.io/stack=" in (kwargs.get("label_selector") or ""):  # the labelled-release lists, not a release's own reads
            lists.append((kind, namespace))
        if kind == "Secret" and namespace is None and not cluster_wide_secrets:
            raise ClusterError("list secrets: Kubernetes API answered 403 forbidden", status=403)
        return real_list(api_version, kind, namespace=namespace, **kwargs)

    cluster.list = recording_list
    return lists


def test_a_release_identity_bound_per_namespace_lists_the_plans_and_the_inventorys_namespaces(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    lists = _recording_lists(cluster, cluster_wide_secrets=False)
    recipe = {"recipe_name": "mine", "components": [comp("agent"), comp("tool", namespace="tools")]}
    run(cluster, helm, recipe)
    result = run(cluster, helm, {"recipe_name": "mine", "components": [comp("agent")]}, prune=True)
    assert result["summary"]["failed"] == [], result
    assert ("Secret", "tools") in lists  # the inventory's namespace, though the recipe has nothing there any more
    assert ("Secret", None) in lists  # tried once per run, refused: the fallback is per namespace


def test_labelled_releases_are_listed_once_cluster_wide_where_the_identity_may(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    lists = _recording_lists(cluster)
    run(cluster, helm, {"recipe_name": "mine", "components": [comp("agent"), comp("tool", namespace="tools")]})
    assert lists and all(namespace is None for kind, namespace in lists if kind == "Secret"), lists


def test_a_forged_labelled_object_not_in_the_inventory_is_not_deleted(fakes, tmp_path):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, {})
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    # labelled for stack mine, even with the collection's field manager name: all of it is data a tenant can write
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-config", "namespace": "apps", "labels": {"aicr.io/stack": "mine"}},
                   "data": {"site": "tenant"}})
    path = write(tmp_path, "cfg.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-config"}, "data": {"site": "lab"}}])
    recipe = {"recipe_name": "x", "components": [comp("config", chart="", post=[path])]}
    result = run(cluster, helm, recipe, state="absent")
    assert cluster.get("v1", "ConfigMap", "site-config", "apps")["data"] == {"site": "tenant"}
    assert [dict(c, message=None) for c in result["foreign_claims"]] == [{
        "kind": "ConfigMap", "apiVersion": "v1", "name": "site-config", "namespace": "apps", "claims_stack": "mine",
        "reason": "labelled for stack mine but not in its inventory", "message": None}]
    assert result["foreign_claims"][0]["message"] in result["warnings"]
    assert any(w.startswith("foreign claim: ConfigMap apps/site-config ") for w in result["warnings"]), result["warnings"]
    assert result["summary"]["failed"] == []


def test_the_inventory_records_each_release_secret_and_object_as_the_stack_wrote_it(fakes, tmp_path):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    path = write(tmp_path, "cfg.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-config"}, "data": {"site": "lab"}}])
    recipe = {"recipe_name": "x", "components": [comp("web"), comp("config", chart="", post=[path])]}
    assert run(cluster, helm, recipe)["summary"]["failed"] == []
    known = inventory_of(cluster)["components"]
    secret = latest_secret(cluster, "web", "apps")
    digest = secret["metadata"]["labels"]["aicr.io/digest"]
    # it passed its gate: revision 1 is its last known good (what on_failure: rollback goes back to)
    assert known["web"]["release_record"] == {"uid": secret["metadata"]["uid"], "revision": 1, "digest": digest,
                                              "lastKnownGood": {"revision": 1, "digest": digest}}
    [ref] = known["config"]["objects"]
    assert ref["uid"] == cluster.get("v1", "ConfigMap", "site-config", "apps")["metadata"]["uid"] and len(ref["digest"]) == 64
    assert known["config"]["release"] is None and "release_record" not in known["config"]


def test_an_inventory_listed_object_re_created_by_someone_else_is_not_pruned(fakes, tmp_path):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    path = write(tmp_path, "cfg.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-config"}, "data": {"site": "lab"}}])
    recipe = {"recipe_name": "x", "components": [comp("agent"), comp("config", chart="", post=[path])]}
    assert run(cluster, helm, recipe)["summary"]["failed"] == []
    live = cluster.get("v1", "ConfigMap", "site-config", "apps")
    # deleted and written again by someone else, with the stack's label (and field manager name)
    cluster.delete("v1", "ConfigMap", "site-config", "apps")
    cluster.apply(dict(live, metadata={"name": "site-config", "namespace": "apps", "labels": live["metadata"]["labels"]}))
    result = run(cluster, helm, {"recipe_name": "x", "components": [comp("agent")]}, prune=True)
    assert cluster.get("v1", "ConfigMap", "site-config", "apps") is not None
    assert any("left ConfigMap apps/site-config alone" in w and "re-created" in w for w in result["warnings"]), result["warnings"]
    assert result["summary"]["failed"] == []


def test_an_inventory_listed_release_whose_live_digest_no_longer_matches_is_not_uninstalled(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    cluster.create(dict(COREDNS))
    recipe = {"recipe_name": "x", "components": [comp("agent"), comp("web")]}
    assert run(cluster, helm, recipe)["summary"]["failed"] == []
    secret = latest_secret(cluster, "web", "apps")
    # someone who may write Secrets in apps rewrites the stack's release record in place (same uid): another manifest, digest
    record = {"name": "web", "namespace": "apps", "version": 1, "info": {"status": "deployed"}, "chart": {"metadata": {"name": "web", "version": "1.0.0"}},
              "config": {}, "manifest": yaml.safe_dump(COREDNS)}
    secret["data"], secret["metadata"]["labels"]["aicr.io/digest"] = {"release": encode_release(record)}, "tampered"
    cluster.replace(secret)
    for state, prune in (("present", True), ("absent", False)):
        result = run(cluster, helm, {"recipe_name": "x", "components": [comp("agent")]}, state=state, prune=prune)
        assert [c for c in uninstalls(helm) if c[1] == "web"] == [], state
        assert cluster.get("apps/v1", "Deployment", "coredns", "kube-system") is not None
        [found] = result["foreign_claims"]
        assert (found["kind"], found["namespace"], found["name"], found["claims_stack"]) == ("release", "apps", "web", "mine")
        assert any(w.startswith("foreign claim: release apps/web ") for w in result["warnings"]), result["warnings"]
        assert result["summary"]["failed"] == []
        if state == "present":  # not what the stack recorded: forgotten, so what is there now is a foreign claim from here on
            assert "carries digest tampered, not the one stack mine recorded" in found["reason"], found
            assert "web" not in inventory_of(cluster)["components"]
        else:
            assert found["reason"] == "labelled for stack mine but not in its inventory"


def test_a_release_another_stack_adopted_is_released_not_uninstalled_and_prune_succeeds(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    recipe = {"recipe_name": "x", "components": [comp("other"), comp("web")]}
    assert run(cluster, helm, recipe, stack="A")["summary"]["failed"] == []
    adopted = run(cluster, helm, {"recipe_name": "x", "components": [comp("web")]}, stack="B", adopt=True)
    assert adopted["summary"]["failed"] == [] and latest_secret(cluster, "web", "apps")["metadata"]["labels"]["aicr.io/stack"] == "B"
    assert "web" in inventory_of(cluster, "A")["components"]
    pruned = run(cluster, helm, {"recipe_name": "x", "components": [comp("other")]}, stack="A", prune=True)
    assert pruned["summary"]["failed"] == [], pruned.get("failed_message")
    assert uninstalls(helm) == []
    assert any("release apps/web: released to stack B" in w for w in pruned["warnings"]), pruned["warnings"]
    assert not any("adopt: true" in text for text in pruned["warnings"] + [c["message"] for c in pruned["components"]])
    assert "web" not in inventory_of(cluster, "A")["components"]
    again = run(cluster, helm, {"recipe_name": "x", "components": [comp("other")]}, stack="A", prune=True)
    assert again["changed"] is False and again["summary"]["failed"] == [] and not again.get("warnings")
    # B removes it: it is B's now
    assert run(cluster, helm, {"recipe_name": "x", "components": [comp("web")]}, stack="B", state="absent")["summary"]["failed"] == []
    assert [c[1] for c in uninstalls(helm)] == ["web"]


def test_ownership_is_read_again_right_before_helm_upgrade(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    recipe = {"recipe_name": "x", "components": [comp("agent")]}
    assert run(cluster, helm, recipe)["summary"]["failed"] == []
    upgrades = len(helm.upgrades())

    def taken_meanwhile(result):  # after the survey, before the upgrade: another stack takes the release over
        if result["name"] == "agent" and result["phase"] == "Deploying":
            secret = latest_secret(cluster, "agent", "apps")
            secret["metadata"]["labels"]["aicr.io/stack"] = "theirs"
            cluster.replace(secret)

    recipe["components"][0]["values"] = {"replicas": 3}
    [agent] = run(cluster, helm, recipe, on_transition=taken_meanwhile)["components"]
    assert agent["phase"] == "Failed" and "belongs to stack theirs" in agent["message"], agent
    assert len(helm.upgrades()) == upgrades


def test_ownership_is_read_again_right_before_helm_uninstall(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    assert run(cluster, helm, {"recipe_name": "x", "components": [comp("agent"), comp("web")]})["summary"]["failed"] == []

    def taken_meanwhile(result):
        if result["name"] == "web" and result["phase"] == "Deploying":  # the removal step starts
            secret = latest_secret(cluster, "web", "apps")
            secret["metadata"]["labels"]["aicr.io/stack"] = "theirs"
            cluster.replace(secret)

    result = run(cluster, helm, {"recipe_name": "x", "components": [comp("agent")]}, prune=True, on_transition=taken_meanwhile)
    assert uninstalls(helm) == [] and result["summary"]["failed"] == []
    assert any("released to stack theirs" in w for w in result["warnings"])


def test_the_inventory_is_written_ahead_so_a_failing_final_write_loses_nothing(fakes, tmp_path):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    inventory = Inventory(cluster, "mine", "aicr-system")
    path = write(tmp_path, "cfg.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-config"}, "data": {"site": "lab"}}])
    recipe = {"recipe_name": "x", "components": [comp("agent"), comp("config", chart="", post=[path])]}
    ready = set()

    def then_the_api_server_refuses_the_inventory(result):
        if result["phase"] == "Ready":
            ready.add(result["name"])
        if ready == {"agent", "config"}:
            cluster.fail_apply[("ConfigMap", inventory.name)] = "etcdserver: request timed out"

    with pytest.raises(AicrError):
        run(cluster, helm, recipe, on_transition=then_the_api_server_refuses_the_inventory)
    del cluster.fail_apply[("ConfigMap", inventory.name)]
    known = inventory_of(cluster)["components"]
    assert [r["name"] for r in known["config"]["objects"]] == ["site-config"]
    assert known["agent"]["release"] == "agent" and known["agent"]["release_record"]["next_digest"]
    # the objects and the release the interrupted run made are known: a later prune removes them
    result = run(cluster, helm, {"recipe_name": "x", "components": [comp("other")]}, prune=True)
    assert result["summary"]["failed"] == [], result.get("failed_message")
    assert cluster.get("v1", "ConfigMap", "site-config", "apps") is None
    assert [c[1] for c in uninstalls(helm)] == ["agent"]
    assert sorted(inventory_of(cluster)["components"]) == ["other"]


def test_an_inventory_another_field_manager_wrote_is_not_trusted(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    victim = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cluster-dns", "namespace": "kube-system", "labels": {"aicr.io/stack": "mine"}}}
    cluster.apply(victim)  # labelled, and even applied under the collection's field manager name
    inventory = Inventory(cluster, "mine", "aicr-system")
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "aicr-system"}})
    ghost = {"namespace": "kube-system", "release": None, "dependencies": [],
             "objects": [{"id": "ghost-post-configmap-cluster-dns", "apiVersion": "v1", "kind": "ConfigMap", "name": "cluster-dns",
                          "namespace": "kube-system", "wave": "post"}]}
    recipe = {"recipe_name": "x", "components": [comp("agent")]}
    for state, prune in (("present", True), ("absent", False)):
        cluster.delete("v1", "ConfigMap", inventory.name, "aicr-system")
        cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": inventory.name, "namespace": "aicr-system"},  # a plain create
                        "data": {"inventory": json.dumps({"components": {"ghost": ghost}, "order": ["ghost"]})}})
        result = run(cluster, helm, recipe, state=state, prune=prune)
        assert cluster.get("v1", "ConfigMap", "cluster-dns", "kube-system") is not None, state
        assert any(w.startswith("inventory ConfigMap aicr-system/%s was not written by aicr-runtime" % inventory.name) for w in result["warnings"])
        assert "ghost" not in [c["name"] for c in result["components"]]
    assert cluster.get("v1", "ConfigMap", inventory.name, "aicr-system") is not None  # not the stack's: not deleted either


def test_an_inventory_from_before_records_is_read_and_removes_as_it_did(fakes, tmp_path):
    """Backwards: an entry without release_record / uid is trusted for what it names and checked by labels as before."""
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    path = write(tmp_path, "cfg.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-config"}, "data": {"site": "lab"}}])
    recipe = {"recipe_name": "x", "components": [comp("agent"), comp("web"), comp("config", chart="", post=[path])]}
    assert run(cluster, helm, recipe)["summary"]["failed"] == []
    inventory = Inventory(cluster, "mine", "aicr-system")
    old = inventory_of(cluster)
    for entry in old["components"].values():
        entry.pop("release_record", None)
        for ref in entry["objects"]:
            ref.pop("uid", None)
            ref.pop("digest", None)
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": inventory.name, "namespace": "aicr-system"},
                   "data": {"inventory": json.dumps(old)}})
    mutations = len(cluster.mutations())
    assert run(cluster, helm, recipe)["changed"] is False and len(cluster.mutations()) == mutations  # read as it is: no rewrite
    result = run(cluster, helm, {"recipe_name": "x", "components": [comp("agent")]}, prune=True)
    assert result["summary"]["failed"] == [] and result["foreign_claims"] == []
    assert [c[1] for c in uninstalls(helm)] == ["web"] and cluster.get("v1", "ConfigMap", "site-config", "apps") is None


def test_an_inventory_whose_document_another_field_manager_edited_is_not_trusted(fakes, tmp_path):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    path = write(tmp_path, "cfg.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-config"}, "data": {"site": "lab"}}])
    recipe = {"recipe_name": "x", "components": [comp("agent"), comp("config", chart="", post=[path])]}
    assert run(cluster, helm, recipe)["summary"]["failed"] == []
    inventory = Inventory(cluster, "mine", "aicr-system")
    cm = cluster.get("v1", "ConfigMap", inventory.name, "aicr-system")
    # `kubectl edit`: the API server records the editor as the manager of data.inventory (aicr-runtime keeps the labels)
    cm["metadata"]["managedFields"].append({"manager": "kubectl-edit", "operation": "Update", "fieldsV1": {"f:data": {"f:inventory": {}}}})
    cluster.replace(cm)
    result = run(cluster, helm, {"recipe_name": "x", "components": [comp("agent")]}, prune=True)
    assert cluster.get("v1", "ConfigMap", "site-config", "apps") is not None  # nothing removed on an edited inventory's word
    assert any(w.startswith("inventory ConfigMap aicr-system/%s was not written by aicr-runtime (field managers: aicr-runtime, kubectl-edit)"
                            % inventory.name) for w in result["warnings"]), result["warnings"]
    assert [c["name"] for c in result["foreign_claims"]] == ["agent"] and uninstalls(helm) == []


def test_a_listed_release_rewritten_since_the_stack_recorded_it_is_not_upgraded_over(fakes):
    """helm upgrade deletes what the stored manifest has and the new one lacks: a release record someone rewrote (a
    manifest naming kube-system/coredns) is not upgraded over, whatever its label says."""
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    cluster.create(dict(COREDNS))
    recipe = {"recipe_name": "x", "components": [comp("web")]}
    assert run(cluster, helm, recipe)["summary"]["failed"] == []
    secret = latest_secret(cluster, "web", "apps")
    secret["metadata"]["labels"]["aicr.io/digest"] = "tampered"
    cluster.replace(secret)
    upgrades = len(helm.upgrades())
    recipe["components"][0]["values"] = {"replicas": 3}
    result = run(cluster, helm, recipe)
    [web] = result["components"]
    assert web["phase"] == "Failed" and "is not what stack mine recorded" in web["message"] and "carries digest tampered" in web["message"], web
    assert len(helm.upgrades()) == upgrades
    assert [(c["kind"], c["namespace"], c["name"]) for c in result["foreign_claims"]] == [("release", "apps", "web")]


def test_the_plan_says_a_leftover_release_another_stack_adopted_is_not_uninstalled(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    assert run(cluster, helm, {"recipe_name": "x", "components": [comp("other"), comp("web")]}, stack="A")["summary"]["failed"] == []
    assert run(cluster, helm, {"recipe_name": "x", "components": [comp("web")]}, stack="B", adopt=True)["summary"]["failed"] == []
    plan = run(cluster, helm, {"recipe_name": "x", "components": [comp("other")]}, stack="A", prune=True, check_mode=True)
    [web] = [c for c in plan["components"] if c["name"] == "web"]
    assert web["reason"].endswith("its release is not uninstalled: released to stack B"), web
    assert any(a.startswith("would remove web (") and "released to stack B" in a for a in plan["actions"]), plan["actions"]
