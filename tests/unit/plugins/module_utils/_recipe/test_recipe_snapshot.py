"""Constraint-aware resolution (AICR's snapshot path) on the real catalog, with generated snapshots.

For each of the 45 leaves of ../shared/aicr/catalog (its own criteria stated):

* a snapshot that satisfies every constraint of every matched candidate (own constraints, the mixins their chains
  bring in, the default profile value's constraints) resolves exactly the criteria-only recipe, nothing excluded;
* for every (candidate, constraint): the reading one step on the failing side of the constraint, and the reading
  absent, exclude exactly the candidates whose own constraint that is (``constraint-failed``) or whose chain brought
  the mixin in (``mixin-constraint-failed``), with a warning naming the constraint, the expected and the actual
  value; what survives is predicted from the catalog files alone (base + the surviving chains; the coverage of each
  stated dimension), and the constraint-excluded flag of each uncovered dimension too;
* criteria fingerprinted from the snapshot give the same recipe as the stated ones.

The expectations are computed here from the catalog YAML (the constraints each overlay and mixin declares, the
chains, the criteria), not by the engine; the evaluator is counted, and the totals are printed.
"""

import os
from pathlib import Path

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import catalog as catalog_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import constraints as cons
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import criteria as crit
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import match
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import snapshot as snap_mod
from recipe_helpers import snapshot

SHARED = Path(os.environ["AICR_SHARED"]) if os.environ.get("AICR_SHARED") else Path(__file__).resolve().parents[5].parent / "shared"
CATALOG = SHARED / "aicr" / "catalog"
DIMS = ("service", "accelerator", "intent", "os", "platform")
COUNTS = {"cases": 0, "evaluated": 0, "constraints": set()}


def _yaml(rel):
    with open(str(CATALOG / rel)) as handle:
        return yaml.safe_load(handle)


