# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Recipe constraints evaluated against a Snapshot, as AICR v0.19.0 does (``pkg/constraints``, ``pkg/measurement``).

A constraint is ``{name, value}``: ``name`` is a path into the snapshot's measurements, ``value`` an expression
(``versions.Expression``). Paths (``measurement.ParsePath``):

* ``{Type}.{Subtype}.{Key}``: the key may itself contain dots (``OS.sysctl./proc/sys/kernel/osrelease``), except for
  ``SystemD``, whose subtypes do (``SystemD.containerd.service.ActiveState`` is unit ``containerd.service``, key
  ``ActiveState``);
* ``{Type}.{Subtype}[selector].{Key}``: a key of one of the subtype's ``items``, chosen by index (``[0]``) or by a
  ``key=value`` predicate on the item's data or context (``[name=eth0]``; two matches are an error).

The node-set form ``NodeTopology.gpu-nodes.label`` (``key=value``: every GPU node carries it; ``!key``: no GPU node
carries it) is quantified over the GPU nodes (``cloud.google.com/gke-accelerator``) of the snapshot's
``NodeTopology.label`` readings: the lossless ``items`` when there are any, else the folded ``data``.

:func:`evaluate` returns an :class:`EvalResult`; ``error_code`` is ``not_found`` when the snapshot lacks the reading
(AICR's graceful signal: the overlay is excluded with a warning) or ``invalid`` for anything else (a malformed
path or expression, an unparseable version: resolution fails closed). ``error`` is AICR's error text.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicr.runtime.plugins.module_utils._recipe import aicrerrors as errs
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import snapshot as snap_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import topology
from ansible_collections.aicr.runtime.plugins.module_utils._recipe.versions import Expression

MEASUREMENT_TYPES = snap_mod.TYPES
DOTTED_SUBTYPES = ("SystemD",)
GPU_NODES_LABEL = "NodeTopology.gpu-nodes.label"
GPU_NODE_UNIVERSE_LABEL = "cloud.google.com/gke-accelerator"
NOT_FOUND = "not_found"
INVALID = "invalid"
MAX_REPORTED_NODES = 5

_INTEGER = re.compile(r"^[+-]?[0-9]+$")
_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class EvalResult(object):
    __slots__ = ("passed", "actual", "error_code", "error")

    def __init__(self, passed=False, actual="", error=None):
        self.passed, self.actual, self.error = passed, actual, error
        self.error_code = None if not error else (NOT_FOUND if errs.code(error) == errs.NOT_FOUND else INVALID)

    def as_dict(self):
        out = {"passed": self.passed, "actual": self.actual}
        if self.error:
            out["error"] = self.error
            out["errorCode"] = self.error_code
        return out


class PathError(ValueError):
    """A constraint path that does not parse, or a reading it does not find (``str()``: AICR's error text)."""


def _invalid(text):
    return PathError(errs.chain(errs.INVALID_REQUEST, "invalid constraint path: " + text))


def _selector(raw):
    """("index", n) or ("predicate", (key, value)) of an item selector."""
    if raw == "":
        raise _invalid("item selector is empty")
    if "=" in raw:
        key, value = raw.split("=", 1)
        if not key or not value:
            raise _invalid("predicate selector requires non-empty key and value")
        return "predicate", (key, value)
    if not _INTEGER.match(raw):
        raise _invalid("item selector must be an integer index or 'key=value' predicate")
    if int(raw) < 0:
        raise _invalid("item index cannot be negative")
    return "index", int(raw)


