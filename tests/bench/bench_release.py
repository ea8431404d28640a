"""Benchmark of gated_release (issue #6).

A synthetic recipe of 20 Helm components in 5 dependency levels of 4 (every component of a level
depends on one or two of the previous level, so the critical path is 5 components long). Each
chart holds one Deployment whose pod is annotated ``lab.aicr.io/ready-after: 1s``: kwok makes the
pod Ready 1 s after it started, and the real controllers make the Deployment available. The real
helm binary installs the charts into the lab's real control plane (TLS, RBAC, as the
least-privilege identity ``release``); the engine runs in a Python process of its own, its
imports done before its clock starts (no ansible-playbook start-up). One control plane serves every run; each run has namespaces and a stack of its own.

Figures:
* ``converge_wall_s`` (concurrency 4) against ``critical_path_nominal_s`` (5 x 1 s readiness;
  target wall <= 1.15 x) and ``critical_path_measured_s``: the longest dependency chain of the
  measured per-component durations (gate open -> Ready, i.e. helm install + 1 s readiness + the
  time to observe it: a watch on the object, so no polling lag), which is the best any scheduler could do with this helm and this cluster;
  ``wall_over_measured_critical_path`` shows what the scheduler itself adds.
* ``timeline_critical_path``: the critical path gated_release's ``timeline`` marks (names and measured seconds, gate open
  -> Ready), checked to be a chain (each depends on the one before it) of one component per level; ``timeline_span_s``:
  first start to last end on the timeline.
* ``sequential_wall_s``: the same stack converged with concurrency 1 on a fresh cluster.
* ``noop_rerun_wall_s``: a second run with nothing changed (target <= 2 s): no helm, no mutation.
* ``helm_install_overhead_s``: median per-component duration minus the 1 s readiness.
  ``$AICR_BENCH_HELM`` picks the helm binary in .venv/bin (default ``helm``, v3; ``helm4``).
* ``early_start_off_wall_s`` / ``early_start_on_wall_s``: the rollout with ``early_start`` off and on, in alternating
  pairs (``$AICR_BENCH_REPEAT``, default 3; medians): what starting dependents' helms early gains.
* ``objects_*``: the same DAG as manifest-only components (each applies its Deployment with
  server-side apply; no helm install), i.e. the engine and scheduler without helm's per-install cost
  (helm re-runs API discovery on every install).
"""

import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))
# tests.conftest exposes the repository as ansible_collections.aicr.runtime
import tests.conftest  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import

from aicr_lab.controlplane.stages import READY_AFTER as READY_AFTER_ANNOTATION  # noqa: E402  pylint: disable=wrong-import-position
from aicr_lab.kube import Kube  # noqa: E402  pylint: disable=wrong-import-position

from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release import execute  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.aicr.runtime.plugins.module_utils._helm.helm import HelmRunner  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.aicr.runtime.plugins.module_utils._common import timeline  # noqa: E402  pylint: disable=wrong-import-position
# execute() imports the kubernetes client lazily (~0.2 s, once per process); import it here so the timed
# converge measures the rollout, as it is in the module after Python start-up.
import ansible_collections.aicr.runtime.plugins.module_utils._kube.connection  # noqa: E402,F401  pylint: disable=wrong-import-position,unused-import

LEVELS, WIDTH, READY_AFTER = 5, 4, 1.0
REPEATS = int(os.environ.get("AICR_BENCH_REPEAT", "3"))
REPOSITORY = "https://charts.bench.example/synthetic"

CHART = """apiVersion: v2
name: {name}
version: 1.0.0
"""
DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{{{ .Release.Name }}}}
spec:
  replicas: 1
  selector:
    matchLabels: {{app: {{{{ .Release.Name }}}}}}
  template:
    metadata:
      labels: {{app: {{{{ .Release.Name }}}}}}
      annotations:
        {annotation}: "{ready}s"
    spec:
      containers:
        - name: main
          image: registry.bench.example/app:{{{{ .Values.tag }}}}
