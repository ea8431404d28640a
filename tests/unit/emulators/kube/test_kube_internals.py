"""The emulator's building blocks: selectors, protobuf, patches, field sets, schemas; real upstream CRDs."""

import base64
import copy
import tarfile

import pytest
import yaml

from aicr_emulators.kube import patch, protobuf, schema, ssa
from aicr_emulators.kube.selectors import SelectorError, label_match, parse_field_selector, parse_label_selector
from aicr_emulators.kube.server import Emulator
from aicr_emulators.kube.store import ApiError, Context


@pytest.mark.parametrize("text,labels,expected", [
    ("a=b", {"a": "b"}, True),
    ("a==b", {"a": "c"}, False),
    ("a!=b", {}, True),
    ("a in (x, y)", {"a": "y"}, True),
    ("a notin (x,y)", {"a": "x"}, False),
    ("a notin (x)", {}, True),
    ("a", {"a": ""}, True),
    ("!a", {"a": "1"}, False),
    ("a>3,b<2", {"a": "4", "b": "1"}, True),
    ("a>3", {"a": "3"}, False),
    ("app.kubernetes.io/name=x,tier", {"app.kubernetes.io/name": "x", "tier": "web"}, True),
    ("", {"anything": "goes"}, True),
])
def test_label_selectors(text, labels, expected):
    assert label_match(parse_label_selector(text), labels) is expected


@pytest.mark.parametrize("text", ["a in (x", "a=b,,", "=b", "a > x", "a b"])
def test_bad_label_selectors(text):
    with pytest.raises(SelectorError):
        parse_label_selector(text)


def test_field_selector_labels_are_per_kind():
    assert parse_field_selector("spec.nodeName=n1,status.phase!=Failed", "", "pods") == [
        ("spec.nodeName", "=", "n1"), ("status.phase", "!=", "Failed")]
    with pytest.raises(SelectorError):
        parse_field_selector("spec.nodeName=n1", "", "configmaps")


def test_protobuf_round_trip_and_negative_integers():
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
              "metadata": {"name": "s", "namespace": "ns", "labels": {"a": "b"}, "annotations": {"x": "y"},
                           "finalizers": ["f1", "f2"], "creationTimestamp": "2024-05-06T07:08:09Z",
                           "ownerReferences": [{"apiVersion": "v1", "kind": "ConfigMap", "name": "o", "uid": "u",
                                                "controller": True}]},
              "data": {"k": base64.b64encode(b"\x00\xffbinary").decode()}, "stringData": {"s": "t"}, "immutable": True}
    assert protobuf.decode(protobuf.encode(secret)) == secret
    options = {"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "gracePeriodSeconds": -1,
               "propagationPolicy": "Foreground", "dryRun": ["All"], "preconditions": {"uid": "abc"}}
    assert protobuf.decode(protobuf.encode(options)) == options
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(b"k8s\x00\x0a\x05\x0a\x02v1")  # truncated TypeMeta
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(protobuf.encode(secret)[:-3] + b"\x12\x09Deployment")
    with pytest.raises(protobuf.ProtobufError):
        protobuf.decode(b"\x0a\x02v1")  # no magic


def test_json_patch_operations():
    doc = {"a": {"b": [1, 2]}, "c": "x"}
    out = patch.json_patch(doc, [{"op": "add", "path": "/a/b/-", "value": 3}, {"op": "move", "from": "/c", "path": "/d"},
                                 {"op": "copy", "from": "/d", "path": "/e"}, {"op": "remove", "path": "/a/b/0"},
                                 {"op": "test", "path": "/e", "value": "x"}, {"op": "add", "path": "/k~1v", "value": 1}])
    assert out == {"a": {"b": [2, 3]}, "d": "x", "e": "x", "k/v": 1} and doc["c"] == "x"
    with pytest.raises(patch.PatchError):
        patch.json_patch(doc, [{"op": "remove", "path": "/missing"}])
    assert patch.merge_patch({"a": {"b": 1, "c": 2}}, {"a": {"b": None, "d": 3}}) == {"a": {"c": 2, "d": 3}}


