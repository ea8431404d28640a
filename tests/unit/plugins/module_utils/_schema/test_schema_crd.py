"""CRD rendering, the structural-schema checker (known-bad schemas), the corpus and the helmetica golden CRD."""

import copy

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common import validation
from ansible_collections.aicr.runtime.plugins.module_utils._schema import crd, infer, structural

from schema_helpers import chart_name, corpus_charts

GOOD = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "properties": {
                "a": {"type": "string", "nullable": True},
                "b": {"x-kubernetes-int-or-string": True},
                "c": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "d": {"type": "array", "items": {"type": "integer"}},
                "e": {"x-kubernetes-preserve-unknown-fields": True, "nullable": True},
                "f": {"type": "object", "additionalProperties": {"type": "string"}},
                "g": {"type": "string", "enum": ["x", "y"], "default": "x"},
                "h": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
                "i": {"type": "string", "allOf": [{"pattern": "^a"}, {"maxLength": 3}]},
                "j": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                      "items": {"type": "object", "required": ["name"], "properties": {"name": {"type": "string"}}}},
            },
        },
    },
}

BAD = [
    ("type list", {"type": ["string", "null"]}, "type must be a single string"),
    ("type null", {"type": "null"}, "type null is not allowed"),
    ("no type", {"description": "x"}, "type must not be empty"),
    ("$ref", {"type": "object", "$ref": "#/definitions/x"}, "$ref is not allowed"),
    ("definitions", {"type": "object", "definitions": {}}, "definitions is not allowed"),
    ("patternProperties", {"type": "object", "patternProperties": {"^a": {"type": "string"}}}, "patternProperties is not allowed"),
    ("additionalProperties false", {"type": "object", "additionalProperties": False}, "additionalProperties: false is not allowed"),
    ("props and additional", {"type": "object", "properties": {"a": {"type": "string"}}, "additionalProperties": {"type": "string"}},
     "mutually exclusive"),
    ("uniqueItems", {"type": "array", "items": {"type": "string"}, "uniqueItems": True}, "uniqueItems cannot be set to true"),
    ("array without items", {"type": "array"}, "type array requires items"),
    ("tuple items", {"type": "array", "items": [{"type": "string"}]}, "items must be a single schema"),
    ("preserve false", {"type": "object", "x-kubernetes-preserve-unknown-fields": False}, "must be true or undefined"),
    ("int-or-string with type", {"type": "string", "x-kubernetes-int-or-string": True}, "must not be combined with type"),
    ("type in anyOf", {"type": "string", "anyOf": [{"type": "string", "pattern": "a"}]}, "type must not be set inside"),
    ("description in allOf", {"type": "string", "allOf": [{"description": "x"}]}, "description must not be set inside"),
    ("property outside spine", {"type": "object", "properties": {"a": {"type": "string"}}, "anyOf": [{"properties": {"b": {"minLength": 1}}}]},
     "not in the structural spine"),
    ("const", {"type": "string", "const": "x"}, "const is not allowed"),
    ("enum type mismatch", {"type": "integer", "enum": ["a"]}, "does not match type integer"),
    ("default type mismatch", {"type": "boolean", "default": "yes"}, "does not match type boolean"),
    ("null default not nullable", {"type": "string", "default": None}, "default null requires nullable"),
    ("list map without keys", {"type": "array", "x-kubernetes-list-type": "map", "items": {"type": "object"}},
     "requires x-kubernetes-list-map-keys"),
    ("list map key optional", {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["k"],
                               "items": {"type": "object", "properties": {"k": {"type": "string"}}}}, "must be required or have a default"),
    ("bad list type", {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "bag"}, "is not allowed; allowed: atomic"),
    ("unknown keyword", {"type": "string", "examples": ["a"]}, "examples is not allowed"),
    ("bad pattern", {"type": "string", "pattern": "("}, "does not compile"),
    ("exclusiveMinimum number", {"type": "integer", "exclusiveMinimum": 3}, "must be a boolean in apiextensions v1"),
    ("negative minLength", {"type": "string", "minLength": -1}, "must be a non-negative integer"),
]


