# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: recipe
short_description: Resolve an AICR recipe on the controller
version_added: 0.1.0
author:
  - aicr.runtime maintainers (@aicr-runtime)
description:
  - Resolves a recipe from an AICR recipe catalog on the controller, with the same engine and the same
    semantics (AICR v0.19.0) as the M(aicr.runtime.recipe_resolve) module.
  - Returns one element - by default the whole result (C(recipe), C(components), C(recipe_name),
    C(catalog_digest), C(catalog_root), C(graph)); see O(result) to return one part.
options:
  _terms:
    description:
      - Criteria as C(dimension=value) strings, for example C(service=eks) C(accelerator=h100).
        Dimensions are C(service), C(accelerator), C(intent), C(os), C(platform), C(nodes).
      - Terms win over the same dimension in O(criteria).
    type: list
    elements: str
    required: false
  catalog:
    description: Path to an AICR C(recipes/) directory or a C(.tar.gz) of one (on the controller).
    type: path
    required: true
  criteria:
    description: Criteria as a dictionary (C(service), C(accelerator), C(intent), C(os), C(platform), C(nodes)).
    type: dict
    default: {}
  profile:
    description: Configuration profile selection C(name=value), for example C(gpuStack=operator-managed).
    type: str
  skip_components:
    description: Components to disable (kept in the recipe, left out of the rollout).
    type: list
    elements: str
    default: []
  component_overrides:
    description: Per-component C(version), C(namespace), C(values) and C(enabled), keyed by component name.
    type: dict
    default: {}
  cache_dir:
    description: Directory for the parsed-catalog cache and unpacked archives (see M(aicr.runtime.recipe_resolve)).
    type: path
  use_cache:
    description: Persist and reuse the parsed catalog metadata in O(cache_dir).
    type: bool
    default: true
  snapshot:
    description:
      - A Snapshot (mapping, cluster_facts result or file path on the controller) to resolve against, as
        M(aicr.runtime.recipe_resolve) does with its C(snapshot) option.
    type: raw
  result:
    description:
      - Which part of the result to return. C(all) returns the whole dictionary;
        C(deployment_order) returns C(recipe.deploymentOrder).
    type: str
    default: all
    choices: [all, recipe, components, recipe_name, catalog_digest, graph, deployment_order, relaxed_dimensions]
  node_scheduling:
    description:
      - Node selectors, tolerations, node count, workload gate and selector written into each component's values, as
        C(aicr bundle) v0.19.0 writes them from its flags - the same option, with the same checks, as
        M(aicr.runtime.recipe_resolve)'s O(aicr.runtime.recipe_resolve#module:node_scheduling).
      - "A mapping: C(system) and C(accelerated) (each C({node_selector: {label: value}, tolerations: [...]})), C(nodes),
        C(workload_gate) (a taint C(key=value:effect)), C(workload_selector) (labels). Not given: AICR's default
        tolerations C([{operator: Exists}]) only."
      - A wrong shape is refused naming its field (for example C(node_scheduling.accelerated.tolerations[0].effect)).
    type: raw
notes:
  - Errors are raised as lookup errors with the same one-line messages as the module.
  - A keyword that is not one of the options above (C(critera=...)) is refused, naming the nearest option - never ignored.
  - A boolean option given a value that is no boolean (C(use_cache=perhaps)) is refused too - Ansible would read it as C(false).
"""

EXAMPLES = r"""
- name: Deployment order of the H100 / EKS / Ubuntu / training recipe
  ansible.builtin.debug:
    msg: >-
      {{ lookup('aicr.runtime.recipe', 'service=eks', 'accelerator=h100', 'os=ubuntu', 'intent=training',
                catalog='/opt/aicr/recipes', result='deployment_order') }}

- name: Full result, criteria as a dictionary
  ansible.builtin.set_fact:
    plan: "{{ lookup('aicr.runtime.recipe', catalog=catalog_dir, criteria={'service': 'kind', 'intent': 'training'}) }}"

- name: Components' values with GPU nodes selected and tainted, as aicr bundle writes them
  ansible.builtin.set_fact:
    components: >-
      {{ lookup('aicr.runtime.recipe', 'service=eks', 'accelerator=h100', 'os=ubuntu', 'intent=training',
                catalog=catalog_dir, result='components',
                node_scheduling={'accelerated': {'node_selector': {'nodeGroup': 'gpu'},
                                                 'tolerations': ['nvidia.com/gpu=present:NoSchedule']}}) }}
"""

RETURN = r"""
_raw:
  description:
    - A one-element list holding the selected part of the result (a dictionary for C(all) and C(recipe),
      a list for C(components) and C(deployment_order), a string otherwise).
  type: list
  elements: raw
"""

from ansible.errors import AnsibleLookupError

from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe.criteria import DIMENSIONS
from ansible_collections.aicr.runtime.plugins.plugin_utils.lookup import EngineLookup

_DIMENSIONS = DIMENSIONS + ("nodes",)  # the criteria dimensions and the node count


def criteria_from_terms(terms, base):
    criteria = dict(base or {})
    for term in terms or []:
        if not isinstance(term, str) or "=" not in term:
            raise AnsibleLookupError("recipe lookup: term %r is not dimension=value (dimensions: %s)" % (term, ", ".join(_DIMENSIONS)))
        key, value = term.split("=", 1)
        key = key.strip()
        if key not in _DIMENSIONS:
            raise AnsibleLookupError("recipe lookup: term %r names unknown dimension %r (allowed: %s)" % (term, key, ", ".join(_DIMENSIONS)))
        criteria[key] = value
    return criteria


class LookupModule(EngineLookup):

    name = "recipe lookup"

    def evaluate(self, terms, variables):
        criteria = criteria_from_terms(terms, self.get_option("criteria"))
        result = resolve_mod.resolve(
            self.get_option("catalog"),
            criteria=criteria,
            profile=self.get_option("profile"),
            skip_components=self.get_option("skip_components"),
            component_overrides=self.get_option("component_overrides"),
            cache_dir=self.get_option("cache_dir"),
            persist_cache=self.get_option("use_cache"),
            snapshot=self.get_option("snapshot"),
            node_scheduling=self.get_option("node_scheduling"),
        )
        self.warn(result)
        part = self.get_option("result")
        if part == "all":
            return [result]
        if part == "deployment_order":
            return [result["recipe"]["deploymentOrder"]]
        if part == "relaxed_dimensions":
            return [result.get("relaxed_dimensions") or []]
        return [result[part]]
