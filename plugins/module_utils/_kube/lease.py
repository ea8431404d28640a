# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One ``coordination.k8s.io/v1`` Lease per stack, so two rollouts never interleave.

The Lease ``aicr-runtime-<stack>`` names its holder (``holderIdentity``, unique per run: user, host, pid and a random
suffix) and what it is doing (annotation ``aicr.io/holder-message``).

- **Staleness by the server's clock.** A Lease whose ``renewTime`` is older than its ``leaseDurationSeconds`` by the
  API server's clock (``KubeClient.server_time``; renew times are written from it too) is stale and is taken over
  (optimistic concurrency via ``resourceVersion``: of two runs racing for a stale Lease, one gets a conflict). Hosts'
  clocks never enter it.
- **Renewed on a schedule**, every third of its duration, in the background. A renewal the server refuses (409: the
  Lease changed under us), a Lease that names another holder, or renewals failing until the duration has passed since
  the last one that succeeded, mark the Lease *lost*: :meth:`StackLease.check`, which every mutation calls first
  (:class:`Guarded`), then stops the run with a message saying why. A 409 whose re-read Lease is exactly what one of
  this run's unanswered renewals wrote (holder, acquireTime, transitions and that renewal's renewTime) is that renewal,
  applied with its answer lost: the Lease is still this run's.
