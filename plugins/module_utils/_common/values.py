# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Helm values: copying and the two merge rules, each defined once.

Both merges recurse into maps and let anything else in ``override`` replace what ``base`` has; they differ
only on ``null``:

* :func:`merge_null_deletes` - a ``null`` in ``override`` *deletes* the key (Helm's values precedence:
  values files, ``--set``, AICR's component ``overrides`` applied to values, ``component_overrides[].values``,
  a chart's defaults under the given values, subchart coalescing);
* :func:`merge_null_kept` - a ``null`` is *kept* as a value (AICR's ``overrides`` merged across overlays,
  mixins and profiles: the ``null`` must survive until the overrides are applied to values, where it deletes).

Neither changes its arguments.
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


def _merge_into(dst, src, null_deletes):
    for key, value in src.items():
        if value is None and null_deletes:
            dst.pop(key, None)
        elif isinstance(value, dict) and isinstance(dst.get(key), dict):
            _merge_into(dst[key], value, null_deletes)
        else:
            dst[key] = deep_copy(value)
    return dst


def merge_null_deletes(base, override):
    """``base`` with ``override`` merged in; ``null`` in ``override`` deletes the key."""
    return _merge_into(deep_copy(base or {}), override or {}, True)


def merge_null_kept(base, override):
    """``base`` with ``override`` merged in; ``null`` in ``override`` is kept as a value."""
    return _merge_into(deep_copy(base or {}), override or {}, False)


def dotted(values, path, missing=None):
    """The value at the dotted ``path`` (``a.b.c``, helm's values paths) of nested dicts; ``missing`` when a step is absent."""
    node = values
    for key in path.split("."):
        if not isinstance(node, dict) or key not in node:
            return missing
        node = node[key]
    return node
