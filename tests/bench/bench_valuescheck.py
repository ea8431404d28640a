"""Benchmark of gated_release's up-front values check (issue 36): what validating the values of bench_release's
20-component recipe against every chart, before the first change, adds to the rollout.

The acceptance: "validating the 20-component recipe's values up front adds <= 0.3 s to the rollout". Measured side by
side in one run, on ONE lab control plane, with bench_release's synthetic recipe (20 Helm components in 5 levels of 4,
concurrency 4, early start on, the identity ``release``); every chart here ships a ``values.schema.json`` (an object
schema of a dozen typed properties, ``additionalProperties: false``) and a ``values.yaml``, so every component's values
are really validated. Two chart sources:

* ``local``: the charts as directories (a repository mirror to a directory, as bench_release): the check reads each
  chart's values.yaml and schema and validates - no helm process;
* ``http``: the same charts served by the lab's HTTP chart repository (``helm pull`` of each chart, up to
  ``concurrency`` at once; the release is then installed from the archive pulled, so helm fetches nothing itself).

Figures per source:

* ``converge_wall_{off,on}_s``: the rollout (``execute`` in a process of its own, bench_release.converge) with
  ``validate_values`` false and true, in alternating pairs (``$AICR_BENCH_REPEAT``, default 3; medians), each on a fresh
  stack; ``added_wall_s`` = on - off (the figure the target is about; noisy by the rollout's own spread, see the pairs);
* ``upfront_check_s``: the check itself, timed in this process on a fresh stack (survey done, nothing deployed: every
  release will be installed), median of ``$AICR_BENCH_REPEAT`` x 2 runs - the part of the rollout it adds before the
  first change, without the rollout's noise. For ``http`` it is what gated_release does (``chart_cache`` on): one
  index.yaml download for the repository, each archive downloaded and digest-checked without helm, into an empty chart
  cache (a first run); and side by side in the same run, on the same stacks' shape:
  ``upfront_check_cached_s`` - a later run, every archive in the chart cache (only the index downloaded);
  ``upfront_check_helm_pull_s`` - the same check with a ``helm pull`` per chart (the fetch before chartfetch).

``$AICR_BENCH_SOURCES`` (default ``local,http``) picks the sources.
"""

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
REPEATS = int(os.environ.get("AICR_BENCH_REPEAT", "3"))
TARGET_ADDED_S = 0.3

SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "type": "object",
    "additionalProperties": False,
    "required": ["tag", "replicaCount"],
    "properties": {
        "tag": {"type": "string", "minLength": 1},
        "replicaCount": {"type": "integer", "minimum": 0, "maximum": 10},
        "image": {"type": "object", "additionalProperties": False, "properties": {
            "repository": {"type": "string"}, "pullPolicy": {"type": "string", "enum": ["Always", "IfNotPresent", "Never"]}}},
        "resources": {"type": "object", "properties": {"requests": {"$ref": "#/definitions/quantities"}, "limits": {"$ref": "#/definitions/quantities"}}},
        "nodeSelector": {"type": "object", "additionalProperties": {"type": "string"}},
        "tolerations": {"type": "array", "items": {"type": "object", "properties": {"key": {"type": "string"}, "operator": {"type": "string"}}}},
        "podAnnotations": {"type": "object", "additionalProperties": {"type": "string"}},
        "logLevel": {"type": "integer", "minimum": 0, "maximum": 5},
        "service": {"type": "object", "properties": {"type": {"type": "string", "enum": ["ClusterIP", "NodePort"]},
                                                     "port": {"type": "integer", "minimum": 1, "maximum": 65535}}},
        "args": {"type": "array", "items": {"type": "string"}},
    },
    "definitions": {"quantities": {"type": "object", "additionalProperties": {"type": ["string", "integer", "number"]}}},
}
DEFAULTS = """replicaCount: 1
tag: v0
image:
  repository: registry.bench.example/app
  pullPolicy: IfNotPresent
resources:
  requests: {cpu: 10m, memory: 32Mi}
nodeSelector: {}
tolerations: []
podAnnotations: {}
logLevel: 2
service: {type: ClusterIP, port: 8080}
args: [--leader-elect]
"""


def _charts(root):
    """bench_release's 20 charts in ``root``, each with a values.schema.json and a values.yaml."""
    import bench_release  # pylint: disable=import-outside-toplevel
    bench_release.synthetic_recipe(root, tag="charts")
    for chart in Path(root).iterdir():
        (chart / "values.schema.json").write_text(json.dumps(SCHEMA))
        (chart / "values.yaml").write_text(DEFAULTS)
    return root


def _recipe(workdir, tag):
    """The synthetic recipe of a fresh stack ``tag`` (its own namespaces); its charts are the shared ones of :func:`_charts`."""
    import bench_release  # pylint: disable=import-outside-toplevel
    return bench_release.synthetic_recipe(Path(workdir) / "unused-charts" / tag, tag=tag)


