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

:func:`execute` is what the gated_release module calls: module parameters in, the result out.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import tempfile
import threading
import time

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel, jsoncache
from ansible_collections.aicr.runtime.plugins.module_utils._common.component import Component
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import BLOCKED as BLOCKED_PHASE
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import (
    PENDING, STACK_NAME_ALLOWED, STACK_NAMESPACE, check_stack_name, stack_name_problem,
)
from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.keyedlocks import KeyedLocks
from ansible_collections.aicr.runtime.plugins.module_utils._common.sensitive import Sensitive, override_secrets
from ansible_collections.aicr.runtime.plugins.module_utils._kube.deadline import Deadline, labelled, retry_window
from ansible_collections.aicr.runtime.plugins.module_utils._release import health, preflight
from ansible_collections.aicr.runtime.plugins.module_utils._release.deploy import Deploy
from ansible_collections.aicr.runtime.plugins.module_utils._release.early import EarlyStart
from ansible_collections.aicr.runtime.plugins.module_utils._helm.helm import server_validates_fields
from ansible_collections.aicr.runtime.plugins.module_utils._helm.mirrors import normalize_mirrors
from ansible_collections.aicr.runtime.plugins.module_utils._release.inventory import Inventory
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import MAX_DURATION, MIN_DURATION, Guarded, StackLease
from ansible_collections.aicr.runtime.plugins.module_utils._release.remove import Remove
from ansible_collections.aicr.runtime.plugins.module_utils._release.result import ComponentState, Result
from ansible_collections.aicr.runtime.plugins.module_utils._release.scratch import RunScratch
from ansible_collections.aicr.runtime.plugins.module_utils._release.scheduler import BLOCKED, run_dag
from ansible_collections.aicr.runtime.plugins.module_utils._release.survey import Survey
from ansible_collections.aicr.runtime.plugins.module_utils._release.valuescheck import ValuesCheck

