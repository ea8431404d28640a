# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Which fabric devices each stack owns: one ConfigMap per stack in the stack namespace (default ``aicr-system``).

``aicr-devices-<stack>`` (labels ``app.kubernetes.io/managed-by: aicr-runtime``, ``aicr.io/stack: <stack>``,
``app.kubernetes.io/component: fabric-devices``; data ``stack`` and ``records``, a JSON list) holds one record per
device the stack attached. A record is written **before** the attach, as an *intent* (``stack``, ``machine``,
``node``, ``type``, ``model``, ``pool``, ``time``, ``run_id`` and ``seen``: the machine's devices at that moment),
and completed with the device's ``res_uuid`` (and ``serial``) once the fabric answers. A run killed between the two
leaves an intent without ``res_uuid``; the next run of the stack resolves it (:func:`resolve_intents`):

- no device of that type/model appeared on the machine since the intent (not in ``seen``) that no stack records:
  the attach never happened, the intent is dropped (a warning);
- as many such devices as open intents, or fewer: they are this stack's; adopted (a warning names them);
- more than open intents, or another stack has an open intent on the same machine and model: ambiguous, reported
  and nothing adopted (the intents stay, the devices count for no stack and the orphan sweep leaves them alone).

A stack's records are written only by that stack's runs (server-side apply, field manager ``aicr-runtime``, the whole
``records`` list each time, serialised inside the run); another stack's records are only read.

Labels and ``data.stack`` are anyone's to set who may write a ConfigMap in the namespace, so a records ConfigMap is
trusted only as what the collection writes: named ``aicr-devices-<stack>`` for a valid stack name, its ``aicr.io/stack``
label and ``data.stack`` naming that stack, and ``aicr-runtime`` among its field managers. Any other ConfigMap labelled
as device records is a *foreign claim* (``foreign_claims``, a warning ``foreign claim: ConfigMap <ns>/<name> ...``): its
records are not read at all - never this stack's, never another stack's (so they neither replace a stack's own records
nor shield a device from the orphan sweep).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
import time
import uuid

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded
from ansible_collections.aicr.runtime.plugins.module_utils._common.claims import foreign_claim, not_ours
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import (
    APP_COMPONENT_LABEL, FIELD_MANAGER, MANAGED_BY, MANAGED_BY_LABEL, STACK_LABEL, fit_name, label_value, managed_labels, stack_name_problem,
)
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.timeutil import age_seconds, millis_from_epoch
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import LEASE_ROLE, ClusterError, binding_advice, describe

DEFAULT_NAMESPACE = "aicr-system"
RECORDS_COMPONENT = "fabric-devices"
RECORDS_KEY = "records"
STACK_KEY = "stack"


def refused_in_namespace(exc, namespace):
    """What a failed read or write of the records or the ledger in ``stack_namespace`` adds to its message, and its
    structured details: for a 403, the Role aicr-runtime:lease is not bound there (say so); else nothing."""
    advice, rbac = binding_advice(exc, LEASE_ROLE, namespace)
    return ("; " + advice if advice else ""), dict(rbac, status=getattr(exc, "status", None))


def records_name(stack):
    """The ConfigMap of ``stack``'s device records: ``aicr-devices-<stack>`` (never cut for a valid stack name: 76 of 253)."""
    return fit_name("aicr-devices-", stack, limit=253)


def records_problem(item):
    """Why the records ConfigMap ``item`` is not the one the collection writes for the stack it names (None when it is)."""
    meta = item.get("metadata") or {}
    data = item.get("data") or {}
    owner = data.get(STACK_KEY)
    label = (meta.get("labels") or {}).get(STACK_LABEL)
    if not isinstance(owner, str) or stack_name_problem(owner) is not None:
        return "names no valid stack in data.%s (%r)" % (STACK_KEY, owner)
    if meta.get("name") != records_name(owner):
        return "is not named %s, the records ConfigMap of stack %s" % (records_name(owner), owner)
    if label != label_value(owner):
        return "has the label %s=%s, not %s" % (STACK_LABEL, label, owner)
    return not_ours(item)


def selector(component):
    return "%s=%s,%s=%s" % (MANAGED_BY_LABEL, MANAGED_BY, APP_COMPONENT_LABEL, component)


def server_clock(client):
    """Epoch seconds from the API server's clock (records are compared by runs on other hosts); this host's without it."""
    reader = getattr(client, "server_time", None)
    if reader is None:
        return time.time()
    try:
        return reader()
    except (ClusterError, AttributeError):
        return time.time()


class DeviceRecords:
    """The device records of the cluster as one run sees them: its own stack's (read and written) and every other
    stack's (read only). ``stack=None`` reads only (the orphan sweep of a run without ``stack``)."""

    def __init__(self, client, namespace=DEFAULT_NAMESPACE, stack=None, run_id=None, dry_run=False, clock=None):
        self.client = client
        self.namespace = namespace or DEFAULT_NAMESPACE
        self.stack = stack
        self.run_id = run_id or uuid.uuid4().hex[:12]
        self.dry_run = dry_run
        self.clock = clock or (lambda: server_clock(client))
        self.lock = threading.RLock()
        self.mine = []
        self.others = {}
        self.writes = 0
        self.warnings = []
        self.foreign_claims = []  # foreign_claim() dicts: records ConfigMaps not read (records_problem)
        self._serial = 0
        self._loaded = False

    # --- reading ----------------------------------------------------------------------

    def load(self):
        """Read every stack's records in the namespace (once per run)."""
        with self.lock:
            if self._loaded:
                return self
            try:
                items = self.client.list("v1", "ConfigMap", namespace=self.namespace, label_selector=selector(RECORDS_COMPONENT))
            except ClusterError as exc:
                advice, details = refused_in_namespace(exc, self.namespace)
                raise AicrError("stack_namespace: reading the device records in namespace %s failed: %s%s" % (self.namespace, describe(exc), advice),
                                field="stack_namespace", **details)
            for item in sorted(items, key=lambda i: (i.get("metadata") or {}).get("name") or ""):
                data = item.get("data") or {}
                problem = records_problem(item)
                if problem is not None:
                    claims = data.get(STACK_KEY) or ((item.get("metadata") or {}).get("labels") or {}).get(STACK_LABEL)
                    claim = foreign_claim("ConfigMap", item, claims if isinstance(claims, str) else "", problem)
                    self.foreign_claims.append(claim)
                    self.warnings.append(claim["message"])
                    continue
                owner = data[STACK_KEY]
                try:
                    entries = bounded.load_json(data.get(RECORDS_KEY) or "[]", "device records ConfigMap %s" % (item.get("metadata") or {}).get("name"))
                except ValueError:
                    entries = None
                if not isinstance(entries, list):
                    raise AicrError("stack_namespace: ConfigMap %s/%s: data.records is not a JSON list of device records; fix or delete it"
                                    % (self.namespace, (item.get("metadata") or {}).get("name")), field="stack_namespace")
                entries = [e for e in entries if isinstance(e, dict)]
                if self.stack is not None and owner == self.stack:
                    self.mine = entries
                else:
                    self.others.setdefault(owner, []).extend(entries)
            self._loaded = True
            return self

    def owned(self, machine):
        """res_uuids this stack records on ``machine``."""
        with self.lock:
            return set(r["res_uuid"] for r in self.mine if r.get("machine") == machine and r.get("res_uuid"))

    def recorded_by_anyone(self):
        """{res_uuid: stack} of every device some stack records."""
        with self.lock:
            found = dict((r["res_uuid"], self.stack) for r in self.mine if r.get("res_uuid"))
            for owner, entries in self.others.items():
                found.update((r["res_uuid"], owner) for r in entries if r.get("res_uuid"))
            return found

    def open_intents(self, machine=None, others=False):
        """Intents without a res_uuid (this stack's, or with ``others`` every other stack's) on ``machine`` (any)."""
        with self.lock:
            pools = [e for entries in self.others.values() for e in entries] if others else self.mine
            return [r for r in pools if not r.get("res_uuid") and (machine is None or r.get("machine") == machine)]

    def missing(self, machine):
        """This stack's records of devices ``machine`` did not list on this run's first read (``missing`` marked)."""
        with self.lock:
            return [r for r in self.mine if r.get("machine") == machine and r.get("res_uuid") and r.get("missing")]

    # --- writing (this stack's records only) ---------------------------------------------

    def _write(self):
        if self.dry_run or self.stack is None:
            return
        body = {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": records_name(self.stack), "namespace": self.namespace,
                         "labels": dict(managed_labels(self.stack), **{APP_COMPONENT_LABEL: RECORDS_COMPONENT})},
            "data": {STACK_KEY: self.stack, RECORDS_KEY: json.dumps(self.mine, sort_keys=True)},
        }
        try:
            self.client.apply(body, field_manager=FIELD_MANAGER)
        except ClusterError as exc:
            advice, details = refused_in_namespace(exc, self.namespace)
            raise AicrError("stack: writing the device records of stack %s (ConfigMap %s/%s) failed: %s%s"
                            % (self.stack, self.namespace, records_name(self.stack), describe(exc), advice), field="stack", **details)
        self.writes += 1

    def now(self):
        return millis_from_epoch(self.clock())

    def intend(self, machine, node, dtype, model, pool, seen):
        """Write an intent before an attach; returns it (the attach is not sent when this raises)."""
        with self.lock:
            self._serial += 1
            record = {"id": "%s-%d" % (self.run_id, self._serial), "stack": self.stack, "machine": machine, "node": node, "type": dtype,
                      "model": model, "pool": None if pool is None else str(pool), "time": self.now(), "run_id": self.run_id,
                      "seen": sorted(seen), "res_uuid": None, "serial": None}
            self.mine.append(record)
            self._write()
            return record

    def confirm(self, intent, device, adopted=False):
        """Complete ``intent`` with the device the fabric attached."""
        with self.lock:
            intent["res_uuid"] = device.res_uuid
            intent["serial"] = device.serial
            intent["model"] = device.model or intent.get("model")
            intent["attached"] = self.now()
            intent.pop("seen", None)
            if adopted:
                intent["adopted"] = True
            self._write()

    def take_over(self, machine, node, devices, pool):
        """Record ``devices`` (attached before this stack kept records, no stack records them) as this stack's; one write."""
        with self.lock:
            if not devices:
                return
            for device in devices:
                self._serial += 1
                self.mine.append({"id": "%s-%d" % (self.run_id, self._serial), "stack": self.stack, "machine": machine, "node": node,
                                  "type": device.type, "model": device.model, "pool": None if pool is None else str(pool), "time": self.now(),
                                  "run_id": self.run_id, "res_uuid": device.res_uuid, "serial": device.serial, "adopted": True})
            self._write()

    def drop(self, records):
        """Forget ``records`` (dropped intents); one write."""
        with self.lock:
            ids = set(id(r) for r in records)
            if not ids:
                return
            self.mine = [r for r in self.mine if id(r) not in ids]
            self._write()

    def mark_missing(self, machine, present):
        """Recorded devices of ``machine`` not in ``present``: (missing now for the first time, missing again). The first are
        marked (``missing``: when), a device seen again is unmarked; one write when anything changed."""
        with self.lock:
            first, again, changed = [], [], False
            for record in self.mine:
                if record.get("machine") != machine or not record.get("res_uuid"):
                    continue
                if record["res_uuid"] in present:
                    if record.pop("missing", None) is not None:
                        changed = True
                elif record.get("missing"):
                    again.append(record["res_uuid"])
                else:
                    record["missing"] = self.now()
                    first.append(record["res_uuid"])
                    changed = True
            if changed:
                self._write()
            return first, again

    def forget(self, res_uuids):
        """Forget the devices ``res_uuids`` (detached, or gone from the fabric); one write when something was recorded."""
        with self.lock:
            gone = set(res_uuids)
            kept = [r for r in self.mine if r.get("res_uuid") not in gone]
            if len(kept) != len(self.mine):
                self.mine = kept
                self._write()


