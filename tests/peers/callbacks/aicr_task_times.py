# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# GNU General Public License v3.0+ (see LICENSES/GPL-3.0-or-later.txt or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark helper (tests/bench): every task's wall time, written as JSON to ``$AICR_TASK_TIMES``.

Enabled only by the benchmarks (``ANSIBLE_CALLBACK_PLUGINS=tests/peers/callbacks``,
``ANSIBLE_CALLBACKS_ENABLED=aicr_task_times``); not part of the collection. A task's time runs from
``v2_playbook_on_task_start`` (before Ansible dispatches it) to its last host's result, so it holds
what Ansible spends on the task: templating, the module's transfer and Python start-up, the module.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

from ansible.plugins.callback import CallbackBase

DOCUMENTATION = r"""
name: aicr_task_times
type: aggregate
short_description: Write each task's wall time to the JSON file named by AICR_TASK_TIMES (benchmarks only)
description:
  - Records, per task, its start (task start event) and end (its last host result), whether it changed, and the
    playbook's start, then writes them to C($AICR_TASK_TIMES) when the play ends.
options: {}
"""


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "aicr_task_times"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super(CallbackModule, self).__init__(*args, **kwargs)
        self._path = os.environ.get("AICR_TASK_TIMES")
        self._started = time.time()
        self._tasks = []

    def v2_playbook_on_start(self, playbook):
        self._started = time.time()

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._tasks.append({"name": task.get_name(), "action": task.action, "start": time.time(), "end": None, "changed": False})

    def _result(self, result, status):
        if not self._tasks:
            return
        current = self._tasks[-1]
        current["end"] = time.time()
        current["status"] = status
        current["changed"] = current["changed"] or bool(result._result.get("changed"))  # pylint: disable=protected-access

    def v2_runner_on_ok(self, result):
        self._result(result, "ok")

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._result(result, "failed")

    def v2_runner_on_skipped(self, result):
        self._result(result, "skipped")

    def v2_runner_on_unreachable(self, result):
        self._result(result, "unreachable")

    def v2_playbook_on_stats(self, stats):
        if not self._path:
            return
        with open(self._path, "w") as handle:
            json.dump({"playbook_start": self._started, "finished": time.time(), "tasks": self._tasks}, handle)
