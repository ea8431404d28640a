"""Upgrade plans between two versions of the example catalog: safe, blocked and review with their reasons."""

import copy
import datetime
import json

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._stack import engine as stack_engine
from ansible_collections.aicr.runtime.plugins.module_utils._stack import upgrade, upgradecrds

from upgrade_helpers import CURRENT, catalog_version, chart_versions  # pylint: disable=import-error


@pytest.fixture(name="versions", scope="module")
def fixture_versions(tmp_path_factory):
    root = tmp_path_factory.mktemp("catalogs")
    return dict((v, catalog_version(root, v)) for v in ("v1", "minor", "removed-key", "health"))


def _plan(versions, new, **current):
    state = dict(copy.deepcopy(CURRENT), catalog=versions["v1"], **current)
    return upgrade.plan_many([state], versions[new], persist_cache=False)


def _component(result, name):
    return next(c for c in result["plans"][0]["components"] if c["name"] == name)


def test_chart_minor_bump_is_safe(versions):
    result = _plan(versions, "minor")
    assert result["verdict"] == "safe" and result["plans"][0]["reasons"] == []
    crds = _component(result, "example-crds")
    assert crds["version"] == {"from": "0.1.0", "to": "0.2.0", "class": "minor"}
    assert crds["verdict"] == "safe" and [f["code"] for f in crds["findings"]] == ["version_minor"]
    assert _component(result, "example-operator")["change"] == "unchanged"
    assert result["plans"][0]["not_judged"] == [upgrade.NOT_JUDGED]


def test_removed_values_key_the_cluster_overrides_is_blocked(versions):
    result = _plan(versions, "removed-key")
    assert result["verdict"] == "blocked"
    operator = _component(result, "example-operator")
    assert operator["values"] == [{"path": "widget.color", "change": "removed"}]
    assert operator["findings"][0]["code"] == "override_removed"
    assert result["plans"][0]["reasons"] == ["example-operator values widget.color: the cluster overrides it and the catalog removed it"]
    assert "blue" not in str(result)  # paths only: an overridden value may be a secret


def test_removed_values_key_nobody_overrides_is_safe(versions):
    result = _plan(versions, "removed-key", component_overrides={})
    assert result["verdict"] == "safe"


def test_changed_health_check_is_review(versions):
    result = _plan(versions, "health")
    assert result["verdict"] == "review"
    operator = _component(result, "example-operator")
    assert operator["health_check"] == "changed" and operator["verdict"] == "review"
    assert result["plans"][0]["reasons"] == ["example-operator health check changed"]


def test_deployed_version_is_the_baseline(versions):
    result = _plan(versions, "minor", components=[{"name": "example-crds", "version": "1.4.0", "revision": 3}])
    crds = _component(result, "example-crds")
    assert crds["version"]["class"] == "downgrade" and result["verdict"] == "review"


def test_added_and_removed_components(versions):
    result = upgrade.plan_many([dict(copy.deepcopy(CURRENT), catalog=versions["v1"], criteria={"service": "kind", "intent": "training"})],
                               versions["v1"], persist_cache=False)
    assert result["verdict"] == "safe"
    state = dict(copy.deepcopy(CURRENT), catalog=versions["v1"], skip_components=["example-monitoring"])
    result = upgrade.plan_many([state], versions["v1"], persist_cache=False)
    assert result["verdict"] == "safe"  # the same skip on both sides


def test_fleet_has_one_table_per_verdict_with_its_clusters(versions):
    clusters = [dict(copy.deepcopy(CURRENT), catalog=versions["v1"], name="c%d" % i) for i in range(3)]
    clusters[2]["component_overrides"] = {}
    result = upgrade.plan_many(clusters, versions["removed-key"], persist_cache=False)
    assert result["fleet"]["blocked"]["clusters"] == ["c0", "c1"] and result["fleet"]["safe"]["clusters"] == ["c2"]
    rows = result["fleet"]["blocked"]["rows"]
    assert [(r["component"], r["clusters"]) for r in rows] == [("example-operator", ["c0", "c1"])]
    assert "| example-operator | changed |" in result["fleet"]["blocked"]["table"]


