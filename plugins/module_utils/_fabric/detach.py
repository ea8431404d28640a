# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Detach one device from a machine (:class:`Detacher`): named by its fabric id, after the drain check.

Unless ``force_detach`` (or ``safety=False``, when the caller ran the check), the device is not detached while its node's
pods or DRA claims use it (``checks.py``). The request is sent under the run's gate; after an unknown outcome the machine
is re-read (``reads.py``) and the detach counted when the device is gone or being removed; sent again only when the
re-read shows no effect. A failure after the request went out leaves what it did in the run first (``changes.py``): the
device in ``detached`` (``rolled_back``) when it is being removed, the change as a pending action when its outcome is open.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import FAILED, REMOVING
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import AmbiguousOutcome, FabricHTTPError


class Detacher:
    """Detaches over a :class:`~.context.RunContext` with the run's :class:`~.checks.ClusterChecks`,
    :class:`~.reads.MachineReads` and :class:`~.changes.Changes`."""

    def __init__(self, context, checks, reads, changes):
        self.context = context
        self.checks = checks
        self.reads = reads
        self.changes = changes

    def detach_one(self, run, target, device, devices, safety=True, rollback=False, notify=True):
        """Detach ``device``; returns the machine's devices after it. ``rollback``: a device this run attached (reported as
        ``rolled_back``); ``notify=False``: no status transition (an orphan was no stack's)."""
        ctx = self.context
        options = ctx.options
        where = target.label
        if safety:
            self.checks.check_detach(run, target, device)
        if options.check_mode:
            self.changes.action(run, "detach", target, device)
            return [d for d in devices if d.res_uuid != device.res_uuid]

        def accepted(current):
            mine = [d for d in current if d.res_uuid == device.res_uuid]
            if not mine:
                return "gone"
            return "removing" if mine[0].phase == REMOVING else None

        def gone(current):
            return "gone" if not [d for d in current if d.res_uuid == device.res_uuid] else None

        what = "detach of %s from machine %s" % (device.res_uuid, run.machine_id)
        extra = {"rollback": True} if rollback else {}
        attempts = 0
        while True:
            attempts += 1
            error = None
            ctx.before_change(what)
            try:
                ctx.backend.detach(run.machine_id, device, devices)
            except (AmbiguousOutcome, FabricHTTPError) as exc:
                error = exc
            outcome, devices = self.reads.reread_after(run, target, what, accepted, error, options.settle_timeout,
                                                       lambda failed: self.changes.pending(run, "detach", target, device, failed, **extra))
            if outcome == "removing" and options.wait:
                removing = next((d for d in devices if d.res_uuid == device.res_uuid), device)
                outcome, devices = self.reads.reread_after(
                    run, target, what, gone, None, options.wait_timeout,
                    lambda failed: self.changes.detached(run, target, removing, rollback, notify, pending=failed))
                if outcome is None:
                    removing = next((d for d in devices if d.res_uuid == device.res_uuid), removing)
                    error = AicrError("%s: %s is still being removed after %.0fs (wait_timeout); the fabric goes on removing it (status %s) - "
                                      "re-run to converge, or raise wait_timeout" % (where, device.res_uuid, options.wait_timeout, removing.status),
                                      device=removing.to_result())
                    self.changes.detached(run, target, removing, rollback, notify, pending=error)
                    raise error
            if outcome:
                if error is not None:
                    run.warnings.append("%s: detach of %s answered '%s' but the device is gone; counted as detached" % (where, device.res_uuid, error.msg))
                break
            still = [d for d in devices if d.res_uuid == device.res_uuid]
            if still and still[0].phase == FAILED:
                raise AicrError("%s: detach of %s failed on the fabric (%s)" % (where, device.res_uuid, still[0].raw_status), device=still[0].to_result())
            if error is None:
                raise self.changes.pending(run, "detach", target, device, AicrError(
                    "%s: the fabric accepted the detach of %s but it is still attached after %.0fs; re-run to converge (nothing re-sent)"
                    % (where, device.res_uuid, options.settle_timeout), device=device.to_result()), **extra)
            if self.reads.send_again(error, attempts):
                run.warnings.append("%s: detach outcome unknown (%s); %s still attached, sending it once more" % (where, error.msg, device.res_uuid))
                continue
            if isinstance(error, FabricHTTPError):
                raise error  # refused, and still attached
            raise self.changes.pending(run, "detach", target, device, error, **extra)  # unknown, and not seen: it may still land
        self.changes.detached(run, target, device, rollback, notify)
        return devices
