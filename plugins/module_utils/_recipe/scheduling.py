# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Node scheduling written into a component's values as AICR v0.19.0's ``aicr bundle`` writes it.

The registry names, per component, where (``nodeScheduling.system|accelerated.nodeSelectorPaths|tolerationPaths``,
``nodeScheduling.accelerated.taintStrPaths``, ``nodeScheduling.nodeCountPaths``,
``podScheduling.workload.workloadSelectorPaths``); the ``node_scheduling`` option says what (AICR's
``--system-node-selector/-toleration``, ``--accelerated-node-selector/-toleration``, ``--nodes``, ``--workload-gate``,
``--workload-selector``). As the bundler does, in this order:

* tolerations not given are ``[{operator: Exists}]`` (AICR's default, written even with no flag); ``[]`` writes none
  (an extension: AICR cannot express it);
* a selector or toleration path the recipe's own ``overrides`` set to an empty list/mapping/null is left alone (the
  overlay's opt-out); a toleration path they set to a non-empty list gets the tolerations appended; any other path is
  replaced (so a path named by both system and accelerated ends with the accelerated tolerations);
* a selector replaces the mapping at its path; missing or non-mapping parents become mappings;
* the workload gate (a taint ``key=value:effect`` or ``key:effect``) goes as that string to the accelerated
  ``taintStrPaths``, the node count (``nodes`` > 0) as an integer to ``nodeCountPaths``; a path under a non-mapping
  value is skipped there, as AICR's strict ``--set`` path does.

The user's ``component_overrides[].values`` are merged after this (AICR's ``--set-json``: they win).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.values import deep_copy, dotted

KEYS = ("system", "accelerated", "nodes", "workload_gate", "workload_selector")
POOL_KEYS = ("node_selector", "tolerations")
TOLERATION_KEYS = ("key", "operator", "value", "effect", "tolerationSeconds")
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
OPERATORS = ("Exists", "Equal")
DEFAULT_TOLERATIONS = ({"operator": "Exists"},)
MAX_NODES = 100000


def settings(value, field="node_scheduling", problems=None):
    """The checked ``node_scheduling`` option (None: not given) as the engine's settings; every problem added to
    ``problems`` (the caller raises), else raised here as one AicrError naming the field."""
    own = problems if problems is not None else Problems("node_scheduling")
    value = {} if value is None else value
    out = {"nodes": 0, "workload_gate": "", "workload_selector": {}}
    if own.mapping(field, value):
        own.known_keys(field, value, KEYS)
        for pool in ("system", "accelerated"):
            out[pool] = _pool(own, "%s.%s" % (field, pool), value.get(pool))
        nodes = own.number("%s.nodes" % field, value.get("nodes"), default=0, minimum=0, maximum=MAX_NODES, integer=True)
        out["nodes"] = nodes if isinstance(nodes, int) else 0
        gate = value.get("workload_gate")
        if gate not in (None, ""):
            out["workload_gate"] = _taint(own, "%s.workload_gate" % field, gate)
        out["workload_selector"] = _selector(own, "%s.workload_selector" % field, value.get("workload_selector"))
    if problems is None:
        own.raise_if_any()
    return out


def _pool(problems, field, value):
    pool = {"node_selector": {}, "tolerations": [dict(t) for t in DEFAULT_TOLERATIONS]}
    if value is None or not problems.mapping(field, value):
        return pool
    problems.known_keys(field, value, POOL_KEYS)
    pool["node_selector"] = _selector(problems, field + ".node_selector", value.get("node_selector"))
    tolerations = value.get("tolerations")
    if tolerations is None:
        return pool
    if not isinstance(tolerations, list):
        problems.add(field + ".tolerations", "a %s is not allowed; use a list of tolerations (mappings or key=value:effect strings)"
                     % type(tolerations).__name__, value=tolerations)
        return pool
    pool["tolerations"] = [t for t in (_toleration(problems, "%s.tolerations[%d]" % (field, i), item) for i, item in enumerate(tolerations))
                           if t is not None]
    return pool