def test_cluster_stack_is_read_as_current(versions):
    stack = {"apiVersion": "runtime.aicr.io/v1alpha1", "kind": "ClusterStack", "metadata": {"name": "gpu"},
             "spec": {"catalog": {"source": versions["v1"]}, "criteria": {"service": "kind"},
                      "componentOverrides": {"example-operator": {"values": {"widget": {"color": "blue"}}}}},
             "status": {"recipe": {"catalogDigest": "sha256:other"}, "components": [{"name": "example-crds", "version": "0.1.0", "revision": 1}]}}
    result = upgrade.plan_many([stack], versions["removed-key"], persist_cache=False)
    assert result["plans"][0]["cluster"] == "gpu" and result["verdict"] == "blocked"
    assert [f["code"] for f in result["plans"][0]["findings"]] == ["catalog_digest_mismatch"]


@pytest.mark.parametrize("state,field", [
    ({"criteria": "kind"}, "current.criteria"),
    ({"component_overrides": {"x": {"values": 3}}}, "current.component_overrides.x.values"),
    ({"components": [{"version": "1"}]}, "current.components[0]"),
    ({"critera": {}}, "current.critera"),
])
def test_bad_current_names_the_field(versions, state, field):
    with pytest.raises(AicrError) as err:
        upgrade.plan_many([dict(CURRENT, catalog=versions["v1"], **state)], versions["v1"], persist_cache=False, field="current")
    assert err.value.details["field"] == field and "\n" not in err.value.msg


def test_no_catalog_for_the_cluster():
    with pytest.raises(AicrError) as err:
        upgrade.plan_many([dict(CURRENT)], "/nowhere", field="current")
    assert err.value.details["field"] == "current.catalog"


@pytest.mark.parametrize("old,new,cls", [("1.0.0", "1.0.1", "patch"), ("1.0.0", "1.1.0", "minor"), ("1.9.0", "2.0.0", "major"),
                                         ("v1.2.0", "1.1.0", "downgrade"), ("1.0.0-rc.1", "1.0.0", "patch"), ("latest", "1.0.0", "changed"),
                                         ("1.0.0", "1.0.0", "none")])
def test_version_class(old, new, cls):
    assert upgrade.version_class(old, new) == cls


def _release_dir(tmp_path, versions, newer):
    """A release directory: 1.0.0 is the example catalog, 1.1.0 the ``newer`` version (index.json)."""
    root = tmp_path / "releases"
    root.mkdir()
    (root / "index.json").write_text(json.dumps({"releases": [{"version": "1.0.0", "path": versions["v1"]},
                                                              {"version": "1.1.0", "path": versions[newer]}]}))
    return str(root)


@pytest.mark.parametrize("newer,applied,verdict", [("minor", True, "safe"), ("removed-key", False, "blocked"), ("health", False, "review")])
def test_auto_update_applies_only_a_safe_plan(tmp_path, versions, newer, applied, verdict):
    stack = {"metadata": {"name": "gpu", "generation": 1},
             "spec": {"catalog": {"source": _release_dir(tmp_path, versions, newer)}, "criteria": {"service": "kind"}, "autoUpdate": True,
                      "componentOverrides": copy.deepcopy(CURRENT["component_overrides"])},
             "status": {"observedGeneration": 1, "phase": "Ready", "recipe": {"catalogVersion": "1.0.0"},
                        "reconcile": {"lastReconcileTime": "2999-01-01T00:00:00Z"}}}
    out = stack_engine.describe(stack, 300, False, datetime.datetime(2030, 1, 1))
    assert out["catalog"]["version"] == ("1.1.0" if applied else "1.0.0") and out["needs_converge"] is applied
    if applied:
        assert out["catalog"]["plan"]["verdict"] == "safe" and "held_back" not in out["catalog"]
    else:
        assert out["catalog"]["held_back"]["verdict"] == verdict and out["catalog"]["held_back"]["version"] == "1.1.0"
        assert out["catalog"]["message"].startswith("autoUpdate held back catalog 1.1.0 (upgrade plan: %s: example-operator" % verdict)


