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
  part of the error text (``transport``);
- an action answered ``202 Accepted`` runs as a task (the specification's asynchronous operations): its task monitor
  (``Location``, else the Task's ``TaskMonitor``) is polled - after ``Retry-After`` (seconds or an HTTP-date) when given, else
  ``task_poll_interval`` - until it answers something other than 202, within ``task_timeout``. Its final answer is the
  action's: an error status is the action's refusal (definitive); a Task in ``TaskState`` Exception, Killed or Cancelled
  (or ``TaskStatus`` Critical) is a failure naming its ``Messages``; a monitor that is gone (404/410) leaves the outcome to
  the re-read of the system. A task still running at the deadline, or a monitor answering 5xx, 401/403/408/429 or not
  at all, is an unknown outcome (``AmbiguousOutcome`` of kind ``task``: the service re-reads the system once and reports the
  change as pending) that is never re-sent. A monitor on another host than the endpoint is not followed - the credentials
  go to the endpoint only -, an unknown outcome too.
- every link the service names (``@odata.id`` of the CompositionService, Systems, ResourceBlocks, their members and parts, an
  advertised action target) is resolved against the endpoint and refused when it leaves its scheme, host and port
  (``transport.resolve_link``): an ``@odata.id`` of ``@evil/redfish/v1/x`` would otherwise send the Basic credentials to ``evil``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import threading
import time
from email.utils import parsedate_to_datetime

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import (
    FabricBackend, Device, READY, PENDING, FAILED, REMOVING, OK, WARNING, CRITICAL, UNKNOWN,
)
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import TASK, AmbiguousOutcome, FabricHTTPError, resolve_link

try:
    from urllib.parse import urlsplit
except ImportError:  # Python 2 (the sanity test's compile check only)
    from urlparse import urlsplit  # type: ignore

ROOT = "/redfish/v1"
HEALTH = {"OK": OK, "Warning": WARNING, "Critical": CRITICAL}
STATES = {"Composed": READY, "ComposedAndAvailable": READY, "Composing": PENDING, "Failed": FAILED, "Unavailable": FAILED, "Unused": REMOVING}
ADD_ACTION = "#ComputerSystem.AddResourceBlock"
REMOVE_ACTION = "#ComputerSystem.RemoveResourceBlock"
TASK_FAILED_STATES = ("Exception", "Killed", "Cancelled")
# a monitor answering these says nothing about the action (not allowed to read it, try later)
MONITOR_UNREADABLE = (401, 403, 408, 429)
MAX_RETRY_AFTER = 30.0  # a Retry-After longer than this is not waited in one piece (the deadline still holds)


def _odata(obj, key, where):
    value = obj.get(key) if isinstance(obj, dict) else None
    if not isinstance(value, dict) or not value.get("@odata.id"):
        raise AicrError("%s: %s/@odata.id is missing in the Redfish answer" % (where, key), field=key)
    return value["@odata.id"]


class RedfishBackend(FabricBackend):
    name = "redfish"
    asynchronous = True

    def __init__(self, transport, task_timeout=60.0, task_poll_interval=1.0, clock=time.monotonic, sleep=cancel.pause):
        super(RedfishBackend, self).__init__(transport)
        self.task_timeout = float(task_timeout)
        self.task_poll_interval = float(task_poll_interval)
        self.clock = clock
        self.sleep = sleep
        self._lock = threading.Lock()
        self._links = None
        self._claimed = set()
        self._parts = {}  # linked Processor / Memory URL -> its resource (model and serial do not change)
        self._actions = {}  # machine -> {action name: target} as the ComputerSystem advertises them

    def _discover(self):
        with self._lock:
            if self._links is None:
                root = self.transport.request("GET", ROOT, what="Redfish service root").json("Redfish service root")
                composition = self._link(_odata(root, "CompositionService", "Redfish service root"), "Redfish service root CompositionService")
                systems = self._link(_odata(root, "Systems", "Redfish service root"), "Redfish service root Systems")
                service = self.transport.request("GET", composition, what="Redfish CompositionService").json("Redfish CompositionService")
                if isinstance(service, dict) and service.get("ServiceEnabled") is False:
                    raise AicrError("Redfish CompositionService at %s is disabled (ServiceEnabled false)" % composition, field="endpoint")
                features = (root.get("ProtocolFeaturesSupported") or {}) if isinstance(root, dict) else {}
                expand = (features.get("ExpandQuery") or {}) if isinstance(features, dict) else {}
                self._links = {"blocks": self._link(_odata(service, "ResourceBlocks", "Redfish CompositionService"),
                                                    "Redfish CompositionService ResourceBlocks"), "systems": systems,
                               "expand": isinstance(expand, dict) and expand.get("NoLinks") is True}
            return self._links

    def _link(self, link, what):
        """A link the service named, as a path on the endpoint; refused when it leaves the endpoint (module docstring)."""
        return resolve_link(self.transport.base_url, link, what)

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
        part = self.transport.request("GET", self._link(url, "read " + str(url)), what="read " + url).json("read " + url)
        part = part if isinstance(part, dict) else {}
        with self._lock:
            self._parts[url] = part
        return part

    def _action_target(self, machine_id, action):
        with self._lock:
            target = self._actions.get(machine_id, {}).get(action)
        if target:
            return self._link(target, "system %s action %s" % (machine_id, action))
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
            block = self.transport.request("GET", self._link(url, "%s: resource block" % where), what="read resource block " + url).json(
                "read resource block " + url)
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
                member = self.transport.request("GET", self._link(member["@odata.id"], "resource block collection member"),
                                                what="read resource block").json("read resource block")
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
                member = self.transport.request("GET", self._link(member["@odata.id"], "resource block collection member"),
                                                what="read resource block").json("read resource block")
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
        what = "compose block %s into system %s" % (choice.rsplit("/", 1)[-1], machine_id)
        self._finish(self.transport.request("POST", target, json_body={"ResourceBlock": {"@odata.id": choice}}, what=what), what)

    def detach(self, machine_id, device, devices):
        target = self._action_target(machine_id, REMOVE_ACTION)
        what = "remove block %s from system %s" % (device.res_uuid, machine_id)
        self._finish(self.transport.request("POST", target, json_body={"ResourceBlock": {"@odata.id": device.ref}}, what=what), what)

    # --- asynchronous actions (202 Accepted and a task monitor) ---------------------------

    def _finish(self, response, what):
        """Follow an action answered 202 to its end (see the module docstring); return when it completed."""
        if response.status != 202:
            return
        task = _json_or_none(response)
        monitor = response.header("Location") or (task.get("TaskMonitor") if isinstance(task, dict) else None)
        if not monitor:
            return  # accepted without a monitor: the re-read of the system settles it
        try:
            path = self._monitor_path(monitor, what)
        except AicrError as exc:  # the action was accepted: what became of it is for the re-read to say
            raise AmbiguousOutcome(exc.msg, kind=TASK, **dict((k, v) for k, v in exc.details.items() if k not in ("kind", "status")))
        deadline = self.clock() + self.task_timeout
        answer = response
        while True:
            _raise_if_task_failed(task, answer.status, what)
            if answer is not response and answer.status != 202:
                return
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise AmbiguousOutcome("%s: the fabric's task is still running after %.0fs (task monitor %s); it may yet complete - re-run to "
                                       "converge (nothing re-sent)" % (what, self.task_timeout, path), kind=TASK, task_monitor=path)
            cancel.check()  # SIGTERM: stop following the task (it goes on on the fabric; the next run re-reads the system)
            self.sleep(min(_retry_after(answer, self.task_poll_interval), remaining))
            try:
                answer = self.transport.request("GET", path, what="%s: task monitor" % what)
                task = _json_or_none(answer)
            except FabricHTTPError as exc:
                if exc.status in (404, 410):
                    return  # the monitor is gone once its answer was given: the re-read of the system says what happened
                if exc.status is not None and exc.status < 500 and exc.status not in MONITOR_UNREADABLE:
                    raise  # the action's own refusal, as the monitor reports it: definitive
                raise AmbiguousOutcome("%s; the fabric's task may or may not complete - re-run to converge (nothing re-sent)" % exc.msg,
                                       kind=TASK, task_monitor=path, status=exc.status)
            except AicrError as exc:
                raise AmbiguousOutcome("%s; the fabric's task may or may not complete - re-run to converge (nothing re-sent)" % exc.msg,
                                       kind=TASK, task_monitor=path)

    def _monitor_path(self, monitor, what):
        """The monitor's path on the endpoint; a monitor on another host is refused (the credentials stay with the endpoint)."""
        where = urlsplit(monitor)
        base = urlsplit(self.transport.base_url)
        if where.scheme or where.netloc:
            if (where.scheme.lower(), where.netloc.lower()) != (base.scheme.lower(), base.netloc.lower()):
                raise AicrError("%s: the fabric named a task monitor on another host (%s://%s), not the endpoint %s; not followed (the "
                                "credentials go to the endpoint only) - re-run to converge (nothing re-sent)"
                                % (what, where.scheme, where.netloc, self.transport.base_url), task_monitor=monitor)
        return resolve_link(self.transport.base_url, monitor, "%s: task monitor" % what)


def _json_or_none(response):
    try:
        return response.json("task")
    except AicrError:
        return None


def _retry_after(response, default):
    """Seconds from a Retry-After header (RFC 9110: delay-seconds or an HTTP-date), at most MAX_RETRY_AFTER; none or
    unreadable: ``default``. An HTTP-date is counted from the answer's own ``Date`` - the fabric's clock, so a skew between
    it and this host does not matter - and from this host's clock only when the answer has none."""
    value = response.header("Retry-After")
    seconds = default
    if value is not None:
        try:
            seconds = float(value)
        except ValueError:
            until = _seconds_until(value, response.header("Date"))
            seconds = default if until is None else until
    return min(max(seconds, 0.0), MAX_RETRY_AFTER)


def _seconds_until(http_date, server_date):
    """Seconds from ``server_date`` (an HTTP-date; None: now) to ``http_date``; None when either cannot be read."""
    try:
        moments = [parsedate_to_datetime(text) if text else datetime.datetime.now(datetime.timezone.utc) for text in (http_date, server_date)]
    except (TypeError, ValueError, IndexError):
        return None
    # an HTTP-date is always GMT; a date without a zone (RFC 2822's -0000) is read as UTC too
    when, now = [m if m.tzinfo is not None else m.replace(tzinfo=datetime.timezone.utc) for m in moments]
    return (when - now).total_seconds()


def _raise_if_task_failed(task, status_code, what):
    """``task`` (an answer's JSON body) a Task resource that says the task failed: FabricHTTPError with its messages."""
    if not isinstance(task, dict) or "TaskState" not in task:
        return
    state, status = task.get("TaskState"), task.get("TaskStatus")
    if state not in TASK_FAILED_STATES and status != "Critical":
        return
    messages = [m.get("Message") or m.get("MessageId") for m in task.get("Messages") or [] if isinstance(m, dict)]
    text = "; ".join(m for m in messages if m) or "no message"
    raise FabricHTTPError("%s: the fabric's task ended %s (TaskStatus %s): %s" % (what, state, status, text), status=status_code,
                          task_state=state)