"""


def synthetic_recipe(charts_dir, manifest_only=False, tag="run"):
    """20 components in 5 levels; Helm charts, or (``manifest_only``) one Deployment manifest each."""
    components = []
    for level in range(LEVELS):
        for index in range(WIDTH):
            name = "c%d-%d" % (level, index)
            chart_dir = Path(charts_dir) / name
            (chart_dir / "templates").mkdir(parents=True)
            (chart_dir / "Chart.yaml").write_text(CHART.format(name=name))
            (chart_dir / "templates" / "deployment.yaml").write_text(DEPLOYMENT.format(annotation=READY_AFTER_ANNOTATION, ready=READY_AFTER))
            deps = []
            if level:
                deps = sorted(set(["c%d-%d" % (level - 1, index), "c%d-%d" % (level - 1, (index + level) % WIDTH)]))
            comp = {"name": name, "type": "Helm", "chart": name, "repository": REPOSITORY, "version": "1.0.0",
                    "namespace": "bench-%s-%d" % (tag, level), "values": {"tag": "v1"}, "dependencies": deps}
            if manifest_only:
                manifest = (chart_dir / "templates" / "deployment.yaml").read_text().replace(".Values.tag", "index .Values \"%s\" \"tag\"" % name)
                path = chart_dir / "manifest.yaml"
                path.write_text(manifest)
                comp.update(chart="", repository="", manifest_only=True, manifest_paths=[str(path)])
            components.append(comp)
    return {"recipe_name": "bench-20x5", "components": components}


def _cpu_seconds():
    """CPU seconds of this process and its reaped children (helm, the post-renderers) so far."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def critical_path(result):
    comps = dict((c["name"], c) for c in result["components"])
    memo = {}

    def longest(name):
        if name not in memo:
            memo[name] = comps[name]["duration"] + max([longest(d) for d in comps[name]["dependencies"]] or [0.0])
        return memo[name]

    return max(longest(n) for n in comps)


def timeline_critical_path(result):
    """The rollout timeline's critical path (issue 40): ``[{name, seconds}]`` first to last, as gated_release's ``timeline``
    names it, checked to be a real chain - each component depends on the one before it - and to end with the rollout."""
    timed = timeline.schedule(timeline.from_results(result["components"]))
    path = timeline.critical_path(timed)
    by_name = dict((b["name"], b) for b in timed)
    for before, after in zip(path, path[1:]):
        if before not in by_name[after]["after"]:
            raise RuntimeError("timeline critical path %s: %s does not depend on %s" % (path, after, before))
    if len(path) != LEVELS:
        raise RuntimeError("timeline critical path %s: %d components, not one per level (%d)" % (path, len(path), LEVELS))
    if "critical path: %s (" % " -> ".join(path) not in result["timeline"]:
        raise RuntimeError("gated_release's timeline does not name the critical path %s" % path)
    ends = [b["start"] + b["seconds"] for b in timed]
    span = max(ends) - min(b["start"] for b in timed)
    return [{"name": n, "seconds": round(by_name[n]["seconds"], 2)} for n in path], round(span, 2)


def converge(kube, workdir, concurrency, recipe, charts_dir, tag, early_start=True, **extra):
    """Roll ``recipe`` out, then re-run it (concurrency > 1) and check the re-run changed nothing: (wall, no-op wall, result).

    The engine runs in a Python process of its own (``--converge``), as the module does: nothing else in it - no watch
    thread of a benchmark - competes with the engine for its interpreter. The process imports everything before the
    clock starts (the module's imports are Python start-up, not the rollout). ``result["bench_cpu_s"]``: CPU seconds
    of that process and its helms during the rollout (``bench_cpu_with_noop_s``: and the re-run). ``extra``: more of
    gated_release's parameters (``validate_values``...); ``charts_dir`` may be a chart repository's URL."""
    os.makedirs(workdir, exist_ok=True)
    helm_binary = str(REPO / ".venv" / "bin" / os.environ.get("AICR_BENCH_HELM", "helm"))
    cache_dir = os.path.join(workdir, "cache-%s" % tag)
    params = dict(recipe=recipe, kubeconfig=kube.kubeconfig_for("release"), helm_binary=helm_binary,
                  repository_mirrors={REPOSITORY: str(charts_dir)}, concurrency=concurrency, timeout=120, overall_timeout=600,
                  poll_interval=0.1, state="present", stack="bench-%s" % tag, lease_namespace="aicr-system", cache_dir=cache_dir,
                  early_start=early_start)
    params.update(extra)
    mark = kube.audit_mark()
    child = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--converge"], input=json.dumps({"params": params, "noop": concurrency > 1}),
                           capture_output=True, text=True, check=False)
    if child.returncode != 0:
        raise RuntimeError("the engine's process failed (exit %d): %s" % (child.returncode, child.stderr[-3000:]))
    answer = json.loads(child.stdout)
    first = answer["result"]
    if first.get("failed_message"):
        raise RuntimeError(first["failed_message"])
    noop = answer.get("noop_wall_s")
    if noop is not None:
        writes = [e for e in kube.audit(mutating=True, since=mark, user=kube.user("release"))
                  if e["time"] >= answer["noop_began"] and "dryRun" not in (e.get("query") or "")]
        if answer["noop_changed"] or writes:
            raise RuntimeError("no-op re-run changed something: %s" % writes[:3])
    first["bench_cpu_s"], first["bench_cpu_with_noop_s"] = answer["cpu_s"], answer["cpu_with_noop_s"]
    first["bench_began"] = answer["began"]
    return answer["wall_s"], noop, first


