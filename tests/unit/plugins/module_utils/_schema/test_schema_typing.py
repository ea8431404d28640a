"""Where a null leaf's type legitimately comes from (the chart's commented-out example, Kubernetes well-known keys),
annotation property schemas that give no type, null defaults beside a composition, and recursive aliases."""


import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import validation
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._schema import crd as crd_mod, infer, structural, wellknown

from schema_helpers import node_at, schema_of, run_engine


def _generate(tmp_path, text):
    """(JSON Schema, CRD .spec.values schema, dropped, warnings); the chart's own values pass both (safety net)."""
    path = tmp_path / "chart" / "values.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    js, failure = run_engine({"values_files": [str(path)]})
    assert failure is None
    crd, failure = run_engine({"values_files": [str(path)], "output": "crd", "name": "typing"})
    assert failure is None
    assert structural.check_crd(crd["crd"]) == []
    values = infer.load_values(text)
    values_schema = crd_mod.values_schema_of(crd["crd"])
    assert validation.validate(js["schema"], values) == []
    crd_js = dict(structural.to_json_schema(values_schema), **{"$schema": "https://json-schema.org/draft/2020-12/schema"})
    assert validation.validate(crd_js, values) == []
    assert structural.prune(values, values_schema)[1] == []
    return js["schema"], values_schema, crd["dropped"], js.get("warnings") or []


# -- the chart's commented-out example ---------------------------------------------------------------------------

def test_commented_example_below_types_a_null_leaf():
    schema = schema_of(
        "resources:\n"
        "  # limits:\n"
        "  #   cpu: 100m\n"
        "env:\n"
        "# - name: FOO\n"
        "#   value: bar\n"
        "extraArgs:\n"
        "  # - --verbose\n"
        "sibling: 1\n")
    assert schema["properties"]["resources"]["type"] == ["object", "null"]
    assert schema["properties"]["env"]["type"] == ["array", "null"]
    assert schema["properties"]["extraArgs"]["type"] == ["array", "null"]
    # the example only types the leaf: its content is not a schema, any object is still accepted
    assert "properties" not in schema["properties"]["resources"]
    assert validation.validate(schema, {"resources": {"anything": 1}, "env": None}) == []
    assert [e["path"] for e in validation.validate(schema, {"resources": "big", "env": "x"})] == ["env", "resources"]


def test_commented_same_key_and_inline_examples():
    schema = schema_of(
        "timeout: null\n"
        "# timeout: 30\n"
        "workers: # 8\n"
        "enabled: # true\n"
        "ratio: # 0.5\n")
    props = schema["properties"]
    assert props["timeout"]["type"] == ["integer", "null"]
    assert props["workers"]["type"] == ["integer", "null"]
    assert props["enabled"]["type"] == ["boolean", "null"]
    assert props["ratio"]["type"] == ["number", "null"]


def test_what_is_not_an_example_leaves_the_leaf_untyped():
    schema = schema_of(
        "image:\n"
        "  tag:\n"
        "  # digest: sha256:abc\n"           # a commented-out sibling key at the key's column: not an example
        "host: #0.0.0.0\n"                   # an unquoted word inline: prose or a value, nothing tells
        "name: # the release name\n"         # inline prose
        "hpa:\n"
        "  cpu:\n"
        "    # average total CPU usage per pod (1-100)\n"   # prose below, deeper: not YAML
        "note:\n"
        "  # Note: this is important\n"      # prose that YAML would read as a mapping: first line is not code
        "described: # -- (int) typed by helm-docs instead\n")
    props = schema["properties"]
    assert props["image"]["properties"]["tag"] == {}
    assert props["host"].get("type") is None
    assert props["name"].get("type") is None
    assert props["hpa"]["properties"]["cpu"].get("type") is None
    assert props["note"].get("type") is None
    assert props["described"]["type"] == ["integer", "null"]


def test_an_annotation_wins_over_an_example():
    schema = schema_of("# @schema type: [string, null]\nlevel:\n  # - debug\n")
    assert schema["properties"]["level"]["type"] == ["string", "null"]


# -- Kubernetes well-known keys ----------------------------------------------------------------------------------

