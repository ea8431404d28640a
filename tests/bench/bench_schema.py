"""values_schema figures: inference speed on the corpus, and type agreement with the shipped values.schema.json.

``run()`` returns:
- ``kube_prometheus_stack``: values.yaml (208 KB) → JSON Schema, best of N runs (target ≤ 0.1 s), and → CRD;
- ``corpus``: all 30 charts → JSON Schema and CRD (+ structural check), best of N (target ≤ 1.5 s);
- ``agreement``: for the 9 charts shipping a values.schema.json, per property present in both, how often our
  inferred type equals theirs, with every disagreement counted by class (see docs/modules/values_schema.md);
- ``engine``: the whole engine (references resolved, the safety net validating the chart's own values against the
  JSON Schema and the CRD) on kube-prometheus-stack and on the corpus, and on the peers' testdata
  (``values-schema-reference``): how many inputs' own values pass both outputs. The peers' own binaries cannot be
  built here (the Go module proxy refuses them), so there is no peer wall time to divide by;
- ``coverage``: per input (the 30 corpus charts and the 43 peer testdata inputs), the typed share of value leaves, the
  described share of documented keys, self-validity and the engine's wall time, as ``schema_coverage.py`` defines
  them (the unit test ``test_corpus_coverage.py`` asserts the targets on the same figures).
"""

import importlib.util
import json
import os
import sys
import time
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[2]
DEV_ROOT = REPO_ROOT / ".build" / "dev"


def _expose_collection():
    link = DEV_ROOT / "ansible_collections" / "aicr" / "runtime"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            link.symlink_to(REPO_ROOT, target_is_directory=True)
        except FileExistsError:
            pass
    if str(DEV_ROOT) not in sys.path:
        sys.path.insert(0, str(DEV_ROOT))


_expose_collection()

from ansible_collections.aicr.runtime.plugins.module_utils._common import validation  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.aicr.runtime.plugins.module_utils._schema import crd, engine, infer  # noqa: E402  pylint: disable=wrong-import-position
from ansible_collections.aicr.runtime.plugins.module_utils._schema import jsonschema, structural  # noqa: E402  pylint: disable=wrong-import-position

SHARED = Path(os.environ.get("AICR_SHARED") or REPO_ROOT.parent / "shared")


