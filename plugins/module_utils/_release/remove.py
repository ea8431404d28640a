# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Removing what a stack deployed: ``state: absent`` (everything, in reverse dependency order) and ``prune``.

One component: its post objects, its release (``helm uninstall``), its pre objects, each waited for until gone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import REMOVED, UNCHANGED
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube import wait
from ansible_collections.aicr.runtime.plugins.module_utils._release.helm import read_release
from ansible_collections.aicr.runtime.plugins.module_utils._release.ownership import object_owner, release_owner


class Remove(object):
    """The remove section of :class:`~.engine.GatedRelease` (a mixin)."""

    def _exists(self, ref):
        return self.cluster.get(ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace")) is not None

    def _delete_refs(self, comp, refs, deadline):
        """Delete the objects of ``refs`` that the live cluster says are this stack's (``ownership.object_owner``); the
        others are left alone, with a warning naming their owner, whatever the inventory says."""
        gone = []
        for ref in refs:
            live = self.cluster.get(ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace"))
            if live is None:
                continue
            owner = object_owner(live, self.opts.stack)
            if owner is not None:
                self._warn("left %s %s/%s alone: the inventory lists it for component %s, but it belongs to %s, not stack %s"
                           % (ref["kind"], ref.get("namespace") or "-", ref["name"], comp if isinstance(comp, str) else comp.name, owner, self.opts.stack))
                self._action("leave %s %s/%s alone (belongs to %s)" % (ref["kind"], ref.get("namespace") or "-", ref["name"], owner))
                continue
            uid = (live.get("metadata") or {}).get("uid")
            if self.cluster.delete(ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace"), uid=uid):
                self._action("delete %s (%s %s/%s)" % (ref.get("id") or ref["name"], ref["kind"], ref.get("namespace") or "-", ref["name"]))
                gone.append(ref)
        who = comp if isinstance(comp, str) else comp.name
        left = [gone]

        def all_gone():
            left[0] = [r for r in left[0] if self._exists(r)]
            return not left[0]

        if gone:
            wait.until(all_gone, deadline, self.opts.poll_interval, clock=self.clock, sleep=self.sleep, on_timeout=lambda: AicrError(
                "component %s: timed out waiting for %s %s to be deleted" % (who, left[0][0]["kind"], left[0][0]["name"])))
        return bool(refs)

    def _remove(self, name, entry, overall_deadline):
        """Remove one component: post objects, release, pre objects; wait until gone."""
        st = self.states[name]

        def work(deadline):
            refs = dict((r["id"], r) for r in entry.get("objects") or [])
            for ref in st.object_refs():
                refs.setdefault(ref["id"], ref)
            post = [r for r in refs.values() if r.get("wave", "post") == "post" and self._exists(r)]
            pre = [r for r in refs.values() if r.get("wave") == "pre" and self._exists(r)]
            if post:
                self._delete_refs(name, post, deadline)
                st.changed = True
            release = entry.get("release")
            namespace = entry.get("namespace") or st.comp.namespace
            deployed = read_release(self.cluster, release, namespace) if release else None
            owner = release_owner(deployed, self.opts.stack)
            if owner is not None and not self.opts.adopt:
                raise AicrError("component %s: release %s/%s belongs to %s, not stack %s: it is not uninstalled (set adopt: true to remove it anyway)"
                                % (name, namespace, release, owner, self.opts.stack), component=name, owner=owner)
            if deployed is not None:
                self.helm.uninstall(release, namespace, timeout=max(1, deadline - self.clock()))
                self._action("uninstall %s (namespace %s)" % (release, namespace))
                st.changed = True
                wait.until(lambda: read_release(self.cluster, release, namespace) is None, deadline, self.opts.poll_interval, clock=self.clock,
                           sleep=self.sleep, on_timeout=lambda: AicrError("component %s: timed out waiting for release %s to be uninstalled" % (name, release)))
            if pre:
                self._delete_refs(name, pre, deadline)
                st.changed = True
            st.phase = REMOVED if st.changed else UNCHANGED
            st.message = "removed" if st.changed else "nothing deployed"

        return self._step(st, overall_deadline, work)

    def _removal_entries(self, include_plan):
        """{name: inventory-like entry} of what to remove, and the removal DAG."""
        entries, deps = {}, {}
        order = []
        if include_plan:
            for name in self.plan.order:
                st = self.states[name]
                entry = dict(self.inventory.entry(name))
                entry.setdefault("namespace", st.comp.namespace)
                if not st.comp.manifest_only:
                    entry["release"] = name
                entries[name] = entry
                order.append(name)
            rev = self.plan.reverse_deps()
            for name in order:
                deps[name] = list(rev[name])
        for name, entry in self.leftovers:
            entries[name] = entry
            order.append(name)
            deps[name] = []
        # leftovers: dependents among leftovers go first
        for name, entry in self.leftovers:
            for dep in entry.get("dependencies") or []:
                if dep in deps and dep != name and name not in deps[dep]:
                    deps[dep].append(name)
        return order, entries, deps
