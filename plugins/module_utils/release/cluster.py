# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A small, dynamic Kubernetes REST client: the only thing the release engine needs.

It speaks plain REST over ``kubernetes.client.ApiClient`` (auth, TLS, proxies come
from ``module_utils/kube.build_api_client``) and finds resources by discovering only
the group/version it is asked about (``/api/v1``, ``/apis/<group>/<version>``), so a
CRD installed by one component is usable by the next without a full re-discovery.

The same interface (``get``, ``list``, ``apply``, ``delete``, ``create``,
``replace``, ``is_namespaced``) is implemented by the in-memory fake the unit tests use.
``watch_until`` (a watch on one object) is optional: callers poll clusters without it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import threading
import time

from ansible_collections.aicr.runtime.plugins.module_utils.common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils.kube import status_message, transport_error

try:
    from urllib.parse import quote, urlencode
except ImportError:  # pragma: no cover - Python 2 is not supported by the collection
    from urllib import quote, urlencode  # type: ignore

FIELD_MANAGER = "aicr-runtime"
USER_AGENT = "aicr-runtime/gated_release"


class ClusterError(AicrError):
    """An API call failed; ``status`` is the HTTP status (0 when unreachable)."""

    def __init__(self, msg, status=0, **details):
        super(ClusterError, self).__init__(msg, status=status, **details)
        self.status = status


class NotServed(ClusterError):
    """The API server does not serve this apiVersion/kind (yet)."""


def api_path(api_version):
    if "/" in api_version:
        return "/apis/%s" % api_version
    return "/api/%s" % api_version


class KubeCluster(object):
    """REST access to one cluster through a ``kubernetes.client.ApiClient``."""

    def __init__(self, api_client, request_timeout=30, retries=4):
        self.api_client = api_client
        self.request_timeout = request_timeout
        self.retries = retries
        self._resources = {}
        self._lock = threading.Lock()

    # -- transport -------------------------------------------------------
    RETRY_STATUS = (0, 429, 500, 502, 503, 504)

    def request(self, method, path, query=None, body=None, content_type="application/json", attempts=None):
        """Like :meth:`request_once`; reads and server-side applies (idempotent) are retried on 429/5xx/connection errors."""
        idempotent = method == "GET" or (method == "PATCH" and content_type == "application/apply-patch+yaml")
        attempts = attempts or (self.retries + 1 if idempotent else 1)
        for attempt in range(attempts):
            try:
                return self.request_once(method, path, query, body, content_type)
            except ClusterError as exc:
                if exc.status not in self.RETRY_STATUS or attempt == attempts - 1:
                    raise
                time.sleep(min(2.0, 0.1 * (2 ** attempt)))
        raise ClusterError("cluster: %s %s failed" % (method, path))  # pragma: no cover - loop always returns or raises

    def _headers(self):
        """JSON, our user agent, and the client's credentials (bearer token, refreshed by the kubernetes client)."""
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        for setting in self.api_client.configuration.auth_settings().values():
            if setting.get("in") == "header" and setting.get("value"):
                headers[setting["key"]] = setting["value"]
        return headers

    def request_once(self, method, path, query=None, body=None, content_type="application/json"):
        """Return the decoded JSON body; raise ClusterError on non-2xx."""
        headers = self._headers()
        payload = None
        if body is not None:
            headers["Content-Type"] = content_type
            payload = json.dumps(body) if not isinstance(body, str) else body
        url = self.api_client.configuration.host + path
        if query:
            url += "?" + urlencode(query)
        try:
            response = self.api_client.rest_client.pool_manager.request(
                method, url, body=payload, headers=headers, timeout=self.request_timeout, preload_content=True, retries=False
            )
        except Exception as exc:  # urllib3 errors: connection refused, TLS, timeouts
            raise ClusterError("cluster: %s %s%s failed: %s" % (method, self.api_client.configuration.host, path, transport_error(exc)), status=0,
                               reason=str(exc)[:300])
        text = response.data.decode("utf-8") if response.data else ""
        if response.status < 200 or response.status > 299:
            raise ClusterError("cluster: %s %s returned %s: %s" % (method, path, response.status, status_message(response.status, text)),
                               status=response.status)
        if not text:
            return {}
        try:
            return json.loads(text)
        except ValueError:
            raise ClusterError("cluster: %s %s returned a body that is not JSON" % (method, path), status=response.status)

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

    def is_namespaced(self, api_version, kind):
        return self._resource(api_version, kind)[1]

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

    # -- verbs -------------------------------------------------------------
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

    def list(self, api_version, kind, namespace=None, label_selector=None):
        try:
            path = self._path(api_version, kind, namespace)[0]
        except NotServed:
            return []
        query = {"labelSelector": label_selector} if label_selector else None
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

    def delete(self, api_version, kind, name, namespace=None):
        """Delete (background propagation); True if something was deleted."""
        try:
            path = self._path(api_version, kind, namespace, name)[0]
            self.request("DELETE", path, body={"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Background"})
            return True
        except NotServed:
            return False
        except ClusterError as exc:
            if exc.status == 404:
                return False
            raise

    def watch_until(self, api_version, kind, name, namespace, resource_version, timeout, done):
        """Watch one object from ``resource_version`` until ``done(obj)`` holds for an event, it is deleted, or ``timeout`` passes.

        Returns True when the watch was served (whatever ended it), False when it could not be opened
        (kind not served, an error status, a network error): the caller then polls. The caller reads
        the object again with :meth:`get` afterwards, so a watch that ends early (the server closes
        it, 410 Gone, a dropped connection) costs one more GET, never a wrong answer.
        """
        try:
            path = self._path(api_version, kind, namespace)[0]
        except ClusterError:
            return False
        query = {"watch": "true", "fieldSelector": "metadata.name=%s" % name, "resourceVersion": resource_version or "",
                 "allowWatchBookmarks": "true", "timeoutSeconds": str(max(1, int(timeout + 0.999)))}
        headers = self._headers()
        url = self.api_client.configuration.host + path + "?" + urlencode(query)
        deadline = time.monotonic() + timeout
        response = None
        try:
            response = self.api_client.rest_client.pool_manager.request(
                "GET", url, headers=headers, timeout=timeout + 5, preload_content=False, retries=False)
            if response.status != 200:
                return False
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
                        return True
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

    def replace(self, obj):
        meta = obj.get("metadata") or {}
        path = self._path(obj["apiVersion"], obj["kind"], meta.get("namespace"), meta.get("name"))[0]
        return self.request("PUT", path, body=obj)