def _converge_here(request):
    """The child's side of :func:`converge`: the rollout and its re-run, timed in this process."""
    params = request["params"]
    # The helm version is cached per executable in cache_dir by any earlier run on the machine; warm it, as the
    # imports are warm. Rendered manifests stay cold (this stack has none; the objects variant renders).
    HelmRunner(params["helm_binary"], version_cache_dir=params["cache_dir"]).major  # pylint: disable=pointless-statement
    cpu, began_epoch, began = _cpu_seconds(), time.time(), time.perf_counter()
    first = execute(params)
    answer = {"wall_s": time.perf_counter() - began, "began": began_epoch, "cpu_s": _cpu_seconds() - cpu, "result": first}
    if request["noop"] and not first.get("failed_message"):
        answer["noop_began"], began = time.time(), time.perf_counter()
        second = execute(params)
        answer.update(noop_wall_s=time.perf_counter() - began, noop_changed=bool(second["changed"]))
    answer["cpu_with_noop_s"] = _cpu_seconds() - cpu
    return answer


def run(sequential=True):
    workdir = tempfile.mkdtemp(prefix="bench-release-")
    kube = Kube.start(Path(workdir) / "controlplane")
    try:
        charts_dir = Path(workdir) / "charts"
        recipe = synthetic_recipe(charts_dir, tag="c4")
        wall, noop, result = converge(kube, workdir, 4, recipe, charts_dir, "c4")
        measured = critical_path(result)
        timeline_path, timeline_span = timeline_critical_path(result)
        durations = [c["duration"] for c in result["components"]]
        figures = {
            "cluster": "lab control plane %s (kwok nodes), identity release" % kube.rest.get("/version")["gitVersion"],
            "helm": os.environ.get("AICR_BENCH_HELM", "helm"),
            "components": len(recipe["components"]), "levels": LEVELS, "readiness_s": READY_AFTER, "concurrency": 4,
            "converge_wall_s": round(wall, 2),
            "critical_path_nominal_s": LEVELS * READY_AFTER,
            "critical_path_measured_s": round(measured, 2),
            "timeline_critical_path": timeline_path,
            "timeline_span_s": timeline_span,
            "wall_over_nominal_critical_path": round(wall / (LEVELS * READY_AFTER), 3),
            "wall_over_measured_critical_path": round(wall / measured, 3),
            "target_wall_over_critical_path": 1.15,
            "helm_install_overhead_s": round(statistics.median(durations) - READY_AFTER, 3),
            "noop_rerun_wall_s": round(noop, 2),
            "target_noop_rerun_s": 2.0,
        }
        # the same rollout with early_start off, alternating with it on (REPEATS pairs): what early start gains
        pairs = []
        for index in range(REPEATS):
            walls = {}
            for early in (False, True):
                tag = "e%d%s" % (index, "on" if early else "off")
                wall, _noop, result = converge(kube, workdir, 4, synthetic_recipe(Path(workdir) / tag, tag=tag), Path(workdir) / tag, tag,
                                               early_start=early)
                walls[early] = (wall, result["bench_cpu_with_noop_s"])  # CPU of the converge and its no-op re-run: the engine and its helms
            pairs.append(walls)
        for early, word in ((False, "off"), (True, "on")):
            figures["early_start_%s_wall_s" % word] = round(statistics.median(p[early][0] for p in pairs), 2)
            figures["early_start_%s_cpu_s" % word] = round(statistics.median(p[early][1] for p in pairs), 2)
        figures["early_start_pairs"] = [{"off": round(p[False][0], 2), "on": round(p[True][0], 2)} for p in pairs]
        objects_recipe = synthetic_recipe(Path(workdir) / "objects", manifest_only=True, tag="objects")
        o_wall, o_noop, o_result = converge(kube, workdir + "/o", 4, objects_recipe, charts_dir, "objects")
        figures["objects_converge_wall_s"] = round(o_wall, 2)
        figures["objects_wall_over_nominal_critical_path"] = round(o_wall / (LEVELS * READY_AFTER), 3)
        figures["objects_critical_path_measured_s"] = round(critical_path(o_result), 2)
        figures["objects_noop_rerun_wall_s"] = round(o_noop, 2)
        if sequential:
            seq_recipe = synthetic_recipe(Path(workdir) / "sequential", tag="c1")
            seq_wall, _noop, _seq = converge(kube, workdir, 1, seq_recipe, Path(workdir) / "sequential", "c1")
            figures["sequential_wall_s"] = round(seq_wall, 2)
            figures["speedup_vs_sequential"] = round(seq_wall / wall, 2)
        return figures
    finally:
        kube.stop()
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    if sys.argv[1:] == ["--converge"]:
        print(json.dumps(_converge_here(json.load(sys.stdin))))
    else:
        print(json.dumps(run(sequential="--no-sequential" not in sys.argv), indent=2))
