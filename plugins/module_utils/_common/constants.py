# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Names the collection writes on cluster objects, and the phases it reports, each defined once.

Labels and annotations:

- ``aicr.io/stack``, ``aicr.io/component``, ``aicr.io/object-id``, ``aicr.io/digest``: what a rollout
  (gated_release) puts on the helm releases, manifest objects, Lease and inventory ConfigMap of a stack;
- ``runtime.aicr.io/stack``: the ConfigMap that *stores* an inventory-declared stack (stack_status
  ``backend=configmap``); a different label because it names a different thing (the ConfigMap is the stack);
- ``app.kubernetes.io/managed-by: aicr-runtime`` on everything the collection creates (manifest objects,
  Leases, inventory and stack ConfigMaps, generated CRDs); ``app.kubernetes.io/part-of: aicr-runtime`` on
  the ClusterStack CRD.

Phases: a component of a rollout (:data:`COMPONENT_RESULT_PHASES`, the ``phase`` of every gated_release
component result), a component in a ClusterStack's status (:data:`COMPONENT_PHASES`, ``Unchanged`` reads as
``Ready`` there: :data:`STATUS_PHASE_OF`) and a ClusterStack (:data:`STACK_PHASES`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

FIELD_MANAGER = "aicr-runtime"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "aicr-runtime"
PART_OF_LABEL = "app.kubernetes.io/part-of"
PART_OF = "aicr-runtime"
APP_COMPONENT_LABEL = "app.kubernetes.io/component"  # fabric_device's record ConfigMaps: fabric-devices, fabric-orphans

STACK_LABEL = "aicr.io/stack"
COMPONENT_LABEL = "aicr.io/component"
OBJECT_ID_LABEL = "aicr.io/object-id"
DIGEST_LABEL = "aicr.io/digest"
CHART_LABEL = "aicr.io/chart"
HOLDER_MESSAGE_ANNOTATION = "aicr.io/holder-message"

STACK_STORE_LABEL = "runtime.aicr.io/stack"
RECONCILE_ANNOTATION = "runtime.aicr.io/reconcile-requested"

# gated_release component phases
PENDING = "Pending"
BLOCKED = "Blocked"
DEPLOYING = "Deploying"
READY = "Ready"
FAILED = "Failed"
UNCHANGED = "Unchanged"
REMOVED = "Removed"
COMPONENT_RESULT_PHASES = (PENDING, BLOCKED, DEPLOYING, READY, FAILED, UNCHANGED, REMOVED)

# ClusterStack status: components[].phase, and how a component result's phase reads there
COMPONENT_PHASES = (PENDING, BLOCKED, DEPLOYING, READY, FAILED, REMOVED)
STATUS_PHASE_OF = dict((phase, READY if phase == UNCHANGED else phase) for phase in COMPONENT_RESULT_PHASES)

# ClusterStack status.phase
RESOLVING = "Resolving"
ATTACHING = "Attaching"
DEGRADED = "Degraded"
STACK_PHASES = (PENDING, RESOLVING, ATTACHING, DEPLOYING, READY, DEGRADED, FAILED)

_LABEL_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")


def managed_labels(stack=None):
    """``app.kubernetes.io/managed-by: aicr-runtime`` plus, with ``stack``, ``aicr.io/stack: <label value of stack>``."""
    labels = {MANAGED_BY_LABEL: MANAGED_BY}
    if stack is not None:
        labels[STACK_LABEL] = label_value(stack)
    return labels


def label_value(text):
    """A valid label value (<= 63 chars, alphanumeric ends) derived from ``text``."""
    value = _LABEL_UNSAFE.sub("-", str(text))[:63]
    return value.strip("-_.")


def slug(text):
    """Lowercase; runs of non-alphanumerics -> ``-``; leading/trailing ``-`` trimmed."""
    return _NON_ALNUM.sub("-", str(text).lower()).strip("-")
