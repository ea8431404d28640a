"""Inference rules (types, nulls, empty maps/lists, list merging, keys, quantities) and JSON Schema output."""

import json
import textwrap

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common import validation
from ansible_collections.aicr.runtime.plugins.module_utils._schema import infer, jsonschema, nodes

from schema_helpers import corpus_charts, node_at, schema_of


def test_yaml_tags_decide_int_vs_float():
    schema = schema_of("a: 1\nb: 1.0\nc: '1'\nd: true\ne: 1e3\nf: 0x10\ng: !!float 2\n")
    types = dict((k, v["type"]) for k, v in schema["properties"].items())
    assert types == {"a": "integer", "b": "number", "c": "string", "d": "boolean", "e": "string", "f": "integer", "g": "number"}


def test_null_leaf_has_no_type_restriction():
    schema = schema_of("empty:\nexplicit: null\n")
    assert schema["properties"]["empty"] == {}
    assert schema["properties"]["explicit"] == {}
    assert validation.validate(schema, {"empty": {"a": 1}, "explicit": "x"}) == []


def test_type_tag_on_null_leaf():
    schema = schema_of("# @type: int\nreplicas:\nport: # @type: string\n")
    assert schema["properties"]["replicas"]["type"] == ["integer", "null"]
    assert schema["properties"]["port"]["type"] == ["string", "null"]
    errors = validation.validate(schema, {"replicas": "three"})
    assert [(e["path"], e["rule"]) for e in errors] == [("replicas", "type")]


def test_empty_map_is_free_form_never_closed():
    schema = schema_of("annotations: {}\nnodeSelector: {}\n")
    assert schema["properties"]["annotations"] == {"type": "object"}
    assert validation.validate(schema, {"annotations": {"a": "b", "c": {"d": 1}}}) == []


def test_empty_list_items_free_form_unless_annotated():
    schema = schema_of("a: []\n# @schema items: {type: string}\nb: []\n")
    assert schema["properties"]["a"] == {"type": "array"}
    assert schema["properties"]["b"]["items"] == {"type": "string"}
    assert validation.validate(schema, {"a": [1, {"x": 2}], "b": ["x"]}) == []
    assert [e["path"] for e in validation.validate(schema, {"b": [1]})] == ["b[0]"]


def test_list_items_merged_across_all_elements():
    text = textwrap.dedent("""\
        env:
          - name: A
            value: "1"
          - name: B
            valueFrom:
              secretKeyRef: {name: s, key: k}
          - name: C
            value: 2
        """)
    items = node_at(schema_of(text), "env[]")
    assert set(items["properties"]) == {"name", "value", "valueFrom"}
    assert items["properties"]["value"]["type"] == ["integer", "string"]
    assert items["properties"]["valueFrom"]["properties"]["secretKeyRef"]["properties"]["key"] == {"type": "string"}


def test_mixed_scalar_list_and_int_float_widening():
    schema = schema_of("a: [1, 2.5]\nb: [true, x]\nc: [1, null]\n")
    assert schema["properties"]["a"]["items"] == {"type": "number"}
    assert "type" not in schema["properties"]["b"]["items"]
    assert schema["properties"]["c"]["items"] == {"type": ["integer", "null"]}


def test_dotted_and_slashed_keys_are_literal():
    schema = schema_of("labels:\n  app.kubernetes.io/name: x\n  nvidia.com/gpu.present: 'true'\n")
    assert set(schema["properties"]["labels"]["properties"]) == {"app.kubernetes.io/name", "nvidia.com/gpu.present"}


def test_resources_and_quantities_are_int_or_string():
    text = "resources:\n  limits:\n    cpu: 1\n    memory: 512Mi\n    nvidia.com/gpu: 1\n  requests:\n    cpu: 100m\nsize: 10Gi\nmaxUnavailable: 1\nname: x1\n"
    schema = schema_of(text)
    for path in ("resources.limits.cpu", "resources.limits.memory", "resources.limits.nvidia.com/gpu", "resources.requests.cpu"):
        parent, _sep, leaf = path.partition(".limits.") if ".limits." in path else path.partition(".requests.")
        kind = "limits" if ".limits." in path else "requests"
        assert schema["properties"][parent]["properties"][kind]["properties"][leaf]["type"] == ["integer", "string"], path
    assert schema["properties"]["size"]["type"] == ["integer", "string"]
    assert schema["properties"]["maxUnavailable"]["type"] == ["integer", "string"]
    assert schema["properties"]["name"]["type"] == "string"
    durations = schema_of("timeout: 1m\ncpuLimit: 500m\nsize: 1G\n")["properties"]
    assert durations["timeout"]["type"] == "string"
    assert durations["cpuLimit"]["type"] == ["integer", "string"] and durations["size"]["type"] == ["integer", "string"]


def test_multiline_strings_stay_strings_and_hash_lines_inside_are_not_comments():
    text = "script: |\n  # not a comment\n  echo hi\nnext: 1\nfolded: >\n  a\n  b\n"
    schema = schema_of(text)
    assert schema["properties"]["script"]["type"] == "string"
    assert "description" not in schema["properties"]["next"]
    assert schema["properties"]["folded"]["type"] == "string"


