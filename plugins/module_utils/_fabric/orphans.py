# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The orphan sweep of fabric_device (``orphans: report`` or ``orphans: detach``).

An *orphan* is a device attached on the fabric to one of the cluster's machines (every node that resolves to a
fabric machine, and the machines of the run's targets) that no stack records (``records.py``). Devices of a
machine/type/model on which some stack has an open intent (a run that ended between attach and record) are *held*,
never orphans: the stack's next run resolves them.

As CoHDI's composable-resource-operator does for devices without a ComposableResource
(``internal/controller/upstreamsyncer_controller.go``: ``missingDeviceGracePeriod = 10 * time.Minute``, first-seen
times in ``missingDevices``), an orphan is detached only after a grace period since it was first seen - default
600 s. The module is not a long-running controller, so first-seen times are kept in a ConfigMap
(``aicr-fabric-orphans`` in the stack namespace, labels ``app.kubernetes.io/managed-by: aicr-runtime``,
``app.kubernetes.io/component: fabric-orphans``), measured with the API server's clock. ``report`` lists orphans and
notes first-seen times; ``detach`` also detaches those past the grace period, after the same drain check as any
detach (a refusal is reported with a warning, not a failure; a detach sent whose outcome is open is ``pending``, as in the
run's ``pending``). Check mode reports and writes nothing.

The ledger is read only when the collection wrote it (``aicr-runtime`` among its field managers): one written by anyone
else - whose back-dated first-seen times would make orphans detachable at once - is a foreign claim (a warning, the
sweep's ``foreign_claims``) and its times are not used; the next write replaces it. The sweep reports the device
records' foreign claims (``records.py``) the same way.

:class:`OrphanSweep` is given the run's :class:`~.context.RunContext` (backend, cluster view, every stack's records, the
ledger, options) and the collaborators it uses: the drain check (``checks.py``), the detach (``detach.py``) and the
recorder of changes (``changes.py``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded
from ansible_collections.aicr.runtime.plugins.module_utils._common.claims import foreign_claim, not_ours
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import APP_COMPONENT_LABEL, FIELD_MANAGER, managed_labels
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.timeutil import millis_from_epoch
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import PENDING, REMOVING
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.records import grace_left, refused_in_namespace
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import MachineRun, Target
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError, describe

LEDGER_NAME = "aicr-fabric-orphans"
LEDGER_COMPONENT = "fabric-orphans"
LEDGER_KEY = "orphans"
ORPHAN_MODES = ("report", "detach")
DEFAULT_GRACE = 600  # seconds, as CRO's missingDeviceGracePeriod


class OrphanLedger:
    """First-seen times of orphans: ``{res_uuid: {first_seen, machine, type, model}}`` in one ConfigMap."""

    def __init__(self, client, namespace, dry_run=False):
        self.client = client
        self.namespace = namespace
        self.dry_run = dry_run
        self.entries = {}
        self.writes = 0
        self.foreign_claims = []  # a ledger the collection did not write (not read)
        self._stored = None

    def load(self):
        try:
            obj = self.client.get("v1", "ConfigMap", LEDGER_NAME, self.namespace)
        except ClusterError as exc:
            advice, details = refused_in_namespace(exc, self.namespace)
            raise AicrError("orphans: reading ConfigMap %s/%s failed: %s%s" % (self.namespace, LEDGER_NAME, describe(exc), advice),
                            field="orphans", **details)
        problem = not_ours(obj) if obj is not None else None
        if problem is not None:
            self.foreign_claims = [foreign_claim("ConfigMap", obj, "", problem + "; its first-seen times are not used")]
            obj = None
        try:
            entries = bounded.load_json(((obj or {}).get("data") or {}).get(LEDGER_KEY) or "{}", "ConfigMap %s/%s" % (self.namespace, LEDGER_NAME))
        except ValueError:
            entries = None
        if not isinstance(entries, dict):
            raise AicrError("orphans: ConfigMap %s/%s: data.orphans is not a JSON object of first-seen times; fix or delete it"
                            % (self.namespace, LEDGER_NAME), field="orphans")
        self.entries = entries
        self._stored = json.dumps(entries, sort_keys=True)
        return self

    def save(self):
        """Write when the entries changed (a converged sweep writes nothing)."""
        text = json.dumps(self.entries, sort_keys=True)
        if self.dry_run or text == self._stored:
            return
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": LEDGER_NAME, "namespace": self.namespace,
                             "labels": dict(managed_labels(), **{APP_COMPONENT_LABEL: LEDGER_COMPONENT})},
                "data": {LEDGER_KEY: text}}
        try:
            self.client.apply(body, field_manager=FIELD_MANAGER)
        except ClusterError as exc:
            advice, details = refused_in_namespace(exc, self.namespace)
            raise AicrError("orphans: writing ConfigMap %s/%s failed: %s%s" % (self.namespace, LEDGER_NAME, describe(exc), advice),
                            field="orphans", **details)
        self._stored = text
        self.writes += 1


