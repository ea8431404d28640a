"""Drift (issue 39, item 1): every object of a release and of a manifest component against what the stack last applied."""

import copy
import threading

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._release import drift
from ansible_collections.aicr.runtime.plugins.module_utils._stack import model
from release_helpers import comp, engine, write

EDIT = {"manager": "kubectl-edit", "operation": "Update",
        "fieldsV1": {"f:spec": {"f:template": {"f:spec": {"f:containers": {'k:{"name":"c"}': {"f:image": {}}}}}}}}
SCALE = {"manager": "kube-controller-manager", "operation": "Update", "subresource": "scale", "fieldsV1": {"f:spec": {"f:replicas": {}}}}


@pytest.fixture
def lab(tmp_path, fakes):
    """A release rendering a Deployment, a ConfigMap and a Secret; a manifest component with one ConfigMap."""
    cluster = fakes.FakeCluster()

    def app(values, release, namespace):
        return [fakes.deployment(release), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": release + "-settings"}, "data": {"a": "1"}},
                {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": release + "-token"}, "data": {"token": "c2VjcmV0LXZhbHVl"}}]

    helm = fakes.FakeHelm(cluster, {"app": app})
    cfg = write(tmp_path, "cfg.yaml", [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "site-config"}, "data": {"site": "lab"}}])
    recipe = {"recipe_name": "example", "components": [comp("app"), comp("config", chart="", post=[cfg])]}
    assert "failed_message" not in engine(cluster, helm, recipe).run()
    return cluster, helm, recipe


def edit(cluster, kind, name, change, manager=None, api_version="v1"):
    """``change`` the stored object as another identity would: ``manager`` (default: kubectl-edit owning the image) added."""
    key = (api_version, kind, "apps", name)
    obj = cluster.objects[key]
    change(obj)
    obj["metadata"]["managedFields"] = list(obj["metadata"].get("managedFields") or []) + [copy.deepcopy(manager or EDIT)]


def set_image(obj):
    obj["spec"]["template"]["spec"]["containers"][0]["image"] = "busybox:evil"


def by_name(result, name):
    return [c for c in result["components"] if c["name"] == name][0]


def drift_lab(cluster):
    edit(cluster, "Deployment", "app", set_image, api_version="apps/v1")
    del cluster.objects[("v1", "ConfigMap", "apps", "app-settings")]


def test_report_names_each_drifted_object_with_paths_and_manager_and_writes_nothing(lab):
    cluster, helm, recipe = lab
    drift_lab(cluster)
    mutations, upgrades = len(cluster.mutations()), len(helm.upgrades())
    result = engine(cluster, helm, recipe, drift="report").run()
    assert "failed_message" not in result, result["failed_message"]
    assert result["changed"] is False and result["actions"] == []
    assert len(cluster.mutations()) == mutations and len(helm.upgrades()) == upgrades
    found = by_name(result, "app")["drift"]
    assert [(e["kind"], e["name"], e["state"]) for e in found] == [("Deployment", "app", "drifted"), ("ConfigMap", "app-settings", "missing")]
    assert found[0]["fields"] == [{"path": "/spec/template/spec/containers/0/image", "manager": "kubectl-edit"}]
    assert "body" not in found[0] and "before" not in found[0]
    assert by_name(result, "config")["drift"] == []
    assert result["summary"]["drifted"] == ["app"]


def test_correct_reapplies_exactly_the_drifted_objects_and_says_so(lab):
    cluster, helm, recipe = lab
    drift_lab(cluster)
    mutations, upgrades = len(cluster.mutations()), len(helm.upgrades())
    result = engine(cluster, helm, recipe, drift="correct").run()
    assert "failed_message" not in result, result["failed_message"]
    assert len(helm.upgrades()) == upgrades, "never a helm upgrade for drift"
    applied = [m[1:] for m in cluster.mutations()[mutations:] if m[0] == "apply"]
    assert applied == [("Deployment", "apps", "app"), ("ConfigMap", "apps", "app-settings")]
    assert cluster.get("apps/v1", "Deployment", "app", "apps")["spec"]["template"]["spec"]["containers"][0]["image"] == "busybox"
    assert cluster.get("v1", "ConfigMap", "app-settings", "apps")["data"] == {"a": "1"}
    corrections = [a for a in result["actions"] if a.startswith("correct drift")]
    assert corrections == ["correct drift of app: Deployment apps/app (/spec/template/spec/containers/0/image by kubectl-edit)",
                           "correct drift of app: ConfigMap apps/app-settings (missing)"]
    assert by_name(result, "app")["phase"] == "Ready" and result["changed"] is True
    mutations = len(cluster.mutations())
    again = engine(cluster, helm, recipe, drift="correct").run()
    assert again["changed"] is False and by_name(again, "app")["drift"] == []
    assert [m for m in cluster.mutations()[mutations:] if m[1] != "Lease"] == []


