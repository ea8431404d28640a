# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""cluster_facts: what AICR's snapshot measures, read through the Kubernetes API only, in AICR's Snapshot shape.

Readings and where they come from (nothing else is reported; a reading that cannot be seen is absent):

* ``K8s.server``: ``version``, ``platform``, ``goVersion`` from ``GET /version``;
* ``K8s.node`` (the reported nodes, when they agree): ``provider`` / ``provider-id`` (``spec.providerID``),
  ``container-runtime-*``, ``kubelet-version``, ``kernel-version``, ``operating-system``, ``os-image`` (node info);
* ``OS.release``: ``ID``, ``VERSION_ID`` from NFD's ``feature.node.kubernetes.io/system-os_release.*`` labels, else
  from ``osImage`` when it is one of the PRETTY_NAME forms below; ``OS.sysctl./proc/sys/kernel/osrelease`` from
  ``nodeInfo.kernelVersion`` (both are ``uname -r``);
* ``GPU.device``: ``gpu.model`` (``nvidia.com/gpu.product``), ``gpu-count`` (``nvidia.com/gpu`` capacity),
  ``driver`` (``nvidia.com/cuda.driver-version.full``, else ``.major.minor.rev``);
* ``NodeTopology``: ``summary``, ``taint`` (``effect|value|nodes``) and ``label`` (``value|nodes``) over all nodes,
  encoded as AICR v0.19.0's topology collector does: the folded ``data`` and the lossless ``items`` (``_recipe.topology``).

``GPU.device`` is this collection's own reading (AICR's fingerprint reads the product label from ``NodeTopology``
instead; its ``GPU.hardware`` comes from the node's PCI bus, which the API does not show). The Snapshot's apiVersion
is ``aicr.run/v1alpha2``, the one AICR v0.19.0 reads.

