# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Plan and converge composable devices on fabric machines: :class:`FabricService`, the run's order of steps.

The service builds one :class:`~.context.RunContext` (backend, cluster view, records, ledger, options, clock, gate) and
the collaborators that take it and each other as arguments - no inheritance between them (issue 37):
:class:`~.checks.ClusterChecks` (drain check, verify_visible), :class:`~.models.ModelsAndPools` (model spellings, the
all-or-nothing pool check), :class:`~.reads.MachineReads` (reads that wait), :class:`~.changes.Changes` (actions,
attached/detached, records, the status hook), :class:`~.detach.Detacher`, :class:`~.attach.Attacher` (one device each,
roll-back), :class:`~.converge.MachineConverge` (one machine's plan and converge) and :class:`~.orphans.OrphanSweep`.
Here: the targets grouped per machine, the three passes over the machines, the result (also of a cancelled run).

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

import time

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.attach import Attacher
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.changes import Changes
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.checks import ClusterChecks
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.context import RunContext, RunOptions
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.converge import MachineConverge
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.detach import Detacher
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.models import ModelsAndPools
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.orphans import OrphanSweep
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.reads import MachineReads
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import MachineRun

CRO_WARNING = ("the composable-resource-operator (cro.hpsys.ibm.ie.com) runs on this cluster: it detaches any fabric device that no "
               "ComposableResource claims after about 10 minutes")


class FabricService:
    """One fabric run over ``backend`` (see the module docstring); :meth:`run` converges the targets."""

    def __init__(self, backend, cluster=None, check_mode=False, force_detach=False, operator_coexistence="refuse", wait=True,
                 wait_timeout=300.0, verify_visible=False, poll_interval=2.0, settle_timeout=60.0, max_workers=8,
                 mutation_retries=1, clock=time.monotonic, sleep=cancel.pause, on_transition=None, partial=False,
                 records=None, orphans=None, orphan_grace=600.0, ledger=None, adopt=None, gate=None):
        options = RunOptions(check_mode=check_mode, force_detach=force_detach, operator_coexistence=operator_coexistence, wait=wait,
                             wait_timeout=wait_timeout, verify_visible=verify_visible, poll_interval=poll_interval,
                             settle_timeout=settle_timeout, max_workers=max_workers, mutation_retries=mutation_retries, partial=partial,
                             orphans=orphans, orphan_grace=orphan_grace, adopt=adopt)
        ctx = RunContext(backend, cluster=cluster, options=options, records=records, ledger=ledger, clock=clock, sleep=sleep, gate=gate)
        self.context = ctx
        self.changes = Changes(ctx.records, on_transition)
        self.checks = ClusterChecks(ctx)
        self.models = ModelsAndPools(backend)
        reads = MachineReads(ctx)
        detacher = Detacher(ctx, self.checks, reads, self.changes)
        attacher = Attacher(ctx, self.checks, reads, self.changes, detacher)
        self.machines = MachineConverge(ctx, self.models, self.checks, reads, self.changes, attacher, detacher)
        self.orphan_sweep = OrphanSweep(ctx, self.checks, detacher, self.changes)

    @property
    def sleep(self):
        """The pause between two polls (``cancel.pause``: SIGTERM ends it)."""
        return self.context.sleep

    @sleep.setter
    def sleep(self, value):
        self.context.sleep = value

    # --- entry point ------------------------------------------------------------------

    def run(self, targets):
        """Converge ``targets`` (checked by ``options.check_options``, the one validation pass); returns the result, or
        raises one AicrError whose details are the result - what was changed, and what is pending, included."""
        ctx = self.context
        options = ctx.options
        warnings = []
        self._resolve(targets)
        needs_cluster = any(t.node for t in targets) or options.orphans == "detach"
        if needs_cluster and ctx.cluster is not None and ctx.cluster.operator_present():
            if options.operator_coexistence != "allow":
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
        ctx.each(runs, lambda r: self.machines.plan(r, groups[r.machine_id]))
        self.models.check_pools(runs)
        ctx.each(runs, lambda r: self.machines.converge(r, groups[r.machine_id]))
        sweep, failure = None, None
        if options.orphans:
            try:
                sweep = self.orphan_sweep.sweep(runs)
            except AicrError as exc:  # after the targets' changes: the failure reports them
                failure = exc
        return self._result(runs, warnings, sweep, failure)

    def _resolve(self, targets):
        """Each target given by node gets its machine (from the node's labels, through the cluster view)."""
        cluster = self.context.cluster
        for target in targets:
            if target.node and not target.machine_id:
                if cluster is None:
                    raise AicrError("node: %s given but no Kubernetes access is configured to resolve it; give machine_id or kubeconfig" % target.node,
                                    field="node")
                target.machine_id = cluster.machine_for_node(target.node)

    def _collected(self, runs, warnings, sweep=None):
        """What ``runs`` did so far, in the result's shape: the result of a run (:meth:`_result`), and of a cancelled one."""
        backend = self.context.backend
        records = self.context.records
        result = {"changed": False, "devices": [], "attached": [], "detached": [], "rolled_back": [], "actions": [],
                  "warnings": list(getattr(backend.transport, "warnings", [])) + list(warnings) + list(self.changes.transition_warnings),
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
        if records is not None:
            result["owned"] = []
            for run in runs:
                owned = records.owned(run.machine_id)
                result["owned"].extend(run.tag(d.to_result()) for d in run.devices if d.res_uuid in owned)
            result["records"] = {"stack": records.stack, "namespace": records.namespace, "writes": records.writes,
                                 "adopted": [a for run in runs for a in run.adopted], "foreign_claims": list(records.foreign_claims)}
            result["warnings"].extend(records.warnings)
            result["changed"] = bool(result["records"]["adopted"])
        if sweep is not None:
            result["orphans"] = sweep
        # every foreign claim of the run in one list, the key every module's result has
        claims = list((result.get("records") or {}).get("foreign_claims") or []) + list((sweep or {}).get("foreign_claims") or [])
        result["foreign_claims"] = [c for i, c in enumerate(claims) if c not in claims[:i]]
        result["pending"] = [a for a in result["actions"] if a.get("pending")]
        result["changed"] = bool(result["actions"]) or bool(result["changed"])
        result["token_requests"] = backend.token_requests
        result["fabric_requests"] = dict(backend.transport.counts)
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
