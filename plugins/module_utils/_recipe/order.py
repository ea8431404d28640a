# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Dependency validation, deployment order and the Mermaid picture of the DAG.

* Every ``dependencyRefs`` entry must name a component of the recipe; cycles are
  errors naming the components on the cycle.
* Deployment order is Kahn's algorithm over *enabled* components with the ready
  set kept sorted, so ties go to the alphabetically first ready component.
  A dependency on a declared-but-disabled component counts as already satisfied
  (AICR assumes it is provided outside the recipe).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import heapq

from ansible_collections.aicr.runtime.plugins.module_utils._common.dag import find_cycle as _find_cycle
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError


def is_enabled(ref):
    """AICR's gate: ``overrides.enabled: false`` or ``overrides.install: false`` disables a component."""
    overrides = ref.get("overrides") or {}
    for key in ("enabled", "install"):
        value = overrides.get(key)
        if isinstance(value, bool) and not value:
            return False
    return True


def validate_dependencies(refs, where="componentRefs"):
    """Unknown dependencies and dependency cycles are errors naming the components."""
    known = set(ref["name"] for ref in refs)
    for ref in refs:
        for dep in ref.get("dependencyRefs") or []:
            if dep not in known:
                raise AicrError(
                    "%s: component %r references unknown dependency %r (known components: %s)" % (where, ref["name"], dep, ", ".join(sorted(known))),
                    component=ref["name"], dependency=dep,
                )
    cycle = find_cycle(refs)
    if cycle:
        raise AicrError("%s: circular dependency detected: %s" % (where, " -> ".join(cycle)), cycle=cycle)


def find_cycle(refs):
    """The first dependency cycle found by a DFS in declaration order, as a closed path, or None."""
    return _find_cycle([ref["name"] for ref in refs], dict((ref["name"], list(ref.get("dependencyRefs") or [])) for ref in refs))


def deployment_order(refs):
    """Topological order of the enabled components, alphabetical among ready ones."""
    declared = set(ref["name"] for ref in refs)
    enabled = set(ref["name"] for ref in refs if is_enabled(ref))
    indegree = {}
    dependents = {}
    for ref in refs:
        name = ref["name"]
        if name not in enabled:
            continue
        degree = 0
        for dep in ref.get("dependencyRefs") or []:
            if dep in declared and dep not in enabled:
                continue
            degree += 1
            dependents.setdefault(dep, []).append(name)
        indegree[name] = degree
    ready = [name for name, degree in indegree.items() if degree == 0]
    heapq.heapify(ready)
    out = []
    while ready:
        node = heapq.heappop(ready)
        out.append(node)
        for dependent in dependents.get(node, ()):
            indegree[dependent] -= 1
            if indegree[dependent] == 0:
                heapq.heappush(ready, dependent)
    if len(out) != len(enabled):
        stuck = sorted(name for name in enabled if name not in out)
        raise AicrError("cannot determine deployment order: circular dependencies exist among %s" % ", ".join(stuck), components=stuck)
    return out


def mermaid(refs, order):
    """``flowchart TD`` text: one node per deployed component (in order), an edge per dependency.

    Dependencies on disabled components are drawn dashed to an "external" node.
    """
    ids = dict((name, "c%d" % index) for index, name in enumerate(order))
    by_name = dict((ref["name"], ref) for ref in refs)
    lines = ["flowchart TD"]
    for index, name in enumerate(order):
        lines.append('  %s["%d. %s"]' % (ids[name], index + 1, name))
    external = {}
    for name in order:
        for dep in by_name[name].get("dependencyRefs") or []:
            if dep in ids:
                lines.append("  %s --> %s" % (ids[dep], ids[name]))
            else:
                if dep not in external:
                    external[dep] = "x%d" % len(external)
                    lines.append('  %s["%s (external)"]' % (external[dep], dep))
                lines.append("  %s -.-> %s" % (external[dep], ids[name]))
    return "\n".join(lines) + "\n"