def test_strategic_merge_patch_directives():
    pod = schema.builtin_root("", "v1", "Pod")
    live = {"spec": {"containers": [{"name": "a", "image": "a:1", "ports": [{"containerPort": 80}]},
                                    {"name": "b", "image": "b:1"}],
                     "tolerations": [{"key": "x"}], "nodeSelector": {"k": "v", "old": "1"}},
            "metadata": {"finalizers": ["f1"]}}
    out = patch.strategic_merge_patch(live, {
        "spec": {"$setElementOrder/containers": [{"name": "b"}, {"name": "a"}],
                 "containers": [{"name": "a", "image": "a:2"}],
                 "tolerations": [{"key": "y"}], "nodeSelector": {"old": None}},
        "metadata": {"finalizers": ["f2"]}}, pod)
    assert [c["name"] for c in out["spec"]["containers"]] == ["b", "a"]
    assert out["spec"]["containers"][1] == {"name": "a", "image": "a:2", "ports": [{"containerPort": 80}]}
    assert out["spec"]["tolerations"] == [{"key": "y"}]  # no merge key: replaced
    assert out["spec"]["nodeSelector"] == {"k": "v"}
    assert out["metadata"]["finalizers"] == ["f1", "f2"]  # merge strategy on a primitive list
    out = patch.strategic_merge_patch(live, {"spec": {"containers": [{"name": "x", "image": "x"}, {"$patch": "replace"}]}}, pod)
    assert out["spec"]["containers"] == [{"name": "x", "image": "x"}]
    out = patch.strategic_merge_patch(live, {"spec": {"$retainKeys": ["containers"], "containers": []}}, pod)
    assert set(out["spec"]) == {"containers"}


def test_field_sets_and_fieldsv1_round_trip():
    dep = schema.builtin_root("apps", "v1", "Deployment")
    obj = {"metadata": {"name": "n", "labels": {"a": "1"}, "finalizers": ["x"]},
           "spec": {"replicas": 2, "template": {"spec": {"containers": [
               {"name": "c", "image": "i", "ports": [{"containerPort": 80, "protocol": "TCP"}]}]}}}}
    fields = ssa.fields_of(obj, dep)
    assert ("f:metadata", "f:labels", "f:a") in fields and ("f:metadata", "f:finalizers", 'v:"x"') in fields
    item = ("f:spec", "f:template", "f:spec", "f:containers", 'k:{"name":"c"}')
    assert item + (".",) in fields and item + ("f:image",) in fields
    assert item + ("f:ports", 'k:{"containerPort":80,"protocol":"TCP"}', "f:protocol") in fields
    assert ("f:metadata", "f:name") not in fields
    assert ssa.from_fieldsv1(ssa.to_fieldsv1(fields)) == fields
    assert ssa.dotted(item + ("f:image",)) == '.spec.template.spec.containers[name="c"].image'


def test_apply_removes_only_unowned_fields():
    cm = schema.builtin_root("", "v1", "ConfigMap")
    first = ssa.apply(None, {"data": {"a": "1", "b": "2"}}, "one", cm, "v1")
    second = ssa.apply(first, {"data": {"b": "2", "c": "3"}}, "two", cm, "v1")
    third = ssa.apply(second, {"data": {}}, "one", cm, "v1")
    assert third["data"] == {"b": "2", "c": "3"}  # a removed; b still owned by "two"
    with pytest.raises(ssa.ApplyConflict) as err:
        ssa.apply(third, {"data": {"c": "changed"}}, "one", cm, "v1")
    assert err.value.conflicts == [("two", "v1", ".data.c")]


