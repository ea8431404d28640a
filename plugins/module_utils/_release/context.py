# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The state one gated_release run shares between its collaborators, explicit: :class:`RunContext`.

What a run reads and records is here, and nothing else: the cluster and helm clients (swapped for their Lease-guarded
versions while the run holds the stack: every collaborator reads ``ctx.cluster`` and ``ctx.helm`` at each use, never
keeps them), the plan, the options, the clocks, the component states, the inventory, the leftovers, the recorders of
``actions``, ``warnings`` and ``foreign_claims`` (one lock), the Lease, the ``on_transition`` notifier and the few
steps every collaborator takes the same way (one component's timed step, waiting for objects to be Ready, the labels of
a release). :class:`Namespaces` is the run's one view of which namespaces exist (read once, created once).

The collaborators (``survey.Surveyor``, ``valuescheck.ValuesChecker``, ``chartcrds.ChartCrdManager``, ``deploy.Deployer``,
``early.EarlyStarter``, ``remove.Remover``, ``rollback.RollBacker``, ``result.Reporter``) each take a context and the
collaborators they call; ``engine.GatedRelease`` wires them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading
import time

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel, timeutil
from ansible_collections.aicr.runtime.plugins.module_utils._common.component import Component
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import (
    COMPONENT_LABEL, DEPLOYING, DIGEST_LABEL, FAILED, STACK_LABEL, label_value,
)
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.keyedlocks import KeyedLocks
from ansible_collections.aicr.runtime.plugins.module_utils._kube import wait
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._release.inventory import Inventory
from ansible_collections.aicr.runtime.plugins.module_utils._release.result import ComponentState

MAX_WARNINGS = 10


