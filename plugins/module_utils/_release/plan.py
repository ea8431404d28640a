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
(skipped, disabled, absent from the recipe) counts as satisfied. With
``skip_deployment_order`` nothing waits for anything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.component import OVERRIDE_KEYS, Component, check_chart_source, override_problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._release.scheduler import levels


def _components_of(recipe):
    if isinstance(recipe, dict):
        if "components" not in recipe:
            raise AicrError("recipe: expected the output of recipe_resolve (a dict with 'components') or its components list", field="recipe")
        return recipe.get("components") or []
    if isinstance(recipe, list):
        return recipe
    raise AicrError("recipe: expected a dict or a list, got %s" % type(recipe).__name__, field="recipe")


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


def _check_overrides(overrides, skip, names):
    """gated_release's wording of ``component.override_problems`` (unknown names and keys together)."""
    unknown = sorted((set(overrides) | skip) - set(names)) if isinstance(overrides, dict) else []
    if unknown:
        raise AicrError("component_overrides/skip_components: unknown components %s; the recipe has %s" % (unknown, names), field="component_overrides")
    for kind, name, key, value in override_problems(overrides, names):
        if kind == "unknown-key":
            bad = sorted(k for k in overrides[name] if k not in OVERRIDE_KEYS)
            raise AicrError("component_overrides: %s has unknown keys %s; allowed: %s" % (name, bad, ", ".join(OVERRIDE_KEYS)), field="component_overrides")
        raise AicrError("component_overrides: %s: %s %r is not allowed; allowed: a mapping of %s (values a mapping, enabled a boolean)"
                        % (name or "(all)", key or "the entry", value, ", ".join(OVERRIDE_KEYS)), field="component_overrides")


_DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
RELEASE_NAME_MAX = 53  # helm's limit for a release name


def _check_names(comp):
    """A component's name (its helm release name, part of file names in the run's scratch directory) and namespace are
    DNS-1123 labels, checked before any use: no ``/``, ``..``, upper case or spaces."""
    if not isinstance(comp.name, str) or len(comp.name) > RELEASE_NAME_MAX or not _DNS1123_LABEL.match(comp.name):
        raise AicrError("recipe: component name %r is not allowed; use a DNS-1123 label of at most %d characters (a-z, 0-9, '-', "
                        "starting and ending alphanumeric)" % (str(comp.name)[:80], RELEASE_NAME_MAX), field="recipe", component=str(comp.name)[:80])
    if comp.namespace and (not isinstance(comp.namespace, str) or len(comp.namespace) > 63 or not _DNS1123_LABEL.match(comp.namespace)):
        raise AicrError("recipe: component %s: namespace %r is not allowed; use a DNS-1123 label of at most 63 characters"
                        % (comp.name, str(comp.namespace)[:80]), field="recipe", component=comp.name)


def build_plan(recipe, skip_components=None, component_overrides=None, skip_deployment_order=False, base_dir=None):
    """Normalise the recipe into a :class:`Plan`."""
    raw_components = _components_of(recipe)
    if base_dir is None and isinstance(recipe, dict):
        base_dir = recipe.get("catalog_root")
    skip = set(skip_components or [])
    overrides = component_overrides or {}
    names = [c.get("name") for c in raw_components if isinstance(c, dict)]
    if len(names) != len(raw_components) or not all(names):
        raise AicrError("recipe: every component needs a name", field="recipe")
    _check_overrides(overrides, skip, names)
    managed, skipped = [], []
    for raw in raw_components:
        name = raw["name"]
        override = overrides.get(name) or {}
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
        managed.append(Component.from_dict(raw, base_dir=base_dir).overridden(override))
    for comp in managed:
        _check_names(comp)
        if not comp.manifest_only:
            check_chart_source(comp.name, comp.chart, comp.repository, comp.version)  # before anything reaches helm's argv
    order = [c.name for c in managed]
    managed_names = set(order)
    deps = {}
    for comp in managed:
        comp.gate = [] if skip_deployment_order else [d for d in comp.dependencies if d in managed_names]
        deps[comp.name] = comp.gate
    return Plan(managed, skipped, order, deps)
