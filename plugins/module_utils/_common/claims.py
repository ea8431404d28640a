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


def data_written_by_us(obj, key):
    """Whether the collection's field manager wrote ``data.<key>`` of the ConfigMap ``obj``: it holds fields of it, and no
    other manager owns that key (``managedFields[].fieldsV1``; an entry without ``fieldsV1`` owns nothing known) - a
    ``kubectl edit`` of the key by anyone else makes the whole document untrusted."""
    if not written_by_us(obj):
        return False
    for entry in ((obj or {}).get("metadata") or {}).get("managedFields") or []:
        owned = (((entry or {}).get("fieldsV1") or {}).get("f:data") or {})
        if (entry or {}).get("manager") != FIELD_MANAGER and "f:%s" % key in owned:
            return False
    return True


def not_ours(obj):
    """The reason ``obj`` is not the collection's (its field managers), or None when it is."""
    if written_by_us(obj):
        return None
    return "was not written by %s (field managers: %s)" % (FIELD_MANAGER, ", ".join(managers_of(obj)) or "none")


def claim(kind, namespace, name, claims_stack, reason, api_version=None, managers=None, message=None):
    """The one shape of a ``foreign_claims`` entry, in every engine: ``{kind, apiVersion (objects), namespace, name,
    claims_stack, reason, managers (when read from a live object), message}``. ``claims_stack`` is the stack the object
    claims (``""`` when none); ``message`` the warning, by default ``foreign claim: <kind> <namespace>/<name> (claims
    stack <s>) <reason>; ignored``."""
    claims_stack = str(claims_stack or "")
    found = {"kind": kind, "namespace": namespace, "name": name, "claims_stack": claims_stack, "reason": reason}
    if api_version:
        found["apiVersion"] = api_version
    if managers is not None:
        found["managers"] = managers
    where = "%s/%s" % (namespace, name) if namespace else str(name)
    found["message"] = message or "foreign claim: %s %s%s %s; ignored" % (
        kind, where, " (claims stack %s)" % claims_stack if claims_stack else "", reason)
    return found


def foreign_claim(kind, obj, claims_stack, reason):
    """:func:`claim` of the live object ``obj`` (its namespace, name and field managers)."""
    meta = (obj or {}).get("metadata") or {}
    return claim(kind, meta.get("namespace"), meta.get("name"), claims_stack, reason, managers=managers_of(obj))
