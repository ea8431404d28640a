# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Who owns a live object or a helm release: the one rule prune, ``state: absent`` and upgrades apply.

Labels are data anyone who may write an object can set, so they never *give* a stack anything. Authority comes from
the stack's inventory (``_release.inventory``), a ConfigMap only the collection's identity writes (one another field
manager wrote is not trusted at all); the live cluster can then only take authority away:

- an object is removed only when the inventory lists it, its live uid is the one the stack recorded (an entry from
  before uids were recorded: not checked), it carries the stack's label (``aicr.io/stack``) and the collection's field
  manager (``aicr-runtime``) holds fields of it; the delete is preconditioned on that uid;
- a release is removed only when the inventory lists it (name and namespace) and its latest revision carries the stack's
  label and the digest the stack recorded, and is the release Secret the stack recorded or a newer revision
  (:func:`release_standing`); one that now carries another stack's label was adopted by that stack: it is *released*
  (forgotten with a warning, never uninstalled);
- a release is upgraded only when nothing is deployed under its name, or the inventory lists it and its latest revision
  is still what the stack recorded (the same rule as for removal: ``helm upgrade`` deletes what the stored manifest has
  and the new one lacks), unless ``adopt: true`` (:func:`upgrade_refusal`);
- a release or object labelled for the stack that the inventory does not list is a *foreign claim*: reported
  (:func:`claim`), never removed.

The checks are made again right before each ``helm upgrade``, ``helm uninstall`` and delete, not only at survey time.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.claims import written_by_us
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import FIELD_MANAGER, STACK_LABEL, label_value

# release_standing verdicts
OURS = "ours"            # listed, and the live release is what the stack recorded (or nothing is deployed)
RELEASED = "released"    # listed, but another stack's label is on it now (that stack adopted it)
CHANGED = "changed"      # listed, labelled for this stack, but not the revision/digest the stack recorded
UNRECORDED = "unrecorded"  # labelled for this stack, but the inventory does not list it: a foreign claim
OTHER = "other"          # not listed, and not labelled for this stack (another stack's, or nobody's)


def labels_of(live):
    return ((live or {}).get("metadata") or {}).get("labels") or {}


def object_owner(live, stack):
    """None when the live object is this stack's (label and field manager); otherwise who it belongs to, as text."""
    owner = labels_of(live).get(STACK_LABEL)
    if owner != label_value(stack):
        return "stack %s" % owner if owner else "nobody (no %s label)" % STACK_LABEL
    if not written_by_us(live):
        return "another field manager (labelled for stack %s, but %s holds none of its fields)" % (owner, FIELD_MANAGER)
    return None


def object_refusal(live, ref, stack):
    """None when the inventory ``ref`` may be deleted as the live object ``live``; otherwise why not, as text."""
    owner = object_owner(live, stack)
    if owner is not None:
        return "it belongs to %s" % owner
    uid = (live.get("metadata") or {}).get("uid")
    if ref.get("uid") and uid != ref["uid"]:
        return "it was re-created since stack %s applied it (uid %s, recorded %s)" % (stack, uid, ref["uid"])
    return None


def release_owner(deployed, stack):
    """None when the deployed release (a ``helm.DeployedRelease``) is labelled for this stack; otherwise who it belongs to."""
    if deployed is None or deployed.stack == label_value(stack):
        return None
    return "stack %s" % deployed.stack if deployed.stack else "nobody (no %s release label)" % STACK_LABEL


def release_record(deployed, digest=None):
    """What the inventory records of a release the stack wrote: its Secret's uid, its revision and its digest."""
    return {"uid": getattr(deployed, "uid", None), "revision": deployed.revision, "digest": digest or deployed.digest}


def listed(entry, name, namespace):
    """Whether the inventory entry lists release ``name`` of ``namespace``."""
    return bool(entry) and entry.get("release") == name and (entry.get("namespace") or namespace) == namespace


def release_standing(deployed, entry, stack):
    """``(verdict, text)``: the live release ``deployed`` (latest revision, None when none) against the inventory entry
    that lists it (``entry``: None or an entry that does not list it), for removal.

    An entry's ``release_record`` is ``{uid, revision, digest, next_digest}``; ``next_digest`` is written ahead of an
    upgrade (``Inventory.write_ahead``), so the revision an interrupted run stored is still recognised. An entry without
    a record (written before records existed) is taken as listing the release, with the label as the only live check:
    its name and namespace came from the stack's own inventory, and the record is written the next time the stack
    upgrades it.
    """
    if deployed is None:
        return OURS, "nothing deployed"
    owner = release_owner(deployed, stack)
    where = "%s/%s" % (deployed.namespace, deployed.name)
    if not entry:
        if owner is None:
            return UNRECORDED, "release %s is labelled for stack %s but is not in its inventory" % (where, stack)
        return OTHER, "release %s belongs to %s, not stack %s" % (where, owner, stack)
    if owner is not None:
        if deployed.stack:
            return RELEASED, "released to stack %s" % deployed.stack
        return CHANGED, "release %s no longer carries the label of stack %s (it belongs to %s)" % (where, stack, owner)
    record = entry.get("release_record")
    if not record:
        return OURS, "listed (an inventory entry without a release record: the label is checked)"
    digests = set(d for d in (record.get("digest"), record.get("next_digest")) if d)
    if deployed.digest not in digests:
        return CHANGED, ("release %s revision %s carries digest %s, not the one stack %s recorded (%s)"
                         % (where, deployed.revision, deployed.digest or "none", stack, ", ".join(sorted(digests)) or "none"))
    uid = getattr(deployed, "uid", None)
    if record.get("uid") and uid == record["uid"]:
        return OURS, "the recorded release Secret"
    if deployed.revision > int(record.get("revision") or 0):
        return OURS, "a newer revision with the recorded digest"
    return CHANGED, ("release %s revision %s is not the release Secret stack %s recorded (revision %s)"
                     % (where, deployed.revision, stack, record.get("revision")))


def upgrade_refusal(deployed, entry, stack, adopt):
    """None when ``helm upgrade`` may run over the live release ``deployed``; otherwise ``(verdict, why)``."""
    if deployed is None or adopt:
        return None
    owner = release_owner(deployed, stack)
    if owner is not None:
        return OTHER, "belongs to %s, not stack %s" % (owner, stack)
    if not listed(entry, deployed.name, deployed.namespace):
        return UNRECORDED, "is labelled for stack %s but is not in its inventory (a record anyone may forge)" % stack
    # helm upgrade deletes what the stored manifest has and the new one lacks: a release record rewritten since the
    # stack wrote it (another digest, another Secret) is not upgraded over either
    verdict, why = release_standing(deployed, entry, stack)
    if verdict != OURS:
        return verdict, "is not what stack %s recorded (%s)" % (stack, why)
    return None
