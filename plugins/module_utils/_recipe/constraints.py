# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Recipe constraints evaluated against a Snapshot, as AICR v0.19.0 does (``pkg/constraints``, ``pkg/version``).

A constraint is ``{name, value}``: ``name`` is a path ``{Type}.{Subtype}.{Key}`` into the snapshot's measurements
(the key may itself contain dots, e.g. ``OS.sysctl./proc/sys/kernel/osrelease``), ``value`` an expression:

* ``>= x``, ``<= x``, ``> x``, ``< x`` - version comparison (both sides must parse as versions, else an error);
* ``== x``, ``!= x`` - version equality when ``x`` looks like a version and both sides parse, else string equality;
* anything else - exact, case-sensitive string match (``ubuntu``; ``24.04`` is compared as a string too).

Versions: an optional ``v``, at most three numeric components; ``-``/``+`` after a digit starts the extras, which
never take part in a comparison. Comparison stops at the shorter precision (``1.34`` equals ``1.34.7``).

The node-set form ``NodeTopology.gpu-nodes.label`` (``key=value``: every GPU node carries it; ``!key``: no GPU node
carries it) is quantified over the GPU nodes of the snapshot's ``NodeTopology.label`` readings.

:func:`evaluate` returns an :class:`EvalResult`; ``error_code`` is ``not_found`` when the snapshot lacks the reading
(AICR's graceful signal: the overlay is excluded with a warning) or ``invalid`` for anything else (a malformed
path or expression, an unparseable version: resolution fails closed).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicr.runtime.plugins.module_utils._recipe import snapshot as snap_mod

MEASUREMENT_TYPES = ("K8s", "GPU", "OS", "SystemD", "NodeTopology")
OPERATORS = (">=", "<=", "!=", "==", ">", "<")  # longest first, as AICR scans them
ORDERING = (">=", "<=", ">", "<")
GPU_NODES_LABEL = "NodeTopology.gpu-nodes.label"
GPU_NODE_UNIVERSE_LABEL = "cloud.google.com/gke-accelerator"
NOT_FOUND = "not_found"
INVALID = "invalid"