def _selector(problems, field, value):
    if value is None or not problems.mapping(field, value):
        return {}
    for key, item in value.items():
        if not isinstance(key, str) or not key:
            problems.add(field, "key %r is not allowed; use a non-empty label key" % (key,), value=key)
        elif not isinstance(item, str):
            problems.add("%s.%s" % (field, key), "%r is not allowed; use a string label value" % (item,), value=item)
    return dict(value)


def _toleration(problems, field, value):
    """One toleration as AICR writes it (empty fields left out), from a mapping or AICR's flag syntax."""
    if isinstance(value, str):
        return _toleration_string(problems, field, value)
    if not problems.mapping(field, value):
        return None
    problems.known_keys(field, value, TOLERATION_KEYS)
    out = {}
    for key in ("key", "operator", "value", "effect"):
        item = value.get(key)
        if item in (None, ""):
            continue
        if not isinstance(item, str):
            problems.add("%s.%s" % (field, key), "%r is not allowed; use a string" % (item,), value=item)
            continue
        out[key] = item
    problems.choice(field + ".operator", out.get("operator"), OPERATORS)
    problems.choice(field + ".effect", out.get("effect"), EFFECTS)
    if out.get("operator") == "Exists" and out.get("value"):
        problems.add(field + ".value", "%r is not allowed with operator Exists; leave value out" % out["value"], value=out["value"])
    if not out.get("key") and out.get("operator") != "Exists":
        problems.add(field + ".operator", "a toleration without a key needs operator Exists", value=out.get("operator"), allowed=["Exists"])
    seconds = value.get("tolerationSeconds")
    if seconds is not None:
        seconds = problems.number(field + ".tolerationSeconds", seconds, integer=True)
        if isinstance(seconds, int):
            out["tolerationSeconds"] = seconds
    return out


def _split_taint(problems, field, text):
    """(key, value, effect) of ``key=value:effect`` or ``key:effect``, as AICR's parser splits it; None if refused."""
    parts = text.split(":")
    if len(parts) != 2:
        problems.add(field, "%r is not allowed; use key=value:effect or key:effect" % text, value=text)
        return None
    head, effect = parts
    key, _sep, val = head.partition("=")
    if effect not in EFFECTS:
        problems.add(field, "%r has effect %r; use one of %s" % (text, effect, ", ".join(EFFECTS)), value=text, allowed=list(EFFECTS))
        return None
    return key, val, effect


def _toleration_string(problems, field, text):
    if text == "*":
        return {"operator": "Exists"}
    split = _split_taint(problems, field, text)
    if split is None:
        return None
    key, val, effect = split
    out = {"key": key, "effect": effect} if key else {"effect": effect}
    out.update({"operator": "Equal", "value": val} if val else {"operator": "Exists"})
    return out


def _taint(problems, field, value):
    """The workload gate as AICR's taint string (``key=value:effect`` or ``key:effect``)."""
    if not isinstance(value, str):
        problems.add(field, "a %s is not allowed; use a taint string key=value:effect or key:effect" % type(value).__name__, value=value)
        return ""
    split = _split_taint(problems, field, value)
    if split is None:
        return ""
    key, val, effect = split
    if not key:
        problems.add(field, "%r is not allowed; the taint key cannot be empty" % value, value=value)
        return ""
    return "%s=%s:%s" % (key, val, effect) if val else "%s:%s" % (key, effect)


def _paths(entry, *keys):
    node = entry or {}
    for key in keys:
        node = node.get(key) if isinstance(node, dict) else None
    return [p for p in node or [] if isinstance(p, str) and p]


_MISSING = object()


def _at(values, path):
    return dotted(values, path, _MISSING)


def _parent(values, path, strict=False):
    """The mapping holding ``path``'s last segment, created as needed; None when ``strict`` meets a non-mapping."""
    parts = path.split(".")
    node = values
    for part in parts[:-1]:
        nxt = node.get(part)
        if not isinstance(nxt, dict):
            if strict and part in node:
                return None, parts[-1]
            nxt = node[part] = {}
        node = nxt
    return node, parts[-1]


