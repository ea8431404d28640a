# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The schema tree ("nodes") the inference builds and both renderers read: making, merging, annotating, pruning.

Node keys are described in ``infer``. :func:`merge` combines the trees of several values files (and a chart's with
its subcharts', :func:`nest_under`); :func:`apply_annotations` applies comment annotations (helm-docs, bitnami,
losisin/dadav ``@schema``) to a node; :func:`prune_hidden` drops what is not exported.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._schema import annotations as grammar


ANNOTATION_KEYWORDS = (
    "description", "title", "enum", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
    "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties",
    "default", "examples", "format", "deprecated",
)


# JSON Schema keywords accepted from annotations and passed through to JSON Schema output.
EXTRA_KEYWORDS = (
    "const", "uniqueItems", "patternProperties", "$ref", "$id", "$comment", "readOnly", "writeOnly",
    "unevaluatedProperties", "propertyNames", "contains", "allOf", "anyOf", "oneOf", "not", "if", "then", "else",
)


# Documentation-only annotations: read by README generators, no effect on the schema.
IGNORED_ANNOTATIONS = ("x-default-doc", "x-skip-doc")

# Type hints of documentation dialects → the name a warning gives them.
DOC_HINTS = {"x-helm-docs-type": "helm-docs (type)", "x-doc-type": "readme-generator [type]"}

# Annotations whose constraint can reject a value (named in the safety net's warnings).
_CONSTRAINTS = ("enum", "pattern", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "multipleOf", "minLength",
                "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "format", "const", "required",
                "additionalProperties", "items", "item", "itemRef", "$ref")


def _record(node, key, value):
    """Remember which annotation set a constraint (``x-annotated``, read by ``safety`` and stripped by it)."""
    node.setdefault("x-annotated", {})[key] = value


def new_node(type_name=None, nullable=False):
    return {"type": type_name, "nullable": nullable}


def _is_null_leaf(node):
    return node.get("type") is None and node.get("nullable") and not node.get("intOrString") and not node.get("types") and not node.get("mixed")


is_null_leaf = _is_null_leaf


def merge(a, b):
    """Union of two nodes: a value valid for either is valid for the result. ``a`` wins on annotations."""
    if a is None:
        return b
    if b is None:
        return a
    result = dict(a)
    ta, tb = a.get("type"), b.get("type")
    if a.get("mixed") or b.get("mixed") or a.get("types") or b.get("types"):
        result = _any(a, b)
    elif a.get("intOrString") or b.get("intOrString"):
        other = tb if a.get("intOrString") else ta
        if (a.get("intOrString") and b.get("intOrString")) or other in ("integer", "string") or _is_null_leaf(b if a.get("intOrString") else a):
            result["type"] = None
            result["intOrString"] = True
        else:
            result = _any(a, b)
    elif _is_null_leaf(a) and not _is_null_leaf(b):
        result = dict(b)
        for key, value in a.items():
            if key not in ("type", "nullable") and key not in result:
                result[key] = value
    elif _is_null_leaf(b):
        pass
    elif ta == tb:
        if ta == "object":
            props = dict(a.get("properties") or {})
            for key, value in (b.get("properties") or {}).items():
                props[key] = merge(props.get(key), value) if key in props else value
            if props:
                result["properties"] = props
            if a.get("freeForm") or b.get("freeForm"):
                result["freeForm"] = True
            if b.get("additionalProperties") is not None:
                result["additionalProperties"] = merge(a.get("additionalProperties"), b["additionalProperties"])
        elif ta == "array":
            ia, ib = a.get("items"), b.get("items")
            result["items"] = ib if ia is None else (ia if ib is None else merge(ia, ib))
            if not (a.get("emptyList") and b.get("emptyList")):
                result.pop("emptyList", None)
    elif set((ta, tb)) == set(("integer", "number")):
        result["type"] = "number"
    elif set((ta, tb)) == set(("integer", "string")):
        result["type"] = None
        result["intOrString"] = True
    else:
        result = _any(a, b)
    for key, value in b.items():
        if key in ANNOTATION_KEYWORDS and key not in result:
            result[key] = value
    if a.get("nullable") or b.get("nullable"):
        result["nullable"] = True
    return result


def _any(a, b):
    result = {"type": None, "nullable": bool(a.get("nullable") or b.get("nullable")), "mixed": True}
    for key in ANNOTATION_KEYWORDS:
        if key in a:
            result[key] = a[key]
    return result


