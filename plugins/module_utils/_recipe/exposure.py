# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The agentgateway inference gateway's source ranges as AICR v0.19.0's ``aicr bundle`` settles them.

Kubernetes treats an empty ``loadBalancerSourceRanges`` as allow-all, so when the agentgateway component's final
values (the recipe's, node scheduling, the user's ``component_overrides``) leave ``allowedSourceRanges`` unset, null
or an empty list, the bundler writes the RFC 1918 private ranges there (private by default). A non-empty list of
CIDRs is kept as it is (also one that opens the gateway with ``0.0.0.0/0``); anything else (not a list, an entry
that is not a string, a string that is not a CIDR) is refused, as the bundler refuses it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

COMPONENT = "agentgateway"
PATH = "allowedSourceRanges"
DEFAULT_SOURCE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")


def _cidr_problem(values):
    """Why ``values[PATH]`` (a non-empty value) is not a list of CIDR strings, or None."""
    ranges = values[PATH]
    if not isinstance(ranges, list):
        return "got %s, not a list" % type(ranges).__name__
    for entry in ranges:
        if not isinstance(entry, str):
            return "entry %r is not a string" % (entry,)
        try:
            if "/" not in entry:
                raise ValueError(entry)
            ipaddress.ip_network(entry, strict=False)
        except ValueError:
            return "%r is not a valid CIDR" % entry
    return None


def settle_source_ranges(values_by_name):
    """Fill an unset agentgateway ``allowedSourceRanges`` with :data:`DEFAULT_SOURCE_RANGES` in ``values_by_name``
    ({component: values}, changed in place); raise :class:`AicrError` for a value that is not a list of CIDRs."""
    values = values_by_name.get(COMPONENT)
    if values is None:
        return
    if values.get(PATH) in (None, []):
        values[PATH] = list(DEFAULT_SOURCE_RANGES)
        return
    problem = _cidr_problem(values)
    if problem:
        raise AicrError("%s: values.%s must be a list of CIDR strings (%s); set it with component_overrides.%s.values.%s, "
                        "e.g. [\"10.0.0.0/8\"]" % (COMPONENT, PATH, problem, COMPONENT, PATH), component=COMPONENT, field=PATH)
