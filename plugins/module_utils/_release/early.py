# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Early start (``early_start``, default on): which dependent's helm may start before its gate opens, and when.

A component's helm starts early once each of its dependencies has either finished (Ready, checked) or written
everything it will write (its release installed, no post-manifest objects, nothing to prune) without adding API
types; the component itself must install from a local chart - a local directory, or a remote chart pulled anyway to
check its values (``validate_values``) - without ``crds/`` or ``lookup``, and have no pre-manifest objects. The
rules and why: ``_release.gate``. At most ``concurrency`` helms wait at their gates; one that cannot start early
starts at its gate. A gate opens only from the component's own
step, after the scheduler started it (its dependencies Ready) and after the Lease check every change makes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.aicr.runtime.plugins.module_utils._release import gate
from ansible_collections.aicr.runtime.plugins.module_utils._helm.mirrors import chart_source
from ansible_collections.aicr.runtime.plugins.module_utils._release.ownership import release_owner

DONE = "done"  # finished: Ready (and checked)
WRITTEN = "written"  # written everything, adds no API types, becoming Ready
WRITTEN_API = "written-api"  # written everything, adds API types: its dependents start at their gates


class EarlyStarter(object):
    """The early starts of one run (``ctx``: a ``context.RunContext``; ``charts``: its ``valuescheck.ValuesChecker``, the
    local charts; ``namespaces``: its ``context.Namespaces``). Until :meth:`start` opens the gate server (and after
    :meth:`stop`) every call is a no-op: each component starts its helm at its gate."""

    def __init__(self, ctx, charts, namespaces):
        self.ctx = ctx
        self.charts = charts
        self.namespaces = namespaces
        self._gates = None
        self._early_closing = False

    def start(self, raw_helm):
        """Open the gate server when this run may start helms early (a rollout that installs with a real helm)."""
        self._early = {}  # name -> Future of (EarlyUpgrade or None)
        self._early_state = {}  # name -> DONE / WRITTEN / WRITTEN_API
        self._early_begun = set()  # components whose step began: too late to start early
        self._early_lock = threading.Lock()
        self._early_closing = False
        self._chart_paths = {}  # name -> the local chart it installs from
        self._chart_traits = {}  # name -> gate.ChartTraits (None: unreadable)
        self._raw_helm = raw_helm
        self._early_dependents = dict((name, []) for name in self.ctx.plan.order)
        for name in self.ctx.plan.order:
            for dep in self.ctx.plan.deps.get(name, ()):
                self._early_dependents.setdefault(dep, []).append(name)
        if not (self.ctx.opts.early_start and self.ctx.opts.state == "present" and not self.ctx.opts.check_mode
                and getattr(raw_helm, "supports_early_start", False)):
            return
        self._gates = gate.GateServer(self.ctx.workdir, raw_helm.major)
        self._early_slots = threading.BoundedSemaphore(max(1, self.ctx.opts.concurrency))
        self._early_pool = ThreadPoolExecutor(max_workers=max(1, min(self.ctx.opts.concurrency, 4)), thread_name_prefix="aicr-early")
        # the roots too: their helms start while this run reads its inventory and surveys under the Lease
        with self._early_lock:
            self._submit_early([name for name in self.ctx.plan.order if not self.ctx.plan.deps.get(name)])

    def stop(self):
        """Stop every helm still waiting at its gate (its component was blocked or the run failed): none of them writes."""
        if self._gates is None:
            return
        with self._early_lock:
            self._early_closing = True
        self._early_pool.shutdown(wait=True)
        with self._early_lock:
            left = list(self._early.items())
            self._early.clear()
        for name, future in left:
            early = future.result()
            if early is not None:
                self._raw_helm.abandon_upgrade(early, "component %s did not reach its gate" % name)
        self._gates.close()
        self._gates = None

    def written(self, name, state):
        """Component ``name`` has written all it writes (``state``); start the dependents that may now start early."""
        if self._gates is None:
            return
        with self._early_lock:
            if self._early_state.get(name) == DONE:
                return
            self._early_state[name] = state
            self._submit_early(self._early_dependents.get(name, ()))

    def _free_slot(self):
        """A waiting helm's slot is free again: start early what could not start for want of one."""
        self._early_slots.release()
        with self._early_lock:
            self._submit_early(self.ctx.plan.order)

    def _submit_early(self, names):
        """Start early those of ``names`` whose dependencies allow it, while slots are free (the caller holds the lock)."""
        if self._early_closing:
            return
        for name in names:
            if name in self._early or name in self._early_begun:
                continue
            states = [self._early_state.get(dep) for dep in self.ctx.plan.deps.get(name, ())]
            if not all(state in (DONE, WRITTEN) for state in states) or (states and WRITTEN not in states):
                continue  # a dependency still writes or adds API types; or all are done: its gate opens now anyway
            if not self._early_slots.acquire(blocking=False):
                return
            self._early[name] = self._early_pool.submit(self._start_early, name)

    def _start_early(self, name):
        """In a worker: the component's helm, started and waiting at its gate; None when it may not start early."""
        started = None
        try:
            started = self._try_start_early(name)
        except Exception:  # pylint: disable=broad-except  # any problem: it starts at its gate, which reports it
            started = None
        finally:
            if started is None:
                self._free_slot()  # it stays listed (as None): the retry starts others
        return started

    def _try_start_early(self, name):
        st = self.ctx.states[name]
        comp = st.comp
        if comp.manifest_only or comp.pre_manifest_paths or st.action == "unchanged" or not comp.chart:
            return None
        if st.deployed is not None and (st.deployed.pending or (release_owner(st.deployed, self.ctx.opts.stack) is not None and not self.ctx.opts.adopt)):
            return None  # its gate clears an interrupted operation first, or refuses another stack's release
        chart_ref, repo, flags, _where = chart_source(comp.chart, comp.repository, self.ctx.opts.mirrors)
        if not chart_ref.startswith("/") and not self.ctx.opts.validate_chart_schema:
            # a remote chart helm would fetch itself: pulling it first costs a helm process more per component (measured:
            # +1.2 CPU s per cluster of 6 on the fleet bench), which a CPU-bound controller pays in wall time
            return None
        path = self.charts.local_chart(comp, chart_ref, repo, flags)
        traits = self._traits_of(name, path)
        if traits is None or traits.crds or traits.lookup:
            return None
        if self.ctx.opts.validate_chart_schema:
            self.charts.validate_chart_values(comp, path)
        self.namespaces.present(comp.namespace)  # a read now, so that its gate reads nothing (a missing one is created there)
        gate = self._gates.new_gate(name)
        return self.ctx.helm.start_upgrade(comp.name, comp.namespace, path, comp.values, self.ctx.release_labels(comp), self._gates, gate,
                                           extra_flags=flags, atomic=self.ctx.opts.atomic, timeout=self.ctx.opts.timeout, workdir=self.ctx.workdir)

    def _traits_of(self, name, path=None):
        """What the local chart of component ``name`` (at ``path``, or where it was installed from) reads before helm's
        post-renderer; None when unknown. Kept per name: the survey under the Lease builds new component states."""
        with self._early_lock:
            if path is None:
                known = self._chart_traits.get(name)
                if known is not None:
                    return known
                path = self._chart_paths.get(name)
                if path is None:
                    return None
        traits = gate.chart_traits(path)
        with self._early_lock:
            self._chart_paths[name] = path
            self._chart_traits[name] = traits
        return traits

    def installed_from(self, name, path):
        """The component's helm installs from the local chart ``path`` (for :meth:`_traits_of`)."""
        if self._gates is not None:
            with self._early_lock:
                self._chart_paths.setdefault(name, path)

    def take(self, name):
        """The component's step begins: its early helm (None when it has none); from now on none is started for it."""
        if self._gates is None:
            return None
        with self._early_lock:
            self._early_begun.add(name)
            future = self._early.pop(name, None) if self._gates is not None else None
        return future.result() if future is not None else None

    def abandon_blocked(self, name):
        """A component blocked by a failed dependency: its early helm, if any, is stopped now (and frees its slot)."""
        if self._gates is None:
            return
        with self._early_lock:
            self._early_begun.add(name)
            future = self._early.pop(name, None)
        early = future.result() if future is not None else None
        if early is not None:
            self.drop(early, "dependency of %s failed" % name)

    def finish(self, early, remaining):
        try:
            return self.ctx.helm.finish_upgrade(early, timeout=remaining + 30)
        except BaseException:
            if early.gate.decision is None:  # refused before the gate opened (the Lease lost, SIGTERM): stop that helm
                self._raw_helm.abandon_upgrade(early, "the run stopped before the gate of %s opened" % early.release)
            raise
        finally:
            self._free_slot()

    def drop(self, early, reason):
        """Stop an early helm whose gate will not open (the component failed first)."""
        try:
            self._raw_helm.abandon_upgrade(early, reason)
        finally:
            self._free_slot()

    def write_state(self, st, docs, installed=True):
        """WRITTEN or WRITTEN_API for a component whose release was just written (``installed``) or found unchanged;
        None when it still writes (post objects, pruning) and its dependents wait for it to finish."""
        comp = st.comp
        if self._gates is None or comp.manifest_paths or (self.ctx.opts.prune and st.stale_objects):
            return None
        if not installed:
            return WRITTEN  # nothing new: what it serves is served already
        traits = self._traits_of(comp.name)
        try:
            adds_api = gate.provides_api(docs, traits)
        except Exception:  # pylint: disable=broad-except  # what cannot be read may add anything
            adds_api = True
        return WRITTEN_API if adds_api else WRITTEN


__all__ = ["EarlyStarter", "DONE", "WRITTEN", "WRITTEN_API"]