def _check_alone(kube, workdir, source, tag, fetch="direct"):
    """The up-front check alone, timed in this process: a fresh stack surveyed (nothing deployed), then every chart brought
    to local disk and every component's values validated. Seconds. ``fetch``: ``direct`` (gated_release's: without helm,
    into an empty chart cache), ``cached`` (the shared chart cache of earlier runs), ``helm`` (``helm pull`` per chart)."""
    # pylint: disable=import-outside-toplevel
    import bench_release
    from ansible_collections.aicr.runtime.plugins.module_utils._kube import connection
    from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import GatedRelease, Options
    from ansible_collections.aicr.runtime.plugins.module_utils._helm.helm import HelmRunner
    from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan

    home = tempfile.mkdtemp(prefix="helm-", dir=workdir)
    chart_cache = os.path.join(workdir, "chart-cache") if fetch == "cached" else tempfile.mkdtemp(prefix="charts-", dir=workdir)
    helm = HelmRunner(str(REPO / ".venv" / "bin" / os.environ.get("AICR_BENCH_HELM", "helm")), home=home, version_cache_dir=os.path.join(workdir, "cache"),
                      fetch_charts=fetch != "helm", chart_cache_dir=chart_cache if fetch != "helm" else None)
    helm.major  # pylint: disable=pointless-statement
    options = Options(stack="bench-%s" % tag, validate_values=True, repository_mirrors={bench_release.REPOSITORY: str(source)}, concurrency=4,
                      lease_namespace="aicr-system")
    run = GatedRelease(connection.resolve(kube.kubeconfig_for("release"), None).client(), helm, build_plan(_recipe(workdir, tag)), options)
    run.ctx.workdir = tempfile.mkdtemp(prefix="run-", dir=workdir)
    run.ctx.inventory.load(run.ctx.action, run.ctx.warn)
    run.surveyor.survey(objects=False)
    began = time.perf_counter()
    refused = run.charts.check_up_front()
    took = time.perf_counter() - began
    if refused or len(run.charts.chart_archives) != 20:
        raise RuntimeError("the check did not pass all 20 charts: %s" % [st.message for st, _f in refused])
    return took


def _source_figures(kube, workdir, label, source):
    import bench_release  # pylint: disable=import-outside-toplevel
    pairs = []
    for index in range(REPEATS):
        walls = {}
        for validate in ((False, True) if index % 2 == 0 else (True, False)):
            tag = "%s%d%s" % (label, index, "on" if validate else "off")
            wall, _noop, result = bench_release.converge(kube, os.path.join(workdir, tag), 4, _recipe(workdir, tag), source, tag, validate_values=validate)
            if result.get("failed_message"):
                raise RuntimeError(result["failed_message"])
            walls[validate] = wall
        pairs.append(walls)
    fetches = ("direct", "cached", "helm") if label == "http" else ("direct",)
    if label == "http":
        _check_alone(kube, workdir, source, "%swarm" % label, "cached")  # fills the shared chart cache
    alone = dict((fetch, []) for fetch in fetches)
    for index in range(REPEATS * 2):
        for fetch in fetches:  # interleaved: the same load for each
            alone[fetch].append(_check_alone(kube, workdir, source, "%s%s%d" % (label, fetch, index), fetch))
    off, on = statistics.median(p[False] for p in pairs), statistics.median(p[True] for p in pairs)
    figures = {
        "converge_wall_off_s": round(off, 2), "converge_wall_on_s": round(on, 2), "added_wall_s": round(on - off, 2),
        "pairs": [{"off": round(p[False], 2), "on": round(p[True], 2)} for p in pairs],
        "upfront_check_s": round(statistics.median(alone["direct"]), 3), "upfront_check_runs_s": [round(a, 3) for a in alone["direct"]],
    }
    for fetch, name in (("cached", "upfront_check_cached"), ("helm", "upfront_check_helm_pull")):
        if fetch in alone:
            figures[name + "_s"] = round(statistics.median(alone[fetch]), 3)
            figures[name + "_runs_s"] = [round(a, 3) for a in alone[fetch]]
    return figures


def run():
    sys.path.insert(0, str(HERE.parent))  # bench_release: the synthetic recipe and its converge
    sys.path.insert(0, str(REPO))
    import tests.conftest  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    from aicr_lab.charts.pytest_fixture import start_chart_repo  # pylint: disable=import-outside-toplevel
    from aicr_lab.kube import Kube  # pylint: disable=import-outside-toplevel

    workdir = tempfile.mkdtemp(prefix="bench-valuescheck-")
    kube = Kube.start(Path(workdir) / "controlplane")
    repo = None
    try:
        charts = _charts(Path(workdir) / "charts")
        repo = start_chart_repo(Path(workdir), charts=[charts], url_prefix="/bench")
        figures = {"components": 20, "levels": 5, "concurrency": 4, "repeats": REPEATS, "target_added_s": TARGET_ADDED_S,
                   "loadavg_start": [round(x, 2) for x in os.getloadavg()]}
        sources = os.environ.get("AICR_BENCH_SOURCES", "local,http").split(",")
        for label, source in (("local", charts), ("http", repo.url)):
            if label in sources:
                figures[label] = _source_figures(kube, workdir, label, source)
        figures["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]
        return figures
    finally:
        if repo is not None:
            repo.stop()
        kube.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