def test_well_known_field_types_come_from_the_pinned_definitions():
    assert wellknown.field_type("hostUsers") == "boolean"
    assert wellknown.field_type("terminationGracePeriodSeconds") == "integer"
    assert wellknown.field_type("runtimeClassName") == "string"
    assert wellknown.field_type("minAvailable") == "int-or-string"
    assert wellknown.field_type("affinity") == "object"
    assert wellknown.field_type("tolerations") == "array"
    assert wellknown.field_type("limits", parent="resources") == "object"
    assert wellknown.field_type("limits") is None  # only under resources
    assert wellknown.field_type("sleepSeconds") is None  # not a Kubernetes field: never guessed
    for version in ("1.35", "1.36", "1.37"):
        for key in wellknown.WELL_KNOWN:
            name = key[1] if isinstance(key, tuple) else key
            parent = key[0] if isinstance(key, tuple) else None
            assert wellknown.field_type(name, parent, version) is not None, (version, key)  # every entry resolves


def test_well_known_keys_type_null_leaves_only(tmp_path):
    js, crd, _dropped, _warnings = _generate(tmp_path, (
        "hostUsers:\n"
        "revisionHistoryLimit:\n"
        "podDisruptionBudget:\n"
        "  minAvailable:\n"
        "  unhealthyPodEvictionPolicy:\n"
        "resources:\n"
        "  limits:\n"
        "  requests:\n"
        "    cpu: 1m\n"
        "affinity:\n"
        "runtimeClassName: \"\"\n"
        "nodeSelector: {}\n"
        "sleepSeconds:\n"
        "# @schema type: [string, null]\n"
        "priorityClassName:\n"))
    props = js["properties"]
    assert props["hostUsers"]["type"] == ["boolean", "null"]
    assert props["revisionHistoryLimit"]["type"] == ["integer", "null"]
    assert node_at(js, "podDisruptionBudget.minAvailable")["type"] == ["integer", "string", "null"]
    assert node_at(js, "podDisruptionBudget.unhealthyPodEvictionPolicy")["type"] == ["string", "null"]
    assert node_at(js, "resources.limits")["type"] == ["object", "null"]
    assert props["affinity"]["type"] == ["object", "null"]
    assert props["runtimeClassName"]["type"] == "string"  # a concrete default is never changed
    assert props["nodeSelector"]["type"] == "object"
    assert props["sleepSeconds"] == {}  # not well known: stays free-form
    assert props["priorityClassName"]["type"] == ["string", "null"]  # the annotation, not the list
    assert crd["properties"]["hostUsers"] == {"type": "boolean", "nullable": True}
    assert crd["properties"]["podDisruptionBudget"]["properties"]["minAvailable"] == {"x-kubernetes-int-or-string": True, "nullable": True}
    assert validation.validate(js, {"hostUsers": "yes"})[0]["rule"] == "type"


def test_well_known_typing_follows_k8s_schema_version(tmp_path):
    path = tmp_path / "values.yaml"
    path.write_text("hostUsers:\n")
    for version in ("1.35", "1.37"):
        schema = run_engine({"values_files": [str(path)], "k8s_schema_version": version})[0]["schema"]
        assert schema["properties"]["hostUsers"]["type"] == ["boolean", "null"]


# -- annotation property schemas without a type, null beside a composition ----------------------------------------

def test_property_ref_without_type_keeps_the_inferred_type(tmp_path):
    js, crd, _dropped, _warnings = _generate(tmp_path, (
        "# @schema\n"
        "# definitions:\n"
        "#   port:\n"
        "#     type: integer\n"
        "#     minimum: 1\n"
        "#     maximum: 65535\n"
        "# properties:\n"
        "#   httpPort:\n"
        "#     $ref: \"#/definitions/port\"\n"
        "#     description: the HTTP port\n"
        "# @schema\n"
        "working:\n"
        "  httpPort: 80\n"))
    port = node_at(js, "working.httpPort")
    assert port == {"description": "the HTTP port", "type": "integer", "$ref": "#/definitions/port"}
    assert validation.validate(js, {"working": {"httpPort": 70000}})[0]["rule"] == "maximum"
    expected = {"type": "integer", "minimum": 1, "maximum": 65535, "description": "the HTTP port"}
    assert crd["properties"]["working"]["properties"]["httpPort"] == expected