def parse_path(name):
    """(type, subtype, key, selector or None) of a constraint name; raises PathError with AICR's text."""
    if not name:
        raise PathError(errs.chain(errs.INVALID_REQUEST, "constraint path cannot be empty"))
    dot = name.find(".")
    if dot < 0:
        raise _invalid("expected format {Type}.{Subtype}[selector].{Key}")
    mtype, rest = name[:dot], name[dot + 1:]
    if mtype not in MEASUREMENT_TYPES:
        raise PathError(errs.chain(errs.INVALID_REQUEST, "invalid measurement type in constraint path"))
    bracket, dot = rest.find("["), rest.find(".")
    if bracket >= 0 and (dot < 0 or bracket < dot):
        if bracket == 0:
            raise _invalid("subtype before '[' is empty")
        end = rest.find("]", bracket)
        if end < 0:
            raise _invalid("unclosed item selector bracket")
        selector = _selector(rest[bracket + 1:end])
        after = rest[end + 1:]
        if after and after[0] != ".":
            raise _invalid("expected '.' after item selector")
        if len(after) < 2:
            raise _invalid("missing key after item selector")
        return mtype, rest[:bracket], after[1:], selector
    if dot < 0:
        raise _invalid("expected format {Type}.{Subtype}.{Key}")
    if mtype in DOTTED_SUBTYPES:
        dot = rest.rfind(".")
    if dot == 0 or dot == len(rest) - 1:
        raise _invalid("subtype or key is empty")
    return mtype, rest[:dot], rest[dot + 1:], None


def _not_found(text):
    return PathError(errs.chain(errs.NOT_FOUND, text))


def _from_item(item, key):
    values, context = item.get("data") or {}, item.get("context") or {}
    if key in values:
        return topology.reading_string(values[key])
    if key in context:
        return str(context[key])
    raise _not_found("key not found in item")


def _from_items(sub, key, selector):
    items = sub.get("items") or []
    if not items:
        raise _not_found("subtype has no items but path uses an item selector")
    kind, arg = selector
    if kind == "index":
        if arg >= len(items):
            raise _not_found("item index out of bounds")
        return _from_item(items[arg], key)
    matched = [item for item in items if _item_matches(item, arg)]
    if len(matched) > 1:
        raise PathError(errs.chain("CONFLICT", "item predicate matches multiple entries"))
    if not matched:
        raise _not_found("no item matches predicate")
    return _from_item(matched[0], key)


def _item_matches(item, predicate):
    key, value = predicate
    values, context = item.get("data") or {}, item.get("context") or {}
    if key in values:
        return topology.reading_string(values[key]) == value
    return key in context and context[key] == value


def extract(snapshot, mtype, subtype, key, selector=None):
    """The reading as a string; raises PathError (AICR's NotFound, or a predicate's conflict)."""
    measurement = snap_mod.measurement(snapshot, mtype)
    if measurement is None:
        raise _not_found("measurement type not found in snapshot")
    sub = snap_mod.subtype(measurement, subtype)
    if sub is None:
        raise _not_found("subtype not found in measurement")
    if selector is not None:
        return _from_items(sub, key, selector)
    values = sub.get("data") or {}
    if key not in values:
        raise _not_found("key not found in subtype")
    return topology.reading_string(values[key])


def evaluate(constraint, snapshot):
    """Evaluate one constraint dict against a normalised snapshot."""
    name = constraint.get("name") or ""
    value = constraint.get("value") or ""
    if name == GPU_NODES_LABEL:
        return evaluate_gpu_nodes_label(value, snapshot)
    try:
        path = parse_path(name)
    except PathError as exc:
        return EvalResult(error=errs.chain(errs.INVALID_REQUEST, "invalid constraint path", str(exc)))
    try:
        actual = extract(snapshot, *path)
    except PathError as exc:
        return EvalResult(error=errs.chain(errs.NOT_FOUND, "value not found in snapshot", str(exc)))
    try:
        expression = Expression.parse(value)
    except ValueError as exc:
        return EvalResult(actual=actual, error=errs.chain(errs.INVALID_REQUEST, "invalid constraint expression", str(exc)))
    try:
        passed = expression.evaluate(actual)
    except ValueError as exc:
        return EvalResult(actual=actual, error=str(exc))
    return EvalResult(passed=passed, actual=actual)


