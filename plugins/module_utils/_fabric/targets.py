# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What the fabric service is asked for (:class:`Target`, one desired state per machine) and what it did on one
machine (:class:`MachineRun`)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import DEVICE_TYPES

STATES = ("present", "absent")


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

    def check(self, problems, index):
        """Add this target's problems to ``problems`` (a ``_common.checks.Problems``: one shape - field, value, what is
        allowed - and one cap for every problem of the pass); ``index``: its ``machines`` item, None for the top-level
        options. ``options.check_options`` calls it for every target, before anything is contacted."""
        prefix = "machines[%d]." % index if index is not None else ""
        if not self.machine_id and not self.node:
            problems.add(prefix + "node", "give node or machine_id (neither is set)", value=None, allowed=["node", "machine_id"])
        problems.choice(prefix + "type", self.type, DEVICE_TYPES)
        problems.choice(prefix + "state", self.state, STATES)
        if self.state == "present":
            if self.devices:
                problems.add(prefix + "devices", "names fabric ids to detach and needs state=absent; use count with state=present",
                             value=list(self.devices))
            if self.count is None:
                problems.add(prefix + "count", "required with state=present; use 0 or more", value=None, allowed={"minimum": 0})
            else:
                problems.number(prefix + "count", self.count, minimum=0, integer=True)
        elif self.state == "absent" and self.count is not None:
            problems.add(prefix + "count", "%s is not allowed with state=absent (count is for state=present); give devices, or nothing to "
                         "detach every %s" % (self.count, self.type), value=self.count)


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
