"""Comment conventions and annotations, including the losisin/dadav reference inputs."""

import json
import textwrap

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common import validation
from ansible_collections.aicr.runtime.plugins.module_utils._schema import comments, infer, jsonschema

from schema_helpers import schema_of


def test_plain_block_above_a_key():
    text = textwrap.dedent("""\
        # Header of the file.

        # The number of replicas.
        # More text on a second line.
        replicas: 1
        image:
          # Registry to pull from.
          repository: nvcr.io
        """)
    schema = schema_of(text)
    assert schema["properties"]["replicas"]["description"] == "The number of replicas.\nMore text on a second line."
    assert schema["properties"]["image"]["properties"]["repository"]["description"] == "Registry to pull from."
    assert "description" not in schema["properties"]["image"]


def test_commented_out_yaml_is_not_a_description():
    text = textwrap.dedent("""\
        ingress:
          annotations: {}
            # kubernetes.io/ingress.class: nginx
            # kubernetes.io/tls-acme: "true"
          hosts: []
        # fsGroup: 2000
        # runAsUser: 1000
        securityContext: {}
        # Note: this is prose even with a colon.
        note: x
        """)
    schema = schema_of(text)
    assert "description" not in schema["properties"]["ingress"]["properties"]["hosts"]
    assert "description" not in schema["properties"]["securityContext"]
    assert schema["properties"]["note"]["description"] == "Note: this is prose even with a colon."


def test_helm_docs_conventions():
    text = textwrap.dedent("""\
        # Some unrelated header
        # -- (int) Number of replicas
        # continued here
        # @default -- computed
        replicas:
        # service.type -- Kubernetes Service type
        service:
          type: ClusterIP
        labels:
          # labels."kubernetes.io/hostname" -- Node hostname label
          kubernetes.io/hostname: localhost
        """)
    schema = schema_of(text)
    assert schema["properties"]["replicas"]["description"] == "Number of replicas\ncontinued here"
    assert schema["properties"]["replicas"]["type"] == ["integer", "null"]
    assert schema["properties"]["service"]["properties"]["type"]["description"] == "Kubernetes Service type"
    assert schema["properties"]["labels"]["properties"]["kubernetes.io/hostname"]["description"] == "Node hostname label"


def test_bitnami_params_are_position_independent():
    text = textwrap.dedent("""\
        ## @section Global parameters
        ## @param global.imageRegistry Global Docker image registry
        ## @param image.pullSecrets [array] Docker registry secret names
        ## @param extraEnv [array, nullable] Extra environment
        ## @param service.ports.http HTTP port
        global:
          imageRegistry: ""
        image:
          pullSecrets: []
        extraEnv:
        service:
          ports:
            http: 80
        """)
    schema = schema_of(text)
    assert schema["properties"]["global"]["properties"]["imageRegistry"]["description"] == "Global Docker image registry"
    assert schema["properties"]["image"]["properties"]["pullSecrets"]["description"] == "Docker registry secret names"
    assert schema["properties"]["extraEnv"]["type"] == ["array", "null"]
    assert schema["properties"]["service"]["properties"]["ports"]["properties"]["http"]["description"] == "HTTP port"


def test_losisin_inline_and_above_annotations():
    text = textwrap.dedent("""\
        image:
          repository: nginx # @schema required: true
          pullPolicy: Always # @schema enum: [Always, IfNotPresent]; deprecated
        replicas: 2 # @schema minimum: 1 ; maximum: 10
        name: abc # @schema pattern: ^[a-z]+$ ; minLength: 2
        # @schema type: [string, null]
        empty:
        # @schema hidden: true
        internal:
          secret: x
        tags: [] # @schema items: string ; minItems: 1
        port: 80 # @schema default: 80
        opt: x # @schema nullable: true
        """)
    schema = schema_of(text)
    image = schema["properties"]["image"]
    assert image["required"] == ["repository"]
    assert image["properties"]["pullPolicy"]["enum"] == ["Always", "IfNotPresent"]
    assert image["properties"]["pullPolicy"]["deprecated"] is True
    assert schema["properties"]["replicas"]["minimum"] == 1 and schema["properties"]["replicas"]["maximum"] == 10
    assert schema["properties"]["name"]["pattern"] == "^[a-z]+$"
    assert schema["properties"]["empty"]["type"] == ["string", "null"]
    assert "internal" not in schema["properties"]
    assert schema["properties"]["tags"]["items"] == {"type": "string"} and schema["properties"]["tags"]["minItems"] == 1
    assert schema["properties"]["port"]["default"] == 80
    assert schema["properties"]["opt"]["type"] == ["string", "null"]
    bad = {"image": {"pullPolicy": "Sometimes"}, "replicas": 11, "name": "ABC", "tags": []}
    rules = sorted((e["path"], e["rule"]) for e in validation.validate(schema, bad))
    assert rules == [("image", "required"), ("image.pullPolicy", "enum"), ("name", "pattern"),
                     ("replicas", "maximum"), ("tags", "minItems")]


def test_dadav_block_form():
    text = "# @schema\n# description: foo\n# enum: [bar, baz]\n# @schema\nfoo: bar\n"
    schema = schema_of(text)
    assert schema["properties"]["foo"] == {"description": "foo", "type": "string", "enum": ["bar", "baz"]}


def test_unknown_annotation_type_is_a_one_line_error():
    with pytest.raises(AicrError) as exc:
        schema_of("a: 1 # @schema type: widget\n")
    assert exc.value.msg.startswith("annotation type at a: 'widget' is not a known type (allowed: ")
    assert "\n" not in exc.value.msg


