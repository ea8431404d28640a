# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Criteria: normalisation, aliases, enums, matching and specificity.

A criteria value is one of: the wildcard ``any`` (also spelt ``""`` in catalog
files, meaning "this dimension is unconstrained"), or a concrete lowercase value.
Query values are trimmed and lowercased, aliases are folded, and a stated value
must be a known one: either a built-in AICR value or one that some overlay of
the loaded catalog declares (AICR seeds its criteria registry from the catalog).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

ANY = "any"

# Order matters: it is AICR's coverage/reporting order and Criteria.String() order.
DIMENSIONS = ("service", "accelerator", "intent", "os", "platform")

# Built-in values of AICR v0.19.0 (the static switch arms of its parsers).
STATIC_VALUES = {
    "service": ("aks", "bcm", "eks", "gke", "kind", "lke", "metal3", "ocp", "oke"),
    "accelerator": ("a100", "b200", "gb200", "gb300", "h100", "h200", "l40", "l40s", "rtx-pro-6000"),
    "intent": ("inference", "training"),
    "os": ("amazonlinux", "cos", "ol", "rhel", "talos", "ubuntu"),
    "platform": ("dynamo", "kubeflow", "nim", "runai", "slurm"),
}

# Spellings folded onto a canonical value ("" and "any" are handled separately).
ALIASES = {
    "service": {"self-managed": ANY, "self": ANY, "vanilla": ANY, "openshift": "ocp"},
    "os": {"al2": "amazonlinux", "al2023": "amazonlinux"},
}


def is_stated(value):
    """True when a criteria value names something (neither ``""`` nor ``any``)."""
    return value not in ("", ANY, None)


def normalise_value(value):
    return str(value).strip().lower()


def valid_values(dimension, registered=None):
    """Sorted union of the built-in values and the catalog-declared ones."""
    values = set(STATIC_VALUES[dimension])
    if registered:
        values.update(registered.get(dimension, ()))
    return sorted(values)


def parse_dimension(dimension, raw, registered=None):
    """Canonical value of one query dimension; unstated becomes ``any``."""
    if raw is None:
        return ANY
    if not isinstance(raw, str):
        raise AicrError(
            "criteria.%s: value %r is not a string; allowed: %s" % (dimension, raw, ", ".join(valid_values(dimension, registered))),
            field="criteria.%s" % dimension, value=repr(raw),
        )
    value = normalise_value(raw)
    if value in ("", ANY):
        return ANY
    value = ALIASES.get(dimension, {}).get(value, value)
    if value == ANY or value in STATIC_VALUES[dimension]:
        return value
    if registered and value in registered.get(dimension, ()):
        return value
    allowed = valid_values(dimension, registered)
    raise AicrError(
        "criteria.%s: invalid %s type '%s' (valid: %s)" % (dimension, dimension, raw, ", ".join(allowed)),
        field="criteria.%s" % dimension, value=raw, allowed=allowed,
    )


def parse_nodes(raw):
    if raw in (None, ""):
        return 0
    if isinstance(raw, bool):
        raise AicrError("criteria.nodes: value %r is not a non-negative integer" % (raw,), field="criteria.nodes", value=repr(raw))
    try:
        nodes = int(str(raw).strip())
    except ValueError:
        raise AicrError("criteria.nodes: value %r is not a non-negative integer" % (raw,), field="criteria.nodes", value=repr(raw))
    if nodes < 0:
        raise AicrError("criteria.nodes: value %r is not a non-negative integer" % (raw,), field="criteria.nodes", value=repr(raw))
    return nodes


def parse_criteria(raw, registered=None):
    """Validate a user query: dict of dimension -> value. Unknown keys are errors; every problem is listed in ``errors``."""
    raw = raw or {}
    if not isinstance(raw, dict):
        raise AicrError("criteria: expected a mapping of %s, nodes; got %s" % (", ".join(DIMENSIONS), type(raw).__name__), field="criteria")
    problems = Problems("criteria")
    problems.known_keys("criteria", raw, DIMENSIONS + ("nodes",))
    out = {}
    for dim in DIMENSIONS:
        try:
            out[dim] = parse_dimension(dim, raw.get(dim), registered)
        except AicrError as exc:
            problems.extend(exc)
    try:
        out["nodes"] = parse_nodes(raw.get("nodes"))
    except AicrError as exc:
        problems.extend(exc)
    problems.raise_if_any()
    return out


def overlay_value(criteria, dim):
    """Raw value of one dimension of an overlay's ``spec.criteria`` (missing -> "")."""
    value = criteria.get(dim)
    if value is None:
        return ""
    return str(value)


def field_matches(recipe_value, query_value):
    """AICR's asymmetric match: a wildcard recipe matches anything; a wildcard query only wildcards."""
    if recipe_value in ("", ANY):
        return True
    if query_value in ("", ANY):
        return False
    return recipe_value == query_value


def matches(overlay_criteria, query):
    """Does an overlay whose ``spec.criteria`` is ``overlay_criteria`` apply to ``query``?

    ``nodes`` is metadata only: no overlay gates on it, so it takes no part in matching.
    """
    for dim in DIMENSIONS:
        if not field_matches(overlay_value(overlay_criteria, dim), query.get(dim, ANY)):
            return False
    return True


def specificity(criteria):
    score = 0
    for dim in DIMENSIONS:
        if is_stated(overlay_value(criteria, dim)):
            score += 1
    nodes = criteria.get("nodes") or 0
    if nodes:
        score += 1
    return score


def criteria_string(query):
    """AICR's ``Criteria.String()``: ``any`` dimensions are omitted, ``""`` ones printed empty."""
    parts = []
    for dim in DIMENSIONS:
        value = query.get(dim, ANY)
        if value != ANY:
            parts.append("%s=%s" % (dim, value))
    if query.get("nodes"):
        parts.append("nodes=%d" % query["nodes"])
    if not parts:
        return "criteria(any)"
    return "criteria(%s)" % ", ".join(parts)


def recipe_name(query):
    """accelerator-service[-os]-intent[-platform], unstated dimensions omitted."""
    parts = [query.get(d, ANY) for d in ("accelerator", "service", "os", "intent", "platform")]
    parts = [p for p in parts if is_stated(p)]
    return "-".join(parts) if parts else "base"
