# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""AICR's NodeTopology encodings (``pkg/collector/topology``): the folded ``data`` and the lossless ``items``.

The topology collector aggregates every node's labels (and taints) into readings, written twice:

* ``data`` (the folded form every AICR version reads): ``{label-key: "<value>|<node1,node2,...>"}``, the key suffixed
  ``.<value>`` when the label has several values across the nodes (so a label literally named ``<key>.<value>``
  collides with it);
* ``items`` (AICR v0.19.0 writes both): one entry per (key, value), ``context: {key, value}``, ``data: {node-count,
  truncated}`` and either the node list inline (``node-list``) or ``node-list-ref``, the ``data`` key that holds it -
  allowed only when that key is this reading's own folded key and no other reading folds onto it.

A consumer prefers ``items`` when a subtype has any. :func:`label_readings` decodes them and raises ValueError when
they are inconsistent (a missing key, both or neither node source, a reference to another reading's entry, a count
or truncation flag that disagrees with the list), as AICR's ``LabelReadings`` does.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_TRUNCATED = re.compile(r"\(\+(\d+) more\)$")


def reading_string(value):
    """A reading as AICR's ``Reading.String()`` prints it (``fmt.Sprintf("%v")``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return "%d" % value
    if value is None:
        return "<nil>"  # what Go prints for a null reading
    return str(value)


class LabelReading(object):
    __slots__ = ("key", "value", "nodes", "count", "truncated", "raw_key")

    def __init__(self, key, value, nodes=None, count=0, truncated=False, raw_key=""):
        self.key, self.value, self.nodes, self.count, self.truncated, self.raw_key = key, value, nodes or [], count, truncated, raw_key


def truncation(node_list):
    """(withheld node count, marked): the ``" (+N more)"`` suffix AICR appends to a truncated node list."""
    m = _TRUNCATED.search(node_list)
    return (int(m.group(1)), True) if m else (0, False)


def split_nodes(node_list):
    return node_list.split(",") if node_list else []


def _context(item, field, index):
    value = (item.get("context") or {}).get(field)
    if not isinstance(value, str) or value == "":
        raise ValueError("topology item %d: missing required context field %r" % (index, field))
    return value


def _item_int(item, field, index):
    value = (item.get("data") or {}).get(field)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (isinstance(value, float) and not value.is_integer()):
        raise ValueError("topology item %d: data field %r is missing or not an integer" % (index, field))
    if value < 0:
        raise ValueError("topology item %d: data field %r is negative (%d)" % (index, field, value))
    return int(value)


def _item_bool(item, field, index):
    value = (item.get("data") or {}).get(field)
    if not isinstance(value, bool):
        raise ValueError("topology item %d: data field %r is missing or not a boolean" % (index, field))
    return value


def _node_list(item, index, data, raw_key, folds):
    values = item.get("data") or {}
    has_list, has_ref = "node-list" in values, "node-list-ref" in values
    if has_ref and (not isinstance(values["node-list-ref"], str) or not values["node-list-ref"]):
        raise ValueError("topology item %d: data field 'node-list-ref' is not a non-empty string" % index)
    if has_list and has_ref:
        raise ValueError("topology item %d: carries both 'node-list' and 'node-list-ref'" % index)
    if not has_list and not has_ref:
        raise ValueError("topology item %d: carries neither 'node-list' nor 'node-list-ref'" % index)
    if has_list:
        if not isinstance(values["node-list"], str):
            raise ValueError("topology item %d: data field 'node-list' is not a string" % index)
        return values["node-list"]
    ref = values["node-list-ref"]
    if ref != raw_key:
        raise ValueError("topology item %d: 'node-list-ref' names %r but this reading folds onto %r" % (index, ref, raw_key))
    if folds.get(ref) != 1:
        raise ValueError("topology item %d: %d readings fold onto %r, so it cannot be referenced" % (index, folds.get(ref, 0), ref))
    if ref not in data:
        raise ValueError("topology item %d: 'node-list-ref' %r names no data entry" % (index, ref))
    return reading_string(data[ref]).split("|")[-1]


def label_readings(labels):
    """[LabelReading] of a NodeTopology ``label`` subtype's ``items``, in item order; ValueError when inconsistent."""
    items = labels.get("items") or []
    data = labels.get("data") or {}
    readings = []
    for index, item in enumerate(items):
        readings.append(LabelReading(_context(item, "key", index), str((item.get("context") or {}).get("value") or "")))
    per_key = {}
    for r in readings:
        per_key[r.key] = per_key.get(r.key, 0) + 1
    folds = {}
    for r in readings:
        r.raw_key = "%s.%s" % (r.key, r.value) if per_key[r.key] > 1 else r.key
        folds[r.raw_key] = folds.get(r.raw_key, 0) + 1
    for index, (item, r) in enumerate(zip(items, readings)):
        node_list = _node_list(item, index, data, r.raw_key, folds)
        r.nodes = split_nodes(node_list)
        withheld, marked = truncation(node_list)
        r.count = _item_int(item, "node-count", index)
        r.truncated = _item_bool(item, "truncated", index)
        if marked != r.truncated:
            raise ValueError("topology item %d: 'truncated' is %s but the node list %s the truncation marker" % (
                index, "true" if r.truncated else "false", "carries" if marked else "does not carry"))
        if r.count != len(r.nodes) + withheld:
            raise ValueError("topology item %d: 'node-count' is %d but the node list names %d and withholds %d" % (
                index, r.count, len(r.nodes), withheld))
    return readings
