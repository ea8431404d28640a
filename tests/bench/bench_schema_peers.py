#!/usr/bin/env python
"""values_schema beside its peers (issue #38, item 4), when their binaries are given.

* ``crdify``: crdify v0.5.0 (a whole process per pair, as a user runs it) against ``compat.compare`` with
  ``compat_profile: crdify`` in-process, warm, on the CRD pairs of kube-prometheus-stack (the largest CRD: every
  mutation of ``tests/oracles/schema_cases.py``) and the ``../shared/crd-compat`` cases. Per pair, the best of
  ``$AICR_BENCH_REPEAT`` (default 5); figures: medians and totals, and how many pairs gave identical findings.
* ``generators``: losisin/helm-values-schema-json v2.5.0 and dadav/helm-schema 0.23.4 (whole processes, the command
  of ``schema_peers.py``) against values_schema's engine in-process, warm (``engine.run``, output ``json_schema``: the
  chart read, references resolved, the safety net), on kube-prometheus-stack and on the whole corpus (30 charts, one
  pass, best pass of the repeats). Target (issue): ours ≤ the faster peer's whole process. Wall seconds are what the
  ratios use; CPU seconds are given beside them (a shared, loaded machine stretches wall times).

A peer is used only when its binary is given: ``$AICR_PEER_CRDIFY``, ``$AICR_PEER_LOSISIN``, ``$AICR_PEER_DADAV``
(built outside the clone, see tests/oracles/schema_peers.py); otherwise its figures are ``skipped: <why>``.
All figures come from one run of this bench.
"""

import importlib.util
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parents[1]
sys.path.insert(0, str(BENCH_DIR))
import bench_schema  # noqa: E402  pylint: disable=wrong-import-position  # exposes the repository as the collection

from ansible_collections.aicr.runtime.plugins.module_utils._schema import compat, engine  # noqa: E402  pylint: disable=wrong-import-position


def _load(name):
    spec = importlib.util.spec_from_file_location(name, str(REPO / "tests" / "oracles" / ("%s.py" % name)))
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


cases = _load("schema_cases")
peers = _load("schema_peers")


def _given(tool):
    """(binary, None) or (None, why it is skipped): only the environment variable counts here."""
    variable = peers.PEERS[tool]["env"]
    binary = os.environ.get(variable)
    if not binary:
        return None, "skipped: $%s is not set (the path of a %s %s binary)" % (variable, peers.PEERS[tool]["source"], peers.PEERS[tool]["rev"])
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        return None, "skipped: $%s=%s is not an executable file" % (variable, binary)
    return binary, None


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _best(func, repeat):
    """(best wall seconds, the CPU seconds of that round: this process and its children) of ``repeat`` calls."""
    best = None
    for _round in range(repeat):
        cpu = time.process_time() + _children_cpu()
        began = time.perf_counter()
        func()
        wall = time.perf_counter() - began
        if best is None or wall < best[0]:
            best = (wall, time.process_time() + _children_cpu() - cpu)
    return best


def _ratio(ours, theirs):
    return round(ours / theirs, 3) if theirs else None


def crdify_figures(binary, repeat):
    kps = cases.chart_crd(bench_schema.CORPUS / "kube-prometheus-stack")
    pairs = [cases.mutate(kps, "kube-prometheus-stack", m) for m in cases.MUTATION_NAMES]
    pairs = [(old, new) for old, new, _path in (p for p in pairs if p)] + [(old, new) for _id, old, new in cases.compat_cases(bench_schema.SHARED)]
    crdify_s, ours_s, identical = [], [], 0
    with tempfile.TemporaryDirectory(prefix="aicr-bench-crdify-") as workdir:
        for old, new in pairs:
            found = []
            crdify_s.append(_best(lambda o=old, n=new: found.append(peers.run_crdify(binary, o, n, workdir)[1]), repeat)[0])
            compat.compare(old, new, profile="crdify")  # warm
            ours_s.append(_best(lambda o=old, n=new: compat.compare(o, n, profile="crdify"), repeat)[0])
            identical += found[-1] == cases.our_findings(old, new)
    ratios = [o / c for o, c in zip(ours_s, crdify_s) if c]
    return {"pairs": len(pairs), "findings_identical": identical, "crdify_process_median_s": round(statistics.median(crdify_s), 4),
            "ours_in_process_median_s": round(statistics.median(ours_s), 5), "ours_over_crdify_median": round(statistics.median(ratios), 4),
            "ours_over_crdify_max": round(max(ratios), 4), "crdify_total_s": round(sum(crdify_s), 3), "ours_total_s": round(sum(ours_s), 4),
            "note": "crdify's per-pair time includes writing both CRDs as JSON files (as its file:// sources need)"}


