# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""fabric_device's one validation pass over its options, before the cluster or the fabric is contacted.

Every problem is collected (``_common.checks.Problems``) and raised as one ``AicrError``: its ``msg`` the first problem's
line (the field, the value, what is allowed), ``errors`` all of them. The ranges (also in the module's DOCUMENTATION):

- ``timeout``, ``wait_timeout``, ``poll_interval``, ``settle_timeout``: more than 0 seconds, at most ``MAX_SECONDS`` (a day);
  ``wait_timeout`` an integer; a zero is a value, never the default;
- ``max_workers``: 1 to ``MAX_WORKERS``; ``orphan_grace``: 0 (detach at once) or more seconds;
- each target (``count`` >= 0 with ``state=present``, ``devices`` only with ``absent``, ``node`` or ``machine_id``):
  ``targets.Target.check`` - here only: the service trusts the targets it is given;
- the stack names (``_stack.options.check_stack_options``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._stack.options import check_stack_options

MAX_SECONDS = 86400
MAX_WORKERS = 256


def check_options(params, targets):
    """Raise one AicrError for every problem of ``params`` (fabric_device's options) and ``targets`` (their Targets)."""
    problems = Problems("fabric_device")
    try:
        check_stack_options(params, "stack", "status_stack")
    except AicrError as exc:
        problems.extend(exc)
    problems.positive("timeout", params.get("timeout"), maximum=MAX_SECONDS)
    problems.positive("wait_timeout", params.get("wait_timeout"), maximum=MAX_SECONDS, integer=True)
    problems.positive("poll_interval", params.get("poll_interval"), maximum=MAX_SECONDS)
    problems.positive("settle_timeout", params.get("settle_timeout"), maximum=MAX_SECONDS)
    problems.number("max_workers", params.get("max_workers"), minimum=1, maximum=MAX_WORKERS, integer=True)
    problems.number("orphan_grace", params.get("orphan_grace"), minimum=0, integer=True, unit="seconds")
    for index, target in enumerate(targets):
        target.check(problems, index if params.get("machines") else None)  # a machines item is named machines[<index>]
    problems.raise_if_any()
