# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: upgrade_plan
short_description: Plan moving clusters to a new catalog, on the controller
version_added: 0.1.0
author:
  - aicr.runtime maintainers (@aicr-runtime)
description:
  - The M(aicr.runtime.upgrade_plan) module's engine as a lookup - each term one cluster's current state (a mapping as
    the module's C(current) option takes it, or a C(ClusterStack) object) - across a whole inventory in one call.
  - Returns one element, the module's result (C(verdict), C(plans), C(fleet)); see O(result) to return one part.
options:
  _terms:
    description:
      - The clusters, each a current-state mapping or a C(ClusterStack) object; a list of them is flattened.
    type: list
    elements: dict
    required: true
  catalog:
    description: The new catalog - a C(recipes/) directory or a C(.tar.gz) of one (on the controller).
    type: path
    required: true
  current_catalog:
    description: The catalog the clusters run, when their state does not name it (or to override what it names).
    type: path
  cache_dir:
    description: Directory for the parsed-catalog cache and unpacked archives (see M(aicr.runtime.recipe_resolve)).
    type: path
  result:
    description: Which part to return.
    type: str
    choices: [all, verdict, plans, fleet]
    default: all
  judge_crds:
    description: Compare the CRDs of both chart versions of every component whose chart changes (see M(aicr.runtime.upgrade_plan)).
    type: bool
    default: true
  helm_binary:
    description: The helm executable that pulls remote charts for O(judge_crds).
    type: str
    default: helm
  repository_mirrors:
    description: Map of upstream repository URL to a mirror (as M(aicr.runtime.upgrade_plan) takes it), for O(judge_crds).
    type: dict
    default: {}
notes:
  - An unknown keyword (a misspelled option) is refused, naming the nearest known one.
"""

EXAMPLES = r"""
- name: One table per verdict across the inventory
  ansible.builtin.debug:
    msg: >-
      {{ lookup('aicr.runtime.upgrade_plan',
                groups['clusters'] | map('extract', hostvars, 'aicr_upgrade_current') | list,
                catalog='/opt/aicr/releases/aicr-catalog-1.3.0.tar.gz', result='fleet') }}
"""

RETURN = r"""
_raw:
  description:
    - A one-element list holding the selected part of the result (see M(aicr.runtime.upgrade_plan)'s return values).
  type: list
  elements: raw
"""

from ansible_collections.aicr.runtime.plugins.module_utils._stack.upgrade import plan_many
from ansible_collections.aicr.runtime.plugins.plugin_utils.lookup import EngineLookup


class LookupModule(EngineLookup):

    name = "upgrade_plan lookup"
    error_prefix = "upgrade_plan lookup: "

    def evaluate(self, terms, variables):
        clusters = []
        for term in terms or []:
            clusters.extend(term if isinstance(term, list) else [term])
        result = plan_many(clusters, self.get_option("catalog"), self.get_option("current_catalog"), self.get_option("cache_dir"),
                           judge_crds=self.get_option("judge_crds"), helm_binary=self.get_option("helm_binary"),
                           repository_mirrors=self.get_option("repository_mirrors"))
        part = self.get_option("result")
        return [result if part == "all" else result[part]]
