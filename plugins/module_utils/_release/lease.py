# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""One ``coordination.k8s.io/v1`` Lease per stack, so two rollouts never interleave.

The Lease ``aicr-runtime-<stack>`` names its holder (``holderIdentity``) and what it is
doing (annotation ``aicr.io/holder-message``). A Lease whose ``renewTime`` is older than
its ``leaseDurationSeconds`` is stale and is taken over (optimistic concurrency via
``resourceVersion``: of two runs racing for a stale Lease, one gets a conflict). While
held, the Lease is renewed in the background every third of its duration.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import socket
import threading

from ansible_collections.aicr.runtime.plugins.module_utils._common import timeutil
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import HOLDER_MESSAGE_ANNOTATION as MESSAGE_ANNOTATION
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import managed_labels, slug
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError


def lease_name(stack):
    return ("aicr-runtime-" + slug(stack))[:63].rstrip("-")


def default_identity():
    return "%s@%s/%d" % (os.environ.get("USER", "ansible"), socket.gethostname(), os.getpid())


class StackLease(object):
    """Acquire/renew/release the Lease of one stack."""

    def __init__(self, cluster, stack, namespace="default", duration=60, identity=None, message="", clock=timeutil.utcnow):
        self.cluster = cluster
        self.stack = stack
        self.namespace = namespace
        self.duration = max(5, int(duration))
        self.identity = identity or default_identity()
        self.message = message
        self.clock = clock
        self.name = lease_name(stack)
        self.taken_over = None
        self._current = None
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
                "holderIdentity": self.identity, "leaseDurationSeconds": self.duration,
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
        existing = self.cluster.get("coordination.k8s.io/v1", "Lease", self.name, self.namespace)
        try:
            if existing is None:
                self._current = self.cluster.create(self._body())
            else:
                holder, message, stale, renewed = self._describe(existing)
                if holder and holder != self.identity and not stale:
                    raise AicrError(
                        "lease: stack %s is being rolled out by %s (%s), Lease %s/%s renewed %s; wait for it or retry after %ss"
                        % (self.stack, holder, message or "no message", self.namespace, self.name,
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
            raise
        self._thread = threading.Thread(target=self._renew_loop, name="aicr-lease-renew")
        self._thread.daemon = True
        self._thread.start()
        return self

    def _renew_loop(self):
        while not self._stop.wait(self.duration / 3.0):
            try:
                with self._lock:
                    body = dict(self._current)
                    body["spec"] = dict(body.get("spec") or {}, renewTime=timeutil.microtime(self.clock()))
                    self._current = self.cluster.replace(body)
            except Exception:  # pylint: disable=broad-except
                continue  # next attempt; a lost renewal only risks a takeover after the duration

    def release(self):
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        with self._lock:
            if self._current is not None:
                try:
                    self.cluster.delete("coordination.k8s.io/v1", "Lease", self.name, self.namespace)
                except ClusterError:
                    pass
                self._current = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc_info):
        self.release()
        return False
