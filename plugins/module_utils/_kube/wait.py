# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Waiting on the cluster: until objects are current (kstatus rules), until they are gone, until a read says so.

Every wait has a deadline (a value of ``clock``) and observes the cluster; none sleeps a fixed time and
hopes. :func:`until_current` watches the first pending object when the client can (``watch_until``), so
readiness is seen the moment the controller reports it, and reads every ``poll_interval`` otherwise.

A read the API server does not answer (no answer, 429, 5xx: ``errors.transient``) is not the wait's end: the client
retries it until the wait's deadline (:func:`~.deadline.retry_window`), and one that still fails counts as "not ready
yet" - the wait goes on until its deadline, which then names what the server last said.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube import readiness
from ansible_collections.aicr.runtime.plugins.module_utils._kube.deadline import retry_window
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import describe, transient

_UNANSWERED = object()  # a read the API server did not answer (a transient error): pending, not gone

WATCH_SECONDS = 30.0  # one readiness watch at most this long, then the objects are read again


def _where(namespace, name):
    return "%s%s" % ((namespace + "/") if namespace else "", name)


def _read(client, ref, deadline, clock):
    """``client.get`` of ``ref``, retried by the client until ``deadline``; ``(_UNANSWERED, reason)`` when the API server
    still did not answer, ``(obj, None)`` otherwise."""
    api_version, kind, name, namespace = ref
    try:
        with retry_window(deadline - clock()):
            return client.get(api_version, kind, name, namespace), None
    except AicrError as exc:
        if not transient(exc):
            raise
        return _UNANSWERED, "the API server did not answer (%s)" % describe(exc)


def until_current(client, refs, deadline, who, what, poll_interval=0.5, clock=time.monotonic, sleep=time.sleep, details=None):
    """Wait until every ``(apiVersion, kind, name, namespace)`` of ``refs`` is current; AicrError naming ``who`` otherwise.

    A terminal failure (a failed Job, ``Stalled``...) fails at once; the deadline fails naming the first object that
    is not ready. A read the API server does not answer is "not ready" until the deadline. ``details`` are added to the
    error (e.g. ``component=``).
    """
    details = dict(details or {})
    pending = list(refs)
    watch_until = getattr(client, "watch_until", None)  # test doubles without watches are polled
    quick_returns = 0
    seen = {}  # ref -> the object a watch just delivered (no second read of what the watch showed)
    while True:
        still = []
        watched = None
        for ref in pending:
            api_version, kind, name, namespace = ref
            obj, unanswered = (seen.pop(ref), None) if ref in seen else _read(client, ref, deadline, clock)
            if obj is _UNANSWERED:
                still.append((ref, unanswered))
                continue
            state, reason = readiness.assess(obj)
            if state == readiness.FAILED:
                raise AicrError("%s: %s %s failed (%s)" % (who, kind, _where(namespace, name), reason),
                                resource="%s/%s" % (kind, name), **details)
            if state != readiness.READY:
                still.append((ref, reason))
                if watched is None and obj is not None:
                    watched = (ref, ((obj.get("metadata") or {}).get("resourceVersion")))
        if not still:
            return
        now = clock()
        if now >= deadline:
            (api_version, kind, name, namespace), reason = still[0]
            more = " (and %d more not ready)" % (len(still) - 1) if len(still) > 1 else ""
            raise AicrError("%s: timed out waiting for %s: %s %s not ready: %s%s" % (who, what, kind, _where(namespace, name), reason, more),
                            resource="%s/%s" % (kind, _where(namespace, name)), not_ready=["%s/%s" % (r[0][1], r[0][2]) for r in still], **details)
        pending = [r for r, _reason in still]
        if watch_until is not None and watched is not None:
            (api_version, kind, name, namespace), resource_version = watched
            began = clock()
            ended = watch_until(api_version, kind, name, namespace, resource_version, max(0.05, min(WATCH_SECONDS, deadline - now)),
                                lambda obj: readiness.assess(obj)[0] != readiness.PENDING)
            if isinstance(ended, dict):
                # the event that ended the watch carries the object, Ready or failed, at a newer resourceVersion than
                # the read above: it is assessed as it is, the other pending objects are read again
                seen[watched[0]] = ended
                quick_returns = 0
                continue
            if ended:
                # a watch that keeps ending at once without progress (a server closing it early) must not spin
                quick_returns = quick_returns + 1 if clock() - began < 0.02 else 0
                if quick_returns < 3:
                    continue
            # the watch could not be opened (or keeps ending at once): poll instead
        sleep(max(0.0, min(poll_interval, deadline - now)))


def until(check, deadline, interval, on_timeout, clock=time.monotonic, sleep=time.sleep):
    """Call ``check()`` until it returns something truthy (returned), every ``interval`` seconds; at ``deadline`` raise
    ``on_timeout()`` (an AicrError). ``check`` is called at least once; a check whose read the API server did not answer
    (a transient ClusterError, retried by the client until ``deadline``) is a check that did not hold yet."""
    while True:
        try:
            with retry_window(deadline - clock()):
                found = check()
        except AicrError as exc:
            if not transient(exc) or clock() >= deadline:
                raise
            found = None
        if found:
            return found
        if clock() >= deadline:
            raise on_timeout()
        sleep(max(0.0, min(interval, deadline - clock())))
