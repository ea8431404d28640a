"""``_common.validation``'s fast check for the collection's own schemas (``trusted=True``): it answers "valid" only when
jsonschema would, and leaves every other case to jsonschema (issue #38: the safety net validated the chart's defaults
with jsonschema's full walk on every generation)."""

import random

import jsonschema
import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import validation

DRAFTS = ("https://json-schema.org/draft/2020-12/schema", "http://json-schema.org/draft-07/schema#", "http://json-schema.org/draft-04/schema#")


def _fast(schema, value):
    return validation._surely_valid(schema, value, schema, ())  # pylint: disable=protected-access


def _jsonschema_valid(schema, value):
    return not validation.validate(schema, value)  # untrusted: jsonschema's own walk, meta-schema checked


@pytest.mark.parametrize("schema, value", [
    ({"type": "integer"}, True),                                   # a boolean is no integer
    ({"type": "integer"}, 1.5),
    ({"type": "number"}, False),
    ({"type": ["string", "null"]}, 1),
    ({"enum": [1, 2]}, True),                                      # true is not 1 in JSON
    ({"const": "a"}, "b"),
    ({"type": "object", "required": ["a"]}, {}),
    ({"properties": {"a": {"type": "string"}}}, {"a": 1}),
    ({"properties": {"a": {}}, "additionalProperties": False}, {"b": 1}),
    ({"additionalProperties": {"type": "integer"}}, {"b": "x"}),
    ({"items": {"type": "integer"}}, [1, "x"]),
    ({"minimum": 2}, 1), ({"maximum": 2}, 3), ({"exclusiveMinimum": 2}, 2), ({"exclusiveMaximum": 2}, 2),
    ({"minLength": 2}, "a"), ({"maxLength": 1}, "ab"), ({"minItems": 1}, []), ({"maxItems": 0}, [1]),
    ({"minProperties": 1}, {}), ({"maxProperties": 0}, {"a": 1}),
    ({"pattern": "^a"}, "ba"),
    ({"allOf": [{"type": "string"}, {"minLength": 3}]}, "ab"),
    ({"anyOf": [{"type": "string"}, {"type": "null"}]}, 1),
    ({"$defs": {"p": {"type": "integer"}}, "properties": {"a": {"$ref": "#/$defs/p"}}}, {"a": "x"}),
])
def test_never_valid_where_jsonschema_says_invalid(schema, value):
    assert not _jsonschema_valid(schema, value)
    assert _fast(schema, value) is None
    assert validation.validate(schema, value, trusted=True)  # jsonschema decides, and reports the violation


@pytest.mark.parametrize("schema, value", [
    ({"multipleOf": 2}, 4),                                        # keywords it does not read
    ({"oneOf": [{"type": "string"}]}, "a"),
    ({"not": {"type": "string"}}, 1),
    ({"patternProperties": {"^a": {}}, "additionalProperties": False}, {"ab": 1}),
    ({"uniqueItems": True}, [1, 2]),
    ({"items": [{"type": "integer"}]}, [1]),                       # draft-07's tuple form
    ({"$ref": "https://example.com/s.json"}, 1),                   # a remote reference
    ({"properties": {"a": {"$id": "x", "type": "string"}}}, {"a": "b"}),
    ({"$ref": "#/$defs/a%25b", "$defs": {"a%b": {}}}, 1),
    ({"type": "integer"}, 1.0),                                   # integer-valued floats: draft-04 and later differ
    ({"enum": [1]}, 1.0),
    ({"exclusiveMinimum": True, "minimum": 1}, 2),                # draft-04's boolean form
    ({"$ref": "#"}, 1),                                            # a reference to itself
])
def test_unsure_of_what_it_does_not_read(schema, value):
    assert _fast(schema, value) is None