# -- the node-set form -----------------------------------------------------------------

def valid_label_key(key):
    """Whether ``key`` is a Kubernetes label key (an optional DNS-1123 subdomain prefix and ``/``, a name of at most 63)."""
    if not key or key.count("/") > 1:
        return False
    prefix, name = key.rpartition("/")[0], key.rpartition("/")[2]
    if "/" in key and (not prefix or len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix)):
        return False
    return len(name) <= 63 and bool(_LABEL_NAME.match(name))


def valid_label_value(value):
    """Whether ``value`` is a Kubernetes label value (empty, or at most 63 alphanumerics, ``-``, ``_``, ``.``)."""
    return value == "" or (len(value) <= 63 and bool(_LABEL_NAME.match(value)))


def _nodeset_error(text):
    return ValueError(errs.chain(errs.INVALID_REQUEST, "invalid node-set constraint value: " + text))


def parse_gpu_nodes_value(raw):
    """(key, wanted value, negated); raises ValueError for anything but ``key=value`` or ``!key``."""
    text = (raw or "").strip()
    if text.startswith("!"):
        key = text[1:].strip()
        if not valid_label_key(key):
            raise _nodeset_error("negated form is \"!<label-key>\" with a valid label key and no value")
        return key, "", True
    if "=" not in text:
        raise _nodeset_error("expected \"<label-key>=<value>\" or \"!<label-key>\"")
    key, want = text.split("=", 1)
    if not valid_label_key(key) or not valid_label_value(want):
        raise _nodeset_error("label key or value is not valid")
    return key, want, False


def _fail(text):
    return ValueError(errs.chain(errs.INVALID_REQUEST, text))


def _truncated(raw_key):
    return _fail("label reading %s is truncated \u2014 node-set constraints cannot be evaluated on a partial node list; "
                 "regenerate the snapshot without --max-nodes-per-entry" % errs.quote(raw_key))


def _valid_nodes(nodes):
    return bool(nodes) and all(_DNS_SUBDOMAIN.match(n) for n in nodes)


def _data_entries(data, key):
    """[(value, [nodes])] of one label key in the folded data (``<value>|<node,...>`` readings), as AICR decodes them."""
    prefix = key + "."
    plain, prefixed = [], []
    for reading_key in sorted(data):
        if reading_key != key and not reading_key.startswith(prefix):
            continue
        raw = topology.reading_string(data[reading_key])
        value, sep, nodes_raw = raw.partition("|")
        if reading_key != key and value != reading_key[len(prefix):]:
            continue  # a different label sharing the dotted prefix
        cut = topology.truncation(nodes_raw)[1]
        nodes = topology.split_nodes(nodes_raw)
        if not sep or raw.count("|") != 1 or (not cut and not _valid_nodes(nodes)):
            raise _fail("label reading %s is malformed (%s) \u2014 expected \"<value>|<node1,node2,...>\" with canonical node names; "
                        "regenerate the snapshot with a current aicr build" % (errs.quote(reading_key), errs.quote(raw)))
        (plain if reading_key == key else prefixed).append((value, nodes, reading_key, cut))
    entries = plain
    if not plain and len(prefixed) == 1:
        raise _fail("label readings for %s are ambiguous: a single disambiguated-shape entry %s exists without the plain key \u2014 either a "
                    "distinct label sharing the dotted name, or the remnant of an encoding collision that overwrote the key's other entries "
                    "(#2003); rename the conflicting label or use a lossless snapshot encoding" % (errs.quote(key), errs.quote(prefixed[0][2])))
    if not plain and len(prefixed) >= 2:
        seen = set()
        for _value, nodes, reading_key, _cut in prefixed:
            for node in nodes:
                if node in seen:
                    raise _fail("label readings for %s are ambiguous: node %s appears under two values, so a distinct dotted label collided with "
                                "the disambiguated encoding (reading %s is one of the colliding parties); rename the conflicting label or use a "
                                "lossless snapshot encoding" % (errs.quote(key), errs.quote(node), errs.quote(reading_key)))
                seen.add(node)
        entries = prefixed
    for _value, _nodes, reading_key, cut in entries:
        if cut:
            raise _truncated(reading_key)
    return [(value, nodes) for value, nodes, _key, _cut in entries]


