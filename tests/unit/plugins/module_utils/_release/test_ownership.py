"""Prune and state=absent remove only what the stack's inventory lists and the live cluster still says is this stack's;
another stack's (or nobody's) release or object is not upgraded unless adopt: true, and never removed."""

import json

from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import GatedRelease, Options
from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan
from ansible_collections.aicr.runtime.plugins.module_utils._release.ownership import object_owner


def comp(name, chart=None, post=(), namespace="apps"):
    return {"name": name, "type": "Helm", "chart": name if chart is None else chart, "repository": "https://charts.example/repo",
            "version": "1.0.0", "namespace": namespace, "values": {}, "dependencies": [], "pre_manifest_paths": [],
            "manifest_paths": list(post), "manifest_only": chart == ""}


def run(cluster, helm, recipe, stack="mine", **opts):
    opts.setdefault("poll_interval", 0.01)
    opts.setdefault("timeout", 10)
    return GatedRelease(cluster, helm, build_plan(recipe), Options(stack=stack, **opts)).run()


def charts(fakes):
    return {"agent": lambda values, release, namespace: [fakes.deployment(release)]}


def forge_inventory(cluster, stack, components):
    name = "aicr-runtime-%s-inventory" % stack
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "aicr-system"},  # the default lease_namespace
                   "data": {"inventory": json.dumps({"components": components, "order": list(components)})}})


def test_a_forged_inventory_entry_naming_an_object_elsewhere_is_left_alone(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    # someone else's ConfigMap in kube-system, created by another field manager and not labelled for this stack
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cluster-dns", "namespace": "kube-system"}, "data": {"a": "1"}})
    recipe = {"recipe_name": "mine", "components": [comp("agent")]}
    first = run(cluster, helm, recipe)
    assert first["summary"]["failed"] == [] and "create namespace aicr-system" in first["actions"]
    # the inventory lives in the dedicated namespace, never in `default`
    assert cluster.get("v1", "ConfigMap", "aicr-runtime-mine-inventory", "aicr-system") is not None
    assert cluster.get("v1", "ConfigMap", "aicr-runtime-mine-inventory", "default") is None
    for state, prune in (("present", True), ("absent", False)):
        forge_inventory(cluster, "mine", {
            "agent": {"namespace": "apps", "release": "agent", "dependencies": [], "objects": []},
            "ghost": {"namespace": "kube-system", "release": None, "dependencies": [],
                      "objects": [{"id": "ghost-post-configmap-cluster-dns", "apiVersion": "v1", "kind": "ConfigMap", "name": "cluster-dns",
                                   "namespace": "kube-system", "wave": "post"}]}})
        result = run(cluster, helm, recipe, state=state, prune=prune)
        assert cluster.get("v1", "ConfigMap", "cluster-dns", "kube-system") is not None, state
        seen = (result["actions"], [(c["name"], c["phase"], c["message"]) for c in result["components"]])
        assert any("left ConfigMap kube-system/cluster-dns alone" in w and "belongs to nobody" in w for w in result.get("warnings", [])), seen
        assert any(a.startswith("leave ConfigMap kube-system/cluster-dns alone") for a in result["actions"])
    assert ("delete", "ConfigMap", "kube-system", "cluster-dns") not in list(cluster.audit)


def test_an_object_labelled_for_this_stack_by_another_field_manager_is_not_deleted(fakes):
    cluster = fakes.FakeCluster()
    metadata = {"name": "x", "namespace": "default", "labels": {"aicr.io/stack": "mine"}, "managedFields": [{"manager": "kubectl"}]}
    live = cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata})
    assert "another field manager" in object_owner(live, "mine")
    applied = cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "y", "namespace": "default", "labels": {"aicr.io/stack": "mine"}}})
    assert object_owner(applied, "mine") is None
    assert object_owner(applied, "other") == "stack mine"


def test_another_stacks_release_is_neither_upgraded_nor_uninstalled_unless_adopted(fakes):
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, charts(fakes))
    recipe = {"recipe_name": "x", "components": [comp("agent")]}
    assert run(cluster, helm, recipe, stack="theirs")["summary"]["failed"] == []
    upgrades = len(helm.upgrades())
    recipe["components"][0]["values"] = {"replicas": 3}
    present = run(cluster, helm, recipe, stack="mine")
    [agent] = present["components"]
    assert agent["phase"] == "Failed"
    assert agent["message"] == ("component agent: release apps/agent belongs to stack theirs, not stack mine: it is not upgraded "
                                "(set adopt: true to take it over)")
    assert len(helm.upgrades()) == upgrades
    # absent removes only what the inventory of stack mine lists: another stack's release is left alone (never an advice to
    # adopt it, which would uninstall that stack's release), and absent succeeds
    for adopt in (False, True):
        absent = run(cluster, helm, recipe, stack="mine", state="absent", adopt=adopt)
        [agent] = absent["components"]
        assert agent["phase"] == "Unchanged" and "belongs to stack theirs" in agent["message"], agent
        assert "adopt" not in agent["message"] and absent["summary"]["failed"] == []
        assert any(w.startswith("left release apps/agent alone") for w in absent["warnings"]), absent["warnings"]
    assert [c for c in helm.calls if c[0] == "uninstall"] == []
    adopted = run(cluster, helm, recipe, stack="mine", adopt=True)
    assert adopted["components"][0]["phase"] == "Ready" and len(helm.upgrades()) == upgrades + 1
    # now it is this stack's: removed without adopt
    assert run(cluster, helm, recipe, stack="mine", state="absent")["components"][0]["phase"] == "Removed"


def test_an_existing_object_of_nobody_is_not_overwritten_unless_adopted(fakes, tmp_path):
    import yaml
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, {})
    cluster.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-config", "namespace": "apps"}, "data": {"site": "theirs"}})
    path = tmp_path / "cfg.yaml"
    path.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-config"}, "data": {"site": "lab"}}))
    recipe = {"recipe_name": "x", "components": [comp("config", chart="", post=[str(path)])]}
    [config] = run(cluster, helm, recipe)["components"]
    assert config["phase"] == "Failed" and "belongs to nobody" in config["message"] and "set adopt: true" in config["message"]
    assert cluster.get("v1", "ConfigMap", "site-config", "apps")["data"] == {"site": "theirs"}
    assert run(cluster, helm, recipe, adopt=True)["components"][0]["phase"] == "Ready"
    assert cluster.get("v1", "ConfigMap", "site-config", "apps")["data"] == {"site": "lab"}
