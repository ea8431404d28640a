# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One run at a time changes a stack's devices: the stack's fabric Lease.

Two runs of one stack at the same moment (two AWX jobs, a job and a person) would each read the same records and machines,
each attach the deficit (twice the devices), and each resolve the other's open intents as a killed run's. So a run with
``stack`` changes nothing without holding the ``coordination.k8s.io/v1`` Lease ``aicr-fabric-<stack>`` in
``stack_namespace`` (the same Lease mechanics as gated_release's: :class:`~.._kube.lease.StackLease`).

A run that changes nothing never takes it (a converged re-run makes no mutating call): the run starts without the Lease,
and its first change - a write of its cluster client (:class:`GatedClient`: the device records, the orphan ledger), an
attach, a detach (the service's gate) - raises :class:`LeaseNeeded` before anything is sent. The
run then takes the Lease and starts again from the beginning, re-reading the records and the machines under it, so
what it changes is decided on what it read while holding the Lease. A Lease another live run holds fails the task
(``lease: stack … is being converged on the fabric by …``); one left by a killed run is taken over once its duration
has passed by the API server's clock.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import StackLease, lease_name

LEASE_PREFIX = "aicr-fabric-"
LEASE_DURATION = 60  # seconds; renewed every third of it while the run lasts, so only a killed run's Lease ever expires


class LeaseNeeded(BaseException):
    """A change was about to be made without the Lease (nothing was sent). A ``BaseException``, as ``cancel.Cancelled``
    is: the service's ``except Exception`` turns failures into a machine's error, and this is none - the run starts again."""


class StackGate(object):
    """Called before every change of a stack's run (``gate(what)``): raises :class:`LeaseNeeded` without the Lease, and
    fails a run that lost it (``StackLease.check``)."""

    def __init__(self):
        self.lease = None
        self.needed = None  # the first change of an attempt without the Lease: the attempt is being restarted

    def __call__(self, what):
        if self.lease is None:
            self.needed = what
            raise LeaseNeeded(what)
        self.lease.check()

    def between_polls(self):
        """Between two reads of a wait (devices settling): once another machine's worker of this attempt needs the Lease,
        the attempt starts again under it, so this worker stops waiting now rather than at the end of its wait."""
        if self.lease is None and self.needed is not None:
            raise LeaseNeeded(self.needed)


class GatedClient(object):
    """The cluster client of one attempt: each write (``apply`` other than a dry run, ``create``, ``replace``,
    ``delete``, a raw ``request`` other than a GET) passes the gate first, so no writer of the attempt - the device records,
    the orphan ledger - changes the cluster without the Lease. Reads pass through unchanged."""

    WRITES = ("apply", "create", "replace", "delete")
    RAW = ("request", "request_once")

    def __init__(self, client, gate):
        self.client = client
        self.gate = gate

    def __getattr__(self, name):
        attr = getattr(self.client, name)
        if not callable(attr) or name not in self.WRITES + self.RAW:
            return attr
        gate = self.gate

        def gated(*args, **kwargs):
            what = _write_of(name, args, kwargs)
            if what:
                gate(what)
            return attr(*args, **kwargs)
        return gated


def _write_of(name, args, kwargs):
    """What a client call writes (``kind namespace/name``, or ``METHOD path``); None for a read or a dry run."""
    if name in GatedClient.RAW:
        method = str(args[0] if args else kwargs.get("method", "GET")).upper()
        return None if method == "GET" else "%s %s" % (method, args[1] if len(args) > 1 else kwargs.get("path"))
    if name == "apply" and kwargs.get("dry_run"):
        return None
    if name == "delete":
        kind, obj_name = (args + (None, None, None))[1:3]
        namespace = args[3] if len(args) > 3 else kwargs.get("namespace")
    else:
        obj = args[0] if args else kwargs.get("obj") or {}
        meta = obj.get("metadata") or {}
        kind, obj_name, namespace = obj.get("kind"), meta.get("name"), meta.get("namespace")
    return "%s of %s %s" % (name, kind, "%s/%s" % (namespace, obj_name) if namespace else obj_name)


def fabric_lease_name(stack):
    return lease_name(stack, prefix=LEASE_PREFIX)


def run_exclusive(client, stack, namespace, attempt, message=""):
    """``attempt(gate)`` once without the Lease; when it is about to change something, again under the stack's Lease.

    Returns the result of the attempt that finished, with ``lease`` (``namespace/name`` of the Lease it held, None when
    it changed nothing). Raises what ``attempt`` raises, and ``AicrError`` when the Lease is held by another run or
    cannot be used (403), or was lost by the end of the run (the error then carries the run's whole result).
    """
    gate = StackGate()
    try:
        result = attempt(gate)
        result["lease"] = None
        return result
    except LeaseNeeded:
        pass
    lease = StackLease(client, stack, namespace=namespace, duration=LEASE_DURATION, message=message, name=fabric_lease_name(stack),
                       field="stack_namespace", activity="converged on the fabric")
    lease.acquire()
    gate.lease = lease
    try:
        result = attempt(gate)
    finally:
        lease.release()
    result["lease"] = "%s/%s" % (namespace, lease.name)
    if lease.taken_over:
        taken = lease.taken_over
        result.setdefault("warnings", []).append("lease: took over Lease %s/%s of stack %s from %s (%s), which stopped renewing it; its "
                                                 "devices were re-read under the Lease" % (namespace, lease.name, stack, taken["holder"],
                                                                                           taken["message"] or "no message"))
    lost = lease.lost_by_the_end()
    if lost:
        # after the run's last change (a lost Lease stops the run before its next one): the run fails, reporting what it did
        raise AicrError(lost, **result)
    return result
