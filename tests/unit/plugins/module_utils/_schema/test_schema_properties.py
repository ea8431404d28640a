"""Property tests: any values document validates against its own inferred schema, and its CRD keeps every field."""

import string

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aicr.runtime.plugins.module_utils._common import validation
from ansible_collections.aicr.runtime.plugins.module_utils._schema import crd, infer, jsonschema, nodes, structural

KEYS = st.text(alphabet=string.ascii_letters + string.digits + "._-/", min_size=1, max_size=12)
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-10 ** 12, max_value=10 ** 12),
    st.floats(allow_nan=False, allow_infinity=False, width=32),
    st.text(max_size=20), st.sampled_from(["100m", "1Gi", "512Mi", "1m", "80", "http", "2024-01-01", "yes", "0x1F"]),
)
VALUES = st.recursive(SCALARS, lambda children: st.one_of(st.lists(children, max_size=4), st.dictionaries(KEYS, children, max_size=5)),
                      max_leaves=25)
DOCUMENTS = st.dictionaries(KEYS, VALUES, max_size=8)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(DOCUMENTS)
def test_values_validate_against_their_schema_and_survive_the_crd(document):
    text = yaml.safe_dump(document, sort_keys=False)
    values = infer.load_values(text)
    node = infer.infer_text(text)
    for draft in ("2020-12", "draft-07"):
        assert validation.validate(jsonschema.to_json_schema(node, draft), values) == []
    doc, _dropped = crd.build_crd(infer.infer_text(text), "prop")
    assert structural.check_crd(doc) == []
    values_schema = crd.values_schema_of(doc)
    pruned, removed = structural.prune(values, values_schema)
    assert removed == [] and pruned == values
    json_schema = dict(structural.to_json_schema(values_schema), **{"$schema": jsonschema.DRAFTS["2020-12"]})
    assert validation.validate(json_schema, values) == []


@settings(max_examples=100, deadline=None)
@given(DOCUMENTS, DOCUMENTS)
def test_merged_schema_accepts_both_documents(first, second):
    a_text, b_text = yaml.safe_dump(first), yaml.safe_dump(second)
    schema = jsonschema.to_json_schema(nodes.merge(infer.infer_text(a_text), infer.infer_text(b_text)))
    assert validation.validate(schema, infer.load_values(a_text)) == []
    assert validation.validate(schema, infer.load_values(b_text)) == []
