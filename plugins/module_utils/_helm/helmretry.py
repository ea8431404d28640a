# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""helm run again when the API server did not answer it, within the deadline of the component it works for.

What helm (client-go) prints when the API server did not answer, or answered that it cannot serve now
(:data:`UNREACHABLE_MARKERS`), means the request never reached the server or the server refused it without acting,
so running the same helm again is safe: an ``upgrade --install`` of the same chart and values converges to the same
release, an uninstall whose retry finds no release was finished by the attempt whose answer was lost. A revision an
interrupted attempt of the same call left pending (helm then refuses the release) is cleared first, when it is
certainly that attempt's (:func:`clear_own_pending`). helm's own ``--timeout`` expiring, a chart repository's outage, a
refusal (RBAC, validation) or someone else's pending operation are not retried. Used by ``helm.HelmRunner``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import DIGEST_LABEL
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError, transient

UNREACHABLE_MARKERS = (
    "kubernetes cluster unreachable", "tls handshake timeout", "connection refused", "connection reset by peer", "i/o timeout",
    "unexpected eof", ": eof", "http2: client connection lost", "http2: server sent goaway", "no route to host",
    "the server is currently unable to handle the request", "the server was unable to return a response in the time allotted",
    "request did not complete within requested timeout", "etcdserver: request timed out", "etcdserver: leader changed",
    "too many requests", "the server has received too many requests", "server closed idle connection", "net/http: timeout awaiting response headers",
)
# A chart repository or registry not answering says the same words; its outage is not the API server's and a retry of
# the whole upgrade would only fail later: those failures name what helm was fetching.
REPOSITORY_MARKERS = ("index.yaml", ".tgz", "chart repository", "/v2/", "failed to fetch", "failed to download", "oci://")
# helm refusing to touch a release whose latest revision is pending: after a retried failure, possibly our own helm's
PENDING_MARKER = "another operation (install/upgrade/rollback) is in progress"
FIRST_PAUSE = 1.0  # seconds before the first retry; doubled after each, at most MAX_PAUSE
MAX_PAUSE = 5.0
MIN_REMAINING = 2.0  # a retry is started only with at least this much of its deadline left


def failure_text(exc):
    """What helm printed for a failed call (message and stderr), lower case, for the classification below."""
    return " ".join([getattr(exc, "msg", "") or str(exc), str((getattr(exc, "details", None) or {}).get("stderr") or "")]).lower()


def cluster_unreachable(exc):
    """Whether a failed helm call failed because the API server did not answer (or could not serve): worth a retry."""
    details = getattr(exc, "details", None) or {}
    if details.get("cancelled") or details.get("field"):
        return False  # SIGTERM, a missing helm, a repository's credentials: not the API server's outage
    text = failure_text(exc)
    if "kubernetes cluster unreachable" in text:
        return True
    return any(marker in text for marker in UNREACHABLE_MARKERS) and not any(marker in text for marker in REPOSITORY_MARKERS)


def _reason(exc):
    """The marker that made a failure a retry, for the warning (helm's own words, short)."""
    text = failure_text(exc)
    for marker in UNREACHABLE_MARKERS + (PENDING_MARKER,):
        if marker in text:
            return marker
    return "no answer"


def warnings(retried):
    """One warning per helm call retried (``retried``: ``(what, why)`` per retry), saying how often."""
    counted = {}
    for what, why in retried:
        count, _why = counted.get(what, (0, why))
        counted[what] = (count + 1, why)
    return ["%s: the API server did not answer (%s); retried %d time(s) within the component's timeout" % (what, why, count)
            for what, (count, why) in sorted(counted.items())]


def retrying(runner, attempt, deadline, what, release=None, namespace=None, labels=None, gone_ok=False, reader=None):
    """``attempt(remaining)`` (one helm run, given the seconds left), run again while it fails because the API server did
    not answer and ``deadline`` (a ``runner.clock`` value; None: no retry) leaves time: the deadline bounds the retries,
    not a count. Pauses 1, 2, 4, 5, 5... s (``runner.sleep``) between attempts; before each, the run must still hold its
    Lease (``runner.release_client.holds``, when the client is lease-guarded). Each retry is recorded in ``runner.retried``.

    ``release``/``namespace``/``labels``: an upgrade's, so that a revision its own interrupted attempt left pending is
    cleared before the next one (``reader``: reads the release); ``gone_ok``: an uninstall whose retry finds no release
    any more has succeeded."""
    pause, retried = FIRST_PAUSE, False
    began = time.time()
    while True:
        remaining = None if deadline is None else deadline - runner.clock()
        try:
            return attempt(remaining)
        except AicrError as exc:
            text = failure_text(exc)
            if retried and gone_ok and "not found" in text:
                return ""
            own_pending = retried and release is not None and PENDING_MARKER in text
            if deadline is None or not (cluster_unreachable(exc) or own_pending):
                raise
            if own_pending and not clear_own_pending(runner.release_client, reader, release, namespace, labels, began):
                raise
            if deadline - runner.clock() < pause + MIN_REMAINING:
                raise
            with runner.retry_lock:
                runner.retried.append((what, _reason(exc)))
            runner.sleep(pause)
            cancel.check(what)
            holds = getattr(runner.release_client, "holds", None)
            if holds is not None:
                holds()  # the Lease was checked before the call: each attempt is a change of its own
            pause, retried = min(MAX_PAUSE, pause * 2), True


def clear_own_pending(client, reader, release, namespace, labels, began):
    """Delete the pending revision of ``release`` an earlier attempt of this call left (True: run helm again), or leave
    it (False: helm's refusal stands).

    Ours when it carries this upgrade's digest label and was recorded since the call began (``began``, this host's
    epoch seconds; the age is the API server's clock against its creationTimestamp: two durations, no clock compared
    with another): that attempt's helm has exited, nothing else finishes it, and the run holds the stack's Lease.
    Anything else pending is someone else's."""
    if client is None or reader is None:
        return False
    try:
        deployed = reader(client, release, namespace)
        digest = (labels or {}).get(DIGEST_LABEL)
        if deployed is None or not deployed.pending or not digest or deployed.digest != digest:
            return deployed is not None and not deployed.pending  # no longer pending: helm may go on
        age = deployed.age_seconds(client.server_time())
        if age is None or age > time.time() - began + 2:
            return False
        secret = client.get("v1", "Secret", deployed.secret_name, namespace)
        uid = ((secret or {}).get("metadata") or {}).get("uid")
        client.delete("v1", "Secret", deployed.secret_name, namespace, uid=uid)
    except ClusterError as exc:
        # the API server still does not answer: the next attempt is the retry, this is tried again after it
        return transient(exc)
    cancel.note("helm: cleared revision %s of %s/%s, left pending by an interrupted attempt of this run" % (deployed.revision, namespace, release))
    return True
