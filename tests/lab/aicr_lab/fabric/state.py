"""The in-memory fabric: one tenant, machines and a pool of devices by model.

Devices have a ``phase``: ``attached`` (usable), ``adding``/``removing`` (Cluster Manager is still
working; the phase advances after ``cm_polls`` reads of the machine), ``add_failed``/``remove_failed``
(Cluster Manager gave up; the device stays bound to the machine). ``op_status`` is the FTI
``res_op_status`` string ("0..." ok, "1..." warning, "2..." critical).
"""

import copy
import threading
import uuid

NAMESPACE = uuid.UUID("5b0d1f9e-8a51-4f3a-9a70-2b4c2f6f0c11")

DEFAULT_POOL = {
    "A100": {"type": "gpu", "count": 16},
    "H100": {"type": "gpu", "count": 8},
    "CXL-256G": {"type": "cxlmemory", "count": 4},
}

DEFAULTS = {
    "tenant_id": "3f1e6f4c-0000-4000-8000-000000000001",
    "cluster_id": "7c2d9a10-0000-4000-8000-000000000002",
    "realm": "cdi",
    "username": "admin",
    "password": "s3cret-password",
    "client_id": "aicr",
    "client_secret": "client-s3cret",
    "machines": 8,
    "node_prefix": "node-",
    "pool": DEFAULT_POOL,
    "cm_polls": 2,
    "token_ttl": 3600,
    "latency": 0.0,
    "read_latency": 0.0,
    "local_gpus": 0,
    "rf_tasks": False,  # Redfish actions answered at once; a number: 202 and a task monitor done after that many polls
}


def _uid(kind, key):
    return str(uuid.uuid5(NAMESPACE, "%s/%s" % (kind, key)))