def test_inline_comment_parser_respects_quotes():
    assert comments.inline_comment('color: "#fff" # real') == "# real"
    assert comments.inline_comment("url: http://x/#anchor") is None
    assert comments.inline_comment("a: 'it''s # not' # yes") == "# yes"


def test_parse_schema_annotation_values():
    assert comments.parse_schema_annotation(" enum: [a, 'b;c'] ; minimum: 1 ; deprecated") == {"enum": ["a", "b;c"], "minimum": 1, "deprecated": True}


def _props(schema, prefix=""):
    out = {}
    for key, child in (schema.get("properties") or {}).items():
        out[prefix + key] = child
        out.update(_props(child, prefix + key + "."))
        if isinstance(child.get("items"), dict):
            out.update(_props(child["items"], prefix + key + "[]."))
    return out


def test_losisin_full_reference(shared_dir):
    """Keywords losisin derives from full.yaml annotations are reproduced per property."""
    ref = shared_dir / "values-schema-reference" / "losisin-helm-values-schema-json" / "testdata"
    ours = _props(schema_of((ref / "full.yaml").read_text()))
    theirs = _props(json.loads((ref / "full.schema.json").read_text()))
    compared = 0
    for path, expected in theirs.items():
        assert path in ours, path
        for key in ("type", "enum", "minimum", "maximum", "minItems", "maxItems", "minProperties", "maxProperties", "pattern", "title",
                    "description", "deprecated", "required", "const", "uniqueItems", "patternProperties", "multipleOf", "examples", "readOnly",
                    "$ref", "unevaluatedProperties"):
            if key in expected:
                assert ours[path].get(key) == expected[key], (path, key, ours[path].get(key), expected[key])
                compared += 1
    assert compared >= 35
    # skipProperties drops the inferred properties; hidden drops the key; mergeProperties makes a map
    assert "labels.hello" not in ours and "monitoring" not in ours
    assert ours["ports"]["additionalProperties"]["properties"]["protocol"]["enum"] == ["tcp", "udp"]


def test_losisin_helm_docs_reference(shared_dir):
    ref = shared_dir / "values-schema-reference" / "losisin-helm-values-schema-json" / "testdata" / "helm-docs"
    ours = _props(schema_of((ref / "values.yaml").read_text()))
    theirs = _props(json.loads((ref / "values.schema.json").read_text()))
    for path, expected in theirs.items():
        for key in ("description", "enum"):
            if key in expected:
                assert ours[path].get(key) == expected[key], (path, key)
        if expected.get("type") in ("string", "integer"):
            assert ours[path]["type"] == expected["type"], path
    assert ours["labels"]["type"] == ["object", "null"]  # the "comment directly below" form


def test_losisin_basic_reference_types(shared_dir):
    ref = shared_dir / "values-schema-reference" / "losisin-helm-values-schema-json" / "testdata"
    ours = _props(schema_of((ref / "basic.yaml").read_text()))
    theirs = _props(json.loads((ref / "basic.schema.json").read_text()))
    assert set(ours) == set(theirs)
    for path, expected in theirs.items():
        if expected.get("type") == "null":
            assert "type" not in ours[path], path  # a null leaf may be set to anything
        else:
            assert ours[path]["type"] == expected["type"], path


def test_dadav_simple_reference(shared_dir):
    text = (shared_dir / "values-schema-reference" / "dadav-helm-schema" / "tests" / "charts" / "test_simple.yaml").read_text()
    assert schema_of(text)["properties"]["foo"]["description"] == "foo"


def test_helmetica_meta_keys(shared_dir):
    charts = shared_dir / "values-schema-reference" / "helmetica-chrysopoeia" / "pkg" / "schemagen" / "testdata" / "charts"
    enums = jsonschema.to_json_schema(infer.infer_text((charts / "enums" / "values.yaml").read_text()))
    assert enums["properties"]["string"]["enum"] == ["a", "b", "c", None]
    assert enums["properties"]["int"]["type"] == ["integer", "null"]
    assert enums["properties"]["stringarray"]["items"] == {"type": "string", "enum": ["a", "b", "c"]}
    assert enums["properties"]["stringmap"]["additionalProperties"] == {"type": "string", "enum": ["a", "b", "c"]}
    assert not any(k.startswith("#") for k in enums["properties"])
    export = jsonschema.to_json_schema(infer.infer_text((charts / "publicprivateexport" / "values.yaml").read_text()))
    assert "private" not in export["properties"] and "public" in export["properties"]
    nested = export["properties"]["privateNested"]["properties"]
    assert set(nested) == {"d", "inheritanceinarray"}
    assert nested["d"]["properties"]["e"]["properties"]["f"] == {"type": "string"}


def test_helm_tool_documented_commented_out_properties():
    text = textwrap.dedent("""\
        global:
          # Labels for everything.
          # +docs:property
          commonLabels: {}

          # Old ReplicaSets to keep.
          # +docs:property
          # revisionHistoryLimit: 1
        pdb:
          enabled: false

          # Minimum available pods.
          # +docs:property
          # +docs:type=unknown
          # minAvailable: 1
        # +docs:ignore
        shim: {}

          # Default issuer.
          # +docs:property=shim.defaultIssuerName
          # defaultIssuerName: ""
        """)
    schema = schema_of(text)
    glob = schema["properties"]["global"]["properties"]
    assert glob["commonLabels"]["description"] == "Labels for everything."
    assert glob["revisionHistoryLimit"] == {"description": "Old ReplicaSets to keep.", "type": "integer"}
    assert schema["properties"]["pdb"]["properties"]["minAvailable"]["type"] == ["integer", "string"]
    assert schema["properties"]["shim"]["properties"]["defaultIssuerName"] == {"description": "Default issuer.", "type": "string"}
    assert set(schema["properties"]) == {"global", "pdb", "shim"}
