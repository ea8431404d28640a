#!/usr/bin/env python
"""Benchmark of upgrade plans (issue 40): the example catalog onto a release of it, on 10 clusters.

Figures:
* ``resolution_s``: resolving every cluster's criteria on both catalogs (what recipe_resolve would cost anyway; clusters
  with the same criteria resolve once per catalog), the catalogs already loaded once in the process.
* ``plan_beyond_resolution_s`` (target <= 2 s): the 10 plans and the fleet tables, on those resolutions - what the plan
  itself adds; ``plan_total_s``: ``plan_many`` from scratch in the same process (resolution included).
* ``plan_judging_crds_s``: ``plan_many`` from scratch with ``judge_crds`` (the module's default), the charts of the
  changed component read from a repository mirror on local disk (two versions of example-crds, the new one adding a CRD
  field): the CRD comparison's own cost; pulling from an HTTP repository adds one ``helm pull`` per chart version.
* ``verdicts``: clusters per verdict, so a change in the rules shows here too.
"""

import copy
import json
import shutil
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
CLUSTERS = 10
TARGET_S = 2.0
CRITERIA = ({"service": "kind"}, {"service": "kind", "intent": "training"}, {"service": "kind", "accelerator": "h100", "intent": "training"},
            {"service": "kind", "accelerator": "h100", "intent": "inference"})


def _clusters(old):
    sys.path.insert(0, str(REPO / "tests" / "unit" / "plugins"))
    from upgrade_helpers import CURRENT  # pylint: disable=import-outside-toplevel,import-error
    clusters = []
    for index in range(CLUSTERS):
        current = dict(copy.deepcopy(CURRENT), name="cluster-%02d" % index, catalog=old, criteria=CRITERIA[index % len(CRITERIA)])
        if index % 3 == 2:
            current["component_overrides"] = {}
        clusters.append(current)
    return clusters


def run():
    sys.path.insert(0, str(REPO))
    import tests.conftest  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    from ansible_collections.aicr.runtime.plugins.module_utils._stack import upgrade  # pylint: disable=import-outside-toplevel
    sys.path.insert(0, str(REPO / "tests" / "unit" / "plugins"))
    from upgrade_helpers import catalog_version, chart_versions  # pylint: disable=import-outside-toplevel,import-error

    workdir = tempfile.mkdtemp(prefix="bench-upgrade-plan-")
    try:
        old = catalog_version(workdir, "v1")
        new = catalog_version(workdir, "v2", changes=["minor", "removed-key", "health"])
        clusters = _clusters(old)
        upgrade.plan_many(clusters[:1], new, persist_cache=False)  # load both catalogs once (the process cache)

        began = time.perf_counter()
        resolutions = upgrade.Resolutions(persist_cache=False)
        for current in clusters:
            resolutions.get(old, current)
            resolutions.get(new, current)
        resolved = time.perf_counter()
        plans = [upgrade.plan(current, new, resolutions) for current in clusters]
        tables = upgrade.fleet(plans)
        planned = time.perf_counter()
        upgrade.plan_many(clusters, new, persist_cache=False)
        total = time.perf_counter() - planned
        beyond = planned - resolved
        mirrors = chart_versions(workdir, {"0.1.0": None, "0.2.0": "add-field"})
        judging = time.perf_counter()
        judged = upgrade.plan_many(clusters, new, persist_cache=False, judge_crds=True, repository_mirrors=mirrors)
        judging = time.perf_counter() - judging
        if any(plan["not_judged"] for plan in judged["plans"]):
            raise RuntimeError("the bench's charts were not judged: %s" % judged["plans"][0]["not_judged"])
        return {"clusters": CLUSTERS, "distinct_criteria": len(CRITERIA), "resolution_s": round(resolved - began, 4),
                "plan_beyond_resolution_s": round(beyond, 4), "plan_total_s": round(total, 4), "plan_judging_crds_s": round(judging, 4),
                "target_s": TARGET_S, "within_target": beyond <= TARGET_S and judging - (resolved - began) <= TARGET_S,
                "verdicts": dict((v, len(t["clusters"])) for v, t in tables.items())}
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, sort_keys=True))
