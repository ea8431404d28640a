# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A structural-schema checker applying the Kubernetes apiserver's rules to a CRD.

Written from the rules documented for apiextensions.k8s.io/v1 ("Specifying a
structural schema") and enforced by k8s.io/apiextensions-apiserver
(pkg/apiserver/schema: validation of structural invariants, forbidden keywords,
value validations in logical junctors; pkg/apis/apiextensions/validation: CRD-level
checks). Each violation is {path, rule, message}; an empty list means the apiserver
would accept the schema as structural.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

TYPES = ("object", "array", "string", "integer", "number", "boolean")
FORBIDDEN = {
    "$ref": "$ref is not allowed (inline the schema)",
    "$schema": "$schema is not allowed",
    "$id": "$id is not allowed",
    "id": "id is not allowed",
    "definitions": "definitions is not allowed",
    "$defs": "$defs is not allowed",
    "dependencies": "dependencies is not allowed",
    "dependentSchemas": "dependentSchemas is not allowed",
    "additionalItems": "additionalItems is not allowed",
    "patternProperties": "patternProperties is not allowed",
    "const": "const is not allowed (use a one-value enum)",
    "prefixItems": "prefixItems is not allowed",
    "unevaluatedProperties": "unevaluatedProperties is not allowed",
    "if": "if/then/else is not allowed",
    "then": "if/then/else is not allowed",
    "else": "if/then/else is not allowed",
    "examples": "examples is not allowed (use example)",
    "deprecated": "deprecated is not a JSONSchemaProps field",
    "readOnly": "readOnly is not a JSONSchemaProps field",
    "writeOnly": "writeOnly is not a JSONSchemaProps field",
}
KNOWN = set((
    "description", "type", "format", "title", "default", "maximum", "exclusiveMaximum", "minimum", "exclusiveMinimum",
    "maxLength", "minLength", "pattern", "maxItems", "minItems", "uniqueItems", "multipleOf", "enum", "maxProperties",
    "minProperties", "required", "items", "allOf", "oneOf", "anyOf", "not", "properties", "additionalProperties",
    "externalDocs", "example", "nullable", "x-kubernetes-preserve-unknown-fields", "x-kubernetes-embedded-resource",
    "x-kubernetes-int-or-string", "x-kubernetes-list-map-keys", "x-kubernetes-list-type", "x-kubernetes-map-type",
    "x-kubernetes-validations",
))
# Keywords a value validation (inside allOf/anyOf/oneOf/not) must not carry.
JUNCTOR_FORBIDDEN = ("type", "description", "default", "nullable", "additionalProperties", "x-kubernetes-preserve-unknown-fields",
                     "x-kubernetes-embedded-resource", "x-kubernetes-list-type", "x-kubernetes-list-map-keys", "x-kubernetes-map-type",
                     "title")
_JSON_TYPES = {"string": (str,), "boolean": (bool,), "object": (dict,), "array": (list,)}


def _violation(path, rule, message):
    return {"path": path or ".", "rule": rule, "message": "%s: %s" % (path or ".", message)}


def _value_matches(value, type_name):
    if value is None or not type_name:
        return True
    if type_name == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if type_name == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    return isinstance(value, _JSON_TYPES[type_name])


def check_schema(schema, path="", root=True):
    """Violations of a structural openAPIV3Schema (``root``: the CR's top level)."""
    errors = []
    _check_node(schema, path or "", errors, root=root, in_preserve=False)
    return errors


def _check_node(node, path, errors, root=False, in_preserve=False):
    if not isinstance(node, dict):
        errors.append(_violation(path, "schema", "must be a mapping, got %s" % type(node).__name__))
        return
    for key in node:
        if key in FORBIDDEN:
            errors.append(_violation(path, "forbidden", FORBIDDEN[key]))
        elif key not in KNOWN:
            errors.append(_violation(path, "unknown-field", "%s is not a JSONSchemaProps field" % key))
    type_name = node.get("type")
    int_or_string = node.get("x-kubernetes-int-or-string") is True
    preserve = node.get("x-kubernetes-preserve-unknown-fields")
    if isinstance(type_name, list):
        errors.append(_violation(path, "type", "type must be a single string, not a list %s (use nullable: true)" % (type_name,)))
        type_name = None
    elif type_name == "null":
        errors.append(_violation(path, "type", "type null is not allowed (use nullable: true)"))
        type_name = None
    elif type_name is not None and type_name not in TYPES:
        errors.append(_violation(path, "type", "type %r is not allowed; allowed: %s" % (type_name, ", ".join(TYPES))))
    if root and type_name != "object":
        errors.append(_violation(path, "type", "the root must have type object"))
    if int_or_string:
        if type_name:
            errors.append(_violation(path, "int-or-string", "x-kubernetes-int-or-string must not be combined with type %s" % type_name))
    elif not type_name and preserve is not True and not root:
        errors.append(_violation(path, "type", "type must not be empty (unless x-kubernetes-int-or-string or x-kubernetes-preserve-unknown-fields)"))
    if preserve is not None and preserve is not True:
        errors.append(_violation(path, "preserve-unknown-fields", "x-kubernetes-preserve-unknown-fields must be true or undefined"))
    if "x-kubernetes-int-or-string" in node and node["x-kubernetes-int-or-string"] is not True:
        errors.append(_violation(path, "int-or-string", "x-kubernetes-int-or-string must be true or undefined"))
    if node.get("uniqueItems") is True:
        errors.append(_violation(path, "uniqueItems", "uniqueItems cannot be set to true (quadratic validation cost)"))
    if "nullable" in node and not isinstance(node["nullable"], bool):
        errors.append(_violation(path, "nullable", "nullable must be a boolean"))
    additional = node.get("additionalProperties")
    if additional is False:
        errors.append(_violation(path, "additionalProperties", "additionalProperties: false is not allowed (unknown fields are pruned)"))
    if additional is not None and node.get("properties"):
        errors.append(_violation(path, "additionalProperties", "additionalProperties and properties are mutually exclusive"))
    if additional is not None and additional is not True and additional is not False and node.get("x-kubernetes-preserve-unknown-fields"):
        errors.append(_violation(path, "additionalProperties", "additionalProperties and x-kubernetes-preserve-unknown-fields are mutually exclusive"))
    if (node.get("properties") or isinstance(additional, dict)) and type_name not in (None, "object"):
        errors.append(_violation(path, "type", "properties/additionalProperties require type object, got %s" % type_name))
    if type_name == "array":
        items = node.get("items")
        if items is None:
            errors.append(_violation(path, "items", "type array requires items"))
        elif isinstance(items, list):
            errors.append(_violation(path, "items", "items must be a single schema, not a list"))
    elif "items" in node and type_name not in (None,):
        errors.append(_violation(path, "items", "items requires type array, got %s" % type_name))
    if node.get("x-kubernetes-embedded-resource") and type_name != "object":
        errors.append(_violation(path, "embedded-resource", "x-kubernetes-embedded-resource requires type object"))
    _check_values(node, path, type_name, errors)
    _check_list_type(node, path, errors)
    if "pattern" in node:
        try:
            re.compile(str(node["pattern"]))
        except re.error as exc:
            errors.append(_violation(path, "pattern", "pattern %r does not compile (%s)" % (node["pattern"], exc)))
    if "required" in node:
        req = node["required"]
        if not isinstance(req, list) or not all(isinstance(r, str) for r in req):
            errors.append(_violation(path, "required", "required must be a list of property names"))
    for name, child in (node.get("properties") or {}).items():
        child_path = "%s.%s" % (path, name)
        if root and not path and name == "metadata":
            _check_metadata(child, child_path, errors)
            continue
        _check_node(child, child_path, errors, in_preserve=in_preserve or bool(preserve))
    if isinstance(node.get("items"), dict):
        _check_node(node["items"], path + "[*]", errors, in_preserve=in_preserve)
    if isinstance(additional, dict):
        _check_node(additional, path + ".*", errors, in_preserve=in_preserve)
    spine = set((node.get("properties") or {}).keys())
    for junctor in ("allOf", "anyOf", "oneOf"):
        for index, sub in enumerate(node.get(junctor) or []):
            _check_value_validation(sub, "%s.%s[%d]" % (path, junctor, index), errors, spine, int_or_string)
    if "not" in node:
        _check_value_validation(node["not"], path + ".not", errors, spine, int_or_string)


def _check_values(node, path, type_name, errors):
    if "enum" in node:
        if not isinstance(node["enum"], list) or not node["enum"]:
            errors.append(_violation(path, "enum", "enum must be a non-empty list"))
        else:
            for value in node["enum"]:
                if value is None and not node.get("nullable"):
                    errors.append(_violation(path, "enum", "enum value null requires nullable: true"))
                elif not _value_matches(value, type_name):
                    errors.append(_violation(path, "enum", "enum value %r does not match type %s" % (value, type_name)))
    if "default" in node:
        if node["default"] is None and not node.get("nullable"):
            errors.append(_violation(path, "default", "default null requires nullable: true"))
        elif not _value_matches(node["default"], type_name):
            errors.append(_violation(path, "default", "default %r does not match type %s" % (node["default"], type_name)))
    for key in ("minimum", "maximum", "multipleOf"):
        if key in node and (isinstance(node[key], bool) or not isinstance(node[key], (int, float))):
            errors.append(_violation(path, key, "%s must be a number" % key))
    for key in ("exclusiveMinimum", "exclusiveMaximum"):
        if key in node and not isinstance(node[key], bool):
            errors.append(_violation(path, key, "%s must be a boolean in apiextensions v1 (OpenAPI v3.0)" % key))
    for key in ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties"):
        if key in node and (isinstance(node[key], bool) or not isinstance(node[key], int) or node[key] < 0):
            errors.append(_violation(path, key, "%s must be a non-negative integer" % key))


def _check_list_type(node, path, errors):
    list_type = node.get("x-kubernetes-list-type")
    keys = node.get("x-kubernetes-list-map-keys")
    if list_type is None:
        if keys is not None:
            errors.append(_violation(path, "list-type", "x-kubernetes-list-map-keys requires x-kubernetes-list-type: map"))
        return
    if list_type not in ("atomic", "set", "map"):
        errors.append(_violation(path, "list-type", "x-kubernetes-list-type %r is not allowed; allowed: atomic, set, map" % list_type))
        return
    if node.get("type") != "array":
        errors.append(_violation(path, "list-type", "x-kubernetes-list-type requires type array"))
        return
    items = node.get("items") if isinstance(node.get("items"), dict) else {}
    if list_type == "map":
        if not keys:
            errors.append(_violation(path, "list-type", "x-kubernetes-list-type map requires x-kubernetes-list-map-keys"))
        if items.get("type") != "object":
            errors.append(_violation(path, "list-type", "x-kubernetes-list-type map requires items of type object"))
        for key in keys or []:
            prop = (items.get("properties") or {}).get(key)
            if prop is None:
                errors.append(_violation(path, "list-type", "list map key %r is not a property of the items" % key))
            elif key not in (items.get("required") or []) and "default" not in prop:
                errors.append(_violation(path, "list-type", "list map key %r must be required or have a default" % key))
    elif list_type == "set" and items.get("type") == "object" and items.get("x-kubernetes-map-type") != "atomic":
        errors.append(_violation(path, "list-type", "x-kubernetes-list-type set requires scalar or atomic items"))


def _check_value_validation(node, path, errors, spine, int_or_string):
    if not isinstance(node, dict):
        errors.append(_violation(path, "schema", "must be a mapping"))
        return
    for key in JUNCTOR_FORBIDDEN:
        if key in node:
            if key == "type" and int_or_string and node.get("type") in ("integer", "string"):
                continue
            errors.append(_violation(path, "value-validation", "%s must not be set inside allOf/anyOf/oneOf/not" % key))
    for name in (node.get("properties") or {}):
        if name not in spine:
            errors.append(_violation(path, "value-validation", "property %r is not in the structural spine (declare it in properties)" % name))


def _check_metadata(node, path, errors):
    if not isinstance(node, dict):
        errors.append(_violation(path, "metadata", "must be a mapping"))
        return
    for key in node:
        if key not in ("type", "properties"):
            errors.append(_violation(path, "metadata", "only type and properties (name, generateName) may be specified for metadata"))
    if node.get("type", "object") != "object":
        errors.append(_violation(path, "metadata", "metadata must have type object"))
    for name in (node.get("properties") or {}):
        if name not in ("name", "generateName"):
            errors.append(_violation(path, "metadata", "only name and generateName may be restricted in metadata, not %s" % name))


_DNS_LABEL = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def check_crd(crd):
    """Violations of a whole CRD (object-level checks plus each version's schema)."""
    errors = []
    if not isinstance(crd, dict):
        return [_violation("", "crd", "a CRD must be a mapping")]
    if crd.get("apiVersion") != "apiextensions.k8s.io/v1":
        errors.append(_violation("apiVersion", "crd", "must be apiextensions.k8s.io/v1, got %r" % crd.get("apiVersion")))
    if crd.get("kind") != "CustomResourceDefinition":
        errors.append(_violation("kind", "crd", "must be CustomResourceDefinition, got %r" % crd.get("kind")))
    spec = crd.get("spec") or {}
    names = spec.get("names") or {}
    group = spec.get("group") or ""
    if not _DNS_SUBDOMAIN.match(group) or "." not in group:
        errors.append(_violation("spec.group", "crd", "%r must be a DNS subdomain with at least one dot" % group))
    plural = names.get("plural") or ""
    if not _DNS_LABEL.match(plural):
        errors.append(_violation("spec.names.plural", "crd", "%r must be a lower-case DNS label" % plural))
    if not names.get("kind"):
        errors.append(_violation("spec.names.kind", "crd", "kind is required"))
    name = (crd.get("metadata") or {}).get("name")
    if name != "%s.%s" % (plural, group):
        errors.append(_violation("metadata.name", "crd", "%r must be <plural>.<group> = %s.%s" % (name, plural, group)))
    if spec.get("scope") not in ("Namespaced", "Cluster"):
        errors.append(_violation("spec.scope", "crd", "%r is not allowed; allowed: Namespaced, Cluster" % spec.get("scope")))
    versions = spec.get("versions") or []
    if not versions:
        errors.append(_violation("spec.versions", "crd", "at least one version is required"))
    if len([v for v in versions if v.get("storage")]) != 1:
        errors.append(_violation("spec.versions", "crd", "exactly one version must have storage: true"))
    for index, version in enumerate(versions):
        vpath = "spec.versions[%d]" % index
        if not _DNS_LABEL.match(str(version.get("name", ""))):
            errors.append(_violation(vpath + ".name", "crd", "%r must be a DNS-1035 label" % version.get("name")))
        schema = ((version.get("schema") or {}).get("openAPIV3Schema"))
        if schema is None:
            errors.append(_violation(vpath + ".schema", "crd", "openAPIV3Schema is required in apiextensions.k8s.io/v1"))
            continue
        for error in check_schema(schema, "", root=True):
            error = dict(error)
            error["path"] = "%s.schema.openAPIV3Schema%s" % (vpath, "" if error["path"] == "." else error["path"])
            error["version"] = version.get("name")
            errors.append(error)
        status = (version.get("subresources") or {}).get("status")
        if status is not None and status != {}:
            errors.append(_violation(vpath + ".subresources.status", "crd", "must be an empty mapping"))
    return errors


def prune(value, schema, path=""):
    """Apply the apiserver's pruning to a value: returns (pruned value, list of removed paths).

    Unknown fields of objects without x-kubernetes-preserve-unknown-fields are dropped,
    and so are null values of fields that are not nullable.
    """
    removed = []
    return _prune(value, schema or {}, path, removed), removed


def _prune(value, schema, path, removed):
    if isinstance(value, dict):
        props = schema.get("properties")
        additional = schema.get("additionalProperties")
        preserve = schema.get("x-kubernetes-preserve-unknown-fields") is True
        out = {}
        for key, child in value.items():
            child_path = "%s.%s" % (path, key)
            if props and key in props:
                sub = props[key]
            elif isinstance(additional, dict):
                sub = additional
            elif preserve or additional is True:
                out[key] = child
                continue
            else:
                removed.append(child_path)
                continue
            if child is None and not sub.get("nullable"):
                removed.append(child_path)
                continue
            out[key] = _prune(child, sub, child_path, removed)
        return out
    if isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_prune(child, schema["items"], "%s[%d]" % (path, index), removed) for index, child in enumerate(value)]
    return value


