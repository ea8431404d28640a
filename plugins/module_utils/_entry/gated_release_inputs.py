# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""gated_release's parameters, read and checked in one pass before the cluster is reached or anything changes.

Every check runs whatever an earlier one found: the stack names, the recipe (resolved first with ``resolve``) and its
shape, the plan (components, their keys, names, dependencies, overrides, cycles: ``plan.build_plan``), the values
against the given ``values_schemas``, the options (``engine.Options``: every number, choice and name), the repository
credentials and mirrors, the health checks and the pre-flight mode. A kubeconfig pointing at a server that does not
answer therefore never hides a problem of the input: none of this contacts anything.

One problem is raised as its check words it, its details kept, with ``errors`` listing it; several are one
``AicrError`` (``_common.checks.Problems``): the first one's line, how many more, and ``errors`` listing every one.
What only the charts can tell (their ``values.schema.json``) is checked next, by the run itself, before its first
change (``_release.valuescheck``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._release import health, preflight
from ansible_collections.aicr.runtime.plugins.module_utils._helm import repositories as repos
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
    # the engine's own helpers (engine imports this module when it runs)
    from ansible_collections.aicr.runtime.plugins.module_utils._release import engine  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils._entry.recipe_resolve import resolve_from_options  # pylint: disable=import-outside-toplevel

    found = _Pass()
    found.run(check_stack_options, params, "stack", "status_stack")  # before the catalog is read or the cluster is reached
    recipe, resolved, readable = params.get("recipe"), None, True
    if isinstance(recipe, dict) and recipe.get("values_hidden"):
        # deploying it would install "<hidden>" as a password
        found.run(_refuse_hidden)
        recipe, readable = None, False
    elif params.get("resolve"):
        recipe = found.run(_resolved, resolve_from_options, params, check_mode, engine.under_resolve)
        resolved = engine.resolved_summary(recipe) if recipe is not None else None
        readable = recipe is not None
    plan = None
    if readable:
        plan = build_plan(recipe, skip_components=params.get("skip_components"), component_overrides=params.get("component_overrides"),
                          skip_deployment_order=params.get("skip_deployment_order"), base_dir=params.get("catalog"), problems=found)
    schemas = _mapping(found, "values_schemas", params.get("values_schemas"))
    if plan is not None and params.get("validate_values", True):
        found.run(engine.validate_values, plan, schemas)
    options = found.run(engine.options_from, params, recipe if recipe is not None else {}, check_mode, diff, problems=found)
    found.run(_check_repositories, params, options)
    checks = None
    if plan is not None and options is not None:
        # every health check is read before anything else happens: one that cannot be evaluated fails closed here
        checks = found.run(health.parse_all, health.checks_of(recipe), plan.order, options.health)
    found.choice("preflight", params.get("preflight"), preflight.MODES, default="auto")
    found.raise_if_any()
    return Checked(recipe, resolved, plan, options, checks)


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
