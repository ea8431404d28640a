# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Attach one device to a machine, and undo what a failed run attached (:class:`Attacher`).

- One device per request, under the run's gate; with ``records`` an intent is written before it and completed with the
  ``res_uuid`` after it (``changes.py``).
- After an ambiguous outcome or an error answer the machine is re-read (``reads.py``): a new matching device is adopted
  (never attached twice); only when the re-read shows no effect is the attach sent again (``mutation_retries``).
- An asynchronous fabric is waited for (``wait_timeout``) until the device is no longer being added; a device that ends
  failed, critical or with an unknown status is rolled back (it is ours and unused).
- All or nothing (:meth:`Attacher.undo`): when attach n of a deficit fails, the devices this run attached on the machine
  are detached again (drain check first), newest first, and the failure says which devices are where.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import PENDING, FAILED, CRITICAL, UNKNOWN
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import AmbiguousOutcome, FabricHTTPError


class Attacher:
    """Attaches over a :class:`~.context.RunContext` with the run's :class:`~.checks.ClusterChecks`,
    :class:`~.reads.MachineReads`, :class:`~.changes.Changes` and :class:`~.detach.Detacher` (roll-backs)."""

    def __init__(self, context, checks, reads, changes, detacher):
        self.context = context
        self.checks = checks
        self.reads = reads
        self.changes = changes
        self.detacher = detacher

    def attach_one(self, run, target, devices):
        """Attach one device. Every failure after the request went out leaves what it did in the run first: the device in
        ``attached`` when it is on the machine, the change as a pending action when its outcome is open."""
        ctx = self.context
        records = ctx.records
        where = target.label
        known = set(d.res_uuid for d in devices)

        def new_device(current):
            fresh = [d for d in current if d.res_uuid not in known and d.matches(target.type, target.model)]
            return fresh[0] if fresh else None

        what = "attach of a %s%s to machine %s" % (target.type, " " + target.model if target.model else "", run.machine_id)
        cancel.check(what)
        intent = None
        if records is not None:
            intent = records.intend(run.machine_id, run.node, target.type, target.model, ctx.backend.pool_key(run.machine_id),
                                    [d.res_uuid for d in devices])
        device, devices, adopted = self._send_attach(run, target, what, new_device, devices, intent)
        if intent is not None:
            self.changes.record(run, intent, device, adopted)
        if ctx.backend.asynchronous and ctx.options.wait:
            device, devices = self._until_added(run, target, what, device, devices, adopted)
        if device.phase == FAILED or device.health in (CRITICAL, UNKNOWN):
            reason = device.warnings[-1] if device.warnings else "status %s" % device.raw_status
            self.changes.action(run, "attach", target, device)
            devices = self.rollback(run, target, device, devices)
            raise AicrError("%s: attached device %s is not usable (%s); it was detached again (rolled back)" % (where, device.res_uuid, reason),
                            device=device.to_result())
        self.changes.attached(run, target, device, adopted)
        return devices

    def _send_attach(self, run, target, what, new_device, devices, intent):
        """Send the attach until its device shows: (device, devices, adopted - found after an unknown outcome). Sent again
        only when the re-read after an unknown outcome shows no effect (``reads.send_again``)."""
        ctx = self.context
        settle_timeout = ctx.options.settle_timeout
        where = target.label
        attempts = 0
        while True:
            attempts += 1
            error = None
            ctx.before_change(what)
            try:
                ctx.backend.attach(run.machine_id, target.type, target.model, devices)
                cancel.note(what + " sent")
            except (AmbiguousOutcome, FabricHTTPError) as exc:
                error = exc
            device, devices = self.reads.reread_after(run, target, what, new_device, error, settle_timeout,
                                                      lambda failed: self.changes.pending(run, "attach", target, None, failed))
            if device is not None:
                if error is not None:
                    run.warnings.append("%s: attach answered '%s' but device %s appeared; adopted it (not attached twice)"
                                        % (where, error.msg, device.res_uuid))
                return device, devices, error is not None
            if error is None:
                raise self.changes.pending(run, "attach", target, None, AicrError(
                    "%s: the fabric accepted the attach but no new %s device appeared within %.0fs; re-run to converge (nothing re-sent)"
                    % (where, target.type, settle_timeout), machine=run.machine_id))
            if self.reads.send_again(error, attempts):
                run.warnings.append("%s: attach outcome unknown (%s); re-read shows no new device, sending it once more" % (where, error.msg))
                continue
            if isinstance(error, FabricHTTPError):
                if intent is not None:
                    ctx.records.drop([intent])  # refused and not there: the next run has nothing to resolve
                raise error
            raise self.changes.pending(run, "attach", target, None, error)  # unknown, and not seen: it may still land

    def _until_added(self, run, target, what, device, devices, adopted):
        """An asynchronous fabric: wait (``wait_timeout``) until ``device`` is no longer being added. When it still is, or
        the machine cannot be read, the device is reported attached with its pending state and the run fails."""
        wait_timeout = self.context.options.wait_timeout

        def settled(current):
            mine = [d for d in current if d.res_uuid == device.res_uuid]
            return mine[0] if mine and mine[0].phase != PENDING else None

        hit, devices = self.reads.reread_after(run, target, what, settled, None, wait_timeout,
                                               lambda failed: self.changes.attached(run, target, device, adopted, pending=failed))
        if hit is None:
            current = next((d for d in devices if d.res_uuid == device.res_uuid), device)
            error = AicrError("%s: device %s still being added after %.0fs (wait_timeout); it stays attached (status %s) - re-run to converge, "
                              "or raise wait_timeout" % (target.label, device.res_uuid, wait_timeout, current.status), device=current.to_result())
            self.changes.attached(run, target, current, adopted, pending=error)
            raise error
        return hit, devices

    def undo(self, run, target, mine, error, nth, deficit, stays=()):
        """All or nothing: attach ``nth`` of ``deficit`` failed; detach the devices this run attached on the machine (after the
        drain check), newest first, and fail saying which devices are where. ``stays``: the device the failed attach left on
        the machine (not settled; not rolled back). Always raises."""
        devices = self.context.backend.read_machine(run.machine_id)
        undone, kept, refusal = [], [], None
        for record in reversed(mine):
            device = next((d for d in devices if d.res_uuid == record["res_uuid"]), None)
            if device is None:
                undone.append(record["res_uuid"])
                continue
            if refusal is None:
                try:
                    self.checks.check_detach(run, target, device)
                    devices = self.detacher.detach_one(run, target, device, devices, safety=False, rollback=True)
                    undone.append(device.res_uuid)
                    continue
                except AicrError as exc:
                    refusal = exc.msg
            kept.append(device.res_uuid)
        undone.reverse()
        kept.reverse()
        if kept:
            kept.extend(stays)
            raise AicrError("%s: attach %d of %d failed: %s; rolling back stopped: %s; still attached by this run: %s; rolled back: %s"
                            % (target.label, nth, deficit, error.msg, refusal, ", ".join(kept), ", ".join(undone) or "none"),
                            **dict(error.details, rolled_back=undone, kept=kept))
        if stays:
            raise AicrError("%s: attach %d of %d failed: %s; rolled back the %d attached before it (%s); still attached by this run: %s"
                            % (target.label, nth, deficit, error.msg, len(undone), ", ".join(undone), ", ".join(stays)),
                            **dict(error.details, rolled_back=undone, kept=list(stays)))
        raise AicrError("%s: attach %d of %d failed: %s; rolled back the %d this run attached (%s), nothing attached"
                        % (target.label, nth, deficit, error.msg, len(undone), ", ".join(undone)),
                        **dict(error.details, rolled_back=undone, kept=[]))

    def rollback(self, run, target, device, devices):
        """Detach ``device``, attached by this run and unusable; when that fails it stays in ``attached`` and the run fails."""
        try:
            devices = self.detacher.detach_one(run, target, device, devices, safety=False, rollback=True)
        except AicrError as exc:
            if not [r for r in run.rolled_back if r.get("res_uuid") == device.res_uuid]:
                run.attached.append(run.tag(device.to_result()))  # it stays on the machine, attached by this run
            raise AicrError("%s: attached device %s failed and rolling it back failed too: %s" % (target.label, device.res_uuid, exc.msg),
                            device=device.to_result())
        return devices
