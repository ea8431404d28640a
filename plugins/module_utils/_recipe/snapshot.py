# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""AICR's ``Snapshot`` shape (``pkg/snapshotter``, ``pkg/measurement``): reading, checking, criteria from it.

A snapshot is ``{kind: Snapshot, apiVersion, metadata, measurements: [{type, subtypes: [{subtype, data, context}]}]}``;
``type`` is one of ``K8s``, ``GPU``, ``OS``, ``SystemD``, ``NodeTopology`` and ``data`` maps a key to a scalar reading.
:func:`load` accepts a Snapshot mapping, the result of ``aicr.runtime.cluster_facts`` (its ``snapshot`` key), or the
path of a YAML/JSON file AICR's agent (or ``cluster_facts``) wrote. A document that is not a snapshot fails closed,
as AICR's loader does: a wrong ``kind`` would otherwise read as an empty snapshot and resolve a fallback recipe.

:func:`criteria_from_snapshot` is AICR's fingerprint (``ExtractCriteriaFromSnapshot``): the service from
``K8s.server.service`` or the server version's ``-eks-``/``-gke``/``-aks``/``+lke`` marker, the accelerator from the GPU model
(``GPU.smi``/``GPU.device`` ``gpu.model``, else ``model``), the OS from ``OS.release.ID``. Nothing else is guessed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import criteria as crit

KIND = "Snapshot"
API_VERSION = "aicr.nvidia.com/v1alpha1"
TYPES = ("K8s", "GPU", "OS", "SystemD", "NodeTopology")

# Substring -> accelerator, first match wins (gb200 before b200), as AICR's ``matchAccelerator``: models it does not
# list (an L40S reads as l40, an H200 as nothing) are not fingerprinted.
_ACCELERATORS = (("gb200", "gb200"), ("b200", "b200"), ("rtx pro 6000", "rtx-pro-6000"), ("h100", "h100"), ("a100", "a100"),
                 ("l40", "l40"))
_SERVICE_MARKERS = (("-eks-", "eks"), ("-gke", "gke"), ("-aks", "aks"), ("+lke", "lke"))