def test_valid_values_of_the_keywords_it_reads():
    schema = {"$schema": DRAFTS[0], "$id": "urn:x", "type": "object", "required": ["a"], "additionalProperties": {"type": "boolean"},
              "$defs": {"port": {"type": "integer", "minimum": 1, "maximum": 65535}},
              "properties": {"a": {"type": ["string", "null"], "pattern": "^v", "minLength": 1, "maxLength": 9, "title": "t"},
                             "b": {"type": "array", "items": {"$ref": "#/$defs/port"}, "minItems": 1, "maxItems": 3},
                             "c": {"anyOf": [{"$ref": "#/$defs/port"}, {"type": "null"}], "x-kubernetes-int-or-string": True},
                             "d": {"enum": ["x", {"k": [1]}], "default": "x", "description": "d", "format": "uri"},
                             "e": {"allOf": [{"type": "number", "exclusiveMinimum": 0}, {"exclusiveMaximum": 1.5}]},
                             "f": {"type": "object", "minProperties": 1, "maxProperties": 2, "const": {"z": None}}}}
    value = {"a": "v1", "b": [80, 443], "c": None, "d": {"k": [1]}, "e": 1.25, "f": {"z": None}, "extra": True}
    assert _jsonschema_valid(schema, value)
    assert _fast(schema, value) is True
    assert validation.validate(schema, value, trusted=True) == []


def _random_schema(rng, depth=0, defs=None):
    choice = rng.randrange(12 if depth < 3 else 8)
    if choice == 0:
        return {"type": rng.choice(["string", "integer", "number", "boolean", "null", ["string", "null"], ["integer", "string"]])}
    if choice == 1:
        return {"enum": rng.sample([1, 1.0, True, "a", None, 0, False, [1], {"a": 1}], 3)}
    if choice == 2:
        return {rng.choice(["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"]): rng.choice([0, 1, 1.5, True])}
    if choice == 3:
        return {rng.choice(["minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"]): rng.randrange(3)}
    if choice == 4:
        return {"pattern": rng.choice(["^a", "b$", "[0-9]", "("])}
    if choice == 5:
        return {"const": rng.choice([1, "a", None, True, 1.0])}
    if choice == 6:
        return {rng.choice(["multipleOf", "uniqueItems", "format", "title"]): rng.choice([2, True, "uri"])}
    if choice == 7:
        return {}
    if choice == 8:
        return {"type": "object", "properties": {"a": _random_schema(rng, depth + 1, defs), "b": _random_schema(rng, depth + 1, defs)},
                "required": rng.sample(["a", "b", "c"], rng.randrange(3)),
                "additionalProperties": rng.choice([True, False, _random_schema(rng, depth + 1, defs)])}
    if choice == 9:
        return {"type": "array", "items": _random_schema(rng, depth + 1, defs)}
    if choice == 10:
        return {rng.choice(["allOf", "anyOf", "oneOf"]): [_random_schema(rng, depth + 1, defs), _random_schema(rng, depth + 1, defs)]}
    name = "d%d" % len(defs)  # definitions live at the root, as the collection bundles them
    defs[name] = {}
    defs[name] = _random_schema(rng, depth + 1, defs)
    return {"$ref": "#/$defs/" + name}


def _random_value(rng, depth=0):
    choice = rng.randrange(9 if depth < 3 else 7)
    scalars = [None, True, False, 0, 1, 2, 1.0, 1.5, -1, "", "a", "ab", "b1"]
    if choice < 7:
        return rng.choice(scalars)
    if choice == 7:
        return [_random_value(rng, depth + 1) for _index in range(rng.randrange(3))]
    return dict((k, _random_value(rng, depth + 1)) for k in rng.sample(["a", "b", "c"], rng.randrange(4)))


@pytest.mark.parametrize("draft", DRAFTS)
def test_differential_against_jsonschema(draft):
    """Random schemas and values (a fixed seed): wherever the fast check says valid, jsonschema agrees."""
    rng = random.Random(38)
    sure = 0
    for _round in range(2000):
        defs = {}
        schema = dict(_random_schema(rng, 0, defs), **{"$schema": draft, "$defs": defs})
        value = _random_value(rng)
        try:
            cls = jsonschema.validators.validator_for(schema)
            cls.check_schema(schema)
        except jsonschema.exceptions.SchemaError:
            continue
        if _fast(schema, value) is True:
            sure += 1
            assert not list(cls(schema).iter_errors(value)), (schema, value)
    assert sure > 200