def _stage_all(tool, charts, root):
    staged = []
    for chart in charts:
        workdir = Path(root) / chart.name
        workdir.mkdir()
        peers.stage_chart(chart, workdir, tool == "dadav")
        staged.append(workdir)
    return staged


def _run_peer(argv, workdir):
    done, _seconds = peers._run(argv, workdir)  # pylint: disable=protected-access
    if done.returncode != 0:
        raise RuntimeError("%s failed in %s: %s" % (argv[0], workdir, (done.stderr or "")[-300:]))


def generator_figures(binaries, repeat):
    charts = cases.corpus_charts(bench_schema.SHARED)
    kps = [c for c in charts if c.name == "kube-prometheus-stack"][0]

    def ours_kps():
        engine.run({"chart": str(kps), "output": "json_schema"})

    def ours_corpus():
        for chart in charts:
            engine.run({"chart": str(chart), "output": "json_schema"})

    ours_corpus()  # warm: imports, the pinned Kubernetes definitions, caches
    figures = {"ours": {"kube_prometheus_stack": _best(ours_kps, repeat), "corpus": _best(ours_corpus, max(1, repeat // 2))}}
    with tempfile.TemporaryDirectory(prefix="aicr-bench-generators-") as root:
        for tool, binary in binaries.items():
            Path(root, tool).mkdir()
            staged = dict(zip([c.name for c in charts], _stage_all(tool, charts, Path(root, tool))))
            argv = peers.generator_argv(tool, binary)
            figures[tool] = {"kube_prometheus_stack": _best(lambda: _run_peer(argv, staged["kube-prometheus-stack"]), repeat),
                             "corpus": _best(lambda: [_run_peer(argv, w) for w in staged.values()], max(1, repeat // 2))}
    result = {"charts": len(charts)}
    for tool, measured in figures.items():
        result[tool] = dict(("%s_%s" % (what, unit), round(value, 4)) for what, pair in measured.items() for unit, value in zip(("wall_s", "cpu_s"), pair))
    for what in ("kube_prometheus_stack", "corpus"):
        walls = dict((tool, figures[tool][what][0]) for tool in binaries)
        if walls:
            faster = min(walls, key=walls.get)
            ours = figures["ours"][what][0]
            result["%s_faster_peer" % what] = faster
            result["%s_ours_over_faster_peer" % what] = _ratio(ours, walls[faster])
            result["%s_within_target" % what] = ours <= walls[faster]
            for tool, wall in walls.items():
                result["%s_ours_over_%s" % (what, tool)] = _ratio(ours, wall)
    return result


def run():
    repeat = int(os.environ.get("AICR_BENCH_REPEAT", "5"))
    result = {"repeat": repeat, "target": "ours in-process <= the faster peer's whole process"}
    binary, why = _given("crdify")
    result["crdify"] = crdify_figures(binary, repeat) if binary else why
    binaries, skipped = {}, {}
    for tool in ("losisin", "dadav"):
        binary, why = _given(tool)
        if binary:
            binaries[tool] = binary
        else:
            skipped[tool] = why
    result["generators"] = generator_figures(binaries, repeat) if binaries else \
        "skipped: neither generator given (%s)" % "; ".join(why[len("skipped: "):] for why in skipped.values())
    if binaries and skipped:
        result["generators"]["skipped"] = skipped
    return result


if __name__ == "__main__":
    import json
    print(json.dumps(run(), indent=2, sort_keys=True))