The reported nodes are ``nodes`` when given, else those matching ``node_selector``, else the GPU nodes (an
``nvidia.com/gpu`` capacity, or an ``nvidia.com/gpu.present`` / ``cloud.google.com/gke-accelerator`` label), else all
nodes. A per-node reading goes into the snapshot only when every reported node has the same value; otherwise it is
absent and ``conflicts`` says why (a constraint on it then excludes its overlay instead of passing on one node's word).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube import connection as kube_connection
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import FACTS_CONFIGMAP_ROLE, ClusterError, binding_advice
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import constraints as constraints_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import snapshot as snapshot_mod

NFD_OS = "feature.node.kubernetes.io/system-os_release."
GPU_RESOURCE = "nvidia.com/gpu"
GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_MARKERS = ("nvidia.com/gpu.present", "cloud.google.com/gke-accelerator")
DRIVER_FULL = "nvidia.com/cuda.driver-version.full"
DRIVER_PARTS = ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev")
PROVIDERS = {"aws": "eks", "gce": "gke", "azure": "aks", "oci": "oke", "linode": "lke"}

# osImage (os-release PRETTY_NAME) forms whose ID / VERSION_ID are known without reading /etc/os-release.
_OS_IMAGES = (
    (re.compile(r"^Ubuntu (\d+\.\d+)(\.\d+)?( LTS)?$"), "ubuntu", 1),
    (re.compile(r"^Red Hat Enterprise Linux(?: CoreOS)? (\d+(?:\.\d+)?)"), "rhel", 1),
    (re.compile(r"^Amazon Linux (\d+)$"), "amzn", 1),
    (re.compile(r"^Container-Optimized OS from Google$"), "cos", None),
    (re.compile(r"^Talos \(v?(\d+\.\d+\.\d+)\)$"), "talos", 1),
)

CONFIGMAP_KEYS = ("snapshot.yaml", "snapshot.json")


def os_release(node):
    """({ID, VERSION_ID} known for a node, source) - NFD labels first, then a recognised osImage."""
    labels = (node.get("metadata") or {}).get("labels") or {}
    found = {}
    for key in ("ID", "VERSION_ID"):
        if labels.get(NFD_OS + key):
            found[key] = labels[NFD_OS + key]
    if found:
        return found, "nfd-label"
    image = ((node.get("status") or {}).get("nodeInfo") or {}).get("osImage") or ""
    for pattern, os_id, group in _OS_IMAGES:
        m = pattern.match(image)
        if m:
            found = {"ID": os_id}
            if group:
                found["VERSION_ID"] = m.group(group)
            return found, "osImage"
    return {}, None


def node_view(node):
    """The per-node facts (also returned as ``nodes[]``)."""
    meta, status, spec = node.get("metadata") or {}, node.get("status") or {}, node.get("spec") or {}
    info = status.get("nodeInfo") or {}
    labels = meta.get("labels") or {}
    release, source = os_release(node)
    view = {
        "name": meta.get("name") or "",
        "labels": dict(labels),
        "taints": [dict((k, t[k]) for k in ("key", "value", "effect") if t.get(k) is not None) for t in spec.get("taints") or []],
        "os_release": release,
        "os_release_source": source,
        "kernel": info.get("kernelVersion") or "",
        "os_image": info.get("osImage") or "",
        "operating_system": info.get("operatingSystem") or "",
        "container_runtime": info.get("containerRuntimeVersion") or "",
        "kubelet": info.get("kubeletVersion") or "",
        "provider_id": spec.get("providerID") or "",
        "gpu_product": labels.get(GPU_PRODUCT) or "",
        "gpu_count": _int((status.get("capacity") or {}).get(GPU_RESOURCE)),
    }
    driver = labels.get(DRIVER_FULL) or ""
    if not driver and all(labels.get(k) for k in DRIVER_PARTS):
        driver = ".".join(labels[k] for k in DRIVER_PARTS)
    view["gpu_driver"] = driver
    return view


def _int(value):
    try:
        return int(str(value)) if value not in (None, "") else None
    except ValueError:
        return None


def is_gpu_node(view):
    return bool(view["gpu_count"]) or any(view["labels"].get(k) for k in GPU_MARKERS)


def _agreed(views, getter, name, conflicts):
    values = sorted(set(getter(v) for v in views) - {None, ""})
    if len(values) == 1 and all(getter(v) not in (None, "") for v in views):
        return values[0]
    if values:
        conflicts.append({"reading": name, "values": dict((v["name"], getter(v)) for v in views)})
    return None


def _provider(provider_id):
    """AICR's collector: a raw OCI instance OCID is oke, else the provider ID's scheme, the clouds' named as services."""
    if provider_id.startswith("ocid1."):
        return "oke"
    prefix = provider_id.split("://", 1)[0].strip().lower()
    return PROVIDERS.get(prefix, prefix)


def _membership(nodes, map_key, folds):
    """An item's node membership: a reference to its folded ``data`` entry when no other reading folds onto it."""
    if folds[map_key] == 1:
        return {"node-count": len(nodes), "node-list-ref": map_key, "truncated": False}
    return {"node-count": len(nodes), "node-list": ",".join(nodes), "truncated": False}


def _encode(readings, map_key, render, context):
    """(folded data, lossless items) of ``{identity: [nodes]}`` readings, as AICR's topology collector writes them."""
    keys = dict((ident, map_key(ident)) for ident in readings)
    folds = {}
    for key in keys.values():
        folds[key] = folds.get(key, 0) + 1
    data, items = {}, []
    for ident in sorted(readings):
        nodes = sorted(readings[ident])
        data[keys[ident]] = render(ident, ",".join(nodes))
        items.append({"context": context(ident), "data": _membership(nodes, keys[ident], folds)})
    return data, items


def topology(views):
    """AICR's NodeTopology measurement over every node: folded ``data`` and lossless ``items`` (see ``_recipe.topology``)."""
    taints, labels = {}, {}
    for v in views:
        for t in v["taints"]:
            taints.setdefault((t.get("key", ""), t.get("effect", ""), t.get("value", "")), []).append(v["name"])
        for key, value in v["labels"].items():
            labels.setdefault((key, value), []).append(v["name"])
    per_key = {}
    for key, _effect, _value in taints:
        per_key[key] = per_key.get(key, 0) + 1
    taint_data, taint_items = _encode(
        taints, lambda t: "%s.%s" % (t[0], t[1]) if per_key[t[0]] > 1 else t[0],
        lambda t, nodes: "%s|%s" % (t[2], nodes) if per_key[t[0]] > 1 else "%s|%s|%s" % (t[1], t[2], nodes),
        lambda t: {"key": t[0], "value": t[2], "effect": t[1]})
    values = {}
    for key, _value in labels:
        values[key] = values.get(key, 0) + 1
    label_data, label_items = _encode(
        labels, lambda kv: "%s.%s" % kv if values[kv[0]] > 1 else kv[0],
        lambda kv, nodes: "%s|%s" % (kv[1], nodes), lambda kv: {"key": kv[0], "value": kv[1]})
    taint = {"subtype": "taint", "data": taint_data}
    label = {"subtype": "label", "data": label_data}
    if taint_items:
        taint["items"] = taint_items
    if label_items:
        label["items"] = label_items
    return {"type": "NodeTopology", "subtypes": [
        {"subtype": "summary", "data": {"node-count": len(views), "taint-count": len(taint_items), "label-count": len(label_items)}},
        taint, label,
    ]}


def build_snapshot(version, node_objects, nodes=None, node_selector_match=None):
    """(snapshot, reported node views, conflicts) from ``/version`` and the node objects (pure; unit-tested)."""
    views = [node_view(n) for n in node_objects]
    views.sort(key=lambda v: v["name"])
    if nodes:
        known = set(v["name"] for v in views)
        missing = sorted(set(nodes) - known)
        if missing:
            raise AicrError("nodes: node %r not found in the cluster (nodes: %s)" % (missing[0], ", ".join(sorted(known)) or "none"),
                            field="nodes", value=missing[0], allowed=sorted(known))
        chosen = [v for v in views if v["name"] in nodes]
    elif node_selector_match is not None:
        chosen = [v for v in views if v["name"] in node_selector_match]
    else:
        chosen = [v for v in views if is_gpu_node(v)] or views
    conflicts = []
    measurements = []
    server = {}
    for key, field in (("version", "gitVersion"), ("platform", "platform"), ("goVersion", "goVersion")):
        if (version or {}).get(field):
            server[key] = version[field]
    k8s = [{"subtype": "server", "data": server}]
    node_data = {}
    if len(chosen) == 1:
        node_data["source-node"] = chosen[0]["name"]
    for key, getter in (
        ("provider-id", lambda v: v["provider_id"] if len(chosen) == 1 else None),
        ("provider", lambda v: _provider(v["provider_id"]) if v["provider_id"] else None),
        ("container-runtime-id", lambda v: v["container_runtime"]),
        ("container-runtime-name", lambda v: v["container_runtime"].split("://", 1)[0] if "://" in v["container_runtime"] else None),
        ("container-runtime-version", lambda v: v["container_runtime"].split("://", 1)[1] if "://" in v["container_runtime"] else None),
        ("kubelet-version", lambda v: v["kubelet"]),
        ("kernel-version", lambda v: v["kernel"]),
        ("operating-system", lambda v: v["operating_system"]),
        ("os-image", lambda v: v["os_image"]),
    ):
        value = _agreed(chosen, getter, "K8s.node." + key, conflicts)
        if value is not None:
            node_data[key] = value
    if node_data:
        k8s.append({"subtype": "node", "data": node_data})
    measurements.append({"type": "K8s", "subtypes": k8s})

    os_subtypes = []
    release = {}
    for key in ("ID", "VERSION_ID"):
        value = _agreed(chosen, lambda v, k=key: v["os_release"].get(k), "OS.release." + key, conflicts)
        if value is not None:
            release[key] = value
    if release:
        sources = sorted(set(v["os_release_source"] for v in chosen if v["os_release_source"]))
        os_subtypes.append({"subtype": "release", "data": release, "context": {"source": ",".join(sources)}})
    kernel = _agreed(chosen, lambda v: v["kernel"], "OS.sysctl./proc/sys/kernel/osrelease", conflicts)
    if kernel is not None:
        os_subtypes.append({"subtype": "sysctl", "data": {"/proc/sys/kernel/osrelease": kernel}, "context": {"source": "nodeInfo.kernelVersion"}})
    if os_subtypes:
        measurements.append({"type": "OS", "subtypes": os_subtypes})

    gpu_nodes = [v for v in chosen if is_gpu_node(v)]
    gpu = {}
    if gpu_nodes:
        model = _agreed(gpu_nodes, lambda v: v["gpu_product"], "GPU.device.gpu.model", conflicts)
        if model is not None:
            gpu["gpu.model"] = model
        count = _agreed(gpu_nodes, lambda v: v["gpu_count"], "GPU.device.gpu-count", conflicts)
        if count is not None:
            gpu["gpu-count"] = count
        driver = _agreed(gpu_nodes, lambda v: v["gpu_driver"], "GPU.device.driver", conflicts)
        if driver is not None:
            gpu["driver"] = driver
    if gpu:
        measurements.append({"type": "GPU", "subtypes": [{"subtype": "device", "data": gpu, "context": {"source": "node labels and capacity"}}]})
    measurements.append(topology(views))
    snap = snapshot_mod.check({"kind": snapshot_mod.KIND, "apiVersion": snapshot_mod.API_VERSION,
                               "metadata": {"source": "aicr.runtime.cluster_facts"}, "measurements": measurements})
    return snap, chosen, conflicts


def _parse_configmap_ref(ref):
    text = ref[len("cm://"):] if ref.startswith("cm://") else ref
    parts = [p.strip() for p in text.split("/")]
    if len(parts) != 2 or not all(parts):
        raise AicrError("from_configmap: %r is not namespace/name (or cm://namespace/name)" % ref, field="from_configmap", value=ref)
    return parts[0], parts[1]


def read_configmap_snapshot(client, ref, warnings=None):
    namespace, name = _parse_configmap_ref(ref)
    where = " (ConfigMap %s/%s)" % (namespace, name)
    try:
        cm = client.get("v1", "ConfigMap", name, namespace)
    except ClusterError as exc:
        # aicr-runtime:facts grants no ConfigMaps (it is bound cluster-wide for nodes): say which role to bind where
        advice, rbac = binding_advice(exc, FACTS_CONFIGMAP_ROLE, namespace)
        if not advice:
            raise
        raise AicrError("from_configmap: this identity may not read ConfigMap %s/%s; %s - %s" % (namespace, name, advice, exc.msg),
                        field="from_configmap", value=ref, status=403, **rbac)
    if cm is None:
        raise AicrError("from_configmap: ConfigMap %s/%s not found" % (namespace, name), field="from_configmap", value=ref)
    data = cm.get("data") or {}
    for key in CONFIGMAP_KEYS:
        if data.get(key):
            return snapshot_mod.parse_text(data[key], where, warnings)
    raise AicrError("from_configmap: ConfigMap %s/%s has no %s key" % (namespace, name, " or ".join(CONFIGMAP_KEYS)),
                    field="from_configmap", value=ref, allowed=list(CONFIGMAP_KEYS))


def _match_selector(client, selector):
    return set((n.get("metadata") or {}).get("name") for n in client.list("v1", "Node", label_selector=selector))


_SET_REQUIREMENT = re.compile(r"^\s*(\S+)\s+(in|notin)\s+\(([^()]*)\)\s*$")
_EQUALITY = re.compile(r"^\s*([^!=\s]+)\s*(==|=|!=)\s*([^=\s]*)\s*$")


def selector_problem(selector):
    """What is wrong with a label selector (Kubernetes' syntax: ``key``, ``!key``, ``key=value``, ``key==value``,
    ``key!=value``, ``key in (a,b)``, ``key notin (a,b)``, comma-separated), or None."""
    requirements, depth, current = [], 0, ""
    for char in str(selector):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if char == "," and depth == 0:
            requirements.append(current)
            current = ""
        else:
            current += char
    requirements.append(current)
    for requirement in requirements:
        text = requirement.strip()
        in_set, equality = _SET_REQUIREMENT.match(text), _EQUALITY.match(text)
        if in_set:
            key, values = in_set.group(1), [v.strip() for v in in_set.group(3).split(",")]
        elif equality:
            key, values = equality.group(1), [equality.group(3)]
        else:
            key, values = text[1:].strip() if text.startswith("!") else text, []
        if not constraints_mod.valid_label_key(key) or not all(constraints_mod.valid_label_value(v) for v in values):
            return "requirement %r is not a label key with an optional =, ==, != value or in/notin (values) set" % text
    return None


def check_params(params):
    """cluster_facts' one validation pass, before the cluster is reached or a file read: node names (DNS-1123
    subdomains), the label selector, the ConfigMap reference (namespace/name); every problem in ``errors``."""
    problems = Problems("cluster_facts")
    nodes = params.get("nodes")
    if nodes is not None and not isinstance(nodes, (list, tuple)):
        problems.add("nodes", "a %s is not allowed; use a list of node names" % type(nodes).__name__)
    for index, node in enumerate(nodes if isinstance(nodes, (list, tuple)) else []):
        problems.name("nodes[%d]" % index, node, "dns-subdomain")
    selector = params.get("node_selector")
    if selector not in (None, ""):
        problem = selector_problem(selector) if isinstance(selector, str) else "a %s is not a label selector" % type(selector).__name__
        if problem:
            problems.add("node_selector", "%r: %s; allowed: a label selector such as nvidia.com/gpu.present=true" % (selector, problem), value=selector)
    if params.get("from_configmap"):
        try:
            namespace, name = _parse_configmap_ref(params["from_configmap"])
        except AicrError as exc:
            problems.extend(exc)
        else:
            problems.name("from_configmap", namespace)  # the namespace: a DNS-1123 label
            problems.name("from_configmap", name, "dns-subdomain")
    problems.raise_if_any()


def _result(snap, source, nodes=None, conflicts=None, warnings=None):
    out = {"changed": False, "snapshot": snap, "source": source, "nodes": nodes or [], "conflicts": conflicts or [],
           "criteria": snapshot_mod.criteria_from_snapshot(snap)}
    if warnings:
        out["warnings"] = warnings
    return out


def collect(params):
    """The module's result (see plugins/modules/cluster_facts.py RETURN)."""
    check_params(params)
    warnings = []
    if params.get("from_file"):
        return _result(snapshot_mod.load(params["from_file"], warnings), "file", warnings=warnings)
    conn = kube_connection.resolve(params.get("kubeconfig"), params.get("context"))
    client = conn.client()
    # A failed request raises the client's ClusterError (an AicrError): one line with the API server's reason.
    if params.get("from_configmap"):
        return _result(read_configmap_snapshot(client, params["from_configmap"], warnings), "configmap", warnings=warnings)
    version = client.get_path("/version") or {}
    node_objects = client.list("v1", "Node")
    selected = _match_selector(client, params["node_selector"]) if params.get("node_selector") else None
    snap, chosen, conflicts = build_snapshot(version, node_objects, params.get("nodes"), selected)
    return _result(snap, "cluster", chosen, conflicts)
