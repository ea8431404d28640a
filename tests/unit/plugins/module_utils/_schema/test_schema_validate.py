"""Validation reports (path, value, rule) and --set parsing."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common import validation
from ansible_collections.aicr.runtime.plugins.module_utils._schema import validate

SCHEMA = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "replicas": {"type": "integer", "minimum": 1},
        "image": {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]},
        "list": {"type": "array", "items": {"type": "object", "properties": {"port": {"type": "integer"}}}},
        "mode": {"enum": ["a", "b"]},
    },
}


def test_every_violation_with_path_value_rule():
    errors = validation.validate(SCHEMA, {"replicas": 0, "image": {}, "list": [{"port": 1}, {"port": "x"}], "mode": "c"})
    assert [(e["path"], e["rule"], e["value"]) for e in errors] == [
        ("image", "required", {}),
        ("list[1].port", "type", "x"),
        ("mode", "enum", "c"),
        ("replicas", "minimum", 0),
    ]
    assert errors[0]["message"] == "'tag' is a required property"
    assert errors[1]["schema_path"] == "properties/list/items/properties/port/type"
    assert validation.summarise(errors, 2) == "image: 'tag' is a required property; list[1].port: 'x' is not of type 'integer' (and 2 more)"


def test_valid_values_and_draft07():
    assert validation.validate(SCHEMA, {"replicas": 3, "image": {"tag": "v1"}}) == []
    draft7 = dict(SCHEMA, **{"$schema": "http://json-schema.org/draft-07/schema#"})
    assert [e["rule"] for e in validation.validate(draft7, {"replicas": "3"})] == ["type"]


def test_invalid_schema_is_a_one_line_error():
    with pytest.raises(AicrError) as exc:
        validation.validate({"type": "object", "properties": {"a": {"type": "strng"}}}, {})
    assert exc.value.msg.startswith("schema: not a valid JSON Schema at ")


def test_remote_refs_are_not_fetched():
    warnings = []
    schema = {"type": "object", "properties": {"a": {"$ref": "https://127.0.0.1:9/never.json"}, "b": {"$ref": "#/$defs/int"}},
              "$defs": {"int": {"type": "integer"}}}
    errors = validation.validate(schema, {"a": {"anything": 1}, "b": "no"}, warnings=warnings)
    assert [(e["path"], e["rule"]) for e in errors] == [("b", "type")]
    assert warnings == ["1 remote $ref not fetched, treated as any value: https://127.0.0.1:9/never.json"]


@pytest.mark.parametrize("expressions,expected", [
    (["a.b=1"], {"a": {"b": 1}}),
    (["a=1,b=two"], {"a": 1, "b": "two"}),
    (["list[1].name=x"], {"list": [None, {"name": "x"}]}),
    (["m[0][1]=z"], {"m": [[None, "z"]]}),
    (["e={a,b,3}"], {"e": ["a", "b", 3]}),
    (["e={}"], {"e": []}),
    ([r"labels.app\.kubernetes\.io/name=x"], {"labels": {"app.kubernetes.io/name": "x"}}),
    (["t=true", "f=false", "n=null"], {"t": True, "f": False, "n": None}),
    (["z=007", "neg=-3"], {"z": "007", "neg": -3}),
    ([r"s=a\,b"], {"s": "a,b"}),
    (["a.b=1", "a.c=2", "a.b=3"], {"a": {"b": 3, "c": 2}}),
    (["url=http://x:80/?q=1"], {"url": "http://x:80/?q=1"}),
    (["a=1,a.b=2"], {"a": {"b": 2}}),  # as helm does: a scalar is replaced by a map
])
def test_parse_set(expressions, expected):
    assert validate.parse_set(expressions) == expected


def test_parse_set_string():
    assert validate.parse_set(["a=1", "b=true"], as_string=True) == {"a": "1", "b": "true"}


@pytest.mark.parametrize("expression,message", [
    ("novalue", "set: 'novalue' is not key=value"),
    ("l[0]=1,l.x=2", "set: 'l.x=2' sets a key inside a non-map"),
    ("a[20000]=1", "set: index 20000 in 'a[20000]=1' is above the limit 10000"),
])
def test_parse_set_errors(expression, message):
    with pytest.raises(AicrError) as exc:
        validate.parse_set([expression])
    assert exc.value.msg == message
