# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
name: option_problems
short_description: What a module of the collection would refuse in its options, checked on the controller before any task runs
version_added: 0.1.0
author:
  - aicr.runtime maintainers (@aicr-runtime)
description:
  - Runs the checks a module of the collection applies to its options before it contacts anything - every number
    in its range, every choice, every name - over the options given, and returns one line per problem (an empty list
    when there is none). The checks are the module's own, so a range is defined once, in the module.
  - A role runs it as one of its first tasks for the modules it calls later, so a bad variable is refused before the
    role writes anything - the stack_reconcile role records its stacks before its rollout, the chart_api role reads
    the live CRD before it publishes.
  - Only what needs neither a cluster, a chart, a catalog nor a file of the host that runs the module is checked
    here; the module checks the rest, again before it changes anything.
  - Called from a task of a role, a problem of option C(x) names the role's variable C(<role>_x) when the role
    declares one (its C(meta/argument_specs.yml)) - the variable the user set.
options:
  _terms:
    description:
      - The module whose checks run, one of C(crd_publish), C(gated_release) and C(stack_info).
    type: list
    elements: str
    required: true
  options:
    description:
      - The module's options, as the task that calls the module gives them. Options left out take the module's defaults.
      - "C(crd_publish): C(state), C(wait_timeout), C(wait_sleep), C(severities)."
      - "C(gated_release): every option it checks without a recipe, a cluster or a file of this host (those its option
        declarations mark so) - its numbers, choices and names, such as C(concurrency), C(timeout), C(stack) and C(on_failure)."
      - "C(stack_info): C(backend), C(namespace), C(names), C(resync_interval)."
      - Any other option is refused, naming the nearest - never ignored.
    type: dict
    required: true
notes:
  - Wrong input to the lookup itself (no module or an unknown one, an option it does not check, an unknown keyword) is
    an error; the problems of the options are its result.
"""

EXAMPLES = r"""
- name: Refuse bad rollout variables before anything is written
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems | join('; ') }}"
    quiet: true
  vars:
    problems: "{{ lookup('aicr.runtime.option_problems', 'gated_release',
      options={'concurrency': my_concurrency, 'timeout': my_timeout, 'poll_interval': my_poll_interval}) }}"
"""

RETURN = r"""
_raw:
  description:
    - "A one-element list holding the list of problems, each one line naming the option (or the role's variable), the value
      and what is allowed, such as C(stack_reconcile_concurrency: 0 is not allowed; use 1 to 64)."
  type: list
  elements: list
"""

import os

from ansible_collections.aicr.runtime.plugins.module_utils._common import rolevars
from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems, unknown_name_message
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release_inputs import check_options
from ansible_collections.aicr.runtime.plugins.module_utils._release import spec as gated_release_spec
from ansible_collections.aicr.runtime.plugins.module_utils._schema.publish import checked_params
from ansible_collections.aicr.runtime.plugins.module_utils._stack.engine import check_info
from ansible_collections.aicr.runtime.plugins.plugin_utils.lookup import EngineLookup


def _crd_publish(options, problems):
    checked_params(options, problems)


def _gated_release(options, problems):
    check_options(options, problems)


def _stack_info(options, problems):
    check_info(options)


# module -> (the options its check reads, the check): each check is the module's own, adding to ``problems`` or raising
CHECKS = {
    "crd_publish": (("state", "wait_timeout", "wait_sleep", "severities"), _crd_publish),
    "gated_release": (gated_release_spec.OFFLINE, _gated_release),
    "stack_info": (("backend", "namespace", "names", "resync_interval"), _stack_info),
}


def problems_of(module, options):
    """The problems (``Problems.errors`` entries) the checks of ``module`` find in ``options``; an AicrError for a module
    this lookup has no checks for, options that are no mapping, or an option its checks do not read."""
    if module not in CHECKS:
        raise AicrError(unknown_name_message("option_problems lookup: module", module, sorted(CHECKS)), field="_terms")
    known, check = CHECKS[module]
    if not isinstance(options, dict):
        raise AicrError("option_problems lookup: options: a %s is not allowed; use a mapping of %s's options" % (type(options).__name__, module),
                        field="options")
    unknown = Problems("option_problems lookup")
    for key in options:
        if key not in known:
            unknown.errors.append({"field": "options.%s" % key, "message": unknown_name_message("option_problems lookup: %s options" % module, key, known),
                                   "allowed": sorted(known)})
    unknown.raise_if_any()
    problems = Problems(module)
    try:
        check(dict(options), problems)
    except AicrError as exc:
        problems.extend(exc)
    return problems.errors


def named_by_role(problems, role, declared):
    """``problems`` with each option ``x`` named ``<role>_x`` where the role declares that variable (the one the user set)."""
    named = []
    for entry in problems:
        field = str(entry.get("field") or "")
        variable = "%s_%s" % (role, field)
        if field and variable in declared and str(entry.get("message", "")).startswith(field + ":"):
            entry = dict(entry, field=variable, message=variable + entry["message"][len(field):])
        named.append(entry)
    return named


def _declared(role_path):
    """The variables the role at ``role_path`` declares; none when its files cannot be read (the problems keep the options' names)."""
    try:
        return rolevars.role_names(role_path)[0]
    except Exception:  # pylint: disable=broad-except  # naming is a courtesy: the problems are reported either way
        return set()


class LookupModule(EngineLookup):

    name = "option_problems lookup"

    def evaluate(self, terms, variables):
        if len(terms or []) != 1:
            raise AicrError("option_problems lookup: _terms: give one module, one of %s; got %d" % (", ".join(sorted(CHECKS)), len(terms or [])),
                            field="_terms")
        problems = problems_of(str(terms[0]), self.get_option("options"))
        role_path = variables.get("role_path")
        if role_path:
            problems = named_by_role(problems, os.path.basename(str(role_path).rstrip("/")), _declared(str(role_path)))
        return [[entry["message"] for entry in problems]]
