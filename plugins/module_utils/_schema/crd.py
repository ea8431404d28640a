# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Render an inferred node tree as an apiextensions.k8s.io/v1 CustomResourceDefinition.

The chart's values go under ``.spec.values`` as a *structural* schema (checked by
``structural.check``): one ``type`` per node, ``nullable: true`` instead of null types,
``x-kubernetes-preserve-unknown-fields`` on free-form maps and untyped (null) leaves,
``x-kubernetes-int-or-string`` for quantities. JSON-Schema-only keywords from
annotations (``$ref``, ``patternProperties``, ``uniqueItems``, ``const``...) are not
representable; they are dropped and listed in ``dropped``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems, name_problem
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import CHART_LABEL, MANAGED_BY, MANAGED_BY_LABEL
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._schema import jsonschema, refs

DEFAULT_DOMAIN = "aicr.io"
DEFAULT_API_VERSION = "v1alpha1"
_CRD_KEYWORDS = ("title", "description", "enum", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
                 "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "default")
_KIND = re.compile(r"^[A-Z][A-Za-z0-9]*$")
KIND_ALLOWED = "CamelCase letters and digits starting with an upper-case letter, at most 63 characters"

CONDITION_SCHEMA = {
    "type": "object",
    "required": ["type", "status"],
    "properties": {
        "type": {"type": "string", "description": "Type of condition in CamelCase (Ready, Reconciling, Degraded...).", "maxLength": 316},
        "status": {"type": "string", "enum": ["True", "False", "Unknown"], "description": "Status of the condition."},
        "reason": {"type": "string", "maxLength": 1024, "description": "A programmatic identifier of the reason for the last transition."},
        "message": {"type": "string", "maxLength": 32768, "description": "A human readable message about the transition."},
        "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0,
                               "description": "The .metadata.generation the condition was set for."},
        "lastTransitionTime": {"type": "string", "format": "date-time", "description": "When the condition last changed status."},
    },
}


def _kind_from(name):
    parts = [p for p in re.split(r"[^A-Za-z0-9]+", name) if p]
    kind = "".join(p[:1].upper() + p[1:] for p in parts)
    if not kind or not kind[0].isalpha():
        kind = "Chart" + kind
    return kind


def name_problems(problems, group=None, kind=None, plural=None, api_version=None, domain=None, fields=None):
    """The CRD naming rules of apiextensions (each name given is checked; None: not given), added to ``problems``:
    ``group`` a DNS-1123 subdomain with at least one dot, ``kind`` CamelCase, ``plural`` and ``api_version`` DNS-1035
    labels, ``domain`` (of a default group) a DNS-1123 subdomain. ``fields`` renames a name's field in the message."""
    fields = fields or {}
    if group is not None:
        if name_problem(group, "dns-subdomain") is not None or "." not in str(group):
            problems.add(fields.get("group", "group"), "%r is not a DNS subdomain with at least one dot (e.g. example.com)" % (group,), value=group)
    if kind is not None and (not isinstance(kind, str) or not _KIND.match(kind) or len(kind) > 63):
        problems.add(fields.get("kind", "kind"), "%r is not allowed; allowed: %s" % (kind, KIND_ALLOWED), value=kind, allowed=KIND_ALLOWED)
    if plural is not None:
        problems.name(fields.get("plural", "plural"), plural, "dns-1035-label")
    if api_version is not None:
        problems.name(fields.get("api_version", "api_version"), api_version, "dns-1035-label")
    if domain is not None:
        problems.name(fields.get("domain", "domain"), domain, "dns-subdomain")
    return problems


def derive_names(chart_name, group=None, kind=None, plural=None, domain=None):
    """Group, kind, plural, singular for a chart (``<name>.bundles.<domain>``, ``GpuOperator``, ``gpuoperators``)."""
    if not chart_name and not (group and kind):
        raise AicrError("crd names: no chart name to derive group/kind from; set group and kind", field="kind")
    slug = re.sub(r"[^a-z0-9]+", "-", str(chart_name or kind).lower()).strip("-") or "chart"
    group = group or "%s.bundles.%s" % (slug, domain or DEFAULT_DOMAIN)
    kind = kind or _kind_from(str(chart_name))
    plural = plural or (kind.lower() + ("es" if kind.lower().endswith(("s", "x", "sh", "ch")) else "s"))
    singular = kind.lower()
    name_problems(Problems("crd"), group=group, kind=kind, plural=plural).raise_if_any()
    return {"group": group, "kind": kind, "plural": plural, "singular": singular, "listKind": kind + "List"}


