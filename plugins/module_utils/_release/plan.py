# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""From a resolved recipe to the components to deploy, their gates and waves.

Input is the output of ``recipe_resolve`` (a dict with ``components``) or its ``components`` list, read with
``Component.from_dict`` (the component type recipe_resolve returns). ``skip_components`` and
``component_overrides`` (chart, repository, version, namespace, values - merged, ``null`` deletes - and
enabled; the keys and types of ``component.override_problems``) apply on top.

Gate rules (issue #6): a component's managed dependencies must be Ready before its
pre-manifest objects are applied; its release additionally waits for those objects;
its post-manifest objects wait for the release. A dependency that is not managed
(skipped, disabled, of a type gated_release does not deploy) counts as satisfied; one that names no component of
the recipe is refused (a typo is never taken as satisfied): what the recipe does not deploy goes in
``external_dependencies``, as recipe_resolve puts there the components the recipe disables. With
``skip_deployment_order`` nothing waits for anything.

Every problem of the recipe, its components and the options that name them is found in one pass
(``_common.checks.Problems``): the recipe's shape, each component's keys and types (``component.dict_problems``: a
``values`` that is not a mapping, a ``dependencies`` that is not a list...), names (DNS-1123), duplicates, dependencies,
chart sources, overrides and cycles.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems, nearest
from ansible_collections.aicr.runtime.plugins.module_utils._common.component import (
    OVERRIDE_KEYS, Component, check_chart_source, dict_problems, override_problems,
)
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._release.scheduler import levels


def _components_of(recipe, problems):
    """The recipe's component dicts; a recipe of another shape is a problem (then None)."""
    if isinstance(recipe, dict):
        if "components" not in recipe:
            problems.add("recipe", "expected the output of recipe_resolve (a dict with 'components') or its components list; got a dict with %s"
                         % (", ".join(sorted(str(k) for k in recipe)[:8]) or "no keys"), allowed="a dict with components, or a list of components")
            return None
        components = recipe.get("components") or []
        if not isinstance(components, list):
            problems.add("recipe.components", "a %s is not allowed; allowed: a list of components (mappings with name, chart, repository, "
                         "version, namespace, values, dependencies...)" % type(components).__name__, allowed="a list of components")
            return None
        return components
    if isinstance(recipe, list):
        return recipe
    problems.add("recipe", "expected a dict or a list, got %s" % type(recipe).__name__, allowed="a dict with components, or a list of components")
    return None


class Plan(object):
    """Managed components in deployment order, the gate DAG and its waves."""

    def __init__(self, components, skipped, order, deps):
        self.components = components
        self.by_name = dict((c.name, c) for c in components)
        self.skipped = skipped
        self.order = order
        self.deps = deps
        self.level = levels(order, deps)

    def waves(self):
        grouped = {}
        for name in self.order:
            grouped.setdefault(self.level[name], []).append(name)
        return [{"wave": n, "components": grouped[n]} for n in sorted(grouped)]

    def reverse_deps(self):
        """For removal: a component waits for every managed component that depends on it."""
        rev = dict((name, []) for name in self.order)
        for name, deps in self.deps.items():
            for dep in deps:
                rev[dep].append(name)
        return rev


def _check_overrides(overrides, skip, names, problems):
    """gated_release's wording of ``component.override_problems``, every problem of ``component_overrides`` and
    ``skip_components`` added to ``problems``; returns the names whose override entry is not applied (it has a problem)."""
    listed = set(overrides) if isinstance(overrides, dict) else set()
    for field, given in (("component_overrides", listed), ("skip_components", skip)):
        unknown = sorted(set(given) - set(names))
        if unknown:
            problems.add(field, "unknown components %s; the recipe has %s" % (unknown, names), value=unknown, allowed=list(names))
    told, keys_told = set(), set()
    for kind, name, key, value in override_problems(overrides, names):
        told.add(name)
        if kind == "unknown-component":
            continue  # said above, with skip_components
        if kind == "unknown-key":
            if name not in keys_told:  # every unknown key of the entry, in one problem
                keys_told.add(name)
                bad = sorted(str(k) for k in overrides[name] if k not in OVERRIDE_KEYS)
                problems.add("component_overrides", "%s has unknown keys %s; allowed: %s" % (name, bad, ", ".join(OVERRIDE_KEYS)),
                             allowed=list(OVERRIDE_KEYS))
            continue
        shown = "(a %s)" % type(value).__name__ if kind == "values-not-a-mapping" else repr(value)[:80]  # values may be secret
        problems.add("component_overrides", "%s: %s %s is not allowed; allowed: a mapping of %s (values a mapping, enabled a boolean)"
                     % (name or "(all)", key or "the entry", shown, ", ".join(OVERRIDE_KEYS)), allowed=list(OVERRIDE_KEYS))
    return told


_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
RELEASE_NAME_MAX = 53  # helm's limit for a release name
COMPONENT_ALLOWED = "a mapping with name, chart, repository, version, namespace, values, dependencies... (recipe_resolve's components[])"


def _name_problem(comp):
    """A component's name (its helm release name, part of file names in the run's scratch directory) and namespace are
    DNS-1123 labels, checked before any use: no ``/``, ``..``, upper case or spaces. The problem (one line) or None."""
    if not isinstance(comp.name, str) or len(comp.name) > RELEASE_NAME_MAX or not _DNS1123_LABEL.match(comp.name):
        return ("component name %r is not allowed; use a DNS-1123 label of at most %d characters (a-z, 0-9, '-', starting and ending "
                "alphanumeric)" % (str(comp.name)[:80], RELEASE_NAME_MAX))
    if comp.namespace and (not isinstance(comp.namespace, str) or len(comp.namespace) > 63 or not _DNS1123_LABEL.match(comp.namespace)):
        return "component %s: namespace %r is not allowed; use a DNS-1123 label of at most 63 characters" % (comp.name, str(comp.namespace)[:80])
    return None


def _readable(raw_components, problems):
    """The component dicts that can be read: each a mapping with a string name, given once, its keys of the right type
    (``component.dict_problems``); every other one is a problem. Returns ``(readable dicts, every name)``."""
    readable, names = [], []
    for index, raw in enumerate(raw_components):
        if not isinstance(raw, dict):
            problems.add("recipe", "components[%d]: a %s is not allowed; allowed: %s" % (index, type(raw).__name__, COMPONENT_ALLOWED),
                         allowed=COMPONENT_ALLOWED)
            continue
        name = raw.get("name")
        if not name or not isinstance(name, str):
            problems.add("recipe", "every component needs a name; components[%d] has %s" % (index, "none" if not name else "a %s" % type(name).__name__),
                         allowed="a DNS-1123 label")
            continue
        if name in names:
            problems.add("recipe", "component %s is listed more than once; allowed: each component once" % name, value=name)
            continue
        names.append(name)
        bad = dict_problems(raw)
        for key, value, allowed in bad:
            text = repr(value) if len(repr(value)) <= 80 else repr(value)[:77] + "..."
            shown = "a %s" % type(value).__name__ if key == "values" else "%s (a %s)" % (text, type(value).__name__)  # values: never shown
            problems.add("recipe", "component %s: %s %s is not allowed; allowed: %s" % (name, key, shown, allowed), allowed=allowed)
        if not bad:
            readable.append(raw)
    return readable, names


def _dependency_problems(readable, names, problems):
    """Every dependency names a component of the recipe (deployed, skipped, disabled or of another type): one that names
    nothing in it is a typo or a recipe of another stack, never a dependency taken as satisfied."""
    known = set(names)
    for raw in readable:
        for dep in raw.get("dependencies") or []:
            if dep not in known:
                guess = nearest(dep, known)
                hint = "did you mean %s? " % guess if guess else ""
                problems.add("recipe", "component %s: dependency %r is not a component of the recipe; %sallowed: one of %s (what the recipe does "
                             "not deploy goes in external_dependencies)" % (raw["name"], dep, hint, ", ".join(names)), value=dep, allowed=list(names))


def build_plan(recipe, skip_components=None, component_overrides=None, skip_deployment_order=False, base_dir=None, problems=None):
    """Normalise the recipe into a :class:`Plan`.

    Every problem of the recipe's shape, its components, their dependencies and the options that name them
    (``skip_components``, ``component_overrides``) is found in one pass: with ``problems`` (a ``_common.checks.Problems``)
    they are added to it and None is returned when there is any; without, they are raised together."""
    own = problems if problems is not None else Problems("gated_release")
    before = len(own.errors)
    plan = _plan(own, before, recipe, skip_components, component_overrides, skip_deployment_order, base_dir)
    if problems is None:
        own.raise_if_any()
    return plan if len(own.errors) == before else None


def _plan(problems, before, recipe, skip_components, component_overrides, skip_deployment_order, base_dir):
    raw_components = _components_of(recipe, problems)
    if raw_components is None:
        return None
    if base_dir is None and isinstance(recipe, dict):
        base_dir = recipe.get("catalog_root")
    if skip_components is not None and (not isinstance(skip_components, list) or not all(isinstance(n, str) for n in skip_components)):
        problems.add("skip_components", "%r is not allowed; allowed: a list of component names" % (skip_components,), value=skip_components)
        skip_components = None
    skip = set(skip_components or [])
    overrides = component_overrides or {}
    readable, names = _readable(raw_components, problems)
    refused = _check_overrides(overrides, skip, names, problems)
    _dependency_problems(readable, names, problems)
    if not isinstance(overrides, dict):
        overrides = {}
    managed, skipped = [], []
    for raw in readable:
        name = raw["name"]
        override = (overrides.get(name) if name not in refused else None) or {}
        if name in skip:
            skipped.append({"name": name, "reason": "skip_components"})
            continue
        if override.get("enabled", raw.get("enabled")) is False:
            skipped.append({"name": name, "reason": "disabled"})
            continue
        ctype = str(raw.get("type") or "Helm")
        if ctype.lower() != "helm":
            skipped.append({"name": name, "reason": "type %s is not deployed by gated_release (only Helm)" % ctype})
            continue
        try:
            comp = Component.from_dict(raw, base_dir=base_dir).overridden(override)
        except AicrError as exc:  # a manifest file list it cannot read
            problems.extend(exc)
            continue
        wrong = _name_problem(comp)
        if wrong:
            problems.add("recipe", wrong, allowed="a DNS-1123 label")
            continue
        if not comp.manifest_only:
            try:
                check_chart_source(comp.name, comp.chart, comp.repository, comp.version)  # before anything reaches helm's argv
            except AicrError as exc:
                problems.extend(exc)
                continue
        managed.append(comp)
    if len(problems.errors) > before:
        return None
    order = [c.name for c in managed]
    managed_names = set(order)
    deps = {}
    for comp in managed:
        comp.gate = [] if skip_deployment_order else [d for d in comp.dependencies if d in managed_names]
        deps[comp.name] = comp.gate
    try:
        return Plan(managed, skipped, order, deps)
    except AicrError as exc:  # a dependency cycle
        problems.extend(exc)
        return None