def reading_string(value):
    """A reading as AICR's ``Reading.String()`` prints it (``fmt.Sprintf("%v")``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        return "%d" % value
    if value is None:
        return ""
    return str(value)


def _fail(where, msg):
    raise AicrError("snapshot%s: %s" % (where, msg), field="snapshot")


def check(doc, where=""):
    """A normalised copy of a Snapshot mapping; raises AicrError naming the first problem."""
    if not isinstance(doc, dict):
        _fail(where, "expected a Snapshot mapping (kind: Snapshot, measurements: [...]), got %s" % type(doc).__name__)
    kind = doc.get("kind") or ""
    if kind not in ("", KIND):
        _fail(where, "document has kind %r, expected %r" % (kind, KIND))
    if not kind and "measurements" not in doc:  # {a: 1} would read as an empty snapshot and resolve a fallback recipe
        _fail(where, "not a Snapshot: neither kind: Snapshot nor measurements; allowed: a Snapshot (kind: Snapshot, measurements: [...]) "
                     "or the result of aicr.runtime.cluster_facts")
    api_version = doc.get("apiVersion") or ""
    if api_version and not api_version.startswith(("aicr.nvidia.com/", "aicr.run/")):
        _fail(where, "unsupported apiVersion %r (expected aicr.nvidia.com/v1alpha1)" % api_version)
    raw = doc.get("measurements")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        _fail(where, "measurements must be a list, got %s" % type(raw).__name__)
    measurements = []
    for i, m in enumerate(raw):
        if not isinstance(m, dict) or m.get("type") not in TYPES:
            _fail(where, "measurements[%d].type must be one of %s, got %r" % (i, ", ".join(TYPES), m.get("type") if isinstance(m, dict) else m))
        subtypes = []
        for j, st in enumerate(m.get("subtypes") or []):
            if not isinstance(st, dict) or not isinstance(st.get("data") or {}, dict):
                _fail(where, "measurements[%d].subtypes[%d] must be a mapping with a data mapping" % (i, j))
            entry = {"subtype": str(st.get("subtype") or ""), "data": dict((str(k), v) for k, v in (st.get("data") or {}).items())}
            if st.get("context"):
                entry["context"] = dict(st["context"])
            subtypes.append(entry)
        measurements.append({"type": m["type"], "subtypes": subtypes})
    out = {"kind": KIND, "apiVersion": api_version or API_VERSION, "measurements": measurements}
    if doc.get("metadata"):
        out["metadata"] = dict(doc["metadata"])
    return out


def parse_text(text, where):
    """A snapshot from YAML or JSON text (a ConfigMap's ``snapshot.yaml`` / ``snapshot.json``, or a file)."""
    try:
        doc = bounded.load_json(text, "snapshot%s" % where)
    except ValueError:
        deps.require("PyYAML", "to read a Snapshot written as YAML", field="snapshot")
        try:
            doc = deps.load(text, "snapshot%s" % where)
        except deps.yaml.YAMLError as exc:
            _fail(where, "malformed YAML: %s" % " ".join(str(exc).split()))
    return check(doc, where)


def load(value):
    """A normalised snapshot from a mapping (Snapshot or cluster_facts result) or a file path."""
    if isinstance(value, dict):
        bounded.check_value(value, "snapshot")  # a mapping given inline: held to the limits a Snapshot file is
        if "measurements" not in value and isinstance(value.get("snapshot"), dict):
            return check(value["snapshot"], " (cluster_facts result)")
        return check(value)
    if isinstance(value, str) and value:
        path = os.path.expanduser(value)
        if not os.path.isfile(path):
            _fail(" %s" % value, "file does not exist (give a Snapshot file, a Snapshot mapping or the result of aicr.runtime.cluster_facts)")
        with open(path, "rb") as handle:
            return parse_text(bounded.read_bounded(handle, "snapshot %s" % value).decode("utf-8"), " %s" % value)
    _fail("", "expected a Snapshot mapping, a cluster_facts result or a file path, got %s" % type(value).__name__)
    return None  # pragma: no cover


def measurement(snap, mtype):
    for m in snap.get("measurements") or []:
        if m.get("type") == mtype:
            return m
    return None


def subtype(meas, name):
    if not meas:
        return None
    for st in meas.get("subtypes") or []:
        if st.get("subtype") == name:
            return st
    return None


def data(snap, mtype, name):
    st = subtype(measurement(snap, mtype), name)
    return (st or {}).get("data") or {}


def match_accelerator(model):
    lower = model.lower()
    for needle, accel in _ACCELERATORS:
        if needle in lower:
            return accel
    return ""


def criteria_from_snapshot(snap, registered=None):
    """{dimension: value} that the snapshot fingerprints (unstated dimensions are absent)."""
    found = {}

    def parse(dim, raw):
        try:
            value = crit.parse_dimension(dim, raw, registered)
        except AicrError:
            return None
        return value if crit.is_stated(value) else None

    for m in snap.get("measurements") or []:
        mtype = m.get("type")
        for st in m.get("subtypes") or []:
            name, values = st.get("subtype"), st.get("data") or {}
            if mtype == "K8s" and name == "server":
                if "service" in values:
                    service = parse("service", reading_string(values["service"]))
                    if service:
                        found["service"] = service
                if "version" in values:
                    version = reading_string(values["version"])
                    for marker, service in _SERVICE_MARKERS:
                        if marker in version:
                            found["service"] = service
                            break
            elif mtype == "GPU" and name in ("smi", "device"):
                accel = match_accelerator(reading_string(values["gpu.model"])) if "gpu.model" in values else ""
                if accel:
                    found["accelerator"] = accel
                if "accelerator" not in found and "model" in values:
                    accel = match_accelerator(reading_string(values["model"]))
                    if accel:
                        found["accelerator"] = accel
            elif mtype == "OS" and name == "release" and "ID" in values:
                os_id = parse("os", reading_string(values["ID"]))
                if os_id:
                    found["os"] = os_id
    return found