class Fabric:
    """The fabric's state and the operations every provider API maps onto. Thread-safe."""

    def __init__(self, **options):
        self.lock = threading.RLock()
        self.options = dict(DEFAULTS)
        self.options.update({k: v for k, v in options.items() if v is not None})
        self.listeners = []
        self.machines = {}
        self.pool = []
        self._serial = 0
        self.reset()

    # --- set-up -------------------------------------------------------------

    def reset(self, **options):
        with self.lock:
            self.options.update({k: v for k, v in options.items() if v is not None})
            self.machines = {}
            count = self.options["machines"]
            names = count if isinstance(count, list) else ["m%d" % i for i in range(int(count))]
            for index, name in enumerate(names):
                mach_uuid = _uid("machine", name)
                self.machines[mach_uuid] = {
                    "uuid": mach_uuid,
                    "index": index,
                    "name": name,
                    "node": "%s%d" % (self.options["node_prefix"], index),
                    "devices": [],
                    "specs": {},
                    "counts": {},  # CM: spec_uuid -> the spec's device_count (desired), when it differs from the devices listed
                }
            self.pool = []
            self._serial = 0
            for model in sorted(self.options["pool"]):
                spec = self.options["pool"][model]
                for index in range(int(spec["count"])):
                    self.pool.append(self._new_device(spec["type"], model, index))
        self._notify_all()

    def _new_device(self, dtype, model, index):
        key = "%s/%s/%d" % (dtype, model, index)
        res_uuid = _uid("resource", key)
        prefix = "GPU-" if dtype == "gpu" else "CXL-"
        return {
            "res_uuid": res_uuid,
            "serial": prefix + _uid("serial", key),
            "type": dtype,
            "model": model,
            "op_status": "0000",
            "phase": "free",
            "polls": 0,
            "block_id": "RB-" + res_uuid.split("-", maxsplit=1)[0],
            "spec_uuid": None,
        }

    # --- views ----------------------------------------------------------------

    def machine(self, key):
        """A machine by uuid, name, node name or Redfish system id (the uuid)."""
        with self.lock:
            if key in self.machines:
                return self.machines[key]
            for machine in self.machines.values():
                if key in (machine["name"], machine["node"]):
                    return machine
        return None

    def machine_of(self, res_uuid):
        with self.lock:
            for machine in self.machines.values():
                for device in machine["devices"]:
                    if device["res_uuid"] == res_uuid:
                        return machine, device
        return None, None

    def device(self, key):
        """Any device (bound or free) by res_uuid, serial or block id."""
        with self.lock:
            for machine in self.machines.values():
                for device in machine["devices"]:
                    if key in (device["res_uuid"], device["serial"], device["block_id"]):
                        return device
            for device in self.pool:
                if key in (device["res_uuid"], device["serial"], device["block_id"]):
                    return device
        return None

    def free(self, dtype, model=None):
        with self.lock:
            return [d for d in self.pool if d["type"] == dtype and (model is None or d["model"] == model)]

    def snapshot(self):
        """Plain JSON view: machines with their devices, and the free pool by model."""
        with self.lock:
            machines = {}
            for machine in self.machines.values():
                machines[machine["uuid"]] = {
                    "name": machine["name"],
                    "node": machine["node"],
                    "devices": [copy.deepcopy(d) for d in machine["devices"]],
                }
            pool = {}
            for device in self.pool:
                pool[device["model"]] = pool.get(device["model"], 0) + 1
            return {
                "tenant_id": self.options["tenant_id"],
                "cluster_id": self.options["cluster_id"],
                "realm": self.options["realm"],
                "machines": machines,
                "pool": pool,
            }

    def spec_uuid(self, machine, dtype, model):
        key = "%s/%s" % (dtype, model)
        if key not in machine["specs"]:
            machine["specs"][key] = _uid("spec", "%s/%s" % (machine["uuid"], key))
        return machine["specs"][key]

    # --- mutations ------------------------------------------------------------

    def attach(self, machine, dtype, model=None, block_id=None, phase="attached", op_status=None):
        """Move one free device (of this type/model, or the named block) onto the machine; None if none is free."""
        with self.lock:
            candidates = [d for d in self.pool if d["type"] == dtype and (model is None or d["model"] == model)]
            if block_id is not None:
                candidates = [d for d in self.pool if d["block_id"] == block_id]
            if not candidates:
                return None
            device = candidates[0]
            self.pool.remove(device)
            device["phase"] = phase
            device["polls"] = int(self.options["cm_polls"]) if phase == "adding" else 0
            device["spec_uuid"] = self.spec_uuid(machine, device["type"], device["model"])
            if op_status is not None:
                device["op_status"] = op_status
            machine["devices"].append(device)
        self._notify(machine)
        return device

    def detach(self, machine, res_uuid, phase=None):
        """Release the device back to the pool (or mark it ``removing`` for Cluster Manager)."""
        with self.lock:
            for device in list(machine["devices"]):
                if device["res_uuid"] == res_uuid:
                    if phase == "removing":
                        device["phase"] = "removing"
                        device["polls"] = int(self.options["cm_polls"])
                        return device
                    self._release(machine, device)
                    break
            else:
                return None
        self._notify(machine)
        return device

    def _release(self, machine, device):
        machine["devices"].remove(device)
        device["phase"] = "free"
        device["op_status"] = "0000"
        device["spec_uuid"] = None
        device["polls"] = 0
        self.pool.append(device)
        self.pool.sort(key=lambda d: (d["model"], d["res_uuid"]))

    def advance(self, machine):
        """One Cluster Manager poll: devices in flight move on when their poll count runs out."""
        changed = False
        with self.lock:
            for device in list(machine["devices"]):
                if device["phase"] not in ("adding", "removing", "adding_fail"):
                    continue
                if device["polls"] > 0:
                    device["polls"] -= 1
                    continue
                changed = True
                if device["phase"] == "adding":
                    device["phase"] = "attached"
                elif device["phase"] == "adding_fail":
                    device["phase"] = "add_failed"
                    device["op_status"] = "2001"
                else:
                    self._release(machine, device)
        if changed:
            self._notify(machine)

    def set_device(self, key, **fields):
        with self.lock:
            device = self.device(key)
            if device is None:
                return None
            for name, value in fields.items():
                if name in ("op_status", "phase", "polls"):
                    device[name] = value
            machine, _dummy = self.machine_of(device["res_uuid"])
        if machine is not None:
            self._notify(machine)
        return device

    # --- listeners (the Kubernetes device-plugin stand-in) ---------------------

    def gpu_count(self, machine):
        with self.lock:
            return sum(1 for d in machine["devices"] if d["type"] == "gpu" and d["phase"] == "attached")

    def _notify(self, machine):
        for listener in list(self.listeners):
            listener(self, machine)

    def _notify_all(self):
        for machine in list(self.machines.values()):
            self._notify(machine)