LIVE_STATUS_INTERVAL = 0.5  # seconds between two live status writes (transitions in between are coalesced)
MAX_SECONDS = 7 * 24 * 3600  # timeout, overall_timeout: a week
MAX_CONCURRENCY = 64
MAX_POLL_INTERVAL = 60  # seconds
LEASE_NAMESPACE = "aicr-system"  # the stack Lease and inventory live here by default, never in `default`


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
        self.state = own.choice("state", kwargs.get("state"), ("present", "absent"), default="present")
        self.concurrency = own.number("concurrency", kwargs.get("concurrency"), default=4, minimum=1, maximum=MAX_CONCURRENCY, integer=True)
        self.timeout = own.positive("timeout", kwargs.get("timeout"), default=600.0, maximum=MAX_SECONDS)
        self.overall_timeout = own.positive("overall_timeout", kwargs.get("overall_timeout"), default=3600.0, maximum=MAX_SECONDS)
        self.poll_interval = own.positive("poll_interval", kwargs.get("poll_interval"), default=0.5, maximum=MAX_POLL_INTERVAL)
        self.lease_duration = own.number("lease_duration", kwargs.get("lease_duration"), default=60, minimum=MIN_DURATION,
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
        self.lease_namespace = kwargs.get("lease_namespace") or LEASE_NAMESPACE
        wrong = stack_name_problem(self.lease_namespace)  # a namespace name: the same DNS-1123 label rule
        if wrong:
            own.add("lease_namespace", "%s %s; allowed: %s" % (repr(self.lease_namespace)[:80], wrong, STACK_NAME_ALLOWED),
                    value=self.lease_namespace, allowed=STACK_NAME_ALLOWED)
        self.holder_message = kwargs.get("holder_message") or ""
        self.recipe_name = kwargs.get("recipe_name") or ""
        self.cache_dir = kwargs.get("cache_dir")
        self.early_start = bool(kwargs.get("early_start", True))
        self.validate_chart_schema = bool(kwargs.get("validate_chart_schema", kwargs.get("validate_values")))
        self.health = kwargs.get("health") or health.HealthOptions(kwargs.get("health_checks", True), kwargs.get("health_check_timeout"),
                                                                   kwargs.get("health_check_skip"), problems=own)
        if problems is None:
            own.raise_if_any()
        for name in ("timeout", "overall_timeout", "poll_interval"):
            value = getattr(self, name)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                setattr(self, name, float(value))


class GatedRelease(Survey, ValuesCheck, Deploy, EarlyStart, Remove, Result):
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
        self._init_values_check()  # the charts pulled and the values checked (ValuesCheck)

    # -- helpers ---------------------------------------------------------------
    def _action(self, text):
        with self._actions_lock:
            self.actions.append(text)

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
            if self.opts.state == "present" and self.opts.validate_chart_schema:
                # every chart's values checked before the first change (check mode shows the same refusal)
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
            result = self._result(outcomes, lease)
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


__all__ = ["GatedRelease", "Options", "execute", "validate_values"]


def validate_values(plan, schemas):
    """Validate each component's values against a JSON Schema (``{component: schema}``)."""
    from ansible_collections.aicr.runtime.plugins.module_utils._common.validation import rule_problems  # pylint: disable=import-outside-toplevel

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


def under_resolve(error):
    """The recipe engine's error with its field named as this module takes it (``criteria.os`` -> ``resolve.criteria.os``)."""
    field = error.details.get("field")
    if not field:
        return error
    msg = "resolve." + error.msg if error.msg.startswith(field + ":") else error.msg
    return AicrError(msg, **dict(error.details, field="resolve." + field))


def repository_url_secrets(params):
    """The userinfo of repository URLs given in ``recipe``, ``component_overrides`` or ``repository_mirrors`` (refused
    later, ``_helm.repositories.refuse_userinfo``), hidden meanwhile."""
    from ansible_collections.aicr.runtime.plugins.module_utils._helm.repositories import url_secrets  # pylint: disable=import-outside-toplevel
    urls = []
    recipe = params.get("recipe")
    components = recipe.get("components") if isinstance(recipe, dict) else recipe
    for item in list(components if isinstance(components, list) else []) + list((params.get("component_overrides") or {}).values()):
        if isinstance(item, dict):
            urls += [item.get("repository"), item.get("source")]
    for upstream, target in (params.get("repository_mirrors") or {}).items():
        urls += [upstream, target.get("url") if isinstance(target, dict) else target]
    return url_secrets(urls)


def secret_params(params):
    """The strings under sensitive paths (``sensitive_values``) of the values given in the parameters — each component's
    ``values`` in ``recipe`` and in ``component_overrides`` —, for the module's no_log values: the ``invocation`` Ansible
    returns (shown with ``-v``) then never has them."""
    sensitive = Sensitive(params.get("sensitive_values"))
    found = set()
    recipe = params.get("recipe")
    components = recipe.get("components") if isinstance(recipe, dict) else recipe
    for comp in components if isinstance(components, list) else []:
        if isinstance(comp, dict):
            sensitive.secret_strings(comp.get("values"), found=found)
    override_secrets(sensitive, params.get("component_overrides"), found)
    # resolve.component_overrides' values are merged into the recipe here: theirs are as secret (issue 35)
    override_secrets(sensitive, (params.get("resolve") or {}).get("component_overrides"), found)
    found.update(repository_url_secrets(params))
    return found


def resolved_summary(resolution):
    """The part of a ``recipe.resolve`` result gated_release returns as ``resolved`` (not the components' values)."""
    recipe = resolution["recipe"]
    summary = {
        "recipe_name": resolution["recipe_name"],
        "catalog_digest": resolution["catalog_digest"],
        "catalog_root": resolution["catalog_root"],
        "criteria": recipe.get("criteria") or {},
        "applied_overlays": list((recipe.get("metadata") or {}).get("appliedOverlays") or []),
        "deployment_order": list(recipe.get("deploymentOrder") or []),
    }
    metadata = recipe.get("metadata") or {}
    # resolved against a snapshot: what AICR's constraint evaluation left out, and why
    if metadata.get("excludedOverlays"):
        summary["excluded_overlays"] = list(metadata["excludedOverlays"])
    if metadata.get("constraintWarnings"):
        summary["constraint_warnings"] = list(metadata["constraintWarnings"])
    return summary


def options_from(params, recipe, check_mode, diff, problems=None):
    """The engine's :class:`Options` from the module parameters; with ``problems`` (``_common.checks.Problems``) every
    problem is added to it (the caller raises), else they are raised here."""
    own = problems if problems is not None else Problems("gated_release")
    recipe_name = params.get("recipe_name") or (recipe.get("recipe_name") if isinstance(recipe, dict) else "") or ""
    stack = params.get("stack") or recipe_name or "default"
    cache_dir = None
    try:
        if problems is None or not params.get("stack"):  # a given stack was checked with status_stack (check_stack_options)
            check_stack_name("stack", stack)  # a stack named after its recipe obeys the same rule (its labels, Lease, inventory)
        cache_dir = _private_cache_dir(params) if params.get("render_cache", True) else None
    except AicrError as exc:
        own.extend(exc)
    options = Options(
        problems=own,
        stack=stack, state=params.get("state"), concurrency=params.get("concurrency"),
        timeout=params.get("timeout"), overall_timeout=params.get("overall_timeout"), poll_interval=params.get("poll_interval"),
        prune=params.get("prune"), check_mode=check_mode, diff=diff, repository_mirrors=params.get("repository_mirrors"),
        atomic=params.get("atomic"), clear_pending=params.get("clear_pending"), adopt=params.get("adopt"), sensitive_values=params.get("sensitive_values"),
        lease_namespace=params.get("lease_namespace"), lease_duration=params.get("lease_duration"),
        holder_message=params.get("holder_message"), recipe_name=recipe_name, cache_dir=cache_dir,
        validate_chart_schema=params.get("validate_values", True), early_start=params.get("early_start", True),
        health_checks=params.get("health_checks", True), health_check_timeout=params.get("health_check_timeout"),
        health_check_skip=params.get("health_check_skip"),
    )
    if problems is None:
        own.raise_if_any()
    return options


def _write_gates(client, params, result):
    """The gate conditions of a run that stopped before its live status started (a failed pre-flight); a warning or None."""
    from ansible_collections.aicr.runtime.plugins.module_utils._stack.status import StatusWriter  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils._stack.store import make_store  # pylint: disable=import-outside-toplevel

    try:
        writer = StatusWriter(make_store(client, params.get("status_backend") or "crd", params.get("status_namespace") or STACK_NAMESPACE,
                                         "status_namespace"),
                              params["status_stack"])
    except AicrError as exc:
        return "status_stack: %s" % exc.msg
    return _status().write_gates(writer, result)


def _status():
    """``_stack.status``, imported when a stack's status is written (``status_stack``): a run without one does not load it."""
    from ansible_collections.aicr.runtime.plugins.module_utils._stack import status  # pylint: disable=import-outside-toplevel

    return status


def _private_cache_dir(params):
    """The render and helm-version cache: the catalog's rule (a directory only this user can write) - a given
    ``cache_dir`` (or ``$AICR_RUNTIME_CACHE_DIR``) that is not is refused, the built-in default is then not used."""
    path, given = jsoncache.chosen_cache_dir(params.get("cache_dir"))
    return jsoncache.checked_cache_dir(path, given=given)


def execute(params, check_mode=False, diff=False, cluster=None, helm=None, status_client=None):
    """Run gated_release from module parameters; returns the result dict (``failed_message`` when it failed).

    ``cluster``/``helm`` are injected by tests; otherwise built from kubeconfig/context/helm_binary.
    With ``status_stack`` (and not in check mode) every component transition is written to that stack's status
    (``_stack.live.LiveStatus``, through ``status_client`` or a client from kubeconfig/context); the result then has ``live_status``.
    """
    # Imported here so unit tests of the engine do not need the kubernetes package.
    from ansible_collections.aicr.runtime.plugins.module_utils._kube import connection as kube  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils._helm.helm import HelmRunner  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils._entry import gated_release_inputs as inputs  # pylint: disable=import-outside-toplevel

    # one validation pass: every parameter checked, every problem listed, before the cluster is reached
    given = inputs.checked(params, check_mode=check_mode, diff=diff)
    recipe, resolved, plan, options, checks = given.recipe, given.resolved, given.plan, given.options, given.checks
    snapshot = params.get("snapshot")
    if snapshot is None and params.get("resolve"):
        snapshot = params["resolve"].get("snapshot")
    tmp = tempfile.mkdtemp(prefix="aicr-gated-")
    try:
        connection = None
        if cluster is None or helm is None or (params.get("status_stack") and status_client is None):
            # one resolution: the Python client and helm reach the same cluster as the same identity
            connection = kube.resolve(params.get("kubeconfig"), params.get("context"))
        if cluster is None:
            # overall_timeout bounds every request of the run, connection included (a server that never answers too)
            cluster = connection.client(deadline=Deadline(options.overall_timeout, labelled("overall_timeout", options.overall_timeout)))
        # the readiness pre-flight: before the helm probe, the Lease or any other request that could change something
        checked = preflight.run(params.get("preflight") or "auto", recipe, snapshot, cluster)
        if checked is not None and not checked["passed"]:
            failed = {"changed": False, "components": [], "waves": [], "actions": [], "foreign_claims": [], "preflight": checked,
                      "failed_message": preflight.failure_message(checked)}
            if resolved is not None:
                failed["resolved"] = resolved
            if params.get("status_stack") and not check_mode:
                warning = _write_gates(status_client or connection.client(), params, failed)
                if warning:
                    failed["warnings"] = [warning]
            return failed
        if helm is None:
            kubeconfig_path, context = connection.helm_kubeconfig(tmp)
            helm = HelmRunner(params.get("helm_binary") or "helm", kubeconfig_path=kubeconfig_path, context=context,
                              home=params.get("helm_home") or os.path.join(tmp, "helm"), version_cache_dir=options.cache_dir,
                              repository_credentials=params.get("repository_credentials"), credentials_dir=os.path.join(tmp, "helm-auth"))
            # checked before the first mutation (GatedRelease.run) and at the end; read meanwhile
            helm.start_version_probe()
        live, live_warning = None, None
        if params.get("status_stack") and not check_mode:
            from ansible_collections.aicr.runtime.plugins.module_utils._stack.live import live_status  # pylint: disable=import-outside-toplevel

            live, live_warning = live_status(status_client or connection.client(), params["status_stack"], params.get("status_backend") or "crd",
                                             params.get("status_namespace") or STACK_NAMESPACE, interval=LIVE_STATUS_INTERVAL)
        if live is None and live_warning is None:
            result = GatedRelease(cluster, helm, plan, options, checks=checks).run()
        else:
            from ansible_collections.aicr.runtime.plugins.module_utils._stack.live import run_with_live_status  # pylint: disable=import-outside-toplevel

            def rollout(hook):
                return GatedRelease(cluster, helm, plan, options, on_transition=hook, checks=checks).run()

            result = run_with_live_status(live, live_warning, rollout)
        result["helm_version"] = getattr(helm, "major", None)
        if getattr(helm, "warnings", None):
            result["warnings"] = list(result.get("warnings") or []) + list(helm.warnings)
        retried = getattr(cluster, "retried", 0)  # KubeClient's count; the unit doubles have none
        if isinstance(retried, int) and retried:
            result["warnings"] = list(result.get("warnings") or []) + [
                "the API server did not answer %d request(s) at first (no answer, 429 or 5xx): they were sent again" % retried]
        if checked is not None:
            result["preflight"] = checked
        if live is not None:
            warning = _status().write_gates(live.writer, result)
            if warning:
                result.setdefault("warnings", []).append(warning)
        if resolved is not None:
            result["resolved"] = resolved
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
