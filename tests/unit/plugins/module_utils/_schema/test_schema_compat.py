"""Breaking changes: every crdify case, the crd-schema-checker removal/required/type/enum cases, helmetica's pair."""

import copy
import json

import pytest
import yaml

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._schema import compat, crd, infer

ALL_ERRORS = dict((check, "error") for check in compat.DEFAULT_SEVERITIES)


def _crdify_cases(shared_dir):
    return sorted(p for p in (shared_dir / "crd-compat" / "crdify").iterdir() if (p / "expected.json").is_file())


def _expected(case):
    """crdify's findings of a case as (rule, property path, message) triples."""
    data = json.loads((case / "expected.json").read_text())
    triples = set()
    for check in data.get("crdValidation") or []:
        for error in check["errors"]:
            triples.add((check["name"], error.split(" : ", 1)[1].split(".", 1)[1], error))
    for version in data.get("sameVersionValidation") or []:
        for comparison in version["propertyComparisons"]:
            for result in comparison["comparisonResults"]:
                for error in result["errors"]:
                    triples.add((result["name"], comparison["property"], error))
    return triples


def _ours(findings):
    return set((f["rule"], f["path"], f["message"]) for f in findings)


def test_all_crdify_cases_identical_with_the_crdify_profile(shared_dir):
    cases = _crdify_cases(shared_dir)
    assert len(cases) == 14
    identical = 0
    for case in cases:
        old = yaml.safe_load((case / "a.yaml").read_text())
        new = yaml.safe_load((case / "b.yaml").read_text())
        findings = compat.compare(old, new, profile="crdify")
        assert _ours(findings) == _expected(case), case.name
        assert all(f["severity"] == "error" for f in findings), case.name  # crdify's default enforcement
        assert all(f["version"] == "v1alpha1" or f["version"] == "v1" for f in findings)
        identical += 1
    assert identical == 14
    assert _ours(compat.compare(old, new, ALL_ERRORS)) == _expected(case)  # the same findings with every check at error


def test_default_severities_on_crdify_cases(shared_dir):
    by_case = {}
    for case in _crdify_cases(shared_dir):
        findings = compat.compare(yaml.safe_load((case / "a.yaml").read_text()), yaml.safe_load((case / "b.yaml").read_text()))
        by_case[case.name] = sorted(set(f["severity"] for f in findings))
        assert _ours(findings) <= _expected(case), case.name
    assert by_case["descriptionchanged"] == []  # ignored by default (deliberate: existing objects stay valid)
    for name in ("defaultvaluechanged", "defaultvalueremoved", "enumnetnew", "enumvalueadded", "existingfieldremoved", "maxnetnew",
                 "minnetnew", "minvalueincreased", "nullableremoved", "patternadded"):
        assert "error" in by_case[name], name
    assert by_case["nullableadded"] == ["warn"] and by_case["patternremoved"] == ["warn"] and by_case["defaultvaluenetnew"] == ["warn"]