- **Held from before the request**: a renewal counts from the moment it was sent (before the server's clock is read for
  its renewTime), never from its answer: a slow answer does not stretch this run's idea of its Lease past what another
  run reads from the renewTime it wrote (to the whole second of the server's ``Date``), so two runs do not both believe
  they hold it for up to a request's timeout.
- **Release deletes only its own Lease**: preconditioned on the uid and resourceVersion of the last renewal, so a
  Lease another run took over meanwhile is left alone.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import os
import socket
import threading
import time
import uuid

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel, timeutil
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import HOLDER_MESSAGE_ANNOTATION as MESSAGE_ANNOTATION
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import fit_name, managed_labels
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.deadline import bookkeeping, labelled, retry_window
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import LEASE_ROLE, ClusterError, refusal


def lease_name(stack, prefix="aicr-runtime-"):
    """``<prefix><stack>``, cut with a hash of the stack name past 63 characters (``fit_name``: one Lease per stack)."""
    return fit_name(prefix, stack, limit=63)


def default_identity():
    """``user@host/pid-<random>``: unique per run, even for two runs with the same pid on two hosts named alike."""
    return "%s@%s/%d-%s" % (os.environ.get("USER", "ansible"), socket.gethostname(), os.getpid(), uuid.uuid4().hex[:8])


MIN_DURATION = 10
MAX_DURATION = 3600


def server_clock(cluster):
    """The API server's clock as a naive UTC datetime (this host's when the client cannot read it)."""
    def now():
        reader = getattr(cluster, "server_time", None)
        if reader is None:
            return timeutil.utcnow()
        return datetime.datetime.fromtimestamp(reader(), datetime.timezone.utc).replace(tzinfo=None)
    return now


class StackLease(object):
    """Acquire/renew/release the Lease of one stack.

    ``name`` (default :func:`lease_name`), ``field`` (the option naming ``namespace``) and ``activity`` (what the holder
    is doing, in the message of a Lease held by another run) let another engine hold a Lease of its own for the stack:
    fabric_device's is ``aicr-fabric-<stack>`` in ``stack_namespace``.
    """

    def __init__(self, cluster, stack, namespace="default", duration=60, identity=None, message="", clock=None, monotonic=time.monotonic,
                 name=None, field="lease_namespace", activity="rolled out"):
        self.cluster = cluster
        self.stack = stack
        self.namespace = namespace
        self.field = field
        self.activity = activity
        self.duration = max(5, min(MAX_DURATION, int(duration)))
        self.identity = identity or default_identity()
        self.message = message
        self.clock = clock or server_clock(cluster)
        self.monotonic = monotonic
        self.name = name or lease_name(stack)
        self.taken_over = None
        self.lost = None  # why the Lease is no longer ours (None while it is)
        self.renewals = 0
        self._renewed_at = None  # monotonic time the last successful acquire/renewal was sent (not answered)
        self._current = None
        self._unanswered = {}  # renewTime -> monotonic send time, of renewals sent since the last answered one
        self._stop = threading.Event()
        self._thread = None
        self._lock = threading.Lock()

    def _body(self, existing=None, transitions=0):
        now = timeutil.microtime(self.clock())
        body = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {
                "name": self.name, "namespace": self.namespace,
                "labels": managed_labels(self.stack),
                "annotations": {MESSAGE_ANNOTATION: self.message},
            },
            "spec": {
                "holderIdentity": self.identity, "leaseDurationSeconds": int(self.duration),
                "acquireTime": now, "renewTime": now, "leaseTransitions": transitions,
            },
        }
        if existing is not None:
            body["metadata"]["resourceVersion"] = existing["metadata"].get("resourceVersion")
        return body

    def holder(self):
        """(holder identity, message, stale?) of the current Lease, or None."""
        lease = self.cluster.get("coordination.k8s.io/v1", "Lease", self.name, self.namespace)
        if lease is None:
            return None
        return self._describe(lease)

    def _describe(self, lease):
        spec = lease.get("spec") or {}
        renewed = timeutil.parse(spec.get("renewTime")) or timeutil.parse(spec.get("acquireTime"))
        duration = int(spec.get("leaseDurationSeconds") or self.duration)
        stale = renewed is None or (self.clock() - renewed).total_seconds() > duration
        message = ((lease.get("metadata") or {}).get("annotations") or {}).get(MESSAGE_ANNOTATION, "")
        return spec.get("holderIdentity"), message, stale, renewed

    def acquire(self):
        sent = self.monotonic()  # before the server's clock is read for acquireTime/renewTime: the conservative start
        try:
            existing = self.cluster.get("coordination.k8s.io/v1", "Lease", self.name, self.namespace)
            if existing is None:
                self._current = self.cluster.create(self._body())
            else:
                holder, message, stale, renewed = self._describe(existing)
                if holder and holder != self.identity and not stale:
                    raise AicrError(
                        "lease: stack %s is being %s by %s (%s), Lease %s/%s renewed %s; wait for it or retry after %ss"
                        % (self.stack, self.activity, holder, message or "no message", self.namespace, self.name,
                           renewed.strftime("%Y-%m-%dT%H:%M:%SZ") if renewed else "never", int((existing.get("spec") or {}).get("leaseDurationSeconds") or 0)),
                        holder=holder, holder_message=message, lease="%s/%s" % (self.namespace, self.name),
                    )
                if holder and holder != self.identity:
                    self.taken_over = {"holder": holder, "message": message}
                transitions = int((existing.get("spec") or {}).get("leaseTransitions") or 0) + (1 if holder != self.identity else 0)
                self._current = self.cluster.replace(self._body(existing, transitions))
        except ClusterError as exc:
            if exc.status == 409:
                raise AicrError("lease: another run acquired Lease %s/%s of stack %s at the same moment; retry" % (self.namespace, self.name, self.stack),
                                lease="%s/%s" % (self.namespace, self.name))
            # the shipped release ClusterRole grants no Leases: they are the namespaced Role's, bound where the Lease lives
            refused = self.refused(exc)
            if refused is not None:
                raise refused
            raise
        self._renewed_at = sent
        self._thread = threading.Thread(target=self._renew_loop, name="aicr-lease-renew")
        self._thread.daemon = True
        self._thread.start()
        return self

    def refused(self, exc):
        """For a 403 on the Lease: the error naming the verb, the namespace and the Role to bind there; else None."""
        return refusal(exc, "lease", LEASE_ROLE, self.namespace, self.field, lease="%s/%s" % (self.namespace, self.name))

    def _lose(self, reason):
        with self._lock:
            if self.lost is None:
                self.lost = reason
        self._stop.set()

    def renew(self):
        """One renewal; marks the Lease lost when the server refuses it or another run holds it (returns False then)."""
        with self._lock:
            if self.lost is not None or self._current is None:
                return False
            current = self._current
        sent = self.monotonic()  # the renewal's validity counts from here (see the module's docstring)
        body = dict(current)
        body["spec"] = dict(current.get("spec") or {}, renewTime=timeutil.microtime(self.clock()))
        with self._lock:
            self._unanswered[body["spec"]["renewTime"]] = sent
        # a renewal is worth waiting for only while the Lease it renews is still valid - and it is, even after the run's
        # own deadline (the run still records what it did and releases the Lease then)
        valid = max(0.0, self.duration - (self.monotonic() - (self._renewed_at or sent)))
        try:
            with retry_window(valid, labelled("lease_duration", self.duration), detached=True):
                renewed = self.cluster.replace(body)
        except ClusterError as exc:
            refused = self.refused(exc)
            if refused is not None:  # RBAC does not change its mind on a retry
                self._lose("its renewal was refused (403): %s" % refused.msg)
                return False
            if exc.status in (404, 409):
                live = None
                try:
                    with retry_window(valid, labelled("lease_duration", self.duration), detached=True):
                        live = self.cluster.get("coordination.k8s.io/v1", "Lease", self.name, self.namespace)
                except ClusterError:
                    pass
                holder = ((live or {}).get("spec") or {}).get("holderIdentity")
                landed = self._own_unanswered(live, current)
                if landed is not None:
                    # an earlier renewal of ours was applied but its answer lost (so this one, sent with the old
                    # resourceVersion, conflicts): the Lease as it is now is that renewal's
                    self._renewed(live, landed)
                    return True
                if live is None:
                    self._lose("Lease %s/%s was deleted by someone else" % (self.namespace, self.name))
                elif holder != self.identity:
                    self._lose("Lease %s/%s is now held by %s" % (self.namespace, self.name, holder or "nobody"))
                else:
                    self._lose("the renewal of Lease %s/%s was refused (%s): it changed under this run" % (self.namespace, self.name, exc.status))
                return False
            raise
        self._renewed(renewed, sent)
        return True

    def _own_unanswered(self, live, current):
        """The send time of the unanswered renewal of this run that ``live`` (the Lease re-read after a 409) is, or None.

        It is ours only when nothing but its renewTime differs from the Lease this run last held: same holder, same
        acquireTime and transitions (another run's takeover changes those), and a renewTime this run sent and never
        heard back about (another run's renewal writes its own)."""
        spec, held = (live or {}).get("spec") or {}, (current or {}).get("spec") or {}
        if not live or spec.get("holderIdentity") != self.identity:
            return None
        if (live.get("metadata") or {}).get("uid") != (current.get("metadata") or {}).get("uid"):
            return None
        if any(spec.get(key) != held.get(key) for key in ("acquireTime", "leaseTransitions", "leaseDurationSeconds")):
            return None
        with self._lock:
            return self._unanswered.get(spec.get("renewTime"))

    def _renewed(self, lease, sent):
        with self._lock:
            if self.lost is not None or self._current is None:
                return  # released or lost meanwhile: a late answer does not bring the Lease back
            self._current = lease
            self._renewed_at = max(self._renewed_at or sent, sent)
            self._unanswered = {}
            self.renewals += 1

    def _renew_loop(self):
        interval = self.duration / 3.0
        wait = interval
        while not self._stop.wait(wait):
            try:
                wait = interval if self.renew() else wait
            except Exception as exc:  # pylint: disable=broad-except  # the API server unreachable, 5xx...: retry soon
                wait = max(0.05, min(1.0, interval / 4.0))
                if self.monotonic() - self._renewed_at >= self.duration:
                    self._lose("Lease %s/%s could not be renewed for %ss (%s)" % (self.namespace, self.name, int(self.duration), str(exc)[:200]))

    def loss(self):
        """Why this run no longer holds the Lease (lost, or not renewed within its duration); None while it does."""
        reason = self.lost
        if reason is None and self._renewed_at is not None and self.monotonic() - self._renewed_at >= self.duration:
            reason = "Lease %s/%s was not renewed within %ss" % (self.namespace, self.name, int(self.duration))
        return reason

    def check(self):
        """Raise when this run no longer holds the Lease (lost, or not renewed within its duration): before every mutation."""
        reason = self.loss()
        if reason is not None:
            raise AicrError("lease: this run lost the Lease of stack %s: %s; it stopped before its next change (another run may now hold the stack)"
                            % (self.stack, reason), lease="%s/%s" % (self.namespace, self.name))

    def lost_by_the_end(self):
        """At the end of a run that held the Lease: why the run fails although its changes are done (another run may have
        changed the stack meanwhile), or None. The caller reports the failure together with what the run did."""
        reason = self.loss()
        if reason is None:
            return None
        return ("lease: this run lost the Lease of stack %s after its last change: %s; another run may hold the stack and have "
                "changed it since" % (self.stack, reason))

    def release(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            current, self._current = self._current, None
        if current is not None and self.lost is None:
            with bookkeeping("the release of the Lease"):  # even after the run's deadline: another run may take the stack at once
                self._delete_own(current)

    def _delete_own(self, current, attempts=3):
        """Delete the Lease if it is still ours: uid and resourceVersion preconditions, so one another run took over
        meanwhile is never deleted. A 409 means the Lease changed since ``current``; when that was our own renewal (one
        still in flight when the renewer was stopped: the holder is still this run), delete it as it is now."""
        meta = current.get("metadata") or {}
        for _attempt in range(attempts):
            try:
                self.cluster.delete("coordination.k8s.io/v1", "Lease", self.name, self.namespace, uid=meta.get("uid"),
                                    resource_version=meta.get("resourceVersion"))
            except ClusterError as exc:
                if exc.status != 409:
                    return
                try:
                    live = self.cluster.get("coordination.k8s.io/v1", "Lease", self.name, self.namespace)
                except ClusterError:
                    return
                live_meta = (live or {}).get("metadata") or {}
                if not live or live_meta.get("uid") != meta.get("uid") or ((live.get("spec") or {}).get("holderIdentity") != self.identity):
                    return  # gone, or another run's now: not ours to delete
                meta = live_meta
            else:
                if cancel.requested():
                    cancel.cleaned("Lease %s/%s released" % (self.namespace, self.name))
                return

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc_info):
        self.release()
        return False


