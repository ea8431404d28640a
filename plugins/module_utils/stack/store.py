# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Where ClusterStacks live and how their status is written.

Two stores with one shape (``{metadata: {name, generation, annotations, resourceVersion}, spec, status}``):

* ``CrdStore``: ``runtime.aicr.io/v1alpha1`` ``ClusterStack`` objects; status goes through the
  ``/status`` subresource, so a status write never touches the spec and bumps no generation.
* ``ConfigMapStore``: without the CRD, a ConfigMap ``aicr-stack-<name>`` per stack holds the spec
  (from inventory), a generation that the store bumps when the spec changes, and the status as JSON.

``StatusWriter.update`` reads, applies a status mutation and writes with the read resourceVersion; on
409 Conflict (someone edited the object meanwhile, e.g. the spec) it re-reads and re-applies only the
status mutation, up to ``retries`` times. A mutation that changes nothing writes nothing.

``LiveStatus`` is the release engine's ``on_transition`` hook for live per-component progress: it
records each transition (cheap, never raises) and a background thread writes the latest phase of every
component that moved, at most once per ``interval`` seconds, plus a final flush on ``close()``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import threading
import time

from ansible_collections.aicr.runtime.plugins.module_utils.common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils.release.cluster import ClusterError, KubeCluster
from ansible_collections.aicr.runtime.plugins.module_utils.stack import model

GROUP = "runtime.aicr.io"
VERSION = "v1alpha1"
PLURAL = "clusterstacks"
KIND = "ClusterStack"
CRD_NAME = "%s.%s" % (PLURAL, GROUP)
CONFIGMAP_PREFIX = "aicr-stack-"
MANAGED_BY = {"app.kubernetes.io/managed-by": "aicr-runtime"}


class KubeError(AicrError):
    """An API error with its HTTP code."""

    def __init__(self, msg, code=0, **details):
        super(KubeError, self).__init__(msg, code=code, **details)
        self.code = code


class Api:
    """JSON requests through a kubernetes ``ApiClient`` (auth and TLS from the kubeconfig; the release engine's transport)."""

    def __init__(self, api_client, request_timeout=30):
        self.cluster = KubeCluster(api_client, request_timeout=request_timeout)

    def request(self, method, path, body=None, query=None):
        try:
            return self.cluster.request(method, path, query=query, body=body)
        except ClusterError as exc:
            raise KubeError(exc.msg, code=exc.details.get("status") or 0, path=path)

    def get(self, path):
        """The object at ``path``, or None on 404."""
        try:
            return self.request("GET", path)
        except KubeError as exc:
            if exc.code == 404:
                return None
            raise


def stack_path(name=None, status=False):
    path = "/apis/%s/%s/%s" % (GROUP, VERSION, PLURAL)
    if name:
        path += "/" + name
    if status:
        path += "/status"
    return path


class CrdStore:
    """ClusterStack custom resources."""

    backend = "crd"

    def __init__(self, api):
        self.api = api

    def list(self):
        try:
            items = self.api.request("GET", stack_path()).get("items") or []
        except KubeError as exc:
            if exc.code == 404:
                raise AicrError("backend: crd is not usable; the ClusterStack CRD %s is not installed (install it or use backend=configmap)"
                                % CRD_NAME, field="backend")
            raise
        return sorted(items, key=lambda o: o["metadata"]["name"])

    def read(self, name):
        obj = self.api.get(stack_path(name))
        if obj is None:
            raise AicrError("name: ClusterStack %r not found; allowed: an existing ClusterStack" % name, field="name", value=name)
        return obj

    def write_status(self, obj, status):
        body = {"apiVersion": "%s/%s" % (GROUP, VERSION), "kind": KIND,
                "metadata": {"name": obj["metadata"]["name"], "resourceVersion": obj["metadata"]["resourceVersion"]}, "status": status}
        return self.api.request("PUT", stack_path(obj["metadata"]["name"], status=True), body=body)