def apply_annotations(node, annotations, where):
    """Apply annotation keywords (already parsed) to a node in place."""
    ann = dict(annotations)
    inferred_type = node.get("type")
    null_leaf = _is_null_leaf(node) or node.get("emptyList") or (inferred_type == "object" and node.get("freeForm") and not node.get("properties"))
    for key in DOC_HINTS:
        hint = ann.pop(key, None)
        # a documentation hint (readme-generator [object], helm-docs (type), helm-tool +docs:type) types a null leaf
        # only: it never narrows a concrete inferred type ("" stays a string, {} an object)
        if hint is not None and "type" not in ann and _is_null_leaf(node):
            _set_type(node, grammar.normalise_type(hint, where))
            _record(node, DOC_HINTS[key], hint)
    if "type" in ann:
        _record(node, "type", ann["type"])
        _set_type(node, grammar.normalise_type(ann.pop("type"), where))
    if "nullable" in ann:
        node["nullable"] = bool(ann.pop("nullable"))
    if ann.pop("required", False) is True:
        node["x-required"] = True
    for flag in ("hidden",):
        if ann.pop(flag, False):
            node["export"] = False
            node["x-hidden-by"] = "hidden"
    if "export" in ann:
        node["export"] = bool(ann.pop("export"))
    for key in _CONSTRAINTS:
        if key in ann:
            _record(node, key, ann[key])
    items = ann.pop("items", None)
    item = ann.pop("item", None)
    item_ref = ann.pop("itemRef", None)
    if item_ref is not None and items is None and item is None:
        items = {"$ref": item_ref}  # losisin itemRef = items.$ref
    if items is not None or item is not None:
        spec = items if items is not None else item
        item_node = _annotation_schema(spec, where + "[]")
        item_props = ann.pop("itemProperties", None)
        if isinstance(item_props, dict):
            item_node["type"] = "object"
            item_node["properties"] = dict((k, _annotation_schema(v, where + "[]." + k)) for k, v in item_props.items())
        if ann.get("itemEnum") is not None:
            item_node["enum"] = ann.pop("itemEnum")
        if node.get("types") and "array" in node["types"]:
            # a union keeps its other members: items only describe its array member
            node["items"] = item_node if node.get("items") is None else merge(item_node, node["items"])
            node.pop("emptyList", None)
        elif node.get("type") == "array" or null_leaf:
            node["type"] = "array"
            node["items"] = item_node if node.get("items") is None else merge(item_node, node["items"])
            node.pop("emptyList", None)
    if ann.pop("skipProperties", False):
        node.pop("properties", None)
        node["freeForm"] = True
    if ann.pop("mergeProperties", False) and node.get("properties"):
        merged = None
        for value in node.pop("properties").values():
            merged = merge(merged, value)
        node["additionalProperties"] = merged
    additional = ann.pop("additionalProperties", None)
    if additional is not None:
        if isinstance(additional, dict):
            node["additionalProperties"] = _annotation_schema(additional, where + ".*")
        else:
            node.setdefault("extra", {})["additionalProperties"] = bool(additional)
    props = ann.pop("properties", None)
    if isinstance(props, dict):
        node["type"] = "object"
        current = node.setdefault("properties", {})
        for key, value in props.items():
            current[key] = _overlay(_annotation_schema(value, where + "." + key), current.get(key))
    if ann.pop("id", None) is not None:
        pass
    for key in ("definitions", "$defs"):
        definitions = ann.pop(key, None)
        if isinstance(definitions, dict):
            node.setdefault("x-definitions", {}).update(definitions)  # dadav: hoisted to the root (refs.resolve_tree)
    for key in ANNOTATION_KEYWORDS:
        if key in ann:
            value = ann.pop(key)
            if key == "deprecated":
                value = bool(value)
            if key == "description" and value is not None:
                value = str(value).strip()
            node[key] = value
    for key in EXTRA_KEYWORDS:
        if key in ann:
            node.setdefault("extra", {})[key] = ann.pop(key)
    for key in IGNORED_ANNOTATIONS:
        ann.pop(key, None)
    if ann:
        node.setdefault("x-unknown", []).extend(sorted(str(k) for k in ann))
    if node.get("type") is None and not node.get("intOrString") and not node.get("types") and "enum" in node and node["enum"]:
        kinds = set(json_type(v) for v in node["enum"] if v is not None)
        if len(kinds) == 1:
            node["type"] = kinds.pop()
            node["nullable"] = True


