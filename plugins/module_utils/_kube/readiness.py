# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""kstatus-like readiness predicates: is a live object *current*?

``assess(obj)`` returns ``(state, reason)`` where state is ``READY``, ``PENDING``
(still converging, keep waiting) or ``FAILED`` (terminal: a failed Job, a
``Stalled`` condition). The rules follow sigs.k8s.io/cli-utils kstatus:
the controller must have observed the latest generation, then per kind:

- Deployment: updated, ready and available replicas equal the desired count, and
  no ``Progressing=False`` (deadline exceeded);
- StatefulSet: ready/updated replicas equal the desired count, current revision is
  the update revision (RollingUpdate);
- DaemonSet: its controller has reported (observedGeneration), and desired == updated == available (== ready) pods;
- ReplicaSet: ready/available replicas equal the desired count;
- Job: condition ``Complete`` True (``Failed`` True is terminal);
- Pod: phase Succeeded, or condition ``Ready`` True (phase Failed is terminal);
- PersistentVolumeClaim: phase Bound;
- CustomResourceDefinition: ``Established`` True (``NamesAccepted`` False is terminal);
- Namespace: phase Active (or no phase yet reported);
- any other object with ``status.conditions``: ``Ready`` True when a Ready condition
  exists, ``Stalled`` True is terminal, ``Reconciling`` True is pending;
- everything else (Service, ConfigMap, Secret, RBAC, webhooks, ...) is current as
  soon as it exists.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

READY = "Ready"
PENDING = "Pending"
FAILED = "Failed"


def _conditions(obj):
    status = obj.get("status") or {}
    found = {}
    for cond in status.get("conditions") or []:
        if isinstance(cond, dict) and cond.get("type"):
            found[cond["type"]] = cond
    return found


def _cond_is(conds, ctype, value):
    cond = conds.get(ctype)
    return cond is not None and str(cond.get("status")) == value


def _cond_msg(conds, ctype):
    cond = conds.get(ctype) or {}
    return cond.get("message") or cond.get("reason") or ""


def _int(value, default=0):
    try:
        return int(value)
    except (TypeError, ValueError):
        return default


def _generation_observed(obj):
    meta = obj.get("metadata") or {}
    status = obj.get("status") or {}
    generation = meta.get("generation")
    observed = status.get("observedGeneration")
    if generation is None or observed is None:
        return True
    return _int(observed) >= _int(generation)


def _replicas_wanted(obj):
    spec = obj.get("spec") or {}
    return _int(spec.get("replicas"), 1) if spec.get("replicas") is not None else 1


def _shortfall(want, unit, *counts):
    """``(PENDING, "<have> of <want> <unit> <what>")`` for the first ``(have, what)`` below ``want``; None when none is."""
    for have, what in counts:
        if have < want:
            return PENDING, "%d of %d %s %s" % (have, want, unit, what)
    return None


def _terminating(status, want):
    """``(PENDING, "<n> old replicas pending termination")`` while the controller still counts more replicas than are
    wanted (kstatus: ``status.replicas > spec.replicas``): a scale-down is not done - the pods it removes may still be
    counted ready, and a health check run now would read them. None otherwise."""
    total = _int(status.get("replicas"))
    if total > want:
        return PENDING, "%d old replicas pending termination" % (total - want)
    return None


def _deployment(obj, conds):
    status = obj.get("status") or {}
    want = _replicas_wanted(obj)
    if _cond_is(conds, "Progressing", "False") and (conds["Progressing"].get("reason") == "ProgressDeadlineExceeded"):
        return FAILED, "progress deadline exceeded: %s" % _cond_msg(conds, "Progressing")
    updated = _int(status.get("updatedReplicas"))
    total = _int(status.get("replicas"))
    if updated < want:
        return _shortfall(want, "replicas", (updated, "updated"))
    if total > updated:
        return PENDING, "%d old replicas pending termination" % (total - updated)
    return _terminating(status, want) \
        or _shortfall(want, "replicas", (_int(status.get("readyReplicas")), "ready"), (_int(status.get("availableReplicas")), "available")) \
        or (READY, "%d replicas available" % want)


def _statefulset(obj, conds):
    status = obj.get("status") or {}
    spec = obj.get("spec") or {}
    want = _replicas_wanted(obj)
    ready = _int(status.get("readyReplicas"))
    if ready < want:
        return PENDING, "%d of %d replicas ready" % (ready, want)
    terminating = _terminating(status, want)
    if terminating:
        return terminating
    strategy = (spec.get("updateStrategy") or {}).get("type", "RollingUpdate")
    if strategy == "RollingUpdate":
        updated = _int(status.get("updatedReplicas"), want) if "updatedReplicas" in status else want
        if updated < want:
            return PENDING, "%d of %d replicas updated" % (updated, want)
        current, update = status.get("currentRevision"), status.get("updateRevision")
        if current and update and current != update:
            return PENDING, "revision %s rolling out" % update
    return READY, "%d replicas ready" % want