class RunContext(object):
    """One run's shared state: the clients, the plan, the options, the clocks, what was found and what was done."""

    def __init__(self, cluster, helm, plan, options, clock=time.monotonic, sleep=cancel.pause, wall=time.time, on_transition=None,
                 checks=None, inventory=None):
        self.cluster = cluster
        self.helm = helm
        self.plan = plan
        self.opts = options
        self.clock = clock
        self.sleep = sleep
        self.wall = wall
        self.checks = checks or {}  # {component: assertions.Check}: run once the component is Ready (health.run_check)
        self.workdir = None  # the run's scratch directory (charts pulled, renders), while it runs
        self.states = {}  # {component: result.ComponentState}, from the survey
        self.inventory = inventory if inventory is not None else Inventory(cluster, options.stack, options.lease_namespace)
        self.leftovers = []  # [(name, inventory entry)]: what the stack installed earlier and the recipe no longer has
        self.leftover_notes = {}  # {leftover: why its release is not uninstalled (``ownership.release_standing``), from the survey}
        self.lease = None  # the stack Lease while this run holds it
        self.rollbacks = []  # on_failure: rollback: what was decided per failed component and dependent (``_release.rollback``)
        self.lock = threading.Lock()  # actions, warnings, foreign claims
        self.actions = []
        self.warnings = []
        self.foreign_claims = []  # releases and objects labelled for the stack that its inventory does not vouch for
        self.on_transition = on_transition
        self._transition_lock = threading.Lock()
        self._notified = {}

    # -- the recorders ------------------------------------------------------------------
    def action(self, text):
        with self.lock:
            self.actions.append(text)

    def done_so_far(self):
        """The result's ``actions`` so far (``cancel.report``: a cancelled run's result lists them)."""
        with self.lock:
            return {"actions": list(self.actions)}

    def warn(self, text):
        with self.lock:
            if text not in self.warnings and len(self.warnings) < MAX_WARNINGS:
                self.warnings.append(text)

    def claim(self, found, text):
        """Report a foreign claim (``claims.claim``): in ``foreign_claims`` and as a warning ``foreign claim: <text>``."""
        with self.lock:
            key = (found["kind"], found.get("namespace"), found["name"])
            if any((c["kind"], c.get("namespace"), c["name"]) == key for c in self.foreign_claims):
                return
            found["message"] = "foreign claim: %s" % text
            self.foreign_claims.append(found)
        self.warn(found["message"])

    def transition(self, st):
        """Tell ``on_transition`` about the component's phase (once per phase / blockers); a failing callback is a warning."""
        if self.on_transition is None:
            return
        with self._transition_lock:
            name = st.comp.name
            signature = (st.phase, tuple(st.blocked_by), (st.rolled_back or {}).get("status"))
            if self._notified.get(name) == signature:
                return
            self._notified[name] = signature
            result = st.as_result(self.inventory.loaded_entry(name))
            try:
                self.on_transition(result)
            except Exception as exc:  # pylint: disable=broad-except
                self.warn("on_transition: the status callback failed for component %s (phase %s): %s: %s"
                          % (name, st.phase, exc.__class__.__name__, str(exc)[:300]))

    # -- leftovers ------------------------------------------------------------------------
    def leftover_state(self, name, entry, removing=True):
        st = ComponentState(Component.leftover(name, entry))
        if removing:
            st.action, st.reason = "remove", self.leftover_reason(name)
        return st

    def leftover_reason(self, name):
        note = self.leftover_notes.get(name)
        return "installed by stack %s earlier; no longer in the recipe" % self.opts.stack + ("; its release is not uninstalled: %s" % note if note else "")

    # -- steps every collaborator takes the same way ------------------------------------------
    def release_labels(self, comp):
        """The labels of the component's helm release: the stack, the component, the digest of what it installs."""
        return {STACK_LABEL: label_value(self.opts.stack), COMPONENT_LABEL: label_value(comp.name), DIGEST_LABEL: comp.digest()}

    def wait_ready(self, comp, refs, deadline, what):
        """Wait until every object of ``refs`` is current (kstatus rules), observing the cluster."""
        wait.until_current(self.cluster, refs, deadline, "component %s" % comp.name, what, poll_interval=self.opts.poll_interval,
                           clock=self.clock, sleep=self.sleep, details={"component": comp.name})

    def step(self, st, overall_deadline, work):
        """Run ``work(deadline)`` for one component: Deploying first, the phase ``work`` sets (or Failed) after; timed."""
        t0 = self.clock()
        st.started = timeutil.millis_from_epoch(self.wall())
        st.phase = DEPLOYING
        self.transition(st)
        deadline = min(t0 + self.opts.timeout, overall_deadline)
        try:
            work(deadline)
        except AicrError as exc:
            st.phase, st.message = FAILED, exc.msg
            raise
        except Exception as exc:
            st.phase, st.message = FAILED, "%s: %s" % (exc.__class__.__name__, exc)
            raise
        finally:
            st.duration = round(self.clock() - t0, 3)
            self.transition(st)
        return st.phase


class Namespaces(object):
    """Which namespaces exist, for one run: read once (present stays present; absent is read again), created once."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._present = set()  # namespaces this run saw or created
        self._locks = KeyedLocks()  # the one read of a namespace

    def present(self, namespace):
        """Whether ``namespace`` exists. The components of a level reach their gates together: one of them reads, the
        others wait for its answer."""
        if namespace in self._present:
            return True
        with self._locks(namespace):
            if namespace not in self._present and self.ctx.cluster.get("v1", "Namespace", namespace) is not None:
                self._present.add(namespace)
        return namespace in self._present

    def ensure(self, namespace):
        """Create the component's namespace when it is missing: a plain create, the one write RBAC needs on namespaces
        (helm gets no --create-namespace, which helm 4 does as a server-side apply: ``patch`` on every namespace).
        A namespace seen or created once in this run is not read again (each gate of a level would read it)."""
        if self.present(namespace):
            return False
        try:
            self.ctx.cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        except ClusterError as exc:
            if exc.status != 409:
                raise
            self._present.add(namespace)
            return False  # another component of the same namespace created it meanwhile
        self._present.add(namespace)
        self.ctx.action("create namespace %s" % namespace)
        return True


__all__ = ["Namespaces", "RunContext"]