def test_check_mode_lists_what_correct_would_do_and_the_diff_hides_secret_data(lab):
    cluster, helm, recipe = lab
    drift_lab(cluster)
    edit(cluster, "Secret", "app-token", lambda o: o["data"].update(token="b3RoZXItdmFsdWU="),
         manager={"manager": "kubectl-edit", "fieldsV1": {"f:data": {"f:token": {}}}})
    mutations = len(cluster.mutations())
    result = engine(cluster, helm, recipe, drift="correct", check_mode=True, diff=True).run()
    assert len(cluster.mutations()) == mutations
    assert result["changed"] is True
    assert "would correct drift of app: Deployment apps/app (/spec/template/spec/containers/0/image by kubectl-edit)" in result["actions"]
    assert "would correct drift of app: Secret apps/app-token (/data/token by kubectl-edit)" in result["actions"]
    text = repr(result)
    assert "c2VjcmV0LXZhbHVl" not in text and "b3RoZXItdmFsdWU=" not in text
    deployment = [d for d in result["diff"] if "Deployment" in d["before_header"]][0]
    assert yaml.safe_load(deployment["before"]) == {"/spec/template/spec/containers/0/image": "busybox:evil"}
    assert yaml.safe_load(deployment["after"]) == {"/spec/template/spec/containers/0/image": "busybox"}
    secret = [d for d in result["diff"] if "Secret" in d["before_header"]][0]
    assert yaml.safe_load(secret["before"]) == {"/data/token": "<hidden>"}


def test_replicas_an_hpa_owns_are_not_drift_and_never_forced_back(lab):
    cluster, helm, recipe = lab
    edit(cluster, "Deployment", "app", lambda o: o["spec"].update(replicas=5), manager=SCALE, api_version="apps/v1")
    result = engine(cluster, helm, recipe, drift="correct").run()
    assert by_name(result, "app")["drift"] == []
    assert cluster.get("apps/v1", "Deployment", "app", "apps")["spec"]["replicas"] == 5


def test_replicas_our_manager_owns_are_drift(lab):
    cluster, helm, recipe = lab
    edit(cluster, "Deployment", "app", lambda o: o["spec"].update(replicas=5), manager={"manager": "helm", "fieldsV1": {"f:spec": {"f:replicas": {}}}},
         api_version="apps/v1")
    found = by_name(engine(cluster, helm, recipe, drift="report").run(), "app")["drift"]
    assert found[0]["fields"] == [{"path": "/spec/replicas", "manager": "helm"}]


def test_drift_ignore_names_fields_that_are_never_drift(lab):
    cluster, helm, recipe = lab
    edit(cluster, "Deployment", "app", set_image, api_version="apps/v1")
    result = engine(cluster, helm, recipe, drift="report", drift_ignore={"Deployment": ["/spec/template/spec/containers/*/image"]}).run()
    assert by_name(result, "app")["drift"] == []


def test_ignore_is_the_default_and_reads_nothing_more(lab):
    cluster, helm, recipe = lab
    drift_lab(cluster)
    reads = len(cluster.audit)
    result = engine(cluster, helm, recipe).run()
    assert "drift" not in by_name(result, "app") and "drifted" not in result["summary"]
    assert not [a for a in cluster.audit[reads:] if a[0] == "dry-run-apply" and a[3] == "app"]


