"""Type agreement with the 9 shipped values.schema.json: every disagreement falls in an explained class."""

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[5] / "tests" / "bench" / "bench_schema.py"
EXPLAINED = {"agree", "integer_vs_number", "ours_int_or_string", "theirs_untyped"}


def _bench():
    spec = importlib.util.spec_from_file_location("bench_schema", str(BENCH))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_classify():
    bench = _bench()
    assert bench.classify({"integer"}, {"integer"}) == "agree"
    assert bench.classify({"integer"}, {"number"}) == "integer_vs_number"
    assert bench.classify({"integer", "string"}, {"string"}) == "ours_int_or_string"
    assert bench.classify(set(), {"string"}) == "ours_untyped_null_default"
    assert bench.classify({"string"}, {"boolean"}) == "quoted_scalar_vs_typed"
    assert bench.classify({"object"}, {"array"}) == "other"


def test_agreement_with_shipped_schemas(shared_dir):
    result = _bench().agreement()
    charts = result["charts"]
    assert len(charts) == 9
    total = result["total"]
    assert total["compared"] > 1000
    assert set(total["classes"]) <= EXPLAINED, total["classes"]
    assert total["rate"] >= 0.9
    for name in ("bitnami-nginx", "bitnami-postgresql"):
        assert charts[name]["rate"] == 1.0
    assert shared_dir.is_dir()