def test_anchors_aliases_and_merge_keys_resolved():
    text = textwrap.dedent("""\
        base: &base
          image: nginx
          port: 80
        copy: *base
        merged:
          <<: *base
          port: "http"
          extra: true
        """)
    schema = schema_of(text)
    assert schema["properties"]["copy"] == schema["properties"]["base"]
    merged = schema["properties"]["merged"]["properties"]
    assert set(merged) == {"image", "port", "extra"}
    assert merged["port"]["type"] == "string"


def test_timestamps_are_strings_in_values_and_schema():
    text = "date: 2024-01-02\n"
    assert infer.load_values(text) == {"date": "2024-01-02"}
    assert schema_of(text)["properties"]["date"]["type"] == "string"


def test_top_level_must_be_mapping():
    with pytest.raises(AicrError) as exc:
        infer.infer_text("- a\n- b\n", "x.yaml")
    assert "top level is a sequence; allowed: a mapping" in exc.value.msg
    with pytest.raises(AicrError) as exc:
        infer.infer_text("a: [\n", "bad.yaml")
    assert exc.value.msg.startswith("values file bad.yaml: line")


def test_empty_file_is_free_form():
    assert schema_of("# only comments\n") == {"$schema": jsonschema.DRAFTS["2020-12"], "type": "object"}


def test_draft_07_and_2020_12():
    assert schema_of("a: 1\n", "draft-07")["$schema"] == "http://json-schema.org/draft-07/schema#"
    assert schema_of("a: 1\n")["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    with pytest.raises(AicrError) as exc:
        jsonschema.normalise_draft("draft-03")
    assert exc.value.msg == "draft: 'draft-03' is not supported; allowed: 2020-12, draft-07"


def test_subchart_and_global_merge():
    parent = infer.infer_text("global:\n  registry: r\nsub:\n  replicas: 2\n")
    child = infer.infer_text("global:\n  pullSecrets: []\nreplicas: 1\nimage: x\n")
    root = nodes.nest_under(parent, "sub", child)
    schema = jsonschema.to_json_schema(root)
    assert set(schema["properties"]["global"]["properties"]) == {"registry", "pullSecrets"}
    assert set(schema["properties"]["sub"]["properties"]) == {"replicas", "image"}
    assert "global" not in schema["properties"]["sub"]["properties"]


def test_merge_union_semantics():
    a = infer.infer_text("x: 1\ny: {a: 1}\nz:\n")
    b = infer.infer_text("x: 1.5\ny: {b: s}\nz: 3\n")
    schema = jsonschema.to_json_schema(nodes.merge(a, b))
    assert schema["properties"]["x"]["type"] == "number"
    assert set(schema["properties"]["y"]["properties"]) == {"a", "b"}
    assert schema["properties"]["z"]["type"] == ["integer", "null"]


@pytest.mark.parametrize("draft", ["2020-12", "draft-07"])
def test_every_corpus_chart_validates_against_its_own_schema(shared_dir, draft):
    charts = corpus_charts(shared_dir)
    assert len(charts) == 30
    for chart in charts:
        text = (chart / "values.yaml").read_text()
        schema = jsonschema.to_json_schema(infer.infer_text(text, str(chart)), draft)
        json.dumps(schema)  # JSON-serialisable
        errors = validation.validate(schema, infer.load_values(text))
        assert errors == [], "%s: %s" % (chart.name, errors[:3])


def test_corpus_schema_rejects_wrong_types(shared_dir):
    text = (shared_dir / "values-corpus" / "gpu-operator" / "values.yaml").read_text()
    schema = jsonschema.to_json_schema(infer.infer_text(text))
    values = infer.load_values(text)
    values["driver"]["enabled"] = "yes please"
    values["daemonsets"]["tolerations"] = {"not": "a list"}
    errors = validation.validate(schema, values)
    assert sorted((e["path"], e["rule"]) for e in errors) == [("daemonsets.tolerations", "type"), ("driver.enabled", "type")]
    assert [e["value"] for e in errors if e["path"] == "driver.enabled"] == ["yes please"]


def test_corpus_features_covered(shared_dir):
    """The corpus exercises nulls, empty maps/lists, dotted keys and lists of objects; check they come out right."""
    text = (shared_dir / "values-corpus" / "kube-prometheus-stack" / "values.yaml").read_text()
    schema = jsonschema.to_json_schema(infer.infer_text(text))
    flat = {}

    def walk(node, path):
        flat[path] = node
        for key, child in (node.get("properties") or {}).items():
            walk(child, path + "." + key)
        if isinstance(node.get("items"), dict):
            walk(node["items"], path + "[]")

    walk(schema, "")
    untyped = [p for p, n in flat.items() if "type" not in n]
    free_maps = [p for p, n in flat.items() if n.get("type") == "object" and not n.get("properties")]
    assert len(untyped) > 10 and len(free_maps) > 50
    assert all(n.get("additionalProperties") is not False for n in flat.values())


def test_alias_bomb_is_refused():
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for index in range(1, 8):
        lines.append("a%d: &a%d [%s]" % (index, index, ", ".join(["*a%d" % (index - 1)] * 10)))
    with pytest.raises(AicrError) as exc:
        infer.infer_text("\n".join(lines) + "\n", "bomb.yaml")
    # refused while composing (``_common.bounded``, the one loader's limits), before the inferrer walks a node
    assert exc.value.msg.startswith("values file bomb.yaml: refused, its aliases expand to 123456770 more nodes: past the alias nodes limit of 100000")
