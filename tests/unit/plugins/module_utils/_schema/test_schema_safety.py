"""Documentation hints vs types, the safety net (own values pass the JSON Schema and the CRD), unions in the CRD."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import validation
from ansible_collections.aicr.runtime.plugins.module_utils._schema import crd as crd_mod, infer, structural

from schema_helpers import node_at, run_engine


def _run(tmp_path, text, output="json_schema"):
    path = tmp_path / "chart" / "values.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    result, failure = run_engine({"values_files": [str(path)], "output": output})
    assert failure is None
    return result


def _both(tmp_path, text, pruned=()):
    """(JSON Schema, CRD .spec.values schema, warnings) with the own-values checks every test relies on."""
    js = _run(tmp_path, text)
    crd = _run(tmp_path, text, "crd")
    values = infer.load_values(text)
    assert validation.validate(js["schema"], values) == []
    values_schema = crd_mod.values_schema_of(crd["crd"])
    crd_js = dict(structural.to_json_schema(values_schema), **{"$schema": "https://json-schema.org/draft/2020-12/schema"})
    assert validation.validate(crd_js, values) == []
    assert structural.prune(values, values_schema)[1] == list(pruned)
    assert structural.check_crd(crd["crd"]) == []
    assert js.get("warnings") == crd.get("warnings")
    return js["schema"], values_schema, js.get("warnings") or []


BITNAMI = """\
## @param pdb.minAvailable [object] Minimum number/percentage of pods that should remain scheduled
## @param pdb.maxUnavailable [object] Maximum number/percentage of pods that may be made unavailable
## @param podLabels [object] Extra labels
## @param extraEnvVars [array] Extra environment variables
## @param pullSecrets [array] Secret names
## @param image.tag [string] Image tag
## @param existingSecret [string] Name of an existing secret
pdb:
  minAvailable: ""
  maxUnavailable: 1
podLabels: {}
extraEnvVars: []
pullSecrets:
image:
  tag: 1.25
existingSecret:
"""


def test_readme_generator_modifiers_only_type_null_leaves(tmp_path):
    schema, crd_values, warnings = _both(tmp_path, BITNAMI)
    assert warnings == []
    assert node_at(schema, "pdb.minAvailable")["type"] == ["integer", "string"]  # not object: "" is the default
    assert node_at(schema, "pdb.maxUnavailable")["type"] == ["integer", "string"]
    assert node_at(schema, "podLabels")["type"] == "object"
    assert node_at(schema, "extraEnvVars")["type"] == "array"
    assert node_at(schema, "pullSecrets")["type"] == ["array", "null"]  # a null leaf: the hint types it, null stays valid
    assert node_at(schema, "image.tag")["type"] == "number"  # never narrowed to string
    assert node_at(schema, "existingSecret")["type"] == ["string", "null"]
    assert node_at(schema, "pdb.minAvailable")["description"].startswith("Minimum number")
    assert crd_values["properties"]["pdb"]["properties"]["minAvailable"] == {
        "description": "Minimum number/percentage of pods that should remain scheduled", "x-kubernetes-int-or-string": True}


def test_helm_docs_type_never_narrows(tmp_path):
    schema, _crd, warnings = _both(tmp_path, "# -- (int) Replicas\nreplicas: \"3\"\n# -- (int) Port\nport:\n")
    assert warnings == []
    assert node_at(schema, "replicas")["type"] == "string"
    assert node_at(schema, "port")["type"] == ["integer", "null"]


def test_schema_type_rejecting_its_default_is_widened_with_a_warning(tmp_path):
    text = "pdb:\n  minAvailable: \"\" # @schema type: object\n"
    schema, crd_values, warnings = _both(tmp_path, text)
    assert node_at(schema, "pdb.minAvailable")["type"] == ["object", "string"]
    assert crd_values["properties"]["pdb"]["properties"]["minAvailable"]["x-kubernetes-preserve-unknown-fields"] is True
    assert len(warnings) == 1
    assert "pdb.minAvailable" in warnings[0] and 'annotation type: "object"' in warnings[0] and "widened" in warnings[0]


@pytest.mark.parametrize("annotation, keyword, check", [
    ("enum: [a, b]", "enum", lambda node: node["enum"] == ["a", "b", "c"]),
    ("pattern: ^a", "pattern", lambda node: "pattern" not in node),
    ("maxLength: 0", "maxLength", lambda node: "maxLength" not in node),
    ("const: a", "const", lambda node: "const" not in node),
])
def test_constraints_rejecting_their_default_are_widened(tmp_path, annotation, keyword, check):
    schema, crd_values, warnings = _both(tmp_path, "mode: c # @schema %s\n" % annotation)
    assert check(node_at(schema, "mode")), node_at(schema, "mode")
    assert check(crd_values["properties"]["mode"]) or keyword == "const"
    assert len(warnings) == 1 and "mode: the chart's default \"c\"" in warnings[0] and ("annotation %s" % keyword) in warnings[0]


def test_min_items_rejecting_an_empty_default_is_dropped(tmp_path):
    schema, crd_values, warnings = _both(tmp_path, "hosts: [] # @schema minItems: 1; item: string\n")
    assert node_at(schema, "hosts") == {"type": "array", "items": {"type": "string"}}
    assert "minItems" not in crd_values["properties"]["hosts"]
    assert len(warnings) == 1 and "hosts: the chart's default []" in warnings[0] and "annotation minItems: 1" in warnings[0]


def test_unknown_annotation_keys_warn(tmp_path):
    _schema, _crd, warnings = _both(tmp_path, "a: 1 # @schema typo: integer; minimum: 0\n")
    assert warnings == ["values_schema: a: unknown annotation key(s) ignored: typo"]


UNION = """\
# @schema type: [object, string]
proxy:
  host: example.com
  port: 3128
# @schema type: [array, null, object]; item: string
extra: {}
# @schema type: [array, null, object]; item: string
extraList: [a]
"""


def test_unions_keep_their_properties_and_never_collapse(tmp_path):
    schema, crd_values, warnings = _both(tmp_path, UNION)
    assert warnings == []
    proxy = node_at(schema, "proxy")
    assert proxy["type"] == ["object", "string"]
    assert proxy["properties"]["port"]["type"] == "integer"
    props = crd_values["properties"]
    assert props["proxy"]["x-kubernetes-preserve-unknown-fields"] is True and "type" not in props["proxy"]
    assert props["proxy"]["properties"]["port"] == {"type": "integer"}
    extra = node_at(schema, "extra")
    assert set(extra["type"]) == {"array", "object", "null"} and extra["items"] == {"type": "string"}
    assert "type" not in props["extra"] and props["extra"]["x-kubernetes-preserve-unknown-fields"] is True
    assert set(node_at(schema, "extraList")["type"]) == {"array", "object", "null"}


def test_hidden_field_set_by_the_chart_is_kept_opaque_in_the_crd(tmp_path):
    text = "a:\n  shown: 1\n  # @schema hidden: true\n  secret: x\n"
    schema, crd_values, warnings = _both(tmp_path, text)
    assert "secret" not in node_at(schema, "a")["properties"]  # hidden from the JSON Schema (objects stay open)
    assert crd_values["properties"]["a"]["properties"]["secret"] == {"x-kubernetes-preserve-unknown-fields": True, "nullable": True}
    assert warnings == ["values_schema: a.secret: hidden by its annotation but set by the chart's defaults; the CRD keeps it as an opaque "
                        "field (x-kubernetes-preserve-unknown-fields) so the apiserver does not prune it"]
