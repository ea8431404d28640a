# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One machine's plan and converge (:class:`MachineConverge`): what ``service.py`` runs for each machine, in its thread.

- :meth:`MachineConverge.plan`: read the machine; with ``records`` make the stack's records of it current (open intents
  resolved, missing devices marked then forgotten, ``adopt``); resolve each target's model to the fabric's spelling
  (``models.py``) and note each deficit with the free pool for it - nothing changes yet.
- :meth:`MachineConverge.converge`: per target, ``present`` attaches the deficit (all or nothing: ``attach.py``) and
  detaches the surplus (chosen by id: failed, critical, then newest first), ``absent`` detaches the devices named or of
  the model (``detach.py``); then, with ``verify_visible``, the node is checked (``checks.py``). With ``records`` every
  count, surplus and ``absent`` is about the devices this stack records (:meth:`MachineConverge.scoped`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import READY, PENDING, REMOVING, FAILED, OK, WARNING, CRITICAL, UNKNOWN
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.records import resolve_intents


class MachineConverge:
    """Plans and converges machines over a :class:`~.context.RunContext` with the run's :class:`~.models.ModelsAndPools`,
    :class:`~.checks.ClusterChecks`, :class:`~.reads.MachineReads`, :class:`~.changes.Changes`,
    :class:`~.attach.Attacher` and :class:`~.detach.Detacher`."""

    def __init__(self, context, models, checks, reads, changes, attacher, detacher):
        self.context = context
        self.models = models
        self.checks = checks
        self.reads = reads
        self.changes = changes
        self.attacher = attacher
        self.detacher = detacher

    # --- plan (nothing changes) -----------------------------------------------------------

    def plan(self, run, targets):
        """Read the machine; resolve each target's model to the fabric's spelling; note each deficit with the free pool."""
        ctx = self.context
        options = ctx.options

        def work():
            devices = ctx.backend.read_machine(run.machine_id)
            run.initial = devices
            run.before = [d.to_result() for d in devices]
            if ctx.records is not None:
                self.own(run, devices)
            if options.verify_visible and run.node and ctx.cluster is not None and not options.check_mode:
                run.baseline = ctx.cluster.gpu_allocatable(run.node)  # before any change: local GPUs count too
            spelled = {}
            for target in targets:
                self.models.resolve_model(run, target, devices)
                key = (target.type, target.model)
                if target.model and spelled.setdefault(key, target.requested_model) != target.requested_model:
                    raise AicrError("%s: models %s and %s name the same fabric model %s; give it once" % (
                        target.label, spelled[key], target.requested_model, target.model), field="model")
                if target.state != "present":
                    continue
                if options.adopt and ctx.records is not None:
                    self.take_over(run, target, devices)
                have = len([d for d in self.scoped(run, devices) if d.matches(target.type, target.model) and d.phase in (READY, PENDING)])
                have += self.open_intents(run, target)
                if have < target.count:
                    self.models.pool_need(run, target, devices, target.count - have)

        ctx.guard(run, work)

    def own(self, run, devices):
        """This stack's records of the machine made current: open intents resolved (adopted or dropped), recorded devices the
        fabric no longer has forgotten."""
        records = self.context.records
        adopted, warnings = resolve_intents(records, run.machine_id, devices)
        run.warnings.extend(warnings)
        run.adopted.extend(run.tag(d.to_result()) for d in adopted)
        # a recorded device the fabric does not list: marked on the first run (a read may omit a device for a moment), forgotten
        # when the next run still misses it
        first, again = records.mark_missing(run.machine_id, set(d.res_uuid for d in devices))
        if first:
            run.warnings.append("machine %s: device(s) %s recorded for stack %s are not on the machine; forgotten if the next run misses "
                                "them too" % (run.machine_id, ", ".join(sorted(first)), records.stack))
        if again:
            records.forget(again)
            run.warnings.append("machine %s: device(s) %s recorded for stack %s are no longer attached; records removed"
                                % (run.machine_id, ", ".join(sorted(again)), records.stack))

    def take_over(self, run, target, devices):
        """``adopt``: devices the stack attached before it kept records, up to the target's count (an adoption never makes a
        surplus to detach), taken into its records when no stack records them."""
        ctx = self.context
        records = ctx.records
        recorded = records.recorded_by_anyone()
        room = target.count - len([d for d in self.scoped(run, devices) if d.matches(target.type, target.model)])
        taken = [d for d in devices if d.res_uuid in ctx.options.adopt and d.res_uuid not in recorded
                 and d.matches(target.type, target.model)][:max(0, room)]
        if taken:
            records.take_over(run.machine_id, run.node, taken, ctx.backend.pool_key(run.machine_id))
            run.adopted.extend(run.tag(d.to_result()) for d in taken)
            run.warnings.append("%s: device(s) %s (adopt) recorded by no stack; adopted into stack %s"
                                % (target.label, ", ".join(d.res_uuid for d in taken), records.stack))

    def open_intents(self, run, target):
        """This stack's open intents for the target left after resolving them (ambiguous ones) and its recorded devices the
        machine did not list this time (marked missing): they count as held, so nothing is attached twice."""
        records = self.context.records
        if records is None:
            return 0
        held = records.open_intents(run.machine_id) + records.missing(run.machine_id)
        return len([i for i in held if i.get("type") == target.type and (not target.model or (i.get("model") or "").lower() == target.model.lower())])

    def scoped(self, run, devices):
        """The devices a count, surplus or absent may touch: with records, only this stack's."""
        records = self.context.records
        if records is None:
            return devices
        owned = records.owned(run.machine_id)
        return [d for d in devices if d.res_uuid in owned]

    # --- converge -------------------------------------------------------------------------

    def converge(self, run, targets):
        """Converge the machine's ``targets`` (planned, pools checked); the machine's devices after it on ``run``."""
        ctx = self.context
        options = ctx.options
        devices = run.initial
        if run.error is None and devices is not None:
            def work():
                current = devices
                for target in targets:
                    if target.state == "present":
                        current = self.present(run, target, current)
                    else:
                        current = self.absent(run, target, current)
                    run.current = current
                if options.verify_visible and run.attached and not options.check_mode:
                    self.checks.verify_visible(run, current)
                return current

            done = ctx.guard(run, work)
            devices = done if done is not None else run.current or devices
            if run.error and run.actions:
                try:
                    devices = ctx.backend.read_machine(run.machine_id)
                except Exception:  # pylint: disable=broad-except
                    pass
        run.devices = devices or []
        run.after = [d.to_result() for d in run.devices] if devices is not None else []
        if options.check_mode:
            run.after = self.changes.planned_after(run)

    def present(self, run, target, devices):
        """Attach the deficit (all or nothing unless ``partial``), detach the surplus; returns the machine's devices."""
        ctx = self.context
        options = ctx.options
        where = target.label
        if ctx.backend.asynchronous and options.wait and not options.check_mode:
            def settled(current):
                return not [d for d in current if d.matches(target.type, target.model) and d.phase in (PENDING, REMOVING)]

            devices = self.reads.settle(run, devices, settled, "%s: devices still in progress" % where)
        matching = [d for d in self.scoped(run, devices) if d.matches(target.type, target.model)]
        for device in matching:
            if device.phase == FAILED:
                raise AicrError("%s: device %s (%s) is in a failed state on the fabric (%s); detach it with state=absent devices=[%s]"
                                % (where, device.res_uuid, device.model, device.raw_status, device.res_uuid), device=device.to_result())
            if device.health == UNKNOWN:
                raise AicrError(device.warnings[-1] if device.warnings else "%s: device %s has an unknown status" % (where, device.res_uuid),
                                device=device.to_result())
            if device.health == CRITICAL:
                raise AicrError("%s: device %s (%s) is critical (res_op_status %s); detach it with state=absent devices=[%s]"
                                % (where, device.res_uuid, device.model, device.raw_status, device.res_uuid), device=device.to_result())
            if device.health == WARNING:
                run.warnings.extend(w for w in device.warnings if w not in run.warnings)
        have = len([d for d in matching if d.phase in (READY, PENDING)])
        if have < target.count:
            have += self.open_intents(run, target)  # unresolved (ambiguous) intents: never attached twice
        if have < target.count:
            deficit = target.count - have  # the free pool was checked for it before any machine changed (models.check_pools)
            mine = []
            for index in range(deficit):
                if options.check_mode:
                    self.changes.action(run, "attach", target)
                    continue
                before = len(run.attached)
                try:
                    devices = self.attacher.attach_one(run, target, devices)
                except AicrError as exc:
                    stays = [d["res_uuid"] for d in run.attached[before:]]  # left on the machine by the failed attach (not settled)
                    if mine and not options.partial:
                        self.attacher.undo(run, target, mine, exc, index + 1, deficit, stays)  # raises
                    elif mine:
                        kept = [d["res_uuid"] for d in mine] + stays
                        raise AicrError("%s: attach %d of %d failed: %s; partial=true keeps the %d attached: %s"
                                        % (target.label, index + 1, deficit, exc.msg, len(kept), ", ".join(kept)), **dict(exc.details, kept=kept))
                    raise
                mine.extend(run.attached[before:])
        elif have > target.count:
            ranked = sorted(enumerate(matching), key=lambda item: (item[1].health == OK and item[1].phase == READY, -item[0]))
            for _index, device in ranked[:have - target.count]:
                devices = self.detacher.detach_one(run, target, device, devices)
        return devices

    def absent(self, run, target, devices):
        """Detach the devices named (``devices``: fabric ids or serials) or, without names, every device of the model."""
        records = self.context.records
        scoped = self.scoped(run, devices)
        if target.devices:
            wanted = set(target.devices)
            victims = [d for d in scoped if d.res_uuid in wanted or (d.serial and d.serial in wanted)]
            if records is not None:
                foreign = sorted(d.res_uuid for d in devices if d not in victims and (d.res_uuid in wanted or (d.serial and d.serial in wanted)))
                if foreign:
                    run.warnings.append("%s: device(s) %s are not recorded for stack %s; not detached" % (target.label, ", ".join(foreign), records.stack))
        else:
            victims = [d for d in scoped if d.matches(target.type, target.model)]
        for device in victims:
            if device.phase == REMOVING and not self.context.options.wait:
                continue
            devices = self.detacher.detach_one(run, target, device, devices)
        return devices
