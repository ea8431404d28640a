"""upgrade_plan module: one cluster, a fleet, and its one-line errors."""

import copy

from modules_testlib import run_main  # pylint: disable=import-error
from upgrade_helpers import CURRENT, catalog_version, chart_versions  # pylint: disable=import-error

from ansible_collections.aicr.runtime.plugins.modules import upgrade_plan


def test_one_cluster_and_a_fleet(capsys, tmp_path):
    old, new = catalog_version(tmp_path, "v1"), catalog_version(tmp_path, "removed-key")
    code, out = run_main(upgrade_plan, capsys, {"catalog": new, "current": dict(copy.deepcopy(CURRENT), catalog=old), "cache_dir": str(tmp_path)})
    assert code == 0 and out["verdict"] == "blocked" and not out["changed"] and out["plans"][0]["cluster"] == "lab-1"
    fleet = [dict(copy.deepcopy(CURRENT), name="a"), dict(copy.deepcopy(CURRENT), name="b", component_overrides={})]
    code, out = run_main(upgrade_plan, capsys, {"catalog": new, "clusters": fleet, "current_catalog": old, "cache_dir": str(tmp_path)})
    assert code == 0 and out["fleet"]["blocked"]["clusters"] == ["a"] and out["fleet"]["safe"]["clusters"] == ["b"]


def test_bad_current_is_one_line(capsys, tmp_path):
    old = catalog_version(tmp_path, "v1")
    code, out = run_main(upgrade_plan, capsys, {"catalog": old, "current": {"catalog": old, "criteria": {"service": "nope"}}})
    assert code == 1 and "\n" not in out["msg"] and "service" in out["msg"] and "Traceback" not in str(out)


def test_chart_crds_judged_through_the_mirrors(capsys, tmp_path):
    old, new = catalog_version(tmp_path, "v1"), catalog_version(tmp_path, "minor")
    mirrors = chart_versions(tmp_path / "charts", {"0.1.0": None, "0.2.0": "remove-field"})
    params = {"catalog": new, "current": dict(copy.deepcopy(CURRENT), catalog=old), "cache_dir": str(tmp_path), "repository_mirrors": mirrors}
    code, out = run_main(upgrade_plan, capsys, params)
    assert code == 0 and out["verdict"] == "blocked" and "breaking change existingFieldRemoval at ^.spec.owner" in out["plans"][0]["reasons"][0]
    code, out = run_main(upgrade_plan, capsys, dict(params, judge_crds=False))
    assert code == 0 and out["verdict"] == "safe" and out["plans"][0]["not_judged"][0].startswith("chart CRDs: not compared (judge_crds: false)")
