"""Shared helpers of the kube emulator tests (imported by the test modules beside it)."""

import json
import time
import urllib.error
import urllib.request

from kubernetes import client, config


def api_client(handle):
    return config.new_client_from_config(handle.kubeconfig)


def raw(handle, method, path, body=None, content_type="application/json", headers=None, token=True):
    """A raw HTTP call: (status, headers, parsed JSON or bytes)."""
    data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
    hdrs = {"Content-Type": content_type}
    if token:
        hdrs["Authorization"] = "Bearer " + handle.token
    hdrs.update(headers or {})
    req = urllib.request.Request(handle.url + path, data=data, method=method, headers=hdrs)
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            payload = resp.read()
            status, resp_headers = resp.status, resp.headers
    except urllib.error.HTTPError as exc:
        payload = exc.read()
        status, resp_headers = exc.code, exc.headers
    try:
        return status, resp_headers, json.loads(payload)
    except ValueError:
        return status, resp_headers, payload


def wait_for(predicate, timeout=15.0, interval=0.05):
    """Poll until predicate() is truthy; returns its value or raises AssertionError."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = predicate()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError("condition not met within %ss (last value %r)" % (timeout, last))


def wait_until(fetch, check, timeout=15.0, interval=0.05):
    """Poll ``fetch()`` until ``check(value)`` is truthy; returns the value."""
    deadline = time.time() + timeout
    value = None
    while time.time() < deadline:
        value = fetch()
        if check(value):
            return value
        time.sleep(interval)
    raise AssertionError("condition not met within %ss (last value %r)" % (timeout, value))


def deployment(name, replicas=1, annotations=None, labels=None, image="nginx:1.25"):
    labels = labels or {"app": name}
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "annotations": annotations or {}},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels},
                                  "spec": {"containers": [{"name": "main", "image": image}]}}}}


def error_body(exc):
    return json.loads(exc.body)


__all__ = ["client", "api_client", "raw", "wait_for", "wait_until", "deployment", "error_body"]