def resolve_intents(records, machine, devices):
    """Resolve this stack's open intents on ``machine`` against its ``devices`` (see the module docstring); a dry-run
    ``records`` (check mode) changes only its in-memory view.

    Returns ``(adopted, warnings)``: the devices adopted into the stack's records."""
    mine = records.open_intents(machine)
    if not mine:
        return [], []
    warnings = []
    adopted = []
    recorded = records.recorded_by_anyone()
    others = records.open_intents(machine, others=True)
    groups = {}
    for intent in sorted(mine, key=lambda r: (r.get("time") or "", r.get("id") or "")):
        groups.setdefault((intent.get("type"), intent.get("model")), []).append(intent)
    dropped = []
    for (dtype, model), intents in sorted(groups.items(), key=lambda item: str(item[0])):
        seen = set(intents[0].get("seen") or [])
        fresh = [d for d in devices if d.type == dtype and (d.model == model or (d.model or "").lower() == (model or "").lower())
                 and d.res_uuid not in seen and d.res_uuid not in recorded]
        where = "machine %s: %d open intent(s) of stack %s for %s %s (run %s, %s)" % (
            machine, len(intents), records.stack, dtype, model, intents[0].get("run_id"), intents[0].get("time"))
        rivals = [r for r in others if r.get("type") == dtype and (r.get("model") or "").lower() == (model or "").lower()]
        if fresh and rivals:
            warnings.append("%s: device(s) %s appeared but stack(s) %s also have an open intent for it; ambiguous, not adopted"
                            % (where, ", ".join(d.res_uuid for d in fresh), ", ".join(sorted(set(str(r.get("stack")) for r in rivals)))))
            continue
        if len(fresh) > len(intents):
            warnings.append("%s: %d devices no stack records appeared since (%s); ambiguous, not adopted - detach the extra ones or "
                            "record them by hand" % (where, len(fresh), ", ".join(d.res_uuid for d in fresh)))
            continue
        for intent, device in zip(intents, fresh):
            adopted.append((intent, device))
            warnings.append("%s: device %s appeared after the intent and no stack records it; adopted into stack %s (the run that "
                            "attached it ended before recording it)" % (where, device.res_uuid, records.stack))
        rest = intents[len(fresh):]
        if rest:
            dropped.extend(rest)
            warnings.append("%s: %d attach(es) never happened (no new device); intent(s) dropped" % (where, len(rest)))
    for intent, device in adopted:
        records.confirm(intent, device, adopted=True)
    records.drop(dropped)
    return [device for _intent, device in adopted], warnings


def grace_left(first_seen, now_epoch, grace):
    """Seconds left of ``grace`` since the RFC 3339 ``first_seen`` (0 when over; ``grace`` when unreadable)."""
    age = age_seconds(first_seen, now_epoch)
    if age is None:
        return float(grace)
    return max(0.0, float(grace) - age)
