"""playbooks/plan-upgrade.yml on three inventory clusters, from the example catalog to a release that bumps a chart
minor, removes a values key one cluster overrides and changes a health check: blocked, review and safe with the reasons.
The bumped chart's two versions are local directories (the repository's mirror), 0.2.0's CRD with a new field: noted."""

import importlib.util
import json
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
_SPEC = importlib.util.spec_from_file_location("upgrade_helpers", str(REPO / "tests" / "unit" / "plugins" / "upgrade_helpers.py"))
upgrade_helpers = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(upgrade_helpers)


def test_plan_upgrade_playbook(run_playbook, installed_collection, tmp_path):
    old = upgrade_helpers.catalog_version(tmp_path, "v1")
    new = upgrade_helpers.catalog_version(tmp_path, "v2", changes=["minor", "removed-key", "health"])
    overrides = upgrade_helpers.CURRENT["component_overrides"]
    hosts = {
        "pinned-color": {"cluster_runtime_component_overrides": overrides},  # overrides widget.color: blocked
        "plain": {},  # the operator's health check changed: review
        "no-operator": {"cluster_runtime_skip_components": ["example-operator"]},  # the crds minor bump only: safe
    }
    mirrors = upgrade_helpers.chart_versions(tmp_path / "charts", {"0.1.0": None, "0.2.0": "add-field"})
    for host in hosts.values():
        host.update(ansible_connection="local", aicr_catalog=old, aicr_criteria={"service": "kind"}, aicr_repository_mirrors=mirrors)
    inventory = json.dumps({"clusters": {"hosts": hosts}})
    (tmp_path / "hosts.json").write_text(inventory)
    run = run_playbook(str(installed_collection / "playbooks" / "plan-upgrade.yml"), inventory=str(tmp_path / "hosts.json"),
                       extravars={"upgrade_catalog": new, "upgrade_fail_on": "blocked"})
    assert "Traceback" not in run.stdout
    plan = run.result("Plan every cluster onto the new catalog")
    assert not plan["changed"] and plan["verdict"] == "blocked"
    assert dict((p["cluster"], p["verdict"]) for p in plan["plans"]) == {"pinned-color": "blocked", "plain": "review", "no-operator": "safe"}
    reasons = dict((p["cluster"], p["reasons"]) for p in plan["plans"])
    assert "example-operator values widget.color: the cluster overrides it and the catalog removed it" in reasons["pinned-color"]
    assert reasons["plain"] == ["example-operator health check changed"] and reasons["no-operator"] == []
    assert plan["fleet"]["safe"]["rows"][0]["component"] == "example-crds" and plan["fleet"]["safe"]["rows"][0]["class"] == "minor"
    # the charts' CRDs judged: 0.2.0 adds a field, noted (safe stays safe)
    assert "example-crds chart CRD widgets.example.aicr.io adds v1alpha1:^.spec.label" in plan["fleet"]["safe"]["rows"][0]["reasons"]
    assert all(p["not_judged"] == [] for p in plan["plans"])
    # upgrade_fail_on: blocked fails the blocked cluster only, after the tables were shown
    assert run.failed_tasks == ["Fail on a verdict at or above upgrade_fail_on"] and run.rc != 0
    assert run.result("Show one table per verdict")["msg"]["blocked"] == ["pinned-color"]
