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

Stack names and the names derived from them (:func:`stack_name_problem`, :func:`check_stack_name`,
:func:`fit_name`, :func:`label_value`): a stack name is a DNS-1123 label, so it is its own label value and every
name built from it is injective - where a derived name must be cut to fit a length limit, it ends in a hash of the
whole stack name, and a cut name is always exactly as long as the limit, which no uncut name is.

Phases: a component of a rollout (:data:`COMPONENT_RESULT_PHASES`, the ``phase`` of every gated_release
component result), a component in a ClusterStack's status (:data:`COMPONENT_PHASES`, ``Unchanged`` reads as
``Ready`` there: :data:`STATUS_PHASE_OF`) and a ClusterStack (:data:`STACK_PHASES`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import NAME_RULES, name_problem
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

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
# where a stack's ConfigMaps (the ConfigMap store, device records, Lease, inventory) live unless told otherwise: the
# collection's own namespace, never ``default``, where any tenant may be allowed to write ConfigMaps
STACK_NAMESPACE = "aicr-system"
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
_LABEL_VALUE = re.compile(r"^([A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?)?$")
_NON_ALNUM = re.compile(r"[^a-z0-9]+")

STACK_NAME_ALLOWED = NAME_RULES["dns-label"][3]  # a DNS-1123 label: lowercase letters, digits and '-', ... at most 63 characters
NAME_HASH_LENGTH = 10  # hex digits of sha256 (40 bits): what a cut name ends in


def stack_name_problem(value):
    """What is wrong with ``value`` as a stack name (None when it is a DNS-1123 label of at most 63 characters).

    Every name the collection derives from a stack (labels, Leases, inventory, device records, stack ConfigMaps) is
    injective only because the stack name itself needs no folding: ``gpu prod``, ``gpu/prod`` and ``GPU-prod`` are refused
    instead of all becoming ``gpu-prod``."""
    return name_problem(value, "dns-label")


def check_stack_name(field, value):
    """``value`` when it is a valid stack name; else an ``AicrError`` naming ``field``, the value and what is allowed."""
    problem = stack_name_problem(value)
    if problem is not None:
        shown = repr(value)
        if len(shown) > 100:  # the message stays readable whatever was given; details keep the value
            shown = "%s... (%d characters)" % (shown[:60], len(value) if isinstance(value, str) else len(shown))
        raise AicrError("%s: %s %s; allowed: %s" % (field, shown, problem, STACK_NAME_ALLOWED), field=field, value=value)
    return value


def name_hash(text):
    """The short hash a cut name ends in: the first :data:`NAME_HASH_LENGTH` hex digits of sha256 of the whole ``text``."""
    return hashlib.sha256(str(text).encode("utf-8")).hexdigest()[:NAME_HASH_LENGTH]


def fit_name(prefix, text, suffix="", limit=63):
    """``prefix + text + suffix`` when shorter than ``limit``; else ``text`` cut and followed by ``-<hash of text>`` so the
    name is exactly ``limit`` long.

    Injective for a fixed prefix and suffix: uncut names are distinct and shorter than ``limit``, cut names are exactly
    ``limit`` long (so no uncut name, however chosen, equals one) and differ by the hash of the whole text. The one way
    a name derived from a stack is cut - Leases, the inventory, device records all use it."""
    full = "%s%s%s" % (prefix, text, suffix)
    if len(full) < limit:
        return full
    keep = limit - len(prefix) - len(suffix) - NAME_HASH_LENGTH - 1
    if keep < 1:
        raise ValueError("fit_name: prefix %r and suffix %r leave no room within %d characters" % (prefix, suffix, limit))
    # a DNS label may have '-' inside ("ab--<hash>"), so the cut is never trimmed: trimming would make it shorter than limit
    return "%s%s-%s%s" % (prefix, str(text)[:keep], name_hash(text), suffix)


def managed_labels(stack=None):
    """``app.kubernetes.io/managed-by: aicr-runtime`` plus, with ``stack``, ``aicr.io/stack: <label value of stack>``."""
    labels = {MANAGED_BY_LABEL: MANAGED_BY}
    if stack is not None:
        labels[STACK_LABEL] = label_value(stack)
    return labels


def label_value(text):
    """``text`` itself when it is a valid label value (every valid stack name is); else a valid label value made from it:
    characters outside ``[A-Za-z0-9._-]`` become ``-``, and it ends in a hash of the whole ``text`` (:func:`fit_name`),
    so ``a b`` and ``a/b`` (component names, object ids) no longer share one value."""
    text = str(text)
    if len(text) <= 63 and _LABEL_VALUE.match(text):
        return text
    cleaned = _LABEL_UNSAFE.sub("-", text).strip("-_.") or "x"
    hashed = "-" + name_hash(text)
    return cleaned[:63 - len(hashed)].rstrip("-_.") + hashed


def slug(text):
    """Lowercase; runs of non-alphanumerics -> ``-``; leading/trailing ``-`` trimmed (never for a name derived from a stack:
    it folds ``A``/``a`` and ``.``/``_``/``-``, see :func:`fit_name`)."""
    return _NON_ALNUM.sub("-", str(text).lower()).strip("-")
