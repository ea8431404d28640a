"""recipe_resolve and the recipe lookup against the real AICR CLI v0.19.0's answers (tests/oracles/golden/aicr).

The goldens were written by ``make oracles`` from a binary built outside the clone (docs/modules/recipe_resolve.md,
"Conformance"); no peer is needed here. Every case is answered again by our engine and must be identical: the same
RecipeResult (every key, list order included) or the same refusal message.

* criteria.json.gz: every combination of the catalog's dimension values (stated or not), each profile value where a
  composition declares a profile, queries stating nothing or only a node count;
* snapshots.json.gz: generated Snapshots in AICR's shape (providers in raw forms, server versions either side of the
  catalog's constraints, OS releases, GPU product labels single / several / unknown, PCI-only GPUs with the driver
  loaded or not, node counts, the lossless topology items) with each intent.
"""

import gzip
import json
import sys
from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod

ORACLES = Path(__file__).resolve().parents[5] / "tests" / "oracles"
sys.path.insert(0, str(ORACLES))

import compare_aicr  # noqa: E402  pylint: disable=wrong-import-position,import-error


def _provenance():
    return json.loads((compare_aicr.GOLDEN / "PROVENANCE.json").read_text())


def test_goldens_carry_their_provenance_and_match_the_catalog(shared_dir):
    prov = _provenance()
    assert prov["tool"] == "aicr" and prov["version"] == "v0.19.0" and prov["commit"] == "f1f63463f7fae6dea608c89f92975b0dbc27c59c"
    assert prov["date"] and prov["build"].startswith("go build")
    sys.path.insert(0, str(ORACLES))
    import oracle_aicr  # pylint: disable=import-outside-toplevel,import-error
    # the catalog the tests resolve is the one the binary embedded when the goldens were made
    assert oracle_aicr.catalog_digest(shared_dir / "aicr" / "catalog") == prov["catalog_sha256"]
    for kind in compare_aicr.KINDS:
        golden = compare_aicr.load_golden(kind)
        assert golden["provenance"]["command"].startswith("aicr --log-json recipe")
        assert prov["goldens"][kind]["cases"] == len(golden["cases"])


def test_the_criteria_space_is_complete():
    golden = compare_aicr.load_golden("criteria")
    values = golden["dimension_values"]
    expected = 1
    for dim in ("service", "accelerator", "intent", "os", "platform"):
        expected *= len(values[dim]) + 1  # each value, and unstated
    plain = [c for c in golden["cases"] if not c.get("profile") and "nodes" not in c["query"]]
    assert len(set(json.dumps(c["query"], sort_keys=True) for c in plain)) >= expected
    assert any(c.get("profile") for c in golden["cases"])


def test_at_least_500_snapshots():
    golden = compare_aicr.load_golden("snapshots")
    assert len(golden["snapshots"]) >= 500
    assert all(s["apiVersion"] == "aicr.run/v1alpha2" for s in golden["snapshots"].values())


@pytest.mark.parametrize("kind", compare_aicr.KINDS)
def test_every_answer_is_aicrs(aicr_catalog, kind):
    figures = compare_aicr.compare(kind, resolve_mod.resolve_loaded, AicrError, aicr_catalog)
    shown = "\n".join(figures["disagreements"][:15])
    assert figures["agree"] == figures["cases"], "%d of %d %s cases differ from AICR v0.19.0:\n%s" % (
        figures["cases"] - figures["agree"], figures["cases"], kind, shown)


def test_goldens_are_small_and_stable():
    total = 0
    for kind in compare_aicr.KINDS + ("pool",):
        path = compare_aicr.GOLDEN / ("%s.json.gz" % kind)
        total += path.stat().st_size
        with gzip.open(str(path), "rt", encoding="utf-8") as handle:
            text = handle.read()
        # no absolute path of the machine that made them (the working directory, the binary, the home directory)
        assert "/tmp/" not in text and str(Path.home()) + "/" not in text and "/.cache/" not in text and str(ORACLES) not in text
    assert total < 4 * 1024 * 1024
