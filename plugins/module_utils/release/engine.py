# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gated rollout: survey (read-only plan), then deploy or remove through the DAG scheduler.

1. *Survey*, read-only and concurrent: per component, the deployed helm release (from
   helm's Secret storage; digest label), the manifests rendered with ``helm template`` and
   each object compared with a server-side dry-run apply. This is the check-mode plan.
2. If anything must change: take the stack Lease, survey again (the cluster may have
   moved meanwhile), then run every component through the scheduler as soon as its gate
   opens: pre objects -> wait Ready -> ``helm upgrade --install`` (only if the digest
   differs) -> wait for every resource of the release -> post objects -> wait Ready.
   Readiness is always observed from the cluster (short polling).
3. ``prune`` removes what this stack installed earlier (per the inventory ConfigMap and the
   stack label on helm releases) and the recipe no longer has; ``state: absent`` removes
   everything in reverse dependency order.

``on_transition(component_result)``, when given, is called on every component phase change
(Deploying, Ready, Unchanged, Failed, Blocked, Removed; again for a Blocked component whose
``blocked_by`` grows) with that component's result dict, from the scheduler threads. Calls are
serialised (one at a time, in order per component) and should return quickly; an exception
raised by the callback is recorded in ``warnings`` and never affects the rollout.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import json
import os
import shutil
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.aicr.runtime.plugins.module_utils.common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils.release import readiness
from ansible_collections.aicr.runtime.plugins.module_utils.release.apply import (
    ManifestObject, apply_object, label_value, plan_object, slug,
)
from ansible_collections.aicr.runtime.plugins.module_utils.release.cluster import ClusterError, NotServed
from ansible_collections.aicr.runtime.plugins.module_utils.release.helm import (
    COMPONENT_LABEL, DIGEST_LABEL, STACK_LABEL, chart_schema_and_defaults, chart_source, normalize_mirrors, read_release, stack_releases,
)
from ansible_collections.aicr.runtime.plugins.module_utils.release.plan import deep_merge
from ansible_collections.aicr.runtime.plugins.module_utils.release.lease import StackLease
from ansible_collections.aicr.runtime.plugins.module_utils.release.scheduler import BLOCKED, OK, levels, run_dag
# PyYAML is guarded once, in render (the module checks render.HAS_YAML before anything runs).
from ansible_collections.aicr.runtime.plugins.module_utils.release.render import Loader as _Loader, default_cache_dir, render_manifests_cached, yaml

WATCH_SECONDS = 30.0  # one readiness watch at most this long, then the objects are read again
LIVE_STATUS_INTERVAL = 0.5  # seconds between two live status writes (transitions in between are coalesced)

PENDING, BLOCKED_PHASE, DEPLOYING, READY, FAILED, UNCHANGED, REMOVED = "Pending", "Blocked", "Deploying", "Ready", "Failed", "Unchanged", "Removed"


class Options(object):
    """Engine settings (the module's parameters, minus the cluster connection)."""

    def __init__(self, **kwargs):
        self.stack = kwargs.get("stack") or "default"
        self.state = kwargs.get("state") or "present"
        self.concurrency = int(kwargs.get("concurrency") or 4)
        self.timeout = float(kwargs.get("timeout") or 600)
        self.overall_timeout = float(kwargs.get("overall_timeout") or 3600)
        self.poll_interval = float(kwargs.get("poll_interval") or 0.5)
        self.prune = bool(kwargs.get("prune"))
        self.check_mode = bool(kwargs.get("check_mode"))
        self.diff = bool(kwargs.get("diff"))
        self.mirrors = normalize_mirrors(kwargs.get("repository_mirrors"))
        self.atomic = bool(kwargs.get("atomic"))
        self.lease_namespace = kwargs.get("lease_namespace") or "default"
        self.lease_duration = int(kwargs.get("lease_duration") or 60)
        self.holder_message = kwargs.get("holder_message") or ""
        self.recipe_name = kwargs.get("recipe_name") or ""
        self.cache_dir = kwargs.get("cache_dir")
        self.validate_values = bool(kwargs.get("validate_values"))
        if self.state not in ("present", "absent"):
            raise AicrError("state: %r is not allowed; use present or absent" % self.state, field="state")
        if self.concurrency < 1:
            raise AicrError("concurrency: %s is not allowed; use 1 or more" % self.concurrency, field="concurrency")
        for field in ("timeout", "overall_timeout", "poll_interval"):
            if getattr(self, field) <= 0:
                raise AicrError("%s: %s is not allowed; use a positive number of seconds" % (field, getattr(self, field)), field=field)


def _iso(ts):
    return datetime.datetime.fromtimestamp(ts, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")[:-4] + "Z"


class ComponentState(object):
    """What the survey found and what the run did, for one component."""

    def __init__(self, comp):
        self.comp = comp
        self.deployed = None
        self.action = "unchanged"
        self.reason = ""
        self.objects = {"pre": [], "post": []}  # [(ManifestObject, action, reason)]
        self.stale_objects = []  # inventory refs no longer rendered
        self.phase = PENDING
        self.message = ""
        self.blocked_by = []
        self.revision = None
        self.started = None
        self.duration = None
        self.changed = False
        self.resources = 0
        self.objects_surveyed = False

    def object_actions(self):
        return [a for wave in ("pre", "post") for (_o, a, _r) in self.objects[wave]]

    def needs_change(self, prune):
        return self.action != "unchanged" or any(a != "unchanged" for a in self.object_actions()) or bool(prune and self.stale_objects)

    def as_result(self):
        comp = self.comp
        objs = []
        for wave in ("pre", "post"):
            for mobj, action, reason in self.objects[wave]:
                ref = mobj.ref()
                ref.update({"wave": wave, "action": action, "reason": reason})
                objs.append(ref)
        for ref in self.stale_objects:
            objs.append(dict(ref, action="remove", reason="no longer rendered (prune)"))
        return {
            "name": comp.name, "kind": comp.kind, "phase": self.phase, "blocked_by": list(self.blocked_by),
            "chart": comp.chart or None, "version": comp.version or None, "revision": self.revision, "namespace": comp.namespace,
            "objects": objs, "started": self.started, "duration": self.duration, "message": self.message,
            "action": self.action, "reason": self.reason, "dependencies": list(comp.gate), "changed": self.changed,
        }


def _release_refs(cluster, manifest, namespace):
    refs = []
    for doc in yaml.load_all(manifest or "", Loader=_Loader):
        if not isinstance(doc, dict) or not doc.get("kind") or not (doc.get("metadata") or {}).get("name"):
            continue
        ns = (doc.get("metadata") or {}).get("namespace")
        try:
            namespaced = cluster.is_namespaced(doc["apiVersion"], doc["kind"])
        except NotServed:
            namespaced = True
        refs.append((doc["apiVersion"], doc["kind"], doc["metadata"]["name"], (ns or namespace) if namespaced else None))
    return refs


class GatedRelease(object):
    """One run of gated_release against one cluster."""

    def __init__(self, cluster, helm, plan, options, clock=time.monotonic, sleep=time.sleep, wall=time.time, on_transition=None):
        self.cluster = cluster
        self.helm = helm
        self.plan = plan
        self.opts = options
        self.clock = clock
        self.sleep = sleep
        self.wall = wall
        self.workdir = None
        self.states = {}
        self.actions = []
        self._actions_lock = threading.Lock()
        self.inventory = {"components": {}, "order": []}
        self.inventory_found = False
        self.leftovers = []
        self._rendered = {}
        self._render_futures = {}
        self._render_pool = None
        self.on_transition = on_transition
        self._transition_lock = threading.Lock()
        self._notified = {}
        self.warnings = []

    # -- helpers ---------------------------------------------------------------
    def _action(self, text):
        with self._actions_lock:
            self.actions.append(text)

    def _warn(self, text):
        with self._actions_lock:
            if text not in self.warnings and len(self.warnings) < 10:
                self.warnings.append(text)

    def _transition(self, st):
        """Tell ``on_transition`` about the component's phase (once per phase / blockers); a failing callback is a warning."""
        if self.on_transition is None:
            return
        with self._transition_lock:
            name = st.comp.name
            signature = (st.phase, tuple(st.blocked_by))
            if self._notified.get(name) == signature:
                return
            self._notified[name] = signature
            result = st.as_result()
            try:
                self.on_transition(result)
            except Exception as exc:  # pylint: disable=broad-except
                self._warn("on_transition: the status callback failed for component %s (phase %s): %s: %s"
                           % (name, st.phase, exc.__class__.__name__, str(exc)[:300]))

    def _labels(self, comp):
        return {STACK_LABEL: label_value(self.opts.stack), COMPONENT_LABEL: label_value(comp.name), DIGEST_LABEL: comp.digest()}

    def _inventory_name(self):
        return ("aicr-runtime-%s-inventory" % slug(self.opts.stack))[:63]

    def _load_inventory(self):
        cm = self.cluster.get("v1", "ConfigMap", self._inventory_name(), self.opts.lease_namespace)
        if cm is None:
            return
        try:
            loaded = json.loads((cm.get("data") or {}).get("inventory") or "{}")
            self.inventory = {"components": dict(loaded.get("components") or {}), "order": list(loaded.get("order") or [])}
            self.inventory_found = True
        except ValueError:
            self._action("inventory ConfigMap %s/%s is unreadable; ignored" % (self.opts.lease_namespace, self._inventory_name()))

    def _save_inventory(self, inventory):
        old = json.dumps(self.inventory, sort_keys=True)
        new = json.dumps(inventory, sort_keys=True)
        if old == new and self.inventory_found:
            return
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": self._inventory_name(), "namespace": self.opts.lease_namespace,
                             "labels": {STACK_LABEL: label_value(self.opts.stack), "app.kubernetes.io/managed-by": "aicr-runtime"}},
                "data": {"inventory": new}}
        self.cluster.apply(body)
        self.inventory = inventory
        self.inventory_found = True

    def _delete_inventory(self):
        if self.inventory_found:
            self.cluster.delete("v1", "ConfigMap", self._inventory_name(), self.opts.lease_namespace)

    # -- survey ------------------------------------------------------------------
    def _survey_release(self, comp):
        """Read-only: the deployed release and the release action (cheap: one Secret list)."""
        st = ComponentState(comp)
        if not comp.manifest_only:
            chart_source(comp.chart, comp.repository, self.opts.mirrors)  # validates chart/repository early
            st.deployed = read_release(self.cluster, comp.name, comp.namespace)
            st.action, st.reason = self._release_action(comp, st.deployed)
            if st.deployed is not None:
                st.revision = st.deployed.revision
        elif comp.name not in self.inventory["components"]:
            # provisional until the objects are surveyed: this stack never deployed them
            st.action, st.reason = "install", "manifest-only component not deployed by stack %s yet" % self.opts.stack
        return st

    def _render(self, comp):
        """The component's rendered manifests (prefetched in the background once a rollout starts)."""
        with self._actions_lock:
            docs = self._rendered.get(comp.name)
            future = self._render_futures.get(comp.name)
        if docs is not None:
            return docs
        if future is not None:
            docs = future.result()
        else:
            docs = render_manifests_cached(self.helm, comp.as_render_input(), {"pre": comp.pre_files, "post": comp.post_files}, tmp_root=self.workdir,
                                           cache_dir=self.opts.cache_dir)
        with self._actions_lock:
            self._rendered[comp.name] = docs
        return docs

    def _survey_objects(self, st):
        """Render the manifests and decide create/update/unchanged per object (server-side dry run)."""
        comp = st.comp
        docs = self._render(comp)
        seen = set()
        st.objects = {"pre": [], "post": []}
        for wave in ("pre", "post"):
            for index, doc in enumerate(docs[wave]):
                mobj = ManifestObject(comp.name, wave, index, doc, self.opts.stack)
                if mobj.identity in seen:
                    raise AicrError("manifest: component %s renders two objects with identity %s" % (comp.name, mobj.identity), component=comp.name)
                seen.add(mobj.identity)
                if self.opts.state == "absent":
                    mobj.place(self.cluster, comp.namespace)
                    st.objects[wave].append((mobj, "unchanged", ""))
                    continue
                action, reason = plan_object(self.cluster, mobj, comp.namespace)
                st.objects[wave].append((mobj, action, reason))
        if comp.manifest_only:
            acts = st.object_actions()
            if acts and all(a == "create" for a in acts):
                st.action, st.reason = "install", "manifest-only: %d object(s) to create" % len(acts)
            elif any(a != "unchanged" for a in acts):
                st.action, st.reason = "upgrade", "manifest-only: %d object(s) differ" % sum(1 for a in acts if a != "unchanged")
            else:
                st.action, st.reason = "unchanged", "manifest-only: every object matches its dry-run apply" if acts else "manifest-only: renders no object"
        previous = (self.inventory["components"].get(comp.name) or {}).get("objects") or []
        st.stale_objects = [ref for ref in previous if ref.get("id") not in seen]
        st.objects_surveyed = True
        return st

    def _survey_one(self, comp):
        return self._survey_objects(self._survey_release(comp))

    def _release_action(self, comp, deployed):
        if deployed is None:
            return "install", "release %s not found in namespace %s" % (comp.name, comp.namespace)
        if deployed.pending:
            return "upgrade", ("revision %s is %s since %s: an interrupted helm operation is cleared once it is older than "
                               "timeout (%ds)" % (deployed.revision, deployed.status, deployed.created, int(self.opts.timeout)))
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
        order = self.plan.order
        comps = [self.plan.by_name[n] for n in order]
        with ThreadPoolExecutor(max_workers=max(1, self.opts.concurrency)) as pool:
            results = list(pool.map(self._survey_one if objects else self._survey_release, comps))
        self.states = dict((st.comp.name, st) for st in results)
        self._survey_leftovers()

    def _survey_leftovers(self):
        listed = set(self.plan.order) | set(s["name"] for s in self.plan.skipped if s["reason"] == "skip_components")
        leftovers = {}
        for name, entry in self.inventory["components"].items():
            if name not in listed:
                leftovers[name] = dict(entry)
        for rel in stack_releases(self.cluster, label_value(self.opts.stack)):
            name = rel.component or rel.name
            if name not in listed:
                entry = leftovers.setdefault(name, {"namespace": rel.namespace, "objects": [], "dependencies": []})
                entry["release"] = rel.name
                entry["namespace"] = rel.namespace
        inv_order = self.inventory.get("order") or []
        self.leftovers = sorted(leftovers.items(), key=lambda kv: (inv_order.index(kv[0]) if kv[0] in inv_order else len(inv_order), kv[0]))

    # -- readiness -----------------------------------------------------------------
    def wait_ready(self, comp, refs, deadline, what):
        """Wait until every object of ``refs`` is current (kstatus rules), observing the cluster.

        Each round GETs the objects still pending; then, if the cluster can watch, it watches the first
        pending one until that one is no longer pending (so readiness is seen the moment the controller
        reports it, not up to ``poll_interval`` later), else it sleeps ``poll_interval``.
        """
        pending = list(refs)
        watch_until = getattr(self.cluster, "watch_until", None)  # test doubles without watches are polled
        quick_returns = 0
        while True:
            still = []
            watched = None
            for ref in pending:
                api_version, kind, name, namespace = ref
                obj = self.cluster.get(api_version, kind, name, namespace)
                state, reason = readiness.assess(obj)
                if state == readiness.FAILED:
                    raise AicrError("component %s: %s %s%s failed (%s)" % (comp.name, kind, (namespace + "/") if namespace else "", name, reason),
                                    component=comp.name, resource="%s/%s" % (kind, name))
                if state != readiness.READY:
                    still.append((ref, reason))
                    if watched is None and obj is not None:
                        watched = (ref, ((obj.get("metadata") or {}).get("resourceVersion")))
            if not still:
                return
            now = self.clock()
            if now >= deadline:
                (api_version, kind, name, namespace), reason = still[0]
                more = " (and %d more not ready)" % (len(still) - 1) if len(still) > 1 else ""
                raise AicrError("component %s: timed out waiting for %s: %s %s%s not ready: %s%s"
                                % (comp.name, what, kind, (namespace + "/") if namespace else "", name, reason, more),
                                component=comp.name, resource="%s/%s%s" % (kind, (namespace + "/") if namespace else "", name),
                                not_ready=["%s/%s" % (r[0][1], r[0][2]) for r in still])
            pending = [r for r, _reason in still]
            if watch_until is not None and watched is not None:
                (api_version, kind, name, namespace), resource_version = watched
                began = self.clock()
                if watch_until(api_version, kind, name, namespace, resource_version, max(0.05, min(WATCH_SECONDS, deadline - now)),
                               lambda obj: readiness.assess(obj)[0] != readiness.PENDING):
                    # a watch that keeps ending at once without progress (a server closing it early) must not spin
                    quick_returns = quick_returns + 1 if self.clock() - began < 0.02 else 0
                    if quick_returns < 3:
                        continue
                # the watch could not be opened (or keeps ending at once): poll instead
            self.sleep(max(0.0, min(self.opts.poll_interval, deadline - now)))

    # -- deploy ----------------------------------------------------------------------
    def _ensure_namespace(self, namespace):
        """Create the component's namespace when it is missing: a plain create, the one write RBAC needs on namespaces
        (helm gets no --create-namespace, which helm 4 does as a server-side apply: ``patch`` on every namespace)."""
        if self.cluster.get("v1", "Namespace", namespace) is None:
            try:
                self.cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
            except ClusterError as exc:
                if exc.status != 409:
                    raise
                return False  # another component of the same namespace created it meanwhile
            self._action("create namespace %s" % namespace)
            return True
        return False

    def _objects_wave(self, st, wave, deadline):
        comp = st.comp
        entries = st.objects[wave]
        if not entries:
            return
        if any(a != "unchanged" for (_o, a, _r) in entries):
            if self._ensure_namespace(comp.namespace):
                st.changed = True
        for mobj, action, _reason in entries:
            if action == "unchanged":
                continue
            apply_object(self.cluster, mobj, comp.namespace)
            st.changed = True
            self._action("apply %s (%s %s/%s: %s)" % (mobj.identity, mobj.kind, mobj.namespace or "-", mobj.name, action))
        refs = [(m.api_version, m.kind, m.name, m.namespace) for (m, _a, _r) in entries]
        self.wait_ready(comp, refs, deadline, "its %s-manifest objects" % wave)

    def _clear_interrupted(self, comp, deployed):
        """Remove the record of a helm operation that was interrupted (pending-install/-upgrade/-rollback), so helm can proceed.

        helm refuses to touch a release whose latest revision is pending ("another operation is in progress"), and
        nothing ever finishes a revision whose helm process was killed. This stack's Lease rules out a run of ours; a
        revision pending for longer than ``timeout`` is taken as interrupted (a helm operation of ours would have been
        stopped by then). Younger ones may belong to someone running helm by hand: the component fails instead.
        """
        age = deployed.age_seconds(self.wall())
        if age is None or age < self.opts.timeout:
            raise AicrError("component %s: release %s/%s revision %s is %s since %s: another helm operation may still be running; "
                            "it is taken as interrupted once older than timeout (%ds)"
                            % (comp.name, comp.namespace, comp.name, deployed.revision, deployed.status, deployed.created, int(self.opts.timeout)),
                            component=comp.name, release_status=deployed.status)
        self.cluster.delete("v1", "Secret", deployed.secret_name, comp.namespace)
        self._action("clear the interrupted helm operation on %s (revision %s, %s since %s)"
                     % (comp.name, deployed.revision, deployed.status, deployed.created))

    def _pull_and_validate(self, comp, chart_ref, repo, flags):
        """Pull the chart and check the values against its ``values.schema.json`` (if any); returns the archive path."""
        archive = self.helm.pull(chart_ref, repo, comp.version, os.path.join(self.workdir, "charts", comp.name), extra_flags=flags)
        schema, defaults_text = chart_schema_and_defaults(archive)
        if schema:
            defaults = yaml.load(defaults_text, Loader=_Loader) if defaults_text.strip() else {}
            problems = schema_problems(schema, deep_merge(defaults if isinstance(defaults, dict) else {}, comp.values))
            if problems:
                raise AicrError("values: component %s: %d value(s) violate the chart's values.schema.json; first: %s" % (comp.name, len(problems), problems[0]),
                                component=comp.name, problems=problems[:50])
        return archive

    def _deploy(self, name, overall_deadline):
        st = self.states[name]
        comp = st.comp
        t0 = self.clock()
        st.started = _iso(self.wall())
        st.phase = DEPLOYING
        self._transition(st)
        deadline = min(t0 + self.opts.timeout, overall_deadline)
        try:
            if not st.objects_surveyed:
                self._survey_objects(st)
            self._objects_wave(st, "pre", deadline)
            if not comp.manifest_only:
                deployed = st.deployed
                if st.action != "unchanged":
                    if deployed is not None and deployed.pending:
                        self._clear_interrupted(comp, deployed)
                    chart_ref, repo, flags, _where = chart_source(comp.chart, comp.repository, self.opts.mirrors)
                    if self.opts.validate_values:
                        # pull once, validate the values against the chart's own schema, install from the archive
                        chart_ref = self._pull_and_validate(comp, chart_ref, repo, flags)
                        repo = None
                    self._ensure_namespace(comp.namespace)
                    remaining = max(1, deadline - self.clock())
                    st.revision = self.helm.upgrade(comp.name, comp.namespace, chart_ref, repo, comp.version, comp.values, self._labels(comp),
                                                    extra_flags=flags, atomic=self.opts.atomic, timeout=remaining, workdir=self.workdir)
                    st.changed = True
                    self._action("%s %s (chart %s %s into namespace %s: %s)" % (st.action, comp.name, comp.chart, comp.version, comp.namespace, st.reason))
                    deployed = read_release(self.cluster, comp.name, comp.namespace)
                    if deployed is None:
                        raise AicrError("component %s: helm reported success but release %s/%s is not stored in the cluster" % (name, comp.namespace, name))
                    st.revision = deployed.revision
                refs = _release_refs(self.cluster, deployed.manifest, comp.namespace)
                st.resources = len(refs)
                self.wait_ready(comp, refs, deadline, "release %s" % comp.name)
            self._objects_wave(st, "post", deadline)
            if self.opts.prune and st.stale_objects:
                self._delete_refs(comp, st.stale_objects, deadline)
                st.changed = True
            st.phase = READY if st.changed else UNCHANGED
            st.message = ("deployed" if st.changed else "already deployed and Ready") + (" (%d resources)" % st.resources if st.resources else "")
        except AicrError as exc:
            st.phase, st.message = FAILED, exc.msg
            raise
        except Exception as exc:
            st.phase, st.message = FAILED, "%s: %s" % (exc.__class__.__name__, exc)
            raise
        finally:
            st.duration = round(self.clock() - t0, 3)
            self._transition(st)
        return st.phase

    # -- remove ------------------------------------------------------------------------
    def _delete_refs(self, comp, refs, deadline):
        gone = []
        for ref in refs:
            if self.cluster.delete(ref["apiVersion"], ref["kind"], ref["name"], ref.get("namespace")):
                self._action("delete %s (%s %s/%s)" % (ref.get("id") or ref["name"], ref["kind"], ref.get("namespace") or "-", ref["name"]))
                gone.append(ref)
        while gone:
            gone = [r for r in gone if self.cluster.get(r["apiVersion"], r["kind"], r["name"], r.get("namespace")) is not None]
            if not gone:
                break
            if self.clock() >= deadline:
                who = comp if isinstance(comp, str) else comp.name
                raise AicrError("component %s: timed out waiting for %s %s to be deleted" % (who, gone[0]["kind"], gone[0]["name"]))
            self.sleep(self.opts.poll_interval)
        return bool(refs)

    def _remove(self, name, entry, overall_deadline):
        """Remove one component: post objects, release, pre objects; wait until gone."""
        st = self.states[name]
        t0 = self.clock()
        st.started = _iso(self.wall())
        st.phase = DEPLOYING
        self._transition(st)
        deadline = min(t0 + self.opts.timeout, overall_deadline)
        try:
            refs = dict((r["id"], r) for r in entry.get("objects") or [])
            for wave in ("pre", "post"):
                for mobj, _a, _r in st.objects[wave]:
                    refs.setdefault(mobj.identity, dict(mobj.ref(), wave=wave))
            post = [r for r in refs.values() if r.get("wave", "post") == "post"]
            pre = [r for r in refs.values() if r.get("wave") == "pre"]
            post = [r for r in post if self.cluster.get(r["apiVersion"], r["kind"], r["name"], r.get("namespace")) is not None]
            pre = [r for r in pre if self.cluster.get(r["apiVersion"], r["kind"], r["name"], r.get("namespace")) is not None]
            if post:
                self._delete_refs(name, post, deadline)
                st.changed = True
            release = entry.get("release")
            namespace = entry.get("namespace") or st.comp.namespace
            if release and read_release(self.cluster, release, namespace) is not None:
                self.helm.uninstall(release, namespace, timeout=max(1, deadline - self.clock()))
                self._action("uninstall %s (namespace %s)" % (release, namespace))
                st.changed = True
                while read_release(self.cluster, release, namespace) is not None:
                    if self.clock() >= deadline:
                        raise AicrError("component %s: timed out waiting for release %s to be uninstalled" % (name, release))
                    self.sleep(self.opts.poll_interval)
            if pre:
                self._delete_refs(name, pre, deadline)
                st.changed = True
            st.phase = REMOVED if st.changed else UNCHANGED
            st.message = "removed" if st.changed else "nothing deployed"
        except AicrError as exc:
            st.phase, st.message = FAILED, exc.msg
            raise
        except Exception as exc:
            st.phase, st.message = FAILED, "%s: %s" % (exc.__class__.__name__, exc)
            raise
        finally:
            st.duration = round(self.clock() - t0, 3)
            self._transition(st)
        return st.phase

    def _removal_entries(self, include_plan):
        """{name: inventory-like entry} of what to remove, and the removal DAG."""
        entries, deps = {}, {}
        order = []
        if include_plan:
            for name in self.plan.order:
                st = self.states[name]
                entry = dict(self.inventory["components"].get(name) or {})
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

    # -- run -----------------------------------------------------------------------------
    def run(self):
        self.workdir = tempfile.mkdtemp(prefix="aicr-release-")
        start = self.clock()
        try:
            self._load_inventory()
            lease = None
            if self.opts.check_mode or self.opts.state == "absent":
                self.survey()
                mutation = self._mutation_planned()
            else:
                # Releases first (one Secret list each): when one must change, the rollout is certain and the
                # objects are surveyed at gate-open, once their dependencies (and CRDs) are Ready.
                self.survey(objects=False)
                mutation = self._mutation_planned()
                if not mutation:
                    self.survey()
                    mutation = self._mutation_planned()
            if mutation and not self.opts.check_mode:
                self.helm.major  # pylint: disable=pointless-statement  # a missing or too old helm fails before any change
                message = self.opts.holder_message or "aicr.runtime.gated_release %s of %s" % (self.opts.state, self.opts.recipe_name or "a recipe")
                lease = StackLease(self.cluster, self.opts.stack, namespace=self.opts.lease_namespace, duration=self.opts.lease_duration, message=message)
                lease.acquire()
                try:
                    self._load_inventory()
                    self.survey(objects=self.opts.state == "absent")
                    self._prefetch_renders()
                    outcomes = self._execute(start)
                    self._record_inventory(outcomes)
                finally:
                    lease.release()
                    self._stop_prefetch()
            elif not self.opts.check_mode:
                outcomes = self._execute(start)
            else:
                outcomes = None
                for st in self.states.values():
                    st.phase = PENDING
                if self.opts.state == "present" and self.opts.validate_values:
                    self._check_chart_values()
            return self._result(outcomes, lease)
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _check_chart_values(self):
        """Check mode: the values of every release that would be installed or upgraded against its chart's own schema.

        The real run validates at gate-open and fails the component; the plan says so beforehand. Charts are pulled
        into the run's scratch directory (nothing is written to the cluster); a component whose chart cannot be
        pulled or whose values fail is reported Failed with the same message the real run would give.
        """
        to_check = [st for st in self.states.values() if not st.comp.manifest_only and st.action != "unchanged" and st.comp.chart]

        def check(st):
            try:
                chart_ref, repo, flags, _where = chart_source(st.comp.chart, st.comp.repository, self.opts.mirrors)
                self._pull_and_validate(st.comp, chart_ref, repo, flags)
            except AicrError as exc:
                st.phase, st.message = FAILED, exc.msg

        with ThreadPoolExecutor(max_workers=max(1, self.opts.concurrency)) as pool:
            list(pool.map(check, to_check))

    def _prefetch_renders(self):
        """Render every component's manifests in the background, in deployment order."""
        self._render_pool = ThreadPoolExecutor(max_workers=max(1, min(self.opts.concurrency, 4)))
        for name in self.plan.order:
            comp = self.plan.by_name[name]
            if (comp.pre_files or comp.post_files) and name not in self._rendered:
                self._render_futures[name] = self._render_pool.submit(
                    render_manifests_cached, self.helm, comp.as_render_input(), {"pre": comp.pre_files, "post": comp.post_files},
                    self.workdir, self.opts.cache_dir)

    def _stop_prefetch(self):
        if self._render_pool is not None:
            self._render_pool.shutdown(wait=True)
            self._render_pool = None

    def _mutation_planned(self):
        if self.opts.state == "absent":
            return True if self.plan.order or self.leftovers or self.inventory_found else False
        if self.opts.prune and self.leftovers:
            return True
        if any(st.action != "unchanged" for st in self.states.values()):
            return True
        return any(st.needs_change(self.opts.prune) for st in self.states.values() if st.objects_surveyed)

    def _mark_blocked(self, outcome):
        st = self.states.get(outcome.name)
        if st is None:
            return
        st.phase = BLOCKED_PHASE
        st.blocked_by = list(outcome.blocked_by)
        if outcome.blocked_by:
            st.message = "blocked: dependency %s failed" % ", ".join(outcome.blocked_by) if self.opts.state == "present" \
                else "blocked: dependent %s could not be removed" % ", ".join(outcome.blocked_by)
        else:
            st.message = outcome.error or "not started"
        self._transition(st)

    def _execute(self, start):
        overall_deadline = start + self.opts.overall_timeout
        if self.opts.state == "present":
            outcomes = run_dag(self.plan.order, self.plan.deps, lambda n: self._deploy(n, overall_deadline),
                               concurrency=self.opts.concurrency, deadline=overall_deadline, clock=self.clock, on_block=self._mark_blocked)
            if self.opts.prune and self.leftovers:
                order, entries, deps = self._removal_entries(include_plan=False)
                for name in order:
                    self.states[name] = ComponentState(_Leftover(name, entries[name]))
                outcomes.update(run_dag(order, deps, lambda n: self._remove(n, entries[n], overall_deadline),
                                        concurrency=self.opts.concurrency, deadline=overall_deadline, clock=self.clock,
                                        on_block=self._mark_blocked))
        else:
            order, entries, deps = self._removal_entries(include_plan=True)
            for name in order:
                if name not in self.states:
                    self.states[name] = ComponentState(_Leftover(name, entries[name]))
            outcomes = run_dag(order, deps, lambda n: self._remove(n, entries[n], overall_deadline),
                               concurrency=self.opts.concurrency, deadline=overall_deadline, clock=self.clock, on_block=self._mark_blocked)
        for outcome in outcomes.values():
            if outcome.status == BLOCKED:
                self._mark_blocked(outcome)
        return outcomes

    def _record_inventory(self, outcomes):
        if self.opts.state == "absent":
            if all(o.status == OK for o in outcomes.values()):
                self._delete_inventory()
            return
        components = dict(self.inventory["components"])
        for name, _entry in self.leftovers:
            if outcomes.get(name) is not None and outcomes[name].status == OK:
                components.pop(name, None)
        for name in self.plan.order:
            st = self.states[name]
            if st.phase not in (READY, UNCHANGED, FAILED):
                continue
            refs = []
            for wave in ("pre", "post"):
                for mobj, _a, _r in st.objects[wave]:
                    refs.append(dict(mobj.ref(), wave=wave))
            if not self.opts.prune or st.phase == FAILED:
                known = set(r["id"] for r in refs)
                refs.extend(r for r in st.stale_objects if r.get("id") not in known)
            components[name] = {"namespace": st.comp.namespace, "release": None if st.comp.manifest_only else name,
                                "dependencies": list(st.comp.gate), "objects": refs}
        order = [n for n in self.plan.order if n in components] + [n for n in self.inventory.get("order") or [] if n in components and n not in self.plan.order]
        self._save_inventory({"components": components, "order": order})

    # -- result ----------------------------------------------------------------------------
    def _result(self, outcomes, lease):
        plan = self.plan
        names = list(plan.order) + [n for n, _e in self.leftovers if n not in plan.by_name]
        if self.opts.state == "absent" or (self.opts.prune and self.leftovers):
            for name, entry in self.leftovers:
                if name not in self.states:
                    st = ComponentState(_Leftover(name, entry))
                    st.action, st.reason = "remove", "installed by stack %s earlier; no longer in the recipe" % self.opts.stack
                    self.states[name] = st
                else:
                    self.states[name].action = "remove"
                    self.states[name].reason = "installed by stack %s earlier; no longer in the recipe" % self.opts.stack
        if self.opts.state == "absent":
            for name in plan.order:
                st = self.states[name]
                present = st.deployed is not None or bool((self.inventory["components"].get(name) or {}).get("objects"))
                st.action, st.reason = ("remove", "state is absent") if present else ("unchanged", "nothing deployed")
        components = [self.states[n].as_result() for n in names if n in self.states]
        changed = any(c["changed"] for c in components)
        if self.opts.check_mode:
            changed = any(c["action"] != "unchanged" or any(o["action"] != "unchanged" for o in c["objects"]) for c in components)
        failed = [c for c in components if c["phase"] == FAILED]
        blocked = [c for c in components if c["phase"] == BLOCKED_PHASE]
        waves = []
        for wave in plan.waves():
            entries = []
            for n in wave["components"]:
                acts = self.states[n].object_actions()
                entries.append({"name": n, "action": self.states[n].action, "reason": self.states[n].reason,
                                "objects": dict((a, acts.count(a)) for a in set(acts))})
            waves.append({"wave": wave["wave"], "components": entries})
        if self.opts.state == "absent":
            waves = [{"wave": w["wave"], "components": w["components"]} for w in reversed(waves)]
        reached = [c for c in components if c["phase"] in (READY, UNCHANGED, REMOVED) and c["started"]]
        deployed = [c["name"] for c in sorted(reached, key=lambda c: c["started"])]
        result = {
            "changed": changed,
            "components": components,
            "waves": waves,
            "actions": list(self.actions) if not self.opts.check_mode else self._planned_actions(components),
            "summary": {
                "recipe_name": self.opts.recipe_name, "stack": self.opts.stack, "state": self.opts.state,
                "component_count": len(plan.order), "deployed_components": deployed,
                "skipped_components": list(plan.skipped),
                "failed": [c["name"] for c in failed], "blocked": [c["name"] for c in blocked],
                "phases": dict((p, sum(1 for c in components if c["phase"] == p)) for p in set(c["phase"] for c in components)),
            },
        }
        if lease is not None and lease.taken_over:
            result["summary"]["lease_taken_over_from"] = lease.taken_over
        if self.opts.diff:
            result["diff"] = self._diff()
        if self.warnings:
            result["warnings"] = list(self.warnings)
        if failed or blocked:
            parts = []
            if failed:
                parts.append("failed: " + "; ".join("%s (%s)" % (c["name"], c["message"]) for c in failed))
            if blocked:
                parts.append("blocked: " + "; ".join("%s (by %s)" % (c["name"], ", ".join(c["blocked_by"]) or c["message"]) for c in blocked))
            result["failed_message"] = "gated_release: %d of %d components did not converge; %s" % (
                len(failed) + len(blocked), len(components), " | ".join(parts))
        return result

    def _planned_actions(self, components):
        acts = []
        for c in components:
            if c["action"] != "unchanged":
                acts.append("would %s %s (%s)" % (c["action"], c["name"], c["reason"]))
            for o in c["objects"]:
                if o["action"] != "unchanged":
                    acts.append("would %s object %s (%s)" % ("apply" if o["action"] in ("create", "update") else o["action"], o["id"], o["reason"]))
        return acts

    def _diff(self):
        diffs = []
        for name in self.plan.order:
            st = self.states[name]
            if st.comp.manifest_only:
                continue
            before = st.deployed.values if st.deployed is not None else None
            after = st.comp.values if self.opts.state == "present" else None
            if before == after and st.action == "unchanged":
                continue
            diffs.append({
                "before_header": "%s values (revision %s)" % (name, st.deployed.revision) if st.deployed is not None else "%s (not installed)" % name,
                "after_header": "%s values (%s)" % (name, st.action),
                "before": yaml.safe_dump(before, default_flow_style=False, sort_keys=True) if before is not None else "",
                "after": yaml.safe_dump(after, default_flow_style=False, sort_keys=True) if after is not None else "",
            })
        return diffs


