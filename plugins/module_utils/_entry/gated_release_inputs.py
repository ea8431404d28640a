# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gated_release's parameters, read and checked in one pass before the cluster is reached or anything changes.

Every check runs whatever an earlier one found: the stack names, the recipe (resolved first with ``resolve``) and its
shape, the plan (components, their keys, names, dependencies, overrides, cycles: ``plan.build_plan``), the values
against the given ``values_schemas``, the options (:func:`options_from` -> ``_release.engine.Options``: every number,
choice and name), the repository credentials and mirrors, the health checks and the pre-flight mode. A kubeconfig
pointing at a server that does not answer therefore never hides a problem of the input: none of this contacts anything.
:func:`secret_params` lists the strings of the parameters that must become no_log values before anything runs.

One problem is raised as its check words it, its details kept, with ``errors`` listing it; several are one
``AicrError`` (``_common.checks.Problems``): the first one's line, how many more, and ``errors`` listing every one.
What only the charts can tell (their ``values.schema.json``) is checked next, by the run itself, before its first
change (``_release.valuescheck``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.aicr.runtime.plugins.module_utils._common import jsoncache
from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import check_stack_name
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.sensitive import Sensitive, override_secrets
from ansible_collections.aicr.runtime.plugins.module_utils._entry.recipe_resolve import resolve_from_options
from ansible_collections.aicr.runtime.plugins.module_utils._helm import chartfetch
from ansible_collections.aicr.runtime.plugins.module_utils._helm import repositories as repos
from ansible_collections.aicr.runtime.plugins.module_utils._release import health, preflight, spec
from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import Options, validate_values
from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan
from ansible_collections.aicr.runtime.plugins.module_utils._stack.options import check_stack_options


class _Pass(Problems):
    """A validation pass whose checks may raise: each one's AicrError is collected (``Problems.extend``), and the pass goes on."""

    def run(self, check, *args, **kwargs):
        """``check(*args, **kwargs)``, or None when it raised an AicrError (collected)."""
        try:
            return check(*args, **kwargs)
        except AicrError as exc:
            self.extend(exc)
            return None


class Checked(object):
    """What the pass read: the recipe (resolved), what ``resolve`` resolved, the plan, the options and the health checks."""

    __slots__ = ("recipe", "resolved", "plan", "options", "checks")

    def __init__(self, recipe, resolved, plan, options, checks):
        self.recipe, self.resolved, self.plan, self.options, self.checks = recipe, resolved, plan, options, checks


def checked(params, check_mode=False, diff=False):
    """Every parameter of gated_release checked (:class:`Checked`), or one AicrError naming every problem found."""
    found = _Pass()
    found.run(check_stack_options, params, "stack", "status_stack")  # before the catalog is read or the cluster is reached
    recipe, resolved, readable = params.get("recipe"), None, True
    if isinstance(recipe, dict) and recipe.get("values_hidden"):
        # deploying it would install "<hidden>" as a password
        found.run(_refuse_hidden)
        recipe, readable = None, False
    elif params.get("resolve"):
        recipe = found.run(_resolved, resolve_from_options, params, check_mode, under_resolve)
        resolved = resolved_summary(recipe) if recipe is not None else None
        readable = recipe is not None
    plan = None
    if readable:
        plan = build_plan(recipe, skip_components=params.get("skip_components"), component_overrides=params.get("component_overrides"),
                          skip_deployment_order=params.get("skip_deployment_order"), base_dir=params.get("catalog"), problems=found)
    schemas = _mapping(found, "values_schemas", params.get("values_schemas"))
    if plan is not None and spec.given(params, "validate_values"):
        found.run(validate_values, plan, schemas)
    options = found.run(options_from, params, recipe if recipe is not None else {}, check_mode, diff, problems=found)
    found.run(_check_repositories, params, options)
    checks = None
    if plan is not None and options is not None:
        # every health check is read before anything else happens: one that cannot be evaluated fails closed here
        checks = found.run(health.parse_all, health.checks_of(recipe), plan.order, options.health)
    found.raise_if_any()
    return Checked(recipe, resolved, plan, options, checks)


def check_options(params, problems):
    """gated_release's options that need neither a recipe, the cluster nor this host's files - every number, choice and
    name (``engine.Options``, the pre-flight mode) - each problem added to ``problems``: the checks :func:`checked` runs
    on them, for a role to run before its first write (the ``aicr.runtime.option_problems`` lookup)."""
    try:
        check_stack_options(params, "stack", "status_stack")
    except AicrError as exc:
        problems.extend(exc)
    options_from(params, {}, False, False, problems=problems, local=False)


def _refuse_hidden():
    raise AicrError("recipe: its secret values are <hidden> (recipe_resolve without show_values); allowed: resolve with the same options "
                    "(resolved here, no values returned), or recipe_resolve with show_values: true on a no_log task", field="recipe")


def _resolved(resolve_from_options, params, check_mode, under_resolve):
    try:
        return resolve_from_options(params["resolve"], cache_dir=params.get("cache_dir"), check_mode=check_mode)
    except AicrError as exc:
        raise under_resolve(exc)


def _mapping(found, field, value):
    """``value`` when it is a mapping (or not given: {}); else a problem and {}."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        found.add(field, "a %s is not allowed; allowed: a mapping of component name to JSON Schema" % type(value).__name__,
                  allowed="a mapping of component name to JSON Schema")
        return {}
    return value


def _check_repositories(params, options):
    """``repository_credentials`` read, and the mirrors checked against them (before any connection)."""
    credentials = repos.normalize_credentials(params.get("repository_credentials"))
    if options is not None:
        repos.check_mirrors(credentials, options.mirrors)


def options_from(params, recipe, check_mode, diff, problems=None, local=True):
    """The engine's :class:`Options` from the module parameters, the pre-flight mode checked too; with ``problems``
    (``_common.checks.Problems``) every problem is added to it (the caller raises), else they are raised here.
    ``local=False`` leaves out what only the host that runs the module can check (its cache directory)."""
    own = problems if problems is not None else Problems("gated_release")
    recipe_name = params.get("recipe_name") or (recipe.get("recipe_name") if isinstance(recipe, dict) else "") or ""
    stack = params.get("stack") or recipe_name or "default"
    cache_dir = None
    try:
        if problems is None or not params.get("stack"):  # a given stack was checked with status_stack (check_stack_options)
            check_stack_name("stack", stack)  # a stack named after its recipe obeys the same rule (its labels, Lease, inventory)
        cache_dir = _private_cache_dir(params) if local and spec.given(params, "render_cache") else None
        if local and spec.given(params, "chart_cache"):
            chart_cache_dir(params)  # the same rule for the chart cache's directory and its bound, in this pass
    except AicrError as exc:
        own.extend(exc)
    given = dict((name, params.get(name)) for name in spec.OPTIONS if name in params)  # every declared option, by name
    given.update(stack=stack, recipe_name=recipe_name, cache_dir=cache_dir, check_mode=check_mode, diff=diff,
                 validate_chart_schema=spec.given(params, "validate_values"))
    options = Options(problems=own, **given)
    own.choice("preflight", params.get("preflight"), preflight.MODES, default=spec.default("preflight"))
    if problems is None:
        own.raise_if_any()
    return options


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


def _private_cache_dir(params):
    """The render and helm-version cache: the catalog's rule (a directory only this user can write) - a given
    ``cache_dir`` (or ``$AICR_RUNTIME_CACHE_DIR``) that is not is refused, the built-in default is then not used."""
    path, given = jsoncache.chosen_cache_dir(params.get("cache_dir"))
    return jsoncache.checked_cache_dir(path, given=given)


def chart_cache_dir(params):
    """Where gated_release keeps chart archives by digest (``_helm.chartfetch.ChartCache``): ``charts/sha256`` in the
    private cache directory, or None with ``chart_cache: false`` (or when the default directory is not private). Its bound
    (``$AICR_RUNTIME_CHART_CACHE_MAX_MB``) is checked here too."""
    if not params.get("chart_cache", True):
        return None
    chartfetch.cache_max_bytes()
    base = _private_cache_dir(params)
    return os.path.join(base, "charts", "sha256") if base else None


def repository_url_secrets(params):
    """The userinfo of repository URLs given in ``recipe``, ``component_overrides`` or ``repository_mirrors`` (refused
    later, ``_helm.repositories.refuse_userinfo``), hidden meanwhile."""
    urls = []
    recipe = params.get("recipe")
    components = recipe.get("components") if isinstance(recipe, dict) else recipe
    for item in list(components if isinstance(components, list) else []) + list((params.get("component_overrides") or {}).values()):
        if isinstance(item, dict):
            urls += [item.get("repository"), item.get("source")]
    for upstream, target in (params.get("repository_mirrors") or {}).items():
        urls += [upstream, target.get("url") if isinstance(target, dict) else target]
    return repos.url_secrets(urls)


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
