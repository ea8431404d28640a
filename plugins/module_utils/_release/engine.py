# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gated rollout: survey (read-only plan), then deploy or remove through the DAG scheduler.

This module is the orchestration only; each step is a section of its own:

1. *Survey* (``survey``), read-only and concurrent: the deployed release, the rendered manifests and a
   server-side dry-run apply per object. This is the check-mode plan.
2. If anything must change: take the stack Lease (``lease``), survey again (the cluster may have moved
   meanwhile), then run every component through the scheduler (``scheduler``) as soon as its gate opens
   (``deploy``). Readiness is always observed from the cluster.
3. ``prune`` removes what this stack installed earlier and the recipe no longer has, per its inventory ConfigMap
   (``inventory``, written ahead of every change) and only while the live cluster still holds what it recorded
   (``ownership``); ``state: absent`` removes all of it in reverse dependency order (``remove``). What is labelled
   for the stack but not in its inventory is reported (``foreign_claims``), never removed.
4. The result (``result``): every component, the waves, the actions, the diff and the summary.

``on_transition(component_result)``, when given, is called on every component phase change
(Deploying, Ready, Unchanged, Failed, Blocked, Removed; again for a Blocked component whose
``blocked_by`` grows) with that component's result dict, from the scheduler threads. Calls are
serialised (one at a time, in order per component) and should return quickly; an exception
raised by the callback is recorded in ``warnings`` and never affects the rollout.

The gated_release module's parameters become :class:`Options` and a plan in ``_entry.gated_release_inputs``; the run
from module parameters to the result (connection, helm, pre-flight, live status) is ``_entry.gated_release.execute``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shutil
import tempfile
import threading
import time

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._common.component import Component
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import BLOCKED as BLOCKED_PHASE
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import (
    PENDING, STACK_NAME_ALLOWED, stack_name_problem,
)
from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.keyedlocks import KeyedLocks
from ansible_collections.aicr.runtime.plugins.module_utils._common.sensitive import Sensitive
from ansible_collections.aicr.runtime.plugins.module_utils._common.validation import rule_problems
from ansible_collections.aicr.runtime.plugins.module_utils._helm.helm import server_validates_fields
from ansible_collections.aicr.runtime.plugins.module_utils._helm.mirrors import normalize_mirrors
from ansible_collections.aicr.runtime.plugins.module_utils._kube.deadline import labelled, retry_window
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import MAX_DURATION, MIN_DURATION, Guarded, StackLease
from ansible_collections.aicr.runtime.plugins.module_utils._release import health
from ansible_collections.aicr.runtime.plugins.module_utils._release import drift
from ansible_collections.aicr.runtime.plugins.module_utils._release.chartcrds import CHART_CRDS, ChartCrds
from ansible_collections.aicr.runtime.plugins.module_utils._release.deploy import Deploy
from ansible_collections.aicr.runtime.plugins.module_utils._release.early import EarlyStart
from ansible_collections.aicr.runtime.plugins.module_utils._release.inventory import Inventory
from ansible_collections.aicr.runtime.plugins.module_utils._release.remove import Remove
from ansible_collections.aicr.runtime.plugins.module_utils._release.result import ComponentState, Result
from ansible_collections.aicr.runtime.plugins.module_utils._release.rollback import ON_FAILURE, Rollback
from ansible_collections.aicr.runtime.plugins.module_utils._release.scheduler import BLOCKED, run_dag
from ansible_collections.aicr.runtime.plugins.module_utils._release.scratch import RunScratch
from ansible_collections.aicr.runtime.plugins.module_utils._release import spec
from ansible_collections.aicr.runtime.plugins.module_utils._release.survey import Survey
from ansible_collections.aicr.runtime.plugins.module_utils._release.valuescheck import ValuesCheck

MAX_SECONDS = 7 * 24 * 3600  # timeout, overall_timeout: a week
MAX_CONCURRENCY = 64
MAX_POLL_INTERVAL = 60  # seconds


