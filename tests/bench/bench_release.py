"""Benchmark of gated_release (issue #6).

A synthetic recipe of 20 Helm components in 5 dependency levels of 4 (every component of a level
depends on one or two of the previous level, so the critical path is 5 components long). Each
chart holds one Deployment annotated ``emulator.aicr.io/ready-after-seconds: 1``: it becomes
available 1 s after it is created. The real helm binary installs the charts into the Kubernetes
API emulator; the engine is called directly (no ansible-playbook start-up).

Figures:
* ``converge_wall_s`` (concurrency 4) against ``critical_path_nominal_s`` (5 x 1 s readiness;
  target wall <= 1.15 x) and ``critical_path_measured_s``: the longest dependency chain of the
  measured per-component durations (gate open -> Ready, i.e. helm install + 1 s readiness + the
  time to observe it: a watch on the object, so no polling lag), which is the best any scheduler could do with this helm and this cluster;
  ``wall_over_measured_critical_path`` shows what the scheduler itself adds.
* ``sequential_wall_s``: the same stack converged with concurrency 1 on a fresh cluster.
* ``noop_rerun_wall_s``: a second run with nothing changed (target <= 2 s): no helm, no mutation.
* ``helm_install_overhead_s``: median per-component duration minus the 1 s readiness.
  ``$AICR_BENCH_HELM`` picks the helm binary in .venv/bin (default ``helm``, v3; ``helm4``).
* ``objects_*``: the same DAG as manifest-only components (each applies its Deployment with
  server-side apply; no helm install), i.e. the engine and scheduler without helm's per-install cost
  (helm 3 re-runs full API discovery, ~38 requests, on every install).
"""

import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
# tests.conftest exposes the repository as ansible_collections.aicr.runtime
import tests.conftest  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import

from aicr_emulators.kube.pytest_fixture import start_emulator  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.aicr.runtime.plugins.module_utils.release.engine import execute  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.aicr.runtime.plugins.module_utils.release.helm import HelmRunner  # noqa: E402  pylint: disable=wrong-import-position
# execute() imports the kubernetes client lazily (~0.2 s, once per process); import it here so the timed
# converge measures the rollout, as it is in the module after Python start-up.
import ansible_collections.aicr.runtime.plugins.module_utils.kube  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import

LEVELS, WIDTH, READY_AFTER = 5, 4, 1.0
REPOSITORY = "https://charts.bench.example/synthetic"

CHART = """apiVersion: v2
name: {name}
version: 1.0.0
"""
DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ .Release.Name }}}}
  annotations:
    emulator.aicr.io/ready-after-seconds: "{ready}"
spec:
  replicas: 1
  selector:
    matchLabels: {{app: {{{{ .Release.Name }}}}}}
  template:
    metadata:
      labels: {{app: {{{{ .Release.Name }}}}}}
    spec:
      containers:
        - name: main
          image: registry.bench.example/app:{{{{ .Values.tag }}}}