def test_crd_schema_walker_semantics():
    node = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "n": {"type": "integer", "default": 5},
            "obj": {"type": "object", "properties": {"x": {"type": "string"}}, "default": {}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "nul": {"type": "string", "nullable": True},
            "gone": {"type": "string"},
            "embedded": {"type": "object", "x-kubernetes-embedded-resource": True, "properties": {"spec": {"type": "object"}}},
            "map": {"type": "object", "additionalProperties": {"type": "integer"}},
            "list": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
        }}}}
    out, issues = schema.check({"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x"}, "spec": {
        "obj": {"x": "1", "y": 2}, "free": {"z": [1]}, "nul": None, "gone": None,
        "embedded": {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {"q": 1}},
        "map": {"a": 1, "b": "two"}, "list": ["a", "a"]}}, schema.Schema(node), True)
    assert out["spec"]["n"] == 5 and out["spec"]["obj"] == {"x": "1"} and out["spec"]["free"] == {"z": [1]}
    assert out["spec"]["nul"] is None and "gone" not in out["spec"]
    assert out["spec"]["embedded"] == {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": {}}
    assert sorted(issues.unknown) == ["spec.embedded.spec.q", "spec.obj.y"]
    assert [(c[0], c[1]) for c in issues.causes] == [("FieldValueTypeInvalid", "spec.map.b"), ("FieldValueDuplicate", "spec.list[1]")]


def test_builtin_schema_type_errors_are_bad_requests():
    out, issues = schema.check({"apiVersion": "apps/v1", "kind": "Deployment", "spec": {"replicas": "x", "paused": None}},
                               schema.builtin_root("apps", "v1", "Deployment"), False)
    assert issues.type_errors and issues.type_errors[0][0] == "spec.replicas"
    assert "paused" not in out["spec"]


class _ChartYamlLoader(yaml.CSafeLoader):  # pylint: disable=too-many-ancestors
    """YAML 1.1's '=' value tag appears in real CRDs (enum values); go-yaml reads it as a string."""


_ChartYamlLoader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def _chart_crds(shared_dir):
    for tgz in sorted((shared_dir / "charts-repo").rglob("*.tgz")):
        with tarfile.open(tgz) as archive:
            for member in archive.getmembers():
                if "/crds/" not in member.name or not member.name.endswith((".yaml", ".yml")):
                    continue
                data = archive.extractfile(member).read()
                if b"{{" in data:
                    continue  # templated CRDs are rendered by helm; the helm suite covers them
                for doc in yaml.load_all(data, Loader=_ChartYamlLoader):  # nosec - safe loader subclass
                    if doc and doc.get("kind") == "CustomResourceDefinition":
                        yield tgz.name, doc


def test_every_upstream_chart_crd_is_accepted_unchanged(shared_dir):
    emulator = Emulator()
    store = emulator.store
    rtype = emulator.registry.lookup("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    seen = 0
    for chart, doc in _chart_crds(shared_dir):
        if store.raw_get(rtype.group, rtype.plural, "", doc["metadata"]["name"]) is not None:
            continue  # the same CRD shipped by two charts
        ctx = Context("helm", field_validation="Strict")
        try:
            out = store.create(rtype, "", doc, ctx)
        except ApiError as exc:
            pytest.fail("%s: %s rejected: %s" % (chart, doc["metadata"]["name"], exc.message))
        assert not ctx.warnings, (chart, ctx.warnings)
        want, got = copy.deepcopy(doc["spec"]), copy.deepcopy(out["spec"])
        for spec in (want, got):
            spec.pop("conversion", None)
            spec["names"].pop("listKind", None)
            spec["names"].pop("singular", None)
        assert got == want, "%s: %s changed when stored" % (chart, doc["metadata"]["name"])
        seen += 1
    assert seen >= 40
    emulator.controllers.tick()
    assert len(emulator.registry.custom) == seen


def test_crd_schema_combinators():
    node = {"type": "object", "properties": {"spec": {
        "type": "object",
        "properties": {"a": {"type": "string"}, "b": {"type": "string"}, "n": {"type": "integer"}},
        "anyOf": [{"required": ["a"]}, {"required": ["b"]}],
        "oneOf": [{"required": ["a"]}, {"required": ["n"]}],
        "not": {"required": ["b", "n"]},
        "allOf": [{"properties": {"n": {"maximum": 5}}}]}}}

    def causes(spec):
        _out, issues = schema.check({"spec": spec}, schema.Schema(node), True)
        return [(c[1], c[2].split(": ", 2)[-1]) for c in issues.causes]

    assert causes({"a": "x"}) == []
    assert causes({"n": 9}) == [("spec.n", "spec.n in body should be less than or equal to 5"),
                                ("spec", "must validate at least one schema (anyOf)")]
    assert causes({"a": "x", "n": 1}) == [("spec", "must validate one and only one schema (oneOf). Found 2 valid alternatives")]
    assert ("spec", "must not validate the schema (not)") in causes({"b": "y", "n": 1})
    out, _issues = schema.check({"spec": {"a": "x", "junk": 1}}, schema.Schema(node), True)
    assert out["spec"] == {"a": "x"}  # combinators constrain; pruning follows the properties only
