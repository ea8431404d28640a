# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""DMTF Redfish CompositionService backend.

Discovery starts at ``/redfish/v1``: ``CompositionService`` → ``ResourceBlocks``, and ``Systems``.
A machine is a ComputerSystem; its devices are the ResourceBlocks in ``Links.ResourceBlocks``.
Attach/detach are the ``ComputerSystem.AddResourceBlock`` / ``RemoveResourceBlock`` actions naming
one block; a free block is one whose ``CompositionStatus.CompositionState`` is ``Unused``.

Checked against the DMTF schemas (ResourceBlock v1_4, ComputerSystem, ServiceRoot) and the Redfish specification:

- ``ResourceBlock.Processors`` / ``Memory`` are arrays of *links* (``{"@odata.id"}``) to Processor / Memory resources;
  the model and serial (Processor ``Model``, ``UUID``, ``ProcessorType`` ``GPU``; Memory ``Model``, ``SerialNumber``) are
  read from the linked resource (once per run), or from the entry itself when the service expanded it;
- the action URIs are the ones the ComputerSystem advertises (``Actions["#ComputerSystem.AddResourceBlock"].target``),
  built from the system's URI only when it advertises none;
- ``$expand=.`` is sent for the block collection only when the service root says it supports it
  (``ProtocolFeaturesSupported.ExpandQuery.NoLinks``): a service answers an unsupported ``$`` query parameter 501;
- ``CompositionState`` ``Unavailable`` (v1_2) is a failed block; the error body's ``@Message.ExtendedInfo`` messages are
  part of the error text (``transport``).
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
STATES = {"Composed": READY, "ComposedAndAvailable": READY, "Composing": PENDING, "Failed": FAILED, "Unavailable": FAILED, "Unused": REMOVING}
ADD_ACTION = "#ComputerSystem.AddResourceBlock"
REMOVE_ACTION = "#ComputerSystem.RemoveResourceBlock"


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
        self._parts = {}  # linked Processor / Memory URL -> its resource (model and serial do not change)
        self._actions = {}  # machine -> {action name: target} as the ComputerSystem advertises them

    def _discover(self):
        with self._lock:
            if self._links is None:
                root = self.transport.request("GET", ROOT, what="Redfish service root").json("Redfish service root")
                composition = _odata(root, "CompositionService", "Redfish service root")
                systems = _odata(root, "Systems", "Redfish service root")
                service = self.transport.request("GET", composition, what="Redfish CompositionService").json("Redfish CompositionService")
                if isinstance(service, dict) and service.get("ServiceEnabled") is False:
                    raise AicrError("Redfish CompositionService at %s is disabled (ServiceEnabled false)" % composition, field="endpoint")
                features = (root.get("ProtocolFeaturesSupported") or {}) if isinstance(root, dict) else {}
                expand = (features.get("ExpandQuery") or {}) if isinstance(features, dict) else {}
                self._links = {"blocks": _odata(service, "ResourceBlocks", "Redfish CompositionService"), "systems": systems,
                               "expand": isinstance(expand, dict) and expand.get("NoLinks") is True}
            return self._links

    def _collection(self, what):
        links = self._discover()
        params = {"$expand": "."} if links["expand"] else None
        return self.transport.request("GET", links["blocks"], params=params, what=what).json(what)

    def _part(self, item):
        """A Processor / Memory entry of a block: the linked resource (GET once per run), or the entry when expanded."""
        if not isinstance(item, dict):
            return {}
        url = item.get("@odata.id")
        if not url or any(k in item for k in ("Model", "UUID", "SerialNumber", "ProcessorType")):
            return item
        with self._lock:
            if url in self._parts:
                return self._parts[url]
        part = self.transport.request("GET", url, what="read " + url).json("read " + url)
        part = part if isinstance(part, dict) else {}
        with self._lock:
            self._parts[url] = part
        return part

    def _action_target(self, machine_id, action):
        with self._lock:
            target = self._actions.get(machine_id, {}).get(action)
        if target:
            return target
        return "%s/%s/Actions/%s" % (self._discover()["systems"], machine_id, action.lstrip("#"))

    def _system(self, machine_id):
        where = "system %s" % machine_id
        path = "%s/%s" % (self._discover()["systems"], machine_id)
        return where, self.transport.request("GET", path, what="read " + where).json("read " + where)

    def read_machine(self, machine_id):
        where, system = self._system(machine_id)
        links = system.get("Links") if isinstance(system, dict) else None
        actions = system.get("Actions") if isinstance(system, dict) else None
        if isinstance(actions, dict):
            found = dict((name, (actions.get(name) or {}).get("target")) for name in (ADD_ACTION, REMOVE_ACTION)
                         if isinstance(actions.get(name), dict) and (actions.get(name) or {}).get("target"))
            with self._lock:
                self._actions[machine_id] = found
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

    def _describe(self, block, url, where):
        if not isinstance(block, dict) or not block.get("Id"):
            raise AicrError("%s: resource block %s has no Id" % (where, url), field="Id")
        types = block.get("ResourceBlockType") or []
        if "Processor" in types or block.get("Processors"):
            items, dtype, serial_key = block.get("Processors") or [], "gpu", "UUID"
        elif "Memory" in types or block.get("Memory"):
            items, dtype, serial_key = block.get("Memory") or [], "cxlmemory", "SerialNumber"
        else:
            return block["Id"], None, None, None
        first = self._part(items[0]) if items else {}
        if dtype == "gpu" and first.get("ProcessorType") not in (None, "GPU"):
            return block["Id"], None, None, None  # a CPU (or FPGA...) block is not a GPU
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
        data = self._collection("list resource blocks")
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
        data = self._collection("list resource blocks")
        members = data.get("Members") if isinstance(data, dict) else None
        models = set()
        for member in members if isinstance(members, list) else []:
            if isinstance(member, dict) and "Id" not in member and member.get("@odata.id"):
                member = self.transport.request("GET", member["@odata.id"], what="read resource block").json("read resource block")
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
        target = self._action_target(machine_id, ADD_ACTION)
        self.transport.request("POST", target, json_body={"ResourceBlock": {"@odata.id": choice}},
                               what="compose block %s into system %s" % (choice.rsplit("/", 1)[-1], machine_id))

    def detach(self, machine_id, device, devices):
        target = self._action_target(machine_id, REMOVE_ACTION)
        self.transport.request("POST", target, json_body={"ResourceBlock": {"@odata.id": device.ref}},
                               what="remove block %s from system %s" % (device.res_uuid, machine_id))
