# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Health checks: a component's hydrated ``healthCheckAsserts`` run read-only against the live cluster once it is Ready.

The checks come with the recipe: recipe_resolve's ``recipe.componentRefs[].healthCheckAsserts`` (the catalog's
``checks/<component>/health-check.yaml``, hydrated by ``_recipe.resolve.apply_registry_defaults``), or a component
dict's own ``health_check_asserts`` (a hand-written recipe). :func:`checks_of` collects them per component name.

:func:`run_check` evaluates the operations in order, as Chainsaw does: each is retried (every ``poll_interval``)
until it passes, then the next; the check's timeout is its ``spec.timeouts.assert`` (Chainsaw's 30 s when it has
none), or ``health_check_timeout``, capped by the component's deadline. Candidates are read with GET / LIST
through the run's client, as the release identity: an operation with ``metadata.name`` reads that object, one
without lists the kind (in its namespace - the component's for a namespaced kind that names none - and with the
plain-string ``metadata.labels`` as the label selector). A kind the cluster does not serve has no candidates. A
refused read (403) fails the check naming the request. Nothing is ever written.

The outcome is a dict (``status`` Passed / Failed / Skipped / NotRun, ``message``, ``check``, ``operations``,
``duration``, and for a failure ``step``, ``operation``, ``resource``, ``expression``, ``expected``, ``actual``);
a failure raises :class:`~.errors.AicrError` with the same one-line message, which fails the component and blocks
its dependents. ``expected``/``actual`` and the message never quote a secret (``_common.assertions.masked``: a sensitive
key on the path, a Secret's ``data``, URL passwords are ``<hidden>``): they reach the task's ``msg`` and the ClusterStack
status.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common import assertions
from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError, NotServed

PASSED = "Passed"
FAILED = "Failed"
SKIPPED = "Skipped"
NOT_RUN = "NotRun"


def checks_of(recipe):
    """``{component: healthCheckAsserts text}`` of a recipe_resolve result (or a components list)."""
    found = {}
    if isinstance(recipe, dict):
        for ref in (recipe.get("recipe") or {}).get("componentRefs") or []:
            if isinstance(ref, dict) and ref.get("name") and isinstance(ref.get("healthCheckAsserts"), str) and ref["healthCheckAsserts"].strip():
                found[ref["name"]] = ref["healthCheckAsserts"]
        components = recipe.get("components") or []
    else:
        components = recipe if isinstance(recipe, list) else []
    for comp in components:
        if isinstance(comp, dict) and comp.get("name") and isinstance(comp.get("health_check_asserts"), str) and comp["health_check_asserts"].strip():
            found[comp["name"]] = comp["health_check_asserts"]
    return found


class HealthOptions(object):
    """``health_checks`` (on by default), ``health_check_timeout`` (seconds, more than 0; None: the check's own) and
    ``health_check_skip``; ``problems`` (``_common.checks.Problems``): the pass the timeout's problem is added to, else
    it is raised here."""

    def __init__(self, enabled=True, timeout=None, skip=None, problems=None):
        own = problems if problems is not None else Problems("gated_release")
        self.enabled = enabled is not False
        checked = own.positive("health_check_timeout", timeout)  # no maximum: a check is capped by timeout and overall_timeout
        self.timeout = float(checked) if isinstance(checked, (int, float)) and not isinstance(checked, bool) else None
        self.skip = set(skip or [])
        if problems is None:
            own.raise_if_any()


def parse_all(texts, plan_names, options):
    """``{component: Check}`` for the managed components whose checks run; raises AicrError before any change when a
    check cannot be read or uses what is not supported (fail closed)."""
    unknown = sorted(options.skip - set(plan_names))
    if unknown:
        raise AicrError("health_check_skip: unknown components %s; the recipe has %s" % (unknown, list(plan_names)), field="health_check_skip")
    if not options.enabled:
        return {}
    parsed = {}
    for name in plan_names:
        if name in texts and name not in options.skip:
            parsed[name] = assertions.parse_check(texts[name], name)
    return parsed


def planned(check, name, options):
    """The health entry of a component before (or without) running its check."""
    if not options.enabled:
        return {"status": SKIPPED, "message": "health checks are off (health_checks: false)"}
    if name in options.skip:
        return {"status": SKIPPED, "message": "skipped (health_check_skip)"}
    if check is None:
        return {"status": SKIPPED, "message": "no health check"}
    return {"status": NOT_RUN, "check": check.name, "operations": len(check.operations), "message": "runs once the component is Ready"}


def _candidates(cluster, operation, namespace):
    try:
        namespaced = cluster.is_namespaced(operation.api_version, operation.kind)
    except NotServed:
        return []
    ns = (operation.namespace or namespace) if namespaced else None
    try:
        if operation.name:
            obj = cluster.get(operation.api_version, operation.kind, operation.name, ns)
            return [obj] if obj is not None else []
        return cluster.list(operation.api_version, operation.kind, ns, label_selector=operation.label_selector())
    except ClusterError as exc:
        if exc.status == 403:
            raise AicrError("health check: reading %s %s was refused (403): %s; allowed: grant the identity get/list on it, or health_check_skip"
                            % (operation.kind, "%s/%s" % (ns, operation.name or "*") if ns else operation.name or "*", exc.msg),
                            field="health_checks", status=403)
        raise


def run_check(cluster, check, namespace, deadline, poll_interval, clock, sleep):
    """Run ``check`` for a component deployed in ``namespace``; returns the Passed entry or raises AicrError (Failed)."""
    started = clock()
    if check.no_op or not check.operations:
        return {"status": PASSED, "check": check.name, "operations": 0, "duration": 0.0,
                "message": "no operations (%s)" % ("aicr/no-op-check" if check.no_op else "empty check")}
    if check.timeout is not None:
        deadline = min(deadline, started + check.timeout)
    for operation in check.operations:
        while True:
            passed, detail = assertions.evaluate(operation, _candidates(cluster, operation, namespace))
            if passed:
                break
            if clock() >= deadline:
                waited = round(clock() - started, 1)
                entry = {"status": FAILED, "check": check.name, "operations": len(check.operations), "duration": round(clock() - started, 3),
                         "step": operation.step, "operation": operation.describe(namespace), "resource": detail["resource"],
                         "expression": detail["expression"], "expected": detail["expected"], "actual": detail["actual"]}
                entry["message"] = "health check %s failed after %ss: step %s: %s%s: %s" % (
                    check.name, waited, operation.step, operation.describe(namespace),
                    " (%s)" % detail["resource"] if detail["resource"] else "", detail["message"])
                raise HealthCheckFailed(entry)
            sleep(max(0.0, min(poll_interval, deadline - clock())))
    return {"status": PASSED, "check": check.name, "operations": len(check.operations), "duration": round(clock() - started, 3),
            "message": "%d operation(s) passed" % len(check.operations)}


class HealthCheckFailed(AicrError):
    """A health check that did not pass in time; ``entry`` is the component's health result."""

    def __init__(self, entry):
        AicrError.__init__(self, entry["message"], health=entry)
        self.entry = entry


def with_timeout(check, timeout):
    """``check`` with another assert timeout (None: only the caller's deadline bounds it), for ``health_check_timeout``."""
    return assertions.Check(check.name, check.component, check.operations, timeout, check.no_op, check.steps)
