#!/usr/bin/env python
"""Our recipe engine against the AICR goldens: every case answered again, in process, and compared exactly.

Used by the unit tests (tests/unit/plugins/module_utils/_recipe/test_recipe_aicr_oracle.py) and on its own to print
the agreement figures (``python tests/oracles/compare_aicr.py [--engine-root DIR]``: ``DIR`` holds an
``ansible_collections/aicr/runtime`` tree, e.g. an older checkout's, to measure it instead of this one).

An AICR answer is a RecipeResult or a refusal. Ours agrees when ``recipe_resolve``'s ``recipe`` equals the RecipeResult
(as JSON: every key, list order included) or, for a refusal, when our error message equals AICR's (its ``[CODE]``
prefix aside). Snapshot cases resolve ``snapshot.json`` (the case's Snapshot, written into a working directory), as
the oracle did, so a message naming the file names it alike.
"""

import argparse
import gzip
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
GOLDEN = HERE / "golden" / "aicr"
KINDS = ("criteria", "snapshots")


def _read(name):
    with gzip.open(str(GOLDEN / ("%s.json.gz" % name)), "rt", encoding="utf-8") as handle:
        return json.load(handle)


def load_golden(kind):
    """One golden file with its results whole again (their componentRefs, constraints and validation are pooled)."""
    doc = _read(kind)
    pool = _read("pool")["pool"]
    for name, result in doc["results"].items():
        whole = dict(result)
        if "componentRefs" in whole:
            whole["componentRefs"] = [pool[key] for key in whole["componentRefs"]]
        for field in ("constraints", "validation"):
            if field in whole:
                whole[field] = pool[whole[field]]
        doc["results"][name] = whole
    return doc


def _json(doc):
    return json.loads(json.dumps(doc))


def answer(resolve_loaded, error_type, cat, query, profile=None, snapshot=None):
    """{"recipe": ...} or {"error": msg} - what our engine says to one case."""
    try:
        result = resolve_loaded(cat, criteria=dict(query), profile=profile, snapshot=snapshot)
    except error_type as exc:
        return {"error": exc.msg}
    return {"recipe": _json(result["recipe"])}


def agrees(case, ours, results):
    if "result" in case:
        return "recipe" in ours and ours["recipe"] == results[case["result"]]
    return "error" in ours and ours["error"] == case["error"]


def describe(case, ours, results):
    want = ("recipe %s" % case["result"]) if "result" in case else ("refusal: %s" % case["error"])
    if "recipe" in ours:
        got = "recipe"
        expected = results.get(case.get("result"))
        if expected is not None:
            keys = sorted(k for k in set(expected) | set(ours["recipe"]) if expected.get(k) != ours["recipe"].get(k))
            got = "recipe differing in %s" % ", ".join(keys)
            if "metadata" in keys:
                mkeys = sorted(k for k in set(expected["metadata"]) | set(ours["recipe"]["metadata"])
                               if expected["metadata"].get(k) != ours["recipe"]["metadata"].get(k))
                got += " (metadata: %s)" % ", ".join(mkeys)
    else:
        got = "refusal: %s" % ours["error"]
    label = dict(case.get("query") or {})
    if case.get("profile"):
        label["profile"] = case["profile"]
    if case.get("snapshot"):
        label["snapshot"] = case["snapshot"]
    return "%s: AICR %s; ours %s" % (json.dumps(label, sort_keys=True), want, got)


def compare(kind, resolve_loaded, error_type, cat, limit=None):
    """{"cases", "agree", "recipes", "refusals", "disagreements": [...first ones], "kinds": {...}} for one golden file."""
    golden = load_golden(kind)
    results = golden["results"]
    cases = golden["cases"][:limit] if limit else golden["cases"]
    out = {"cases": len(cases), "agree": 0, "recipes": 0, "refusals": 0, "recipes_agree": 0, "refusals_agree": 0,
           "outcome_agree": 0, "disagreements": []}
    workdir = tempfile.mkdtemp(prefix="aicr-compare-")
    here = os.getcwd()
    os.chdir(workdir)
    try:
        for case in cases:
            snapshot = None
            if kind == "snapshots":
                with open("snapshot.json", "w") as handle:
                    json.dump(golden["snapshots"][case["snapshot"]], handle)
                snapshot = "snapshot.json"
            ours = answer(resolve_loaded, error_type, cat, case.get("query") or {}, case.get("profile"), snapshot)
            refused = "result" not in case
            out["refusals" if refused else "recipes"] += 1
            if refused == ("error" in ours):
                out["outcome_agree"] += 1
            if agrees(case, ours, results):
                out["agree"] += 1
                out["refusals_agree" if refused else "recipes_agree"] += 1
            else:
                out["disagreements"].append(describe(case, ours, results))
    finally:
        os.chdir(here)
    return out


def _engine(root):
    if root:
        sys.path.insert(0, str(root))
    else:
        dev = REPO / ".build" / "dev"
        link = dev / "ansible_collections" / "aicr" / "runtime"
        if not link.exists():
            link.parent.mkdir(parents=True, exist_ok=True)
            link.symlink_to(REPO, target_is_directory=True)
        sys.path.insert(0, str(dev))
    from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils._recipe import catalog as catalog_mod  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod  # pylint: disable=import-outside-toplevel
    return resolve_mod.resolve_loaded, AicrError, catalog_mod.load_catalog


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engine-root", help="a directory holding ansible_collections/aicr/runtime (default: this checkout)")
    parser.add_argument("--show", type=int, default=10, help="disagreements to print per kind")
    parser.add_argument("kinds", nargs="*", default=list(KINDS))
    args = parser.parse_args(argv[1:])
    resolve_loaded, error_type, load_catalog = _engine(args.engine_root)
    shared = Path(os.environ["AICR_SHARED"]) if os.environ.get("AICR_SHARED") else REPO.parent / "shared"
    cat = load_catalog(str(shared / "aicr" / "catalog"), persist=False)
    report = {}
    for kind in args.kinds:
        figures = compare(kind, resolve_loaded, error_type, cat)
        figures["disagreements_total"] = len(figures["disagreements"])
        figures["disagreements"] = figures["disagreements"][:args.show]
        report[kind] = figures
    print(json.dumps(report, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