def _raw_overlays():
    out = {}
    for path in sorted((CATALOG / "overlays").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        out[doc["metadata"]["name"]] = doc
    return out


def _raw_mixins():
    out = {}
    for path in sorted((CATALOG / "mixins").glob("*.yaml")):
        doc = yaml.safe_load(path.read_text())
        out[doc["metadata"]["name"]] = doc
    return out


RAW = _raw_overlays() if CATALOG.is_dir() else {}
MIXINS = _raw_mixins() if CATALOG.is_dir() else {}
LEAVES = sorted(n for n in RAW if n != "base" and n not in set((d["spec"].get("base") or "") for d in RAW.values()))


@pytest.fixture(scope="module")
def cat(shared_dir):
    return catalog_mod.load_catalog(str(shared_dir / "aicr" / "catalog"), persist=False)


def _chain(name):
    out = []
    while name not in ("", "base", None):
        out.append(name)
        name = RAW[name]["spec"].get("base") or ""
    return list(reversed(out))


def _stated(criteria):
    return dict((d, str(criteria[d])) for d in DIMS if criteria.get(d) not in (None, "", "any"))


def _own_constraints(name):
    return [(c["name"], str(c["value"])) for c in RAW[name]["spec"].get("constraints") or []]


def _mixin_constraints(name):
    """Mixin constraints the chain of candidate ``name`` brings in (base's spec included, as AICR indexes it)."""
    out = []
    for doc_name in ["base"] + _chain(name):
        for mixin in RAW[doc_name]["spec"].get("mixins") or []:
            for c in MIXINS[mixin]["spec"].get("constraints") or []:
                if (c["name"], str(c["value"])) not in out:
                    out.append((c["name"], str(c["value"])))
    return out


def _profile(candidates):
    for name in ["base"] + [n for c in candidates for n in _chain(c)]:
        decl = RAW[name]["spec"].get("profile")
        if decl:
            return name, decl
    return None


# -- generated readings ------------------------------------------------------------------

def _nums(text):
    return [int(p) for p in text.lstrip("v").split(".")]


def _fmt(nums, like):
    return ("v" if like.startswith("v") else "") + ".".join(str(n) for n in nums)


def _below(text):
    """One step under a version (the last non-zero component decremented): 1.34 -> 1.33, v25.10.0 -> v25.9.0."""
    nums = _nums(text)
    for i in range(len(nums) - 1, -1, -1):
        if nums[i] > 0:
            nums[i] -= 1
            return _fmt(nums, text)
    raise AssertionError("no version below %s" % text)


def _ge(actual, floor):
    a, f = _nums(actual.split("-")[0]), _nums(floor)
    n = min(len(a), len(f))
    return a[:n] >= f[:n]


EXACT_OTHER = {"ubuntu": "rhel", "talos": "ubuntu", "24.04": "22.04", "Install": "None", "None": "Install"}


def _passing(value):
    if value.startswith(">="):
        return value[2:].strip()
    assert not value.startswith(("<", ">", "!=", "==")), "generator: no rule for %r" % value
    return value


def _failing(value):
    if value.startswith(">="):
        return _below(value[2:].strip())
    return EXACT_OTHER[value]


def _holds(value, actual):
    """Independent oracle for the forms the catalog uses (>= version, exact string)."""
    if actual is None:
        return False
    if value.startswith(">="):
        return _ge(actual, value[2:].strip())
    return actual == value


# readings: {constraint name: value}; the node-set form is a separate flag set
def _snapshot(readings, gpu_nodes_labels=None):
    # a reading no constraint or fingerprint reads: AICR refuses a snapshot without any measurement
    readings = dict({"SystemD.containerd.service.ActiveState": "active"}, **readings)
    node_labels = None
    if gpu_nodes_labels is not None:
        node_labels = {"cloud.google.com/gke-accelerator": "nvidia-h100-80gb|gpu-0,gpu-1"}
        node_labels.update(gpu_nodes_labels)
    return snapshot(readings, node_labels)


def _requirements(candidates, profile_value):
    """{path: [value, ...]} every candidate's own and mixin constraints, and the profile value's."""
    req = {}
    for name in candidates:
        for path, value in _own_constraints(name) + _mixin_constraints(name):
            req.setdefault(path, []).append(value)
    for c in (profile_value or {}).get("constraints") or []:
        req.setdefault(c["name"], []).append(str(c["value"]))
    return req


def _satisfying(req):
    readings, nodeset = {}, None
    for path, values in req.items():
        if path == cons.GPU_NODES_LABEL:
            labels = {}
            for v in values:
                if not v.startswith("!"):
                    key, val = v.split("=", 1)
                    labels[key] = "%s|gpu-0,gpu-1" % val
            nodeset = labels
            continue
        floors = [v for v in values if v.startswith(">=")]
        exact = sorted(set(v for v in values if not v.startswith(">=")))
        assert len(exact) <= 1, "generator: conflicting exact values %s for %s" % (exact, path)
        if exact:
            readings[path] = exact[0]
        else:
            readings[path] = max((_passing(v) for v in floors), key=_nums)
    return readings, nodeset


def _evaluator(snap):
    def evaluate(constraint):
        COUNTS["evaluated"] += 1
        COUNTS["constraints"].add((constraint["name"], constraint["value"]))
        return cons.evaluate(constraint, snap)
    return evaluate


def _expected_applied(candidates):
    applied, seen = ["base"], set()
    for name in candidates:
        for doc in _chain(name):
            if doc not in seen:
                seen.add(doc)
                applied.append(doc)
    return applied


def _uncovered(stated, applied):
    out = []
    for dim, want in ((d, stated[d]) for d in DIMS if d in stated):
        if not any(str((RAW[n]["spec"].get("criteria") or {}).get(dim) or "") == want for n in applied):
            out.append(dim)
    return out


def _leaf_setup(cat, leaf):
    stated = _stated(RAW[leaf]["spec"]["criteria"])
    query = crit.parse_criteria(stated, cat.registered)
    candidates = [d["metadata"]["name"] for d in match.find_matching(cat, query)]
    assert leaf in candidates
    prof = _profile(candidates)
    profile_value = prof[1]["values"][prof[1]["default"]] if prof else None
    return stated, query, candidates, profile_value


@pytest.mark.parametrize("leaf", LEAVES)
def test_passing_snapshot_resolves_the_criteria_recipe(cat, leaf):
    stated, query, candidates, profile_value = _leaf_setup(cat, leaf)
    readings, nodeset = _satisfying(_requirements(candidates, profile_value))
    snap = snap_mod.check(_snapshot(readings, nodeset))
    baseline = resolve_mod.build_recipe(cat, query)
    if not crit.specificity(query):  # a leaf stating nothing (monitoring-hpa): AICR's CLI refuses such a query
        with pytest.raises(AicrError, match="yielded no recognizable criteria"):
            resolve_mod.build_from_snapshot(cat, stated, snap, evaluator=_evaluator(snap))
        return
    result, _q, _derived, relaxed = resolve_mod.build_from_snapshot(cat, stated, snap, evaluator=_evaluator(snap))
    COUNTS["cases"] += 1
    assert relaxed == []
    assert "excludedOverlays" not in result["metadata"] and "constraintWarnings" not in result["metadata"]
    for key in ("metadata", "constraints", "componentRefs", "deploymentOrder", "criteria", "validation", "apiVersion"):
        assert result.get(key) == baseline.get(key), key


def _failure_cases():
    """(leaf, path, variant) for every constraint path of every candidate of every leaf."""
    if not CATALOG.is_dir():
        return []
    cat = catalog_mod.load_catalog(str(CATALOG), persist=False)
    cases = []
    for leaf in LEAVES:
        stated, query, candidates, profile_value = _leaf_setup(cat, leaf)
        paths = sorted(set(p for p in _requirements(candidates, None)))
        for path in paths:
            cases.append((leaf, path, "failing"))
            cases.append((leaf, path, "absent"))
    return cases


@pytest.mark.parametrize("leaf,path,variant", _failure_cases())
def test_failing_or_absent_reading_excludes_the_candidates(cat, leaf, path, variant):
    stated, query, candidates, profile_value = _leaf_setup(cat, leaf)
    req = _requirements(candidates, profile_value)
    readings, nodeset = _satisfying(req)
    target = max(req[path], key=lambda v: _nums(_passing(v)) if v.startswith(">=") else [0])
    if variant == "failing":
        readings[path] = _failing(target)
    else:
        del readings[path]
    actual = readings.get(path)
    snap = snap_mod.check(_snapshot(readings, nodeset))

    expected_excluded, expected_warnings = [], []
    for name in candidates:
        own = [(p, v) for p, v in _own_constraints(name) if p == path and not _holds(v, actual)]
        if own:
            expected_excluded.append({"name": name, "reason": "constraint-failed"})
            expected_warnings.extend((name, p, v) for p, v in own)
    survivors_pre = [n for n in candidates if n not in set(e["name"] for e in expected_excluded)]
    mixin_failed = [n for n in survivors_pre if any(p == path and not _holds(v, actual) for p, v in _mixin_constraints(n))]
    expected_excluded.extend({"name": n, "reason": "mixin-constraint-failed"} for n in mixin_failed)
    for n in mixin_failed:
        expected_warnings.extend((n, p, v) for p, v in _mixin_constraints(n) if p == path)
    survivors = [n for n in survivors_pre if n not in mixin_failed]
    assert expected_excluded, "the generated reading must fail at least one candidate (%s %s)" % (path, target)
    applied = _expected_applied(survivors)
    uncovered = _uncovered(stated, applied)
    prof = _profile(candidates)
    profile_lost = prof is not None and prof[0] != "base" and prof[0] not in applied

    COUNTS["cases"] += 1
    try:
        result, _q, _d, relaxed = resolve_mod.build_from_snapshot(cat, stated, snap, evaluator=_evaluator(snap))
    except AicrError as exc:
        details = exc.details
        assert details.get("excludedOverlays") == expected_excluded, exc.msg
        got = [(w["overlay"], w["constraint"], w["expected"]) for w in details.get("constraintWarnings")]
        assert got == expected_warnings
        if profile_lost:
            assert "was removed by snapshot constraint filtering" in exc.msg
            return
        assert [u["dimension"] for u in details["uncovered"]] == uncovered, exc.msg
        for entry in details["uncovered"]:
            carried = any(str((RAW[e["name"]]["spec"].get("criteria") or {}).get(entry["dimension"]) or "") == entry["requestedValue"]
                          for e in expected_excluded)
            assert entry["constraintExcluded"] is carried
            if carried and not entry["validCompletions"]:
                assert "is provided only by overlays excluded by failing constraints (see excludedOverlays)" in exc.msg
        return
    assert not uncovered and not profile_lost, "expected a coverage failure on %s" % uncovered
    assert relaxed == []
    meta = result["metadata"]
    assert meta["appliedOverlays"] == applied
    assert meta["excludedOverlays"] == expected_excluded
    warnings = meta["constraintWarnings"]
    assert [(w["overlay"], w["constraint"], w["expected"]) for w in warnings] == expected_warnings
    for w in warnings:
        if variant == "failing":
            assert w["actual"] == actual and w["reason"].endswith("expected %s, got %s" % (w["expected"], actual))
        else:
            assert "actual" not in w and "not found in snapshot" in w["reason"]
        if w["overlay"] in mixin_failed:
            assert w["reason"].startswith("mixin-constraint-failed: ")


# -- the profile value's constraints (fail closed) ---------------------------------------

@pytest.mark.parametrize("leaf", [n for n in LEAVES if _profile([n]) is not None])
def test_profile_constraint_fails_closed(cat, leaf):
    stated, query, candidates, profile_value = _leaf_setup(cat, leaf)
    source, decl = _profile(candidates)
    req = _requirements(candidates, profile_value)
    readings, nodeset = _satisfying(req)
    for c in profile_value.get("constraints") or []:
        bad_readings, bad_nodes = dict(readings), dict(nodeset or {})
        if c["name"] == cons.GPU_NODES_LABEL:
            key = c["value"].lstrip("!").split("=", 1)[0]
            if c["value"].startswith("!"):
                bad_nodes[key] = "true|gpu-0"
            else:
                bad_nodes[key] = "false|gpu-0,gpu-1"
            snap = snap_mod.check(_snapshot(bad_readings, bad_nodes))
        else:
            bad_readings[c["name"]] = _failing(str(c["value"]))
            snap = snap_mod.check(_snapshot(bad_readings, nodeset))
        COUNTS["cases"] += 1
        with pytest.raises(AicrError) as exc:
            resolve_mod.build_from_snapshot(cat, stated, snap, evaluator=_evaluator(snap))
        assert exc.value.msg == 'profile %s=%s constraint "%s" failed' % (decl["name"], decl["default"], c["name"])
        # and the reading absent: "cannot be validated"
        missing = dict(readings)
        missing.pop(c["name"], None)
        snap = snap_mod.check(_snapshot(missing, None if c["name"] == cons.GPU_NODES_LABEL else nodeset))
        COUNTS["cases"] += 1
        with pytest.raises(AicrError) as exc:
            resolve_mod.build_from_snapshot(cat, stated, snap, evaluator=_evaluator(snap))
        assert exc.value.msg == 'profile %s=%s cannot be validated because reading "%s" is unavailable' % (decl["name"], decl["default"], c["name"])


# -- fingerprinting and relaxation ---------------------------------------------------------

PRODUCTS = {"h100": "NVIDIA-H100-80GB-HBM3", "gb200": "NVIDIA-GB200", "b200": "NVIDIA-B200", "a100": "NVIDIA-A100-SXM4-80GB",
            "l40": "NVIDIA-L40", "l40s": "NVIDIA-L40S", "h200": "NVIDIA-H200", "gb300": "NVIDIA-GB300",
            "rtx-pro-6000": "NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition"}
GPU_PRODUCT = "NodeTopology.label." + snap_mod.GPU_PRODUCT_LABEL


def _cluster(service=None, accelerator=None, os_id=None, nodes=None, **readings):
    """Readings AICR v0.19.0 fingerprints: the node's provider, the GPU product label over the nodes, the OS release, the node count."""
    if service:
        readings["K8s.node.provider"] = service
    if accelerator:
        readings[GPU_PRODUCT] = "%s|gpu-0,gpu-1" % PRODUCTS[accelerator]
    if os_id:
        readings["OS.release.ID"] = os_id
    if nodes:
        readings["NodeTopology.summary.node-count"] = nodes
    return readings


@pytest.mark.parametrize("leaf", LEAVES)
def test_criteria_from_the_snapshot(cat, leaf):
    stated, query, candidates, profile_value = _leaf_setup(cat, leaf)
    readings, nodeset = _satisfying(_requirements(candidates, profile_value))
    given = dict((d, v) for d, v in stated.items() if d in ("intent", "platform"))
    readings.update(_cluster(stated.get("service"), stated.get("accelerator"), stated.get("os"), nodes=4))
    snap = snap_mod.check(_snapshot(readings, nodeset))
    expected = dict((d, v) for d, v in stated.items() if d not in given)
    expected["nodes"] = 4
    assert snap_mod.criteria_from_snapshot(snap, cat.registered) == expected
    baseline = resolve_mod.build_recipe(cat, dict(query, nodes=4))
    result, final, derived, relaxed = resolve_mod.build_from_snapshot(cat, given, snap, evaluator=_evaluator(snap))
    COUNTS["cases"] += 1
    assert relaxed == [] and final == dict(query, nodes=4) and result["criteria"]["nodes"] == 4
    assert result["metadata"] == baseline["metadata"] and result["deploymentOrder"] == baseline["deploymentOrder"]


def test_relaxation_clears_a_fingerprinted_dimension_no_recipe_distinguishes(cat):
    # kind overlays are OS-agnostic: a detected os=ubuntu is uncovered, comes from the snapshot, and is cleared.
    readings = {"K8s.server.version": "v1.35.0", "OS.release.VERSION_ID": "24.04", "OS.sysctl./proc/sys/kernel/osrelease": "6.8.0-51-generic"}
    snap = snap_mod.check(_snapshot(_cluster("kind", "h100", "ubuntu", **readings)))
    result, final, derived, relaxed = resolve_mod.build_from_snapshot(cat, {"intent": "training"}, snap)
    assert derived == {"service": "kind", "accelerator": "h100", "os": "ubuntu"}
    assert relaxed == ["os"] and final["os"] == crit.ANY
    assert "relaxedDimensions" not in result["metadata"]  # AICR's RecipeResult has no such field: recipe_resolve says it beside
    baseline = resolve_mod.build_recipe(cat, crit.parse_criteria({"service": "kind", "accelerator": "h100", "intent": "training"}, cat.registered))
    assert result["deploymentOrder"] == baseline["deploymentOrder"]


def test_no_relaxation_of_a_stated_dimension(cat):
    snap = snap_mod.check(_snapshot(_cluster(accelerator="h100", **{"K8s.server.version": "v1.35.0"})))
    with pytest.raises(AicrError) as exc:
        resolve_mod.build_from_snapshot(cat, {"service": "kind", "intent": "training", "os": "ubuntu"}, snap)
    assert exc.value.details["uncovered"][0]["dimension"] == "os"


def test_relaxation_into_the_generic_recipe(cat):
    # only os is fingerprinted and no overlay carries it: AICR clears it and resolves what is left (base)
    snap = snap_mod.check(_snapshot(_cluster(os_id="talos")))
    result, final, _derived, relaxed = resolve_mod.build_from_snapshot(cat, {}, snap)
    assert relaxed == ["os"] and crit.specificity(final) == 0
    assert result["metadata"]["appliedOverlays"] == resolve_mod.build_recipe(cat, crit.parse_criteria({}))["metadata"]["appliedOverlays"]


def test_a_snapshot_that_states_nothing_is_refused(cat):
    snap = snap_mod.check(_snapshot({"K8s.server.version": "v1.35.0"}))
    with pytest.raises(AicrError) as exc:
        resolve_mod.build_from_snapshot(cat, {}, snap, snapshot_name="cluster.yaml")
    assert exc.value.msg.startswith('snapshot "cluster.yaml" yielded no recognizable criteria (criteria(any));')
    # a node count alone is a criterion (AICR's specificity counts it)
    snap = snap_mod.check(_snapshot(_cluster(nodes=3, **{"K8s.server.version": "v1.35.0"})))
    result, _final, _derived, _relaxed = resolve_mod.build_from_snapshot(cat, {}, snap)
    assert result["criteria"]["nodes"] == 3


def test_malformed_constraint_fails_closed(cat):
    snap = snap_mod.check(_snapshot(_cluster(accelerator="h100", **{"K8s.server.version": "not-a-version"})))
    with pytest.raises(AicrError) as exc:
        resolve_mod.build_from_snapshot(cat, {"service": "eks", "intent": "training", "os": "ubuntu"}, snap)
    # AICR's words: the evaluator's error, the overlay and the constraint in the details
    assert exc.value.msg == 'cannot parse actual version: [INVALID_REQUEST] non-numeric component: "not-a-version": version component is not numeric'
    assert exc.value.details["constraint"] == "K8s.server.version" and exc.value.details["actual"] == "not-a-version"


def test_resolve_loaded_returns_the_snapshot_keys(cat):
    readings, _nodeset = _satisfying(_requirements(["h100-eks-ubuntu-training", "monitoring-hpa", "h100-any"], None))
    readings.update(_cluster("eks", os_id="ubuntu", **{"K8s.server.version": "v1.35.2-eks-1"}))
    res = resolve_mod.resolve_loaded(cat, {"intent": "training", "accelerator": "h100", "os": "ubuntu"}, snapshot=_snapshot(readings))
    assert res["recipe_name"] == "h100-eks-ubuntu-training"
    assert res["snapshot_criteria"] == {"service": "eks", "os": "ubuntu"} and res["relaxed_dimensions"] == []
    assert "warnings" not in res
    facts_result = {"snapshot": _snapshot(readings), "nodes": []}
    assert resolve_mod.resolve_loaded(cat, {"intent": "training", "accelerator": "h100", "os": "ubuntu"}, snapshot=facts_result)["recipe"] == res["recipe"]


def test_zz_counts(capsys):
    """Printed for the report (runs last in this module)."""
    if COUNTS["cases"]:
        with capsys.disabled():
            print("\nsnapshot cases compared: %d; constraint evaluations: %d; distinct constraints evaluated: %d" % (
                COUNTS["cases"], COUNTS["evaluated"], len(COUNTS["constraints"])))
        assert COUNTS["evaluated"] > COUNTS["cases"]
