"""Component values against the real ``aicr bundle`` v0.19.0 (helm deployer): tests/oracles/golden/aicr/bundle.

``make oracles ORACLES=aicr-bundle`` bundled every leaf recipe of the catalog (the overlays no other overlay inherits
from, ``oracle_aicr_bundle.leaf_recipes``) without and with every node-scheduling flag
(tests/oracles/oracle_aicr_bundle.py); no peer is needed here. Each component's values as recipe_resolve returns them
(what gated_release passes to helm) must equal the bundle's ``values.yaml`` with its ``cluster-values.yaml`` merged on
top, for the same flags (``node_scheduling``). Nothing is left out of the comparison.
"""

import gzip
import json
from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.values import merge_null_deletes
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod

GOLDEN = Path(__file__).resolve().parents[5] / "tests" / "oracles" / "golden" / "aicr" / "bundle"

# The bundles AICR refuses and recipe_resolve does not (classified in docs/modules/recipe_resolve.md, Conformance):
# the registry's bundle-time ``validations`` are not implemented here; on AKS, nodewright-customizations with a
# keyless (default) accelerated toleration is refused at severity error (NVIDIA/nodewright#296).
KNOWN_REFUSALS = {
    ("a100-aks-ubuntu-training-kubeflow", False): "renders a wildcard (keyless) accelerated-node toleration",
    ("h100-aks-ubuntu-inference-dynamo", False): "renders a wildcard (keyless) accelerated-node toleration",
    ("h100-aks-ubuntu-training-kubeflow", False): "renders a wildcard (keyless) accelerated-node toleration",
    ("h100-aks-ubuntu-training-slurm", False): "renders a wildcard (keyless) accelerated-node toleration",
}


def _golden():
    with gzip.open(str(GOLDEN / "values.json.gz"), "rt", encoding="utf-8") as handle:
        return json.load(handle)


GOLDEN_DOC = _golden()
CASES = GOLDEN_DOC["cases"]
POOL = GOLDEN_DOC["pool"]


def _id(case):
    return "%s-%s" % (case["leaf"], "flags" if case["flags"] else "defaults")


def test_the_goldens_carry_their_provenance_and_every_leaf():
    prov = json.loads((GOLDEN / "PROVENANCE.json").read_text())
    assert prov["tool"] == "aicr" and prov["version"] == "v0.19.0" and prov["commit"] == "f1f63463f7fae6dea608c89f92975b0dbc27c59c"
    assert prov["date"] and "aicr bundle --recipe recipe.yaml" in prov["command"]
    assert prov["goldens"] == {"cases": len(CASES), "components": sum(len(c["components"]) for c in CASES), "leaves": len(CASES) // 2,
                               "pooled": len(POOL), "refused": sum(1 for c in CASES if c.get("refusal")),
                               "manifest_components": sum(len(c.get("manifests") or {}) for c in CASES),
                               "manifest_objects": sum(len(docs) for c in CASES for key in (c.get("manifests") or {}).values()
                                                       for docs in POOL[key].values())}
    # every leaf of v0.19.0's catalog but monitoring-hpa (criteria all ``any``: not a query of its own), with and without flags
    assert len(set(c["leaf"] for c in CASES)) == 44
    assert sorted(set((c["leaf"], bool(c["flags"])) for c in CASES)) == sorted((c["leaf"], f) for c in CASES[::2] for f in (False, True))
    assert set(key for c in CASES for part in ("components", "manifests") for key in (c.get(part) or {}).values()) == set(POOL)


def test_the_refusals_are_the_known_ones():
    refused = dict(((c["leaf"], bool(c["flags"])), c["refusal"]["error"]) for c in CASES if c.get("refusal"))
    assert sorted(refused) == sorted(KNOWN_REFUSALS)
    for key, text in refused.items():
        assert KNOWN_REFUSALS[key] in text


@pytest.mark.parametrize("case", [c for c in CASES if not c.get("refusal")], ids=_id)
def test_values_equal_the_bundles(shared_dir, case):
    out = resolve_mod.resolve(str(shared_dir / "aicr" / "catalog"), case["criteria"], persist_cache=False,
                              node_scheduling=case["node_scheduling"])
    ours = dict((comp["name"], comp["values"]) for comp in out["components"])
    assert sorted(ours) == sorted(case["components"])
    for name, key in case["components"].items():
        bundle = POOL[key]
        assert ours[name] == merge_null_deletes(bundle["values"], bundle["cluster_values"]), name
