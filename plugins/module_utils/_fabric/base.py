# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What every fabric backend shares: the device record, the status policy, the backend interface.

A backend (``fti_fm``, ``fti_cm``, ``redfish``) knows one API's shapes and nothing about desired
state; ``service`` decides what to attach or detach and handles ambiguous outcomes.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

DEVICE_TYPES = ("gpu", "cxlmemory")

# Device health after the status policy.
OK = "ok"
WARNING = "warning"
CRITICAL = "critical"
UNKNOWN = "unknown"
# Life-cycle phases (asynchronous providers).
READY = "ready"
PENDING = "pending"  # being added (CM ADDING, Redfish Composing)
REMOVING = "removing"
FAILED = "failed"  # CM ADD_FAILED / REMOVE_FAILED, Redfish Failed


def classify_op_status(value, where):
    """FTI ``res_op_status`` policy on its first character: (health, warning or None).

    ``0`` ok, ``1`` ok with a warning, ``2`` critical; empty, missing or anything else is UNKNOWN
    with a reason (the caller turns it into an error where the device matters).
    """
    if value is None or (isinstance(value, str) and not value.strip()):
        return UNKNOWN, "%s: res_op_status is empty; expected a status starting with 0, 1 or 2" % where
    text = str(value).strip()
    first = text[0]
    if first == "0":
        return OK, None
    if first == "1":
        return WARNING, "%s: res_op_status %s is a warning" % (where, text)
    if first == "2":
        return CRITICAL, "%s: res_op_status %s is critical" % (where, text)
    return UNKNOWN, "%s: res_op_status %r is not recognised; expected a status starting with 0, 1 or 2" % (where, text)


class Device:
    """One fabric device bound to a machine."""

    __slots__ = ("res_uuid", "serial", "type", "model", "health", "phase", "raw_status", "warnings", "ref")

    def __init__(self, res_uuid, serial, dtype, model, health=OK, phase=READY, raw_status=None, warnings=None, ref=None):
        self.res_uuid = res_uuid
        self.serial = serial
        self.type = dtype
        self.model = model
        self.health = health
        self.phase = phase
        self.raw_status = raw_status
        self.warnings = list(warnings or [])
        self.ref = ref  # backend-specific handle (Redfish block URL, CM spec uuid)

    @property
    def status(self):
        if self.phase != READY:
            return self.phase
        return self.health

    def matches(self, dtype, model):
        return self.type == dtype and (not model or self.model == model)

    def to_result(self):
        return {"res_uuid": self.res_uuid, "serial": self.serial, "type": self.type, "model": self.model,
                "status": self.status, "warnings": list(self.warnings)}

    def __repr__(self):
        return "Device(%s %s/%s %s)" % (self.res_uuid, self.type, self.model, self.status)


def require(mapping, key, where):
    """``mapping[key]``; AicrError naming ``where`` when the field is missing or empty."""
    if not isinstance(mapping, dict) or mapping.get(key) in (None, ""):
        raise AicrError("%s: field %s is missing in the fabric's answer" % (where, key), field=key)
    return mapping[key]


class FabricBackend:
    """The interface ``service`` drives. One instance per run; must be thread-safe across machines."""

    name = "abstract"
    #: the fabric finishes attach/detach after answering (poll with ``read_machine``)
    asynchronous = False

    def __init__(self, transport):
        self.transport = transport

    def read_machine(self, machine_id):
        """Every device bound to the machine, as ``Device`` objects (health classified, never raising on it)."""
        raise NotImplementedError

    def free_count(self, machine_id, dtype, model):
        """Free devices of this type/model the machine could get, or None when the API cannot tell."""
        return None

    def pool_key(self, machine_id):
        """Machines with the same key draw on one free pool (their deficits are added up before anything is attached)."""
        return "machine %s" % machine_id

    def pool_models(self, machine_id, dtype):
        """The models the pool (or the machine's template) offers for this type, as the fabric spells them; None when the
        API cannot list them (FTI FM)."""
        return None

    def attach(self, machine_id, dtype, model, devices):
        """Request one more device of this type/model; ``devices`` is the machine's current list.

        Returns nothing useful: the caller re-reads the machine. Raises ``AmbiguousOutcome`` or
        ``FabricHTTPError``.
        """
        raise NotImplementedError

    def detach(self, machine_id, device, devices):
        """Request removal of this one named device."""
        raise NotImplementedError

    @property
    def token_requests(self):
        return 0
