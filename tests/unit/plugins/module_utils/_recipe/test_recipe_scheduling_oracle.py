"""Node scheduling against the real ``aicr bundle`` v0.19.0 (helm deployer): tests/oracles/golden/aicr/bundle.

``make oracles`` (``ORACLES=aicr-bundle``) bundled a few leaf recipes without and with every node-scheduling flag
(tests/oracles/oracle_aicr_bundle.py); no peer is needed here. Each component's values as recipe_resolve returns them
(what gated_release passes to helm) must equal the bundle's ``values.yaml`` with its ``cluster-values.yaml`` merged on
top, for the same flags (``node_scheduling``).
"""

import gzip
import json
from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.values import merge_null_deletes
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod

# Bundle-time defaults of AICR that are not node scheduling and not implemented here (yet): the bundler's
# resolveAgentgatewayExposure fills an unset agentgateway ``allowedSourceRanges`` with the RFC 1918 ranges.
# Each is left out of the comparison on both sides, by component and top-level key, and nothing else is.
OTHER_BUNDLE_DEFAULTS = {"agentgateway": ("allowedSourceRanges",)}

GOLDEN = Path(__file__).resolve().parents[5] / "tests" / "oracles" / "golden" / "aicr" / "bundle"


def _golden():
    with gzip.open(str(GOLDEN / "values.json.gz"), "rt", encoding="utf-8") as handle:
        return json.load(handle)


CASES = _golden()["cases"]


def test_the_goldens_carry_their_provenance():
    prov = json.loads((GOLDEN / "PROVENANCE.json").read_text())
    assert prov["tool"] == "aicr" and prov["version"] == "v0.19.0" and prov["commit"] == "f1f63463f7fae6dea608c89f92975b0dbc27c59c"
    assert prov["date"] and "aicr bundle --recipe recipe.yaml" in prov["command"]
    assert prov["goldens"] == {"cases": len(CASES), "components": sum(len(c["components"]) for c in CASES)}
    assert any(c["flags"] for c in CASES) and any(not c["flags"] for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=["%s-%s" % ("-".join(c["criteria"].values()), "flags" if c["flags"] else "defaults")
                                             for c in CASES])
def test_values_equal_the_bundles(shared_dir, case):
    out = resolve_mod.resolve(str(shared_dir / "aicr" / "catalog"), case["criteria"], persist_cache=False,
                              node_scheduling=case["node_scheduling"])
    ours = dict((comp["name"], comp["values"]) for comp in out["components"])
    assert sorted(ours) == sorted(case["components"])
    for name, bundle in case["components"].items():
        theirs = merge_null_deletes(bundle["values"], bundle["cluster_values"])
        mine = dict(ours[name])
        for key in OTHER_BUNDLE_DEFAULTS.get(name, ()):
            theirs.pop(key, None)
            mine.pop(key, None)
        assert mine == theirs, name
