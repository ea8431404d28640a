#!/usr/bin/env python
"""The AICR CLI v0.19.0 beside our recipe lookup (issue #38 item 4), when ``$AICR_ORACLE_AICR`` names the binary.

The binary is built outside the clone (docs/modules/recipe_resolve.md, "Conformance"); without it this bench reports
``skipped`` and why. Both answer the same questions from the same catalog (AICR's embedded v0.19.0 ``recipes/``, ours
``../shared/aicr/catalog``, the same files):

* per query: each of ``QUERIES`` (leaf recipes of several services, a profile, a refusal) answered
  ``AICR_BENCH_REPEAT`` times (default 5) - AICR as a whole process (``aicr recipe ... --format json``, what a
  playbook's ``command`` task or a script pays), ours as the ``aicr.runtime.recipe`` lookup in a warm process (the
  plugin loaded by Ansible's plugin loader, the catalog already parsed, its files re-checked on each call as a
  lookup in a loop does). Figures: the median per query of each, and their ratio;
* the whole criteria space: every combination of the catalog's dimension values (``tests/oracles/aicr_cases``),
  AICR one process per query, ours one lookup per query in one process; total wall seconds and their ratio.
  ``AICR_BENCH_SPACE_LIMIT`` caps the number of queries (default: all of them).

The ratios come from one run on one machine (``machine`` in the report), both measured back to back.
"""

import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ["AICR_SHARED"]) if os.environ.get("AICR_SHARED") else REPO.parent / "shared"
CATALOG = SHARED / "aicr" / "catalog"
DEV_PATH = REPO / ".build" / "dev"
ENV = "AICR_ORACLE_AICR"
QUERIES = (
    {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"},
    {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "inference", "platform": "dynamo"},
    {"service": "gke", "accelerator": "h100", "os": "cos", "intent": "training"},
    {"service": "aks", "accelerator": "h100", "intent": "training"},
    {"service": "kind", "intent": "training"},
    {"service": "oke", "accelerator": "gb200", "os": "ol", "intent": "training"},
    {"service": "eks", "accelerator": "gb200", "os": "ubuntu", "intent": "training", "platform": "slurm"},
    {"service": "eks", "accelerator": "h100"},  # a refusal: AICR asks for an OS
)


def _skip(why):
    return {"skipped": why}


def _aicr_argv(binary, query):
    argv = [binary, "recipe"]
    for dim in ("service", "accelerator", "intent", "os", "platform"):
        if query.get(dim):
            argv += ["--" + dim, query[dim]]
    return argv + ["--format", "json"]


def _aicr_timer(binary):
    home = tempfile.mkdtemp(prefix="aicr-bench-home-")
    env = {"PATH": "/usr/bin:/bin", "HOME": home, "KUBECONFIG": os.devnull, "NO_COLOR": "1"}

    def timed(query):
        began = time.perf_counter()
        subprocess.run(_aicr_argv(binary, query), cwd=home, env=env, capture_output=True, check=False)
        return time.perf_counter() - began
    return timed


def _lookup():
    """The recipe lookup as Ansible loads it (from this checkout, exposed as a collection under .build/dev)."""
    link = DEV_PATH / "ansible_collections" / "aicr" / "runtime"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(REPO, target_is_directory=True)
    from ansible.parsing.dataloader import DataLoader  # pylint: disable=import-outside-toplevel
    from ansible.plugins.loader import init_plugin_loader, lookup_loader  # pylint: disable=import-outside-toplevel
    init_plugin_loader([str(DEV_PATH)])
    plugin = lookup_loader.get("aicr.runtime.recipe", loader=DataLoader(), templar=None)
    if plugin is None:
        raise RuntimeError("the aicr.runtime.recipe lookup was not found under %s" % DEV_PATH)
    from ansible.errors import AnsibleLookupError  # pylint: disable=import-outside-toplevel

    def timed(query):
        terms = ["%s=%s" % (k, v) for k, v in sorted(query.items())]
        began = time.perf_counter()
        try:
            plugin.run(terms, variables={}, catalog=str(CATALOG), result="recipe", use_cache=False)
        except AnsibleLookupError:
            pass  # a refusal is an answer too
        return time.perf_counter() - began
    return timed


def _space():
    sys.path.insert(0, str(REPO / "tests" / "oracles"))
    import aicr_cases  # pylint: disable=import-outside-toplevel,import-error
    import yaml  # pylint: disable=import-outside-toplevel

    def load(path):
        with open(path) as handle:
            return yaml.safe_load(handle)
    return list(aicr_cases.criteria_space(aicr_cases.criteria_values(CATALOG, load)))


def run():
    binary = os.environ.get(ENV)
    if not binary:
        return _skip("%s is not set: build the AICR CLI v0.19.0 outside the clone (docs/modules/recipe_resolve.md, Conformance) "
                     "and set %s=/path/to/aicr" % (ENV, ENV))
    if not (os.path.isfile(binary) and os.access(binary, os.X_OK)):
        return _skip("%s=%s is not an executable file" % (ENV, binary))
    repeat = int(os.environ.get("AICR_BENCH_REPEAT") or 5)
    aicr, ours = _aicr_timer(binary), _lookup()
    for query in QUERIES:  # warm both: the page cache for the binary, the parsed catalog for the lookup
        aicr(query)
        ours(query)
    per_query = []
    for query in QUERIES:
        a = statistics.median([aicr(query) for _index in range(repeat)])
        o = statistics.median([ours(query) for _index in range(repeat)])
        per_query.append({"query": query, "aicr_process_ms": round(a * 1000, 2), "ours_lookup_warm_ms": round(o * 1000, 3),
                          "ratio_aicr_over_ours": round(a / o, 1)})
    space = _space()
    limit = int(os.environ.get("AICR_BENCH_SPACE_LIMIT") or 0)
    if limit:
        space = space[:limit]
    began = time.perf_counter()
    for query in space:
        ours(query)
    ours_total = time.perf_counter() - began
    began = time.perf_counter()
    for query in space:
        aicr(query)
    aicr_total = time.perf_counter() - began
    medians_a = round(statistics.median([q["aicr_process_ms"] for q in per_query]), 2)
    medians_o = round(statistics.median([q["ours_lookup_warm_ms"] for q in per_query]), 3)
    return {
        "binary": binary,
        "per_query": per_query,
        "per_query_median_aicr_process_ms": medians_a,
        "per_query_median_ours_lookup_warm_ms": medians_o,
        "per_query_ratio_aicr_over_ours": round(medians_a / medians_o, 1),
        "space_queries": len(space),
        "space_aicr_processes_s": round(aicr_total, 2),
        "space_ours_lookup_warm_s": round(ours_total, 3),
        "space_ratio_aicr_over_ours": round(aicr_total / ours_total, 1),
        "target": "ours in-process <= the peer's whole process (per query and over the space)",
        "repeat": repeat,
    }


if __name__ == "__main__":
    import json
    print(json.dumps(run(), indent=2, sort_keys=True))