def _policy(overrides, paths):
    """AICR's per-path classification from the recipe's own overrides: (opt_out, append)."""
    opt_out, append = set(), set()
    for path in paths:
        found = _at(overrides or {}, path)
        if found is _MISSING:
            continue
        if found is None or (isinstance(found, (list, dict)) and not found):
            opt_out.add(path)
        else:
            append.add(path)
    return opt_out, append


def apply(values, entry, overrides, chosen):
    """``values`` (a copy) with the node scheduling ``chosen`` (:func:`settings`) written at the paths the registry
    ``entry`` names; ``overrides`` are the componentRef's own (their opt-outs and appends)."""
    out = deep_copy(values or {})
    if not entry:
        return out
    system_sel, system_tol = _paths(entry, "nodeScheduling", "system", "nodeSelectorPaths"), _paths(entry, "nodeScheduling", "system", "tolerationPaths")
    accel_sel = _paths(entry, "nodeScheduling", "accelerated", "nodeSelectorPaths")
    accel_tol = _paths(entry, "nodeScheduling", "accelerated", "tolerationPaths")
    workload = _paths(entry, "podScheduling", "workload", "workloadSelectorPaths")
    opt_out, append = _policy(overrides, system_sel + system_tol + accel_sel + accel_tol + workload)
    steps = ((system_sel, chosen["system"]["node_selector"], False), (system_tol, chosen["system"]["tolerations"], True),
             (accel_sel, chosen["accelerated"]["node_selector"], False), (accel_tol, chosen["accelerated"]["tolerations"], True),
             (workload, chosen["workload_selector"], False))
    for paths, what, tolerations in steps:
        if not what:
            continue
        for path in paths:
            if path in opt_out:
                continue
            parent, key = _parent(out, path)
            if tolerations and path in append and isinstance(parent.get(key), list):
                parent[key] = parent[key] + deep_copy(list(what))
            else:
                parent[key] = deep_copy(what if not tolerations else list(what))
    if chosen["workload_gate"]:
        _set_scalars(out, _paths(entry, "nodeScheduling", "accelerated", "taintStrPaths"), chosen["workload_gate"])
    if chosen["nodes"] > 0:
        _set_scalars(out, _paths(entry, "nodeScheduling", "nodeCountPaths"), chosen["nodes"])
    return out


def _set_scalars(values, paths, scalar):
    """AICR's ``--set`` path: shallowest first, a path under a non-mapping value skipped."""
    for path in sorted(paths, key=lambda path: (path.count("."), path)):
        parent, key = _parent(values, path, strict=True)
        if parent is not None:
            parent[key] = scalar


GPU_OPERATORS = ("gpu-operator", "gpu-operator-ocp")
DRA_DRIVERS = ("nvidia-dra-driver-gpu", "nvidia-dra-driver-gpu-ocp")
DRA_CHART_VERSION = "aicr.run/gpu-operator-chart-version"


def annotate_dra(values_by_name, versions):
    """AICR's bundle-time pod annotation: with a GPU operator and a DRA driver both enabled (``versions``: each enabled
    component's chart version), the DRA driver's ``controller`` and ``kubeletPlugin`` pods carry the GPU operator's
    chart version, so a GPU operator upgrade re-rolls them. Written last (the user's values cannot remove it)."""
    operator = [name for name in versions if name in GPU_OPERATORS]
    dra = [name for name in versions if name in DRA_DRIVERS]
    if not operator or not dra or not versions[operator[-1]]:
        return
    values = values_by_name.setdefault(dra[-1], {})
    for pod in ("controller", "kubeletPlugin"):
        if not isinstance(values.get(pod), dict):
            values[pod] = {}
        if not isinstance(values[pod].get("podAnnotations"), dict):
            values[pod]["podAnnotations"] = {}
        values[pod]["podAnnotations"][DRA_CHART_VERSION] = versions[operator[-1]]
