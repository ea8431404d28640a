# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Canary waves across a fleet: which clusters each wave converges, exactly as Ansible's ``serial`` batches them.

``playbooks/fleet.yml`` hands the same list to the play's ``serial`` (Ansible makes the batches) and to
:func:`plan_waves` (to name each wave and summarise it): each entry is the size of one wave - a count or a
percentage of the whole fleet, rounded down, at least 1 -, not a cumulative total, and the last entry repeats until
every cluster had its wave (``[1, "10%", "100%"]`` on 50 clusters: 1, then 5, then the other 44).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")


def wave_size(entry, total, field="fleet_waves"):
    """One entry of ``field`` as a count of clusters out of ``total`` (Ansible's ``pct_to_int``: rounded down, at least 1)."""
    allowed = "allowed: a count of clusters (1 or more) or a percentage of the fleet (\"10%\", more than 0 and at most 100)"
    if isinstance(entry, bool):
        raise AicrError("%s: %r is not allowed; %s" % (field, entry, allowed), field=field, value=entry)
    if isinstance(entry, str):
        match = _PERCENT.match(entry)
        if match:
            percent = float(match.group(1))
            if not 0 < percent <= 100:
                raise AicrError("%s: %r is not allowed; %s" % (field, entry, allowed), field=field, value=entry)
            return int(percent / 100.0 * total) or 1
        if entry.strip().isdigit():
            entry = int(entry)
    if isinstance(entry, int) and entry >= 1:
        return entry
    raise AicrError("%s: %r is not allowed; %s" % (field, entry, allowed), field=field, value=entry)


def plan_waves(hosts, sizes, field="fleet_waves"):
    """``hosts`` (in order: the first is the canary) cut into waves of ``sizes`` (see the module's doc)."""
    if not isinstance(sizes, (list, tuple)) or not sizes:
        raise AicrError("%s: %r is not allowed; allowed: a non-empty list of wave sizes (counts or percentages of the fleet)" % (field, sizes),
                        field=field, value=sizes)
    hosts = list(hosts or [])
    counts = [wave_size(entry, len(hosts), "%s[%d]" % (field, index)) for index, entry in enumerate(sizes)]
    waves, at, index = [], 0, 0
    while at < len(hosts):
        waves.append(hosts[at:at + counts[index]])
        at += counts[index]
        index = min(index + 1, len(counts) - 1)
    return waves


def stack_gate(stacks):
    """Why the stacks of one cluster (``stack_info``'s ``stacks``) do not pass a wave's gate, one line per stack (none: passed).

    A stack passes when its status is ``Ready`` and its ``HealthChecksPassed`` condition ``True`` (checks passed, or the
    stack has none); a suspended stack is not reconciled, so it is not gated.
    """
    problems = []
    for stack in stacks or []:
        if (stack.get("decision") or {}).get("suspended"):
            continue
        status = stack.get("status") or {}
        health = [c for c in status.get("conditions") or [] if c.get("type") == "HealthChecksPassed"]
        if status.get("phase") != "Ready":
            problems.append("%s: phase %s" % (stack.get("name"), status.get("phase") or "none"))
        elif not health or health[0].get("status") != "True":
            reason = (health[0].get("reason") or health[0].get("status")) if health else "not run"
            problems.append("%s: health checks not passed (%s)" % (stack.get("name"), reason))
    return problems
