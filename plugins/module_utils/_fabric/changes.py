# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a fabric run did, written down as it happens, also when the run then fails (:class:`Changes`).

Each change becomes an action on its :class:`~.targets.MachineRun` (``pending`` when its outcome was open when the run
stopped following it), an ``attached``/``detached``/``rolled_back`` entry, a cancel note (what a SIGTERM's result says
was done), the stack's device record completed or forgotten, and a call of ``on_transition`` (the live status of
``status_stack``): serialised across the machine threads, a failing callback a warning (``transition_warnings``), never a
failure. The check-mode plan of a machine (:meth:`Changes.planned_after`) is read from the same actions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError


class Changes:
    """The recorder of one run's changes: ``records`` (this stack's :class:`~.records.DeviceRecords`, or None) and the status
    hook ``on_transition(record)``."""

    def __init__(self, records=None, on_transition=None):
        self.records = records
        self.on_transition = on_transition
        self.transition_warnings = []
        self._transition_lock = threading.Lock()

    @staticmethod
    def action(run, action, target, device=None, **extra):
        record = {"action": action, "machine": run.machine_id, "node": run.node, "type": target.type, "model": target.model,
                  "res_uuid": device.res_uuid if device else None, "serial": device.serial if device else None}
        if device is not None:
            record["model"] = device.model or target.model
        record.update(extra)
        run.actions.append(record)

    @staticmethod
    def planned_after(run):
        """Check mode: the machine as the run's actions would leave it (attaches as ``planned`` devices)."""
        gone = set(a.get("res_uuid") for a in run.actions if a["action"] == "detach")
        after = [d for d in run.before if d["res_uuid"] not in gone]
        for action in run.actions:
            if action["action"] == "attach":
                after.append({"res_uuid": None, "serial": None, "type": action["type"], "model": action["model"], "status": "planned", "warnings": []})
        return after

    def pending(self, run, action, target, device, error, **extra):
        """A change this run sent whose outcome was not final when it stopped following it - accepted but not shown yet,
        unknown (a timeout, a gateway's 5xx, a Redfish task still running, a re-read that failed), or a device still being
        added or removed at ``wait_timeout``: an action with ``pending``, the device's last ``status`` (None when no device
        of the change was seen) and the ``reason``, so the failed result says what was done (``changed``). Returns ``error``."""
        self.action(run, action, target, device, pending=True, status=device.status if device is not None else None, reason=error.msg, **extra)
        return error

    def attached(self, run, target, device, adopted, pending=None):
        """``device`` is on the machine, attached by this run: its action, ``attached``, the cancel note, the status hook.
        ``pending`` (an AicrError: why the run stopped waiting) marks a device that has not settled yet."""
        if pending is not None:
            self.pending(run, "attach", target, device, pending, adopted=adopted)
        else:
            self.action(run, "attach", target, device, adopted=adopted)
        run.attached.append(run.tag(device.to_result()))
        cancel.note("%s %s attached to machine %s" % (device.model or target.type, device.res_uuid, run.machine_id))
        self.transition(run, "attached", device)
        run.warnings.extend(device.warnings)

    def detached(self, run, target, device, rollback, notify, pending=None):
        """``device`` left the machine (or, with ``pending``, is being removed): its action, ``detached`` - or, for a device
        this run attached, ``rolled_back`` -, the cancel note; once it is gone, its record is forgotten and the status hook told."""
        extra = {"rollback": True} if rollback else {}
        if pending is not None:
            self.pending(run, "detach", target, device, pending, **extra)
        else:
            self.action(run, "detach", target, device, **extra)
        if rollback:
            # attached by this run and detached again: neither "attached" nor "detached" (the machine is as before)
            run.attached = [a for a in run.attached if a.get("res_uuid") != device.res_uuid]
            run.rolled_back.append(run.tag(device.to_result()))
            cancel.note("%s detached again from machine %s (rolled back)" % (device.res_uuid, run.machine_id))
        else:
            run.detached.append(run.tag(device.to_result()))
            cancel.note("%s detached from machine %s" % (device.res_uuid, run.machine_id))
        if pending is not None:
            return  # still on the machine: the stack keeps its record (and status) until a run sees it gone
        if self.records is not None:
            self.forget(run, device)
        if notify:  # an orphan was no stack's: its detach is no transition of the status stack
            self.transition(run, "detached", device)

    def transition(self, run, event, device):
        """Tell ``on_transition`` that ``device`` was attached or detached (serialised; a failing callback is a warning)."""
        if self.on_transition is None:
            return
        record = run.tag(device.to_result())
        record["event"] = event
        with self._transition_lock:
            try:
                self.on_transition(record)
            except Exception as exc:  # pylint: disable=broad-except  # status reporting never breaks the fabric run
                text = "on_transition: the status callback failed for %s %s: %s: %s" % (event, device.res_uuid, exc.__class__.__name__, str(exc)[:300])
                if text not in self.transition_warnings and len(self.transition_warnings) < 5:
                    self.transition_warnings.append(text)

    def record(self, run, intent, device, adopted):
        """Complete the intent; a failing write leaves it open (the next run adopts the device) and is a warning."""
        try:
            self.records.confirm(intent, device, adopted=adopted)
        except AicrError as exc:
            intent["res_uuid"] = device.res_uuid  # this run still counts it; the stored intent stays open
            run.warnings.append("%s: %s; device %s may stay stored as an open intent, which the next run adopts" % (run.machine_id, exc.msg, device.res_uuid))

    def forget(self, run, device):
        try:
            self.records.forget([device.res_uuid])
        except AicrError as exc:
            run.warnings.append("%s: detached %s but %s; the next run removes the stale record" % (run.machine_id, device.res_uuid, exc.msg))