def test_good_schema_is_structural():
    assert structural.check_schema(GOOD) == []


@pytest.mark.parametrize("label,bad,message", BAD, ids=[b[0] for b in BAD])
def test_known_bad_schemas_rejected(label, bad, message):
    schema = copy.deepcopy(GOOD)
    schema["properties"]["spec"]["properties"]["bad"] = bad
    errors = structural.check_schema(schema)
    assert errors, label
    assert any(message in e["message"] for e in errors), (label, errors)
    assert all(e["path"].startswith(".spec.properties") or e["path"].startswith(".spec.bad") for e in errors), errors


def test_root_must_be_object_and_metadata_restricted():
    assert any("root must have type object" in e["message"] for e in structural.check_schema({"type": "string"}))
    schema = {"type": "object", "properties": {"metadata": {"type": "object", "properties": {"labels": {"type": "object"}}}}}
    assert any("only name and generateName" in e["message"] for e in structural.check_schema(schema))


def _crd_for(text, name="demo", **kwargs):
    return crd.build_crd(infer.infer_text(text), name, **kwargs)


def test_crd_shape_and_names():
    doc, dropped = _crd_for("replicas: 1\n", "gpu-operator", versions=["v25.3.0", "v25.10.0"])
    assert dropped == []
    assert doc["metadata"]["name"] == "gpuoperators.gpu-operator.bundles.aicr.io"
    assert doc["spec"]["names"] == {"kind": "GpuOperator", "listKind": "GpuOperatorList", "plural": "gpuoperators", "singular": "gpuoperator"}
    version = doc["spec"]["versions"][0]
    assert version["name"] == "v1alpha1" and version["storage"] and version["subresources"] == {"status": {}}
    root = version["schema"]["openAPIV3Schema"]
    spec = root["properties"]["spec"]["properties"]
    assert spec["version"]["enum"] == ["v25.3.0", "v25.10.0"]
    assert spec["desiredRevision"]["type"] == "integer"
    assert spec["values"]["properties"]["replicas"] == {"type": "integer"}
    status = root["properties"]["status"]["properties"]
    assert set(status) >= {"conditions", "observedGeneration", "appliedRevision"}
    assert status["conditions"]["x-kubernetes-list-map-keys"] == ["type"]
    assert structural.check_crd(doc) == []


def test_crd_name_options_and_errors():
    doc = _crd_for("a: 1\n", "x", group="apps.example.com", kind="Thing", plural="things", api_version="v2", scope="Cluster")[0]
    assert doc["metadata"]["name"] == "things.apps.example.com" and doc["spec"]["scope"] == "Cluster"
    assert doc["spec"]["versions"][0]["name"] == "v2"
    with pytest.raises(AicrError) as exc:
        _crd_for("a: 1\n", "x", kind="thing")
    assert exc.value.msg == "kind: 'thing' is not allowed; allowed: CamelCase letters and digits starting with an upper-case letter, at most 63 characters"
    with pytest.raises(AicrError) as exc:
        _crd_for("a: 1\n", "x", scope="Global")
    assert exc.value.msg == "scope: 'Global' is not allowed; allowed: Namespaced, Cluster"
    with pytest.raises(AicrError):
        _crd_for("a: 1\n", "x", group="nodot")