def test_new_required_field_reported_at_the_parent_as_crdify_does():
    old = _simple({"mode": {"type": "string"}})
    new = _simple({"mode": {"type": "string"}, "size": {"type": "integer"}})
    new["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"] = ["size", "mode"]
    for profile in ("aicr", "crdify"):
        findings = [f for f in compat.compare(old, new, profile=profile) if f["rule"] == "required"]
        assert [(f["path"], f["message"], f["severity"]) for f in findings] == [("^.spec", "new required fields: [mode size]", "error")]
    # a new required object holding a new required field: crd-schema-checker reports both levels, crdify only the existing parent
    nested = _simple({"mode": {"type": "string"}, "tls": {"type": "object", "required": ["key"], "properties": {"key": {"type": "string"}}}})
    nested["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["required"] = ["tls"]
    aicr = [(f["path"], f["message"]) for f in compat.compare(old, nested) if f["rule"] == "required"]
    assert aicr == [("^.spec", "new required fields: [tls]"), ("^.spec.tls", "new required fields: [key]")]
    crdify = [(f["path"], f["message"]) for f in compat.compare(old, nested, profile="crdify") if f["rule"] == "required"]
    assert crdify == [("^.spec", "new required fields: [tls]")]
    with pytest.raises(AicrError) as exc:
        compat.compare(old, new, profile="strict")
    assert exc.value.msg == "compat_profile: 'strict' is not allowed; use one of aicr, crdify"


CHECKER = {
    "no_field_removal": ("existingFieldRemoval",),
    "no_new_required_fields": ("required",),
    "no_data_type_change": ("type",),
    "no_enum_removal": ("enum",),
}


def _checker_fields(errors):
    fields = set()
    for error in errors or []:
        text = " ".join(str(error).split())
        fields.add(text.split("field/", 1)[1].split(" ", 1)[0])
    return fields


@pytest.mark.parametrize("comparator", sorted(CHECKER))
def test_crd_schema_checker_cases_agree(shared_dir, comparator):
    base = shared_dir / "crd-compat" / "crd-schema-checker" / "pkg" / "manifestcomparators" / "testdata" / comparator
    checked = 0
    for case in sorted(base.iterdir()):
        if not (case / "existing.yaml").is_file():
            continue  # create-only cases have nothing to compare
        expected = yaml.safe_load((case / "expected.yaml").read_text())["items"][0]
        findings = compat.compare(yaml.safe_load((case / "existing.yaml").read_text()), yaml.safe_load((case / "new.yaml").read_text()))
        got = set()
        for f in findings:
            if f["rule"] not in CHECKER[comparator] or f["check"] in ("type_widened", "enum_removed", "enum_value_added"):  # not their rules
                continue
            if f["check"] == "required_added":  # reported at the parent, crdify's way: one path per field named
                got.update("%s.%s" % (f["path"], name) for name in f["message"].split("[", 1)[1].rstrip("]").split())
            else:
                got.add(f["path"])
        assert got == _checker_fields(expected.get("errors")), (comparator, case.name, findings)
        checked += 1
    assert checked >= 3


def _pair_crd(shared_dir, which):
    text = (shared_dir / "values-corpus" / ("juiceshop-helmetica-pair-" + which) / "values.yaml").read_text()
    return crd.build_crd(infer.infer_text(text), "juiceshop")[0]


def test_helmetica_pair_findings(shared_dir):
    original, updated = _pair_crd(shared_dir, "original"), _pair_crd(shared_dir, "updated")
    forward = set((f["check"], f["path"]) for f in compat.compare(original, updated) if f["severity"] == "error")
    assert {("type_changed", "^.spec.values.config.server.port"), ("type_changed", "^.spec.values.inArray[*].value"),
            ("field_removed", "^.spec.values.removedKey")} <= forward
    # documented difference: free-form items narrowed to boolean items is breaking here (helmetica skips empty lists)
    assert forward - {("type_changed", "^.spec.values.config.server.port"), ("type_changed", "^.spec.values.inArray[*].value"),
                      ("field_removed", "^.spec.values.removedKey")} == {("type_changed", "^.spec.values.removedKey"),
                                                                         ("type_changed", "^.spec.values.emptyArrayWithAddedType[*]")}
    backward = compat.compare(updated, original)
    errors = set((f["check"], f["path"]) for f in backward if f["severity"] == "error")
    assert errors == {("type_changed", "^.spec.values.config.server.port"), ("type_changed", "^.spec.values.inArray[*].value")}
    # helmetica reports emptyArrayWithAddedType as removed; it is still there, its items widened back to free-form
    assert [(f["check"], f["severity"]) for f in backward if "emptyArrayWithAddedType" in f["path"]] == [("type_widened", "warn")]
    assert not any("pullPolicy" in f["path"] or "nulledKeyButKeepsType" in f["path"] for f in backward + compat.compare(original, updated))


def _simple(spec_props, scope="Namespaced", versions=("v1",), stored=None):
    doc = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "xs.example.com"},
           "spec": {"group": "example.com", "scope": scope, "names": {"kind": "X", "plural": "xs"},
                    "versions": [{"name": v, "served": True, "storage": i == 0,
                                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": spec_props}}}}}
                                 for i, v in enumerate(versions)]}}
    if stored:
        doc["status"] = {"storedVersions": list(stored)}
    return doc


def test_crd_level_rules():
    old = _simple({"a": {"type": "string"}}, versions=("v1", "v2"), stored=("v1", "v2"))
    new = _simple({"a": {"type": "string"}}, scope="Cluster", versions=("v1",))
    checks = sorted((f["check"], f["version"]) for f in compat.compare(old, new))
    assert checks == [("scope_changed", None), ("stored_version_removed", "v2")]


def test_max_decreased_and_widening():
    old = _simple({"a": {"type": "integer", "maximum": 10}, "b": {"type": "integer"}, "c": {"type": "string", "enum": ["x"]}})
    new = _simple({"a": {"type": "integer", "maximum": 5}, "b": {"x-kubernetes-int-or-string": True}, "c": {"type": "string"}})
    findings = dict(((f["check"], f["path"]), f) for f in compat.compare(old, new))
    assert findings[("maximum_decreased", "^.spec.a")]["message"] == "maximum decreased : 10 -> 5"
    assert findings[("type_widened", "^.spec.b")]["severity"] == "warn"
    assert findings[("enum_removed", "^.spec.c")]["severity"] == "warn"


def test_severity_overrides():
    old = _simple({"a": {"type": "string", "description": "x"}})
    new = _simple({"a": {"type": "string", "description": "y"}})
    assert compat.compare(old, new) == []
    assert [f["severity"] for f in compat.compare(old, new, {"description": "warn"})] == ["warn"]
    assert [f["severity"] for f in compat.compare(old, new, {"description_changed": "error"})] == ["error"]
    with pytest.raises(AicrError) as exc:
        compat.compare(old, new, {"description": "fatal"})
    assert exc.value.msg == "severities.description: 'fatal' is not allowed; use one of error, warn, ignore"
    with pytest.raises(AicrError) as exc:
        compat.compare(old, new, {"colour": "warn"})
    assert exc.value.msg.startswith("severities: colour is not known; allowed: ")


def test_summary_and_identity(shared_dir):
    doc = _pair_crd(shared_dir, "original")
    assert compat.compare(doc, copy.deepcopy(doc), ALL_ERRORS) == []
    findings = compat.compare(doc, _pair_crd(shared_dir, "updated"))
    text = compat.summary(findings)
    assert text.startswith("5 breaking change(s), 0 warning(s): type ^.spec.values.config.server.port: ")
    with pytest.raises(AicrError) as exc:
        compat.compare({"kind": "ConfigMap"}, doc)
    assert exc.value.msg == "old_crd: not a CustomResourceDefinition (kind 'ConfigMap')"
