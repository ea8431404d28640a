# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: timeline
short_description: Draw a ClusterStack's last rollout as a Mermaid gantt chart, from the cluster alone
version_added: 0.1.0
description:
  - Reads C(status.components[].timing) of a ClusterStack (per component, what the last rollout that changed or failed it
    recorded - its start, its whole step, its health check's part and its dependencies) and returns the same Mermaid C(gantt) text as
    gated_release's C(timeline) result - wait, install and health-check phases per component, the critical path tagged
    C(crit).
  - Components never timed (status written before this field existed, or never run) are left out.
options:
  _input:
    description: A stack as M(aicr.runtime.stack_info) returns it (RV(aicr.runtime.stack_info#module:stacks[])), a ClusterStack object or its C(status).
    type: dict
    required: true
  title:
    description: The chart's title (the stack's name when empty).
    type: str
    default: ""
"""

EXAMPLES = r"""
- name: Read the stacks
  aicr.runtime.stack_info:
    names: [gpu-training]
  register: found

- name: Write the stack's last rollout as a chart
  ansible.builtin.copy:
    dest: /tmp/gpu-training-timeline.mmd
    content: "{{ found.stacks[0] | aicr.runtime.timeline }}"
    mode: "0644"
"""

RETURN = r"""
_value:
  description: The Mermaid gantt text.
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.aicr.runtime.plugins.module_utils._common import timeline as timeline_mod


def timeline(stack, title=""):
    if not isinstance(stack, dict):
        raise AnsibleFilterError("timeline: the input must be a ClusterStack or its status (a dict), got %s" % type(stack).__name__)
    status = stack.get("status") if "status" in stack else stack
    name = stack.get("name") or (stack.get("metadata") or {}).get("name") or "stack"
    return timeline_mod.gantt(timeline_mod.from_status(status), title=title or "last rollout of %s" % name)


class FilterModule(object):
    """aicr.runtime filters."""

    def filters(self):
        return {"timeline": timeline}
