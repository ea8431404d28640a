# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""DMTF Redfish CompositionService backend.

Discovery starts at ``/redfish/v1``: ``CompositionService`` → ``ResourceBlocks``, and ``Systems``.
A machine is a ComputerSystem; its devices are the ResourceBlocks in ``Links.ResourceBlocks``.
Attach/detach are the ``ComputerSystem.AddResourceBlock`` / ``RemoveResourceBlock`` actions naming
one block; a free block is one whose ``CompositionStatus.CompositionState`` is ``Unused``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import (
    FabricBackend, Device, READY, PENDING, FAILED, REMOVING, OK, WARNING, CRITICAL, UNKNOWN,
)

ROOT = "/redfish/v1"
HEALTH = {"OK": OK, "Warning": WARNING, "Critical": CRITICAL}
STATES = {"Composed": READY, "ComposedAndAvailable": READY, "Composing": PENDING, "Failed": FAILED, "Unused": REMOVING}


def _odata(obj, key, where):
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, dict) or not value.get("@odata.id"):
        raise AicrError("%s: %s/@odata.id is missing in the Redfish answer" % (where, key), field=key)
    return value["@odata.id"]


class RedfishBackend(FabricBackend):
    name = "redfish"
    asynchronous = True

    def __init__(self, transport):
        super(RedfishBackend, self).__init__(transport)
        self._lock = threading.Lock()
        self._links = None
        self._claimed = set()

    def _discover(self):
        with self._lock:
            if self._links is None:
                root = self.transport.request("GET", ROOT, what="Redfish service root").json("Redfish service root")
                composition = _odata(root, "CompositionService", "Redfish service root")
                systems = _odata(root, "Systems", "Redfish service root")
                service = self.transport.request("GET", composition, what="Redfish CompositionService").json("Redfish CompositionService")
                if isinstance(service, dict) and service.get("ServiceEnabled") is False:
                    raise AicrError("Redfish CompositionService at %s is disabled (ServiceEnabled false)" % composition, field="endpoint")
                self._links = {"blocks": _odata(service, "ResourceBlocks", "Redfish CompositionService"), "systems": systems}
            return self._links

    def _system(self, machine_id):
        where = "system %s" % machine_id
        path = "%s/%s" % (self._discover()["systems"], machine_id)
        return where, self.transport.request("GET", path, what="read " + where).json("read " + where)

    def read_machine(self, machine_id):
        where, system = self._system(machine_id)
        links = system.get("Links") if isinstance(system, dict) else None
        if not isinstance(links, dict) or not isinstance(links.get("ResourceBlocks"), list):
            raise AicrError("%s: Links.ResourceBlocks is missing in the Redfish answer" % where, machine=machine_id)
        devices = []
        for ref in links["ResourceBlocks"]:
            url = ref.get("@odata.id") if isinstance(ref, dict) else None
            if not url:
                raise AicrError("%s: a Links.ResourceBlocks entry has no @odata.id" % where, machine=machine_id)
            block = self.transport.request("GET", url, what="read resource block " + url).json("read resource block " + url)
            devices.append(self._device(block, url, where))
        return devices

    @staticmethod
    def _describe(block, url, where):
        if not isinstance(block, dict) or not block.get("Id"):
            raise AicrError("%s: resource block %s has no Id" % (where, url), field="Id")
        types = block.get("ResourceBlockType") or []
        if "Processor" in types or block.get("Processors"):
            items, dtype, serial_key = block.get("Processors") or [], "gpu", "UUID"
        elif "Memory" in types or block.get("Memory"):
            items, dtype, serial_key = block.get("Memory") or [], "cxlmemory", "SerialNumber"
        else:
            return block["Id"], None, None, None
        first = items[0] if items and isinstance(items[0], dict) else {}
        return block["Id"], dtype, first.get("Model"), first.get(serial_key)

    def _device(self, block, url, where):
        block_id, dtype, model, serial = self._describe(block, url, where)
        dwhere = "%s device %s" % (where, block_id)
        warnings = []
        health_text = (block.get("Status") or {}).get("Health")
        health = HEALTH.get(health_text, UNKNOWN)
        if health_text is None:
            warnings.append("%s: Status.Health is missing" % dwhere)
        elif health == UNKNOWN:
            warnings.append("%s: Status.Health %r is not recognised" % (dwhere, health_text))
        elif health != OK:
            warnings.append("%s: Status.Health is %s" % (dwhere, health_text))
        state = (block.get("CompositionStatus") or {}).get("CompositionState")
        phase = STATES.get(state, UNKNOWN)
        if phase == FAILED:
            warnings.append("%s: CompositionState is Failed" % dwhere)
        if dtype is None:
            warnings.append("%s: ResourceBlockType %r is neither Processor nor Memory" % (dwhere, block.get("ResourceBlockType")))
        return Device(block_id, serial, dtype, model, health=health, phase=phase, raw_status=state, warnings=warnings, ref=url)

    def _free_blocks(self, dtype, model):
        url = self._discover()["blocks"]
        data = self.transport.request("GET", url, params={"$expand": "."}, what="list resource blocks").json("list resource blocks")
        members = data.get("Members") if isinstance(data, dict) else None
        if not isinstance(members, list):
            raise AicrError("resource block collection %s has no Members list" % url, field="Members")
        free = []
        for member in members:
            if not isinstance(member, dict):
                continue
            if "Id" not in member and member.get("@odata.id"):
                member = self.transport.request("GET", member["@odata.id"], what="read resource block").json("read resource block")
            block_url = member.get("@odata.id")
            block_id, btype, bmodel, _serial = self._describe(member, block_url, "resource block collection")
            state = (member.get("CompositionStatus") or {}).get("CompositionState")
            if state == "Unused" and btype == dtype and (not model or bmodel == model):
                free.append(block_url)
        return free

    def pool_key(self, machine_id):
        return "composition pool"  # one ResourceBlocks collection for every system

    def pool_models(self, machine_id, dtype):
        url = self._discover()["blocks"]
        data = self.transport.request("GET", url, params={"$expand": "."}, what="list resource blocks").json("list resource blocks")
        members = data.get("Members") if isinstance(data, dict) else None
        models = set()
        for member in members if isinstance(members, list) else []:
            if isinstance(member, dict) and "Id" in member:
                _block_id, btype, bmodel, _serial = self._describe(member, member.get("@odata.id"), "resource block collection")
                if btype == dtype and bmodel:
                    models.add(bmodel)
        return sorted(models)

    def free_count(self, machine_id, dtype, model):
        with self._lock:
            claimed = set(self._claimed)
        return len([b for b in self._free_blocks(dtype, model) if b not in claimed])

    def attach(self, machine_id, dtype, model, devices):
        free = self._free_blocks(dtype, model)
        with self._lock:
            choice = None
            for block in free:
                if block not in self._claimed:
                    choice = block
                    self._claimed.add(block)
                    break
        if choice is None:
            raise AicrError("machine %s: no free resource block of type %s model %s in the composition pool"
                            % (machine_id, dtype, model or "(any)"), machine=machine_id, type=dtype, model=model)
        target = "%s/%s/Actions/ComputerSystem.AddResourceBlock" % (self._discover()["systems"], machine_id)
        self.transport.request("POST", target, json_body={"ResourceBlock": {"@odata.id": choice}},
                               what="compose block %s into system %s" % (choice.rsplit("/", 1)[-1], machine_id))

    def detach(self, machine_id, device, devices):
        target = "%s/%s/Actions/ComputerSystem.RemoveResourceBlock" % (self._discover()["systems"], machine_id)
        self.transport.request("POST", target, json_body={"ResourceBlock": {"@odata.id": device.ref}},
                               what="remove block %s from system %s" % (device.res_uuid, machine_id))