class _Leftover(object):
    """A component known only from the inventory/release labels (for removal)."""

    def __init__(self, name, entry):
        self.name = name
        self.namespace = entry.get("namespace") or "default"
        self.chart = ""
        self.version = ""
        self.values = {}
        self.gate = list(entry.get("dependencies") or [])
        self.manifest_only = not entry.get("release")

    @property
    def kind(self):
        return "objects" if self.manifest_only else "release"


__all__ = ["GatedRelease", "Options", "levels", "ClusterError"]


def schema_problems(schema, values):
    """Every violation of ``values`` against a JSON Schema, as ``values.<path>: <message>`` lines."""
    try:
        import jsonschema  # pylint: disable=import-outside-toplevel
    except ImportError:
        raise AicrError("validate_values: the Python package 'jsonschema' is required to validate values", field="validate_values")
    validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    problems = []
    for error in sorted(validator_cls(schema).iter_errors(values), key=lambda e: [str(p) for p in e.absolute_path]):
        path = ".".join(str(p) for p in error.absolute_path) or "(root)"
        problems.append("values.%s: %s" % (path, error.message))
    return problems


def validate_values(plan, schemas):
    """Validate each component's values against a JSON Schema (``{component: schema}``)."""
    if not schemas:
        return
    problems = []
    for name in plan.order:
        schema = schemas.get(name)
        if not schema:
            continue
        problems.extend("%s: %s" % (name, p) for p in schema_problems(schema, plan.by_name[name].values))
    if problems:
        raise AicrError("values: %d value(s) do not match the component schemas; first: %s" % (len(problems), problems[0]),
                        field="values", problems=problems[:50])


