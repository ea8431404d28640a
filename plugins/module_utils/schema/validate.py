# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Validate values (files, dicts and ``--set`` overrides) against a JSON Schema.

Every violation is reported with its path (``a.b[0].c``), the offending value and the
JSON Schema rule (``type``, ``enum``, ``minimum``...). Uses the ``jsonschema`` package.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import traceback

from ansible_collections.aicr.runtime.plugins.module_utils.common.errors import AicrError

try:
    import jsonschema as _jsonschema

    HAS_JSONSCHEMA = True
    JSONSCHEMA_IMPORT_ERROR = None
except ImportError:
    HAS_JSONSCHEMA = False
    JSONSCHEMA_IMPORT_ERROR = traceback.format_exc()

_INDEXES = re.compile(r"^(.*?)((?:\[\d+\])*)$", re.S)
_INT = re.compile(r"^[-+]?\d+$")


def _validator_class(schema):
    uri = str(schema.get("$schema", ""))
    if "draft-07" in uri:
        return _jsonschema.Draft7Validator
    if "draft-04" in uri:
        return _jsonschema.Draft4Validator
    return _jsonschema.Draft202012Validator


def format_path(parts):
    out = ""
    for part in parts:
        if isinstance(part, int):
            out += "[%d]" % part
        else:
            text = str(part)
            if "." in text or "[" in text:
                text = '"%s"' % text
            out += ("." if out else "") + text
    return out or "(root)"


def strip_remote_refs(schema, unresolved):
    """A copy of schema without non-local ``$ref`` (nothing is fetched); their URIs go to ``unresolved``."""
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key == "$ref" and isinstance(value, str) and not value.startswith("#"):
                unresolved.append(value)
                continue
            out[key] = strip_remote_refs(value, unresolved)
        return out
    if isinstance(schema, list):
        return [strip_remote_refs(v, unresolved) for v in schema]
    return schema


def validate(schema, values, limit=1000, warnings=None):
    """Return the list of violations (empty when valid): {path, value, rule, message, schema_path}.

    Remote ``$ref`` (e.g. losisin's ``$k8s/...``) are never fetched: they are treated as
    accepting any value, and listed in ``warnings`` when a list is given.
    """
    if not HAS_JSONSCHEMA:
        raise AicrError("the Python package 'jsonschema' is required to validate values", exception=JSONSCHEMA_IMPORT_ERROR)
    if not isinstance(schema, dict):
        raise AicrError("schema: must be a JSON Schema mapping, got %s" % type(schema).__name__, field="schema")
    unresolved = []
    schema = strip_remote_refs(schema, unresolved)
    if unresolved and warnings is not None:
        warnings.append("%d remote $ref not fetched, treated as any value: %s" % (len(unresolved), ", ".join(sorted(set(unresolved))[:5])))
    cls = _validator_class(schema)
    try:
        cls.check_schema(schema)
    except _jsonschema.exceptions.SchemaError as exc:
        raise AicrError("schema: not a valid JSON Schema at %s (%s)" % (format_path(exc.absolute_path), exc.message), field="schema")
    validator = cls(schema)
    errors = []
    try:
        found = sorted(validator.iter_errors(values), key=lambda e: (list(map(str, e.absolute_path)), e.validator))
    except Exception as exc:  # pylint: disable=broad-except  # unresolvable local $ref and the like
        raise AicrError("schema: cannot be applied (%s)" % str(exc).splitlines()[0], field="schema")
    for error in found:
        errors.append({
            "path": format_path(error.absolute_path),
            "value": error.instance,
            "rule": error.validator,
            "constraint": error.validator_value if _plain_constraint(error) else None,
            "message": error.message,
            "schema_path": "/".join(str(p) for p in error.absolute_schema_path),
        })
        if len(errors) >= limit:
            break
    return errors


def _plain_constraint(error):
    return not isinstance(error.validator_value, (dict, list)) or error.validator in ("enum", "type", "required")


def summarise(errors, limit=5):
    shown = ["%s: %s" % (e["path"], e["message"]) for e in errors[:limit]]
    more = "" if len(errors) <= limit else " (and %d more)" % (len(errors) - limit)
    return "; ".join(shown) + more


# --- --set parsing (Helm strvals subset) -----------------------------------------

def _split_unescaped(text, sep):
    parts, current, depth, escape = [], [], 0, False
    for char in text:
        if escape:
            current.append("\\" + char)
            escape = False
            continue
        if char == "\\":
            escape = True
            continue
        if char == "{":
            depth += 1
        elif char == "}":
            depth -= 1
        if char == sep and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    if escape:
        current.append("\\")
    parts.append("".join(current))
    return parts


def _typed(text, as_string):
    if as_string:
        return text
    if text == "true":
        return True
    if text == "false":
        return False
    if text == "null":
        return None
    if _INT.match(text) and (text == "0" or not text.lstrip("+-").startswith("0")):
        return int(text)
    return text


def _value(text, as_string):
    if text.startswith("{") and text.endswith("}"):
        inner = text[1:-1]
        return [_typed(_unescape(v), as_string) for v in _split_unescaped(inner, ",")] if inner else []
    return _typed(_unescape(text), as_string)


def _unescape(text):
    return re.sub(r"\\(.)", r"\1", text)


def _key_parts(key):
    parts = []
    for raw in _split_unescaped(key, "."):
        match = _INDEXES.match(raw)
        name, indexes = match.groups()
        if name:
            parts.append(_unescape(name))
        parts.extend(int(i) for i in re.findall(r"\[(\d+)\]", indexes))
    return parts


def parse_set(expressions, as_string=False):
    """``["a.b=1", "c[0].d=x,e={a,b}"]`` → a nested dict (later wins), as ``helm --set`` does."""
    result = {}
    for expression in expressions or []:
        for assignment in _split_unescaped(str(expression), ","):
            if not assignment.strip():
                continue
            key, sep, value = assignment.partition("=")
            if not sep or not key:
                raise AicrError("set: %r is not key=value" % (assignment,), field="set", value=assignment)
            _assign(result, _key_parts(key), _value(value, as_string), assignment)
    return result


def _assign(root, parts, value, expression):
    node = root
    for index, part in enumerate(parts):
        last = index == len(parts) - 1
        nxt = None if last else parts[index + 1]
        if isinstance(part, int):
            if not isinstance(node, list):
                raise AicrError("set: %r indexes a non-list" % (expression,), field="set", value=expression)
            if part > 10000:
                raise AicrError("set: index %d in %r is above the limit 10000" % (part, expression), field="set", value=expression)
            while len(node) <= part:
                node.append(None)
            if last:
                node[part] = value
            else:
                if not isinstance(node[part], (dict, list)):
                    node[part] = [] if isinstance(nxt, int) else {}
                node = node[part]
        else:
            if not isinstance(node, dict):
                raise AicrError("set: %r sets a key inside a non-map" % (expression,), field="set", value=expression)
            if last:
                node[part] = value
            else:
                if not isinstance(node.get(part), (dict, list)):
                    node[part] = [] if isinstance(nxt, int) else {}
                node = node[part]
