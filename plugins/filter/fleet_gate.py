# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleet_gate
short_description: Why a cluster's stacks do not pass a canary wave's gate
version_added: 0.1.0
description:
  - The gate of C(playbooks/fleet.yml) with O(fleet_role=stack_reconcile) - a cluster is through its wave when every stack
    the role reconciles is C(Ready) with its C(HealthChecksPassed) condition C(True) (checks passed, or none).
  - Returns one line per stack that does not pass; an empty list passes. Suspended stacks are not gated.
options:
  _input:
    description: The cluster's stacks, as M(aicr.runtime.stack_info) returns them (RV(aicr.runtime.stack_info#module:stacks)).
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: Gate
  ansible.builtin.assert:
    that: found.stacks | aicr.runtime.fleet_gate | length == 0
    fail_msg: "{{ found.stacks | aicr.runtime.fleet_gate | join('; ') }}"
"""

RETURN = r"""
_value:
  description: "One line per stack that does not pass, C(<name>: phase <phase>) or C(<name>: health checks not passed (<reason>))."
  type: list
  elements: str
"""

from ansible_collections.aicr.runtime.plugins.module_utils._common.waves import stack_gate


def fleet_gate(stacks):
    return stack_gate(stacks)


class FilterModule(object):
    """aicr.runtime filters."""

    def filters(self):
        return {"fleet_gate": fleet_gate}