def _daemonset(obj, conds):
    status = obj.get("status") or {}
    # The API server stores a new DaemonSet with zero counts already filled in (desiredNumberScheduled 0 ...): until
    # its controller reports an observedGeneration those zeros say nothing, and would read as "0 of 0 pods ready".
    if "desiredNumberScheduled" not in status or "observedGeneration" not in status:
        return PENDING, "no status reported by its controller yet"
    desired = _int(status.get("desiredNumberScheduled"))
    return _shortfall(desired, "pods", (_int(status.get("updatedNumberScheduled")), "updated"), (_int(status.get("numberAvailable")), "available"),
                      (_int(status.get("numberReady")), "ready")) or (READY, "%d pods available" % desired)


def _replicaset(obj, conds):
    status = obj.get("status") or {}
    want = _replicas_wanted(obj)
    ready = _int(status.get("readyReplicas"))
    available = _int(status.get("availableReplicas"))
    if ready < want or available < want:
        return PENDING, "%d of %d replicas available" % (min(ready, available), want)
    return _terminating(status, want) or (READY, "%d replicas available" % want)


def _job(obj, conds):
    if _cond_is(conds, "Failed", "True"):
        return FAILED, "job failed: %s" % _cond_msg(conds, "Failed")
    if _cond_is(conds, "Complete", "True"):
        return READY, "job complete"
    status = obj.get("status") or {}
    return PENDING, "job not complete (%d succeeded, %d active)" % (_int(status.get("succeeded")), _int(status.get("active")))


def _pod(obj, conds):
    phase = (obj.get("status") or {}).get("phase")
    if phase == "Succeeded":
        return READY, "pod succeeded"
    if phase == "Failed":
        return FAILED, "pod failed"
    if _cond_is(conds, "Ready", "True"):
        return READY, "pod ready"
    return PENDING, "pod %s, not ready" % (phase or "Pending")


def _pvc(obj, conds):
    phase = (obj.get("status") or {}).get("phase")
    if phase == "Bound":
        return READY, "bound"
    return PENDING, "claim %s" % (phase or "Pending")


def _crd(obj, conds):
    if _cond_is(conds, "NamesAccepted", "False"):
        return FAILED, "names not accepted: %s" % _cond_msg(conds, "NamesAccepted")
    if _cond_is(conds, "Established", "True"):
        return READY, "established"
    return PENDING, "not established yet"


def _namespace(obj, conds):
    phase = (obj.get("status") or {}).get("phase")
    if phase in (None, "Active"):
        return READY, "active"
    return PENDING, "namespace %s" % phase


def _generic(obj, conds):
    if _cond_is(conds, "Stalled", "True"):
        return FAILED, "stalled: %s" % _cond_msg(conds, "Stalled")
    if "Ready" in conds:
        if _cond_is(conds, "Ready", "True"):
            return READY, "Ready condition True"
        return PENDING, "Ready condition %s%s" % (conds["Ready"].get("status"), (": " + _cond_msg(conds, "Ready")) if _cond_msg(conds, "Ready") else "")
    if _cond_is(conds, "Reconciling", "True"):
        return PENDING, "reconciling: %s" % _cond_msg(conds, "Reconciling")
    return READY, "current"


_BY_KIND = {
    ("apps", "Deployment"): _deployment,
    ("apps", "StatefulSet"): _statefulset,
    ("apps", "DaemonSet"): _daemonset,
    ("apps", "ReplicaSet"): _replicaset,
    ("batch", "Job"): _job,
    ("", "Pod"): _pod,
    ("", "PersistentVolumeClaim"): _pvc,
    ("", "Namespace"): _namespace,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): _crd,
}

# Kinds that are current as soon as they exist, whatever their status says.
_IMMEDIATE = frozenset(["Service", "ConfigMap", "Secret", "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding", "Endpoints"])


def group_of(api_version):
    """``apps/v1`` -> ``apps``; ``v1`` -> ``""``."""
    return api_version.split("/", 1)[0] if "/" in (api_version or "") else ""


def assess(obj):
    """Return ``(state, reason)`` for a live object (``None`` = not found)."""
    if obj is None:
        return PENDING, "not found"
    kind = obj.get("kind") or ""
    if (obj.get("metadata") or {}).get("deletionTimestamp"):
        return PENDING, "being deleted"
    if kind in _IMMEDIATE:
        return READY, "exists"
    if not _generation_observed(obj):
        return PENDING, "generation %s not yet observed (observed %s)" % (obj["metadata"].get("generation"), obj["status"].get("observedGeneration"))
    conds = _conditions(obj)
    predicate = _BY_KIND.get((group_of(obj.get("apiVersion")), kind), _generic)
    return predicate(obj, conds)
