# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The options that resolve a recipe, shared by ``recipe_resolve`` and ``gated_release``'s ``resolve``.

Both modules must read and check criteria the same way (a survey answer ``"4"`` for ``nodes`` is a node count in
both), so the argument spec lives here once (``_entry.recipe_resolve.resolve_from_options`` resolves from it).
``criteria`` is ``raw``: Ansible's ``dict`` type would turn a string into a mapping itself (``key=value`` or JSON) or
refuse it in its own words, naming no field; :func:`check_inputs` refuses anything but a mapping, naming ``criteria``,
and checks each key and value.

:func:`check_inputs` is the one validation pass over what the user gives a resolution (recipe_resolve, its lookup and
gated_release's ``resolve``), before the catalog is read or unpacked: every problem of the criteria's keys and types,
the profile selection, ``skip_components``, the shape of ``component_overrides``, the kind of ``snapshot`` and
``node_scheduling`` (``scheduling.settings``), all
listed in ``errors``. What only the catalog can say (a criteria value it does not know, a component the recipe does not
have) is checked once it is read, again every problem at once.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems, unknown_name_message
from ansible_collections.aicr.runtime.plugins.module_utils._common.component import RESOLVE_OVERRIDE_KEYS as KEYS
from ansible_collections.aicr.runtime.plugins.module_utils._common.component import override_problems
from ansible_collections.aicr.runtime.plugins.module_utils._recipe.criteria import DIMENSIONS
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import scheduling
from ansible_collections.aicr.runtime.plugins.module_utils._recipe.merge import profile_problem

RESOLVE_SPEC = dict(
    catalog=dict(type="path", required=True),
    # a mapping of DIMENSIONS and nodes, checked by check_inputs (not Ansible's dict: see above)
    criteria=dict(type="raw", default={}),
    profile=dict(type="str"),
    skip_components=dict(type="list", elements="str", default=[]),
    component_overrides=dict(type="dict", default={}),
    use_cache=dict(type="bool", default=True),
    # AICR's bundle-time node scheduling (_recipe.scheduling), checked by check_inputs: raw so a wrong shape is named there
    node_scheduling=dict(type="raw"),
)

# A Snapshot, a cluster_facts result, or the path of a Snapshot file: recipe_resolve's option and gated_release's
# ``resolve.snapshot``.
SNAPSHOT_SPEC = dict(snapshot=dict(type="raw"))


MAX_NODES = 100000


def check_inputs(catalog, criteria=None, profile=None, skip_components=None, component_overrides=None, snapshot=None, node_scheduling=None):
    """One validation pass over a resolution's inputs, before the catalog is read: raises ``AicrError`` listing every
    problem (``errors``), its ``msg`` the first one's line (the field, the value, what is allowed)."""
    problems = Problems("recipe")
    if not isinstance(catalog, str) or not catalog.strip():
        problems.add("catalog", "%r is not allowed; use the path of a recipes/ directory or of a .tar.gz of one" % (catalog,), value=catalog)
    if criteria is not None and problems.mapping("criteria", criteria):
        problems.known_keys("criteria", criteria, DIMENSIONS + ("nodes",))
        for dim in DIMENSIONS:
            value = criteria.get(dim)
            if value is not None and not isinstance(value, str):
                problems.add("criteria.%s" % dim, "%r is not allowed; use a string" % (value,), value=value)
        problems.number("criteria.nodes", criteria.get("nodes") if criteria.get("nodes") != "" else None, minimum=0, maximum=MAX_NODES,
                        integer=True)
    if profile not in (None, ""):
        problem = profile_problem(profile)
        if problem:
            problems.add("profile", "%r %s (e.g. gpuStack=operator-managed)" % (profile, problem), value=profile,
                         allowed="name=value, each [A-Za-z0-9._-]+")
    if skip_components is not None:
        if not isinstance(skip_components, (list, tuple)):
            problems.add("skip_components", "a %s is not allowed; use a list of component names" % type(skip_components).__name__)
        else:
            for index, name in enumerate(skip_components):
                problems.text("skip_components[%d]" % index, name)
    if component_overrides is not None and problems.mapping("component_overrides", component_overrides):
        # the shape of every entry now; whether each names a component of the recipe, once it is resolved
        override_problems_into(problems, component_overrides, list(component_overrides))
    if snapshot is not None and not isinstance(snapshot, dict) and not (isinstance(snapshot, str) and snapshot.strip()):
        problems.add("snapshot", "a %s is not allowed; use a Snapshot mapping, a cluster_facts result or the path of a Snapshot file"
                     % type(snapshot).__name__, value=snapshot)
    scheduling.settings(node_scheduling, problems=problems)
    problems.raise_if_any()


def override_problems_into(problems, overrides, names):
    """recipe_resolve's wording of every ``component.override_problems`` entry of ``overrides`` for a recipe of
    components ``names``, added to ``problems``; an override's ``namespace`` is a DNS-1123 label."""
    for kind, name, key, value in override_problems(overrides, names, KEYS):
        where = "component_overrides.%s" % name
        if kind == "not-a-mapping":
            problems.add("component_overrides", "expected a mapping of component name to {version, namespace, values, enabled}")
        elif kind == "unknown-component":
            problems.add("component_overrides", "component %r is not in the resolved recipe (components: %s)" % (name, ", ".join(sorted(names))),
                         value=name, allowed=sorted(names))
        elif kind == "entry-not-a-mapping":
            problems.add(where, "expected a mapping with keys %s" % ", ".join(KEYS))
        elif kind == "unknown-key":
            problems.errors.append({"field": "%s.%s" % (where, key), "message": unknown_name_message(where, key, KEYS), "allowed": list(KEYS)})
        elif kind == "not-a-string":
            problems.add("%s.%s" % (where, key), "expected a non-empty string, got %r" % (value,))
        elif kind == "values-not-a-mapping":
            problems.add("%s.values" % where, "expected a mapping of Helm values, got %s" % type(value).__name__)
        else:
            problems.add("%s.enabled" % where, "expected a boolean, got %r" % (value,))
    for name, spec in (overrides or {}).items() if isinstance(overrides, dict) else ():
        if name in names and isinstance(spec, dict) and isinstance(spec.get("namespace"), str) and spec["namespace"]:
            problems.name("component_overrides.%s.namespace" % name, spec["namespace"])
