"""Conformance with AICR v0.19.0 on its own catalog (the oracle data in ../shared/aicr/conformance).

* coverage_golden.yaml: 427 queries (unstated = "" tier) -> success, or the coverage
  error with its uncovered dimensions and ordered valid completions, or the OS guard;
* deployment_order_guards.yaml: 13 dependency / ordering guards (unstated = any);
* recipes/*.yaml: chainsaw assertions on `aicr recipe` output;
* every leaf overlay resolves from its own criteria.
"""

import os
import re
from pathlib import Path

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import criteria as crit
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod

# Parametrisation happens at collection time, before fixtures exist: locate ../shared the
# way tests/conftest.py does ($AICR_SHARED, else beside the clone); the tests also take
# the shared_dir fixture, which fails loudly when the data is missing.
SHARED = Path(os.environ["AICR_SHARED"]) if os.environ.get("AICR_SHARED") else Path(__file__).resolve().parents[5].parent / "shared"
CONFORMANCE = SHARED / "aicr" / "conformance"
CATALOG = SHARED / "aicr" / "catalog"
_KEY = re.compile(r"^criteria\((.*)\)$")


def _load(name):
    path = CONFORMANCE / name
    if not path.is_file():  # collected without ../shared: the shared_dir fixture reports it
        return {}
    with open(str(path)) as handle:
        return yaml.safe_load(handle)


def _golden_cases():
    data = _load("coverage_golden.yaml") or {}
    return sorted(data.items())


def _guard_cases():
    return _load("deployment_order_guards.yaml") or []


def _recipe_files():
    folder = CONFORMANCE / "recipes"
    return sorted(folder.glob("*.yaml")) if folder.is_dir() else []


def parse_key(key):
    """'criteria(service=, accelerator=h100, ...)' -> {dim: value or ''}."""
    body = _KEY.match(key).group(1)
    out = {}
    for part in body.split(", "):
        dim, _sep, value = part.partition("=")
        out[dim] = value
    return out


def golden_string(query):
    """Criteria.String() of a query whose unstated dimensions are "" (not any)."""
    return "criteria(%s)" % ", ".join("%s=%s" % (d, query[d]) for d in crit.DIMENSIONS)


def test_golden_file_has_427_cases(aicr_conformance_dir):
    assert len(_golden_cases()) == 427


@pytest.mark.parametrize("key,expected", _golden_cases(), ids=[k for k, _expected in _golden_cases()])
def test_coverage_golden(aicr_catalog, key, expected):
    raw = parse_key(key)
    assert golden_string(raw) == key
    query = crit.parse_criteria(raw, aicr_catalog.registered)
    try:
        result = resolve_mod.build_recipe(aicr_catalog, query)
    except AicrError as exc:
        assert expected["outcome"] == "error", "unexpected error: %s" % exc.msg
        if expected.get("requiresOS"):
            assert exc.details.get("requires_os") is True, exc.msg
            assert "specify an OS (valid: " in exc.msg
            return
        assert not exc.details.get("requires_os"), exc.msg
        uncovered = exc.details["uncovered"]
        assert [u["dimension"] for u in uncovered] == expected["uncovered"]
        completions = dict((u["dimension"], u["validCompletions"]) for u in uncovered)
        assert completions == (expected.get("validCompletions") or {})
        assert "\n" not in exc.msg
        return
    assert expected["outcome"] == "success", "resolved but AICR says %r" % expected
    assert result["deploymentOrder"]


def test_guard_file_has_13_cases(aicr_conformance_dir):
    assert len(_guard_cases()) == 13


@pytest.mark.parametrize("case", _guard_cases(), ids=[c["name"] for c in _guard_cases()])
def test_deployment_order_guards(aicr_catalog, case):
    query = crit.parse_criteria(case["criteria"], aicr_catalog.registered)
    result = resolve_mod.build_recipe(aicr_catalog, query)
    refs = dict((r["name"], r) for r in result["componentRefs"])
    for component, deps in (case.get("requiredDeps") or {}).items():
        assert component in refs, "%s missing from the recipe" % component
        have = refs[component].get("dependencyRefs") or []
        for dep in deps:
            assert dep in have, "%s lacks dependency %s (has %s)" % (component, dep, have)
    order = result["deploymentOrder"]
    for first, second in case.get("requiredOrdering") or []:
        assert order.index(first) < order.index(second), "%s must deploy before %s: %s" % (first, second, order)


# -- chainsaw assertions ---------------------------------------------------------------

_FLAGS = {
    "eks-h100-ubuntu-training.yaml": dict(service="eks", accelerator="h100", os="ubuntu", intent="training"),
    "eks-h100-ubuntu-training-kubeflow.yaml": dict(service="eks", accelerator="h100", intent="training", os="ubuntu", platform="kubeflow"),
    "eks-gb200-ubuntu-training.yaml": dict(service="eks", accelerator="gb200", os="ubuntu", intent="training"),
    "eks-h100-ubuntu-inference-dynamo.yaml": dict(service="eks", accelerator="h100", intent="inference", os="ubuntu", platform="dynamo"),
}

_LENGTH = re.compile(r"^\(length\((?P<path>[A-Za-z_][A-Za-z0-9_]*)\) > `(?P<n>\d+)`\)$")
_FILTER = re.compile(r"^\((?P<path>[A-Za-z_][A-Za-z0-9_]*)\[\?(?P<field>[A-Za-z_]+) == '(?P<lit>[^']*)'\] \| length\(@\) > `(?P<n>\d+)`\)$")


