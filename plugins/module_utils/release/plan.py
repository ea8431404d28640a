# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""From a resolved recipe to the components to deploy, their gates and waves.

Input is the output of ``recipe_resolve`` (a dict with ``components``) or its
``components`` list; each component {name, type, chart, repository, version, namespace,
values, dependencies, pre_manifest_files, manifest_files, manifest_only, enabled}.
``skip_components`` and ``component_overrides`` (chart, repository, version, namespace,
values — deep-merged, ``null`` deletes — and enabled) apply on top.

Gate rules (issue #6): a component's managed dependencies must be Ready before its
pre-manifest objects are applied; its release additionally waits for those objects;
its post-manifest objects wait for the release. A dependency that is not managed
(skipped, disabled, absent from the recipe) counts as satisfied. With
``skip_deployment_order`` nothing waits for anything.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os

from ansible_collections.aicr.runtime.plugins.module_utils.common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils.release.helm import release_digest
from ansible_collections.aicr.runtime.plugins.module_utils.release.scheduler import levels

OVERRIDE_KEYS = ("chart", "repository", "version", "namespace", "values", "enabled")


def deep_merge(base, override):
    """Maps merge recursively; ``None`` in the override deletes the key; anything else replaces."""
    if not isinstance(base, dict) or not isinstance(override, dict):
        return copy.deepcopy(override)
    result = copy.deepcopy(base)
    for key, value in override.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _file_list(value, field, name, base_dir):
    """Manifest files as absolute paths (accepts strings or {path|absolute|file} dicts)."""
    paths = []
    for entry in value or []:
        if isinstance(entry, dict):
            path = entry.get("absolute") or entry.get("absolute_path") or entry.get("path") or entry.get("file")
        else:
            path = entry
        if not path or not isinstance(path, str):
            raise AicrError("components: %s of %s has an entry %r that is not a file path" % (field, name, entry), component=name, field=field)
        if not os.path.isabs(path):
            if not base_dir:
                raise AicrError("components: %s of %s lists the relative path %s; give absolute paths or the catalog option" % (field, name, path),
                                component=name, field=field)
            path = os.path.join(base_dir, path)
        paths.append(path)
    return paths


class Component(object):
    """One managed component: what to deploy and what it waits for."""

    def __init__(self, raw, base_dir=None):
        self.name = raw["name"]
        self.type = raw.get("type") or "Helm"
        self.chart = raw.get("chart") or ""
        self.repository = raw.get("repository") or raw.get("source") or ""
        self.version = raw.get("version") or ""
        self.namespace = raw.get("namespace") or "default"
        self.values = copy.deepcopy(raw.get("values") or {})
        self.dependencies = list(raw.get("dependencies") or raw.get("dependencyRefs") or [])
        # recipe_resolve gives both catalog-relative (*_files) and absolute (*_paths) lists.
        self.pre_files = _file_list(raw.get("pre_manifest_paths") or raw.get("pre_manifest_files"), "pre_manifest_files", self.name, base_dir)
        self.post_files = _file_list(raw.get("manifest_paths") or raw.get("manifest_files"), "manifest_files", self.name, base_dir)
        self.manifest_only = bool(raw.get("manifest_only")) or not self.chart
        self.gate = []  # managed dependencies, set by build_plan

    @property
    def kind(self):
        return "objects" if self.manifest_only else "release"

    def digest(self):
        return release_digest(self.chart, self.repository, self.version, self.values)

    def as_render_input(self):
        return {"name": self.name, "namespace": self.namespace, "chart": self.chart or self.name, "version": self.version, "values": self.values}


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
    unknown = sorted((set(overrides) | skip) - set(names))
    if unknown:
        raise AicrError("component_overrides/skip_components: unknown components %s; the recipe has %s" % (unknown, names), field="component_overrides")
    managed, skipped = [], []
    for raw in raw_components:
        name = raw["name"]
        override = overrides.get(name) or {}
        bad = sorted(set(override) - set(OVERRIDE_KEYS))
        if bad:
            raise AicrError("component_overrides: %s has unknown keys %s; allowed: %s" % (name, bad, ", ".join(OVERRIDE_KEYS)), field="component_overrides")
        merged = dict(raw)
        for key in ("chart", "repository", "version", "namespace", "enabled"):
            if key in override:
                merged[key] = override[key]
        if "values" in override:
            merged["values"] = deep_merge(raw.get("values") or {}, override.get("values") or {})
        if name in skip:
            skipped.append({"name": name, "reason": "skip_components"})
            continue
        if merged.get("enabled") is False:
            skipped.append({"name": name, "reason": "disabled"})
            continue
        ctype = str(merged.get("type") or "Helm")
        if ctype.lower() != "helm":
            skipped.append({"name": name, "reason": "type %s is not deployed by gated_release (only Helm)" % ctype})
            continue
        managed.append(Component(merged, base_dir=base_dir))
    order = [c.name for c in managed]
    managed_names = set(order)
    deps = {}
    for comp in managed:
        comp.gate = [] if skip_deployment_order else [d for d in comp.dependencies if d in managed_names]
        deps[comp.name] = comp.gate
    return Plan(managed, skipped, order, deps)