class ConfigMapStore:
    """Stacks declared in inventory; each one's spec, generation and status in a ConfigMap."""

    backend = "configmap"

    def __init__(self, api, namespace="default"):
        self.api = api
        self.namespace = namespace

    def path(self, name=None):
        path = "/api/v1/namespaces/%s/configmaps" % self.namespace
        return path + "/" + CONFIGMAP_PREFIX + name if name else path

    @staticmethod
    def to_stack(cm):
        meta = cm.get("metadata") or {}
        data = cm.get("data") or {}
        try:
            spec = json.loads(data.get("spec") or "{}")
            status = json.loads(data.get("status") or "{}")
            generation = int(data.get("generation") or 1)
        except ValueError as exc:
            raise AicrError("ConfigMap %s/%s: data is not valid JSON (%s); allowed: spec and status as JSON, generation as an integer"
                            % (meta.get("namespace"), meta.get("name"), exc), field="configmap")
        name = (meta.get("labels") or {}).get("runtime.aicr.io/stack") or meta["name"][len(CONFIGMAP_PREFIX):]
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": meta.get("namespace"), "generation": generation,
                             "annotations": dict(meta.get("annotations") or {}), "resourceVersion": meta.get("resourceVersion"),
                             "creationTimestamp": meta.get("creationTimestamp"), "configMap": meta.get("name")},
                "spec": spec, "status": status}

    def list(self):
        items = self.api.request("GET", self.path(), query={"labelSelector": "runtime.aicr.io/stack"}).get("items") or []
        return sorted((self.to_stack(cm) for cm in items), key=lambda o: o["metadata"]["name"])

    def read(self, name):
        cm = self.api.get(self.path(name))
        if cm is None:
            raise AicrError("name: stack %r has no ConfigMap %s%s in namespace %s; allowed: a stack whose spec was ensured"
                            % (name, CONFIGMAP_PREFIX, name, self.namespace), field="name", value=name)
        return self.to_stack(cm)

    def _body(self, name, spec, status, generation, resource_version=None, annotations=None):
        labels = dict(MANAGED_BY)
        labels["runtime.aicr.io/stack"] = name
        meta = {"name": CONFIGMAP_PREFIX + name, "namespace": self.namespace, "labels": labels}
        if annotations:
            meta["annotations"] = annotations
        if resource_version:
            meta["resourceVersion"] = resource_version
        return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta,
                "data": {"spec": json.dumps(spec, sort_keys=True), "status": json.dumps(status, sort_keys=True),
                         "generation": str(generation)}}

    def write_status(self, obj, status):
        meta = obj["metadata"]
        body = self._body(meta["name"], obj.get("spec") or {}, status, meta.get("generation") or 1, meta.get("resourceVersion"),
                          meta.get("annotations"))
        return self.to_stack(self.api.request("PUT", self.path(meta["name"]), body=body))

    def ensure_spec(self, name, spec, check_mode=False, retries=5):
        """Create the stack's ConfigMap or update its spec; the generation goes up when the spec changes.

        Returns (changed, stack before or None, stack after)."""
        for _attempt in range(retries + 1):
            cm = self.api.get(self.path(name))
            if cm is None:
                after = self.to_stack(self._body(name, spec, {}, 1))
                if not check_mode:
                    try:
                        after = self.to_stack(self.api.request("POST", self.path(), body=self._body(name, spec, {}, 1)))
                    except KubeError as exc:
                        if exc.code == 409:
                            continue
                        raise
                return True, None, after
            before = self.to_stack(cm)
            if before["spec"] == spec:
                return False, before, before
            after = copy.deepcopy(before)
            after["spec"] = spec
            after["metadata"]["generation"] = before["metadata"]["generation"] + 1
            if check_mode:
                return True, before, after
            body = self._body(name, spec, before["status"], after["metadata"]["generation"], before["metadata"]["resourceVersion"],
                              before["metadata"]["annotations"])
            try:
                return True, before, self.to_stack(self.api.request("PUT", self.path(name), body=body))
            except KubeError as exc:
                if exc.code != 409:
                    raise
        raise AicrError("stack %s: spec update kept conflicting after %d retries; allowed: retry the run" % (name, retries), field="spec")