def lookup_for(root):
    """``lookup(ref)`` for the references of a tree: the bundled ``$defs`` and the root's own JSON Schema (local refs)."""
    document = {}

    def lookup(ref):
        if not document:
            document.update(jsonschema.render(root))
            document["$defs"] = root.get("defs") or {}
            document["definitions"] = root.get("definitions") or {}
        return refs.pointer(document, ref[1:]) if ref.startswith("#") else None
    return lookup


def values_structural(node, dropped=None, preserve_unknown=False):
    """The structural schema of a whole values tree (references dereferenced inline)."""
    return to_structural(node, "", [] if dropped is None else dropped, preserve_unknown, lookup_for(node))


def to_structural(node, path="", dropped=None, preserve_unknown=False, lookup=None):
    """Structural schema for a node; JSON-only keywords are appended to ``dropped``."""
    if dropped is None:
        dropped = []
    if node.get("recursive"):
        # a recursive alias: the JSON Schema refers back to the anchored node, a CRD cannot hold the cycle
        dropped.append({"path": path or ".", "keyword": "$ref", "value": (node.get("extra") or {}).get("$ref"),
                        "reason": "recursive alias of %s: a CRD cannot hold a cycle; any value is accepted below here" % node["recursive"]})
        out = {"x-kubernetes-preserve-unknown-fields": True}
        if node.get("description") is not None:
            out["description"] = node["description"]
        if node.get("nullable"):
            out["nullable"] = True
        return out
    ref = (node.get("extra") or {}).get("$ref")
    if isinstance(ref, str) and lookup is not None:
        # a CRD cannot hold $ref: the reference is dereferenced inline
        out = refs.structural({"$ref": ref}, lookup, dropped, path)
        if node.get("description") is not None:
            out["description"] = node["description"]
        if node.get("nullable") and not node.get("crdNotNullable"):
            out["nullable"] = True
        if node.get("freeForm") and out.get("type") == "object" and "additionalProperties" not in out:
            out["x-kubernetes-preserve-unknown-fields"] = True
        return out
    out = {}
    for key in ("title", "description"):
        if node.get(key) is not None:
            out[key] = node[key]
    if node.get("deprecated"):
        out["description"] = ("Deprecated. " + out.get("description", "")).strip()
    if node.get("intOrString"):
        out["x-kubernetes-int-or-string"] = True
    elif node.get("type") is None:
        out["x-kubernetes-preserve-unknown-fields"] = True
        if node.get("types"):
            dropped.append({"path": path or ".", "keyword": "type", "value": node["types"],
                            "reason": "a structural schema allows one type per node; any value is accepted here"
                                      + (" (the object member's properties are kept)" if "object" in node["types"] else "")})
    else:
        out["type"] = node["type"]
    if (node.get("nullable") or None in (node.get("enum") or ())) and not node.get("crdNotNullable"):
        out["nullable"] = True  # an enum listing null (losisin "enum: [a, null]") admits null
    for key in _CRD_KEYWORDS[2:]:
        if node.get(key) is not None:
            value = node[key]
            if key in ("exclusiveMinimum", "exclusiveMaximum") and not isinstance(value, bool):
                bound = "minimum" if key == "exclusiveMinimum" else "maximum"
                out[bound] = value
                value = True
            out[key] = value
    if node.get("examples"):
        out["example"] = node["examples"][0]
    if node.get("type") is None and "object" in (node.get("types") or ()) and node.get("properties"):
        # a union with an object member: untyped and preserving unknown fields, its known properties stay typed
        out["properties"] = dict((k, to_structural(v, "%s.%s" % (path, k), dropped, preserve_unknown, lookup)) for k, v in node["properties"].items())
        if node.get("required"):
            dropped.append({"path": path or ".", "keyword": "required", "value": node["required"],
                            "reason": "required applies to the object member of a union only"})
    if node.get("type") == "object":
        props = node.get("properties") or {}
        if props:
            out["properties"] = dict((k, to_structural(v, "%s.%s" % (path, k), dropped, preserve_unknown, lookup)) for k, v in props.items())
        for name in node.get("opaque") or ():
            # hidden from the schema (losisin/dadav hidden) but set by the chart: kept, its content unchecked
            out.setdefault("properties", {})[name] = {"x-kubernetes-preserve-unknown-fields": True, "nullable": True}
        props = props or node.get("opaque")
        additional = node.get("additionalProperties")
        if additional is not None and not props:
            out["additionalProperties"] = to_structural(additional, path + ".*", dropped, preserve_unknown, lookup)
        elif additional is not None:
            dropped.append({"path": path or ".", "keyword": "additionalProperties", "value": "schema",
                            "reason": "properties and additionalProperties are mutually exclusive in a structural schema"})
            out["x-kubernetes-preserve-unknown-fields"] = True
        if (node.get("freeForm") or preserve_unknown) and "additionalProperties" not in out:
            out["x-kubernetes-preserve-unknown-fields"] = True
        if node.get("required"):
            out["required"] = list(node["required"])
    if node.get("type") == "array":
        items = node.get("items")
        if items is None:
            out["items"] = {"x-kubernetes-preserve-unknown-fields": True}
        else:
            out["items"] = to_structural(items, path + "[*]", dropped, preserve_unknown, lookup)
    for key, value in (node.get("extra") or {}).items():
        if key == "const":
            out["enum"] = [value]
            continue
        if key == "uniqueItems" and not value:
            continue
        if key == "additionalProperties" and value is True:
            if "properties" in out or out.get("type") == "object":
                out["x-kubernetes-preserve-unknown-fields"] = True
            continue
        dropped.append({"path": path or ".", "keyword": key, "value": value, "reason": "not allowed in a structural schema"})
    return out


