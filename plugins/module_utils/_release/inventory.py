# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The inventory of a stack: which objects (and release) each component owns, for ``prune`` and ``state: absent``.

One ConfigMap ``aicr-runtime-<stack>-inventory`` in the lease namespace; ``data.inventory`` is JSON
``{components: {name: {namespace, release, dependencies, objects: [refs]}}, order: [names]}``. It is written only
when it changes, so a no-op run writes nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import FAILED, READY, UNCHANGED, managed_labels, slug
from ansible_collections.aicr.runtime.plugins.module_utils._release.scheduler import OK


class Inventory(object):
    """One stack's inventory ConfigMap, read and written through the cluster client."""

    def __init__(self, cluster, stack, namespace):
        self.cluster = cluster
        self.stack = stack
        self.namespace = namespace
        self.name = ("aicr-runtime-%s-inventory" % slug(stack))[:63]
        self.components = {}
        self.order = []
        self.found = False

    def entry(self, name):
        return self.components.get(name) or {}

    def objects_of(self, name):
        return self.entry(name).get("objects") or []

    def load(self, note):
        """Read the ConfigMap (``note(text)`` is told when it is unreadable and ignored)."""
        cm = self.cluster.get("v1", "ConfigMap", self.name, self.namespace)
        if cm is None:
            return
        try:
            loaded = bounded.load_json((cm.get("data") or {}).get("inventory") or "{}", "inventory ConfigMap %s/%s" % (self.namespace, self.name))
            self.components, self.order = dict(loaded.get("components") or {}), list(loaded.get("order") or [])
            self.found = True
        except ValueError:
            note("inventory ConfigMap %s/%s is unreadable; ignored" % (self.namespace, self.name))

    def _document(self):
        return {"components": self.components, "order": self.order}

    def save(self, components, order):
        """Write the inventory when it differs from what was read."""
        new = json.dumps({"components": components, "order": order}, sort_keys=True)
        if json.dumps(self._document(), sort_keys=True) == new and self.found:
            return
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": self.name, "namespace": self.namespace, "labels": managed_labels(self.stack)},
                "data": {"inventory": new}}
        self.cluster.apply(body)
        self.components, self.order, self.found = components, order, True

    def delete(self):
        if self.found:
            self.cluster.delete("v1", "ConfigMap", self.name, self.namespace)

    def record(self, plan, states, leftovers, outcomes, state, prune):
        """After a run: forget what was removed, remember what each component now owns (present) or drop it all (absent)."""
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
            refs = st.object_refs()
            if not prune or st.phase == FAILED:
                known = set(r["id"] for r in refs)
                refs.extend(r for r in st.stale_objects if r.get("id") not in known)
            components[name] = {"namespace": st.comp.namespace, "release": None if st.comp.manifest_only else name,
                                "dependencies": list(st.comp.gate), "objects": refs}
        order = [n for n in plan.order if n in components] + [n for n in self.order if n in components and n not in plan.order]
        self.save(components, order)
