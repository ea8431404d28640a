# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Who owns a live object or a helm release: the one rule prune, ``state: absent`` and upgrades apply.

The inventory ConfigMap says what a stack installed, but anyone who may write ConfigMaps in its namespace can edit
it: it only ever *narrows* what is removed. What is removed or changed is decided from the live cluster:

- an object belongs to the stack when it carries the stack's label (``aicr.io/stack``) *and* the collection's field
  manager (``aicr-runtime``) holds fields of it; only such objects are deleted (preconditioned on the uid that was
  checked, so an object re-created meanwhile is not);
- a release belongs to the stack when its latest revision carries the stack's label (a release label, stored on
  helm's release Secret); another stack's release, or one nobody labelled, is neither upgraded nor uninstalled
  unless ``adopt: true``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import FIELD_MANAGER, STACK_LABEL, label_value


def labels_of(live):
    return ((live or {}).get("metadata") or {}).get("labels") or {}


def managed_by_us(live):
    """Whether the collection's field manager holds fields of the live object."""
    return any((entry or {}).get("manager") == FIELD_MANAGER for entry in ((live or {}).get("metadata") or {}).get("managedFields") or [])


def object_owner(live, stack):
    """None when the live object is this stack's (label and field manager); otherwise who it belongs to, as text."""
    owner = labels_of(live).get(STACK_LABEL)
    if owner != label_value(stack):
        return "stack %s" % owner if owner else "nobody (no %s label)" % STACK_LABEL
    if not managed_by_us(live):
        return "another field manager (labelled for stack %s, but %s holds none of its fields)" % (owner, FIELD_MANAGER)
    return None


def release_owner(deployed, stack):
    """None when the deployed release (a ``helm.DeployedRelease``) is this stack's; otherwise who it belongs to, as text."""
    if deployed is None or deployed.stack == label_value(stack):
        return None
    return "stack %s" % deployed.stack if deployed.stack else "nobody (no %s release label)" % STACK_LABEL
