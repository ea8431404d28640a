# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Breaking-change report between two CustomResourceDefinitions.

The rule names and messages follow kubernetes-sigs/crdify v0.5.0 (``existingFieldRemoval``,
``scope``, ``storedVersionRemoval`` at CRD level; ``type``, ``enum``, ``default``,
``required``, ``minimum``... per property of the same version, and between the served
versions of the new CRD; ``unhandled`` for a change of any other keyword), and the
``required`` rule follows openshift/crd-schema-checker's NoNewRequiredFields: a field may
become required only where its parent object is itself new and optional. Property paths
are written ``^.spec.values.a.b[*].c`` (list items and map values both ``[*]``, as crdify).

Each finding carries a finer ``check`` name (e.g. ``enum_value_added``) whose severity
is configurable as error, warn or ignore (``DEFAULT_SEVERITIES``; a rule name may be
given instead to set all its checks). Findings with severity ignore are not returned.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import json
import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems, unknown_name_message
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

DEFAULT_SEVERITIES = {
    "field_removed": "error",
    "scope_changed": "error",
    "stored_version_removed": "error",
    "served_version_removed": "warn",
    "type_changed": "error",
    "type_widened": "warn",
    "required_added": "error",
    "nonempty_added": "warn",
    "enum_added": "error",
    "enum_value_removed": "error",
    "enum_value_added": "error",
    "enum_removed": "warn",
    "default_changed": "error",
    "default_removed": "error",
    "default_added": "warn",
    "description_changed": "ignore",
    "minimum_added": "error",
    "minimum_increased": "error",
    "maximum_added": "error",
    "maximum_decreased": "error",
    "pattern_added": "error",
    "pattern_changed": "error",
    "pattern_removed": "warn",
    "nullable_removed": "error",
    "nullable_added": "warn",
    "unhandled_changed": "error",
    "unhandled_relaxed": "warn",
}
RULE_OF_CHECK = {
    "field_removed": "existingFieldRemoval", "scope_changed": "scope", "stored_version_removed": "storedVersionRemoval",
    "served_version_removed": "servedVersionRemoval", "type_changed": "type", "type_widened": "type",
    "required_added": "required", "nonempty_added": "required",
    "enum_added": "enum", "enum_value_removed": "enum", "enum_value_added": "enum", "enum_removed": "enum",
    "default_changed": "default", "default_removed": "default", "default_added": "default", "description_changed": "description",
    "pattern_added": "pattern", "pattern_changed": "pattern", "pattern_removed": "pattern",
    "nullable_removed": "nullable", "nullable_added": "nullable",
    "unhandled_changed": "unhandled", "unhandled_relaxed": "unhandled",
}
SEVERITIES = ("error", "warn", "ignore")
# crdify's default configuration: every validation enforced as an error, required compared only where the parent
# exists in both versions, no crd-schema-checker extensions.
PROFILES = ("aicr", "crdify")
MIN_KEYS = ("minimum", "minLength", "minItems", "minProperties")
MAX_KEYS = ("maximum", "maxLength", "maxItems", "maxProperties")
# Keywords a rule of crdify v0.5.0 compares (children are compared on their own); a change of any other is `unhandled`.
HANDLED = ("type", "description", "enum", "default", "required", "properties", "items") + MIN_KEYS + MAX_KEYS
# crdify's later rules (its main branch: nullable, pattern), which the aicr profile applies; v0.5.0 reports them unhandled.
HANDLED_AFTER_V050 = ("nullable", "pattern")
# Fields crdify's JSONSchemaProps holds as pointers: for these an explicit zero (false, "") differs from absence.
POINTER_FIELDS = ("$ref", "multipleOf", "not", "additionalProperties", "additionalItems", "externalDocs", "example",
                  "x-kubernetes-preserve-unknown-fields", "x-kubernetes-list-type", "x-kubernetes-map-type")
