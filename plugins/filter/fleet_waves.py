# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: fleet_waves
short_description: Cut a fleet of clusters into canary waves, as Ansible's serial batches them
version_added: 0.1.0
description:
  - Returns the waves C(playbooks/fleet.yml) converges, one list of hosts per wave, in the order Ansible's play keyword
    C(serial) makes its batches from the same list - so the playbook can name each wave and summarise it.
  - Each entry of O(sizes) is the size of one wave, not a cumulative total - a count, or a percentage of the whole fleet
    (rounded down, at least 1); the last entry repeats until every cluster had its wave. V([1, "10%", "100%"]) on 50
    clusters gives waves of 1, 5 and 44.
options:
  _input:
    description: The fleet's hosts in order (the first is the canary), for example C(ansible_play_hosts_all).
    type: list
    elements: str
    required: true
  sizes:
    description: The wave sizes (counts or percentages such as V("10%")).
    type: list
    elements: raw
    required: true
"""

EXAMPLES = r"""
- name: Name the waves
  ansible.builtin.debug:
    msg: "{{ ansible_play_hosts_all | aicr.runtime.fleet_waves([1, '10%', '100%']) }}"
"""

RETURN = r"""
_value:
  description: One list of hosts per wave.
  type: list
  elements: list
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.waves import plan_waves


def fleet_waves(hosts, sizes):
    try:
        return plan_waves(hosts, sizes)
    except AicrError as exc:
        raise AnsibleFilterError(exc.msg)


class FilterModule(object):
    """aicr.runtime filters."""

    def filters(self):
        return {"fleet_waves": fleet_waves}