def test_a_manifest_object_edited_since_we_applied_it_is_reported_and_left_alone(lab):
    cluster, helm, recipe = lab
    edit(cluster, "ConfigMap", "site-config", lambda o: o["data"].update(site="edited"),
         manager={"manager": "kubectl-edit", "fieldsV1": {"f:data": {"f:site": {}}}})
    mutations = len(cluster.mutations())
    result = engine(cluster, helm, recipe, drift="report").run()
    config = by_name(result, "config")
    assert config["drift"][0]["fields"] == [{"path": "/data/site", "manager": "kubectl-edit"}]
    assert config["drift"][0]["object"] == "config-post-configmap-site-config"
    assert config["objects"][0]["action"] == "unchanged" and "drift: report" in config["objects"][0]["reason"]
    assert len(cluster.mutations()) == mutations
    result = engine(cluster, helm, recipe, drift="correct").run()
    assert cluster.get("v1", "ConfigMap", "site-config", "apps")["data"] == {"site": "lab"}
    assert by_name(result, "config")["objects"][0]["action"] == "update"


@pytest.mark.parametrize("opts, field", [({"drift": "fix"}, "drift"), ({"drift_ignore": ["/spec"]}, "drift_ignore"),
                                         ({"drift_ignore": {"Deployment": ["spec/replicas"]}}, "drift_ignore.Deployment")])
def test_bad_drift_options_are_refused_naming_the_field(lab, opts, field):
    cluster, helm, recipe = lab
    with pytest.raises(AicrError) as err:
        engine(cluster, helm, recipe, **opts)
    assert err.value.msg.split(":")[0].endswith(field) or field in err.value.msg


def test_manager_of_follows_list_items_by_merge_key_and_value():
    live = {"metadata": {"managedFields": [
        {"manager": "helm", "fieldsV1": {"f:spec": {"f:containers": {'k:{"name":"a"}': {"f:image": {}}, 'k:{"name":"b"}': {"f:image": {}}}}}},
        {"manager": "kubectl", "fieldsV1": {"f:spec": {"f:containers": {'k:{"name":"b"}': {"f:image": {}}}, "f:finalizers": {'v:"x"': {}}}}},
    ]}, "spec": {"containers": [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}], "finalizers": ["x"]}}
    live["metadata"]["managedFields"][0]["fieldsV1"]["f:spec"]["f:containers"].pop('k:{"name":"b"}')
    assert drift.manager_of(live, ("spec", "containers", 0, "image")) == "helm"
    assert drift.manager_of(live, ("spec", "containers", 1, "image")) == "kubectl"
    assert drift.manager_of(live, ("spec", "finalizers", 0)) == "kubectl"
    assert drift.manager_of(live, ("spec", "other")) is None


def test_diff_paths_and_pointers():
    live = {"a": {"b/c": 1, "x": [1, 2]}, "gone": 1}
    want = {"a": {"b/c": 2, "x": [1, 3]}, "new": 1}
    assert [drift.pointer(p) for p in drift.diff_paths(live, want)] == ["/a/b~1c", "/a/x/1", "/gone", "/new"]
    assert drift.parse_pointer("/a/b~1c") == ["a", "b/c"]
    body = {"webhooks": [{"clientConfig": {"caBundle": "x", "url": "u"}}, {"clientConfig": {"caBundle": "y"}}]}
    stripped = copy.deepcopy(body)
    for pattern in drift.ignore_rules({})["ValidatingWebhookConfiguration"]:
        drift._strip(stripped, pattern)  # pylint: disable=protected-access
    assert stripped == {"webhooks": [{"clientConfig": {"url": "u"}}, {"clientConfig": {}}]}


def test_the_stack_status_gets_a_drifted_condition_and_per_component_entries(lab):
    cluster, helm, recipe = lab
    drift_lab(cluster)
    result = engine(cluster, helm, recipe, drift="report").run()
    conditions = dict((c["type"], c) for c in model.gate_conditions(result))
    assert conditions["Drifted"]["status"] == "True" and "app" in conditions["Drifted"]["message"]
    entry = model.component_entry(by_name(result, "app"))
    assert entry["drift"] == ["Deployment apps/app: /spec/template/spec/containers/0/image (kubectl-edit)", "ConfigMap apps/app-settings: missing"]
    assert set(model.component_entry(by_name(result, "config"))) >= {"drift"}
    corrected = engine(cluster, helm, recipe, drift="correct").run()
    assert dict((c["type"], c) for c in model.gate_conditions(corrected))["Drifted"]["reason"] == "Corrected"
    clean = engine(cluster, helm, recipe, drift="report").run()
    assert dict((c["type"], c) for c in model.gate_conditions(clean))["Drifted"]["status"] == "False"
    assert "Drifted" not in [c["type"] for c in model.gate_conditions(engine(cluster, helm, recipe).run())]


