# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Plan and converge composable devices on fabric machines.

Over 500 lines: the converge loop (plan, attach, detach, settle, re-read, roll back) is one state machine per
machine and reads best in one place; model names and free pools are in ``models.py``, cluster checks in ``checks.py``,
the orphan sweep in ``orphans.py`` (mixins of :class:`FabricService`, to become collaborators it is given: issue 37).

Rules (see docs/modules/fabric_device.md):

- Always read the machine first; attach only the deficit, one device per request; detach only
  devices named by their fabric id (surplus is chosen by id, never "remove N").
- All or nothing: every machine is read and its deficit worked out before anything changes; the free pool
  is read for each deficit and the deficits drawing on one pool (``backend.pool_key``) are added up; a pool
  that cannot cover them fails every machine on it before the first attach. When an attach fails anyway,
  the devices this run attached on that machine are detached again (drain check first), unless ``partial``.
- Model names are the fabric's: a model that differs only in case is resolved to the fabric's spelling
  (machine devices, then ``backend.pool_models``, then - FTI FM - the free pool under other spellings)
  with a warning; an unknown present model fails listing the models there are.
- After an ambiguous outcome (timeout, reset, 5xx) or any error answer, re-read the machine: a new
  matching device is adopted; a device that is gone counts as detached. When the fabric itself did not
  answer - a timeout, a connection cut after the request went out, or a gateway's 502/503/504 (the manager
  behind it may still be applying the change) - the machine is re-read every ``poll_interval`` until the
  change shows or ``settle_timeout`` has passed; after a 500 or an error answer (the fabric is done) once.
  Only when the re-read (after letting the fabric settle) shows no effect is a mutation sent again, at most
  ``mutation_retries`` times, so a gateway timeout never attaches two devices when the manager finishes within
  ``settle_timeout`` (one that takes longer may still land after the re-send: give such a fabric a longer one). An
  attach whose device ends failed, critical or with an unknown status is rolled back (it is ours and unused).
- Unless ``force_detach``, a GPU is not detached while pods on its node request ``nvidia.com/gpu``
  or a DRA claim names it.
- Machines are handled concurrently (bounded thread pool); devices on one machine sequentially.
- ``check_mode`` reads everything and reports the plan without mutating.
- With ``records`` (a :class:`~.records.DeviceRecords` of one stack) every count, surplus and ``absent`` is about the
  devices that stack records, never "any device of that model on that machine": an intent is written before each
  attach and completed with the ``res_uuid`` after it; open intents left by a killed run are resolved first
  (``records.resolve_intents``); detached devices are forgotten. Other stacks' devices are never touched.
- ``orphans`` (``report``/``detach``, ``orphans.py``): after the targets, the devices on the cluster's machines that
  no stack records are listed and, with ``detach``, detached once ``orphan_grace`` has passed since first seen.
- SIGTERM (``_common.cancel``): no attach or detach starts after it - each machine thread stops at its next step
  (before a mutation, or in a wait) - and the one in flight is finished; what was done is noted for the message. The
  machines' work always runs in worker threads (one machine too), so the signal never interrupts a request.
- ``on_transition(record)``, when given, is called after every attach and detach that took effect (never in
  check mode) with the device result tagged with ``machine``, ``node`` and ``event`` (``attached`` or
  ``detached``), from the machine threads; calls are serialised and an exception from the callback becomes a
  warning, never a failure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading
import time
from concurrent.futures import ThreadPoolExecutor

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import (
    READY, PENDING, REMOVING, FAILED, OK, WARNING, CRITICAL, UNKNOWN,
)
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.checks import ClusterChecks
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.models import ModelsAndPools
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.orphans import OrphanSweep
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.records import resolve_intents
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import MachineRun
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import RESPONSE, TASK, AmbiguousOutcome, FabricHTTPError

CRO_WARNING = ("the composable-resource-operator (cro.hpsys.ibm.ie.com) runs on this cluster: it detaches any fabric device that no "
               "ComposableResource claims after about 10 minutes")


