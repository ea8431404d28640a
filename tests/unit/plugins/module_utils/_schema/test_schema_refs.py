"""References resolved offline: $k8s (pinned definitions), relative and file: refs, bundling, CRD dereferencing."""

import json

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import validation
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._schema import crd as crd_mod, infer, refs, structural

from schema_helpers import run_engine

BUNDLE = "values-schema-reference/losisin-helm-values-schema-json/testdata"


def _generate(path, **params):
    js, failure = run_engine(dict({"values_files": [str(path)], "output": "json_schema"}, **params))
    assert failure is None
    crd, failure = run_engine(dict({"values_files": [str(path)], "output": "crd", "name": "refs"}, **params))
    assert failure is None
    values = infer.load_values(path.read_text())
    assert validation.validate(js["schema"], values) == []  # compiles: every $ref resolves
    values_schema = crd_mod.values_schema_of(crd["crd"])
    assert structural.check_crd(crd["crd"]) == []
    assert validation.validate(dict(structural.to_json_schema(values_schema), **{"$schema": "https://json-schema.org/draft/2020-12/schema"}), values) == []
    assert "$ref" not in json.dumps(values_schema).replace("\\u0024ref", "")
    for ref in _refs(js["schema"]):
        assert ref.startswith("#/"), ref  # nothing unresolvable is emitted
    return js, crd, values_schema


def _refs(value):
    if isinstance(value, dict):
        for key, child in value.items():
            if key == "$ref":
                yield child
            else:
                yield from _refs(child)
    elif isinstance(value, list):
        for child in value:
            yield from _refs(child)


def test_k8s_alias_bundled_in_json_schema_and_int_or_string_in_crd(shared_dir):
    js, _crd, values_schema = _generate(shared_dir / BUNDLE / "k8sRef.yaml")
    name = "io.k8s.apimachinery.pkg.api.resource.Quantity"
    assert js["schema"]["properties"]["memory"]["$ref"] == "#/$defs/" + name
    assert name in js["schema"]["$defs"]
    assert values_schema["properties"]["memory"] == {"x-kubernetes-int-or-string": True}
    assert js.get("warnings") is None


def test_relative_ref_with_nested_k8s_alias(shared_dir):
    js, _crd, values_schema = _generate(shared_dir / BUNDLE / "bundle" / "k8s-alias.yaml")
    defs = js["schema"]["$defs"]
    assert js["schema"]["properties"]["livenessProbe"]["$ref"] == "#/$defs/k8s-alias-subschema.schema.json"
    assert defs["k8s-alias-subschema.schema.json"]["oneOf"][0] == {"$ref": "#/$defs/io.k8s.api.core.v1.Probe"}
    assert "io.k8s.api.core.v1.HTTPGetAction" in defs and "io.k8s.apimachinery.pkg.util.intstr.IntOrString" in defs
    probe = values_schema["properties"]["livenessProbe"]
    assert probe["type"] == "object" and probe["nullable"] is True
    assert probe["properties"]["httpGet"]["properties"]["port"]["x-kubernetes-int-or-string"] is True
    text = json.dumps(probe)
    assert "x-kubernetes-patch" not in text and "x-kubernetes-group-version-kind" not in text


def test_local_and_relative_refs_of_the_losisin_bundle_case(shared_dir):
    js, _crd, values_schema = _generate(shared_dir / BUNDLE / "bundle" / "simple.yaml")
    props = js["schema"]["properties"]
    assert props["image"]["$ref"] == "#/$defs/simple-subschema.schema.json"
    assert props["imageToo"]["$ref"] == "#/properties/image"
    assert values_schema["properties"]["image"]["properties"]["pullPolicy"]["enum"] == ["IfNotPresent", "Always", "Never"]
    assert values_schema["properties"]["imageToo"]["properties"]["tag"] == {
        "nullable": True, "type": "string", "description": "Overrides the image tag whose default is the chart appVersion."}