def jmes_check(expression, document):
    """The two JMESPath forms the recipes use; any other form fails the test (never silently passes)."""
    found = _LENGTH.match(expression)
    if found:
        return len(document.get(found.group("path")) or []) > int(found.group("n"))
    found = _FILTER.match(expression)
    if found:
        items = [i for i in document.get(found.group("path")) or [] if isinstance(i, dict) and i.get(found.group("field")) == found.group("lit")]
        return len(items) > int(found.group("n"))
    raise AssertionError("unsupported JMESPath assertion %r" % expression)


def chainsaw_match(expected, actual, path="$"):
    """Chainsaw semantics: maps partial, arrays exact (length and order), JMESPath keys evaluated."""
    if isinstance(expected, dict):
        assert isinstance(actual, dict), "%s: expected a map, got %r" % (path, actual)
        for key, value in expected.items():
            if key.startswith("("):
                assert jmes_check(key, actual) == value, "%s: %s is not %r" % (path, key, value)
                continue
            assert key in actual, "%s.%s missing" % (path, key)
            chainsaw_match(value, actual[key], "%s.%s" % (path, key))
    elif isinstance(expected, list):
        assert isinstance(actual, list) and len(actual) == len(expected), "%s: expected %d items, got %r" % (path, len(expected), actual)
        for index, (want, have) in enumerate(zip(expected, actual)):
            chainsaw_match(want, have, "%s[%d]" % (path, index))
    else:
        assert actual == expected, "%s: expected %r, got %r" % (path, expected, actual)


def test_recipe_assertion_files_present(aicr_conformance_dir):
    assert sorted(p.name for p in _recipe_files()) == sorted(_FLAGS)


@pytest.mark.parametrize("path", _recipe_files(), ids=[p.stem for p in _recipe_files()])
def test_recipe_chainsaw(aicr_catalog_dir, path):
    with open(str(path)) as handle:
        expected = yaml.safe_load(handle)
    out = resolve_mod.resolve(str(aicr_catalog_dir), _FLAGS[path.name], persist_cache=False)
    chainsaw_match(expected, out["recipe"])


def test_jmes_evaluator_rejects_unknown_forms():
    with pytest.raises(AssertionError):
        jmes_check("(componentRefs[0].name)", {})
    assert jmes_check("(length(x) > `0`)", {"x": [1]}) is True
    assert jmes_check("(length(x) > `0`)", {"x": []}) is False
    assert jmes_check("(x[?name == 'a'] | length(@) > `0`)", {"x": [{"name": "b"}]}) is False


def test_chainsaw_matcher_can_fail():
    with pytest.raises(AssertionError):
        chainsaw_match({"deploymentOrder": ["a", "b"]}, {"deploymentOrder": ["b", "a"]})
    with pytest.raises(AssertionError):
        chainsaw_match({"kind": "RecipeResult"}, {"kind": "Other"})


# -- every leaf overlay ----------------------------------------------------------------

def _leaf_names():
    overlays = CATALOG / "overlays"
    if not overlays.is_dir():
        return []
    docs = [yaml.safe_load(open(str(p))) for p in overlays.glob("*.yaml")]
    parents = set((d.get("spec") or {}).get("base") for d in docs)
    return sorted(d["metadata"]["name"] for d in docs if d["metadata"]["name"] not in parents and d["metadata"]["name"] != "base")


def test_there_are_45_leaves(aicr_catalog):
    assert len(aicr_catalog.leaves()) == 45
    assert aicr_catalog.leaves() == _leaf_names()


@pytest.mark.parametrize("leaf", _leaf_names())
def test_leaf_resolves(aicr_catalog, aicr_catalog_dir, leaf):
    oc = aicr_catalog.overlays[leaf]["spec"]["criteria"]
    query = dict((d, oc.get(d)) for d in crit.DIMENSIONS)
    if not crit.specificity(crit.parse_criteria(query, aicr_catalog.registered)):
        query["nodes"] = 1  # a leaf stating nothing (monitoring-hpa): AICR's CLI needs at least one criterion
    out = resolve_mod.resolve(str(aicr_catalog_dir), query, persist_cache=False)
    assert leaf in out["recipe"]["metadata"]["appliedOverlays"]
    assert out["recipe"]["deploymentOrder"] == [c["name"] for c in out["components"]]
    for component in out["components"]:
        assert component["manifest_only"] or component["chart"], component["name"]


# -- chart pins vs the independently packaged charts (../shared/charts-repo/INDEX.tsv) -------

def _chart_index():
    path = SHARED / "charts-repo" / "INDEX.tsv"
    if not path.is_file():
        return {}
    rows = [line.split("\t") for line in path.read_text().splitlines()[1:] if line.strip()]
    return dict((r[0], (r[1], r[2])) for r in rows if "/" not in r[0])


@pytest.mark.parametrize("criteria", [
    {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"},
    {"service": "kind", "accelerator": "h100", "intent": "training"},
], ids=["h100-eks-ubuntu-training", "h100-kind-training"])
def test_chart_pins_match_charts_repo_index(shared_dir, aicr_catalog_dir, criteria):
    index = _chart_index()
    assert index, "charts-repo/INDEX.tsv missing"
    out = resolve_mod.resolve(str(aicr_catalog_dir), criteria, persist_cache=False)
    checked = 0
    for comp in out["components"]:
        chart, version = index[comp["name"]]
        if comp["manifest_only"]:
            assert chart == "(manifest-only)"
            continue
        assert (comp["chart"], comp["version"]) == (chart, version), comp["name"]
        checked += 1
    assert checked >= 11
