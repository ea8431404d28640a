# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The inventory of a stack: which objects and release each component owns - the one source of authority for ``prune``
and ``state: absent`` (``_release.ownership``).

One ConfigMap ``aicr-runtime-<stack>-inventory`` in the lease namespace; ``data.inventory`` is JSON::

    {components: {name: {namespace, dependencies,
                         release: name | null,
                         release_record: {uid, revision, digest, next_digest?, lastKnownGood?: {revision, digest}},
                         objects: [{id, apiVersion, kind, namespace, name, wave, uid?, digest?}],
                         chart_crds?: [CRD names]}},
     order: [names]}

``release_record`` is the helm release Secret the stack last wrote (its uid and revision) and the ``aicr.io/digest`` it
carries; ``lastKnownGood`` the latest revision of it that passed its gate (Ready and its health check) in a run of the
stack - what ``on_failure: rollback`` goes back to (``_release.rollback``); an object's ``uid`` and ``digest`` (sha256 of
the body applied) are what the stack last applied. ``chart_crds`` names the CRDs of the component's chart the stack has
applied (``chart_crds: managed``, ``_release.chartcrds``): a record to show, never an object list - prune and ``state:
absent`` never delete a CRD (every custom resource of its kind would go with it), and a name stays recorded while the
component does.

- Only the collection's field manager (``aicr-runtime``) writes it: a ConfigMap of that name whose fields that manager
  holds none of, or whose ``data.inventory`` another manager wrote (an edit), is not trusted - a warning, and the run
  takes it as no inventory (nothing is removed on its word; it is neither read nor deleted). What the stack installed
  is then a foreign claim until a run with ``adopt: true`` records it again.
- Written ahead (:meth:`Inventory.write_ahead`): what a component is about to install or apply is recorded *before* it
  is (the release with ``next_digest``, objects without their uid), so a run interrupted afterwards, or whose final write
  fails, leaves its objects known; entries are dropped only after their removal succeeded (:meth:`Inventory.record`).
- Read backwards: an inventory written before records existed has ``release: name`` without ``release_record`` and
  objects without ``uid``. Such entries are trusted for *what* they name (the stack wrote them) and checked live the way
  they were before: the release must carry the stack's label, the object the label and the field manager; they get
  their record the next time the stack installs or applies them. Nothing is added to an entry on a run that changes
  nothing, so such an inventory is not rewritten by a no-op run.
- Written only when it changes, so a no-op run writes nothing.
- Removed again by a run that created it and installed nothing (:meth:`Inventory.discard`, ``_release.scratch``): it then
  only promises what never happened. When something was installed it stays: it is the record of what the stack owns.
- A 403 on it names the verb, the namespace and the Role to bind there (``aicr-runtime:lease``, as for the Lease).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import json
import threading

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded
from ansible_collections.aicr.runtime.plugins.module_utils._common.claims import data_written_by_us, managers_of
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import FAILED, FIELD_MANAGER, READY, UNCHANGED, fit_name, managed_labels
from ansible_collections.aicr.runtime.plugins.module_utils._kube.deadline import bookkeeping
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import LEASE_ROLE, ClusterError, refusal
from ansible_collections.aicr.runtime.plugins.module_utils._release.scheduler import OK


LAST_KNOWN_GOOD = "lastKnownGood"


def object_digest(body):
    """sha256 of an object's body as the stack applies it (the inventory's ``digest`` of an object)."""
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode("utf-8")).hexdigest()


