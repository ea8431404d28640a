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


def test_all_crdify_cases_identical_with_every_check_an_error(shared_dir):
    """The cases' expected.json were written by crdify's main branch (54162f2), which has nullable and pattern rules;
    the aicr profile applies them, and with every check an error its findings are crdify main's, no more, no fewer."""
    cases = _crdify_cases(shared_dir)
    assert len(cases) == 14
    for case in cases:
        old = yaml.safe_load((case / "a.yaml").read_text())
        new = yaml.safe_load((case / "b.yaml").read_text())
        assert _ours(compat.compare(old, new, ALL_ERRORS)) == _expected(case), case.name


def test_crdify_profile_is_crdify_v050_on_the_crdify_cases(shared_dir):
    """The crdify profile is the released crdify (v0.5.0, tests/golden/schema/crdify.json): the 10 cases of rules it has
    are identical to main's expected.json; nullable and pattern changes, which v0.5.0 has no rule for, are its
    `unhandled` error naming the field."""
    identical = []
    for case in _crdify_cases(shared_dir):
        old = yaml.safe_load((case / "a.yaml").read_text())
        new = yaml.safe_load((case / "b.yaml").read_text())
        findings = compat.compare(old, new, profile="crdify")
        assert all(f["severity"] == "error" for f in findings), case.name  # crdify's default enforcement
        if _ours(findings) == _expected(case):
            identical.append(case.name)
            continue
        keyword = "nullable" if case.name.startswith("nullable") else "pattern"
        assert _ours(findings) == {("unhandled", "^.spec.code", "unhandled changes found: [%s]" % keyword)}, case.name
    assert len(identical) == 10 and not any(n.startswith(("nullable", "pattern")) for n in identical)


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
    found = sorted((f["check"], f["version"], f["message"]) for f in compat.compare(old, new))
    # crdify v0.5.0's messages: the scopes quoted, one finding listing every stored version removed
    assert found == [("scope_changed", None, 'scope changed : "Namespaced" -> "Cluster"'),
                     ("stored_version_removed", None, "stored versions removed : [v2]")]
    # a CRD read from a file has no status: aicr counts its storage version as stored, crdify (status only) does not
    del old["status"]
    assert sorted(f["check"] for f in compat.compare(old, new)) == ["scope_changed", "served_version_removed"]  # v2 was not storage
    assert [f["check"] for f in compat.compare(old, new, profile="crdify")] == ["scope_changed"]  # crdify has no served-removal rule
    only_v2 = _simple({"a": {"type": "string"}}, versions=("v2",))
    assert [f["message"] for f in compat.compare(old, only_v2)] == ["stored versions removed : [v1]"]
    assert compat.compare(old, only_v2, profile="crdify") == []


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


def _checks(old_props, new_props, profile="aicr"):
    return sorted((f["check"], f["path"], f["message"], f["severity"]) for f in compat.compare(_simple(old_props), _simple(new_props), profile=profile))


