# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Fujitsu FTI CDI Cluster Manager (asynchronous) backend.

``GET v3/tenants/{t}/clusters/{c}/machines/{m}`` lists resource specs (``spec_uuid``, model
selector, ``device_count``, ``devices`` with ``status`` ADDING / ADD_COMPLETE / ADD_FAILED /
REMOVING / REMOVE_FAILED). ``POST .../actions/resize`` sets a spec's ``device_count`` (one more to
attach) or removes named devices; the change completes later, so the service polls.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import (
    FabricBackend, Device, classify_op_status, require, READY, PENDING, REMOVING, FAILED, UNKNOWN,
)
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.fti_fm import model_of

BASE = "/cluster_manager/cluster_autoscaler/v3"
PHASES = {"ADD_COMPLETE": READY, "ADDING": PENDING, "REMOVING": REMOVING, "ADD_FAILED": FAILED, "REMOVE_FAILED": FAILED}


class ClusterManagerBackend(FabricBackend):
    name = "fti_cm"
    asynchronous = True

    def __init__(self, transport, tenant_id, cluster_id, tokens):
        super(ClusterManagerBackend, self).__init__(transport)
        for field, value in (("tenant_id", tenant_id), ("cluster_id", cluster_id)):
            if not value:
                raise AicrError("%s: required for provider fti_cm" % field, field=field)
        self.tenant_id = tenant_id
        self.cluster_id = cluster_id
        self.tokens = tokens
        self._lock = threading.Lock()
        self._specs = {}  # (machine, type, model) -> (spec_uuid, device_count) from the latest read

    @property
    def token_requests(self):
        return self.tokens.fetches

    def _path(self, machine_id, suffix=""):
        return "%s/tenants/%s/clusters/%s/machines/%s%s" % (BASE, self.tenant_id, self.cluster_id, machine_id, suffix)

    def read_machine(self, machine_id):
        where = "machine %s" % machine_id
        data = self.transport.request("GET", self._path(machine_id), what="read " + where).json("read " + where)
        try:
            machine = data["data"]["cluster"]["machine"]
        except (KeyError, TypeError):
            raise AicrError("%s: the Cluster Manager answer has no data.cluster.machine" % where, machine=machine_id)
        if not isinstance(machine, dict) or not machine:
            raise AicrError("%s: the Cluster Manager returned no machine; check machine_id, tenant_id and cluster_id" % where, machine=machine_id)
        specs = machine.get("resspecs")
        if not isinstance(specs, list):
            raise AicrError("%s: resspecs is missing in the Cluster Manager answer" % where, machine=machine_id)
        devices = []
        found = {}
        for spec in specs:
            spec_uuid = require(spec, "spec_uuid", where)
            dtype = require(spec, "type", where + " spec " + spec_uuid)
            model = model_of((spec.get("selector") or {}).get("expression"))
            found[(machine_id, dtype, model)] = (spec_uuid, int(spec.get("device_count") or 0))
            for dev in spec.get("devices") or []:
                devices.append(self._device(dev, dtype, model, spec_uuid, where))
        with self._lock:
            for key in [k for k in self._specs if k[0] == machine_id]:
                del self._specs[key]
            self._specs.update(found)
        return devices

    @staticmethod
    def _device(dev, dtype, model, spec_uuid, where):
        serial = require(dev, "device_id", where)
        detail = dev.get("detail") if isinstance(dev.get("detail"), dict) else {}
        dwhere = "%s device %s" % (where, serial)
        status = dev.get("status")
        phase = PHASES.get(status, UNKNOWN)
        warnings = []
        if phase == UNKNOWN:
            warnings.append("%s: Cluster Manager status %r is not recognised" % (dwhere, status))
        if phase == FAILED:
            warnings.append("%s: Cluster Manager status %s (%s)" % (dwhere, status, dev.get("status_reason") or "no reason given"))
        health, warning = classify_op_status(detail.get("res_op_status"), dwhere)
        if warning:
            warnings.append(warning)
        specs = detail.get("resspecs") if isinstance(detail.get("resspecs"), list) else []
        return Device(
            res_uuid=detail.get("res_uuid") or serial,
            serial=serial,
            dtype=detail.get("res_type") or dtype,
            model=model or (specs[0].get("model") if specs and isinstance(specs[0], dict) else None),
            health=health,
            phase=phase,
            raw_status=status,
            warnings=warnings,
            ref=spec_uuid,
        )

    def pool_models(self, machine_id, dtype):
        """The models of the machine's resource specs (the cluster template): the only ones the Cluster Manager can add."""
        with self._lock:
            return sorted(set(smodel for (mach, stype, smodel) in self._specs if mach == machine_id and stype == dtype and smodel))

    def _spec(self, machine_id, dtype, model):
        with self._lock:
            for (mach, stype, smodel), value in self._specs.items():
                if mach == machine_id and stype == dtype and (not model or smodel == model):
                    return value
        raise AicrError("machine %s: no Cluster Manager resource spec for type %s model %s; the cluster template must define one"
                        % (machine_id, dtype, model or "(any)"), machine=machine_id, type=dtype, model=model)

    def attach(self, machine_id, dtype, model, devices):
        spec_uuid, count = self._spec(machine_id, dtype, model)
        body = {"increase_resource_count": {"spec_uuid": spec_uuid, "device_count": count + 1}}
        self.transport.request("POST", self._path(machine_id, "/actions/resize"), json_body=body,
                               what="attach %s %s to machine %s" % (dtype, model or "(any model)", machine_id))

    def _spec_count(self, machine_id, spec_uuid):
        with self._lock:
            for (mach, _stype, _smodel), (uuid, count) in self._specs.items():
                if mach == machine_id and uuid == spec_uuid:
                    return count
        return None

    def detach(self, machine_id, device, devices):
        # CRO cm/client.go RemoveResource: remove_resources.device_count is the spec's device_count - 1 (checkRemovingResources
        # returns resourceSpec.DeviceCount), not the number of devices listed (ADDING / *_FAILED devices may differ from it)
        count = self._spec_count(machine_id, device.ref)
        if count is None:
            count = len([d for d in devices if d.ref == device.ref])
        body = {"remove_resources": {"spec_uuid": device.ref, "device_count": max(count - 1, 0), "devices": [device.serial]}}
        self.transport.request("POST", self._path(machine_id, "/actions/resize"), json_body=body,
                               what="detach %s from machine %s" % (device.serial, machine_id))
