# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the fabric service is asked for (:class:`Target`, one desired state per machine) and what it did on one
machine (:class:`MachineRun`)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.checks import Problems
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import DEVICE_TYPES


class Target:
    """One desired state: ``count`` devices of type/model on a machine, or named/all devices absent."""

    def __init__(self, machine_id=None, node=None, dtype="gpu", model=None, count=None, devices=None, state="present"):
        self.machine_id = machine_id
        self.node = node
        self.type = dtype
        self.model = model  # the fabric's spelling once the service has resolved it
        self.requested_model = model
        self.count = count
        self.devices = list(devices or [])
        self.state = state

    @property
    def label(self):
        return "node %s (machine %s)" % (self.node, self.machine_id) if self.node else "machine %s" % self.machine_id

    def validate(self, index):
        """Raise one AicrError listing every problem of this target (:meth:`check`)."""
        problems = Problems()
        self.check(problems, index)
        problems.raise_if_any()

    def check(self, problems, index):
        """Add this target's problems to ``problems`` (a ``_common.checks.Problems``); ``index``: its ``machines`` item."""
        where = "machines[%d]" % index if index is not None else "options"
        prefix = "machines[%d]." % index if index is not None else ""

        def add(field, message, value=None):
            entry = {"field": prefix + field, "message": "%s: %s" % (where, message)}
            if value is not None:
                entry["value"] = value
            problems.errors.append(entry)

        if not self.machine_id and not self.node:
            add("node", "node or machine_id is required")
        if self.type not in DEVICE_TYPES:
            add("type", "type %r is not one of %s" % (self.type, ", ".join(DEVICE_TYPES)), self.type)
        if self.state not in ("present", "absent"):
            add("state", "state %r is not present or absent" % (self.state,), self.state)
        if self.state == "present":
            if self.devices:
                add("devices", "devices names fabric ids to detach and needs state=absent; use count with state=present")
            if self.count is None or not isinstance(self.count, int) or isinstance(self.count, bool) or self.count < 0:
                add("count", "count %r must be an integer >= 0 with state=present" % (self.count,), self.count if isinstance(self.count, int) else None)
        elif self.count is not None:
            add("count", "count is for state=present; with state=absent give devices (or nothing to detach every %s)" % self.type, self.count)


class MachineRun:
    """What happened on one machine."""

    def __init__(self, machine_id, node):
        self.machine_id = machine_id
        self.node = node
        self.before = []
        self.after = []
        self.attached = []
        self.detached = []
        self.actions = []
        self.warnings = []
        self.error = None
        self.error_details = {}
        self.devices = []
        self.baseline = None
        self.initial = None  # the machine as read before anything changed
        self.current = None
        self.needs = []  # deficits of present targets with the free pool for each
        self.rolled_back = []  # attached by this run and detached again (all or nothing)
        self.adopted = []  # devices of open intents adopted into the stack's records

    def tag(self, record):
        record = dict(record)
        record["machine"] = self.machine_id
        record["node"] = self.node
        return record

    def summary(self):
        return {"machine": self.machine_id, "node": self.node, "attached": len(self.attached), "detached": len(self.detached),
                "rolled_back": len(self.rolled_back),
                "error": self.error, "warnings": list(self.warnings)}