_LABEL_NAME = re.compile(r"^([A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?)$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class VersionError(ValueError):
    pass


class Version(object):
    """AICR's ``pkg/version.Version``: major, minor, patch, precision (number of components given), extras."""

    __slots__ = ("major", "minor", "patch", "precision", "extras")

    def __init__(self, major=0, minor=0, patch=0, precision=3, extras=""):
        self.major, self.minor, self.patch, self.precision, self.extras = major, minor, patch, precision, extras

    @classmethod
    def parse(cls, text):
        if text == "":
            raise VersionError("version string is empty")
        s = text[1:] if text.startswith("v") else text
        main, extras = s, ""
        for i, ch in enumerate(s):
            if ch in "-+" and i > 0 and s[i - 1].isdigit():
                main, extras = s[:i], s[i:]
                break
        parts = main.split(".")
        if len(parts) > 3:
            raise VersionError("version has more than 3 components")
        nums = []
        for part in parts:
            if part == "":
                raise VersionError("empty component")
            if not re.match(r"^[+-]?[0-9]+$", part):
                raise VersionError("non-numeric component: %r" % part)
            num = int(part)
            if num < 0:
                raise VersionError("negative component: %d" % num)
            nums.append(num)
        nums += [0] * (3 - len(nums))
        return cls(nums[0], nums[1], nums[2], len(parts), extras)

    def equals(self, other):
        return (self.major, self.minor, self.patch) == (other.major, other.minor, other.patch)

    def compare(self, other):
        precision = min(self.precision, other.precision)
        pairs = [(self.major, other.major), (self.minor, other.minor), (self.patch, other.patch)][:max(precision, 1)]
        for mine, theirs in pairs:
            if mine != theirs:
                return -1 if mine < theirs else 1
        return 0


def looks_like_version(value):
    s = value[1:] if value.startswith("v") else value
    return bool(s) and any(c.isdigit() for c in s) and "." in s


class Expression(object):
    """A parsed constraint value (AICR's ``ParsedConstraint``)."""

    def __init__(self, operator, value, version_comparison):
        self.operator, self.value, self.version_comparison = operator, value, version_comparison

    @classmethod
    def parse(cls, text):
        expr = (text or "").strip()
        if expr == "":
            raise ValueError("constraint expression cannot be empty")
        if expr.startswith("!") and not expr.startswith("!=") and len(expr) > 1 and not expr[1].isspace():
            raise ValueError("bare '!' prefix is invalid; use '!=' or the separate node-set form")
        operator, value = "", expr
        for op in OPERATORS:
            if expr.startswith(op):
                operator, value = op, expr[len(op):].strip()
                break
        if value == "":
            raise ValueError("constraint value cannot be empty after operator")
        version_comparison = operator in ORDERING or looks_like_version(value)
        return cls(operator, value, version_comparison)

    def evaluate(self, actual):
        """True/False; raises ValueError when an ordering operator meets a value that is not a version."""
        actual = actual.strip()
        if self.operator == "":
            return actual == self.value
        if self.operator in ("==", "!="):
            same = actual == self.value
            if self.version_comparison:
                try:
                    same = Version.parse(self.value).equals(Version.parse(actual))
                except VersionError:
                    same = actual == self.value
            return same if self.operator == "==" else not same
        try:
            expected = Version.parse(self.value)
        except VersionError as exc:
            raise ValueError("cannot parse expected version %r: %s" % (self.value, exc))
        try:
            got = Version.parse(actual)
        except VersionError as exc:
            raise ValueError("cannot parse actual version %r: %s" % (actual, exc))
        cmp = got.compare(expected)
        return {">=": cmp >= 0, ">": cmp > 0, "<=": cmp <= 0, "<": cmp < 0}[self.operator]


class EvalResult(object):
    __slots__ = ("passed", "actual", "error_code", "error")

    def __init__(self, passed=False, actual="", error_code=None, error=None):
        self.passed, self.actual, self.error_code, self.error = passed, actual, error_code, error

    def as_dict(self):
        out = {"passed": self.passed, "actual": self.actual}
        if self.error:
            out["error"] = self.error
            out["errorCode"] = self.error_code
        return out


def parse_path(name):
    """(type, subtype, key) of a constraint name; raises ValueError naming what is wrong."""
    if not name:
        raise ValueError("constraint path cannot be empty")
    parts = name.split(".", 2)
    if len(parts) < 3:
        raise ValueError("invalid constraint path %r: expected format {Type}.{Subtype}.{Key}" % name)
    if parts[0] not in MEASUREMENT_TYPES:
        raise ValueError("invalid measurement type %r in constraint path %r (valid: %s)" % (parts[0], name, ", ".join(MEASUREMENT_TYPES)))
    return parts[0], parts[1], parts[2]


def extract(snapshot, mtype, subtype, key):
    """The reading as a string; raises LookupError (AICR's NotFound) naming the missing part."""
    measurement = snap_mod.measurement(snapshot, mtype)
    if measurement is None:
        raise LookupError("measurement type %s not found in snapshot" % mtype)
    sub = snap_mod.subtype(measurement, subtype)
    if sub is None:
        raise LookupError("subtype %s not found in measurement %s" % (subtype, mtype))
    data = sub.get("data") or {}
    if key not in data:
        raise LookupError("key %s not found in subtype %s of measurement %s" % (key, subtype, mtype))
    return snap_mod.reading_string(data[key])


def evaluate(constraint, snapshot):
    """Evaluate one constraint dict against a normalised snapshot."""
    name = constraint.get("name") or ""
    value = constraint.get("value") or ""
    if name == GPU_NODES_LABEL:
        return evaluate_gpu_nodes_label(value, snapshot)
    try:
        mtype, subtype, key = parse_path(name)
    except ValueError as exc:
        return EvalResult(error_code=INVALID, error="invalid constraint path: %s" % exc)
    try:
        actual = extract(snapshot, mtype, subtype, key)
    except LookupError as exc:
        return EvalResult(error_code=NOT_FOUND, error="value not found in snapshot: %s" % exc.args[0])
    try:
        expression = Expression.parse(value)
    except ValueError as exc:
        return EvalResult(actual=actual, error_code=INVALID, error="invalid constraint expression %r: %s" % (value, exc))
    try:
        passed = expression.evaluate(actual)
    except ValueError as exc:
        return EvalResult(actual=actual, error_code=INVALID, error="evaluation failed: %s" % exc)
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


def parse_gpu_nodes_value(raw):
    """(key, wanted value, negated); raises ValueError for anything but ``key=value`` or ``!key``."""
    text = (raw or "").strip()
    if text.startswith("!"):
        key = text[1:].strip()
        if not valid_label_key(key):
            raise ValueError("invalid node-set constraint value %r: negated form is \"!<label-key>\" with a valid label key and no value" % raw)
        return key, "", True
    if "=" not in text:
        raise ValueError("invalid node-set constraint value %r: expected \"<label-key>=<value>\" or \"!<label-key>\"" % raw)
    key, want = text.split("=", 1)
    if not valid_label_key(key) or not valid_label_value(want):
        raise ValueError("invalid node-set constraint value %r: label key or value is not valid" % raw)
    return key, want, False


def _label_entries(data, key):
    """[(value, [nodes])] of one label key in NodeTopology.label data (``<value>|<node,...>`` readings)."""
    prefix = key + "."
    plain, prefixed = [], []
    for reading_key in sorted(data):
        if reading_key != key and not reading_key.startswith(prefix):
            continue
        raw = snap_mod.reading_string(data[reading_key])
        value, sep, nodes_raw = raw.partition("|")
        if reading_key != key and value != reading_key[len(prefix):]:
            continue  # a different label sharing the dotted prefix
        if "(+" in nodes_raw and nodes_raw.rstrip().endswith("more)"):
            raise ValueError("label reading %r is truncated - node-set constraints cannot be evaluated on a partial node list" % reading_key)
        nodes = nodes_raw.split(",") if nodes_raw else []
        if not sep or raw.count("|") != 1 or not nodes or not all(_DNS_SUBDOMAIN.match(n) for n in nodes):
            raise ValueError("label reading %r is malformed (%r) - expected \"<value>|<node1,node2,...>\" with canonical node names" % (reading_key, raw))
        (plain if reading_key == key else prefixed).append((value, nodes))
    if plain:
        return plain
    if len(prefixed) == 1:
        raise ValueError("label readings for %r are ambiguous: a single disambiguated-shape entry exists without the plain key" % key)
    return prefixed


def evaluate_gpu_nodes_label(value, snapshot):
    try:
        key, want, negated = parse_gpu_nodes_value(value)
    except ValueError as exc:
        return EvalResult(error_code=INVALID, error=str(exc))
    measurement = snap_mod.measurement(snapshot, "NodeTopology")
    labels = snap_mod.subtype(measurement, "label") if measurement else None
    if labels is None:
        return EvalResult(error_code=NOT_FOUND, error="snapshot carries no NodeTopology label readings")
    data = labels.get("data") or {}
    try:
        universe = set(n for entry in _label_entries(data, GPU_NODE_UNIVERSE_LABEL) for n in entry[1])
        if not universe:
            return EvalResult(error_code=NOT_FOUND, error="GPU-node universe is empty: snapshot has no %r label readings" % GPU_NODE_UNIVERSE_LABEL)
        entries = _label_entries(data, key)
    except ValueError as exc:
        return EvalResult(error_code=INVALID, error=str(exc))
    if negated:
        carrying = sorted(n for entry in entries for n in entry[1] if n in universe)
        if carrying:
            return EvalResult(actual="%s present on GPU nodes %s" % (key, ", ".join(carrying[:5])))
        return EvalResult(passed=True, actual="%s absent on all %d GPU nodes" % (key, len(universe)))
    having = set(n for v, nodes in entries if v == want for n in nodes)
    missing = sorted(universe - having)
    if missing:
        return EvalResult(actual="%s=%s missing on GPU nodes %s" % (key, want, ", ".join(missing[:5])))
    return EvalResult(passed=True, actual="%s=%s on all %d GPU nodes" % (key, want, len(universe)))