class OrphanSweep:
    """The orphan sweep of one fabric run, after its targets."""

    def __init__(self, context, checks, detacher, changes):
        self.context = context
        self.checks = checks
        self.detacher = detacher
        self.changes = changes

    def sweep_machines(self, runs):
        """{machine: node}: the targets' machines and every node of the cluster that resolves to a fabric machine."""
        machines = dict((run.machine_id, run.node) for run in runs)
        cluster = self.context.cluster
        if cluster is not None:
            for node, machine in cluster.fabric_machines():
                if machines.get(machine) is None:
                    machines[machine] = node
        return machines

    def sweep(self, runs):
        """Sweep the targets' machines (``runs``; the machines only the cluster's nodes name are appended) and report (and,
        with ``detach``, detach) the orphans; returns the result's ``orphans``."""
        ctx = self.context
        options = ctx.options
        ledger = ctx.ledger
        if ctx.all_records is None or ledger is None:
            raise AicrError("orphans: %s needs Kubernetes access to read the stacks' device records" % options.orphans, field="orphans")
        by_machine = dict((run.machine_id, run) for run in runs)
        machines = self.sweep_machines(runs)
        sweeps = []
        for machine in sorted(machines):
            run = by_machine.get(machine)
            if run is None:
                run = MachineRun(machine, machines[machine])
                runs.append(run)
            sweeps.append(run)
        records = ctx.all_records
        recorded = records.recorded_by_anyone()
        intents = records.open_intents() + records.open_intents(others=True)
        now = records.clock()
        ledger.load()
        found = {}

        def scan(run):
            def work():
                devices = run.devices if run.initial is not None else None
                if devices is None:
                    devices = ctx.backend.read_machine(run.machine_id)
                    run.initial = devices
                    run.devices = devices
                    run.before = [d.to_result() for d in devices]
                    run.after = [d.to_result() for d in devices]
                held = [i for i in intents if i.get("machine") == run.machine_id]
                for device in devices:
                    if device.res_uuid in recorded or device.phase in (PENDING, REMOVING):
                        continue
                    claim = [i for i in held if i.get("type") == device.type and (i.get("model") or "").lower() == (device.model or "").lower()
                             and device.res_uuid not in (i.get("seen") or [])]
                    found[device.res_uuid] = (run, device, claim[0] if claim else None)
            if run.error is not None:
                return
            if run.machine_id in by_machine:
                ctx.guard(run, work)
                return
            try:  # a machine only the cluster's nodes name: a failing read is a warning, the sweep goes on
                work()
            except AicrError as exc:
                run.warnings.append("orphans: machine %s (node %s) not swept: %s" % (run.machine_id, run.node, exc.msg))

        ctx.each(sweeps, scan)
        current = {}
        for uuid, (run, device, claim) in found.items():
            if claim is None:
                entry = ledger.entries.get(uuid) or {}
                current[uuid] = {"first_seen": entry.get("first_seen") or millis_from_epoch(now), "machine": run.machine_id,
                                 "type": device.type, "model": device.model}
        ledger.entries = current
        report = []
        for uuid in sorted(found, key=lambda u: (found[u][0].machine_id, u)):
            run, device, claim = found[uuid]
            item = run.tag(device.to_result())
            if claim is not None:
                item.update(action="held", first_seen=None, detach_after=None,
                            reason="stack %s has an open intent for %s on this machine (run %s)" % (claim.get("stack"), device.model, claim.get("run_id")))
                report.append(item)
                continue
            first_seen = current[uuid]["first_seen"]
            left = grace_left(first_seen, now, options.orphan_grace)
            item.update(first_seen=first_seen, detach_after=round(left, 1))
            if options.orphans == "report":
                item["action"] = "reported"
            elif left > 0:
                item["action"] = "within_grace"
            else:
                item["action"] = self.detach_orphan(run, device)
                if item["action"] == "detached":
                    current.pop(uuid, None)
                elif item["action"] == "pending":
                    item["reason"] = run.actions[-1]["reason"]
                elif item["action"].startswith("refused"):
                    item["reason"], item["action"] = item["action"][len("refused: "):], "refused"
            report.append(item)
        ledger.save()
        for run in sweeps:
            run.after = self.changes.planned_after(run) if options.check_mode else [d.to_result() for d in run.devices or []]
        reported = [i for i in report if i["action"] != "held"]
        run0 = sweeps[0] if sweeps else None
        claims = ledger.foreign_claims + ([] if ctx.records is not None else records.foreign_claims)  # a stack's run reports its own
        if run0 is not None:
            run0.warnings.extend(c["message"] for c in claims)
        if reported:
            text = "orphans: %d device(s) attached to the cluster's machines that no stack records: %s" % (
                len(reported), ", ".join("%s (%s %s on %s, %s)" % (i["res_uuid"], i["type"], i["model"], i["node"] or i["machine"], i["action"])
                                         for i in reported))
            if run0 is not None:
                run0.warnings.append(text)
        return {"mode": options.orphans, "grace": options.orphan_grace, "machines": len(sweeps), "devices": report, "ledger_writes": ledger.writes,
                "foreign_claims": ledger.foreign_claims + records.foreign_claims}

    def detach_orphan(self, run, device):
        """Detach one orphan past its grace (drain check first); returns its action: ``detached``, ``would_detach`` (check
        mode), ``pending`` or ``refused: <why>``."""
        target = Target(machine_id=run.machine_id, node=run.node, dtype=device.type, model=device.model, state="absent")
        try:
            self.checks.check_detach(run, target, device)
        except AicrError as exc:
            run.warnings.append("orphans: %s; orphan %s left attached" % (exc.msg, device.res_uuid))
            return "refused: %s" % exc.msg
        if self.context.options.check_mode:
            self.changes.action(run, "detach", target, device, orphan=True)
            return "would_detach"
        devices = run.devices
        before = len(run.actions)
        outcome = "detached"
        try:
            run.devices = self.detacher.detach_one(run, target, device, devices, safety=False, notify=False)
        except AicrError as exc:
            run.warnings.append("orphans: detaching %s failed: %s" % (device.res_uuid, exc.msg))
            # sent, its outcome open (a pending action, the run changed something), or refused by the fabric
            outcome = "pending" if any(a.get("pending") for a in run.actions[before:]) else "refused: %s" % exc.msg
        for action in run.actions[before:]:
            action["orphan"] = True
        return outcome