class Options(object):
    """Engine settings (the module's parameters, minus the cluster connection), checked in one pass.

    ``validate_chart_schema``: before the first change, pull the chart of every release that will be installed or
    upgraded and check its values against the chart's own ``values.schema.json`` (the module's ``validate_values``;
    given ``values_schemas`` are checked by :func:`validate_values`). ``problems``: a ``_common.checks.Problems`` the
    problems are added to (the caller raises); without, they are raised here, all at once.
    """

    def __init__(self, problems=None, **kwargs):
        # one validation pass: every problem is collected and raised at once; None means "not given" (the default),
        # a zero is a value and is refused where it is not allowed, never turned into the default
        own = problems if problems is not None else Problems("gated_release")
        self.stack = kwargs.get("stack") or "default"
        self.state = own.choice("state", kwargs.get("state"), spec.OPTIONS["state"]["choices"], default=spec.default("state"))
        self.concurrency = own.number("concurrency", kwargs.get("concurrency"), default=spec.default("concurrency"), minimum=1, maximum=MAX_CONCURRENCY,
                                      integer=True)
        self.timeout = own.positive("timeout", kwargs.get("timeout"), default=spec.default("timeout"), maximum=MAX_SECONDS)
        self.overall_timeout = own.positive("overall_timeout", kwargs.get("overall_timeout"), default=spec.default("overall_timeout"), maximum=MAX_SECONDS)
        self.poll_interval = own.positive("poll_interval", kwargs.get("poll_interval"), default=spec.default("poll_interval"), maximum=MAX_POLL_INTERVAL)
        self.lease_duration = own.number("lease_duration", kwargs.get("lease_duration"), default=spec.default("lease_duration"), minimum=MIN_DURATION,
                                         maximum=MAX_DURATION, integer=True, unit="seconds")
        self.prune = bool(kwargs.get("prune"))
        self.check_mode = bool(kwargs.get("check_mode"))
        self.diff = bool(kwargs.get("diff"))
        self.mirrors = {}
        try:
            self.mirrors = normalize_mirrors(kwargs.get("repository_mirrors"))
        except AicrError as exc:
            own.extend(exc)
        self.atomic = bool(kwargs.get("atomic"))
        self.clear_pending = bool(kwargs.get("clear_pending"))
        self.adopt = bool(kwargs.get("adopt"))
        self.sensitive = Sensitive(kwargs.get("sensitive_values"))
        self.lease_namespace = kwargs.get("lease_namespace") or spec.default("lease_namespace")
        wrong = stack_name_problem(self.lease_namespace)  # a namespace name: the same DNS-1123 label rule
        if wrong:
            own.add("lease_namespace", "%s %s; allowed: %s" % (repr(self.lease_namespace)[:80], wrong, STACK_NAME_ALLOWED),
                    value=self.lease_namespace, allowed=STACK_NAME_ALLOWED)
        self.holder_message = kwargs.get("holder_message") or ""
        self.recipe_name = kwargs.get("recipe_name") or ""
        self.cache_dir = kwargs.get("cache_dir")
        self.early_start = bool(_given(kwargs, "early_start"))
        self.validate_chart_schema = bool(kwargs.get("validate_chart_schema", kwargs.get("validate_values")))
        self.on_failure = own.choice("on_failure", kwargs.get("on_failure"), ON_FAILURE, default=spec.default("on_failure"))
        self.chart_crds = own.choice("chart_crds", kwargs.get("chart_crds"), CHART_CRDS, default=spec.default("chart_crds"))
        allow = kwargs.get("allow_breaking_crd_changes") or []
        if not isinstance(allow, (list, tuple)) or not all(isinstance(a, str) and a for a in allow):
            own.add("allow_breaking_crd_changes", "%s is not allowed; allowed: a list of CRD or component names" % repr(allow)[:80])
            allow = []
        self.allow_breaking_crd_changes = frozenset(allow)
        self.health = kwargs.get("health") or health.HealthOptions(_given(kwargs, "health_checks"), kwargs.get("health_check_timeout"),
                                                                   kwargs.get("health_check_skip"), problems=own)
        # drift (issue 39): ignore (the default: not read, as before), report (read, nothing written), correct
        self.drift = own.choice("drift", kwargs.get("drift"), drift.MODES, default=spec.default("drift"))
        self.drift_rules = drift.ignore_rules(drift.check_ignore(kwargs.get("drift_ignore"), own))
        for name in spec.RANGED:  # declared with their range (``spec.OPTIONS``), read by name
            declared = spec.OPTIONS[name]
            setattr(self, name, own.number(name, kwargs.get(name), default=spec.default(name), minimum=declared.get("minimum"),
                                           maximum=declared.get("maximum"), integer=declared["type"] == "int"))
        spec.check_together(self, own)
        self.helm_flags = spec.helm_flags(dict((name, getattr(self, name, None)) for name in spec.OPTIONS))
        if problems is None:
            own.raise_if_any()
        for name in ("timeout", "overall_timeout", "poll_interval"):
            value = getattr(self, name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                setattr(self, name, float(value))


def _given(kwargs, name):
    """``kwargs[name]``, or the option's declared default when it is not given (None)."""
    value = kwargs.get(name)
    return spec.default(name) if value is None else value


class GatedRelease(Survey, ValuesCheck, ChartCrds, Deploy, EarlyStart, Remove, Rollback, Result):
    """One run of gated_release against one cluster."""

    def __init__(self, cluster, helm, plan, options, clock=time.monotonic, sleep=cancel.pause, wall=time.time, on_transition=None, checks=None):
        self.cluster = cluster
        self.checks = checks or {}  # {component: assertions.Check}: run once the component is Ready (health.run_check)
        self.check_notes = {}  # {component: why it has no check}, for its health entry
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
        self.inventory = Inventory(cluster, options.stack, options.lease_namespace)
        self.leftovers = []
        self.leftover_notes = {}  # {leftover: why its release is not uninstalled (``ownership.release_standing``), from the survey}
        self._namespaces_present = set()  # namespaces this run saw or created (Deploy._ensure_namespace)
        self._namespace_locks = KeyedLocks()  # the one read of a namespace (Deploy._namespace_present)
        self._rendered = {}
        self._render_futures = {}
        self._render_pool = None
        self.on_transition = on_transition
        self._transition_lock = threading.Lock()
        self._notified = {}
        self.warnings = []
        self.foreign_claims = []  # releases and objects labelled for the stack that its inventory does not vouch for
        self.lease = None  # the stack Lease while this run holds it
        self.rollbacks = []  # on_failure: rollback: what was decided per failed component and dependent (``_release.rollback``)
        self._init_values_check()  # the charts pulled and the values checked (ValuesCheck)
        self._init_chart_crds()  # the charts' CRDs checked and applied (ChartCrds)

    # -- helpers ---------------------------------------------------------------
    def _action(self, text):
        with self._actions_lock:
            self.actions.append(text)

    def _done_so_far(self):
        """The result's ``actions`` so far (``cancel.report``: a cancelled run's result lists them)."""
        with self._actions_lock:
            return {"actions": list(self.actions)}

    def _warn(self, text):
        with self._actions_lock:
            if text not in self.warnings and len(self.warnings) < 10:
                self.warnings.append(text)

    def _claim(self, found, text):
        """Report a foreign claim (``claims.claim``): in ``foreign_claims`` and as a warning ``foreign claim: <text>``."""
        with self._actions_lock:
            key = (found["kind"], found.get("namespace"), found["name"])
            if any((c["kind"], c.get("namespace"), c["name"]) == key for c in self.foreign_claims):
                return
            found["message"] = "foreign claim: %s" % text
            self.foreign_claims.append(found)
        self._warn(found["message"])

    def _transition(self, st):
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
                self._warn("on_transition: the status callback failed for component %s (phase %s): %s: %s"
                           % (name, st.phase, exc.__class__.__name__, str(exc)[:300]))

    def _leftover_state(self, name, entry, removing=True):
        st = ComponentState(Component.leftover(name, entry))
        if removing:
            st.action, st.reason = "remove", self._leftover_reason(name)
        return st

    def _leftover_reason(self, name):
        note = self.leftover_notes.get(name)
        return "installed by stack %s earlier; no longer in the recipe" % self.opts.stack + ("; its release is not uninstalled: %s" % note if note else "")

    # -- run -----------------------------------------------------------------------------
    def run(self):
        cancel.report(self._done_so_far)  # cancelled (SIGTERM), the task still lists what was done
        self.workdir = tempfile.mkdtemp(prefix="aicr-release-")
        start = self.clock()
        try:
            self.inventory.load(self._action, self._warn)
            lease, lost = None, None
            if self.opts.check_mode or self.opts.state == "absent":
                self.survey()
                mutation = self._mutation_planned()
            else:
                # Releases first (one Secret list each): when one must change, the rollout is certain and the
                # objects are surveyed at gate-open, once their dependencies (and CRDs) are Ready.
                self.survey(objects=False)
                mutation = self._mutation_planned()
                if not mutation:
                    self.survey_objects()
                    mutation = self._mutation_planned()
            if self.opts.state == "present" and (self.opts.validate_chart_schema or self._managing_crds()):
                # every chart's values (and its CRDs) checked before the first change (check mode shows the same refusal)
                refused = self._check_values_up_front()
                if refused:
                    return self._refused_up_front(refused)
            if mutation and not self.opts.check_mode:
                self.helm.major  # pylint: disable=pointless-statement  # a missing or too old helm fails before any change
                self.helm.server_validates_fields = server_validates_fields(self.cluster.server_version())
                message = self.opts.holder_message or "aicr.runtime.gated_release %s of %s" % (self.opts.state, self.opts.recipe_name or "a recipe")
                lease = StackLease(self.cluster, self.opts.stack, namespace=self.opts.lease_namespace, duration=self.opts.lease_duration, message=message)
                # a missing lease namespace is created only if this identity could use it; taken away again with an empty
                # inventory when this run installs nothing (scratch)
                scratch = RunScratch(self.cluster, self.inventory, self.opts.lease_namespace, note=self._action,
                                     warn=self._warn).prepare(self._namespace_present, self._ensure_namespace)
                scratch.acquire(lease)
                self.lease = lease
                # from here on every mutating call checks first that this run still holds the Lease
                raw_cluster, raw_helm = self.cluster, self.helm
                self.cluster, self.inventory.cluster = Guarded(raw_cluster, lease), Guarded(raw_cluster, lease)  # what the run changes: self.cluster's
                self.helm = Guarded(raw_helm, lease)
                # helm's retries clear a revision their own interrupted attempt left pending through the guarded client
                raw_helm.release_client = self.cluster
                try:
                    self._start_early_starts(raw_helm)
                    self.inventory.load(self._action, self._warn)
                    self.survey(objects=self.opts.state == "absent")
                    self._prefetch_renders()
                    outcomes = self._execute(start)
                    if self.opts.on_failure == "rollback" and self.opts.state == "present":
                        self.rollbacks = self._roll_back_failed(start + self.opts.overall_timeout)  # still under the Lease, before the inventory's record
                    try:
                        self.inventory.record(self.plan, self.states, self.leftovers, outcomes, self.opts.state, self.opts.prune)
                    except AicrError:
                        if lease.loss() is None:
                            raise
                        # another run may hold the stack now: its inventory is not overwritten; the run fails below, reporting
                        # what it did (what it installed was written ahead into the inventory, so the next run knows it)
                        self._warn("stack %s: its inventory ConfigMap %s/%s was not updated: the Lease was lost"
                                   % (self.opts.stack, self.inventory.namespace, self.inventory.name))
                finally:
                    self._stop_early_starts()
                    self._stop_prefetch()
                    changed = self.cluster.changed or self.helm.changed
                    self.cluster = self.inventory.cluster = raw_cluster
                    self.helm = raw_helm
                    raw_helm.release_client = None
                    lease.release()
                    scratch.clean(changed)
                lost = lease.lost_by_the_end()  # the run fails, reporting what it did: another run may hold the stack
            elif not self.opts.check_mode:
                outcomes = self._execute(start)
            else:
                outcomes = None
                for st in self.states.values():
                    st.phase = PENDING
            result = self._chart_crds_into(self._result(outcomes, lease))
            if lost:
                result["failed_message"] = lost + (" | " + result["failed_message"] if result.get("failed_message") else "")
            return result
        finally:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def _mark_blocked(self, outcome):
        st = self.states.get(outcome.name)
        if st is None:
            return
        self._abandon_blocked(outcome.name)
        st.phase = BLOCKED_PHASE
        st.blocked_by = list(outcome.blocked_by)
        if outcome.blocked_by:
            st.message = "blocked: dependency %s failed" % ", ".join(outcome.blocked_by) if self.opts.state == "present" \
                else "blocked: dependent %s could not be removed" % ", ".join(outcome.blocked_by)
        else:
            st.message = outcome.error or "not started"
        self._transition(st)

    def _within_timeout(self, step, overall_deadline):
        """``step`` (one component's deploy or removal) with its cluster requests retried (429, 5xx, no answer) until its
        deadline - its ``timeout`` within the overall one - rather than a fixed count: an API server that stops answering
        for less than that is waited for."""
        def timed(*args):
            with retry_window(max(0.0, min(self.opts.timeout, overall_deadline - self.clock())), labelled("timeout", self.opts.timeout)):
                return step(*args)
        return timed

    def _run_dag(self, order, deps, work, overall_deadline):
        return run_dag(order, deps, work, concurrency=self.opts.concurrency, deadline=overall_deadline, clock=self.clock, on_block=self._mark_blocked)

    def _execute(self, start):
        overall_deadline = start + self.opts.overall_timeout
        deploy, remove = self._within_timeout(self._deploy, overall_deadline), self._within_timeout(self._remove, overall_deadline)
        if self.opts.state == "present":
            outcomes = self._run_dag(self.plan.order, self.plan.deps, lambda n: deploy(n, overall_deadline), overall_deadline)
            if self.opts.prune and self.leftovers:
                order, entries, deps = self._removal_entries(include_plan=False)
                for name in order:
                    self.states[name] = self._leftover_state(name, entries[name], removing=False)
                outcomes.update(self._run_dag(order, deps, lambda n: remove(n, entries[n], overall_deadline), overall_deadline))
        else:
            order, entries, deps = self._removal_entries(include_plan=True)
            for name in order:
                if name not in self.states:
                    self.states[name] = self._leftover_state(name, entries[name], removing=False)
            outcomes = self._run_dag(order, deps, lambda n: remove(n, entries[n], overall_deadline), overall_deadline)
        for outcome in outcomes.values():
            if outcome.status == BLOCKED:
                self._mark_blocked(outcome)
        return outcomes


__all__ = ["GatedRelease", "Options", "validate_values"]


def validate_values(plan, schemas):
    """Validate each component's values against a JSON Schema (``{component: schema}``)."""
    if not schemas:
        return
    problems = []
    for name in plan.order:
        schema = schemas.get(name)
        if not schema:
            continue
        problems.extend("%s: %s" % (name, p) for p in rule_problems(schema, plan.by_name[name].values))
    if problems:
        raise AicrError("values: %d value(s) do not match the component schemas; first: %s" % (len(problems), problems[0]),
                        field="values", problems=problems[:50])