CANCEL_WATCH_SECONDS = 2.0  # a readiness watch through Guarded lasts at most this long when SIGTERM cannot cut it short


class Guarded(object):
    """A cluster client or helm runner whose mutating calls first check that the run still holds its Lease.

    Every call also checks that the run was not cancelled (SIGTERM: ``_common.cancel``): a worker thread waiting for
    readiness stops at its next read. Its watch ends at once on SIGTERM where the client can cut it short
    (``watches_interruptible``: urllib3 2.3 or later); with an older urllib3 its watches are cut into slices of
    :data:`CANCEL_WATCH_SECONDS` instead (the wait reads the object again after each: one GET more every two seconds per
    waiting component).
    """

    MUTATING = ("create", "replace", "delete", "upgrade", "finish_upgrade", "uninstall", "rollback")

    def __init__(self, target, lease):
        self._target = target
        self._lease = lease
        self.changed = False  # a mutating call went through: this run may have installed, applied or removed something

    def holds(self):
        """Raise as a mutating call would when the run was cancelled or no longer holds its Lease: for work that goes on
        inside one call (helm run again after the API server did not answer: ``HelmRunner._retrying``)."""
        cancel.check("a retried change")
        self._lease.check()

    def __getattr__(self, name):
        attr = getattr(self._target, name)
        if not callable(attr):
            return attr
        lease, target = self._lease, self._target
        mutating = name in self.MUTATING or name == "apply"

        def guarded(*args, **kwargs):
            cancel.check("%s (%s)" % (name, "a change" if mutating else "a read"))
            if mutating and (name != "apply" or not kwargs.get("dry_run")):
                lease.check()
                self.changed = True
            if name == "watch_until" and len(args) >= 6 and not getattr(target, "watches_interruptible", False):
                args = args[:5] + (min(float(args[5]), CANCEL_WATCH_SECONDS),) + args[6:]
            return attr(*args, **kwargs)
        return guarded
