# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Foreign claims: objects that say they are a stack's (by a label or a data field) but that the collection did not
write under the stack's own name - reported, never acted on.

Labels and data are anyone's to set who may write the object. What the collection trusts of its own ConfigMaps
(the ConfigMap stack store, fabric device records, the orphan ledger) is the exact name it derives from the stack
and its field manager (``aicr-runtime``) among the object's ``managedFields``. Everything else that claims a stack
becomes one :func:`foreign_claim` - one shape for every engine's ``foreign_claims`` and its ``foreign claim:`` warning.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import FIELD_MANAGER


def managers_of(obj):
    """The field managers of ``obj`` (``metadata.managedFields[].manager``), sorted and unique."""
    entries = ((obj or {}).get("metadata") or {}).get("managedFields") or []
    return sorted(set(str(m.get("manager")) for m in entries if isinstance(m, dict) and m.get("manager")))


def written_by_us(obj):
    """Whether the collection's field manager holds fields of ``obj``."""
    return FIELD_MANAGER in managers_of(obj)


def not_ours(obj):
    """The reason ``obj`` is not the collection's (its field managers), or None when it is."""
    if written_by_us(obj):
        return None
    return "was not written by %s (field managers: %s)" % (FIELD_MANAGER, ", ".join(managers_of(obj)) or "none")


def foreign_claim(kind, obj, claims, reason):
    """``{kind, namespace, name, claims, reason, managers, message}``: ``claims`` is the stack the object claims (``""``
    when none), ``message`` the warning - ``foreign claim: <kind> <namespace>/<name> (claims stack <s>) <reason>; ignored``."""
    meta = (obj or {}).get("metadata") or {}
    where = "%s/%s" % (meta.get("namespace"), meta.get("name")) if meta.get("namespace") else str(meta.get("name"))
    claims = str(claims or "")
    return {"kind": kind, "namespace": meta.get("namespace"), "name": meta.get("name"), "claims": claims, "reason": reason,
            "managers": managers_of(obj),
            "message": "foreign claim: %s %s%s %s; ignored" % (kind, where, " (claims stack %s)" % claims if claims else "", reason)}