# unhandled_relaxed: a change that can reject no value an existing object holds - documentation, or a constraint given up.
DOCUMENTATION = ("title", "example", "externalDocs", "id", "$schema", "x-kubernetes-map-type")
RELAXED_WHEN_ADDED = ("x-kubernetes-preserve-unknown-fields", "x-kubernetes-int-or-string")
RELAXED_WHEN_REMOVED = ("format", "multipleOf", "exclusiveMinimum", "exclusiveMaximum", "uniqueItems", "x-kubernetes-list-type",
                        "x-kubernetes-list-map-keys", "x-kubernetes-validations", "allOf", "anyOf", "oneOf", "not")


def resolve_severities(overrides=None, profile="aicr"):
    """Severity per check: the profile's defaults, then overrides keyed by check or by rule name (every problem listed)."""
    problems = Problems("severities")
    result = severity_problems(problems, overrides, profile)
    problems.raise_if_any()
    return result


def severity_problems(problems, overrides=None, profile="aicr"):
    """:func:`resolve_severities` adding what is wrong with ``profile`` and ``overrides`` to ``problems`` (the checks
    that are right still apply)."""
    if profile not in PROFILES:
        problems.choice("compat_profile", profile, PROFILES)
        profile = "aicr"
    result = dict(DEFAULT_SEVERITIES) if profile == "aicr" else dict((check, "error") for check in DEFAULT_SEVERITIES)
    if overrides is not None and not isinstance(overrides, dict):
        problems.mapping("severities", overrides)
        return result
    known = sorted(set(list(result) + list(RULE_OF_CHECK.values())))
    for key, value in (overrides or {}).items():
        checks = [c for c in result if c == key or RULE_OF_CHECK.get(c) == key or c.startswith(str(key) + "_")]
        if key in MIN_KEYS + MAX_KEYS:
            checks = [c for c in result if c.startswith("minimum_" if key.startswith("min") else "maximum_")]
        if not checks:
            problems.errors.append({"field": "severities.%s" % key, "message": unknown_name_message("severities", key, known), "allowed": known})
        if value not in SEVERITIES:
            problems.choice("severities.%s" % key, value, SEVERITIES)
            continue
        for check in checks:
            result[check] = value
    return result


def _q(value):
    """Go's %q of a JSON-encoded value, as crdify prints defaults."""
    return json.dumps(json.dumps(value, separators=(",", ":")))


def _go_list(values):
    return "[" + " ".join(sorted(json.dumps(v) for v in values)) + "]"


