# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Render an inferred node tree (see ``infer``) as a JSON Schema document.

Draft 2020-12 by default, draft-07 on request (what Helm 3 validates
values.schema.json with). Objects are never closed unless an annotation says
``additionalProperties: false``; a null leaf gets no ``type`` at all, so any value
may be set there.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

DRAFTS = {
    "2020-12": "https://json-schema.org/draft/2020-12/schema",
    "draft-07": "http://json-schema.org/draft-07/schema#",
}
DRAFT_ALIASES = {"2020-12": "2020-12", "draft-2020-12": "2020-12", "draft2020-12": "2020-12",
                 "07": "draft-07", "7": "draft-07", "draft-07": "draft-07", "draft7": "draft-07", "draft-7": "draft-07"}

_KEYWORDS = ("title", "description", "enum", "pattern", "format", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum",
             "multipleOf", "minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "default", "examples")


def normalise_draft(draft):
    key = DRAFT_ALIASES.get(str(draft).lower())
    if key is None:
        raise AicrError("draft: %r is not supported; allowed: 2020-12, draft-07" % (draft,), field="draft", value=draft)
    return key


def to_json_schema(root, draft="2020-12", title=None):
    draft = normalise_draft(draft)
    out = {"$schema": DRAFTS[draft]}
    if title:
        out["title"] = title
    out.update(render(root, draft))
    if root.get("definitions"):
        out["definitions"] = root["definitions"]  # dadav: annotation definitions hoisted to the root
    if root.get("defs"):
        out["$defs"] = root["defs"]  # what the references point to, bundled (refs.resolve_tree)
    return out


def _types(node):
    if node.get("intOrString"):
        types = ["integer", "string"]
    elif node.get("types"):
        types = list(node["types"])
    elif node.get("type"):
        types = [node["type"]]
    else:
        return None
    if node.get("nullable"):
        types.append("null")
    return types[0] if len(types) == 1 else types


def render(node, draft="2020-12"):
    out = {}
    for key in ("title", "description"):
        if node.get(key) is not None:
            out[key] = node[key]
    if node.get("deprecated"):
        out["deprecated"] = True
    types = _types(node)
    if types is not None:
        out["type"] = types
    for key in _KEYWORDS[2:]:
        if key in node and node[key] is not None:
            value = node[key]
            if key == "enum" and node.get("nullable") and None not in value:
                value = list(value) + [None]
            if key in ("exclusiveMinimum", "exclusiveMaximum") and isinstance(value, bool):
                continue  # draft-04 style booleans have no meaning in 2020-12/07
            out[key] = value
    if node.get("type") == "object" or node.get("properties"):
        props = node.get("properties") or {}
        if props:
            out["properties"] = dict((k, render(v, draft)) for k, v in props.items())
        if node.get("additionalProperties") is not None:
            out["additionalProperties"] = render(node["additionalProperties"], draft)
        if node.get("required"):
            out["required"] = list(node["required"])
    if (node.get("type") == "array" or "array" in (node.get("types") or ())) and node.get("items") is not None:
        out["items"] = render(node["items"], draft)
    for key, value in (node.get("extra") or {}).items():
        if key == "$ref" and types is None and node.get("nullable"):
            out["anyOf"] = [{"$ref": value}, {"type": "null"}]  # a null default stays valid
            continue
        if key == "$ref" and draft == "draft-07" and out:
            out.setdefault("allOf", []).append({"$ref": value})
            continue
        out[key] = value
    return out