class StatusWriter:
    """Read-modify-write of one stack's status with 409 retries; also the per-component transition hook."""

    def __init__(self, store, name, retries=8, check_mode=False, now=None, sleep=time.sleep):
        self.store = store
        self.name = name
        self.retries = retries
        self.check_mode = check_mode
        self.now = now or model.utcnow
        self.sleep = sleep
        self.conflicts = 0
        self.writes = 0

    def update(self, mutate):
        """Apply ``mutate(status, obj) -> new status``; returns (before obj, after obj, changed).

        On 409 the object is re-read and ``mutate`` re-applied to the fresh status, so concurrent
        spec edits survive and only the status fields this call sets are written."""
        for attempt in range(self.retries + 1):
            obj = self.store.read(self.name)
            status = obj.get("status") or {}
            new_status = mutate(copy.deepcopy(status), obj)
            if new_status == status:
                return obj, obj, False
            if self.check_mode:
                after = copy.deepcopy(obj)
                after["status"] = new_status
                return obj, after, True
            try:
                written = self.store.write_status(obj, new_status)
            except KubeError as exc:
                if exc.code != 409:
                    raise
                self.conflicts += 1
                if attempt < self.retries:
                    self.sleep(min(0.05 * (attempt + 1), 0.5))
                continue
            self.writes += 1
            return obj, written, True
        raise AicrError("stack %s: status write kept conflicting after %d retries; allowed: retry the run" % (self.name, self.retries),
                        field="status")

    def apply(self, update):
        """Apply a status ``update`` (see model.apply_update); returns (before, after, changed, events)."""
        recorded = []

        def mutate(status, obj):
            new, events = model.apply_update(status, update, now=self.now(), generation=(obj.get("metadata") or {}).get("generation"))
            del recorded[:]
            recorded.extend(events)
            return new

        before, after, changed = self.update(mutate)
        return before, after, changed, recorded if changed else []

    def on_component_transition(self, component_result):
        """Hook for the release engine: record one component's new phase (a gated_release component result)."""
        return self.apply_components([component_result])

    def apply_components(self, component_results):
        """Merge gated_release component results into ``status.components`` (one read-modify-write).

        ``Deploying`` and ``Unchanged`` results of a component whose release is not being changed (``action: unchanged``)
        while the status already shows it Ready are left out: that is the engine verifying readiness, not a rollout, so a
        no-op run keeps the status (history, messages, transition times) untouched. Returns (before, after, changed, events).
        """
        results = list(component_results)
        recorded = []

        def mutate(status, obj):
            current = dict((c.get("name"), c) for c in status.get("components") or [])
            keep = [r for r in results
                    if not (r.get("phase") in ("Deploying", "Unchanged") and (r.get("action") or "unchanged") == "unchanged"
                            and (current.get(r.get("name")) or {}).get("phase") == "Ready")]
            del recorded[:]
            if not keep:
                return status
            new, events = model.apply_update(status, {"components": keep}, now=self.now(), generation=(obj.get("metadata") or {}).get("generation"))
            recorded.extend(events)
            return new

        before, after, changed = self.update(mutate)
        return before, after, changed, recorded if changed else []

    def apply_device_transitions(self, transitions):
        """Merge fabric_device transitions (``event`` C(attached) or C(detached) plus the device result, tagged with node)
        into ``status.devices`` (one read-modify-write), with a ``DeviceAttached``/``DeviceDetached`` history event each.

        An attach already listed (same ``resUUID``) and a detach of a device not listed change nothing, so
        replaying transitions is harmless. Returns (before, after, changed, events).
        """
        results = list(transitions)
        recorded = []

        def mutate(status, obj):
            devices = list(status.get("devices") or [])
            events = []
            for item in results:
                entry = model.device_entry(item)
                ids = set(i for i in (entry["resUUID"], entry["serial"]) if i)
                listed = [d for d in devices if ids & set(i for i in (d.get("resUUID"), d.get("serial")) if i)]
                what = "%s %s %s %s (%s)" % (entry["node"] or item.get("machine") or "?", entry["type"], entry["model"], entry["serial"] or "-",
                                             entry["resUUID"] or "-")
                if item.get("event") == "attached" and not listed:
                    devices.append(entry)
                    events.append({"type": "DeviceAttached", "message": "attached " + what})
                elif item.get("event") == "detached" and listed:
                    devices = [d for d in devices if d not in listed]
                    events.append({"type": "DeviceDetached", "message": "detached " + what})
            del recorded[:]
            if not events:
                return status
            new, applied = model.apply_update(status, {"devices": devices, "events": events}, now=self.now(),
                                              generation=(obj.get("metadata") or {}).get("generation"))
            recorded.extend(applied)
            return new

        before, after, changed = self.update(mutate)
        return before, after, changed, recorded if changed else []