def test_null_default_beside_a_composition_is_admitted_not_dropped(tmp_path):
    # (nested: a top-level null of a values file deletes the key, as Helm coalescing does, so nothing is checked there)
    js, crd, _dropped, warnings = _generate(tmp_path, 'secret:\n  version: # @schema oneOf: [{"type": "string"}, {"type": "number"}]\n')
    assert node_at(js, "secret.version") == {"anyOf": [{"oneOf": [{"type": "string"}, {"type": "number"}]}, {"type": "null"}]}
    for good in ("1.2", 1.2, None):
        assert validation.validate(js, {"secret": {"version": good}}) == []
    assert validation.validate(js, {"secret": {"version": [1]}})[0]["rule"] == "anyOf"
    assert crd["properties"]["secret"]["properties"]["version"] == {"x-kubernetes-preserve-unknown-fields": True, "nullable": True}
    assert any("secret.version" in w and "rule oneOf" in w for w in warnings)


# -- recursive aliases -------------------------------------------------------------------------------------------

RECURSIVE = "app: &app\n  name: x\n  settings:\n    namespace:\n      - *app\n"


def test_recursive_alias_is_a_json_schema_cycle_and_cut_in_the_crd(tmp_path):
    js, crd, dropped, warnings = _generate(tmp_path, RECURSIVE)
    items = node_at(js, "app.settings.namespace")["items"]
    assert items == {"$ref": "#/properties/app"}
    # the cycle validates to any depth, and still checks types at every level
    deep = {"app": {"name": "a", "settings": {"namespace": [{"name": "b", "settings": {"namespace": [{"name": "c"}]}}]}}}
    assert validation.validate(js, deep) == []
    wrong = {"app": {"settings": {"namespace": [{"settings": {"namespace": [{"name": 3}]}}]}}}
    assert [e["path"] for e in validation.validate(js, wrong)] == ["app.settings.namespace[0].settings.namespace[0].name"]
    cut = crd["properties"]["app"]["properties"]["settings"]["properties"]["namespace"]["items"]
    assert cut == {"x-kubernetes-preserve-unknown-fields": True}
    assert [(d["path"], d["keyword"]) for d in dropped] == [(".spec.values.app.settings.namespace[*]", "$ref")]
    assert [w for w in warnings if "recursive YAML alias" in w] == [
        "values_schema: app.settings.namespace[]: recursive YAML alias (app contains an alias of itself; Helm refuses such a values "
        "file): the JSON Schema refers back to app ($ref #/properties/app), the CRD cuts the cycle here with "
        "x-kubernetes-preserve-unknown-fields"]


def test_recursive_values_are_cut_where_they_contain_themselves():
    assert infer.load_values(RECURSIVE) == {"app": {"name": "x", "settings": {"namespace": []}}}
    # a repeated (non-recursive) alias is two copies, not a cycle
    assert infer.load_values("a: &a {x: 1}\nb: [*a, *a]\n") == {"a": {"x": 1}, "b": [{"x": 1}, {"x": 1}]}


def test_recursion_through_a_root_anchor_and_the_losisin_case(shared_dir):
    node = infer.infer_text("--- &root\nname: x\nchildren:\n  - *root\n")
    assert node["properties"]["children"]["items"]["extra"] == {"$ref": "#"}
    text = (shared_dir / "values-schema-reference" / "losisin-helm-values-schema-json" / "testdata" / "anchors.yaml").read_text()
    schema = schema_of(text)
    assert node_at(schema, "app.settings.namespace")["type"] == "array"
    assert node_at(schema, "app.settings.namespace")["items"] == {"$ref": "#/properties/app"}


def test_deep_nesting_without_recursion_is_still_refused():
    text = "a:\n" + "".join("  " * i + "b%d:\n" % i for i in range(1, 205))
    with pytest.raises(AicrError) as raised:
        infer.infer_text(text)
    assert "deeper than 200 levels" in str(raised.value)
