# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: unknown_variables
short_description: The variables with a role's prefix that the role does not know
version_added: 0.1.0
author:
  - aicr.runtime maintainers (@aicr-runtime)
description:
  - Used as the first task of each role of the collection - called from a role's task, it returns one line per defined
    variable whose name starts with C(<role>_) that the role does not know, each naming the nearest variable it does know.
    An empty list when there is none.
  - The role knows the options of its C(meta/argument_specs.yml) (every entry point) and what its own task files set
    (C(register), C(set_fact), loop variables, task and block C(vars)), so a result registered by an earlier run of the
    role is not taken for a misspelling.
  - Ansible itself silently ignores such a variable - a misspelled C(cluster_runtime_critera) would leave the criteria
    empty and roll out the C(base) recipe.
notes:
  - Takes no terms and no options; the role is the one whose task calls it (C(role_path)).
"""

EXAMPLES = r"""
- name: Refuse cluster_runtime_* variables the role does not know (misspellings)
  ansible.builtin.assert:
    that: lookup('aicr.runtime.unknown_variables') | length == 0
    fail_msg: "{{ lookup('aicr.runtime.unknown_variables') | join('; ') }}"
    quiet: true
"""

RETURN = r"""
_raw:
  description:
    - "A one-element list holding the list of problems, each a line such as
      C(cluster_runtime_critera: not a variable of role cluster_runtime ...; did you mean cluster_runtime_criteria?)."
  type: list
  elements: list
"""

import os

from ansible.errors import AnsibleLookupError

from ansible_collections.aicr.runtime.plugins.module_utils._common import rolevars
from ansible_collections.aicr.runtime.plugins.plugin_utils.lookup import EngineLookup


class LookupModule(EngineLookup):

    name = "unknown_variables lookup"

    def check_input(self, terms, kwargs):
        if terms:
            raise AnsibleLookupError("unknown_variables lookup: _terms: %d given; it takes no terms (call it from a task of a role)" % len(terms))
        if kwargs:
            raise AnsibleLookupError("unknown_variables lookup: %s: not an option; it takes no options (call it from a task of a role)"
                                     % ", ".join(sorted(str(k) for k in kwargs)))

    def evaluate(self, terms, variables):
        role_path = variables.get("role_path")
        if not role_path:
            raise AnsibleLookupError("unknown_variables lookup: role_path is not defined; call it from a task of a role")
        role_path = str(role_path)
        try:
            declared, own = rolevars.role_names(role_path)
        except Exception as exc:  # pylint: disable=broad-except  # a role that cannot be read: one line, never a traceback
            raise AnsibleLookupError("unknown_variables lookup: cannot read the role at %s (%s)" % (role_path, getattr(exc, "msg", None) or exc))
        return [rolevars.unknown_variables(os.path.basename(role_path.rstrip("/")), list(variables), declared, own)]
