# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""AICR's ``Snapshot`` shape (``pkg/snapshotter``, ``pkg/measurement``): reading, checking, criteria from it.

A snapshot is ``{kind: Snapshot, apiVersion, metadata, measurements: [{type, subtypes: [{subtype, data, context,
items}]}]}``; ``type`` is ``K8s``, ``GPU``, ``OS``, ``SystemD``, ``NodeTopology`` (or another type AICR's collectors
write, kept but not read) and ``data`` maps a key to a scalar reading. :func:`load` accepts a Snapshot mapping, the
result of ``aicr.runtime.cluster_facts`` (its ``snapshot`` key), or the path of a YAML/JSON file AICR's agent (or
``cluster_facts``) wrote. A document that is not a snapshot fails closed, as AICR's loader does: a wrong ``kind``
or no usable measurement would otherwise read as an empty cluster and resolve a fallback recipe.

The apiVersion is ``aicr.run/v1alpha2`` (AICR v0.19.0's ``pkg/header``, which refuses any other). Snapshots this
collection wrote before, as ``aicr.nvidia.com/v1alpha1``, are still read (same measurements) with a warning.

:func:`fingerprint` is AICR v0.19.0's ``pkg/fingerprint`` (``FromMeasurements`` + ``ToCriteria``), see its docstring.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded, deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import criteria as crit
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import topology

KIND = "Snapshot"
API_VERSION = "aicr.run/v1alpha2"
LEGACY_API_VERSION = "aicr.nvidia.com/v1alpha1"
TYPES = ("K8s", "GPU", "OS", "SystemD", "NodeTopology", "NetworkTopology")

GPU_PRODUCT_LABEL = "nvidia.com/gpu.product"
# Product-name token runs -> accelerator (AICR's SKU table): whole tokens only, so an L40S is not an L40, a GH200 not an
# H200, an RTX A1000 not an A100. Products it does not list (T4, A800, GH200) fingerprint no accelerator.
_SKU_TOKENS = ((("GB300",), "gb300"), (("GB200",), "gb200"), (("B200",), "b200"), (("H100",), "h100"), (("H200",), "h200"),
               (("A100",), "a100"), (("RTX", "PRO", "6000"), "rtx-pro-6000"), (("L40S",), "l40s"), (("L40",), "l40"))
_TOKEN_SEPARATORS = re.compile(r"[\s-]+")
# The accelerators a PCI-discovered model may stand for (AICR's built-in accelerator list, not the catalog's).
PCI_ACCELERATORS = ("a100", "b200", "gb200", "gb300", "h100", "h200", "l40", "l40s", "rtx-pro-6000")
# /etc/os-release ID -> the OS criteria value; an ID not listed fingerprints no OS.
_OS_IDS = {"ubuntu": "ubuntu", "rhel": "rhel", "redhatenterpriselinux": "rhel", "redhat": "rhel", "cos": "cos",
           "amazonlinux": "amazonlinux", "amzn": "amazonlinux", "amazon": "amazonlinux", "al2": "amazonlinux",
           "al2023": "amazonlinux", "ol": "ol", "talos": "talos"}
NOTE_MULTI_GPU = "multi-gpu"
NOTE_UNKNOWN_SKU = "unknown-sku"


def _fail(where, msg):
    raise AicrError("snapshot%s: %s" % (where, msg), field="snapshot")


def _subtype(where, i, j, st):
    if not isinstance(st, dict) or not isinstance(st.get("data") or {}, dict) or not isinstance(st.get("items") or [], list):
        _fail(where, "measurements[%d].subtypes[%d] must be a mapping with a data mapping (and an items list)" % (i, j))
    entry = {"subtype": str(st.get("subtype") or ""), "data": dict((str(k), v) for k, v in (st.get("data") or {}).items())}
    if st.get("context"):
        entry["context"] = dict(st["context"])
    if st.get("items"):
        entry["items"] = [dict((k, dict(v)) for k, v in item.items() if k in ("context", "data") and isinstance(v, dict))
                          for item in st["items"] if isinstance(item, dict)]
    return entry


def check(doc, where="", warnings=None):
    """A normalised copy of a Snapshot mapping; raises AicrError naming the first problem.

    As AICR's loader: a ``kind`` other than Snapshot, an apiVersion it does not read, or no measurement with a type
    fails; measurements without a type are left out. ``aicr.nvidia.com/v1alpha1`` (this collection's former version)
    is read as ``aicr.run/v1alpha2``, with a line appended to ``warnings``.
    """
    if not isinstance(doc, dict):
        _fail(where, "expected a Snapshot mapping (kind: Snapshot, measurements: [...]), got %s" % type(doc).__name__)
    kind = doc.get("kind") or ""
    if kind not in ("", KIND):
        _fail(where, "document has kind %r, expected %r" % (kind, KIND))
    if not kind and "measurements" not in doc:  # {a: 1} would read as an empty snapshot and resolve a fallback recipe
        _fail(where, "not a Snapshot: neither kind: Snapshot nor measurements; allowed: a Snapshot (kind: Snapshot, measurements: [...]) "
                     "or the result of aicr.runtime.cluster_facts")
    api_version = doc.get("apiVersion") or ""
    if api_version == LEGACY_API_VERSION:
        if warnings is not None:
            warnings.append("snapshot%s: apiVersion %s is the former version of this collection's snapshots; read as %s, "
                            "which AICR v0.19.0 requires (write it again with aicr.runtime.cluster_facts)" % (where, api_version, API_VERSION))
    elif api_version not in ("", API_VERSION):
        _fail(where, "unsupported apiVersion %r (expected %s, or %s)" % (api_version, API_VERSION, LEGACY_API_VERSION))
    raw = doc.get("measurements")
    if raw is None:
        raw = []
    if not isinstance(raw, list):
        _fail(where, "measurements must be a list, got %s" % type(raw).__name__)
    measurements = []
    for i, m in enumerate(raw):
        if m is None or (isinstance(m, dict) and not m.get("type")):
            continue  # AICR ignores nil and typeless entries
        if not isinstance(m, dict) or not isinstance(m["type"], str):
            _fail(where, "measurements[%d] must be a mapping with a type (one of %s), got %r" % (i, ", ".join(TYPES), m))
        subtypes = [_subtype(where, i, j, st) for j, st in enumerate(m.get("subtypes") or [])]
        measurements.append({"type": m["type"], "subtypes": subtypes})
    if not measurements:
        _fail(where, "contains no usable measurements and is not a valid snapshot (a measurement needs a type: %s)" % ", ".join(TYPES))
    out = {"kind": KIND, "apiVersion": API_VERSION, "measurements": measurements}
    if doc.get("metadata"):
        out["metadata"] = dict(doc["metadata"])
    return out


def parse_text(text, where, warnings=None):
    """A snapshot from YAML or JSON text (a ConfigMap's ``snapshot.yaml`` / ``snapshot.json``, or a file)."""
    try:
        doc = bounded.load_json(text, "snapshot%s" % where)
    except ValueError:
        deps.require("PyYAML", "to read a Snapshot written as YAML", field="snapshot")
        try:
            doc = deps.load(text, "snapshot%s" % where)
        except deps.yaml.YAMLError as exc:
            _fail(where, "malformed YAML: %s" % " ".join(str(exc).split()))
    return check(doc, where, warnings)


def load(value, warnings=None):
    """A normalised snapshot from a mapping (Snapshot or cluster_facts result) or a file path."""
    if isinstance(value, dict):
        bounded.check_value(value, "snapshot")  # a mapping given inline: held to the limits a Snapshot file is
        if "measurements" not in value and isinstance(value.get("snapshot"), dict):
            return check(value["snapshot"], " (cluster_facts result)", warnings)
        return check(value, "", warnings)
    if isinstance(value, str) and value:
        path = os.path.expanduser(value)
        if not os.path.isfile(path):
            _fail(" %s" % value, "file does not exist (give a Snapshot file, a Snapshot mapping or the result of aicr.runtime.cluster_facts)")
        with open(path, "rb") as handle:
            return parse_text(bounded.read_bounded(handle, "snapshot %s" % value).decode("utf-8"), " %s" % value, warnings)
    _fail("", "expected a Snapshot mapping, a cluster_facts result or a file path, got %s" % type(value).__name__)
    return None  # pragma: no cover


def measurement(snap, mtype, last=False):
    """The first (or ``last``) measurement of a type, or None."""
    found = None
    for m in snap.get("measurements") or []:
        if m.get("type") == mtype:
            if not last:
                return m
            found = m
    return found


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


# -- the fingerprint ---------------------------------------------------------------------------------------------------

def gpu_sku(product):
    """The accelerator a GPU product name (``NVIDIA-H100-80GB-HBM3``, ``NVIDIA H100 80GB HBM3``) names, or ""."""
    tokens = [t for t in _TOKEN_SEPARATORS.split(product.upper()) if t]
    for run, sku in _SKU_TOKENS:
        width = len(run)
        if any(tuple(tokens[i:i + width]) == run for i in range(len(tokens) - width + 1)):
            return sku
    return ""


def service_of(provider):
    """``K8s.node.provider`` as a service: the collector's names pass through, raw OCI and Linode provider IDs map."""
    if provider.startswith(("ocid1.", "oci://")) or provider == "oci":
        return "oke"
    if provider.startswith("linode://") or provider == "linode":
        return "lke"
    return provider


def _string(values, key):
    """A reading that is a string (AICR's ``GetString``: another type reads as absent)."""
    value = (values or {}).get(key)
    return value if isinstance(value, str) else None


def _integer(values, key):
    """A reading that is an integer (AICR's ``GetInt64``: an integral float counts, a bool does not)."""
    value = (values or {}).get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not value.is_integer():
        return None
    return int(value)


def _gpu_products(labels):
    """(distinct nvidia.com/gpu.product values, several) from a NodeTopology label subtype, either encoding."""
    if labels.get("items"):
        try:
            readings = topology.label_readings(labels)
        except ValueError:
            return [], False  # undecodable: the fingerprint is advisory and leaves the dimension empty
        values = sorted(set(r.value for r in readings if r.key == GPU_PRODUCT_LABEL))
        return values, len(values) > 1
    values = labels.get("data") or {}
    if sum(1 for key in values if key.startswith(GPU_PRODUCT_LABEL + ".")) > 1:
        return [], True
    raw = _string(values, GPU_PRODUCT_LABEL)
    return ([raw.split("|", 1)[0]] if raw else []), False


def fingerprint(snap):
    """AICR's ``FromMeasurements``: {service, accelerator, gpu_model, os, os_version, nodes, notes, sources}.

    * service: ``K8s.node.provider`` (a string), raw OCI/Linode provider IDs mapped to oke/lke;
    * accelerator: the ``nvidia.com/gpu.product`` label over the nodes (``NodeTopology.label``): one product's SKU;
      several products leave it empty (note ``multi-gpu``), an unknown one too (``unknown-sku``); else the PCI model
      of ``GPU.hardware`` when it is one of AICR's accelerators;
    * os: ``OS.release.ID`` folded onto the OS values (``amzn`` -> amazonlinux, ``redhat`` -> rhel);
    * nodes: ``NodeTopology.summary.node-count`` (every node, not only GPU ones).
    """
    found = {"service": "", "accelerator": "", "gpu_model": "", "os": "", "os_version": "", "nodes": 0, "notes": {}, "sources": {}}
    topo = gpu = None
    for m in snap.get("measurements") or []:
        mtype = m.get("type")
        if mtype == "K8s":
            provider = _string(subtype(m, "node") and subtype(m, "node").get("data"), "provider")
            if provider:
                found["service"], found["sources"]["service"] = service_of(provider), "k8s.node.provider"
        elif mtype == "OS":
            release = (subtype(m, "release") or {}).get("data")
            os_id = _OS_IDS.get((_string(release, "ID") or "").strip().lower(), "") if release is not None else ""
            if os_id:
                found["os"], found["os_version"], found["sources"]["os"] = os_id, _string(release, "VERSION_ID") or "", "os.release"
        elif mtype == "NodeTopology":
            count = _integer((subtype(m, "summary") or {}).get("data"), "node-count")
            if count is not None:
                found["nodes"], found["sources"]["nodes"] = count, "nodeTopology.summary.node-count"
            topo = m
        elif mtype == "GPU":
            gpu = m
    labels = subtype(topo, "label") if topo else None
    if labels is not None:
        products, several = _gpu_products(labels)
        source = "nodeTopology.label." + GPU_PRODUCT_LABEL
        if several:
            found["notes"]["accelerator"], found["sources"]["accelerator"] = NOTE_MULTI_GPU, source
        elif products:
            sku = gpu_sku(products[0])
            found["accelerator"], found["sources"]["accelerator"] = sku, source
            if not sku:
                found["notes"]["accelerator"] = NOTE_UNKNOWN_SKU
    model = _string((subtype(gpu, "hardware") or {}).get("data"), "model") if gpu else None
    if model:
        found["gpu_model"] = model
        if not found["accelerator"] and found["notes"].get("accelerator") != NOTE_MULTI_GPU:
            if model in PCI_ACCELERATORS:
                found["accelerator"], found["sources"]["accelerator"] = model, "gpu.hardware.model"
                found["notes"].pop("accelerator", None)
            elif not found["notes"].get("accelerator"):
                found["notes"]["accelerator"], found["sources"]["accelerator"] = NOTE_UNKNOWN_SKU, "gpu.hardware.model"
    return found


def criteria_from_snapshot(snap, registered=None):
    """{dimension: value, nodes} that the snapshot fingerprints, as AICR's ``ToCriteria`` (unstated ones absent).

    A fingerprinted value the criteria do not know (a provider ``openstack``, ``aws`` as a bare name) is left out.
    """
    found = fingerprint(snap)
    out = {}
    for dim in ("service", "accelerator", "os"):
        try:
            value = crit.parse_dimension(dim, found[dim], registered)
        except AicrError:
            continue
        if crit.is_stated(value):
            out[dim] = value
    if found["nodes"] > 0:
        out["nodes"] = found["nodes"]
    return out
