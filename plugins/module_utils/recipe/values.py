# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Helm values: copying, AICR's two merge rules, and a component's effective values.

Two merges exist in AICR and they differ on ``null``:

* :func:`deep_merge` (recipe ``overrides`` across overlays, mixins and profiles):
  maps merge recursively, anything else replaces, and a ``null`` is *kept* as a
  value (so it can later delete a key when the overrides are applied to values).
* :func:`merge_values` (values precedence): maps merge recursively, anything else
  replaces, and a ``null`` *deletes* the key.

Effective values of a component, lowest to highest precedence:
``components/<name>/values.yaml`` (only when ``valuesFile`` points elsewhere),
``valuesFile``, ``overrides``, then the user's ``component_overrides[name].values``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


def deep_copy(value):
    """Copy of a JSON/YAML-shaped value (dicts and lists are copied, scalars shared)."""
    if isinstance(value, dict):
        return dict((k, deep_copy(v)) for k, v in value.items())
    if isinstance(value, list):
        return [deep_copy(v) for v in value]
    return value


def deep_merge(dst, src):
    """Merge ``src`` into ``dst`` in place; maps recurse, other values (``None`` too) replace."""
    for key, value in src.items():
        if isinstance(value, dict):
            current = dst.get(key)
            if isinstance(current, dict):
                deep_merge(current, value)
            else:
                dst[key] = deep_copy(value)
        else:
            dst[key] = deep_copy(value)
    return dst


def merge_values(dst, src):
    """Merge ``src`` into ``dst`` in place; maps recurse, ``None`` deletes, other values replace."""
    for key, value in src.items():
        if value is None:
            dst.pop(key, None)
            continue
        if isinstance(value, dict):
            current = dst.get(key)
            if isinstance(current, dict):
                merge_values(current, value)
                continue
            dst[key] = deep_copy(value)
            continue
        dst[key] = deep_copy(value)
    return dst


def component_values(catalog, ref, user_values=None):
    """Effective values of one resolved componentRef (see module docstring for the order).

    Returns ``(values, files)`` where ``files`` lists the values files read, in order.
    """
    result = {}
    files = []
    values_file = ref.get("valuesFile") or ""
    overrides = ref.get("overrides") or {}
    field = "component %s valuesFile" % ref["name"]
    if values_file:
        base_file = "components/%s/values.yaml" % ref["name"]
        if values_file != base_file and catalog.has_file(base_file):
            result = deep_copy(catalog.values_doc(base_file, field))
            files.append(base_file)
            merge_values(result, catalog.values_doc(values_file, field))
        else:
            result = deep_copy(catalog.values_doc(values_file, field))
        files.append(values_file)
    if overrides:
        merge_values(result, overrides)
    if user_values:
        merge_values(result, user_values)
    return result, files