class Inventory(object):
    """One stack's inventory ConfigMap, read and written through the cluster client."""

    def __init__(self, cluster, stack, namespace):
        self.cluster = cluster
        self.stack = stack
        self.namespace = namespace
        self.name = fit_name("aicr-runtime-", stack, "-inventory", limit=63)  # one inventory per stack, even when cut
        self.components = {}  # what was read, plus what this run wrote ahead
        self.order = []
        self.loaded = {}  # what was read: what ownership is decided from (not what this run wrote ahead)
        self.found = False
        self.untrusted = False
        self.present = False  # a ConfigMap of its name existed when it was last read (trusted or not)
        self.created = None  # (uid, resourceVersion) of the ConfigMap as this run last wrote it, when this run created it
        self._lock = threading.Lock()

    def _refused(self, exc):
        """A 403 on the inventory: the Role to bind in its namespace (the Lease's); any other error as it is."""
        return refusal(exc, "inventory", LEASE_ROLE, self.namespace, "lease_namespace", inventory="%s/%s" % (self.namespace, self.name)) or exc

    def _call(self, method, *args, **kwargs):
        try:
            return getattr(self.cluster, method)(*args, **kwargs)
        except ClusterError as exc:
            raise self._refused(exc)

    def entry(self, name):
        return self.components.get(name) or {}

    def loaded_entry(self, name):
        return self.loaded.get(name) or {}

    def objects_of(self, name):
        return self.entry(name).get("objects") or []

    def load(self, note, warn=None):
        """Read the ConfigMap (``note(text)`` is told when it is unreadable and ignored; ``warn(text)`` when someone else wrote it)."""
        self.components, self.order, self.loaded, self.found, self.untrusted = {}, [], {}, False, False
        cm = self._call("get", "v1", "ConfigMap", self.name, self.namespace)
        self.present = cm is not None
        if cm is None:
            return
        if not data_written_by_us(cm, "inventory"):
            self.untrusted = True
            (warn or note)("inventory ConfigMap %s/%s was not written by %s (field managers: %s): not trusted, taken as no inventory "
                           "(nothing is removed on its word; a run with adopt: true records the stack's releases and objects again)"
                           % (self.namespace, self.name, FIELD_MANAGER, ", ".join(managers_of(cm)) or "none"))
            return
        try:
            loaded = bounded.load_json((cm.get("data") or {}).get("inventory") or "{}", "inventory ConfigMap %s/%s" % (self.namespace, self.name))
            self.components, self.order = dict(loaded.get("components") or {}), list(loaded.get("order") or [])
            self.loaded = copy.deepcopy(self.components)
            self.found = True
        except (ValueError, AttributeError, TypeError):  # not JSON, or not the document's shape
            note("inventory ConfigMap %s/%s is unreadable; ignored" % (self.namespace, self.name))

    def _document(self):
        return {"components": self.components, "order": self.order}

    def save(self, components, order):
        """Write the inventory when it differs from what was read (or last written)."""
        new = json.dumps({"components": components, "order": order}, sort_keys=True)
        if json.dumps(self._document(), sort_keys=True) == new and self.found:
            return
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": self.name, "namespace": self.namespace, "labels": managed_labels(self.stack)},
                "data": {"inventory": new}}
        written = self._call("apply", body)
        meta = (written or {}).get("metadata") or {}
        if not self.present or self.created is not None:
            self.created = (meta.get("uid"), meta.get("resourceVersion"))
        self.components, self.order, self.found, self.untrusted, self.present = components, order, True, False, True

    def delete(self):
        if self.found:
            self._call("delete", "v1", "ConfigMap", self.name, self.namespace)

    def discard(self):
        """Remove the ConfigMap this run created (a run that installed nothing): only as this run last wrote it (uid and
        resourceVersion preconditions) and only while the collection alone wrote it; True when it was removed."""
        if self.created is None:
            return False
        uid, version = self.created
        live = self._call("get", "v1", "ConfigMap", self.name, self.namespace)
        if live is None or (live.get("metadata") or {}).get("uid") != uid or managers_of(live) != [FIELD_MANAGER]:
            return False
        self.created = None
        removed = self._call("delete", "v1", "ConfigMap", self.name, self.namespace, uid=uid, resource_version=version)
        self.components, self.order, self.found, self.present = {}, [], False, False
        return removed

    def write_ahead(self, comp, deployed=None, next_digest=None, refs=()):
        """Record, before it happens, that component ``comp`` is about to install its release (``next_digest``: the digest
        it will carry; ``deployed``: the release it replaces, already checked to be this stack's) and to create or apply
        ``refs`` (``[(ref, action)]``). Written only when that adds something."""
        with self._lock:
            prev = self.components.get(comp.name) or {}
            entry = dict(prev, namespace=comp.namespace, dependencies=list(comp.gate))
            entry.setdefault("release", None)
            if next_digest is not None:
                if deployed is not None:
                    record = {"uid": getattr(deployed, "uid", None), "revision": deployed.revision, "digest": deployed.digest}
                else:
                    record = dict(prev.get("release_record") or {"uid": None, "revision": 0, "digest": None})
                record["next_digest"] = next_digest
                good = last_known_good(prev)
                if good is not None:
                    record[LAST_KNOWN_GOOD] = good
                entry["release"], entry["release_record"] = comp.name, record
            objects = list(prev.get("objects") or [])
            index = dict((r.get("id"), i) for i, r in enumerate(objects))
            for ref, action in refs:
                if ref["id"] not in index:
                    index[ref["id"]] = len(objects)
                    objects.append(ref)
                elif action == "create":  # a new object: the uid recorded earlier is no longer its uid
                    objects[index[ref["id"]]] = ref
            entry["objects"] = objects
            if entry == prev:
                return
            components = dict(self.components)
            components[comp.name] = entry
            self.save(components, self.order + ([comp.name] if comp.name not in self.order else []))

    def record(self, plan, states, leftovers, outcomes, state, prune):
        """After a run: forget what was removed, remember what each component now owns (present) or drop it all (absent).
        Even after the run's deadline: what the run did is recorded."""
        with bookkeeping("the inventory's record"):
            self._record(plan, states, leftovers, outcomes, state, prune)

    def _record(self, plan, states, leftovers, outcomes, state, prune):
        if state == "absent":
            if all(o.status == OK for o in outcomes.values()):
                self.delete()
            return
        components = dict(self.components)
        for name, _entry in leftovers:
            if outcomes.get(name) is not None and outcomes[name].status == OK:
                components.pop(name, None)
        for name in plan.order:
            st = states[name]
            if st.phase not in (READY, UNCHANGED, FAILED):
                continue
            components[name] = entry_of(st, components.get(name) or {}, prune)
        order = [n for n in plan.order if n in components] + [n for n in self.order if n in components and n not in plan.order]
        self.save(components, order)


