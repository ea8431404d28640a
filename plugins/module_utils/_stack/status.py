# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The ClusterStack status writer: read-modify-write of one stack's status, with 409 retries.

``StatusWriter.update`` reads, applies a status mutation and writes with the read resourceVersion; on
409 Conflict (someone edited the object meanwhile, e.g. the spec) it re-reads and re-applies only the
status mutation, up to ``retries`` times. A mutation that changes nothing writes nothing. The mutations
are the status model's (``model.apply_update``): a stack_status update, gated_release component results,
fabric_device device transitions.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import time

from ansible_collections.aicr.runtime.plugins.module_utils._common import timeutil
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import DEPLOYING, READY, UNCHANGED
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._stack import model


class StatusWriter:
    """Read-modify-write of one stack's status with 409 retries; also the per-component transition hook."""

    def __init__(self, store, name, retries=8, check_mode=False, now=None, sleep=time.sleep):
        self.store = store
        self.name = name
        self.retries = retries
        self.check_mode = check_mode
        self.now = now or timeutil.now_rfc3339
        self.sleep = sleep
        self.conflicts = 0
        self.writes = 0

    def update(self, mutate):
        """Apply ``mutate(status, obj) -> new status``; returns (before obj, after obj, changed).

        On 409 the object is re-read and ``mutate`` re-applied to the fresh status, so concurrent
        spec edits survive and only the status fields this call sets are written."""
        for attempt in range(self.retries + 1):
            obj = self.store.read(self.name)
            status = obj.get("status") or {}
            new_status = mutate(copy.deepcopy(status), obj)
            if new_status == status:
                return obj, obj, False
            if self.check_mode:
                after = copy.deepcopy(obj)
                after["status"] = new_status
                return obj, after, True
            try:
                written = self.store.write_status(obj, new_status)
            except ClusterError as exc:
                if exc.status != 409:
                    raise
                self.conflicts += 1
                if attempt < self.retries:
                    self.sleep(min(0.05 * (attempt + 1), 0.5))
                continue
            self.writes += 1
            return obj, written, True
        raise AicrError("stack %s: status write kept conflicting after %d retries; allowed: retry the run" % (self.name, self.retries),
                        field="status")

    def apply(self, update):
        """Apply a status ``update`` (see model.apply_update); returns (before, after, changed, events)."""
        recorded = []

        def mutate(status, obj):
            new, events = model.apply_update(status, update, now=self.now(), generation=(obj.get("metadata") or {}).get("generation"))
            del recorded[:]
            recorded.extend(events)
            return new

        before, after, changed = self.update(mutate)
        return before, after, changed, recorded if changed else []

    def on_component_transition(self, component_result):
        """Hook for the release engine: record one component's new phase (a gated_release component result)."""
        return self.apply_components([component_result])

    def apply_components(self, component_results):
        """Merge gated_release component results into ``status.components`` (one read-modify-write).

        ``Deploying`` and ``Unchanged`` results of a component whose release is not being changed (``action: unchanged``)
        while the status already shows it Ready are left out: that is the engine verifying readiness, not a rollout, so a
        no-op run keeps the status (history, messages, transition times) untouched. Returns (before, after, changed, events).
        """
        results = list(component_results)
        recorded = []

        def mutate(status, obj):
            current = dict((c.get("name"), c) for c in status.get("components") or [])
            keep = [r for r in results
                    if not (r.get("phase") in (DEPLOYING, UNCHANGED) and (r.get("action") or "unchanged") == "unchanged"
                            and (current.get(r.get("name")) or {}).get("phase") == READY)]
            del recorded[:]
            if not keep:
                return status
            new, events = model.apply_update(status, {"components": keep}, now=self.now(), generation=(obj.get("metadata") or {}).get("generation"))
            recorded.extend(events)
            return new

        before, after, changed = self.update(mutate)
        return before, after, changed, recorded if changed else []

    def apply_device_transitions(self, transitions):
        """Merge fabric_device transitions (``event`` C(attached) or C(detached) plus the device result, tagged with node)
        into ``status.devices`` (one read-modify-write), with a ``DeviceAttached``/``DeviceDetached`` history event each.

        An attach already listed (same ``resUUID``) and a detach of a device not listed change nothing, so
        replaying transitions is harmless. Returns (before, after, changed, events).
        """
        results = list(transitions)
        recorded = []

        def mutate(status, obj):
            devices = list(status.get("devices") or [])
            events = []
            for item in results:
                entry = model.device_entry(item)
                ids = set(i for i in (entry["resUUID"], entry["serial"]) if i)
                listed = [d for d in devices if ids & set(i for i in (d.get("resUUID"), d.get("serial")) if i)]
                what = "%s %s %s %s (%s)" % (entry["node"] or item.get("machine") or "?", entry["type"], entry["model"], entry["serial"] or "-",
                                             entry["resUUID"] or "-")
                if item.get("event") == "attached" and not listed:
                    devices.append(entry)
                    events.append({"type": "DeviceAttached", "message": "attached " + what})
                elif item.get("event") == "detached" and listed:
                    devices = [d for d in devices if d not in listed]
                    events.append({"type": "DeviceDetached", "message": "detached " + what})
            del recorded[:]
            if not events:
                return status
            new, applied = model.apply_update(status, {"devices": devices, "events": events}, now=self.now(),
                                              generation=(obj.get("metadata") or {}).get("generation"))
            recorded.extend(applied)
            return new

        before, after, changed = self.update(mutate)
        return before, after, changed, recorded if changed else []


def write_gates(writer, result):
    """The ``PreflightPassed`` / ``HealthChecksPassed`` conditions a gated_release result implies (``model.gate_conditions``),
    written to the stack's status; returns a warning when the write failed (a status write never fails a rollout), else None.
    Unchanged conditions write nothing, so a no-op run stays write-free."""
    conditions = model.gate_conditions(result)
    if not conditions or writer.check_mode:
        return None
    try:
        writer.apply({"conditions": conditions})
    except AicrError as exc:
        return "status_stack %s: the gate conditions were not written: %s" % (writer.name, exc.msg)
    return None