def _crd_plan(versions, tmp_path, edit):
    """The minor bump of example-crds (0.1.0 -> 0.2.0) with the charts' CRDs judged; 0.2.0's CRD changed by ``edit``."""
    mirrors = chart_versions(tmp_path, {"0.1.0": None, "0.2.0": edit})
    state = dict(copy.deepcopy(CURRENT), catalog=versions["v1"])
    return upgrade.plan_many([state], versions["minor"], persist_cache=False, judge_crds=True, repository_mirrors=mirrors)


def test_chart_crd_field_added_is_noted_and_safe(versions, tmp_path):
    result = _crd_plan(versions, tmp_path, "add-field")
    plan = result["plans"][0]
    assert result["verdict"] == "safe" and plan["reasons"] == [] and plan["not_judged"] == []
    comp = _component(result, "example-crds")
    assert [f["code"] for f in comp["findings"]] == ["version_minor", "crd_fields_added"]
    assert comp["findings"][1]["message"] == "example-crds chart CRD widgets.example.aicr.io adds v1alpha1:^.spec.label"
    assert comp["crds"]["judged"] and comp["crds"]["changes"][0]["change"] == "changed"
    assert _component(result, "example-operator")["crds"] == {"judged": True, "changes": []}  # its chart did not change


def test_chart_crd_field_removed_blocks(versions, tmp_path):
    result = _crd_plan(versions, tmp_path, "remove-field")
    assert result["verdict"] == "blocked"
    comp = _component(result, "example-crds")
    assert comp["verdict"] == "blocked" and comp["crds"]["changes"][0]["change"] == "breaking"
    reason = result["plans"][0]["reasons"][0]
    assert reason.startswith("example-crds chart CRD widgets.example.aicr.io: breaking change existingFieldRemoval at ^.spec.owner")
    assert result["fleet"]["blocked"]["rows"][0]["component"] == "example-crds"


def test_chart_crd_removed_needs_review(versions, tmp_path):
    mirrors = chart_versions(tmp_path, {"0.1.0": None, "0.2.0": None})
    (tmp_path / "examples" / "example-crds-0.2.0" / "crds" / "widgets.example.aicr.io.yaml").unlink()
    state = dict(copy.deepcopy(CURRENT), catalog=versions["v1"])
    result = upgrade.plan_many([state], versions["minor"], persist_cache=False, judge_crds=True, repository_mirrors=mirrors)
    assert result["verdict"] == "review"
    assert result["plans"][0]["reasons"] == ["example-crds chart CRD widgets.example.aicr.io removed: helm keeps the CRD and its resources, "
                                             "and nothing upgrades it any more"]


def test_chart_that_cannot_be_read_is_not_judged(versions, tmp_path):
    mirrors = chart_versions(tmp_path, {"0.1.0": None})  # no 0.2.0
    state = dict(copy.deepcopy(CURRENT), catalog=versions["v1"])
    result = upgrade.plan_many([state], versions["minor"], persist_cache=False, judge_crds=True, repository_mirrors=mirrors)
    plan = result["plans"][0]
    assert result["verdict"] == "safe" and _component(result, "example-crds")["crds"]["judged"] is False
    assert len(plan["not_judged"]) == 1 and plan["not_judged"][0].startswith("chart CRDs of example-crds: not compared (no local chart ")


def test_local_chart_of_another_version_is_not_read(tmp_path):
    chart_versions(tmp_path, {"0.1.0": None})
    chart = str(tmp_path / "examples" / "example-crds-0.1.0")  # a chart directory without a version in its name
    assert upgradecrds.ChartCrdJudge.local_chart(chart, "0.1.0") == chart
    with pytest.raises(AicrError, match="is version 0.1.0, not 0.3.0"):
        upgradecrds.ChartCrdJudge.local_chart(chart, "0.3.0")