def under_resolve(error):
    """The recipe engine's error with its field named as this module takes it (``criteria.os`` -> ``resolve.criteria.os``)."""
    field = error.details.get("field")
    if not field:
        return error
    msg = "resolve." + error.msg if error.msg.startswith(field + ":") else error.msg
    return AicrError(msg, **dict(error.details, field="resolve." + field))


def resolved_summary(resolution):
    """The part of a ``recipe.resolve`` result gated_release returns as ``resolved`` (not the components' values)."""
    recipe = resolution["recipe"]
    return {
        "recipe_name": resolution["recipe_name"],
        "catalog_digest": resolution["catalog_digest"],
        "catalog_root": resolution["catalog_root"],
        "criteria": recipe.get("criteria") or {},
        "applied_overlays": list((recipe.get("metadata") or {}).get("appliedOverlays") or []),
        "deployment_order": list(recipe.get("deploymentOrder") or []),
    }


def execute(params, check_mode=False, diff=False, cluster=None, helm=None, status_api=None):
    """Run gated_release from module parameters; returns the result dict (``failed_message`` when it failed).

    ``cluster``/``helm`` are injected by tests; otherwise built from kubeconfig/context/helm_binary.
    With ``status_stack`` (and not in check mode) every component transition is written to that stack's status
    (``stack.store.LiveStatus``, through ``status_api`` or a client from kubeconfig/context); the result then has ``live_status``.
    """
    # Imported here so unit tests of the engine do not need the kubernetes package.
    from ansible_collections.aicr.runtime.plugins.module_utils import kube  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils.release.cluster import KubeCluster  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils.release.helm import HelmRunner  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils.release.plan import build_plan  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils.recipe.options import resolve_from_options  # pylint: disable=import-outside-toplevel

    recipe, resolved = params.get("recipe"), None
    if params.get("resolve"):
        try:
            recipe = resolve_from_options(params["resolve"], cache_dir=params.get("cache_dir"), check_mode=check_mode)
        except AicrError as exc:
            raise under_resolve(exc)
        resolved = resolved_summary(recipe)
    plan = build_plan(recipe, skip_components=params.get("skip_components"), component_overrides=params.get("component_overrides"),
                      skip_deployment_order=params.get("skip_deployment_order"), base_dir=params.get("catalog"))
    if params.get("validate_values", True):
        validate_values(plan, params.get("values_schemas") or {})
    recipe_name = params.get("recipe_name") or (recipe.get("recipe_name") if isinstance(recipe, dict) else "") or ""
    options = Options(
        stack=params.get("stack") or recipe_name or "default", state=params.get("state"), concurrency=params.get("concurrency"),
        timeout=params.get("timeout"), overall_timeout=params.get("overall_timeout"), poll_interval=params.get("poll_interval"),
        prune=params.get("prune"), check_mode=check_mode, diff=diff, repository_mirrors=params.get("repository_mirrors"),
        atomic=params.get("atomic"), lease_namespace=params.get("lease_namespace"), lease_duration=params.get("lease_duration"),
        holder_message=params.get("holder_message"), recipe_name=recipe_name,
        cache_dir=(params.get("cache_dir") or default_cache_dir()) if params.get("render_cache", True) else None,
        validate_values=params.get("validate_values", True),
    )
    tmp = tempfile.mkdtemp(prefix="aicr-gated-")
    try:
        connection = None
        if cluster is None or helm is None or (params.get("status_stack") and status_api is None):
            # one resolution: the Python client and helm reach the same cluster as the same identity
            connection = kube.resolve(params.get("kubeconfig"), params.get("context"))
        if cluster is None:
            cluster = KubeCluster(connection.api_client())
        if helm is None:
            kubeconfig_path, context = connection.helm_kubeconfig(tmp)
            helm = HelmRunner(params.get("helm_binary") or "helm", kubeconfig_path=kubeconfig_path, context=context,
                              home=params.get("helm_home") or os.path.join(tmp, "helm"), version_cache_dir=options.cache_dir)
            # checked before the first mutation (GatedRelease.run) and at the end; read meanwhile
            helm.start_version_probe()
        live, live_warning = None, None
        if params.get("status_stack") and not check_mode:
            from ansible_collections.aicr.runtime.plugins.module_utils.stack import store  # pylint: disable=import-outside-toplevel
            if status_api is None:
                status_api = store.Api(connection.api_client())
            live, live_warning = store.live_status(status_api, params["status_stack"], params.get("status_backend") or "crd",
                                                   params.get("status_namespace") or "default", interval=LIVE_STATUS_INTERVAL)
        summary = None
        try:
            result = GatedRelease(cluster, helm, plan, options, on_transition=live.on_transition if live is not None else None).run()
        finally:
            if live is not None:
                summary = live.close()
        warnings = list(result.pop("warnings", None) or [])
        if live_warning:
            warnings.append(live_warning)
        if summary is not None:
            warnings.extend(summary.pop("warnings"))
            result["live_status"] = summary
        if warnings:
            result["warnings"] = warnings
        result["helm_version"] = getattr(helm, "major", None)
        if resolved is not None:
            result["resolved"] = resolved
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