def json_type(value):
    """The JSON Schema type name of a YAML value (``None`` is ``null``)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    return "string"


def _set_type(node, types):
    nullable = "null" in types
    rest = [t for t in types if t != "null"]
    node.pop("types", None)
    node.pop("mixed", None)
    if not rest:
        node["type"] = None
        node["nullable"] = True
        return
    if nullable:
        node["nullable"] = True
    if len(rest) == 1:
        name = rest[0]
        if name == "int-or-string":
            node["type"] = None
            node["intOrString"] = True
        elif name == "any":
            node["type"] = None
            node["mixed"] = True
            node.pop("intOrString", None)
        else:
            node.pop("intOrString", None)
            if node.get("type") != name:
                for key in ("properties", "items", "additionalProperties", "freeForm", "emptyList"):
                    if not (name == "object" and key in ("properties", "freeForm")) and not (name == "array" and key in ("items", "emptyList")):
                        node.pop(key, None)
                if name == "object" and not node.get("properties"):
                    node["freeForm"] = True
            node["type"] = name
    elif set(rest) == set(("integer", "string")):
        node["type"] = None
        node["intOrString"] = True
    elif set(rest) == set(("integer", "number")):
        node["type"] = "number"
    else:
        node["type"] = None
        node["types"] = rest
        node.pop("intOrString", None)


set_type = _set_type


def _overlay(annotated, inferred):
    """An annotation's property schema over the inferred node of that key: one that gives no type of its own (only a
    ``$ref``, a description, constraints) keeps the inferred type and adds what it says; one with a type merges."""
    if inferred is None:
        return annotated
    untyped = annotated.get("type") is None and not annotated.get("types") and not annotated.get("intOrString")
    if not (untyped and annotated.get("x-untyped-spec")):
        return merge(annotated, inferred)
    result = dict(inferred)
    for key, value in annotated.items():
        if key in ("type", "nullable", "mixed", "x-untyped-spec"):
            continue
        if key == "extra":
            result["extra"] = dict(inferred.get("extra") or {}, **value)
        elif key == "x-annotated":
            result["x-annotated"] = dict(inferred.get("x-annotated") or {}, **value)
        else:
            result[key] = value
    return result


def _annotation_schema(spec, where):
    """A node from an annotation value: a type name, or a JSON-Schema-like dict."""
    if isinstance(spec, str) or isinstance(spec, list):
        node = {"type": None, "nullable": False}
        _set_type(node, grammar.normalise_type(spec, where))
        return node
    if isinstance(spec, dict):
        node = {"type": None, "nullable": False}
        apply_annotations(node, spec, where)
        if node.get("type") is None and not node.get("types") and not node.get("intOrString") and "type" not in spec:
            node["mixed"] = True
            node["x-untyped-spec"] = True  # gives no type: over an inferred node it keeps that type (_overlay)
        return node
    raise AicrError("annotation items at %s: %r is not a type name or a schema mapping" % (where, spec), field="items", path=where)


def prune_hidden(node, inherited=True):
    """Drop nodes with export false unless a descendant is re-exported (export true)."""
    own = node.get("export")
    visible = inherited if own is None else own
    kept_child = False
    props = node.get("properties")
    ref = (node.get("extra") or {}).get("$ref")
    if props and isinstance(ref, str) and not ref.startswith("#"):
        # hidden children of a referenced node are pruned only once the reference is resolved (refs.resolve_tree)
        node.pop("export", None)
        return node if visible else None
    if props:
        new_props = {}
        for key, child in props.items():
            pruned = prune_hidden(child, visible)
            if pruned is not None:
                new_props[key] = pruned
                kept_child = True
            else:
                # hidden on purpose: helmetica export: false stays pruned, a losisin/dadav hidden key the chart sets is
                # kept opaque in the CRD by the safety net
                node.setdefault("x-hidden", {})[key] = child.get("x-hidden-by") or "export"
        node["properties"] = new_props
        if "required" in node:
            node["required"] = [r for r in node["required"] if r in new_props]
            if not node["required"]:
                node.pop("required")
    for key in ("items", "additionalProperties"):
        child = node.get(key)
        if child is None:
            continue
        pruned = prune_hidden(child, visible)
        if pruned is not None:
            node[key] = pruned
            kept_child = True
        elif key == "items":
            node["items"] = None
        else:
            node.pop(key)
    node.pop("export", None)
    node.pop("emptyList", None)
    if visible or kept_child:
        return node
    return None


def nest_under(root, key, sub):
    """Merge a subchart's node tree under ``key`` (and its ``global`` into the root's ``global``)."""
    props = root.setdefault("properties", {})
    sub = dict(sub)
    sub_props = dict(sub.get("properties") or {})
    global_node = sub_props.pop("global", None)
    sub["properties"] = sub_props
    if key in props:
        props[key] = merge(props[key], sub)
    else:
        props[key] = sub
    if global_node is not None:
        props["global"] = merge(props["global"], global_node) if "global" in props else global_node
    return root