class Comparator:
    def __init__(self, severities=None, profile="aicr"):
        self.profile = profile
        self.severities = resolve_severities(severities, profile)
        self.findings = []

    def add(self, check, version, path, message, rule=None):
        severity = self.severities.get(check, "error")
        if severity == "ignore":
            return
        self.findings.append({"rule": rule or RULE_OF_CHECK[check], "check": check, "version": version, "path": path,
                              "message": message, "severity": severity})

    # -- properties --------------------------------------------------------
    def compare_property(self, version, path, old, new):
        old_type, new_type = old.get("type") or "", new.get("type") or ""
        if old_type != new_type:
            widened = (new.get("x-kubernetes-int-or-string") and old_type in ("integer", "string")) or \
                (not new_type and new.get("x-kubernetes-preserve-unknown-fields") and bool(new)) or \
                (old_type == "integer" and new_type == "number")
            self.add("type_widened" if widened else "type_changed", version, path, "type changed : %s -> %s" % (json.dumps(old_type), json.dumps(new_type)))
        if old.get("description", "") != new.get("description", ""):
            self.add("description_changed", version, path, "description changed : %s -> %s" % (
                json.dumps(old.get("description", "")), json.dumps(new.get("description", ""))))
        self._enum(version, path, old, new)
        self._default(version, path, old, new)
        for key in MIN_KEYS:
            if key in new and key not in old:
                self.add("minimum_added", version, path, "minimum constraint added when there was none previously : %s" % new[key], rule=key)
            elif key in new and new[key] > old[key]:
                self.add("minimum_increased", version, path, "minimum increased : %s -> %s" % (old[key], new[key]), rule=key)
        for key in MAX_KEYS:
            if key in new and key not in old:
                self.add("maximum_added", version, path, "maximum constraint added when there was none previously : %s" % new[key], rule=key)
            elif key in new and new[key] < old[key]:
                self.add("maximum_decreased", version, path, "maximum decreased : %s -> %s" % (old[key], new[key]), rule=key)
        self._unhandled(version, path, old, new)
        if self.profile == "crdify":
            return  # nullable and pattern were unhandled changes above, as crdify v0.5.0 reports them
        old_null, new_null = bool(old.get("nullable")), bool(new.get("nullable"))
        if old_null and not new_null:
            self.add("nullable_removed", version, path, "nullable removed : true -> false")
        elif new_null and not old_null:
            self.add("nullable_added", version, path, "nullable added : false -> true")
        old_pat, new_pat = old.get("pattern", ""), new.get("pattern", "")
        if old_pat != new_pat:
            check = "pattern_added" if not old_pat else ("pattern_removed" if not new_pat else "pattern_changed")
            self.add(check, version, path, "pattern %s : %s -> %s" % (check.split("_")[1], json.dumps(old_pat), json.dumps(new_pat)))

    def _unhandled(self, version, path, old, new):
        """A change of any keyword no rule compares: one finding naming them all (crdify prints a diff of the fields)."""
        handled = HANDLED
        if self.profile != "crdify":
            if not new:
                return  # aicr: a removed field is its field_removed error
            # aicr: the keywords that make a node untyped are part of the type change reported beside them
            handled += HANDLED_AFTER_V050 + (RELAXED_WHEN_ADDED if (old.get("type") or "") != (new.get("type") or "") else ())
        changed = sorted(k for k in set(old) | set(new) if k not in handled and _go_value(k, old.get(k)) != _go_value(k, new.get(k)))
        if not changed:
            return
        relaxed = all(key in DOCUMENTATION or (key in RELAXED_WHEN_ADDED and new.get(key)) or
                      (key in RELAXED_WHEN_REMOVED and _go_value(key, new.get(key)) is None) for key in changed)
        self.add("unhandled_relaxed" if relaxed else "unhandled_changed", version, path, "unhandled changes found: [%s]" % " ".join(changed))

    def _enum(self, version, path, old, new):
        old_enum, new_enum = old.get("enum"), new.get("enum")
        if new_enum and not old_enum:
            self.add("enum_added", version, path, "enum constraint added when there was none previously : %s" % _go_list(new_enum))
            return
        if old_enum and not new_enum:
            if new:
                self.add("enum_removed", version, path, "allowed enum values removed : %s" % _go_list(old_enum))
            else:  # the property itself was removed: crdify reports the values as removed
                self.add("enum_value_removed", version, path, "allowed enum values removed : %s" % _go_list(old_enum))
            return
        if old_enum and new_enum:  # as crdify: values added are reported when none was removed
            removed = [v for v in old_enum if v not in new_enum]
            added = [v for v in new_enum if v not in old_enum]
            if removed:
                self.add("enum_value_removed", version, path, "allowed enum values removed : %s" % _go_list(removed))
            elif added:
                self.add("enum_value_added", version, path, "allowed enum values added : %s" % _go_list(added))

    def _default(self, version, path, old, new):
        if "default" in old and "default" in new:
            if old["default"] != new["default"]:
                self.add("default_changed", version, path, "default value changed : %s -> %s" % (_q(old["default"]), _q(new["default"])))
        elif "default" in old:
            self.add("default_removed", version, path, "default value removed : %s" % _q(old["default"]))
        elif "default" in new:
            self.add("default_added", version, path, "default added when there was none previously : %s" % _q(new["default"]))

    # -- tree walk ------------------------------------------------------------
    def compare_schema(self, version, old_root, new_root, removals=True):
        old_paths = flatten(old_root)
        new_paths = flatten(new_root)
        for path, old in old_paths.items():
            new = new_paths.get(path)
            if new is None:
                if removals:
                    self.add("field_removed", version, path, "removed field : %s.%s" % (version, path))
                self.compare_property(version, path, old, {})
            else:
                self.compare_property(version, path, old, new)
        self._required(version, old_paths, new_paths)

    def _required(self, version, old_paths, new_paths):
        must_exist = {}

        def exists_for_old_objects(path):
            """Does every existing object have this node (so a new required child breaks it)?"""
            if path in must_exist:
                return must_exist[path]
            if path == "^":
                result = True
            elif path in old_paths:
                # an existing node: its children apply to old objects that have it
                result = True
            else:
                parent, name = _parent(path)
                result = parent is not None and name is not None and exists_for_old_objects(parent) and \
                    name in (new_paths.get(parent, {}).get("required") or [])
            must_exist[path] = result
            return result

        for path, new in new_paths.items():
            new_required = new.get("required") or []
            old_required = (old_paths.get(path) or {}).get("required") or []
            added = [r for r in new_required if r not in old_required]
            if not added or not exists_for_old_objects(path):
                continue
            if self.profile == "crdify" and path not in old_paths:
                continue  # crdify compares properties present in both versions only
            # crdify's finding: on the parent, naming the new required fields
            self.add("required_added", version, path, "new required fields: [%s]" % " ".join(sorted(added)))
        if self.profile == "crdify":
            return
        # crd-schema-checker also counts a new list/string/map with a minimum size as required
        for path, new in new_paths.items():
            if path in old_paths or path.endswith("[*]") or path.endswith(".*"):
                continue
            parent, _name = _parent(path)
            if parent is None or not exists_for_old_objects(parent):
                continue
            if any((new.get(key) or 0) > 0 for key in ("minItems", "minLength", "minProperties")):
                self.add("nonempty_added", version, path, "new field with a minimum size : %s is new and may not be required" % path)