def test_unresolvable_refs_are_dropped_with_a_warning_and_hidden_children_kept(tmp_path):
    path = tmp_path / "values.yaml"
    path.write_text("remote: # @schema $ref: https://example.com/schema.json\n  a: 1\n  # @schema hidden: true\n  b: 2\n"
                    "missing: {} # @schema $ref: ./nope.json\n"
                    "known: # @schema $ref: $k8s/_definitions.json#/definitions/io.k8s.api.core.v1.ResourceRequirements\n"
                    "  limits: {}\n  # @schema hidden: true\n  extra:\n")
    js, crd, values_schema = _generate(path)
    assert sorted(js["warnings"]) == sorted(crd["warnings"]) == [
        # hidden under a resolved reference, but set by the chart: the CRD keeps what the apiserver would prune
        "values_schema: known.extra: the chart's default key 'extra' would be pruned from the generated CRD (annotations $ref: "
        "\"$k8s/_definitions.json#/definitions/io.k8s.api.core.v1.ResourceRequirements\"); the object keeps unknown fields",
        "values_schema: missing: $ref ./nope.json cannot be resolved offline; dropped (the inferred schema is used)",
        "values_schema: remote: $ref https://example.com/schema.json cannot be resolved offline; dropped (the inferred schema is used)",
    ]
    assert set(js["schema"]["properties"]["remote"]["properties"]) == {"a", "b"}  # nothing replaces the hidden child
    assert set(js["schema"]["properties"]["known"]["properties"]) == {"limits"}  # the resolved reference describes the hidden one
    assert values_schema["properties"]["known"]["properties"]["limits"]["additionalProperties"] == {"x-kubernetes-int-or-string": True}


def test_item_ref_and_k8s_schema_version(tmp_path):
    path = tmp_path / "values.yaml"
    path.write_text("tolerations: [] # @schema itemRef: $k8s/_definitions.json#/definitions/io.k8s.api.core.v1.Toleration\n")
    js, _crd, values_schema = _generate(path, k8s_schema_version="1.35")
    assert js["schema"]["properties"]["tolerations"]["items"] == {"$ref": "#/$defs/io.k8s.api.core.v1.Toleration"}
    assert values_schema["properties"]["tolerations"]["items"]["properties"]["effect"]["type"] == "string"
    with pytest.raises(AicrError) as exc:
        run_engine({"values_files": [str(path)], "k8s_schema_version": "1.20"})
    assert exc.value.msg == "k8s_schema_version: '1.20' is not a supported Kubernetes minor; allowed: 1.35, 1.36, 1.37"


def test_pinned_definitions_are_the_generated_closure():
    for version in refs.K8S_VERSIONS:
        defs = refs.k8s_definitions(version)
        assert "io.k8s.api.core.v1.PodSpec" in defs and "io.k8s.api.apps.v1.DeploymentSpec" in defs
        assert not [name for name in defs if name.endswith("List") and name.startswith("io.k8s.api.core")]
        for name, schema in defs.items():
            for ref in _refs(schema):
                assert ref[len("#/$defs/"):] in defs, (version, name, ref)  # closed: every reference is shipped


def test_unknown_annotation_and_dadav_definitions(shared_dir):
    js, _crd, _values = _generate(shared_dir / "values-schema-reference/dadav-helm-schema/tests/charts/test_ref_toplevel.yaml")
    assert js["schema"]["definitions"]["toplevel"] == {"description": "Top Level"}
    # the default is null: the reference or null (dadav emits the bare $ref, which its own default fails)
    assert js["schema"]["properties"]["toplevel"]["anyOf"] == [{"$ref": "#/definitions/toplevel"}, {"type": "null"}]


def test_file_refs_with_fragments_and_internal_refs(tmp_path):
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemas" / "thing.json").write_text(json.dumps({
        "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": "thing.json",
        "$defs": {"port": {"type": "integer", "minimum": 1}},
        "properties": {"server": {"type": "object", "properties": {"port": {"$ref": "#/$defs/port"}}}}}))
    path = tmp_path / "values.yaml"
    path.write_text("server: # @schema $ref: file:schemas/thing.json#/properties/server\n  port: 8080\n"
                    "other: # @schema $ref: file://%s/schemas/thing.json#/$defs/port\n  3\n" % tmp_path)
    js, _crd, values_schema = _generate(path)
    assert js.get("warnings") is None
    props = js["schema"]["properties"]
    assert props["server"]["$ref"] == "#/$defs/thing.json/properties/server"
    assert props["other"]["$ref"] == "#/$defs/thing.json/$defs/port"
    bundled = js["schema"]["$defs"]["thing.json"]
    assert "$schema" not in bundled and "$id" not in bundled
    assert bundled["properties"]["server"]["properties"]["port"] == {"$ref": "#/$defs/thing.json/$defs/port"}  # rewritten into the bundle
    assert values_schema["properties"]["server"]["properties"]["port"] == {"type": "integer", "minimum": 1}
    assert validation.validate(js["schema"], {"server": {"port": 0}})[0]["rule"] == "minimum"  # the bundled schema applies
