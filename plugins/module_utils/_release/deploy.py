# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Deploying one component once its gate opens.

what it is about to install and apply written ahead into the inventory -> pre objects -> wait Ready -> ``helm upgrade
--install`` (only if the digest differs; from the chart pulled and checked before the run's first change, ``valuescheck``; the release's
ownership read again right before) -> wait for every resource of the release -> post objects -> wait Ready -> prune the
objects it no longer renders. Readiness is always observed from the cluster (``_kube.wait``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.claims import claim
from ansible_collections.aicr.runtime.plugins.module_utils._common import deps
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import (
    READY, UNCHANGED, label_value,
)
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import NotServed
from ansible_collections.aicr.runtime.plugins.module_utils._release import drift, health
from ansible_collections.aicr.runtime.plugins.module_utils._release.apply import apply_object
from ansible_collections.aicr.runtime.plugins.module_utils._release.early import DONE
from ansible_collections.aicr.runtime.plugins.module_utils._release.inventory import object_digest
from ansible_collections.aicr.runtime.plugins.module_utils._release.ownership import CHANGED, UNRECORDED, object_owner, upgrade_refusal
from ansible_collections.aicr.runtime.plugins.module_utils._helm.mirrors import chart_source
from ansible_collections.aicr.runtime.plugins.module_utils._helm.storage import DeployedRelease, read_release


def manifest_docs(manifest):
    """The objects (dicts) of a release manifest, parsed once for everything that reads them."""
    return [doc for doc in deps.load_all(manifest or "", "a release manifest") if isinstance(doc, dict)]


def release_refs(cluster, docs, namespace):
    """``(apiVersion, kind, name, namespace)`` of every object of a release manifest (:func:`manifest_docs`; cluster-scoped
    ones without namespace)."""
    refs = []
    for doc in docs:
        if not doc.get("kind") or not (doc.get("metadata") or {}).get("name"):
            continue
        ns = (doc.get("metadata") or {}).get("namespace")
        try:
            namespaced = cluster.is_namespaced(doc["apiVersion"], doc["kind"])
        except NotServed:
            namespaced = True
        refs.append((doc["apiVersion"], doc["kind"], doc["metadata"]["name"], (ns or namespace) if namespaced else None))
    return refs


class Deployer(object):
    """Deploying the components of one run, each once its gate opens (``ctx``: a ``context.RunContext``). It calls, each
    given here: ``surveyor`` (``survey.Surveyor``: a component's objects surveyed at its gate), ``charts``
    (``valuescheck.ValuesChecker``: the local chart, its values checked), ``crds`` (``chartcrds.ChartCrdManager``),
    ``early`` (``early.EarlyStarter``: the helm started early, waiting at the gate), ``remover`` (``remove.Remover``: the
    objects no longer rendered, pruned) and ``namespaces`` (``context.Namespaces``)."""

    def __init__(self, ctx, surveyor, charts, crds, early, remover, namespaces):
        self.ctx = ctx
        self.surveyor = surveyor
        self.charts = charts
        self.crds = crds
        self.early = early
        self.remover = remover
        self.namespaces = namespaces

    def _objects_wave(self, st, wave, deadline):
        comp = st.comp
        entries = st.objects[wave]
        if not entries:
            return
        if any(a != "unchanged" for (_o, a, _r) in entries):
            if self.namespaces.ensure(comp.namespace):
                st.changed = True
        for mobj, action, _reason in entries:
            if action == "unchanged":
                continue
            if action == "update" and not self.ctx.opts.adopt:
                live = self.ctx.cluster.get(mobj.api_version, mobj.kind, mobj.name, mobj.namespace)
                owner = object_owner(live, self.ctx.opts.stack) if live is not None else None
                if owner is not None:
                    raise AicrError("component %s: object %s (%s %s/%s) belongs to %s, not stack %s: it is not changed (set adopt: true to take it over)"
                                    % (comp.name, mobj.identity, mobj.kind, mobj.namespace or "-", mobj.name, owner, self.ctx.opts.stack),
                                    component=comp.name, object=mobj.identity, owner=owner)
            applied = apply_object(self.ctx.cluster, mobj, comp.namespace) or {}
            st.applied[mobj.identity] = {"uid": (applied.get("metadata") or {}).get("uid"), "digest": object_digest(mobj.body)}
            st.changed = True
            self.ctx.action("apply %s (%s %s/%s: %s)" % (mobj.identity, mobj.kind, mobj.namespace or "-", mobj.name, action))
        refs = [(m.api_version, m.kind, m.name, m.namespace) for (m, _a, _r) in entries]
        self.ctx.wait_ready(comp, refs, deadline, "its %s-manifest objects" % wave)

    def clear_interrupted(self, comp, deployed):
        """Remove the record of a helm operation that was interrupted (pending-install/-upgrade/-rollback), so helm can proceed.

        helm refuses to touch a release whose latest revision is pending ("another operation is in progress"), and
        nothing ever finishes a revision whose helm process was killed. Clearing it is opt-in (``clear_pending``): without
        it the component fails, naming the revision. With it, a revision pending for longer than ``timeout`` is taken as
        interrupted (a helm operation of ours would have been stopped by then), its age measured with the API server's
        clock (the revision's ``creationTimestamp`` is the server's, not this host's). Younger ones may belong to
        someone running helm by hand: the component fails instead.
        """
        if not self.ctx.opts.clear_pending:
            raise AicrError("component %s: release %s/%s revision %s is %s since %s: another helm operation may still be running; "
                            "set clear_pending: true to clear it once it is older than timeout (%ds)"
                            % (comp.name, comp.namespace, comp.name, deployed.revision, deployed.status, deployed.created, int(self.ctx.opts.timeout)),
                            component=comp.name, release_status=deployed.status)
        age = deployed.age_seconds(self.ctx.cluster.server_time())
        if age is None or age < self.ctx.opts.timeout:
            raise AicrError("component %s: release %s/%s revision %s is %s since %s: another helm operation may still be running; "
                            "it is taken as interrupted once older than timeout (%ds)"
                            % (comp.name, comp.namespace, comp.name, deployed.revision, deployed.status, deployed.created, int(self.ctx.opts.timeout)),
                            component=comp.name, release_status=deployed.status)
        self.ctx.cluster.delete("v1", "Secret", deployed.secret_name, comp.namespace)
        self.ctx.action("clear the interrupted helm operation on %s (revision %s, %s since %s)"
                        % (comp.name, deployed.revision, deployed.status, deployed.created))

    def _install(self, st, deadline):
        """``helm upgrade --install`` of a component whose release must change (its helm started early, waiting at its
        gate, when ``st.waiting_helm`` holds one: this takes it and opens the gate); returns the release helm reports
        (read back from its Secret only when helm's answer cannot be read)."""
        comp = st.comp
        # read again right before helm: whose the release is may have changed since the survey
        deployed = st.deployed = self._check_release(st, read_release(self.ctx.cluster, comp.name, comp.namespace))
        if deployed is not None and deployed.pending:
            self.clear_interrupted(comp, deployed)
        if st.waiting_helm is not None:
            self.namespaces.ensure(comp.namespace)
            held, st.waiting_helm = st.waiting_helm, None
            st.early_start = True
            revision = self.early.finish(held, max(1, deadline - self.ctx.clock()))
        else:
            chart_ref, repo, flags, _where = chart_source(comp.chart, comp.repository, self.ctx.opts.mirrors)
            if self.ctx.opts.validate_chart_schema:
                # pull once, validate the values against the chart's own schema, install from the archive
                chart_ref = self.charts.pull_and_validate(comp, chart_ref, repo, flags)
                repo = None
            if self.crds.managing():
                # the chart's CRDs were applied at the gate (chartcrds.ChartCrdManager): helm installs from the same archive, skipping them
                chart_ref, repo = self.charts.local_chart(comp, chart_ref, repo, flags), None
                flags = list(flags or []) + ["--skip-crds"]
            if chart_ref.startswith("/"):
                self.early.installed_from(comp.name, chart_ref)
            self.namespaces.ensure(comp.namespace)
            remaining = max(1, deadline - self.ctx.clock())
            revision = self.ctx.helm.upgrade(comp.name, comp.namespace, chart_ref, repo, comp.version, comp.values, self.ctx.release_labels(comp),
                                             extra_flags=flags, atomic=self.ctx.opts.atomic, timeout=remaining, workdir=self.ctx.workdir)
        st.changed = True
        self.ctx.action("%s %s (chart %s %s into namespace %s: %s)" % (st.action, comp.name, comp.chart, comp.version, comp.namespace, st.reason))
        answer = getattr(revision, "release", None) or {}
        installed = DeployedRelease(None, answer) if answer.get("version") and "manifest" in answer else None
        stored = read_release(self.ctx.cluster, comp.name, comp.namespace)  # the release Secret's uid, for the inventory
        if installed is None:  # helm's answer could not be read: the release it stored tells
            installed = stored
        if installed is None:
            raise AicrError("component %s: helm reported success but release %s/%s is not stored in the cluster" % (comp.name, comp.namespace, comp.name))
        st.revision = installed.revision
        uid = stored.uid if stored is not None and stored.revision == installed.revision else None
        st.release_record = {"uid": uid, "revision": installed.revision, "digest": comp.digest()}
        return installed

    def _check_release(self, st, deployed):
        """``deployed`` when ``helm upgrade`` may run over it (``ownership.upgrade_refusal`` against the inventory as read);
        otherwise the component fails and nothing of the release is changed."""
        comp = st.comp
        refusal = upgrade_refusal(deployed, self.ctx.inventory.loaded_entry(comp.name), self.ctx.opts.stack, self.ctx.opts.adopt)
        if refusal is None:
            return deployed
        verdict, why = refusal
        st.release_foreign = True
        if verdict in (UNRECORDED, CHANGED) and deployed.stack == label_value(self.ctx.opts.stack):
            self.ctx.claim(claim("release", comp.namespace, comp.name, label_value(self.ctx.opts.stack),
                                 "labelled for stack %s but not in its inventory" % self.ctx.opts.stack if verdict == UNRECORDED else why),
                           "release %s/%s %s; it is neither upgraded nor removed (set adopt: true to take it over)" % (comp.namespace, comp.name, why))
        raise AicrError("component %s: release %s/%s %s: it is not upgraded (set adopt: true to take it over)" % (comp.name, comp.namespace, comp.name, why),
                        component=comp.name, owner=why)

    def _write_ahead(self, st):
        """Record in the inventory, before anything is created, what the component is about to install and apply."""
        comp = st.comp
        installing = not comp.manifest_only and st.action != "unchanged"
        refs = [(dict(mobj.ref(), wave=wave), action) for wave in ("pre", "post") for mobj, action, _r in st.objects[wave] if action != "unchanged"]
        if installing or refs:
            self.ctx.inventory.write_ahead(comp, deployed=st.deployed if installing else None, next_digest=comp.digest() if installing else None, refs=refs)

    def deploy(self, name, overall_deadline):
        st = self.ctx.states[name]
        comp = st.comp

        def work(deadline):
            st.waiting_helm = self.early.take(name)
            try:
                install(deadline)
            finally:
                if st.waiting_helm is not None:  # it failed before its gate: that helm writes nothing
                    held, st.waiting_helm = st.waiting_helm, None
                    self.early.drop(held, "component %s failed before its gate opened" % name)

        def install(deadline):
            if not st.objects_surveyed:
                self.surveyor.survey_component_objects(st)
            if not comp.manifest_only and st.action != "unchanged":
                self._check_release(st, st.deployed)  # before anything of it is written ahead or applied
            self._write_ahead(st)
            if self.crds.managing() and not comp.manifest_only and st.action != "unchanged":
                # the chart's CRDs before anything else of the component (its pre objects may be custom resources)
                chart_ref, repo, flags, _where = chart_source(comp.chart, comp.repository, self.ctx.opts.mirrors)
                self.crds.apply(st, self.charts.local_chart(comp, chart_ref, repo, flags), deadline)
            self._objects_wave(st, "pre", deadline)
            if not comp.manifest_only:
                installing = st.action != "unchanged"
                deployed = self._install(st, deadline) if installing else st.deployed
                if not installing and self.ctx.opts.drift == "correct" and st.drift:
                    self._correct_drift(st)
                docs = manifest_docs(deployed.manifest)
                written = self.early.write_state(st, docs, installed=installing)
                if written:
                    self.early.written(name, written)
                refs = release_refs(self.ctx.cluster, docs, comp.namespace)
                st.resources = len(refs)
                if self.ctx.opts.drift == "report" and st.drift:  # reported missing: not waited for (report fails nothing)
                    missing = set((e["apiVersion"], e["kind"], e["name"], e["namespace"]) for e in st.drift if e["state"] == "missing")
                    refs = [ref for ref in refs if ref not in missing]
                self.ctx.wait_ready(comp, refs, deadline, "release %s" % comp.name)
            self._objects_wave(st, "post", deadline)
            if self.ctx.opts.prune and st.stale_objects:
                self.remover.delete_refs(comp, st.stale_objects, deadline)
                st.changed = True
            checked = self._health_check(st, deadline)
            st.phase = READY if st.changed else UNCHANGED
            st.message = ("deployed" if st.changed else "already deployed and Ready") + (" (%d resources)" % st.resources if st.resources else "") \
                + ("; health check passed (%d operations)" % checked["operations"] if checked else "")

        phase = self.ctx.step(st, overall_deadline, work)
        self.early.written(name, DONE)
        return phase

    def _correct_drift(self, st):
        """Re-apply only the drifted objects of an unchanged release (server-side apply, our field manager; never a helm
        upgrade for one edited field), each named in ``actions``."""
        for entry in drift.correctable(st.drift):
            drift.correct(self.ctx.cluster, [entry])
            st.changed = True
            self.ctx.action("correct drift of %s: %s" % (st.comp.name, drift.describe(entry)))

    def _health_check(self, st, deadline):
        """The component's health check once it is Ready (read-only, retried until ``deadline``); None when it has none."""
        check = self.ctx.checks.get(st.comp.name)
        if check is None:
            return None
        st.health = health.planned(check, st.comp.name, self.ctx.opts.health)
        if self.ctx.opts.health.timeout is not None:
            deadline = min(deadline, self.ctx.clock() + self.ctx.opts.health.timeout)
            check = health.with_timeout(check, None)
        try:
            st.health = health.run_check(self.ctx.cluster, check, st.comp.namespace, deadline, self.ctx.opts.poll_interval, self.ctx.clock, self.ctx.sleep)
        except health.HealthCheckFailed as exc:
            st.health = exc.entry
            raise AicrError("component %s: %s" % (st.comp.name, exc.msg), component=st.comp.name, health=exc.entry)
        return st.health


__all__ = ["Deployer", "manifest_docs", "release_refs"]