class FabricService(ClusterChecks, ModelsAndPools, OrphanSweep):
    def __init__(self, backend, cluster=None, check_mode=False, force_detach=False, operator_coexistence="refuse", wait=True,
                 wait_timeout=300.0, verify_visible=False, poll_interval=2.0, settle_timeout=60.0, max_workers=8,
                 mutation_retries=1, clock=time.monotonic, sleep=cancel.pause, on_transition=None, partial=False,
                 records=None, orphans=None, orphan_grace=600.0, ledger=None, adopt=None, gate=None):
        self.backend = backend
        self.gate = gate  # called before each attach and detach (exclusive.StackGate: the stack's Lease)
        self.cluster = cluster
        self.check_mode = check_mode
        self.force_detach = force_detach
        self.operator_coexistence = operator_coexistence
        self.wait = wait
        self.wait_timeout = float(wait_timeout)
        self.verify_visible = verify_visible
        self.poll_interval = float(poll_interval)
        self.settle_timeout = float(settle_timeout)
        self.max_workers = max(1, int(max_workers))
        self.mutation_retries = max(0, int(mutation_retries))
        self.clock = clock
        self.sleep = sleep
        self._lock = threading.Lock()
        self._usage = {}
        self.on_transition = on_transition
        self._transition_lock = threading.Lock()
        self.transition_warnings = []
        self.partial = bool(partial)
        loaded = records.load() if records is not None else None
        self.all_records = loaded  # every stack's records (the orphan sweep)
        self.records = loaded if loaded is not None and loaded.stack is not None else None  # ownership: this stack's
        self.orphans = orphans
        self.orphan_grace = float(orphan_grace)
        self.ledger = ledger
        self.adopt = set(adopt or [])

    # --- entry point ------------------------------------------------------------------

    def run(self, targets):
        """Converge ``targets`` (checked by ``options.check_options``, the one validation pass); returns the result, or
        raises one AicrError whose details are the result - what was changed, and what is pending, included."""
        warnings = []
        self._resolve(targets)
        needs_cluster = any(t.node for t in targets) or self.orphans == "detach"
        if needs_cluster and self.cluster is not None and self.cluster.operator_present():
            if self.operator_coexistence != "allow":
                raise AicrError("operator_coexistence: refuse; %s. Set operator_coexistence=allow to manage devices beside it, "
                                "or declare them as ComposabilityRequests instead" % CRO_WARNING, field="operator_coexistence")
            warnings.append(CRO_WARNING)
        groups = {}
        order = []
        for target in targets:
            if target.machine_id not in groups:
                groups[target.machine_id] = []
                order.append(target.machine_id)
            groups[target.machine_id].append(target)
        runs = [MachineRun(machine_id, next((t.node for t in groups[machine_id] if t.node), None)) for machine_id in order]
        cancel.report(lambda: self._collected(runs, warnings))  # cancelled (SIGTERM), the task still says what was done so far
        # 1. read every machine and what it lacks (and the free pool for it); 2. add the deficits up per pool and refuse
        # before the first attach when a pool cannot cover them; 3. converge.
        self._each(runs, lambda r: self._plan(r, groups[r.machine_id]))
        self._check_pools(runs)
        self._each(runs, lambda r: self._machine(r, groups[r.machine_id]))
        sweep, failure = None, None
        if self.orphans:
            try:
                sweep = self._sweep(runs)
            except AicrError as exc:  # after the targets' changes: the failure reports them
                failure = exc
        return self._result(runs, warnings, sweep, failure)

    def _each(self, runs, work):
        # in worker threads even for one machine: SIGTERM's Cancelled is raised in the main thread, which only waits here,
        # and never in the middle of a request; the workers stop at their next cancel.check
        with ThreadPoolExecutor(max_workers=max(1, min(self.max_workers, len(runs)))) as pool:
            list(pool.map(work, runs))

    def _transition(self, run, event, device):
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

    def _resolve(self, targets):
        for target in targets:
            if target.node and not target.machine_id:
                if self.cluster is None:
                    raise AicrError("node: %s given but no Kubernetes access is configured to resolve it; give machine_id or kubeconfig" % target.node,
                                    field="node")
                target.machine_id = self.cluster.machine_for_node(target.node)

    def _collected(self, runs, warnings, sweep=None):
        """What ``runs`` did so far, in the result's shape: the result of a run (:meth:`_result`), and of a cancelled one."""
        result = {"changed": False, "devices": [], "attached": [], "detached": [], "rolled_back": [], "actions": [],
                  "warnings": list(getattr(self.backend.transport, "warnings", [])) + list(warnings) + list(self.transition_warnings),
                  "machines": [], "diff": {"before": {"machines": {}}, "after": {"machines": {}}}}
        for run in runs:
            result["devices"].extend(run.tag(d) for d in run.after)
            result["attached"].extend(run.attached)
            result["detached"].extend(run.detached)
            result["rolled_back"].extend(run.rolled_back)
            result["actions"].extend(run.actions)
            result["warnings"].extend(run.warnings)
            result["machines"].append(run.summary())
            result["diff"]["before"]["machines"][run.machine_id] = run.before
            result["diff"]["after"]["machines"][run.machine_id] = run.after
        if self.records is not None:
            result["owned"] = []
            for run in runs:
                owned = self.records.owned(run.machine_id)
                result["owned"].extend(run.tag(d.to_result()) for d in run.devices if d.res_uuid in owned)
            result["records"] = {"stack": self.records.stack, "namespace": self.records.namespace, "writes": self.records.writes,
                                 "adopted": [a for run in runs for a in run.adopted], "foreign_claims": list(self.records.foreign_claims)}
            result["warnings"].extend(self.records.warnings)
            result["changed"] = bool(result["records"]["adopted"])
        if sweep is not None:
            result["orphans"] = sweep
        # every foreign claim of the run in one list, the key every module's result has
        claims = list((result.get("records") or {}).get("foreign_claims") or []) + list((sweep or {}).get("foreign_claims") or [])
        result["foreign_claims"] = [c for i, c in enumerate(claims) if c not in claims[:i]]
        result["pending"] = [a for a in result["actions"] if a.get("pending")]
        result["changed"] = bool(result["actions"]) or bool(result["changed"])
        result["token_requests"] = self.backend.token_requests
        result["fabric_requests"] = dict(self.backend.transport.counts)
        return result

    def _result(self, runs, warnings, sweep=None, failure=None):
        result = self._collected(runs, warnings, sweep)
        errors = []
        failed = []
        for run in runs:
            if run.error:
                named = run.machine_id in run.error or (run.node and run.node in run.error)
                errors.append(run.error if named else "%s: %s" % (run.node or run.machine_id, run.error))
                failed.append(run)
        if failure is not None:  # the orphan sweep failed after the targets: its message, the machines' errors in machines[]
            details = dict(result)
            details.update((k, v) for k, v in failure.details.items() if k not in details)
            raise AicrError(failure.msg, **details)
        if errors:
            msg = errors[0] if len(runs) == 1 else "%d of %d machines failed: %s" % (len(errors), len(runs), "; ".join(errors))
            details = dict(result)
            if len(failed) == 1:
                details.update((k, v) for k, v in failed[0].error_details.items() if k not in details and k != "msg")
            raise AicrError(msg, **details)
        return result

    # --- one machine --------------------------------------------------------------------

    def _guard(self, run, work):
        """Run ``work()``; an error becomes the machine's error (never a traceback)."""
        try:
            return work()
        except AicrError as exc:
            run.error = exc.msg
            run.error_details = dict(exc.details)
        except Exception as exc:  # pylint: disable=broad-except
            # Never let a traceback reach the user; name the machine and the failure.
            run.error = "machine %s: unexpected %s: %s" % (run.machine_id, exc.__class__.__name__, exc)
        return None

    def _plan(self, run, targets):
        """Read the machine; resolve each target's model to the fabric's spelling; note each deficit with the free pool."""
        def work():
            devices = self.backend.read_machine(run.machine_id)
            run.initial = devices
            run.before = [d.to_result() for d in devices]
            if self.records is not None:
                self._own(run, devices)
            if self.verify_visible and run.node and self.cluster is not None and not self.check_mode:
                run.baseline = self.cluster.gpu_allocatable(run.node)  # before any change: local GPUs count too
            spelled = {}
            for target in targets:
                self._resolve_model(run, target, devices)
                key = (target.type, target.model)
                if target.model and spelled.setdefault(key, target.requested_model) != target.requested_model:
                    raise AicrError("%s: models %s and %s name the same fabric model %s; give it once" % (
                        target.label, spelled[key], target.requested_model, target.model), field="model")
                if target.state != "present":
                    continue
                if self.adopt and self.records is not None:
                    self._take_over(run, target, devices)
                have = len([d for d in self._scoped(run, devices) if d.matches(target.type, target.model) and d.phase in (READY, PENDING)])
                have += self._open_intents(run, target)
                if have < target.count:
                    self._pool_need(run, target, devices, target.count - have)

        self._guard(run, work)

    def _own(self, run, devices):
        """This stack's records of the machine made current: open intents resolved (adopted or dropped), recorded devices the
        fabric no longer has forgotten."""
        adopted, warnings = resolve_intents(self.records, run.machine_id, devices)
        run.warnings.extend(warnings)
        run.adopted.extend(run.tag(d.to_result()) for d in adopted)
        # a recorded device the fabric does not list: marked on the first run (a read may omit a device for a moment), forgotten
        # when the next run still misses it
        first, again = self.records.mark_missing(run.machine_id, set(d.res_uuid for d in devices))
        if first:
            run.warnings.append("machine %s: device(s) %s recorded for stack %s are not on the machine; forgotten if the next run misses "
                                "them too" % (run.machine_id, ", ".join(sorted(first)), self.records.stack))
        if again:
            self.records.forget(again)
            run.warnings.append("machine %s: device(s) %s recorded for stack %s are no longer attached; records removed"
                                % (run.machine_id, ", ".join(sorted(again)), self.records.stack))

    def _take_over(self, run, target, devices):
        """``adopt``: devices the stack attached before it kept records, up to the target's count (an adoption never makes a
        surplus to detach), taken into its records when no stack records them."""
        recorded = self.records.recorded_by_anyone()
        room = target.count - len([d for d in self._scoped(run, devices) if d.matches(target.type, target.model)])
        taken = [d for d in devices if d.res_uuid in self.adopt and d.res_uuid not in recorded and d.matches(target.type, target.model)][:max(0, room)]
        if taken:
            self.records.take_over(run.machine_id, run.node, taken, self.backend.pool_key(run.machine_id))
            run.adopted.extend(run.tag(d.to_result()) for d in taken)
            run.warnings.append("%s: device(s) %s (adopt) recorded by no stack; adopted into stack %s"
                                % (target.label, ", ".join(d.res_uuid for d in taken), self.records.stack))

    def _open_intents(self, run, target):
        """This stack's open intents for the target left after resolving them (ambiguous ones) and its recorded devices the
        machine did not list this time (marked missing): they count as held, so nothing is attached twice."""
        if self.records is None:
            return 0
        held = self.records.open_intents(run.machine_id) + self.records.missing(run.machine_id)
        return len([i for i in held if i.get("type") == target.type and (not target.model or (i.get("model") or "").lower() == target.model.lower())])

    def _scoped(self, run, devices):
        """The devices a count, surplus or absent may touch: with records, only this stack's."""
        if self.records is None:
            return devices
        owned = self.records.owned(run.machine_id)
        return [d for d in devices if d.res_uuid in owned]

    def _machine(self, run, targets):
        devices = run.initial
        if run.error is None and devices is not None:
            def work():
                current = devices
                for target in targets:
                    if target.state == "present":
                        current = self._present(run, target, current)
                    else:
                        current = self._absent(run, target, current)
                    run.current = current
                if self.verify_visible and run.attached and not self.check_mode:
                    self._verify_visible(run, current)
                return current

            done = self._guard(run, work)
            devices = done if done is not None else run.current or devices
            if run.error and run.actions:
                try:
                    devices = self.backend.read_machine(run.machine_id)
                except Exception:  # pylint: disable=broad-except
                    pass
        run.devices = devices or []
        run.after = [d.to_result() for d in run.devices] if devices is not None else []
        if self.check_mode:
            run.after = self._planned_after(run)

    # --- model names and the free pool (before anything is attached) ---------------------

    def _planned_after(self, run):
        gone = set(a.get("res_uuid") for a in run.actions if a["action"] == "detach")
        after = [d for d in run.before if d["res_uuid"] not in gone]
        for action in run.actions:
            if action["action"] == "attach":
                after.append({"res_uuid": None, "serial": None, "type": action["type"], "model": action["model"], "status": "planned", "warnings": []})
        return after

    def _action(self, run, action, target, device=None, **extra):
        record = {"action": action, "machine": run.machine_id, "node": run.node, "type": target.type, "model": target.model,
                  "res_uuid": device.res_uuid if device else None, "serial": device.serial if device else None}
        if device is not None:
            record["model"] = device.model or target.model
        record.update(extra)
        run.actions.append(record)

    # --- present: attach the deficit, detach the surplus ---------------------------------

    def _present(self, run, target, devices):
        where = target.label
        if self.backend.asynchronous and self.wait and not self.check_mode:
            def settled(current):
                return not [d for d in current if d.matches(target.type, target.model) and d.phase in (PENDING, REMOVING)]

            devices = self._settle(run, target, devices, settled,
                                   "%s: devices still in progress" % where)
        matching = [d for d in self._scoped(run, devices) if d.matches(target.type, target.model)]
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
            have += self._open_intents(run, target)  # unresolved (ambiguous) intents: never attached twice
        if have < target.count:
            deficit = target.count - have  # the free pool was checked for it before any machine changed (_check_pools)
            mine = []
            for index in range(deficit):
                if self.check_mode:
                    self._action(run, "attach", target)
                    continue
                before = len(run.attached)
                try:
                    devices = self._attach_one(run, target, devices)
                except AicrError as exc:
                    stays = [d["res_uuid"] for d in run.attached[before:]]  # left on the machine by the failed attach (not settled)
                    if mine and not self.partial:
                        self._undo(run, target, mine, exc, index + 1, deficit, stays)  # raises
                    elif mine:
                        kept = [d["res_uuid"] for d in mine] + stays
                        raise AicrError("%s: attach %d of %d failed: %s; partial=true keeps the %d attached: %s"
                                        % (target.label, index + 1, deficit, exc.msg, len(kept), ", ".join(kept)), **dict(exc.details, kept=kept))
                    raise
                mine.extend(run.attached[before:])
        elif have > target.count:
            ranked = sorted(enumerate(matching), key=lambda item: (item[1].health == OK and item[1].phase == READY, -item[0]))
            for _index, device in ranked[:have - target.count]:
                devices = self._detach_one(run, target, device, devices)
        return devices

    def _absent(self, run, target, devices):
        scoped = self._scoped(run, devices)
        if target.devices:
            wanted = set(target.devices)
            victims = [d for d in scoped if d.res_uuid in wanted or (d.serial and d.serial in wanted)]
            if self.records is not None:
                foreign = sorted(d.res_uuid for d in devices if d not in victims and (d.res_uuid in wanted or (d.serial and d.serial in wanted)))
                if foreign:
                    run.warnings.append("%s: device(s) %s are not recorded for stack %s; not detached" % (target.label, ", ".join(foreign), self.records.stack))
        else:
            victims = [d for d in scoped if d.matches(target.type, target.model)]
        for device in victims:
            if device.phase == REMOVING and not self.wait:
                continue
            devices = self._detach_one(run, target, device, devices)
        return devices

    # --- reads that wait ------------------------------------------------------------------

    def _settle(self, run, target, devices, done, what, timeout=None):
        deadline = self.clock() + (self.wait_timeout if timeout is None else timeout)
        while not done(devices):
            if self.clock() >= deadline:
                raise AicrError("%s after %.0fs (wait_timeout)" % (what, self.wait_timeout), machine=run.machine_id)
            self._between_polls()
            self.sleep(self.poll_interval)
            self._between_polls()
            devices = self.backend.read_machine(run.machine_id)
        return devices

    def _reread(self, run, found, error, timeout):
        """Re-read until ``found(devices)`` is truthy; once only when the fabric has finished answering."""
        deadline = self.clock() + timeout
        while True:
            devices = self.backend.read_machine(run.machine_id)
            hit = found(devices)
            if hit:
                return hit, devices
            once = isinstance(error, FabricHTTPError) or (isinstance(error, AmbiguousOutcome) and error.kind in (RESPONSE, TASK))
            if once or self.clock() >= deadline:
                return None, devices
            self._between_polls()
            self.sleep(self.poll_interval)

    def _reread_after(self, run, target, what, found, error, timeout, on_failure):
        """:meth:`_reread` after ``what`` was sent; when the machine cannot be read then, ``on_failure(error)`` records the
        change as pending and the error (naming what was sent, its outcome unknown) is raised."""
        try:
            return self._reread(run, found, error, timeout)
        except AicrError as exc:
            failed = AicrError("%s: %s sent, then re-reading the machine failed: %s; its outcome is not known - re-run to converge "
                               "(nothing re-sent)" % (target.label, what, exc.msg), **exc.details)
            on_failure(failed)
            raise failed

    def _send_again(self, error, attempts):
        """A mutation is sent again only after an unknown outcome that the re-read showed had no effect, and never after a
        task the fabric accepted (it may still complete)."""
        return isinstance(error, AmbiguousOutcome) and error.kind != TASK and attempts <= self.mutation_retries

    # --- what was done, also when the run then fails ------------------------------------

    def _pending(self, run, action, target, device, error, **extra):
        """A change this run sent whose outcome was not final when it stopped following it - accepted but not shown yet,
        unknown (a timeout, a gateway's 5xx, a Redfish task still running, a re-read that failed), or a device still being
        added or removed at ``wait_timeout``: an action with ``pending``, the device's last ``status`` (None when no device
        of the change was seen) and the ``reason``, so the failed result says what was done (``changed``). Returns ``error``."""
        self._action(run, action, target, device, pending=True, status=device.status if device is not None else None, reason=error.msg, **extra)
        return error

    def _attached(self, run, target, device, adopted, pending=None):
        """``device`` is on the machine, attached by this run: its action, ``attached``, the cancel note, the status hook.
        ``pending`` (an AicrError: why the run stopped waiting) marks a device that has not settled yet."""
        if pending is not None:
            self._pending(run, "attach", target, device, pending, adopted=adopted)
        else:
            self._action(run, "attach", target, device, adopted=adopted)
        run.attached.append(run.tag(device.to_result()))
        cancel.note("%s %s attached to machine %s" % (device.model or target.type, device.res_uuid, run.machine_id))
        self._transition(run, "attached", device)
        run.warnings.extend(device.warnings)

    def _detached(self, run, target, device, rollback, notify, pending=None):
        """``device`` left the machine (or, with ``pending``, is being removed): its action, ``detached`` - or, for a device
        this run attached, ``rolled_back`` -, the cancel note; once it is gone, its record is forgotten and the status hook told."""
        extra = {"rollback": True} if rollback else {}
        if pending is not None:
            self._pending(run, "detach", target, device, pending, **extra)
        else:
            self._action(run, "detach", target, device, **extra)
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
            self._forget(run, device)
        if notify:  # an orphan was no stack's: its detach is no transition of the status stack
            self._transition(run, "detached", device)

    # --- attach -------------------------------------------------------------------------

    def _attach_one(self, run, target, devices):
        """Attach one device. Every failure after the request went out leaves what it did in the run first: the device in
        ``attached`` when it is on the machine, the change as a pending action when its outcome is open."""
        where = target.label
        known = set(d.res_uuid for d in devices)

        def new_device(current):
            fresh = [d for d in current if d.res_uuid not in known and d.matches(target.type, target.model)]
            return fresh[0] if fresh else None

        what = "attach of a %s%s to machine %s" % (target.type, " " + target.model if target.model else "", run.machine_id)
        cancel.check(what)
        intent = None
        if self.records is not None:
            intent = self.records.intend(run.machine_id, run.node, target.type, target.model, self.backend.pool_key(run.machine_id),
                                         [d.res_uuid for d in devices])
        device, devices, adopted = self._send_attach(run, target, what, new_device, devices, intent)
        if intent is not None:
            self._record(run, intent, device, adopted)
        if self.backend.asynchronous and self.wait:
            device, devices = self._until_added(run, target, what, device, devices, adopted)
        if device.phase == FAILED or device.health in (CRITICAL, UNKNOWN):
            reason = device.warnings[-1] if device.warnings else "status %s" % device.raw_status
            self._action(run, "attach", target, device)
            devices = self._rollback(run, target, device, devices)
            raise AicrError("%s: attached device %s is not usable (%s); it was detached again (rolled back)" % (where, device.res_uuid, reason),
                            device=device.to_result())
        self._attached(run, target, device, adopted)
        return devices

    def _send_attach(self, run, target, what, new_device, devices, intent):
        """Send the attach until its device shows: (device, devices, adopted - found after an unknown outcome). Sent again
        only when the re-read after an unknown outcome shows no effect (:meth:`_send_again`)."""
        where = target.label
        attempts = 0
        while True:
            attempts += 1
            error = None
            self._before_change(what)
            try:
                self.backend.attach(run.machine_id, target.type, target.model, devices)
                cancel.note(what + " sent")
            except (AmbiguousOutcome, FabricHTTPError) as exc:
                error = exc
            device, devices = self._reread_after(run, target, what, new_device, error, self.settle_timeout,
                                                 lambda failed: self._pending(run, "attach", target, None, failed))
            if device is not None:
                if error is not None:
                    run.warnings.append("%s: attach answered '%s' but device %s appeared; adopted it (not attached twice)"
                                        % (where, error.msg, device.res_uuid))
                return device, devices, error is not None
            if error is None:
                raise self._pending(run, "attach", target, None, AicrError(
                    "%s: the fabric accepted the attach but no new %s device appeared within %.0fs; re-run to converge (nothing re-sent)"
                    % (where, target.type, self.settle_timeout), machine=run.machine_id))
            if self._send_again(error, attempts):
                run.warnings.append("%s: attach outcome unknown (%s); re-read shows no new device, sending it once more" % (where, error.msg))
                continue
            if isinstance(error, FabricHTTPError):
                if intent is not None:
                    self.records.drop([intent])  # refused and not there: the next run has nothing to resolve
                raise error
            raise self._pending(run, "attach", target, None, error)  # unknown, and not seen: it may still land

    def _until_added(self, run, target, what, device, devices, adopted):
        """An asynchronous fabric: wait (``wait_timeout``) until ``device`` is no longer being added. When it still is, or
        the machine cannot be read, the device is reported attached with its pending state and the run fails."""
        def settled(current):
            mine = [d for d in current if d.res_uuid == device.res_uuid]
            return mine[0] if mine and mine[0].phase != PENDING else None

        hit, devices = self._reread_after(run, target, what, settled, None, self.wait_timeout,
                                          lambda failed: self._attached(run, target, device, adopted, pending=failed))
        if hit is None:
            current = next((d for d in devices if d.res_uuid == device.res_uuid), device)
            error = AicrError("%s: device %s still being added after %.0fs (wait_timeout); it stays attached (status %s) - re-run to converge, "
                              "or raise wait_timeout" % (target.label, device.res_uuid, self.wait_timeout, current.status), device=current.to_result())
            self._attached(run, target, current, adopted, pending=error)
            raise error
        return hit, devices

    def _between_polls(self):
        """Between two reads of a wait: not after a SIGTERM, nor once this attempt is being restarted under the Lease."""
        cancel.check()
        if self.gate is not None:
            self.gate.between_polls()

    def _before_change(self, what):
        """Right before a request that changes the fabric: not after a SIGTERM, and with ``stack`` only under its Lease."""
        cancel.check(what)
        if self.gate is not None:
            self.gate(what)

    def _undo(self, run, target, mine, error, nth, deficit, stays=()):
        """All or nothing: attach ``nth`` of ``deficit`` failed; detach the devices this run attached on the machine (after the
        drain check), newest first, and fail saying which devices are where. ``stays``: the device the failed attach left on
        the machine (not settled; not rolled back)."""
        devices = self.backend.read_machine(run.machine_id)
        undone, kept, refusal = [], [], None
        for record in reversed(mine):
            device = next((d for d in devices if d.res_uuid == record["res_uuid"]), None)
            if device is None:
                undone.append(record["res_uuid"])
                continue
            if refusal is None:
                try:
                    self._check_detach(run, target, device)
                    devices = self._detach_one(run, target, device, devices, safety=False, rollback=True)
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

    def _rollback(self, run, target, device, devices):
        try:
            devices = self._detach_one(run, target, device, devices, safety=False, rollback=True)
        except AicrError as exc:
            if not [r for r in run.rolled_back if r.get("res_uuid") == device.res_uuid]:
                run.attached.append(run.tag(device.to_result()))  # it stays on the machine, attached by this run
            raise AicrError("%s: attached device %s failed and rolling it back failed too: %s" % (target.label, device.res_uuid, exc.msg),
                            device=device.to_result())
        return devices

    # --- detach -------------------------------------------------------------------------

    def _detach_one(self, run, target, device, devices, safety=True, rollback=False, notify=True):
        """Detach one device. As for an attach, a failure after the request went out leaves what it did in the run first:
        the device in ``detached`` (``rolled_back``) when it is being removed, the change as a pending action when its
        outcome is open."""
        where = target.label
        if safety:
            self._check_detach(run, target, device)
        if self.check_mode:
            self._action(run, "detach", target, device)
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
            self._before_change(what)
            try:
                self.backend.detach(run.machine_id, device, devices)
            except (AmbiguousOutcome, FabricHTTPError) as exc:
                error = exc
            outcome, devices = self._reread_after(run, target, what, accepted, error, self.settle_timeout,
                                                  lambda failed: self._pending(run, "detach", target, device, failed, **extra))
            if outcome == "removing" and self.wait:
                removing = next((d for d in devices if d.res_uuid == device.res_uuid), device)
                outcome, devices = self._reread_after(run, target, what, gone, None, self.wait_timeout,
                                                      lambda failed: self._detached(run, target, removing, rollback, notify, pending=failed))
                if outcome is None:
                    removing = next((d for d in devices if d.res_uuid == device.res_uuid), removing)
                    error = AicrError("%s: %s is still being removed after %.0fs (wait_timeout); the fabric goes on removing it (status %s) - "
                                      "re-run to converge, or raise wait_timeout" % (where, device.res_uuid, self.wait_timeout, removing.status),
                                      device=removing.to_result())
                    self._detached(run, target, removing, rollback, notify, pending=error)
                    raise error
            if outcome:
                if error is not None:
                    run.warnings.append("%s: detach of %s answered '%s' but the device is gone; counted as detached" % (where, device.res_uuid, error.msg))
                break
            still = [d for d in devices if d.res_uuid == device.res_uuid]
            if still and still[0].phase == FAILED:
                raise AicrError("%s: detach of %s failed on the fabric (%s)" % (where, device.res_uuid, still[0].raw_status), device=still[0].to_result())
            if error is None:
                raise self._pending(run, "detach", target, device, AicrError(
                    "%s: the fabric accepted the detach of %s but it is still attached after %.0fs; re-run to converge (nothing re-sent)"
                    % (where, device.res_uuid, self.settle_timeout), device=device.to_result()), **extra)
            if self._send_again(error, attempts):
                run.warnings.append("%s: detach outcome unknown (%s); %s still attached, sending it once more" % (where, error.msg, device.res_uuid))
                continue
            if isinstance(error, FabricHTTPError):
                raise error  # refused, and still attached
            raise self._pending(run, "detach", target, device, error, **extra)  # unknown, and not seen: it may still land
        self._detached(run, target, device, rollback, notify)
        return devices

    def _record(self, run, intent, device, adopted):
        """Complete the intent; a failing write leaves it open (the next run adopts the device) and is a warning."""
        try:
            self.records.confirm(intent, device, adopted=adopted)
        except AicrError as exc:
            intent["res_uuid"] = device.res_uuid  # this run still counts it; the stored intent stays open
            run.warnings.append("%s: %s; device %s may stay stored as an open intent, which the next run adopts" % (run.machine_id, exc.msg, device.res_uuid))

    def _forget(self, run, device):
        try:
            self.records.forget([device.res_uuid])
        except AicrError as exc:
            run.warnings.append("%s: detached %s but %s; the next run removes the stale record" % (run.machine_id, device.res_uuid, exc.msg))
