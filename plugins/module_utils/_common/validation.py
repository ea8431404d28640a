# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Validate values against a JSON Schema: the one rule values_schema (``output: validate``) and gated_release
(``values_schemas`` and a chart's own ``values.schema.json``) both apply.

- The draft is the schema's ``$schema`` (draft-04, -06, -07, 2019-09, 2020-12); without one, 2020-12.
- Remote ``$ref`` (e.g. losisin's ``$k8s/...``) are never fetched: they accept any value and are listed
  in ``warnings`` when a list is given.
- Every violation has its path (``a.b[0].c``), the offending value, the JSON Schema rule (``type``,
  ``enum``, ``minimum``...), the message and the schema path.

Uses the ``jsonschema`` package, guarded here (the only place that imports it).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import traceback

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

try:
    import jsonschema

    HAS_JSONSCHEMA = True
    JSONSCHEMA_IMPORT_ERROR = None
except ImportError:
    jsonschema = None
    HAS_JSONSCHEMA = False
    JSONSCHEMA_IMPORT_ERROR = traceback.format_exc()


def _validator_class(schema):
    uri = str(schema.get("$schema", ""))
    if "draft-07" in uri:
        return jsonschema.Draft7Validator
    if "draft-04" in uri:
        return jsonschema.Draft4Validator
    return jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)


def format_path(parts):
    """``["a", "b", 0, "c"]`` -> ``a.b[0].c`` (keys with dots or brackets quoted); ``(root)`` when empty."""
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
    """Return the list of violations (empty when valid): {path, value, rule, constraint, message, schema_path}."""
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
    except jsonschema.exceptions.SchemaError as exc:
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
    """``path: message; ...`` of the first ``limit`` violations."""
    shown = ["%s: %s" % (e["path"], e["message"]) for e in errors[:limit]]
    more = "" if len(errors) <= limit else " (and %d more)" % (len(errors) - limit)
    return "; ".join(shown) + more


def value_problems(schema, values):
    """Every violation of a component's ``values`` as ``values.<path>: <message>`` lines (gated_release's wording)."""
    return ["values.%s: %s" % (e["path"], e["message"]) for e in validate(schema, values)]
