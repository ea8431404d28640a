# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The survey, read-only and concurrent: what is deployed and what would change, per component.

Per component: the deployed helm release (from helm's Secret storage; the digest label), the manifests
rendered with ``helm template`` (prefetched in the background once a rollout starts) and each object
compared with a server-side dry-run apply; then what this stack deployed earlier that the recipe no
longer has (its inventory, the one source: ``_release.ownership``). Helm releases labelled for the stack are listed
only in the namespaces the plan and the inventory name, and only to report those the inventory does not list
(``foreign_claims``). This is the check-mode plan.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.aicr.runtime.plugins.module_utils._common.claims import claim
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import label_value
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._release import drift
from ansible_collections.aicr.runtime.plugins.module_utils._release.apply import ManifestObject, plan_object
from ansible_collections.aicr.runtime.plugins.module_utils._release.deploy import manifest_docs
from ansible_collections.aicr.runtime.plugins.module_utils._release.inventory import object_digest
from ansible_collections.aicr.runtime.plugins.module_utils._helm.mirrors import chart_source
from ansible_collections.aicr.runtime.plugins.module_utils._helm.storage import read_release, read_releases, stack_releases
from ansible_collections.aicr.runtime.plugins.module_utils._release.ownership import (
    CHANGED, OTHER, OURS, UNRECORDED, listed, release_standing, upgrade_refusal,
)
from ansible_collections.aicr.runtime.plugins.module_utils._release.render import render_manifests_cached
from ansible_collections.aicr.runtime.plugins.module_utils._release.result import ComponentState


def waves_of(comp):
    return {"pre": comp.pre_manifest_paths, "post": comp.manifest_paths}


class Surveyor(object):
    """The survey of one run (``ctx``: a ``context.RunContext``): it sets ``ctx.states``, ``ctx.leftovers``,
    ``ctx.leftover_notes`` and ``ctx.foreign_claims``; it renders each component's manifests once per run."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._lock = threading.Lock()  # the renders
        self._rendered = {}
        self._render_futures = {}
        self._render_pool = None

    def _survey_release(self, comp, known=None):
        """Read-only: the deployed release and the release action (cheap: one Secret list; none when ``known``, the
        releases read with the others of their namespace, has it)."""
        st = ComponentState(comp)
        if not comp.manifest_only:
            chart_source(comp.chart, comp.repository, self.ctx.opts.mirrors)  # validates chart/repository early
            if known is not None and comp.name in known:
                st.deployed = known[comp.name]
            else:
                st.deployed = read_release(self.ctx.cluster, comp.name, comp.namespace)
            st.action, st.reason = self._release_action(comp, st.deployed)
            if st.deployed is not None:
                st.revision = st.deployed.revision
                self._release_standing(st)
        elif comp.name not in self.ctx.inventory.components:
            # provisional until the objects are surveyed: this stack never deployed them
            st.action, st.reason = "install", "manifest-only component not deployed by stack %s yet" % self.ctx.opts.stack
        if self.reads_drift():
            st.drift = []
            if st.deployed is not None and st.action == "unchanged" and not st.release_foreign:
                # every object of the release's stored manifest, against what helm last applied
                st.drift = drift.detect(self.ctx.cluster, manifest_docs(st.deployed.manifest), comp.namespace, self.ctx.opts.drift_rules,
                                        workers=self.ctx.opts.concurrency)
        return st

    def _release_standing(self, st):
        """Whether the deployed release of a planned component is this stack's to upgrade (``ownership.upgrade_refusal``,
        checked again right before helm runs): one it is not is never recorded in the inventory as this stack's; one
        labelled for the stack that the inventory does not list is a foreign claim; with ``adopt`` it is taken over."""
        comp, deployed = st.comp, st.deployed
        refusal = upgrade_refusal(deployed, self.ctx.inventory.loaded_entry(comp.name), self.ctx.opts.stack, adopt=False)
        if refusal is None:
            return
        verdict, why = refusal
        if self.ctx.opts.adopt:
            if st.action == "unchanged":  # upgraded all the same: the release then carries this stack's label and record
                st.action, st.reason = "upgrade", "adopt: release %s/%s %s" % (comp.namespace, comp.name, why)
            return
        st.release_foreign = True
        if verdict in (UNRECORDED, CHANGED) and deployed.stack == label_value(self.ctx.opts.stack):
            self.ctx.claim(claim("release", comp.namespace, comp.name, label_value(self.ctx.opts.stack),
                                 "labelled for stack %s but not in its inventory" % self.ctx.opts.stack if verdict == UNRECORDED else why),
                           "release %s/%s %s; it is neither upgraded nor removed (set adopt: true to take it over)" % (comp.namespace, comp.name, why))
        elif verdict == OTHER and deployed.stack and listed(self.ctx.inventory.loaded_entry(comp.name), comp.name, comp.namespace):
            self.ctx.warn("release %s/%s: released to stack %s (it carries that stack's label now); stack %s forgets it"
                          % (comp.namespace, comp.name, deployed.stack, self.ctx.opts.stack))

    def _render(self, comp):
        """The component's rendered manifests (prefetched in the background once a rollout starts)."""
        with self._lock:
            docs = self._rendered.get(comp.name)
            future = self._render_futures.get(comp.name)
        if docs is not None:
            return docs
        if future is not None:
            docs = future.result()
        else:
            docs = render_manifests_cached(self.ctx.helm, comp.to_dict(), waves_of(comp), tmp_root=self.ctx.workdir, cache_dir=self.ctx.opts.cache_dir)
        with self._lock:
            self._rendered[comp.name] = docs
        return docs

    def prefetch_renders(self):
        """Render every component's manifests in the background, in deployment order."""
        self._render_pool = ThreadPoolExecutor(max_workers=max(1, min(self.ctx.opts.concurrency, 4)))
        for name in self.ctx.plan.order:
            comp = self.ctx.plan.by_name[name]
            if (comp.pre_manifest_paths or comp.manifest_paths) and name not in self._rendered:
                self._render_futures[name] = self._render_pool.submit(
                    render_manifests_cached, self.ctx.helm, comp.to_dict(), waves_of(comp), self.ctx.workdir, self.ctx.opts.cache_dir)

    def stop_prefetch(self):
        if self._render_pool is not None:
            self._render_pool.shutdown(wait=True)
            self._render_pool = None

    def survey_component_objects(self, st):
        """Render the manifests and decide create/update/unchanged per object (server-side dry run)."""
        comp = st.comp
        docs = self._render(comp)
        seen = set()
        st.objects = {"pre": [], "post": []}
        if st.drift is not None:  # surveyed again: the release's entries stay, the objects' are read anew
            st.drift = [e for e in st.drift if "object" not in e]
        for wave in ("pre", "post"):
            for index, doc in enumerate(docs[wave]):
                mobj = ManifestObject(comp.name, wave, index, doc, self.ctx.opts.stack)
                if mobj.identity in seen:
                    raise AicrError("manifest: component %s renders two objects with identity %s" % (comp.name, mobj.identity), component=comp.name)
                seen.add(mobj.identity)
                if self.ctx.opts.state == "absent":
                    mobj.place(self.ctx.cluster, comp.namespace)
                    st.objects[wave].append((mobj, "unchanged", ""))
                    continue
                action, reason = plan_object(self.ctx.cluster, mobj, comp.namespace)
                if action != "unchanged" and self.reads_drift():
                    action, reason = self._object_drift(st, mobj, action, reason)
                st.objects[wave].append((mobj, action, reason))
        if comp.manifest_only:
            acts = st.object_actions()
            if acts and all(a == "create" for a in acts):
                st.action, st.reason = "install", "manifest-only: %d object(s) to create" % len(acts)
            elif any(a != "unchanged" for a in acts):
                st.action, st.reason = "upgrade", "manifest-only: %d object(s) differ" % sum(1 for a in acts if a != "unchanged")
            else:
                st.action, st.reason = "unchanged", "manifest-only: every object matches its dry-run apply" if acts else "manifest-only: renders no object"
        st.stale_objects = [ref for ref in self.ctx.inventory.objects_of(comp.name) if ref.get("id") not in seen]
        st.objects_surveyed = True
        return st

    def reads_drift(self):
        return self.ctx.opts.drift != "ignore" and self.ctx.opts.state == "present"

    def _object_drift(self, st, mobj, action, reason):
        """A manifest object that differs from its dry-run apply although it renders what the stack last applied (its
        inventory digest): drift. ``report`` leaves it alone; ``correct`` applies it (as ``ignore`` always has)."""
        recorded = dict((ref.get("id"), ref.get("digest")) for ref in self.ctx.inventory.objects_of(st.comp.name))
        if recorded.get(mobj.identity) is None or recorded[mobj.identity] != object_digest(mobj.body):
            return action, reason  # a change of the recipe, not drift
        entry = drift.object_drift(self.ctx.cluster, mobj.body, st.comp.namespace, self.ctx.opts.drift_rules)
        if entry is None:
            return "unchanged", "differs only in fields the drift rules ignore"
        entry["object"] = mobj.identity
        st.drift.append(entry)
        if self.ctx.opts.drift == "report":
            return "unchanged", "drifted: %s (drift: report changes nothing)" % drift.describe(entry)
        return action, "drifted: %s" % drift.describe(entry)

    def _survey_one(self, comp, known=None):
        return self.survey_component_objects(self._survey_release(comp, known))

    def _release_action(self, comp, deployed):
        if deployed is None:
            return "install", "release %s not found in namespace %s" % (comp.name, comp.namespace)
        if deployed.pending:
            if not self.ctx.opts.clear_pending:
                return "upgrade", ("revision %s is %s since %s: another helm operation may still be running (clear_pending is off: "
                                   "the component will fail)" % (deployed.revision, deployed.status, deployed.created))
            return "upgrade", ("revision %s is %s since %s: an interrupted helm operation is cleared once it is older than "
                               "timeout (%ds)" % (deployed.revision, deployed.status, deployed.created, int(self.ctx.opts.timeout)))
        if deployed.status != "deployed":
            return "upgrade", "last revision %s is %s" % (deployed.revision, deployed.status)
        if deployed.digest == comp.digest():
            return "unchanged", "chart, version and values digest match revision %s" % deployed.revision
        if not deployed.digest:
            return "upgrade", "revision %s carries no aicr.io/digest label" % deployed.revision
        reasons = []
        if deployed.chart and deployed.chart != comp.chart:
            reasons.append("chart %s -> %s" % (deployed.chart, comp.chart))
        if deployed.chart_version and str(deployed.chart_version).lstrip("v") != str(comp.version).lstrip("v"):
            reasons.append("version %s -> %s" % (deployed.chart_version, comp.version))
        if deployed.values != comp.values:
            reasons.append("values changed")
        return "upgrade", ", ".join(reasons) or "repository or digest changed"

    def survey(self, objects=True):
        """Survey every component (``objects=False``: releases only; objects are then surveyed at gate-open)."""
        comps = [self.ctx.plan.by_name[n] for n in self.ctx.plan.order]
        shared = {}  # namespace -> its releases, where several components share it
        for comp in comps:
            if not comp.manifest_only:
                shared.setdefault(comp.namespace, []).append(comp.name)
        shared = dict((ns, names) for ns, names in shared.items() if len(names) > 1)
        self.ctx.foreign_claims = []
        with ThreadPoolExecutor(max_workers=max(1, self.ctx.opts.concurrency)) as pool:
            # releases labelled for the stack, only to report the ones the inventory does not list (labels give no authority),
            # read while the components are surveyed
            labelled = pool.submit(self._labelled_releases)
            known = {}
            for found in pool.map(lambda item: read_releases(self.ctx.cluster, item[1], item[0]), sorted(shared.items())):
                known.update(found)
            survey_one = self._survey_one if objects else self._survey_release
            results = list(pool.map(lambda comp: survey_one(comp, known), comps))
            labelled = labelled.result()
        self.ctx.states = dict((st.comp.name, st) for st in results)
        self._survey_leftovers(labelled)

    def survey_objects(self):
        """Survey the objects of the components whose releases :meth:`survey` (``objects=False``) just read."""
        states = [self.ctx.states[n] for n in self.ctx.plan.order if not self.ctx.states[n].objects_surveyed]
        rendering = [st for st in states if st.comp.pre_manifest_paths or st.comp.manifest_paths]
        inline = [st for st in states if st not in rendering]  # nothing to render or dry-run: no thread for it
        if len(rendering) == 1 or self.ctx.opts.concurrency == 1:
            inline, rendering = states, []
        for st in inline:
            self.survey_component_objects(st)
        if rendering:
            with ThreadPoolExecutor(max_workers=max(1, min(self.ctx.opts.concurrency, len(rendering)))) as pool:
                list(pool.map(self.survey_component_objects, rendering))

    def _labelled_releases(self):
        """Releases labelled for the stack: one cluster-wide list where the identity may list Secrets everywhere (the
        shipped ClusterRoleBinding), so a forgery in a namespace the stack never touches is reported too; where it may
        not (the release role bound per namespace: 403), one list per namespace the plan or the inventory names."""
        stack = label_value(self.ctx.opts.stack)
        try:
            return stack_releases(self.ctx.cluster, stack, None)
        except ClusterError as exc:
            if exc.status != 403:
                raise
        # in this worker, not the pool's: with concurrency 1 the pool's only worker is this one
        return [rel for ns in self._claim_namespaces() for rel in stack_releases(self.ctx.cluster, stack, ns)]

    def _claim_namespaces(self):
        """The namespaces whose releases labelled for the stack are read: the plan's and the inventory's."""
        names = set(self.ctx.plan.by_name[n].namespace for n in self.ctx.plan.order)
        names.update(entry.get("namespace") for entry in self.ctx.inventory.loaded.values() if entry.get("release") and entry.get("namespace"))
        return sorted(names)

    def _survey_leftovers(self, labelled=()):
        """What the inventory lists that the recipe no longer has (the only leftovers: labels make none); and every
        release of ``labelled`` (labelled for the stack) the inventory does not list, reported as a foreign claim."""
        planned = set(self.ctx.plan.order) | set(s["name"] for s in self.ctx.plan.skipped if s["reason"] == "skip_components")
        leftovers = {}
        for name, entry in self.ctx.inventory.components.items():
            if name not in planned:
                leftovers[name] = dict(entry)
        for rel in labelled:
            if any(listed(entry, rel.name, rel.namespace) for entry in self.ctx.inventory.loaded.values()):
                continue
            comp = self.ctx.plan.by_name.get(rel.name)
            if comp is not None and not comp.manifest_only and comp.namespace == rel.namespace:
                continue  # the component's own survey reported it (_release_standing)
            latest = read_release(self.ctx.cluster, rel.name, rel.namespace)  # the label list sees old revisions too: is the latest one labelled?
            if latest is None or latest.stack != label_value(self.ctx.opts.stack):
                continue
            self.ctx.claim(claim("release", rel.namespace, rel.name, label_value(self.ctx.opts.stack),
                                 "labelled for stack %s but not in its inventory" % self.ctx.opts.stack),
                           "release %s/%s is labelled for stack %s (component %s) but is not in its inventory; it is never removed"
                           % (rel.namespace, rel.name, self.ctx.opts.stack, rel.component or "-"))
        self.ctx.leftover_notes = {}
        if self.ctx.opts.prune or self.ctx.opts.state == "absent":
            # the plan says which leftover releases will not be uninstalled (removal reads them again right before)
            for name, entry in leftovers.items():
                if entry.get("release"):
                    verdict, why = release_standing(read_release(self.ctx.cluster, entry["release"], entry.get("namespace")), entry, self.ctx.opts.stack)
                    if verdict != OURS:
                        self.ctx.leftover_notes[name] = why
        inv_order = self.ctx.inventory.order
        self.ctx.leftovers = sorted(leftovers.items(), key=lambda kv: (inv_order.index(kv[0]) if kv[0] in inv_order else len(inv_order), kv[0]))

    def mutation_planned(self):
        if self.ctx.opts.state == "absent":
            return True if self.ctx.plan.order or self.ctx.leftovers or self.ctx.inventory.found else False
        if self.ctx.opts.prune and self.ctx.leftovers:
            return True
        if any(st.action != "unchanged" for st in self.ctx.states.values()):
            return True
        if self.ctx.opts.drift == "correct" and any(drift.correctable(st.drift) for st in self.ctx.states.values() if not st.comp.manifest_only):
            return True
        return any(st.needs_change(self.ctx.opts.prune) for st in self.ctx.states.values() if st.objects_surveyed)