class LiveStatus:
    """Coalescing ``on_transition`` hook: component transitions reach the status at most every ``interval`` seconds.

    Results are keyed by ``key`` (the latest per key is written) and written with ``apply`` (default
    ``writer.apply_components``; ``writer.apply_device_transitions`` with ``key="res_uuid"`` for devices).

    ``on_transition(result)`` only records the component's latest result and wakes the writer thread, so it
    is safe and quick to call from the scheduler threads. The thread writes the first transition at once,
    then whatever accumulated once ``interval`` has passed since the last write; ``close()`` writes what is
    left and stops it. A failed write is retried with the next batch; after ``max_failures`` failures in a
    row live status is given up (a warning says why) and the rollout is never affected.
    """

    def __init__(self, writer, interval=0.5, max_failures=3, clock=time.monotonic, apply=None, key="name"):
        self.writer = writer
        self.apply = apply or writer.apply_components
        self.key = key
        self.interval = float(interval)
        self.max_failures = max_failures
        self.clock = clock
        self.transitions = 0
        self.writes = 0
        self.batches = 0
        self.warnings = []
        self._pending = {}
        self._order = []
        self._cond = threading.Condition()
        self._closed = False
        self._disabled = False
        self._failures = 0
        self._last_write = None
        self._thread = threading.Thread(target=self._loop, name="aicr-live-status-%s" % writer.name)
        self._thread.daemon = True
        self._thread.start()

    def on_transition(self, component_result):
        """Record a component's new phase (a gated_release component result); never raises, never blocks on I/O."""
        name = (component_result or {}).get(self.key)
        if not name:
            return
        with self._cond:
            if self._closed or self._disabled:
                return
            self.transitions += 1
            if name not in self._pending:
                self._order.append(name)
            self._pending[name] = copy.deepcopy(component_result)
            self._cond.notify_all()

    def _take(self):
        batch = [self._pending[n] for n in self._order]
        self._pending = {}
        self._order = []
        return batch

    def _loop(self):
        while True:
            with self._cond:
                while not self._pending and not self._closed:
                    self._cond.wait()
                if not self._pending:
                    return
                if not self._closed and self._last_write is not None:
                    wait = self._last_write + self.interval - self.clock()
                    if wait > 0:
                        self._cond.wait(wait)
                        continue
                batch = self._take()
            self._write(batch)

    def _write(self, batch):
        try:
            _before, _after, changed, _events = self.apply(batch)
        except Exception as exc:  # pylint: disable=broad-except  # live status must never break the rollout
            msg = exc.msg if isinstance(exc, AicrError) else "%s: %s" % (exc.__class__.__name__, exc)
            with self._cond:
                self._failures += 1
                self._last_write = self.clock()
                for result in batch:  # retry with the next batch unless a newer result arrived meanwhile
                    if result[self.key] not in self._pending:
                        self._order.append(result[self.key])
                        self._pending[result[self.key]] = result
                if self._failures >= self.max_failures:
                    self._disabled = True
                    self._pending, self._order = {}, []
                    self._warn("live status of stack %s given up after %d failed writes: %s" % (self.writer.name, self._failures, msg[:300]))
                else:
                    self._warn("live status of stack %s: a write failed (retried): %s" % (self.writer.name, msg[:300]))
            return
        with self._cond:
            self._failures = 0
            self._last_write = self.clock()
            self.batches += 1
            if changed:
                self.writes += 1

    def _warn(self, text):
        if text not in self.warnings and len(self.warnings) < 5:
            self.warnings.append(text)

    def close(self, timeout=120):
        """Write what is pending and stop the thread; returns a summary (transitions, writes, conflicts, warnings)."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)
        if self._thread.is_alive():
            self._warn("live status of stack %s: the last write did not finish within %ss" % (self.writer.name, timeout))
        return self.summary()

    def summary(self):
        return {"stack": self.writer.name, "backend": self.writer.store.backend, "transitions": self.transitions, "writes": self.writes,
                "conflicts": self.writer.conflicts, "warnings": list(self.warnings)}


def live_status(api, name, backend="crd", namespace="default", interval=0.5, devices=False):
    """A started ``LiveStatus`` for stack ``name``, or (None, warning) when the stack cannot be read.

    ``devices``: a hook for fabric_device transitions (``status.devices``, keyed by the device's fabric id)
    instead of gated_release component results (``status.components``)."""
    writer = StatusWriter(make_store(api, backend, namespace), name)
    try:
        writer.store.read(name)
    except AicrError as exc:
        return None, "status_stack: live status disabled: %s" % exc.msg
    if devices:
        return LiveStatus(writer, interval=interval, apply=writer.apply_device_transitions, key="res_uuid"), None
    return LiveStatus(writer, interval=interval), None


def make_store(api, backend="crd", namespace="default"):
    if backend == "crd":
        return CrdStore(api)
    if backend == "configmap":
        return ConfigMapStore(api, namespace)
    raise AicrError("backend: %r is not allowed; allowed: crd, configmap" % backend, field="backend", value=backend)


def ensure_crd(api, crd, check_mode=False, timeout=30.0):
    """Install or update the ClusterStack CRD and wait until it is Established; returns (changed, action)."""
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    current = api.get(path + "/" + crd["metadata"]["name"])
    if current is not None and current.get("spec", {}).get("versions") == crd["spec"]["versions"] \
            and current.get("spec", {}).get("names", {}).get("kind") == crd["spec"]["names"]["kind"]:
        return False, "CRD %s unchanged" % crd["metadata"]["name"]
    action = "%s CRD %s" % ("create" if current is None else "update", crd["metadata"]["name"])
    if check_mode:
        return True, "would " + action
    if current is None:
        api.request("POST", path, body=crd)
    else:
        body = copy.deepcopy(crd)
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        api.request("PUT", path + "/" + crd["metadata"]["name"], body=body)
    deadline = time.time() + timeout
    while time.time() < deadline:
        obj = api.get(path + "/" + crd["metadata"]["name"]) or {}
        if any(c.get("type") == "Established" and c.get("status") == "True" for c in (obj.get("status") or {}).get("conditions") or []):
            return True, action
        time.sleep(0.1)
    raise AicrError("CRD %s: not Established after %ss; allowed: a cluster that accepts the CRD" % (crd["metadata"]["name"], timeout),
                    field="crd")