def last_known_good(entry):
    """``{revision, digest}`` of the release revision of an inventory entry that last passed its gate; None: unknown."""
    good = (entry.get("release_record") or {}).get(LAST_KNOWN_GOOD)
    return dict(good) if isinstance(good, dict) and good.get("revision") else None


def good_after(st, prev):
    """The ``lastKnownGood`` of a component after the run (``prev``: its inventory entry before): the release revision
    this run installed when it then passed its gate (Ready, health check passed) and was not rolled back, else the one
    recorded before (None: none)."""
    if st.phase == READY and st.release_record is not None and (st.rolled_back or {}).get("status") != "rolled_back":
        return {"revision": st.release_record.get("revision"), "digest": st.release_record.get("digest")}
    return last_known_good(prev)


def recorded_crds(st, prev):
    """The chart CRDs recorded for a component after the run: those recorded before (``prev``: its inventory entry) and
    those this run applied - sorted names."""
    return sorted(set(prev.get("chart_crds") or []) | set(st.chart_crds))


def entry_of(st, prev, prune):
    """A component's inventory entry after the run: what it applied now (with uid and digest), what it rendered and the
    inventory knew already (as it was), what it no longer renders unless pruned (and everything known when it failed);
    its release and record when this stack installed it or owned it before, none when the release is not this stack's."""
    comp = st.comp
    known = dict((r.get("id"), r) for r in prev.get("objects") or [])
    refs = []
    for ref in st.object_refs():
        applied = st.applied.get(ref["id"])
        if applied is not None:
            refs.append(dict(ref, **applied))
        elif ref["id"] in known:
            refs.append(known[ref["id"]])
        # else: rendered, never applied by this stack: another's object it does not vouch for (a foreign claim if labelled)
    if not prune or st.phase == FAILED:
        ids = set(r.get("id") for r in refs)
        refs.extend(r for r in known.values() if r.get("id") not in ids)
    entry = {"namespace": comp.namespace, "release": None, "dependencies": list(comp.gate), "objects": refs}
    crds = recorded_crds(st, prev)
    if crds:
        entry["chart_crds"] = crds
    if not comp.manifest_only:
        if st.release_record is not None:
            record = dict(st.release_record)
            good = good_after(st, prev)
            if good is not None:
                record[LAST_KNOWN_GOOD] = good
            entry["release"], entry["release_record"] = comp.name, record
        elif not st.release_foreign and prev.get("release") == comp.name:
            entry["release"] = comp.name
            if prev.get("release_record"):
                entry["release_record"] = prev["release_record"]
    return entry