def _go_value(key, value):
    """A field as crdify's Go structs compare it: absent, null and (but for pointer fields) a zero value are equal."""
    if value is None or (key not in POINTER_FIELDS and value in (False, 0, "", [], {})):
        return None
    if isinstance(value, dict):
        return dict((k, _go_value(k, v)) for k, v in value.items() if _go_value(k, v) is not None)
    if isinstance(value, list):
        return [_go_value("", v) if isinstance(v, (dict, list)) else v for v in value]
    return value


def _parent(path):
    if path.endswith("[*]"):
        return path[:-3], None
    index = path.rfind(".")
    if index < 0:
        return None, None
    return path[:index], path[index + 1:]


def flatten(schema, path="^", out=None):
    """Every node of a schema by crdify's path (``^.spec.a[*].b``; list items and map values alike ``[*]``)."""
    if out is None:
        out = {}
    if not isinstance(schema, dict):
        return out
    out[path] = schema
    for name, child in (schema.get("properties") or {}).items():
        flatten(child, "%s.%s" % (path, name), out)
    if isinstance(schema.get("items"), dict):
        flatten(schema["items"], path + "[*]", out)
    if isinstance(schema.get("additionalProperties"), dict):
        flatten(schema["additionalProperties"], path + "[*]", out)
    return out


def _versions(crd):
    return dict((v.get("name"), v) for v in ((crd.get("spec") or {}).get("versions") or []))