def _coverage_module():
    spec = importlib.util.spec_from_file_location("schema_coverage", str(Path(__file__).resolve().parent / "schema_coverage.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


CORPUS = SHARED / "values-corpus"


def _best(func, repeat):
    best = None
    for _round in range(repeat):
        began = time.perf_counter()
        func()
        elapsed = time.perf_counter() - began
        best = elapsed if best is None else min(best, elapsed)
    return best


def _charts():
    return sorted(p for p in CORPUS.iterdir() if (p / "values.yaml").is_file())


def _corpus_inputs():
    inputs = []
    for chart in _charts():
        name = yaml.safe_load((chart / "Chart.yaml").read_text())["name"]
        inputs.append((name, (chart / "values.yaml").read_text()))
    return inputs


def _whole_corpus(inputs):
    for name, text in inputs:
        node = infer.infer_text(text, name)
        jsonschema.to_json_schema(node)
        doc, _dropped = crd.build_crd(node, name)
        if structural.check_crd(doc):
            raise AssertionError("%s: CRD not structural" % name)


# --- agreement --------------------------------------------------------------------

def _resolve(schema, root, depth=0):
    while isinstance(schema, dict) and "$ref" in schema and str(schema["$ref"]).startswith("#/") and depth < 50:
        target = root
        for part in schema["$ref"][2:].split("/"):
            target = target.get(part, {})
        merged = dict(target)
        merged.update(dict((k, v) for k, v in schema.items() if k != "$ref"))
        schema = merged
        depth += 1
    return schema


def _flatten(schema, root, path="", out=None, depth=0):
    if out is None:
        out = {}
    schema = _resolve(schema, root)
    if not isinstance(schema, dict) or depth > 60:
        return out
    if path:
        out[path] = schema
    for key, child in (schema.get("properties") or {}).items():
        _flatten(child, root, "%s.%s" % (path, key) if path else key, out, depth + 1)
    items = schema.get("items")
    if isinstance(items, dict):
        _flatten(items, root, path + "[]", out, depth + 1)
    for junctor in ("allOf", "anyOf", "oneOf"):
        for sub in schema.get(junctor) or []:
            sub = _resolve(sub, root)
            if isinstance(sub, dict) and sub.get("properties"):
                _flatten(sub, root, path, out, depth + 1)
    return out


def _type_set(schema, root):
    schema = _resolve(schema, root)
    types = schema.get("type")
    if types is None:
        collected = set()
        for junctor in ("anyOf", "oneOf"):
            for sub in schema.get(junctor) or []:
                collected |= _type_set(sub, root)
        return collected
    if isinstance(types, str):
        types = [types]
    return set(types) - {"null"}


def classify(ours, theirs):
    """Agreement class of our inferred type set vs theirs (both without null)."""
    if ours == theirs:
        return "agree"
    if not theirs:
        return "theirs_untyped"
    if not ours:
        return "ours_untyped_null_default"
    if ours == {"integer", "string"} and theirs <= {"integer", "string", "number"}:
        return "ours_int_or_string"
    if ours == {"integer"} and theirs == {"number"}:
        return "integer_vs_number"
    if ours == {"number"} and theirs == {"integer"}:
        return "number_vs_integer"
    if ours == {"string"} and theirs & {"integer", "number", "boolean"}:
        return "quoted_scalar_vs_typed"
    if ours <= theirs:
        return "theirs_wider"
    if theirs <= ours:
        return "ours_wider"
    return "other"


def agreement():
    charts = {}
    totals = {"compared": 0, "agree": 0, "classes": {}, "only_theirs": 0, "only_ours": 0}
    for chart in _charts():
        shipped = chart / "values.schema.json"
        if not shipped.is_file():
            continue
        theirs_root = json.loads(shipped.read_text())
        ours_root = jsonschema.to_json_schema(infer.infer_text((chart / "values.yaml").read_text(), chart.name))
        theirs = _flatten(theirs_root, theirs_root)
        ours = _flatten(ours_root, ours_root)
        classes = {}
        examples = {}
        compared = agree = 0
        for path, their_node in theirs.items():
            if path not in ours:
                continue
            their_types = _type_set(their_node, theirs_root)
            our_types = _type_set(ours[path], ours_root)
            if not their_types and not our_types:
                continue
            compared += 1
            label = classify(our_types, their_types)
            classes[label] = classes.get(label, 0) + 1
            if label == "agree":
                agree += 1
            elif label not in examples:
                examples[label] = {"path": path, "ours": sorted(our_types), "theirs": sorted(their_types)}
        only_theirs = len([p for p in theirs if p not in ours])
        only_ours = len([p for p in ours if p not in theirs])
        charts[chart.name] = {"compared": compared, "agree": agree, "rate": round(agree / compared, 4) if compared else None,
                              "classes": classes, "examples": examples, "only_theirs": only_theirs, "only_ours": only_ours}
        totals["compared"] += compared
        totals["agree"] += agree
        totals["only_theirs"] += only_theirs
        totals["only_ours"] += only_ours
        for label, count in classes.items():
            totals["classes"][label] = totals["classes"].get(label, 0) + count
    totals["rate"] = round(totals["agree"] / totals["compared"], 4) if totals["compared"] else None
    return {"charts": charts, "total": totals}


PEER_SKIPPED = ("invalid-schema.yaml", "fail-type.yaml", "malformed.yaml", "values-bad.yaml")


def _peer_inputs():
    ref = SHARED / "values-schema-reference"
    found = sorted((ref / "losisin-helm-values-schema-json" / "testdata").rglob("*.yaml"))
    found += sorted((ref / "dadav-helm-schema" / "tests").rglob("values.yaml")) + sorted((ref / "dadav-helm-schema" / "tests" / "charts").glob("test_*.yaml"))
    return [p for p in found if p.name not in PEER_SKIPPED and p.name != "Chart.yaml" and "expected" not in p.name]


def _own_values_pass(params, values):
    schema = engine.run(dict(params, output="json_schema"))["schema"]
    values_schema = crd.values_schema_of(engine.run(dict(params, output="crd", name="bench"))["crd"])
    crd_json = dict(structural.to_json_schema(values_schema), **{"$schema": jsonschema.DRAFTS["2020-12"]})
    return not validation.validate(schema, values) and not validation.validate(crd_json, values) and not structural.prune(values, values_schema)[1]


def engine_figures(repeat):
    kps = {"chart": str(CORPUS / "kube-prometheus-stack"), "output": "json_schema"}
    charts = [{"chart": str(c)} for c in _charts()]
    whole = _best(lambda: [engine.run(dict(c, output="json_schema")) and engine.run(dict(c, output="crd")) for c in charts], max(1, repeat // 2))
    peers = _peer_inputs()
    passing = sum(1 for p in peers if _own_values_pass({"values_files": [str(p)]}, infer.load_values(p.read_text())))
    return {"kube_prometheus_stack_json_schema_s": round(_best(lambda: engine.run(kps), repeat), 4),
            "corpus_json_schema_and_crd_s": round(whole, 4), "peer_inputs": len(peers), "peer_inputs_own_values_pass": passing}


def run():
    kps = (CORPUS / "kube-prometheus-stack" / "values.yaml").read_text()
    inputs = _corpus_inputs()
    repeat = int(os.environ.get("AICR_BENCH_REPEAT", "5"))
    coverage = _coverage_module()
    to_schema = _best(lambda: jsonschema.to_json_schema(infer.infer_text(kps)), repeat)
    to_crd = _best(lambda: crd.build_crd(infer.infer_text(kps), "kube-prometheus-stack"), repeat)
    corpus = _best(lambda: _whole_corpus(inputs), repeat)
    return {
        "kube_prometheus_stack": {"bytes": len(kps.encode("utf-8")), "values_to_schema_s": round(to_schema, 4),
                                  "values_to_crd_s": round(to_crd, 4), "target_s": 0.1, "within_target": to_schema <= 0.1},
        "corpus": {"charts": len(inputs), "to_schema_and_crd_s": round(corpus, 4), "target_s": 1.5, "within_target": corpus <= 1.5},
        "agreement": agreement(),
        "engine": engine_figures(repeat),
        "coverage": coverage.summary(coverage.measure_all(SHARED)),
        "repeat": repeat,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, sort_keys=True))