"""


def synthetic_recipe(charts_dir, manifest_only=False):
    """20 components in 5 levels; Helm charts, or (``manifest_only``) one Deployment manifest each."""
    components = []
    for level in range(LEVELS):
        for index in range(WIDTH):
            name = "c%d-%d" % (level, index)
            chart_dir = Path(charts_dir) / name
            (chart_dir / "templates").mkdir(parents=True)
            (chart_dir / "Chart.yaml").write_text(CHART.format(name=name))
            (chart_dir / "templates" / "deployment.yaml").write_text(DEPLOYMENT.format(ready=READY_AFTER))
            deps = []
            if level:
                deps = sorted(set(["c%d-%d" % (level - 1, index), "c%d-%d" % (level - 1, (index + level) % WIDTH)]))
            comp = {"name": name, "type": "Helm", "chart": name, "repository": REPOSITORY, "version": "1.0.0",
                    "namespace": "bench-%d" % level, "values": {"tag": "v1"}, "dependencies": deps}
            if manifest_only:
                manifest = (chart_dir / "templates" / "deployment.yaml").read_text().replace(".Values.tag", "index .Values \"%s\" \"tag\"" % name)
                path = chart_dir / "manifest.yaml"
                path.write_text(manifest)
                comp.update(chart="", repository="", manifest_only=True, manifest_paths=[str(path)])
            components.append(comp)
    return {"recipe_name": "bench-20x5", "components": components}


def critical_path(result):
    comps = dict((c["name"], c) for c in result["components"])
    memo = {}

    def longest(name):
        if name not in memo:
            memo[name] = comps[name]["duration"] + max([longest(d) for d in comps[name]["dependencies"]] or [0.0])
        return memo[name]

    return max(longest(n) for n in comps)


def converge(workdir, concurrency, recipe, charts_dir):
    os.makedirs(workdir, exist_ok=True)
    helm_binary = str(REPO / ".venv" / "bin" / os.environ.get("AICR_BENCH_HELM", "helm"))
    kube = start_emulator(os.path.join(workdir, "kube-%d" % concurrency))
    try:
        cache_dir = os.path.join(workdir, "cache-%d" % concurrency)
        # The helm version is cached per executable in cache_dir by any earlier run on the machine; warm it, as the
        # imports above are warmed. Rendered manifests stay cold (this stack has none; the objects variant renders).
        HelmRunner(helm_binary, version_cache_dir=cache_dir).major  # pylint: disable=pointless-statement
        params = dict(recipe=recipe, kubeconfig=kube.kubeconfig, helm_binary=helm_binary,
                      repository_mirrors={REPOSITORY: str(charts_dir)}, concurrency=concurrency, timeout=120, overall_timeout=600,
                      poll_interval=0.1, state="present", stack="bench", cache_dir=cache_dir)
        began = time.perf_counter()
        first = execute(params)
        wall = time.perf_counter() - began
        if first.get("failed_message"):
            raise RuntimeError(first["failed_message"])
        noop = None
        if concurrency > 1:
            mark = kube.control.audit_mark()
            began = time.perf_counter()
            second = execute(params)
            noop = time.perf_counter() - began
            writes = [e for e in kube.control.audit(mutating=True, since=mark) if "dryRun" not in json.dumps(e)]
            if second["changed"] or writes:
                raise RuntimeError("no-op re-run changed something: %s" % writes[:3])
        return wall, noop, first
    finally:
        kube.stop()


def run(sequential=True):
    workdir = tempfile.mkdtemp(prefix="bench-release-")
    try:
        charts_dir = Path(workdir) / "charts"
        recipe = synthetic_recipe(charts_dir)
        wall, noop, result = converge(workdir, 4, recipe, charts_dir)
        measured = critical_path(result)
        durations = [c["duration"] for c in result["components"]]
        figures = {
            "components": len(recipe["components"]), "levels": LEVELS, "readiness_s": READY_AFTER, "concurrency": 4,
            "converge_wall_s": round(wall, 2),
            "critical_path_nominal_s": LEVELS * READY_AFTER,
            "critical_path_measured_s": round(measured, 2),
            "wall_over_nominal_critical_path": round(wall / (LEVELS * READY_AFTER), 3),
            "wall_over_measured_critical_path": round(wall / measured, 3),
            "target_wall_over_critical_path": 1.15,
            "helm_install_overhead_s": round(statistics.median(durations) - READY_AFTER, 3),
            "noop_rerun_wall_s": round(noop, 2),
            "target_noop_rerun_s": 2.0,
        }
        objects_recipe = synthetic_recipe(Path(workdir) / "objects", manifest_only=True)
        o_wall, o_noop, o_result = converge(workdir + "/o", 4, objects_recipe, charts_dir)
        figures["objects_converge_wall_s"] = round(o_wall, 2)
        figures["objects_wall_over_nominal_critical_path"] = round(o_wall / (LEVELS * READY_AFTER), 3)
        figures["objects_critical_path_measured_s"] = round(critical_path(o_result), 2)
        figures["objects_noop_rerun_wall_s"] = round(o_noop, 2)
        if sequential:
            seq_wall, _noop, _seq = converge(workdir, 1, recipe, charts_dir)
            figures["sequential_wall_s"] = round(seq_wall, 2)
            figures["speedup_vs_sequential"] = round(seq_wall / wall, 2)
        return figures
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(run(sequential="--no-sequential" not in sys.argv), indent=2))