def to_json_schema(schema):
    """A structural schema as JSON Schema (for validating a custom resource offline)."""
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if key in ("properties",):
            out[key] = dict((k, to_json_schema(v)) for k, v in value.items())
        elif key in ("items", "additionalProperties", "not") and isinstance(value, dict):
            out[key] = to_json_schema(value)
        elif key in ("allOf", "anyOf", "oneOf"):
            out[key] = [to_json_schema(v) for v in value]
        elif key.startswith("x-kubernetes-") or key in ("nullable", "example", "externalDocs"):
            continue
        elif key in ("exclusiveMinimum", "exclusiveMaximum"):
            bound = "minimum" if key == "exclusiveMinimum" else "maximum"
            if value is True and bound in schema:
                out[key] = schema[bound]
        else:
            out[key] = value
    if "exclusiveMinimum" in out:
        out.pop("minimum", None)
    if "exclusiveMaximum" in out:
        out.pop("maximum", None)
    if schema.get("x-kubernetes-int-or-string"):
        out["type"] = ["integer", "string"]
    if schema.get("nullable"):
        if "type" in out:
            out["type"] = (out["type"] if isinstance(out["type"], list) else [out["type"]]) + ["null"]
        if "enum" in out and None not in out["enum"]:
            out["enum"] = list(out["enum"]) + [None]
    return out