def test_unhandled_keywords_as_crdify_reports_them():
    """A change of a keyword no rule compares is crdify's `unhandled` error, naming the fields; the aicr profile makes a
    warning of the changes that reject no existing value (documentation, a constraint given up, unknown fields kept)."""
    free = {"m": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}
    closed = {"m": {"type": "object"}}
    for profile in ("aicr", "crdify"):  # closing a free-form map prunes what old objects hold
        assert _checks(free, closed, profile) == [("unhandled_changed", "^.spec.m", "unhandled changes found: [x-kubernetes-preserve-unknown-fields]", "error")]
    assert _checks(closed, free) == [("unhandled_relaxed", "^.spec.m", "unhandled changes found: [x-kubernetes-preserve-unknown-fields]", "warn")]
    assert _checks(closed, free, "crdify") == [("unhandled_relaxed", "^.spec.m", "unhandled changes found: [x-kubernetes-preserve-unknown-fields]", "error")]
    listed = {"l": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "format": "x", "title": "t"}}
    plain = {"l": {"type": "array", "items": {"type": "string"}}}
    assert _checks(listed, plain) == [("unhandled_relaxed", "^.spec.l", "unhandled changes found: [format title x-kubernetes-list-type]", "warn")]
    assert _checks(plain, listed) == [("unhandled_changed", "^.spec.l", "unhandled changes found: [format title x-kubernetes-list-type]", "error")]
    # int-or-string: the aicr profile reports the widening once (type_widened); crdify adds the field it has no rule for
    number, either = {"n": {"type": "integer"}}, {"n": {"x-kubernetes-int-or-string": True}}
    assert [c[0] for c in _checks(number, either)] == ["type_widened"]
    assert [(c[0], c[3]) for c in _checks(number, either, "crdify")] == [("type_widened", "error"), ("unhandled_relaxed", "error")]
    # crdify v0.5.0 has no nullable or pattern rule: its unhandled error; the aicr profile keeps crdify main's rules
    assert _checks({"s": {"type": "string"}}, {"s": {"type": "string", "nullable": True, "pattern": "^a"}}, "crdify") == [
        ("unhandled_changed", "^.spec.s", "unhandled changes found: [nullable pattern]", "error")]
    assert [c[0] for c in _checks({"s": {"type": "string"}}, {"s": {"type": "string", "nullable": True, "pattern": "^a"}})] == [
        "nullable_added", "pattern_added"]
    # an explicit false of a pointer field differs from its absence (crdify's Go structs), a false boolean field does not
    assert _checks({"b": {"type": "object", "x-kubernetes-preserve-unknown-fields": False}}, {"b": {"type": "object"}}, "crdify") == [
        ("unhandled_changed", "^.spec.b", "unhandled changes found: [x-kubernetes-preserve-unknown-fields]", "error")]
    assert _checks({"b": {"type": "string", "uniqueItems": False}}, {"b": {"type": "string"}}, "crdify") == []


def test_map_values_are_items_in_paths():
    old = {"labels": {"type": "object", "additionalProperties": {"type": "string"}}}
    new = {"labels": {"type": "object", "additionalProperties": {"type": "integer"}}}
    found = _checks(old, new, "crdify")
    assert ("type_changed", "^.spec.labels[*]", 'type changed : "string" -> "integer"', "error") in found
    # crdify compares additionalProperties as a field of the map too
    assert ("unhandled_changed", "^.spec.labels", "unhandled changes found: [additionalProperties]", "error") in found


def test_enum_values_added_are_reported_only_when_none_was_removed():
    old, new = {"e": {"type": "string", "enum": ["a", "b"]}}, {"e": {"type": "string", "enum": ["b", "c"]}}
    assert _checks(old, new) == [("enum_value_removed", "^.spec.e", 'allowed enum values removed : ["a"]', "error")]


def test_served_versions_compared_as_crdify_does():
    """Each pair of served versions of the new CRD, older to newer, is compared as a change; what the old CRD already
    had between the same versions is not reported again."""
    def crd(v2_props):
        doc = _simple({"a": {"type": "string"}, "b": {"type": "integer"}}, versions=("v1alpha1", "v1"))
        doc["spec"]["versions"][1]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"] = v2_props
        return doc
    old = crd({"a": {"type": "string"}, "b": {"type": "integer"}})
    new = crd({"a": {"type": "string"}})
    for profile in ("aicr", "crdify"):
        found = sorted((f["version"], f["path"], f["message"]) for f in compat.compare(old, new, profile=profile))
        assert found == [("v1", "^.spec.b", "removed field : v1.^.spec.b"), ("v1", "^.spec.b", 'type changed : "integer" -> ""'),
                         ("v1alpha1 -> v1", "^.spec.b", 'type changed : "integer" -> ""')]
    assert [f["version"] for f in compat.compare(new, new)] == []  # the difference between the versions existed already
    unserved = crd({"a": {"type": "string"}})
    unserved["spec"]["versions"][1]["served"] = False
    assert [f["version"] for f in compat.compare(unserved, unserved)] == []
    assert sorted(["v1beta1", "v1", "v1alpha2", "v2alpha1", "foo", "v10"], key=compat.functools.cmp_to_key(compat._kube_version_order)) == [
        "foo", "v1alpha2", "v2alpha1", "v1beta1", "v1", "v10"]  # pylint: disable=protected-access
