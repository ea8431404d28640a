# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The small grammars inside values.yaml comments: type names, losisin ``@schema key:value; ...`` annotations and
bitnami ``[modifiers]`` (``comments`` finds the comments, this module reads what they say)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicr.runtime.plugins.module_utils._common import deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

# the source a comment's YAML is read as: a refusal past a limit is renamed after the values file it is in (infer)
COMMENT_SOURCE = "a YAML comment"


TYPE_ALIASES = {
    "int": "integer", "integer": "integer", "int64": "integer", "int32": "integer", "uint": "integer",
    "float": "number", "number": "number", "double": "number", "float64": "number",
    "str": "string", "string": "string", "tpl": "string",
    "bool": "boolean", "boolean": "boolean",
    "object": "object", "map": "object", "dict": "object", "dictionary": "object",
    "array": "array", "list": "array", "slice": "array",
    "null": "null", "nil": "null",
    "int-or-string": "int-or-string", "intorstring": "int-or-string", "quantity": "int-or-string",
    "any": "any",
}


def normalise_type(value, where):
    """Return a list of JSON Schema type names for an annotation's ``type`` value."""
    if isinstance(value, str):
        names = [v.strip() for v in re.split(r"[,|]", value.strip().strip("[]")) if v.strip()]
    elif isinstance(value, (list, tuple)):
        names = ["null" if v is None else str(v) for v in value]
    elif value is None:
        names = ["null"]
    else:
        names = [str(value)]
    result = []
    for name in names:
        norm = TYPE_ALIASES.get(name.lower())
        if norm is None:
            raise AicrError(
                "annotation type at %s: %r is not a known type (allowed: %s)" % (where, name, ", ".join(sorted(set(TYPE_ALIASES.values())))),
                field="type", path=where, value=name)
        result.append(norm)
    return result


def _scalar(text):
    """Parse a YAML flow scalar/collection as an annotation value; fall back to the raw string."""
    text = text.strip()
    if text == "":
        return True
    try:
        return deps.load(text, COMMENT_SOURCE)
    except deps.yaml.YAMLError:
        return text


def parse_schema_annotation(body):
    """``key: value ; key:value`` (losisin) → dict. A bare key means ``true``."""
    result = {}
    for part in _split_semicolons(body):
        part = part.strip()
        if not part:
            continue
        if ":" in part:
            key, _sep, value = part.partition(":")
            key = key.strip()
            # a reference is a string as written ("#/properties/x" would be a YAML comment)
            result[key] = value.strip().strip("\"'") if key in ("$ref", "itemRef", "$id") else _scalar(value)
        else:
            result[part] = True
    return result


def _split_semicolons(body):
    parts, depth, quote, current = [], 0, None, []
    for char in body:
        if quote:
            current.append(char)
            if char == quote:
                quote = None
            continue
        if char in "\"'":
            quote = char
        elif char in "[{":
            depth += 1
        elif char in "]}":
            depth -= 1
        elif char == ";" and depth <= 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def parse_bitnami_modifiers(text):
    """``[array, nullable, default: x]`` → annotations dict.

    readme-generator's ``[array]``/``[object]``/``[string]`` only fill the README's default column: they are a
    documentation hint (``x-doc-type``) that types a null leaf, never a type that narrows the inferred one."""
    result = {}
    for mod in (text or "").split(","):
        mod = mod.strip()
        if not mod:
            continue
        low = mod.lower()
        if low in ("array", "object", "string", "nullable"):
            if low == "nullable":
                result["nullable"] = True
            else:
                result["x-doc-type"] = low
        elif low.startswith("default:"):
            result["x-default-doc"] = mod.split(":", 1)[1].strip()
        elif low == "skip":
            result["x-skip-doc"] = True
    return result
