"""Manifest components against the real ``aicr bundle`` v0.19.0 (helm deployer): tests/oracles/golden/aicr/bundle.

For every bundle of every leaf recipe (without and with node-scheduling flags; ``oracle_aicr_bundle``), the golden
holds the objects of the bundle's manifest wrapper charts (``NNN-<c>-pre``/``-post``, manifest-only ``NNN-<c>``), which
the bundler renders itself with the component's final values. Here each component's manifest files are rendered as
gated_release renders them before applying them (``_release.render.render_manifests`` with the real helm, the values
recipe_resolve returns for the same flags) and compared wave by wave: kinds, names, namespaces and content.
Every difference is classified (``CLASSES``; docs/modules/recipe_resolve.md, Conformance) and counted: a new one fails.
Helm chart components are not rendered here: their charts are remote (no network in tests) - their values are compared
in test_recipe_scheduling_oracle.py.
"""

import collections
import gzip
import json
import re
from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._helm.helm import HelmRunner
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod
from ansible_collections.aicr.runtime.plugins.module_utils._release.render import render_key, render_manifests

REPO = Path(__file__).resolve().parents[4]
HELM = REPO / ".venv" / "bin" / "helm"
GOLDEN = REPO / "tests" / "oracles" / "golden" / "aicr" / "bundle"

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not HELM.exists(), reason="helm not installed (make helm)")]

HOOK_ANNOTATIONS = ("helm.sh/hook", "helm.sh/hook-weight", "helm.sh/hook-delete-policy")

# What each class means (the figures are asserted in test_every_difference_is_classified):
# - "hook annotations": the bundler strips helm.sh/hook* annotations from the manifests it wraps into a chart;
#   gated_release applies the pre/post waves itself and leaves them on the objects (metadata only, no effect there).
# - "chart label version": a template's ``.Chart.Version`` (the helm.sh/chart label) is the wrapper chart's 0.1.0 in the
#   bundle, the component's version here (0.0.0-0 when it has none).
# - "edge newlines": a block scalar's leading or final newline, which the bundler's template pass drops (gpu-operator's
#   nvidia.conf ConfigMap).
# - "gke resource quota": on GKE the bundler adds a ResourceQuota aicr-gke-critical-pods to gpu-operator's pre wave (its
#   system-node-critical pods outside kube-system); not implemented here.
# - "missing value": prometheus-adapter-ocp's rbac.yaml reads ``serviceAccount.name``, which its values do not set:
#   the bundler's template pass writes the subject name ``<no value>``, helm (here) refuses to render it.
CLASSES = ("hook annotations", "chart label version", "edge newlines", "gke resource quota", "missing value")


def _golden():
    with gzip.open(str(GOLDEN / "values.json.gz"), "rt", encoding="utf-8") as handle:
        return json.load(handle)


def _identity(doc):
    meta = doc.get("metadata") or {}
    return (doc.get("apiVersion"), doc.get("kind"), meta.get("name"), meta.get("namespace"))


def _normalise(doc, found):
    """``doc`` with each classified difference taken out, noting which classes applied in ``found``."""
    doc = json.loads(json.dumps(doc))
    meta = doc.get("metadata") or {}
    annotations = meta.get("annotations")
    if isinstance(annotations, dict) and any(k in annotations for k in HOOK_ANNOTATIONS):
        found.add("hook annotations")
        meta["annotations"] = dict((k, v) for k, v in annotations.items() if k not in HOOK_ANNOTATIONS)
    labels = meta.get("labels")
    if isinstance(labels, dict) and "helm.sh/chart" in labels:  # <chart>-<version>: the version left out
        labels["helm.sh/chart"] = re.sub(r"-\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?$", "", labels["helm.sh/chart"])
    if doc.get("kind") == "ConfigMap" and isinstance(doc.get("data"), dict):
        doc["data"] = dict((k, v.strip("\n") if isinstance(v, str) else v) for k, v in doc["data"].items())
    return doc


def _chart_label(doc):
    return ((doc.get("metadata") or {}).get("labels") or {}).get("helm.sh/chart")


def _compare(mine, theirs):
    """The set of classes explaining ``mine`` != ``theirs`` (the docs of one wave, compared in identity order: the
    golden lists a wrapper chart's files in name order, and helm installs a release's objects in kind order anyway);
    raises AssertionError for a difference no class explains."""
    found = set()
    mine, theirs = sorted(mine, key=lambda d: str(_identity(d))), sorted(theirs, key=lambda d: str(_identity(d)))
    if mine == theirs:
        return found
    ours = set(map(_identity, mine))
    extra = [d for d in theirs if _identity(d) not in ours]
    if extra:
        assert [_identity(d) for d in extra] == [("v1", "ResourceQuota", "aicr-gke-critical-pods", "gpu-operator")], (mine, theirs)
        found.add("gke resource quota")
        theirs = [d for d in theirs if d not in extra]
    assert [_identity(d) for d in mine] == [_identity(d) for d in theirs], (mine, theirs)
    for one, other in zip(mine, theirs):
        if one == other:
            continue
        if _chart_label(one) != _chart_label(other):
            found.add("chart label version")
        if one.get("kind") == "ConfigMap" and one.get("data") != other.get("data"):
            found.add("edge newlines")
        a, b = _normalise(one, found), _normalise(other, found)
        assert a == b, (_identity(one), one, other)
    return found


@pytest.fixture(scope="module")
def comparison(shared_dir):
    """(waves compared, waves equal, Counter of classes) over every bundle."""
    golden = _golden()
    helm, renders = HelmRunner(str(HELM)), {}
    compared, equal, classes = 0, 0, collections.Counter()
    for case in golden["cases"]:
        if case.get("refusal"):
            continue
        out = resolve_mod.resolve(str(shared_dir / "aicr" / "catalog"), case["criteria"], persist_cache=False,
                                  node_scheduling=case["node_scheduling"])
        for comp in out["components"]:
            waves = {"pre": comp["pre_manifest_paths"], "post": comp["manifest_paths"]}
            theirs = golden["pool"][case["manifests"][comp["name"]]] if comp["name"] in case.get("manifests", {}) else {}
            if not any(waves.values()) and not theirs:
                continue
            key = render_key(comp, waves)
            if key not in renders:
                try:
                    renders[key] = render_manifests(helm, comp, waves)
                except AicrError as exc:
                    renders[key] = exc
            mine = renders[key]
            if isinstance(mine, AicrError):
                assert comp["name"] == "prometheus-adapter-ocp" and "serviceAccount.name" in str(mine), str(mine)
                classes["missing value"] += 1
                compared += 2
                continue
            for wave in ("pre", "post"):
                compared += 1
                found = _compare(mine.get(wave) or [], theirs.get(wave) or [])
                equal += not found
                classes.update(found)
    return compared, equal, classes


def test_every_difference_is_classified(comparison):
    compared, equal, classes = comparison
    assert set(classes) <= set(CLASSES)
    # 203 manifest components (by either side) x pre/post: 406 waves, 243 identical; the other 163 each explained
    expected = {"hook annotations": 95, "chart label version": 46, "gke resource quota": 12, "edge newlines": 10, "missing value": 4}
    assert (compared, equal, dict(classes)) == (406, 243, expected)
