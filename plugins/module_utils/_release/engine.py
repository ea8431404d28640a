# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The gated rollout: survey (read-only plan), then deploy or remove through the DAG scheduler.

This module is the orchestration only. A run's shared state is one explicit object (``context.RunContext``); each
step is a collaborator of its own over it, given the collaborators it calls (:class:`GatedRelease` wires them):
``survey.Surveyor``, ``valuescheck.ValuesChecker``, ``chartcrds.ChartCrdManager``, ``deploy.Deployer``,
``early.EarlyStarter``, ``remove.Remover``, ``rollback.RollBacker`` and ``result.Reporter``.

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
import time

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import BLOCKED as BLOCKED_PHASE
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import (
    PENDING, STACK_NAME_ALLOWED, stack_name_problem,
)
from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.sensitive import Sensitive
from ansible_collections.aicr.runtime.plugins.module_utils._common.validation import rule_problems
from ansible_collections.aicr.runtime.plugins.module_utils._helm.helm import server_validates_fields
from ansible_collections.aicr.runtime.plugins.module_utils._helm.mirrors import normalize_mirrors
from ansible_collections.aicr.runtime.plugins.module_utils._kube.deadline import labelled, retry_window
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import MAX_DURATION, MIN_DURATION, Guarded, StackLease
from ansible_collections.aicr.runtime.plugins.module_utils._release import health
from ansible_collections.aicr.runtime.plugins.module_utils._release import drift
from ansible_collections.aicr.runtime.plugins.module_utils._release.chartcrds import CHART_CRDS, ChartCrdManager
from ansible_collections.aicr.runtime.plugins.module_utils._release.context import Namespaces, RunContext
from ansible_collections.aicr.runtime.plugins.module_utils._release.deploy import Deployer
from ansible_collections.aicr.runtime.plugins.module_utils._release.early import EarlyStarter
from ansible_collections.aicr.runtime.plugins.module_utils._release.remove import Remover
from ansible_collections.aicr.runtime.plugins.module_utils._release.result import Reporter
from ansible_collections.aicr.runtime.plugins.module_utils._release.rollback import ON_FAILURE, RollBacker
from ansible_collections.aicr.runtime.plugins.module_utils._release.scheduler import BLOCKED, run_dag
from ansible_collections.aicr.runtime.plugins.module_utils._release.scratch import RunScratch
from ansible_collections.aicr.runtime.plugins.module_utils._release import spec
from ansible_collections.aicr.runtime.plugins.module_utils._release.survey import Surveyor
from ansible_collections.aicr.runtime.plugins.module_utils._release.valuescheck import ValuesChecker

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
        self.early_start = bool(spec.given(kwargs, "early_start"))
        self.validate_chart_schema = bool(kwargs.get("validate_chart_schema", kwargs.get("validate_values")))
        self.on_failure = own.choice("on_failure", kwargs.get("on_failure"), ON_FAILURE, default=spec.default("on_failure"))
        self.chart_crds = own.choice("chart_crds", kwargs.get("chart_crds"), CHART_CRDS, default=spec.default("chart_crds"))
        allow = kwargs.get("allow_breaking_crd_changes") or []
        if not isinstance(allow, (list, tuple)) or not all(isinstance(a, str) and a for a in allow):
            own.add("allow_breaking_crd_changes", "%s is not allowed; allowed: a list of CRD or component names" % repr(allow)[:80])
            allow = []
        self.allow_breaking_crd_changes = frozenset(allow)
        self.health = kwargs.get("health") or health.HealthOptions(spec.given(kwargs, "health_checks"), kwargs.get("health_check_timeout"),
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


class GatedRelease(object):
    """One run of gated_release against one cluster: the run context (``context.RunContext``) and the collaborators
    wired over it, each given what it calls; this class keeps the orchestration (:meth:`run`, the scheduler's runs)."""

    def __init__(self, cluster, helm, plan, options, clock=time.monotonic, sleep=cancel.pause, wall=time.time, on_transition=None, checks=None):
        self.ctx = ctx = RunContext(cluster, helm, plan, options, clock=clock, sleep=sleep, wall=wall, on_transition=on_transition, checks=checks)
        self.namespaces = Namespaces(ctx)
        self.surveyor = Surveyor(ctx)
        self.crds = ChartCrdManager(ctx)  # the charts' CRDs checked and applied
        self.charts = ValuesChecker(ctx, self.crds)  # the charts pulled and the values checked
        self.early = EarlyStarter(ctx, self.charts, self.namespaces)
        self.remover = Remover(ctx)
        self.deployer = Deployer(ctx, self.surveyor, self.charts, self.crds, self.early, self.remover, self.namespaces)
        self.rollbacker = RollBacker(ctx)
        self.reporter = Reporter(ctx, self.rollbacker, self.crds)
        self._raw = None  # (cluster, helm) unguarded, while the run holds the Lease
        self._scratch = None  # scratch.RunScratch: the lease namespace and inventory this run may have created

    @property
    def lease(self):
        """The stack Lease while this run holds it."""
        return self.ctx.lease

    # -- run -----------------------------------------------------------------------------
    def run(self):
        ctx, opts = self.ctx, self.ctx.opts
        cancel.report(ctx.done_so_far)  # cancelled (SIGTERM), the task still lists what was done
        ctx.workdir = tempfile.mkdtemp(prefix="aicr-release-")
        start = ctx.clock()
        try:
            ctx.inventory.load(ctx.action, ctx.warn)
            lease, lost = None, None
            if opts.check_mode or opts.state == "absent":
                self.surveyor.survey()
                mutation = self.surveyor.mutation_planned()
            else:
                # Releases first (one Secret list each): when one must change, the rollout is certain and the
                # objects are surveyed at gate-open, once their dependencies (and CRDs) are Ready.
                self.surveyor.survey(objects=False)
                mutation = self.surveyor.mutation_planned()
                if not mutation:
                    self.surveyor.survey_objects()
                    mutation = self.surveyor.mutation_planned()
            if opts.state == "present" and (opts.validate_chart_schema or self.crds.managing()):
                # every chart's values (and its CRDs) checked before the first change (check mode shows the same refusal)
                refused = self.charts.check_up_front()
                if refused:
                    return self.reporter.refused_up_front(refused)
            if mutation and not opts.check_mode:
                lease = self._take_lease()
                try:
                    outcomes = self._roll_out_under(lease, start)
                finally:
                    self._let_go(lease)
                lost = lease.lost_by_the_end()  # the run fails, reporting what it did: another run may hold the stack
            elif not opts.check_mode:
                outcomes = self._execute(start)
            else:
                outcomes = None
                for st in ctx.states.values():
                    st.phase = PENDING
            result = self.crds.into(self.reporter.result(outcomes, lease))
            if lost:
                result["failed_message"] = lost + (" | " + result["failed_message"] if result.get("failed_message") else "")
            return result
        finally:
            shutil.rmtree(ctx.workdir, ignore_errors=True)

    def _take_lease(self):
        """The stack Lease taken; from then on every mutating call (``ctx.cluster``, ``ctx.helm``) checks first that this
        run still holds it."""
        ctx, opts = self.ctx, self.ctx.opts
        ctx.helm.major  # pylint: disable=pointless-statement  # a missing or too old helm fails before any change
        ctx.helm.server_validates_fields = server_validates_fields(ctx.cluster.server_version())
        message = opts.holder_message or "aicr.runtime.gated_release %s of %s" % (opts.state, opts.recipe_name or "a recipe")
        lease = StackLease(ctx.cluster, opts.stack, namespace=opts.lease_namespace, duration=opts.lease_duration, message=message)
        # a missing lease namespace is created only if this identity could use it; taken away again with an empty
        # inventory when this run installs nothing (scratch)
        self._scratch = RunScratch(ctx.cluster, ctx.inventory, opts.lease_namespace, note=ctx.action,
                                   warn=ctx.warn).prepare(self.namespaces.present, self.namespaces.ensure)
        self._scratch.acquire(lease)
        ctx.lease = lease
        self._raw = (ctx.cluster, ctx.helm)
        raw_cluster, raw_helm = self._raw
        ctx.cluster, ctx.inventory.cluster = Guarded(raw_cluster, lease), Guarded(raw_cluster, lease)  # what the run changes: ctx.cluster's
        ctx.helm = Guarded(raw_helm, lease)
        # helm's retries clear a revision their own interrupted attempt left pending through the guarded client
        raw_helm.release_client = ctx.cluster
        return lease

    def _roll_out_under(self, lease, start):
        """The rollout (or removal) while this run holds the Lease; the scheduler's outcomes."""
        ctx, opts = self.ctx, self.ctx.opts
        self.early.start(self._raw[1])
        ctx.inventory.load(ctx.action, ctx.warn)
        self.surveyor.survey(objects=opts.state == "absent")
        self.surveyor.prefetch_renders()
        outcomes = self._execute(start)
        if opts.on_failure == "rollback" and opts.state == "present":
            ctx.rollbacks = self.rollbacker.roll_back_failed(start + opts.overall_timeout)  # still under the Lease, before the inventory's record
        try:
            ctx.inventory.record(ctx.plan, ctx.states, ctx.leftovers, outcomes, opts.state, opts.prune)
        except AicrError:
            if lease.loss() is None:
                raise
            # another run may hold the stack now: its inventory is not overwritten; the run fails below, reporting
            # what it did (what it installed was written ahead into the inventory, so the next run knows it)
            ctx.warn("stack %s: its inventory ConfigMap %s/%s was not updated: the Lease was lost"
                     % (opts.stack, ctx.inventory.namespace, ctx.inventory.name))
        return outcomes

    def _let_go(self, lease):
        """Early helms stopped, renders finished, the raw clients back, the Lease released, the scratch cleaned."""
        ctx = self.ctx
        self.early.stop()
        self.surveyor.stop_prefetch()
        changed = ctx.cluster.changed or ctx.helm.changed
        raw_cluster, raw_helm = self._raw
        ctx.cluster = ctx.inventory.cluster = raw_cluster
        ctx.helm = raw_helm
        raw_helm.release_client = None
        lease.release()
        self._scratch.clean(changed)

    def _mark_blocked(self, outcome):
        st = self.ctx.states.get(outcome.name)
        if st is None:
            return
        self.early.abandon_blocked(outcome.name)
        st.phase = BLOCKED_PHASE
        st.blocked_by = list(outcome.blocked_by)
        if outcome.blocked_by:
            st.message = "blocked: dependency %s failed" % ", ".join(outcome.blocked_by) if self.ctx.opts.state == "present" \
                else "blocked: dependent %s could not be removed" % ", ".join(outcome.blocked_by)
        else:
            st.message = outcome.error or "not started"
        self.ctx.transition(st)

    def _within_timeout(self, step, overall_deadline):
        """``step`` (one component's deploy or removal) with its cluster requests retried (429, 5xx, no answer) until its
        deadline - its ``timeout`` within the overall one - rather than a fixed count: an API server that stops answering
        for less than that is waited for."""
        opts, clock = self.ctx.opts, self.ctx.clock

        def timed(*args):
            with retry_window(max(0.0, min(opts.timeout, overall_deadline - clock())), labelled("timeout", opts.timeout)):
                return step(*args)
        return timed

    def _run_dag(self, order, deps, work, overall_deadline):
        return run_dag(order, deps, work, concurrency=self.ctx.opts.concurrency, deadline=overall_deadline, clock=self.ctx.clock,
                       on_block=self._mark_blocked)

    def _execute(self, start):
        ctx, opts = self.ctx, self.ctx.opts
        overall_deadline = start + opts.overall_timeout
        deploy = self._within_timeout(self.deployer.deploy, overall_deadline)
        remove = self._within_timeout(self.remover.remove, overall_deadline)
        if opts.state == "present":
            outcomes = self._run_dag(ctx.plan.order, ctx.plan.deps, lambda n: deploy(n, overall_deadline), overall_deadline)
            if opts.prune and ctx.leftovers:
                order, entries, deps = self.remover.removal_entries(include_plan=False)
                for name in order:
                    ctx.states[name] = ctx.leftover_state(name, entries[name], removing=False)
                outcomes.update(self._run_dag(order, deps, lambda n: remove(n, entries[n], overall_deadline), overall_deadline))
        else:
            order, entries, deps = self.remover.removal_entries(include_plan=True)
            for name in order:
                if name not in ctx.states:
                    ctx.states[name] = ctx.leftover_state(name, entries[name], removing=False)
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
