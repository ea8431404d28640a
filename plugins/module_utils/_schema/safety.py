# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The safety net every annotation dialect goes through: the chart's own values must pass what is generated.

After the node tree is built, the chart's default values are validated against the JSON Schema and against the
CRD's structural schema (types, and the apiserver's pruning: unknown fields of closed objects, nulls of
non-nullable fields). A node that rejects its default is widened just enough to admit it (its type list gains the
value's type, an enum gains the value, another failing keyword is dropped) and a warning names the path and the
annotation that set the constraint. Unknown annotation keys are reported here too (``nodes`` marks them).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.aicr.runtime.plugins.module_utils._common import validation
from ansible_collections.aicr.runtime.plugins.module_utils._schema import crd as crd_mod, jsonschema, nodes, structural

MAX_ROUNDS = 50
_CHILD_KEYS = ("items", "additionalProperties")
_COMBINATORS = ("oneOf", "anyOf", "allOf", "not")


def _types_of(node):
    if node.get("intOrString"):
        return ["integer", "string"]
    if node.get("types"):
        return list(node["types"])
    if node.get("type"):
        return [node["type"]]
    return []


def _admit_type(node, value):
    """Widen node's type to admit value; True when something changed."""
    kind = nodes.json_type(value)
    if kind == "null":
        if node.get("nullable") and not node.get("crdNotNullable"):
            return False
        node["nullable"] = True
        node.pop("crdNotNullable", None)
        return True
    current = _types_of(node)
    if not current or kind in current or (kind == "integer" and "number" in current):
        return False
    wanted = current + [kind]
    node.pop("intOrString", None)
    node.pop("mixed", None)
    if set(wanted) == set(("integer", "string")):
        node["type"] = None
        node.pop("types", None)
        node["intOrString"] = True
    elif set(wanted) == set(("integer", "number")):
        node["type"] = "number"
        node.pop("types", None)
    else:
        node["type"] = None
        node["types"] = [t for t in ("object", "array", "string", "integer", "number", "boolean") if t in wanted]
    if kind == "object" and not node.get("properties"):
        node["freeForm"] = True
    return True


def _locate(root, segments):
    """(node, remaining schema-path segments) for a jsonschema ``absolute_schema_path``."""
    node = root
    index = 0
    while index < len(segments) - 1:
        seg = segments[index]
        if seg == "properties":
            props = node.get("properties") or {}
            found = None
            for end in range(len(segments) - 1, index, -1):
                name = "/".join(segments[index + 1:end + 1])
                if name in props:
                    found = end
                    node = props[name]
                    break
            if found is None:
                break
            index = found + 1
        elif seg in _CHILD_KEYS and isinstance(node.get(seg), dict):
            node = node[seg]
            index += 1
        else:
            break
    return node, segments[index:]


def _annotation(node, rule):
    annotated = node.get("x-annotated") or {}
    if rule in annotated:
        return "annotation %s: %s" % (rule, json.dumps(annotated[rule], default=str))
    if rule == "type":
        for key, value in annotated.items():
            if key == "type" or key.startswith(("helm-docs", "readme-generator")):
                return "annotation %s: %s" % (key, json.dumps(value, default=str))
    if annotated:
        return "annotations " + ", ".join("%s: %s" % (k, json.dumps(v, default=str)) for k, v in sorted(annotated.items()))
    return "inferred"


def _widen(node, rest, value):
    """Widen ``node`` so its failing keyword ``rest[0]`` admits ``value``; True when something changed."""
    rule = rest[0] if rest else "type"
    extra = node.get("extra") or {}
    if rule == "type":
        if _admit_type(node, value):
            return True
        if "$ref" in extra:
            extra.pop("$ref")  # the referenced schema rejects the default: the inferred schema is used
            return True
        return False
    if rule == "enum" and isinstance(node.get("enum"), list):
        if value in node["enum"]:
            return False
        node["enum"] = list(node["enum"]) + [value]
        return True
    if rule == "required" and isinstance(value, dict):
        before = list(node.get("required") or [])
        node["required"] = [r for r in before if r in value]
        if not node["required"]:
            node.pop("required")
        return len(before) != len(node.get("required") or [])
    if rule in node and rule not in ("type", "properties", "items", "additionalProperties", "description", "title"):
        node.pop(rule)
        return True
    if rule in _COMBINATORS and rule in extra and value is None and "anyOf" not in (extra if rule != "anyOf" else {}):
        # a null default beside a composition (``version: # @schema oneOf: [...]``): null is admitted, the
        # composition is kept for every other value
        extra["anyOf"] = [{rule: extra.pop(rule)}, {"type": "null"}]
        return True
    if rule in extra:
        extra.pop(rule)
        return True
    if "$ref" in extra:
        extra.pop("$ref")  # the referenced schema rejects the default: the inferred schema is used
        return True
    if rule == "additionalProperties" and isinstance(node.get("additionalProperties"), dict):
        node.pop("additionalProperties")
        node["freeForm"] = True
        return True
    return False


def _prune_problems(value, schema, node, parts, out):
    """What the apiserver would prune from the chart's values: (node, rule, value, path parts)."""
    if isinstance(value, dict) and isinstance(schema, dict):
        props = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        node_props = node.get("properties") or {}
        for key, child in value.items():
            if key in props and key in node_props:
                sub, sub_node = props[key], node_props[key]
            elif isinstance(additional, dict) and isinstance(node.get("additionalProperties"), dict):
                sub, sub_node = additional, node["additionalProperties"]
            elif preserve or additional is True or key in props or (node.get("x-hidden") or {}).get(key) == "export":
                continue  # kept, or hidden on purpose by the helmetica design (export: false)
            elif (node.get("x-hidden") or {}).get(key) == "hidden":
                out.append((node, "hidden field", key, parts))
                continue
            else:
                out.append((node, "unknown field", key, parts))
                continue
            if child is None and not sub.get("nullable"):
                if not sub_node.get("crdNotNullable"):  # the helmetica design types these exactly, on purpose
                    out.append((sub_node, "type", None, parts + [key]))
                continue
            _prune_problems(child, sub, sub_node, parts + [key], out)
    elif isinstance(value, list) and isinstance(schema, dict) and isinstance(schema.get("items"), dict) and isinstance(node.get("items"), dict):
        for index, child in enumerate(value):
            _prune_problems(child, schema["items"], node["items"], parts + [index], out)


def _crd_json_schema(crd_schema):
    schema = structural.to_json_schema(crd_schema)
    schema["$schema"] = jsonschema.DRAFTS["2020-12"]
    return schema


def _problems(node, values, draft):
    """[(target, node, rest, value, path)] of the defaults the JSON Schema or the CRD reject."""
    found = []
    crd_schema = crd_mod.values_structural(node)
    for target, schema in (("JSON Schema", jsonschema.to_json_schema(node, draft)), ("CRD", _crd_json_schema(crd_schema))):
        for error in validation.validate(schema, values, trusted=True):
            segments = [s for s in error["schema_path"].split("/") if s != ""]
            located, rest = _locate(node, segments)
            if target == "CRD" and error["value"] is None and located.get("crdNotNullable"):
                continue  # the helmetica design types these exactly, on purpose (the apiserver prunes the null)
            found.append((target, located, rest, error["value"], error["path"]))
    pruned = []
    _prune_problems(values, crd_schema, node, [], pruned)
    for located, rule, value, parts in pruned:
        if rule in ("unknown field", "hidden field"):
            found.append(("CRD", located, [rule], value, validation.format_path(parts + [value])))
        else:
            found.append(("CRD", located, [rule], value, validation.format_path(parts)))
    return found


def widen_to_defaults(node, values, draft="2020-12", warnings=None):
    """Widen ``node`` (in place) until ``values`` pass its JSON Schema and its CRD schema; returns ``node``."""
    if warnings is None:
        warnings = []
    if node is None or not isinstance(values, dict) or not validation.HAS_JSONSCHEMA:
        if node is not None and not validation.HAS_JSONSCHEMA:
            warnings.append("values_schema: the chart's own values were not checked against the generated schema "
                            "(the Python package 'jsonschema' is missing)")
        return node
    seen = set()
    for _round in range(MAX_ROUNDS):
        problems = _problems(node, values, draft)
        if not problems:
            break
        changed = False
        for target, located, rest, value, path in problems:
            rule = rest[0] if rest else "type"
            if rule == "hidden field":
                if value not in (located.get("opaque") or []):
                    located.setdefault("opaque", []).append(value)
                    changed = True
                    _warn(warnings, seen, "values_schema: %s: hidden by its annotation but set by the chart's defaults; the CRD keeps it "
                          "as an opaque field (x-kubernetes-preserve-unknown-fields) so the apiserver does not prune it" % path)
                continue
            if rule == "unknown field":
                if located.get("type") == "object" and not located.get("freeForm"):
                    located["freeForm"] = True
                    changed = True
                    _warn(warnings, seen, "values_schema: %s: the chart's default key %r would be pruned from the generated CRD (%s); "
                          "the object keeps unknown fields" % (path, value, _annotation(located, "properties")))
                continue
            annotation = _annotation(located, rule)
            if _widen(located, rest, value):
                changed = True
                _warn(warnings, seen, "values_schema: %s: the chart's default %s is rejected by the generated %s (%s, rule %s); widened to accept it"
                      % (path, _short(value), target, annotation, rule))
        if not changed:
            for target, located, rest, value, path in problems[:5]:
                _warn(warnings, seen, "values_schema: %s: the chart's default %s is still rejected by the generated %s (rule %s)"
                      % (path, _short(value), target, rest[0] if rest else "type"))
            break
    return node


def _short(value):
    text = json.dumps(value, default=str, sort_keys=True)
    return text if len(text) <= 60 else text[:57] + "..."


def _warn(warnings, seen, text):
    if text not in seen:
        seen.add(text)
        warnings.append(text)


def finish(node, warnings=None, path=()):
    """Strip the diagnostics ``nodes`` left on the tree (``x-annotated``, ``x-unknown``); unknown keys become warnings."""
    if warnings is None:
        warnings = []
    if not isinstance(node, dict):
        return node
    node.pop("x-annotated", None)
    node.pop("x-untyped-spec", None)
    node.pop("x-hidden", None)
    node.pop("x-hidden-by", None)
    unknown = node.pop("x-unknown", None)
    if unknown:
        where = "".join(p if p in ("[]", ".*") else ("." if i else "") + p for i, p in enumerate(path)) or "(root)"
        warnings.append("values_schema: %s: unknown annotation key(s) ignored: %s" % (where, ", ".join(sorted(set(unknown)))))
    if node.get("recursive"):
        where = "".join(p if p in ("[]", ".*") else ("." if i else "") + p for i, p in enumerate(path)) or "(root)"
        warnings.append("values_schema: %s: recursive YAML alias (%s contains an alias of itself; Helm refuses such a values file): "
                        "the JSON Schema refers back to %s ($ref %s), the CRD cuts the cycle here with x-kubernetes-preserve-unknown-fields"
                        % (where, node["recursive"], node["recursive"], (node.get("extra") or {}).get("$ref")))
    for key, child in (node.get("properties") or {}).items():
        finish(child, warnings, path + (key,))
    if isinstance(node.get("items"), dict):
        finish(node["items"], warnings, path + ("[]",))
    if isinstance(node.get("additionalProperties"), dict):
        finish(node["additionalProperties"], warnings, path + (".*",))
    return node