def test_crd_node_rendering_rules():
    text = "n:\ne: {}\nl: []\nq: 100Mi\nf: 1.5\ns: |\n  multi\n  line\n# @type: int\nt:\nm: [1, x]\n"
    doc = _crd_for(text)[0]
    values = crd.values_schema_of(doc)["properties"]
    assert values["n"] == {"x-kubernetes-preserve-unknown-fields": True, "nullable": True}
    assert values["e"] == {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
    assert values["l"] == {"type": "array", "items": {"x-kubernetes-preserve-unknown-fields": True}}
    assert values["q"] == {"x-kubernetes-int-or-string": True}
    assert values["f"] == {"type": "number"}
    assert values["s"] == {"type": "string"}
    assert values["t"] == {"type": "integer", "nullable": True}
    assert values["m"] == {"type": "array", "items": {"x-kubernetes-int-or-string": True}}


def test_json_only_keywords_are_dropped_and_reported():
    text = "a: x # @schema const: x\nb: [] # @schema uniqueItems: true ; items: string\nc: {} # @schema patternProperties: {'^a': {type: string}}\n"
    doc, dropped = _crd_for(text)
    values = crd.values_schema_of(doc)["properties"]
    assert values["a"]["enum"] == ["x"]
    assert "uniqueItems" not in values["b"] and "patternProperties" not in values["c"]
    assert sorted(d["keyword"] for d in dropped) == ["patternProperties", "uniqueItems"]
    assert structural.check_crd(doc) == []


def _cr_roundtrip(schema, values):
    pruned, removed = structural.prune(values, schema)
    json_schema = dict(structural.to_json_schema(schema), **{"$schema": "https://json-schema.org/draft/2020-12/schema"})
    return pruned, removed, validation.validate(json_schema, pruned)


def test_every_corpus_chart_gives_a_structural_crd_that_keeps_its_values(shared_dir):
    # export: false fields, and nulls of fields the design types exactly (not nullable), are pruned by design
    hidden = {"juiceshop-helmetica-v3.1.0": [".readinessProbe.httpGet.path", ".readinessProbe.httpGet.port",
                                             ".hooks.preInstall.job.ttlSecondsAfterFinished", ".hooks.preInstall.job.sleepSeconds",
                                             ".hooks.postInstall.job.ttlSecondsAfterFinished", ".hooks.postInstall.job.sleepSeconds", ".private"]}
    for chart in corpus_charts(shared_dir):
        text = (chart / "values.yaml").read_text()
        doc, _dropped = crd.build_crd(infer.infer_text(text), chart_name(chart))
        assert structural.check_crd(doc) == [], chart.name
        values = infer.load_values(text)
        pruned, removed, errors = _cr_roundtrip(crd.values_schema_of(doc), values)
        assert errors == [], (chart.name, errors[:3])
        assert removed == hidden.get(chart.name, []), (chart.name, removed[:5])
        if not removed:
            assert pruned == values, chart.name


def test_prune_simulation_drops_unknown_and_non_nullable_nulls():
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                               "c": {"type": "string", "nullable": True}}}
    pruned, removed = structural.prune({"a": None, "b": {"z": 1}, "c": None, "d": 1}, schema)
    assert pruned == {"b": {"z": 1}, "c": None}
    assert removed == [".a", ".d"]


def _walk(schema, path=""):
    yield path, schema
    for key, child in (schema.get("properties") or {}).items():
        yield from _walk(child, path + "." + key)
    if isinstance(schema.get("items"), dict):
        yield from _walk(schema["items"], path + "[]")
    if isinstance(schema.get("additionalProperties"), dict):
        yield from _walk(schema["additionalProperties"], path + ".*")