def build_crd(node, chart_name, group=None, kind=None, plural=None, domain=None, api_version=None, scope="Namespaced",
              versions=None, preserve_unknown=False, chart_version=None):
    """The CRD dict and the list of dropped keywords."""
    names = derive_names(chart_name, group, kind, plural, domain)
    api_version = api_version or DEFAULT_API_VERSION
    name_problems(Problems("crd"), api_version=api_version).raise_if_any()
    if scope not in ("Namespaced", "Cluster"):
        raise AicrError("scope: %r is not allowed; allowed: Namespaced, Cluster" % scope, field="scope", value=scope)
    dropped = []
    values_schema = to_structural(node, ".spec.values", dropped, preserve_unknown, lookup_for(node))
    values_schema["type"] = "object"
    values_schema.pop("nullable", None)
    values_schema.setdefault("description", "Values of the %s chart, as in its values.yaml." % chart_name)
    version_schema = {"type": "string", "description": "Chart version to deploy."}
    if versions:
        version_schema["enum"] = [str(v) for v in versions]
    elif chart_version:
        version_schema["description"] += " The schema was generated from version %s." % chart_version
    spec = {
        "type": "object",
        "description": "Desired state: the chart version and its values.",
        "properties": {
            "version": version_schema,
            "values": values_schema,
            "desiredRevision": {"type": "integer", "format": "int64", "minimum": 0,
                                "description": "Release revision to hold or roll back to; 0 or unset follows version and values."},
        },
    }
    status = {
        "type": "object",
        "description": "Observed state of the release.",
        "properties": {
            "conditions": {"type": "array", "items": CONDITION_SCHEMA, "x-kubernetes-list-type": "map",
                           "x-kubernetes-list-map-keys": ["type"], "description": "Conditions of the release (Ready, Reconciling, Degraded...)."},
            "observedGeneration": {"type": "integer", "format": "int64", "minimum": 0,
                                   "description": "The .metadata.generation the status was computed for."},
            "appliedRevision": {"type": "integer", "format": "int64", "minimum": 0, "description": "The release revision currently applied."},
            "appliedVersion": {"type": "string", "description": "The chart version currently applied."},
        },
    }
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "%s.%s" % (names["plural"], names["group"]),
                     "labels": {MANAGED_BY_LABEL: MANAGED_BY, CHART_LABEL: str(chart_name)[:63]}},
        "spec": {
            "group": names["group"],
            "names": {"kind": names["kind"], "listKind": names["listKind"], "plural": names["plural"], "singular": names["singular"]},
            "scope": scope,
            "versions": [{
                "name": api_version,
                "served": True,
                "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec, "status": status}}},
                "subresources": {"status": {}},
                "additionalPrinterColumns": [
                    {"name": "Version", "type": "string", "jsonPath": ".spec.version"},
                    {"name": "Applied", "type": "string", "jsonPath": ".status.appliedVersion"},
                    {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
                    {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
                ],
            }],
        },
    }
    return crd, dropped


def values_schema_of(crd, version=None):
    """The ``.spec.values`` schema of a CRD version (default: the storage version)."""
    for item in (crd.get("spec") or {}).get("versions") or []:
        if (version and item.get("name") == version) or (not version and item.get("storage")):
            return (((item.get("schema") or {}).get("openAPIV3Schema") or {}).get("properties") or {}).get("spec", {}).get("properties", {}).get("values")
    return None