def test_an_object_that_cannot_be_read_or_dry_run_is_unknown_never_corrected(lab):
    cluster, helm, recipe = lab
    edit(cluster, "Deployment", "app", set_image, api_version="apps/v1")  # only an object out of sync is dry-run
    cluster.fail_apply[("Deployment", "app")] = "admission webhook refused"
    mutations = len(cluster.mutations())
    result = engine(cluster, helm, recipe, drift="correct").run()
    found = by_name(result, "app")["drift"]
    assert [(e["kind"], e["state"]) for e in found] == [("Deployment", "unknown")] and "admission webhook refused" in found[0]["message"]
    assert "failed_message" not in result and cluster.mutations()[mutations:] == [], "no Lease taken: nothing to correct"


def test_an_object_in_sync_is_read_but_never_dry_run_and_a_drifted_one_is(lab):
    cluster, helm, recipe = lab
    reads = len(cluster.audit)
    assert by_name(engine(cluster, helm, recipe, drift="report").run(), "app")["drift"] == []
    release_dry_runs = [a for a in cluster.audit[reads:] if a[0] == "dry-run-apply" and a[3].startswith("app")]
    assert release_dry_runs == [], "the no-op with drift: report dry-runs no release object in sync"
    edit(cluster, "Deployment", "app", set_image, api_version="apps/v1")
    reads = len(cluster.audit)
    assert by_name(engine(cluster, helm, recipe, drift="report").run(), "app")["drift"][0]["name"] == "app"
    assert [a[1] for a in cluster.audit[reads:] if a[0] == "dry-run-apply" and a[3].startswith("app")] == ["Deployment"]


@pytest.mark.parametrize("body, live, expected", [
    ({"spec": {"a": 1, "l": [{"n": "x"}]}}, {"spec": {"a": 1.0, "b": 2, "l": [{"n": "x", "d": 1}]}, "status": {}}, True),  # more in live: no drift
    ({"spec": {"l": [1]}}, {"spec": {"l": [1, 2]}}, False),  # an item added to a list: the dry run decides
    ({"spec": {"a": 1}}, {"spec": {"a": "1"}}, False), ({"spec": {"a": 1}}, {"spec": {"a": True}}, False),
    ({"spec": {"a": 1}}, {"spec": {}}, False), ({"metadata": {"creationTimestamp": None}}, {"metadata": {}}, True),
    ({"metadata": {"creationTimestamp": None}}, {"metadata": {"creationTimestamp": "2026-01-01T00:00:00Z"}}, False),
])
def test_in_sync_holds_only_when_live_has_every_field_the_body_sets_with_its_value(body, live, expected):
    assert drift.in_sync(body, live) is expected


class _Pairs(object):
    """A cluster whose reads meet in pairs (a barrier of two): read one at a time, the second read never comes."""

    def __init__(self):
        self.barrier, self.lock, self.running, self.most = threading.Barrier(2, timeout=10), threading.Lock(), 0, 0

    def is_namespaced(self, _api_version, _kind):
        return True

    def get(self, _api_version, _kind, _name, _namespace):
        with self.lock:
            self.running += 1
            self.most = max(self.most, self.running)
        self.barrier.wait()
        with self.lock:
            self.running -= 1
        return None  # missing


def test_detect_reads_the_objects_of_a_release_concurrently_bounded_and_in_order():
    cluster = _Pairs()
    docs = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cm-%d" % i}} for i in range(4)]
    found = drift.detect(cluster, docs, "apps", {}, workers=2)
    assert [(e["name"], e["state"]) for e in found] == [("cm-%d" % i, "missing") for i in range(4)]
    assert cluster.most == 2
