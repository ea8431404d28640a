# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Fujitsu FTI CDI Fabric Manager (synchronous) backend.

Base ``/fabric_manager/api/v1``; every call carries ``tenant_uuid``. A machine read lists its
resources (``res_uuid``, ``res_serial_num``, ``res_type``, ``res_op_status``, model condition);
attach is ``PATCH /machines/{m}/update`` asking for one device by model condition; detach is
``DELETE /machines/{m}/update`` naming the ``res_uuid``; the free pool is
``GET /machines/{m}/available-reserved-resources``.

The shapes are those of CoHDI's clients: composable-resource-operator ``internal/cdi/fti/fm`` (machine read, attach,
detach, ``ErrorBody``) and composable-dra-driver ``pkg/client`` (the free pool, the one call the operator does not make).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import FabricBackend, Device, classify_op_status, require, READY

BASE = "/fabric_manager/api/v1"


def model_of(spec):
    """The ``model eq`` value of an FTI ``res_spec``/selector ``condition`` list, or None."""
    conditions = []
    if isinstance(spec, dict):
        conditions = spec.get("condition") or spec.get("conditions") or []
    for cond in conditions if isinstance(conditions, list) else []:
        if isinstance(cond, dict) and cond.get("column") == "model" and cond.get("operator") == "eq":
            return cond.get("value")
    return None


def model_condition_object(model):
    """One FTI condition (``ConditionItem`` in CRO ``internal/cdi/fti/fm/api/common.go``, ``Condition`` in composable-dra-driver)."""
    return {"column": "model", "operator": "eq", "value": model}


def model_condition(model):
    """The ``res_spec.condition`` list of an attach (CRO ``api/scale_up.go`` ``Condition{Condition []ConditionItem}``)."""
    return [model_condition_object(model)] if model else []


class FabricManagerBackend(FabricBackend):
    name = "fti_fm"
    asynchronous = False

    def __init__(self, transport, tenant_id, tokens):
        super(FabricManagerBackend, self).__init__(transport)
        if not tenant_id:
            raise AicrError("tenant_id: required for provider fti_fm", field="tenant_id")
        self.tenant_id = tenant_id
        self.tokens = tokens
        self._lock = threading.Lock()
        self._fabrics = {}  # machine -> fabric_id (from its read or its free-pool answer)

    @property
    def token_requests(self):
        return self.tokens.fetches

    def _params(self, **extra):
        params = {"tenant_uuid": self.tenant_id}
        params.update(extra)
        return params

    def read_machine(self, machine_id):
        where = "machine %s" % machine_id
        data = self.transport.request("GET", "%s/machines/%s" % (BASE, machine_id), params=self._params(), what="read " + where).json("read " + where)
        if not isinstance(data, dict) or not isinstance(data.get("data"), dict):
            raise AicrError("%s: the fabric's answer has no data object" % where, machine=machine_id)
        machines = data["data"].get("machines")
        if not isinstance(machines, list):
            raise AicrError("%s: the fabric's answer has no machine list (data.machines)" % where, machine=machine_id)
        if not machines:
            raise AicrError("%s: the fabric returned an empty machine list; check machine_id and tenant_id" % where, machine=machine_id)
        mine = [m for m in machines if isinstance(m, dict) and m.get("mach_uuid") == machine_id]
        if not mine:
            raise AicrError("%s: the fabric's answer does not contain this machine" % where, machine=machine_id)
        fabric = mine[0].get("fabric_id")  # CRO api/get.go GetMachineItem.FabricID; the free pool is per fabric
        if fabric not in (None, ""):
            with self._lock:
                self._fabrics.setdefault(machine_id, fabric)
        resources = mine[0].get("resources")
        if resources is None:
            resources = []
        if not isinstance(resources, list):
            raise AicrError("%s: resources is not a list" % where, machine=machine_id)
        return [self._device(res, where) for res in resources]

    @staticmethod
    def _device(res, where):
        res_uuid = require(res, "res_uuid", where)
        dwhere = "%s device %s" % (where, res_uuid)
        health, warning = classify_op_status(res.get("res_op_status"), dwhere)
        return Device(
            res_uuid=res_uuid,
            serial=res.get("res_serial_num"),
            dtype=require(res, "res_type", dwhere),
            model=model_of(res.get("res_spec")) or res.get("model"),
            health=health,
            phase=READY,
            raw_status=res.get("res_op_status"),
            warnings=[warning] if warning else [],
        )

    def free_count(self, machine_id, dtype, model):
        """``GET /machines/{m}/available-reserved-resources`` as composable-dra-driver sends it (``pkg/client/client.go``,
        ``GetFMAvailableReservedResources``): ``res_type`` and ``condition`` ONE JSON object ``{"column":"model",
        "operator":"eq","value":M}`` (a list is answered 400 invalid_parameter). The answer is ``{"fabric_id": N,
        "reserved_res_num_per_fabric": K}`` at the top level (``pkg/client/types.go``, ``FMAvailableReservedResources``).
        An answer without that count is an error, never a skipped check."""
        where = "free pool for machine %s" % machine_id
        params = self._params(res_type=dtype)
        if model:
            params["condition"] = json.dumps(model_condition_object(model), separators=(",", ":"))
        data = self.transport.request("GET", "%s/machines/%s/available-reserved-resources" % (BASE, machine_id), params=params, what=where).json(where)
        answer = data
        if isinstance(data, dict) and "reserved_res_num_per_fabric" not in data and isinstance(data.get("data"), dict):
            answer = data["data"]  # tolerated: the same object wrapped in "data" as the other FM answers are
        count = answer.get("reserved_res_num_per_fabric") if isinstance(answer, dict) else None
        if not isinstance(count, int) or isinstance(count, bool) or count < 0:
            keys = ", ".join(sorted(answer)) if isinstance(answer, dict) else type(answer).__name__
            raise AicrError("%s: the answer has no reserved_res_num_per_fabric count (got %s); the pool cannot be checked, nothing attached"
                            % (where, keys or "an empty object"), machine=machine_id)
        fabric = answer.get("fabric_id")
        with self._lock:
            if fabric not in (None, ""):
                self._fabrics[machine_id] = fabric
        return count

    def pool_key(self, machine_id):
        """Machines on one fabric share its free pool (``reserved_res_num_per_fabric``)."""
        with self._lock:
            fabric = self._fabrics.get(machine_id)
        return "fabric %s" % fabric if fabric is not None else "machine %s" % machine_id

    def _body(self, machine_id, spec):
        return {"tenants": {"tenant_uuid": self.tenant_id, "machines": [{"mach_uuid": machine_id, "resources": [{"res_specs": [spec]}]}]}}

    def attach(self, machine_id, dtype, model, devices):
        spec = {"res_type": dtype, "res_spec": {"condition": model_condition(model)}, "res_num": 1}
        self.transport.request("PATCH", "%s/machines/%s/update" % (BASE, machine_id), params=self._params(), json_body=self._body(machine_id, spec),
                               what="attach %s %s to machine %s" % (dtype, model or "(any model)", machine_id))

    def detach(self, machine_id, device, devices):
        spec = {"res_type": device.type, "res_uuid": device.res_uuid, "res_num": 1}
        self.transport.request("DELETE", "%s/machines/%s/update" % (BASE, machine_id), params=self._params(), json_body=self._body(machine_id, spec),
                               what="detach %s from machine %s" % (device.res_uuid, machine_id))