def compare(old_crd, new_crd, severities=None, profile="aicr"):
    """Findings [{rule, check, version, path, message, severity}] for replacing old_crd by new_crd.

    ``profile`` ``crdify`` restores crdify's defaults where ``aicr`` deliberately differs (see DEFAULT_SEVERITIES)."""
    for label, crd in (("old_crd", old_crd), ("new_crd", new_crd)):
        if not isinstance(crd, dict) or crd.get("kind") != "CustomResourceDefinition":
            raise AicrError("%s: not a CustomResourceDefinition (kind %r)" % (label, crd.get("kind") if isinstance(crd, dict) else type(crd).__name__),
                            field=label)
    comparator = Comparator(severities, profile or "aicr")
    old_spec, new_spec = old_crd.get("spec") or {}, new_crd.get("spec") or {}
    if (old_spec.get("scope") or "") != (new_spec.get("scope") or ""):
        comparator.add("scope_changed", None, "^", "scope changed : %s -> %s" % tuple(json.dumps(spec.get("scope") or "") for spec in (old_spec, new_spec)))
    old_versions, new_versions = _versions(old_crd), _versions(new_crd)
    stored = list((old_crd.get("status") or {}).get("storedVersions") or [])
    if not stored and comparator.profile != "crdify":  # aicr: a CRD read from a file has no status; its storage version is stored
        stored = [n for n, v in old_versions.items() if v.get("storage")]
    removed = [name for name in stored if name not in new_versions]
    if removed:
        comparator.add("stored_version_removed", None, "^", "stored versions removed : [%s]" % " ".join(removed))
    for name, version in old_versions.items():
        if name not in new_versions:
            if name not in stored and version.get("served", True) and comparator.profile != "crdify":
                comparator.add("served_version_removed", name, "^", "served version %s removed" % name)
            continue
        old_schema = ((version.get("schema") or {}).get("openAPIV3Schema")) or {}
        new_schema = ((new_versions[name].get("schema") or {}).get("openAPIV3Schema")) or {}
        comparator.compare_schema(name, old_schema, new_schema)
    comparator.findings.extend(_served(new_crd, severities, comparator.profile, exclude=_served(old_crd, severities, comparator.profile)))
    order = {"error": 0, "warn": 1}
    return sorted(comparator.findings, key=lambda f: (order.get(f["severity"], 2), str(f["version"]), f["path"], f["rule"]))


def _kube_version_order(first, second):
    """k8s.io/apimachinery's CompareKubeAwareVersionStrings: alpha < beta < GA, then major, then minor; other names
    below every kube-like one, in reverse lexical order."""
    parsed = [re.match(r"^v(\d+)(?:(alpha|beta)(\d+))?$", name) for name in (first, second)]
    if not parsed[0] or not parsed[1]:
        if parsed[0] or parsed[1]:
            return 1 if parsed[0] else -1
        return (second > first) - (second < first)
    keys = [(("alpha", "beta", None).index(m.group(2)), int(m.group(1)), int(m.group(3) or 0)) for m in parsed]
    return (keys[0] > keys[1]) - (keys[0] < keys[1])


def _served(crd, severities, profile, exclude=()):
    """crdify's served-version validation: each pair of served versions (older -> newer) compared as a change, without
    the findings the old CRD already had (``exclude``)."""
    served = sorted((v for v in (crd.get("spec") or {}).get("versions") or [] if v.get("served")),
                    key=functools.cmp_to_key(lambda a, b: _kube_version_order(a.get("name"), b.get("name"))))
    comparator = Comparator(severities, profile)
    for index, older in enumerate(served):
        for newer in served[index + 1:]:
            comparator.compare_schema("%s -> %s" % (older.get("name"), newer.get("name")), ((older.get("schema") or {}).get("openAPIV3Schema")) or {},
                                      ((newer.get("schema") or {}).get("openAPIV3Schema")) or {}, removals=False)
    known = set((f["version"], f["path"], f["rule"], f["message"]) for f in exclude)
    return [f for f in comparator.findings if (f["version"], f["path"], f["rule"], f["message"]) not in known]


def summary(findings):
    errors = [f for f in findings if f["severity"] == "error"]
    warns = [f for f in findings if f["severity"] == "warn"]
    head = "%d breaking change(s), %d warning(s)" % (len(errors), len(warns))
    shown = "; ".join("%s %s: %s" % (f["rule"], f["path"], f["message"]) for f in errors[:5])
    if len(errors) > 5:
        shown += " (and %d more)" % (len(errors) - 5)
    return head + (": " + shown if shown else "")