def test_helmetica_juiceshop_reproduces_the_design_crd(shared_dir):
    """Types, nullability and descriptions of every property of the golden CRD's .spec.values."""
    base = shared_dir / "values-schema-reference" / "helmetica-chrysopoeia" / "pkg" / "schemagen" / "testdata" / "charts"
    golden = yaml.safe_load((base / "juiceshop.golden.yaml").read_text())
    golden_values = crd.values_schema_of(golden, "bundle")
    ours_doc = crd.build_crd(infer.infer_text((base / "juiceshop" / "values.yaml").read_text()), "juiceshop")[0]
    ours = dict(_walk(crd.values_schema_of(ours_doc)))
    compared = described = 0
    for path, expected in _walk(golden_values):
        if not path:
            continue
        assert path in ours, path
        got = ours[path]
        if path.startswith(".resources.") and expected.get("type") == "string" and path.rsplit(".", 1)[-1] in ("cpu", "memory"):
            # documented difference: resource quantities are int-or-string here
            assert got == {"x-kubernetes-int-or-string": True, "description": got.get("description")} or got.get("x-kubernetes-int-or-string")
        else:
            assert got.get("type") == expected.get("type"), (path, got, expected)
        assert bool(got.get("nullable")) == bool(expected.get("nullable")), path
        if path == ".ingress.hosts":
            # the golden took commented-out YAML of the previous key as a description; we do not
            assert "description" not in got
        elif "description" in expected:
            assert got.get("description") == expected["description"].replace("-- ", "", 1), path
            described += 1
        compared += 1
    assert compared >= 60 and described >= 20
    # what the golden omits (empty maps, nulls) is present and free-form here
    pod_annotations = ours[".podAnnotations"]
    assert pod_annotations["type"] == "object" and pod_annotations["x-kubernetes-preserve-unknown-fields"] is True
    assert pod_annotations["description"].startswith("This is for setting Kubernetes Annotations to a Pod.\nFor more information checkout: ")
    assert ".private" not in ours and ".readinessProbe.httpGet.path" not in ours


@pytest.mark.parametrize("name", ["empty", "emptywithcomment", "enums", "publicprivateexport", "scalarobjarray"])
def test_helmetica_schemagen_goldens(shared_dir, name):
    """Every property of the other chrysopoeia goldens: same type, nullability, enum and description."""
    base = shared_dir / "values-schema-reference" / "helmetica-chrysopoeia" / "pkg" / "schemagen" / "testdata" / "charts"
    golden = yaml.safe_load((base / (name + ".golden.yaml")).read_text())
    golden_values = crd.values_schema_of(golden, golden["spec"]["versions"][0]["name"]) or {}
    ours = dict(_walk(crd.values_schema_of(crd.build_crd(infer.infer_text((base / name / "values.yaml").read_text()), name)[0])))
    for path, expected in _walk(golden_values):
        if not path:
            continue  # .spec.values itself carries the design's own wording
        got = ours.get(path)
        assert got is not None, path
        for key in ("type", "nullable", "enum"):
            assert got.get(key) == expected.get(key), (path, key, got, expected)
        if "description" in expected:
            assert got.get("description") == expected["description"].strip(), path
    assert structural.check_crd(crd.build_crd(infer.infer_text((base / name / "values.yaml").read_text()), name)[0]) == []


def test_crd_keyword_translation_and_preserve_option():
    text = ("image:\n  tag: v1 # @schema deprecated ; description: old tag ; examples: [v2]\n"
            "port: 80 # @schema exclusiveMinimum: 0 ; exclusiveMaximum: 65536\n"
            "labels:\n  a: b\n")
    doc = _crd_for(text, preserve_unknown=True)[0]
    values = crd.values_schema_of(doc)
    assert values["properties"]["image"]["x-kubernetes-preserve-unknown-fields"] is True
    assert values["properties"]["labels"]["x-kubernetes-preserve-unknown-fields"] is True
    tag = values["properties"]["image"]["properties"]["tag"]
    assert tag == {"description": "Deprecated. old tag", "type": "string", "example": "v2"}
    assert values["properties"]["port"] == {"type": "integer", "minimum": 0, "exclusiveMinimum": True, "maximum": 65536, "exclusiveMaximum": True}
    assert structural.check_crd(doc) == []
    closed = crd.values_schema_of(_crd_for(text)[0])
    assert "x-kubernetes-preserve-unknown-fields" not in closed["properties"]["image"]
    pruned, removed = structural.prune({"image": {"tag": "v1", "digest": "sha"}}, closed)
    assert removed == [".image.digest"] and pruned == {"image": {"tag": "v1"}}
