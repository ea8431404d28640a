# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The collection's one Kubernetes client: a small, dynamic REST client every engine uses.

It speaks plain JSON REST over ``kubernetes.client.ApiClient`` (auth, TLS, proxies and the identity come
from :func:`~.connection.resolve`) and finds resources by discovering only the group/version it is asked
about (``/api/v1``, ``/apis/<group>/<version>``), so a CRD installed by one component is usable by the next
without a full re-discovery. A resource whose path is known (the ClusterStack CRD's) is registered (:meth:`KubeClient.register`)
instead of discovered.

Reads and server-side applies are retried on 429, 5xx and connection errors; other writes only when the server
certainly did not act (429, a refused connection). Inside a ``retry_window`` (a component's step, a readiness wait)
they are retried until its deadline, with a backoff of 0.1 s doubling to 2 s: an API server restarting or paused for less
than the component's timeout is waited for. Outside one, about 1.5 s (``retries``) before the error is the caller's.
Every failure is a :class:`~.errors.ClusterError` (``NotServed`` for a kind the server does not serve).

**Every request is bounded by the deadline that governs it** (``_kube.deadline``: this thread's window, the client's own
``deadline`` - a whole run's -, else ``request_timeout`` for the call, retries included), connection included: each attempt
takes at most ``request_timeout`` of it (connect, TLS and answer together), a server that never answers fails the call
when it passes, naming it (``no answer within overall_timeout (30s)``), and nothing is sent once it has passed.

The object interface (``get``, ``list``, ``apply``, ``delete``, ``create``, ``replace``, ``is_namespaced``) is
also implemented by the unit tests' in-memory double. ``watch_until`` (a watch on one object) is optional:
``wait`` polls a client without it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import email.utils
import json
import re
import threading
import time

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import FIELD_MANAGER
from ansible_collections.aicr.runtime.plugins.module_utils._kube.deadline import Deadline, governing, labelled
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import (
    TRANSIENT_STATUS, ClusterError, NotServed, never_sent, request_target, status_message, transient, transport_error,
)

try:
    from urllib.parse import quote, urlencode
except ImportError:  # pragma: no cover - Python 2 is not supported by the collection
    from urllib import quote, urlencode  # type: ignore

USER_AGENT = "aicr-runtime/gated_release"
REQUEST_TIMEOUT = 30.0  # seconds one request may take (and one call, retries included, outside any deadline)

_URLLIB3 = []  # (urllib3's Timeout or None, whether a watch can be cut short), once imported


def _urllib3():
    """``(urllib3.util.Timeout or None, watches interruptible)``, imported with the first client (the kubernetes client
    requires urllib3; a module that never connects does not load it). urllib3 2.3 added ``HTTPResponse.shutdown``:
    another thread (SIGTERM's handler) can cut a watch short."""
    if not _URLLIB3:
        try:
            from urllib3.response import HTTPResponse  # pylint: disable=import-outside-toplevel
            from urllib3.util import Timeout  # pylint: disable=import-outside-toplevel
            _URLLIB3[:] = [Timeout, hasattr(HTTPResponse, "shutdown")]
        except ImportError:  # pragma: no cover - the kubernetes client requires urllib3
            _URLLIB3[:] = [None, False]
    return _URLLIB3


# Fields the server owns; never part of "did the object change?".
_VOLATILE_META = ("managedFields", "resourceVersion", "generation", "uid", "creationTimestamp", "selfLink")


def api_path(api_version):
    if "/" in api_version:
        return "/apis/%s" % api_version
    return "/api/%s" % api_version


def comparable(obj):
    """The object without server-owned metadata and status, for equality checks (live object vs dry-run apply)."""
    if obj is None:
        return None
    result = copy.deepcopy(obj)
    meta = result.get("metadata") or {}
    for key in _VOLATILE_META:
        meta.pop(key, None)
    annotations = meta.get("annotations") or {}
    annotations.pop("kubectl.kubernetes.io/last-applied-configuration", None)
    if not annotations:
        meta.pop("annotations", None)
    result.pop("status", None)
    return result


_UNREAD = object()  # KubeClient.server_version not read yet (None is an answer: unparsable)


def version_tuple(doc):
    """``(major, minor)`` of a ``/version`` answer (``{"major": "1", "minor": "27+"}``); None when it has no numbers."""
    try:
        return tuple(int(re.match(r"\d+", str((doc or {}).get(key) or "")).group(0)) for key in ("major", "minor"))
    except (AttributeError, TypeError, ValueError):
        return None


class KubeClient(object):
    """REST access to one cluster through a ``kubernetes.client.ApiClient``."""

    def __init__(self, api_client, request_timeout=None, retries=4, deadline=None, timeout_option=None):
        self.api_client = api_client
        # a watch this client opens ends at once on SIGTERM (_common.cancel.interruptible); without, callers keep watches short
        self.watches_interruptible = _urllib3()[1]
        self.request_timeout = float(request_timeout or REQUEST_TIMEOUT)
        self.timeout_option = timeout_option or "the API request timeout"  # the option that sets request_timeout, for messages
        self.retries = retries
        self.deadline = deadline  # a Deadline every request of this client meets (a whole run's), besides its thread's window
        self._resources = {}
        self._lock = threading.Lock()
        self._server_version = _UNREAD
        self.retried = 0  # requests this client sent again (every thread): what an outage cost, for tests and the bench

    # -- transport -------------------------------------------------------
    RETRY_STATUS = TRANSIENT_STATUS

    def request(self, method, path, query=None, body=None, content_type="application/json", attempts=None):
        """Like :meth:`request_once`; reads and server-side applies (idempotent) are retried on 429/5xx/connection errors,
        other writes on 429 and refused connections (:func:`~.errors.never_sent`). ``attempts``: at most that many tries;
        otherwise until the governing deadline (``retry_window``, the client's ``deadline``), or ``retries`` more tries
        within ``request_timeout`` outside one."""
        idempotent = method == "GET" or (method == "PATCH" and content_type == "application/apply-patch+yaml")
        deadline = governing(self.deadline)
        if deadline is None:
            deadline, attempts = self._call_deadline(), attempts or self.retries + 1
        attempt = 0
        while True:
            try:
                return self.request_once(method, path, query, body, content_type, deadline=deadline)
            except ClusterError as exc:
                attempt += 1
                pause = min(2.0, 0.1 * (2 ** min(attempt - 1, 5)))
                if not (transient(exc) if idempotent else never_sent(exc)) or cancel.requested():
                    raise
                if (attempts is not None and attempt >= attempts) or time.monotonic() + pause >= deadline.at:
                    raise
                with self._lock:
                    self.retried += 1
                cancel.pause(pause)  # SIGTERM ends the pause: the error is then the caller's (which stops)

    def _call_deadline(self):
        """Outside any deadline: one call, its retries included, is given ``request_timeout``."""
        return Deadline(self.request_timeout, labelled(self.timeout_option, self.request_timeout))

    def _headers(self):
        """JSON, our user agent, and the client's credentials (bearer token, refreshed by the kubernetes client)."""
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        for setting in self.api_client.configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    def _send(self, method, path, deadline, body=None, headers=None, preload=True, seconds=None):
        """One HTTP request, given what is left of ``deadline`` (at most ``seconds``, ``request_timeout`` by default): the
        response, or a ClusterError (status 0) when there was no answer - naming ``deadline`` when it is what ran out."""
        url = self.api_client.configuration.host + path
        seconds = self.request_timeout if seconds is None else seconds
        left = deadline.left() if deadline is not None else seconds
        where = "cluster: %s %s%s" % (method, self.api_client.configuration.host, path.split("?", 1)[0])
        if left <= 0:
            reason = "no answer within %s" % deadline
            raise ClusterError("%s not sent: %s has passed" % (where, deadline), status=0, reason=reason, deadline=str(deadline))
        limited = left < seconds
        timeout = min(seconds, left)
        try:
            return self.api_client.rest_client.pool_manager.request(
                method, url, body=body, headers=headers or self._headers(), timeout=_urllib3()[0](total=timeout) if _urllib3()[0] else timeout,
                preload_content=preload, retries=False)
        except Exception as exc:  # urllib3 errors: connection refused, TLS, timeouts
            reason = transport_error(exc)
            details = {}
            if reason == "timed out" and limited:
                reason, details = "no answer within %s" % deadline, {"deadline": str(deadline)}
            raise ClusterError("%s failed: %s" % (where, reason), status=0, reason=reason, error=str(exc)[:300], **details)

    def request_once(self, method, path, query=None, body=None, content_type="application/json", deadline=None):
        """Return the decoded JSON body; raise ClusterError on non-2xx. ``deadline``: the :class:`Deadline` it must meet
        (by default the governing one)."""
        headers = self._headers()
        payload = None
        if body is not None:
            headers["Content-Type"] = content_type
            payload = json.dumps(body) if not isinstance(body, str) else body
        if query:
            path += "?" + urlencode(query)
        response = self._send(method, path, deadline or governing(self.deadline), body=payload, headers=headers)
        text = response.data.decode("utf-8") if response.data else ""
        if response.status < 200 or response.status > 299:
            reason = status_message(response.status, text)
            path = path.split("?", 1)[0]
            target = request_target(method, path)
            raise ClusterError("cluster: %s %s returned %s: %s" % (method, path, response.status, reason), status=response.status, reason=reason,
                               **({"request": target} if target else {}))
        if not text:
            return {}
        try:
            return json.loads(text)
        except ValueError:
            raise ClusterError("cluster: %s %s returned a body that is not JSON" % (method, path.split("?", 1)[0]), status=response.status)

    # -- discovery ---------------------------------------------------------
    def _resource(self, api_version, kind):
        key = (api_version, kind)
        with self._lock:
            if key in self._resources:
                return self._resources[key]
        try:
            listing = self.request("GET", api_path(api_version))
        except ClusterError as exc:
            if exc.status == 404:
                raise NotServed("apiVersion %s is not served by the cluster (kind %s)" % (api_version, kind), status=404)
            raise
        found = {}
        for res in listing.get("resources") or []:
            if "/" in res.get("name", ""):
                continue
            found[(api_version, res.get("kind"))] = (res["name"], bool(res.get("namespaced")))
        with self._lock:
            self._resources.update(found)
            if key not in self._resources:
                raise NotServed("kind %s is not served by the cluster in apiVersion %s" % (kind, api_version), status=404)
            return self._resources[key]

    def register(self, api_version, kind, plural, namespaced):
        """Make a resource known without discovery (a CRD whose names the caller defines)."""
        with self._lock:
            self._resources[(api_version, kind)] = (plural, bool(namespaced))

    def is_namespaced(self, api_version, kind):
        return self._resource(api_version, kind)[1]

    def is_served(self, api_version, kind):
        """Whether the API server serves this apiVersion/kind now."""
        try:
            self._resource(api_version, kind)
        except NotServed:
            return False
        return True

    def forget(self, api_version, kind):
        with self._lock:
            self._resources.pop((api_version, kind), None)

    def _path(self, api_version, kind, namespace=None, name=None):
        plural, namespaced = self._resource(api_version, kind)
        path = api_path(api_version)
        if namespaced and namespace:
            path += "/namespaces/%s" % quote(namespace, safe="")
        path += "/" + plural
        if name:
            path += "/" + quote(name, safe=":@")
        return path, namespaced

    def server_version(self):
        """The API server's ``(major, minor)`` (``GET /version``; a provider's ``27+`` counts as 27), read once per client;
        None when it cannot be read or parsed."""
        if self._server_version is _UNREAD:
            try:
                self._server_version = version_tuple(self.get_path("/version"))
            except ClusterError:
                return None  # not kept: read again next time
        return self._server_version

    def server_time(self):
        """The API server's clock, epoch seconds (the ``Date`` header of ``GET /version``, whole seconds).

        Ages of objects (a pending helm revision's ``creationTimestamp``, a Lease's ``renewTime``) are measured with it:
        they were written by the server, or by other hosts whose clocks this host does not share.
        """
        response = self._send("GET", "/version", governing(self.deadline) or self._call_deadline())
        moment = None
        try:
            moment = email.utils.parsedate_to_datetime(response.headers.get("Date") or "")
        except (TypeError, ValueError, IndexError):
            moment = None
        if moment is None:
            raise ClusterError("cluster: the API server sent no Date header: its clock cannot be read", status=response.status)
        return moment.timestamp()

    # -- verbs -------------------------------------------------------------
    def get_path(self, path):
        """The JSON at ``path``, or None on 404."""
        try:
            return self.request("GET", path)
        except ClusterError as exc:
            if exc.status == 404:
                return None
            raise

    def get(self, api_version, kind, name, namespace=None):
        """The live object, or None when it does not exist (or its kind is not served)."""
        try:
            path = self._path(api_version, kind, namespace, name)[0]
            return self.request("GET", path)
        except NotServed:
            return None
        except ClusterError as exc:
            if exc.status == 404:
                return None
            raise

    def list(self, api_version, kind, namespace=None, label_selector=None, field_selector=None):
        try:
            path = self._path(api_version, kind, namespace)[0]
        except NotServed:
            return []
        query = dict((k, v) for k, v in (("labelSelector", label_selector), ("fieldSelector", field_selector)) if v) or None
        items = self.request("GET", path, query=query).get("items") or []
        for item in items:
            item.setdefault("apiVersion", api_version)
            item.setdefault("kind", kind)
        return items

    def apply(self, obj, dry_run=False, field_manager=FIELD_MANAGER):
        """Server-side apply (force conflicts), optionally as a dry run; returns the result."""
        meta = obj.get("metadata") or {}
        path = self._path(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta.get("name"))[0]
        query = {"fieldManager": field_manager, "force": "true"}
        if dry_run:
            query["dryRun"] = "All"
        return self.request("PATCH", path, query=query, body=obj, content_type="application/apply-patch+yaml")

    def delete(self, api_version, kind, name, namespace=None, uid=None, resource_version=None):
        """Delete (background propagation); True if something was deleted.

        ``uid`` / ``resource_version``: preconditions (the server refuses with 409 when the object is not that one any more).
        """
        try:
            path = self._path(api_version, kind, namespace, name)[0]
            body = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"}
            preconditions = dict((k, v) for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v)
            if preconditions:
                body["preconditions"] = preconditions
            self.request("DELETE", path, body=body)
            return True
        except NotServed:
            return False
        except ClusterError as exc:
            if exc.status == 404:
                return False
            raise

    def watch_until(self, api_version, kind, name, namespace, resource_version, timeout, done):
        """Watch one object from ``resource_version`` until ``done(obj)`` holds for an event, it is deleted, or ``timeout`` passes.

        Returns the object of the event for which ``done`` held; True when the watch was served and ended otherwise
        (deleted, timed out, closed by the server, 410 Gone, a dropped connection: the caller reads the object again
        with :meth:`get`, which costs one GET more, never a wrong answer); False when it could not be opened (kind not
        served, an error status, a network error): the caller then polls.
        """
        try:
            path = self._path(api_version, kind, namespace)[0]
        except ClusterError:
            return False
        bound = governing(self.deadline)
        if bound is not None:
            timeout = min(timeout, bound.left())
            if timeout <= 0:
                return False  # the work's deadline has passed: the caller reads (and fails) rather than watches
        query = {"watch": "true", "fieldSelector": "metadata.name=%s" % name, "resourceVersion": resource_version or "",
                 "allowWatchBookmarks": "true", "timeoutSeconds": str(max(1, int(timeout + 0.999)))}
        deadline = time.monotonic() + timeout
        response = None
        try:
            # the stream may stay silent up to the server's timeoutSeconds (bookmarks aside): a little more than that
            response = self._send("GET", path + "?" + urlencode(query), bound, preload=False, seconds=timeout + 5)
            if response.status != 200:
                return False
            # SIGTERM shuts the stream down: the watch ends at once (True: the caller reads again, and stops there)
            with cancel.interruptible(response.shutdown if _urllib3()[1] else (lambda: None)):
                buffered = b""
                # as the official client's watch does: with chunked transfer each chunk arrives as it is sent
                for chunk in response.stream(None, decode_content=False):
                    buffered += chunk
                    while b"\n" in buffered:
                        line, buffered = buffered.split(b"\n", 1)
                        if not line.strip():
                            continue
                        event = json.loads(line.decode("utf-8"))
                        if event.get("type") in ("DELETED", "ERROR"):
                            return True
                        if event.get("type") in ("ADDED", "MODIFIED") and done(event.get("object") or {}):
                            return event.get("object") or True
                    if time.monotonic() >= deadline:
                        return True
            return True
        except Exception:  # pylint: disable=broad-except  # any failure mid-watch: the caller reads the object again
            return response is not None and response.status == 200
        finally:
            if response is not None:
                # an unfinished watch stream cannot go back to the pool: close the connection
                response.close()
                response.release_conn()

    def create(self, obj):
        meta = obj.get("metadata") or {}
        path = self._path(obj["apiVersion"], obj["kind"], meta.get("namespace"))[0]
        return self.request("POST", path, body=obj)

    def replace(self, obj, subresource=None):
        """PUT the object (``subresource``: e.g. ``status``); optimistic concurrency through its ``resourceVersion``."""
        meta = obj.get("metadata") or {}
        path = self._path(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta.get("name"))[0]
        return self.request("PUT", path + ("/" + subresource if subresource else ""), body=obj)