def _item_entries(labels, key):
    """[(value, [nodes])] of one label key from the lossless items."""
    try:
        readings = topology.label_readings(labels)
    except ValueError as exc:
        raise _fail("failed to decode NodeTopology label readings: %s" % exc)
    entries, seen = [], {}
    for reading in readings:
        if reading.key != key:
            continue
        if reading.truncated:
            raise _truncated(reading.raw_key)
        if not _valid_nodes(reading.nodes):
            raise _fail("label reading %s is malformed (nodes %s) \u2014 expected canonical node names; regenerate the snapshot with a current "
                        "aicr build" % (errs.quote(reading.raw_key), errs.go_list(reading.nodes)))
        entries.append((reading.value, reading.nodes))
    for value, nodes in entries:
        for node in nodes:
            if seen.setdefault(node, value) != value:
                raise _fail("label readings for %s are inconsistent: node %s appears under both value %s and value %s, but a node carries exactly "
                            "one value per label key \u2014 the snapshot is corrupt or hand-edited; regenerate it with a current aicr build"
                            % (errs.quote(key), errs.quote(node), errs.quote(seen[node]), errs.quote(value)))
    return entries


def _label_entries(labels, key):
    if labels.get("items"):
        return _item_entries(labels, key)
    return _data_entries(labels.get("data") or {}, key)


def _summary(nodes):
    if len(nodes) <= MAX_REPORTED_NODES:
        return ",".join(nodes)
    return ",".join(nodes[:MAX_REPORTED_NODES]) + " (+%d more)" % (len(nodes) - MAX_REPORTED_NODES)


def evaluate_gpu_nodes_label(value, snapshot):
    try:
        key, want, negated = parse_gpu_nodes_value(value)
    except ValueError as exc:
        return EvalResult(error=str(exc))
    measurement = snap_mod.measurement(snapshot, "NodeTopology")
    labels = snap_mod.subtype(measurement, "label") if measurement else None
    if labels is None:
        return EvalResult(error=errs.chain(
            errs.NOT_FOUND, "snapshot carries no NodeTopology label readings \u2014 re-capture with a current aicr build and verify the snapshot "
                            "agent can list nodes"))
    try:
        universe = set(n for entry in _label_entries(labels, GPU_NODE_UNIVERSE_LABEL) for n in entry[1])
        if not universe:
            return EvalResult(error=errs.chain(
                errs.NOT_FOUND, "GPU-node universe is empty: snapshot has no %s label readings \u2014 the constraint cannot be evaluated on a "
                                "cluster without identifiable GPU nodes" % errs.quote(GPU_NODE_UNIVERSE_LABEL)))
        entries = _label_entries(labels, key)
    except ValueError as exc:
        return EvalResult(error=str(exc))
    if negated:
        carrying = sorted(set(n for entry in entries for n in entry[1] if n in universe))
        if carrying:
            return EvalResult(actual="%d of %d GPU node(s) carry label %s: %s" % (len(carrying), len(universe), key, _summary(carrying)))
        return EvalResult(passed=True, actual="none of %d GPU node(s) carry label %s" % (len(universe), key))
    having = set(n for v, nodes in entries if v == want for n in nodes)
    missing = sorted(universe - having)
    if missing:
        return EvalResult(actual="%d of %d GPU node(s) missing %s=%s: %s" % (len(missing), len(universe), key, want, _summary(missing)))
    return EvalResult(passed=True, actual="all %d GPU node(s) carry %s=%s" % (len(universe), key, want))
