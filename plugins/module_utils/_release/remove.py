# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Removing what a stack deployed: ``state: absent`` (everything, in reverse dependency order) and ``prune``.

One component: its post objects, its release (``helm uninstall``), its pre objects, each waited for until gone. Only
what the stack's inventory lists, and only while the live cluster still holds what the stack recorded
(``_release.ownership``, checked right before each delete and uninstall); ``adopt`` never widens what is removed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.claims import claim
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import REMOVED, STACK_LABEL, UNCHANGED, label_value
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube import wait
from ansible_collections.aicr.runtime.plugins.module_utils._helm.storage import read_release
from ansible_collections.aicr.runtime.plugins.module_utils._release.ownership import (
    OURS, RELEASED, labels_of, listed, object_refusal, release_standing,
)


class Remover(object):
    """Removal for one run (``ctx``: a ``context.RunContext``): components, leftovers, and the objects a component no
    longer renders (``prune``)."""

    def __init__(self, ctx):
        self.ctx = ctx

    def _exists(self, ref):
        return self.ctx.cluster.get(ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace")) is not None

    def delete_refs(self, comp, refs, deadline):
        """Delete the objects of ``refs`` (inventory refs) that are still what this stack recorded (``ownership.object_refusal``:
        its uid, label and field manager, read right before the delete, which is preconditioned on that uid); the others
        are left alone, with a warning saying why, whatever the inventory says."""
        gone = []
        who = comp if isinstance(comp, str) else comp.name
        for ref in refs:
            live = self.ctx.cluster.get(ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace"))
            if live is None:
                continue
            why = object_refusal(live, ref, self.ctx.opts.stack)
            if why is not None:
                self.ctx.warn("left %s %s/%s alone: the inventory lists it for component %s, but %s; stack %s does not delete it"
                              % (ref["kind"], ref.get("namespace") or "-", ref["name"], who, why, self.ctx.opts.stack))
                self.ctx.action("leave %s %s/%s alone (%s)" % (ref["kind"], ref.get("namespace") or "-", ref["name"], why))
                continue
            uid = (live.get("metadata") or {}).get("uid")
            if self.ctx.cluster.delete(ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace"), uid=uid):
                self.ctx.action("delete %s (%s %s/%s)" % (ref.get("id") or ref["name"], ref["kind"], ref.get("namespace") or "-", ref["name"]))
                gone.append(ref)
        left = [gone]

        def all_gone():
            left[0] = [r for r in left[0] if self._exists(r)]
            return not left[0]

        if gone:
            wait.until(all_gone, deadline, self.ctx.opts.poll_interval, clock=self.ctx.clock, sleep=self.ctx.sleep, on_timeout=lambda: AicrError(
                "component %s: timed out waiting for %s %s to be deleted" % (who, left[0][0]["kind"], left[0][0]["name"])))
        return bool(gone)

    def _unrecorded_objects(self, name, refs):
        """Rendered objects the inventory does not list (``state: absent``): never deleted; one labelled for this stack is
        a foreign claim."""
        for ref in refs:
            live = self.ctx.cluster.get(ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace"))
            if live is not None and labels_of(live).get(STACK_LABEL) == label_value(self.ctx.opts.stack):
                where = "%s %s/%s" % (ref["kind"], ref.get("namespace") or "-", ref["name"])
                self.ctx.claim(claim(ref["kind"], ref.get("namespace"), ref["name"], label_value(self.ctx.opts.stack),
                                     "labelled for stack %s but not in its inventory" % self.ctx.opts.stack, api_version=ref["apiVersion"]),
                               "%s (component %s) is labelled for stack %s but is not in its inventory; it is not deleted" % (where, name, self.ctx.opts.stack))

    def _remove_release(self, name, entry, st, deadline):
        """Uninstall the component's release when the inventory lists it and its latest revision, read right before
        ``helm uninstall``, is still what this stack recorded (``ownership.release_standing``); never otherwise: one another
        stack adopted is forgotten (released), one labelled for this stack without the record is a foreign claim."""
        release = entry.get("release") or entry.get("planned_release")
        if not release:
            return
        namespace = entry.get("namespace") or st.comp.namespace
        deployed = read_release(self.ctx.cluster, release, namespace)
        if deployed is None:
            return
        verdict, why = release_standing(deployed, entry if listed(entry, release, namespace) else None, self.ctx.opts.stack)
        where = "%s/%s" % (namespace, release)
        if verdict == OURS:
            self.ctx.helm.uninstall(release, namespace, timeout=max(1, deadline - self.ctx.clock()))
            self.ctx.action("uninstall %s (namespace %s)" % (release, namespace))
            st.changed = True
            wait.until(lambda: read_release(self.ctx.cluster, release, namespace) is None, deadline, self.ctx.opts.poll_interval, clock=self.ctx.clock,
                       sleep=self.ctx.sleep, on_timeout=lambda: AicrError("component %s: timed out waiting for release %s to be uninstalled" % (name, release)))
            return
        if verdict == RELEASED:
            text = "release %s: %s (it carries that stack's label now); stack %s forgets it and does not uninstall it" % (where, why, self.ctx.opts.stack)
            self.ctx.warn(text)
            self.ctx.action("forget release %s (%s)" % (where, why))
        elif deployed.stack == label_value(self.ctx.opts.stack):  # UNRECORDED, or CHANGED: labelled for this stack, not vouched for
            self.ctx.claim(claim("release", namespace, release, label_value(self.ctx.opts.stack), why), "%s; it is not uninstalled" % why)
            self.ctx.action("leave release %s alone (%s)" % (where, why))
        else:
            self.ctx.warn("left release %s alone: %s; stack %s does not uninstall it" % (where, why, self.ctx.opts.stack))
            self.ctx.action("leave release %s alone (%s)" % (where, why))
        st.left_alone = why

    def remove(self, name, entry, overall_deadline):
        """Remove one component: post objects, release, pre objects; wait until gone. Only what the inventory lists."""
        st = self.ctx.states[name]

        def work(deadline):
            refs = dict((r["id"], r) for r in entry.get("objects") or [])
            self._unrecorded_objects(name, [r for r in st.object_refs() if r["id"] not in refs])
            post = [r for r in refs.values() if r.get("wave", "post") == "post"]
            pre = [r for r in refs.values() if r.get("wave") == "pre"]
            if post and self.delete_refs(name, post, deadline):
                st.changed = True
            self._remove_release(name, entry, st, deadline)
            if pre and self.delete_refs(name, pre, deadline):
                st.changed = True
            st.phase = REMOVED if st.changed else UNCHANGED
            st.message = "removed" if st.changed else ("left alone: %s" % st.left_alone if st.left_alone else "nothing deployed")

        return self.ctx.step(st, overall_deadline, work)

    def removal_entries(self, include_plan):
        """{name: inventory-like entry} of what to remove, and the removal DAG."""
        entries, deps = {}, {}
        order = []
        if include_plan:
            for name in self.ctx.plan.order:
                st = self.ctx.states[name]
                entry = dict(self.ctx.inventory.entry(name))
                entry.setdefault("namespace", st.comp.namespace)
                if not st.comp.manifest_only:
                    entry["planned_release"] = name  # removed only if the inventory lists it (``release``) and it still matches
                entries[name] = entry
                order.append(name)
            rev = self.ctx.plan.reverse_deps()
            for name in order:
                deps[name] = list(rev[name])
        for name, entry in self.ctx.leftovers:
            entries[name] = entry
            order.append(name)
            deps[name] = []
        # leftovers: dependents among leftovers go first
        for name, entry in self.ctx.leftovers:
            for dep in entry.get("dependencies") or []:
                if dep in deps and dep != name and name not in deps[dep]:
                    deps[dep].append(name)
        return order, entries, deps


__all__ = ["Remover"]
