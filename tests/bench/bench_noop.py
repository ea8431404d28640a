"""Benchmark of gated_release's no-op re-run, before and after a change (issue #35).

The issue's acceptance: "the no-op run stays write-free and within 0.1 s of today's time". A figure from
another day on a shared 2-core machine cannot show a 0.1 s difference, so this bench measures both codes side
by side in one run, on ONE lab control plane: for each of ``$AICR_BENCH_NOOP_ROUNDS`` rounds (default 5) a fresh
stack of bench_release's 20-component synthetic recipe (helm charts, concurrency 4) is rolled out and re-run as
a no-op with the base tree's engine, and another with this tree's engine; which goes first alternates per round,
so drift of the machine's load hits both alike.

``$AICR_BENCH_BASE_TREE`` is the checkout of the code before (e.g. a worktree detached at the base commit);
unset, the bench reports this tree's no-op alone and says the base is missing. The engine runs in a child
process (``--child TREE``) that imports the collection from ``TREE/.build/dev`` (the namespace symlink
tests/conftest.py creates; made here too when the tree has none) and nothing from any other tree; its answer
carries the engine module's ``__file__`` and the tree's git commit, and the parent checks the file lies in
that tree. The no-op's writes are the mutating requests of the identity ``release`` in the API server's
audit log after the no-op began (dry runs not counted, reported apart).

Figures per code (``base``, ``head``): ``noop_wall_s`` per round, median and min-max, the no-op's CPU seconds
(the child and its helms), its writes and its requests; ``head_minus_base_median_s`` against
``target_difference_s`` (0.1), and ``os.getloadavg()`` at start and end. After each of this tree's no-ops the same no-op
runs again with ``drift: report`` (issue 39; ``$AICR_BENCH_NOOP_DRIFT=0`` leaves it out), and so does the base tree's:
``head_drift_report`` (``base_drift_report``) has its walls, the median of (drift report - no-op) per round against
``target_added_s`` (0.3), its CPU seconds (and minus the no-op's), its writes (must be 0) and requests.
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

HERE = Path(__file__).resolve()
REPO = HERE.parents[2]
ROUNDS = int(os.environ.get("AICR_BENCH_NOOP_ROUNDS", "5"))
TARGET_DIFFERENCE_S = 0.1
# After each of this tree's no-ops, the same no-op with drift: report (issue 39: write-free, adds <= 0.3 s); 0 leaves it out.
DRIFT_REPORT = os.environ.get("AICR_BENCH_NOOP_DRIFT", "1") != "0"
DRIFT_TARGET_ADDED_S = 0.3
# Where ``execute`` and ``HelmRunner`` live: this tree's modules first, then an older base tree's (before issue 37's layers).
ENGINE_MODULES = ("ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release",
                  "ansible_collections.aicr.runtime.plugins.module_utils._release.engine")
HELM_MODULES = ("ansible_collections.aicr.runtime.plugins.module_utils._helm.helm",
                "ansible_collections.aicr.runtime.plugins.module_utils._release.helm")


def _cpu_seconds():
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def _expose_tree(tree):
    """``tree`` as ``ansible_collections.aicr.runtime`` (the link tests/conftest.py makes, outside git), first on sys.path."""
    dev = Path(tree) / ".build" / "dev"
    link = dev / "ansible_collections" / "aicr" / "runtime"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            link.symlink_to(Path(tree).resolve(), target_is_directory=True)
        except FileExistsError:
            pass
    sys.path.insert(0, str(dev))


def _child(tree, request):
    """The engine's process: imports from ``tree`` only, before the clock; the rollout, then the no-op re-run, timed."""
    _expose_tree(tree)
    import importlib  # pylint: disable=import-outside-toplevel
    import importlib.util  # pylint: disable=import-outside-toplevel
    engine = importlib.import_module(next(m for m in ENGINE_MODULES if importlib.util.find_spec(m) is not None))
    helm = importlib.import_module(next(m for m in HELM_MODULES if importlib.util.find_spec(m) is not None))
    importlib.import_module("ansible_collections.aicr.runtime.plugins.module_utils._kube.connection")  # lazily imported by an older execute()
    params = request["params"]
    helm.HelmRunner(params["helm_binary"], version_cache_dir=params["cache_dir"]).major  # pylint: disable=pointless-statement
    commit = subprocess.run(["git", "-C", tree, "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False).stdout.strip()
    answer = {"engine_file": engine.__file__, "engine_file_resolved": str(Path(engine.__file__).resolve()), "tree_commit": commit}
    began = time.perf_counter()
    first = engine.execute(params)
    answer["rollout_wall_s"] = time.perf_counter() - began
    answer["rollout_failed"] = first.get("failed_message")
    if not first.get("failed_message"):
        cpu, answer["noop_began"], began = _cpu_seconds(), time.time(), time.perf_counter()
        second = engine.execute(params)
        answer.update(noop_wall_s=time.perf_counter() - began, noop_cpu_s=_cpu_seconds() - cpu, noop_changed=bool(second["changed"]),
                      noop_failed=second.get("failed_message"))
        if request.get("drift_report"):  # the same no-op reading drift (issue 39): every release object dry-run applied
            cpu, answer["drift_began"], began = _cpu_seconds(), time.time(), time.perf_counter()
            third = engine.execute(dict(params, drift="report"))
            answer.update(drift_report_wall_s=time.perf_counter() - began, drift_report_cpu_s=_cpu_seconds() - cpu, drift_report_changed=bool(third["changed"]),
                          drift_report_failed=third.get("failed_message"),
                          drift_report_drifted=(third.get("summary") or {}).get("drifted"))
    return answer


def converge_noop(kube, workdir, tree, tag):
    """A fresh stack ``bench-<tag>`` rolled out and re-run by ``tree``'s engine: the child's answer with the no-op's writes."""
    import bench_release  # pylint: disable=import-outside-toplevel
    charts_dir = Path(workdir) / tag
    recipe = bench_release.synthetic_recipe(charts_dir, tag=tag)
    params = dict(recipe=recipe, kubeconfig=kube.kubeconfig_for("release"), helm_binary=str(REPO / ".venv" / "bin" / os.environ.get("AICR_BENCH_HELM", "helm")),
                  repository_mirrors={bench_release.REPOSITORY: str(charts_dir)}, concurrency=4, timeout=120, overall_timeout=600,
                  poll_interval=0.1, state="present", stack="bench-%s" % tag, lease_namespace="aicr-system",
                  cache_dir=os.path.join(workdir, "cache-%s" % tag), early_start=True)
    mark = kube.audit_mark()
    request = {"params": params, "drift_report": DRIFT_REPORT}
    child = subprocess.run([sys.executable, str(HERE), "--child", str(tree)], input=json.dumps(request),
                           capture_output=True, text=True, check=False, cwd=str(tree))
    if child.returncode != 0:
        raise RuntimeError("the engine's process for %s failed (exit %d): %s" % (tree, child.returncode, child.stderr[-3000:]))
    answer = json.loads(child.stdout)
    if not answer["engine_file_resolved"].startswith(str(Path(tree).resolve()) + os.sep):
        raise RuntimeError("the child for %s ran the engine of %s" % (tree, answer["engine_file_resolved"]))
    if answer["rollout_failed"] or answer.get("noop_failed"):
        raise RuntimeError("%s: %s" % (tree, answer["rollout_failed"] or answer["noop_failed"]))
    if answer.get("drift_report_failed") or answer.get("drift_report_drifted"):
        raise RuntimeError("%s: drift: report found %s" % (tree, answer.get("drift_report_failed") or answer["drift_report_drifted"]))
    if "drift_began" in answer:
        after = [e for e in kube.audit(since=mark, user=kube.user("release")) if e["time"] >= answer["drift_began"]]
        answer["drift_report_writes"] = len([e for e in after if e["mutating"] and "dryRun" not in (e.get("query") or "")])
        answer["drift_report_requests"] = len(after)
    during = [e for e in kube.audit(since=mark, user=kube.user("release")) if answer["noop_began"] <= e["time"] < answer.get("drift_began", float("inf"))]
    mutating = [e for e in during if e["mutating"]]
    answer["noop_writes"] = len([e for e in mutating if "dryRun" not in (e.get("query") or "")])
    answer["noop_dry_run_writes"] = len(mutating) - answer["noop_writes"]
    answer["noop_requests"] = len(during)
    answer["noop_write_samples"] = ["%s %s" % (e["verb"], e["path"]) for e in mutating[:3]]
    return answer


def _summary(answers):
    walls = [a["noop_wall_s"] for a in answers]
    return {
        "noop_wall_s": [round(w, 3) for w in walls],
        "noop_wall_median_s": round(statistics.median(walls), 3),
        "noop_wall_min_max_s": [round(min(walls), 3), round(max(walls), 3)],
        "noop_cpu_median_s": round(statistics.median(a["noop_cpu_s"] for a in answers), 3),
        "noop_writes": [a["noop_writes"] for a in answers],
        "noop_dry_run_writes": [a["noop_dry_run_writes"] for a in answers],
        "noop_changed": [a["noop_changed"] for a in answers],
        "noop_requests": [a["noop_requests"] for a in answers],
        "rollout_wall_median_s": round(statistics.median(a["rollout_wall_s"] for a in answers), 2),
        "engine_file": sorted(set(a["engine_file_resolved"] for a in answers)),
        "tree_commit": sorted(set(a["tree_commit"] for a in answers)),
    }


def run():
    sys.path.insert(0, str(HERE.parent))  # bench_release: the synthetic recipe (the parent only; the children import nothing of it)
    sys.path.insert(0, str(REPO))
    import tests.conftest  # noqa: F401  pylint: disable=import-outside-toplevel,unused-import
    from aicr_lab.kube import Kube  # pylint: disable=import-outside-toplevel

    base_tree = os.environ.get("AICR_BENCH_BASE_TREE")
    trees = [("head", str(REPO))]
    if base_tree:
        trees.insert(0, ("base", str(Path(base_tree).resolve())))
    figures = {"rounds": ROUNDS, "components": 20, "concurrency": 4, "loadavg_start": [round(x, 2) for x in os.getloadavg()],
               "trees": dict(trees), "target_difference_s": TARGET_DIFFERENCE_S}
    if not base_tree:
        figures["base"] = "missing: set AICR_BENCH_BASE_TREE to a checkout of the code before to compare"
    workdir = tempfile.mkdtemp(prefix="bench-noop-")
    kube = Kube.start(Path(workdir) / "controlplane")
    try:
        figures["cluster"] = "lab control plane %s (kwok nodes), identity release" % kube.rest.get("/version")["gitVersion"]
        answers = dict((label, []) for label, _tree in trees)
        order = []
        for index in range(ROUNDS):
            turn = trees if index % 2 == 0 else list(reversed(trees))
            order.append([label for label, _tree in turn])
            for label, tree in turn:
                answers[label].append(converge_noop(kube, workdir, tree, "n%d%s" % (index, label)))
        figures["order"] = order
        for label, _tree in trees:
            figures[label] = _summary(answers[label])
        for label, _tree in trees:
            drift_rounds = [a for a in answers[label] if "drift_report_wall_s" in a]
            if not drift_rounds:
                continue
            walls = [a["drift_report_wall_s"] for a in drift_rounds]
            figures["%s_drift_report" % label] = {
                "wall_s": [round(w, 3) for w in walls], "wall_median_s": round(statistics.median(walls), 3),
                "minus_noop_median_s": round(statistics.median(a["drift_report_wall_s"] - a["noop_wall_s"] for a in drift_rounds), 3),
                "cpu_median_s": round(statistics.median(a["drift_report_cpu_s"] for a in drift_rounds), 3),
                "cpu_minus_noop_median_s": round(statistics.median(a["drift_report_cpu_s"] - a["noop_cpu_s"] for a in drift_rounds), 3),
                "target_added_s": DRIFT_TARGET_ADDED_S, "writes": [a["drift_report_writes"] for a in drift_rounds],
                "requests": [a["drift_report_requests"] for a in drift_rounds], "changed": [a["drift_report_changed"] for a in drift_rounds]}
        if base_tree:
            difference = figures["head"]["noop_wall_median_s"] - figures["base"]["noop_wall_median_s"]
            figures["head_minus_base_median_s"] = round(difference, 3)
            figures["head_minus_base_per_round_s"] = [round(h["noop_wall_s"] - b["noop_wall_s"], 3) for b, h in zip(answers["base"], answers["head"])]
            figures["within_target"] = difference <= TARGET_DIFFERENCE_S
        figures["write_free"] = all(a["noop_writes"] == 0 and not a["noop_changed"] and not a.get("drift_report_writes") and not a.get("drift_report_changed")
                                    for tree_answers in answers.values() for a in tree_answers)
        return figures
    finally:
        kube.stop()
        shutil.rmtree(workdir, ignore_errors=True)
        figures["loadavg_end"] = [round(x, 2) for x in os.getloadavg()]


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"] and len(sys.argv) == 3:
        print(json.dumps(_child(sys.argv[2], json.load(sys.stdin))))
    else:
        print(json.dumps(run(), indent=2))
