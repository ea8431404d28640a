# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Where ClusterStacks live: two stores with one shape.

Both give a stack as ``{metadata: {name, generation, annotations, resourceVersion}, spec, status}``:

* :class:`CrdStore`: ``runtime.aicr.io/v1alpha1`` ``ClusterStack`` objects; status goes through the
  ``/status`` subresource, so a status write never touches the spec and bumps no generation.
* :class:`ConfigMapStore`: without the CRD, a ConfigMap ``aicr-stack-<name>`` per stack holds the spec
  (from inventory), a generation that the store bumps when the spec changes, and the status as JSON.

Requests go through the collection's one client (``_kube.client.KubeClient``); the status writer is
``status.StatusWriter``, live progress ``live.LiveStatus``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import copy
import json

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import STACK_STORE_LABEL, managed_labels
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import STACK_CONFIGMAP_ROLE, ClusterError, binding_advice

GROUP = "runtime.aicr.io"
VERSION = "v1alpha1"
API_VERSION = "%s/%s" % (GROUP, VERSION)
PLURAL = "clusterstacks"
KIND = "ClusterStack"
CRD_NAME = "%s.%s" % (PLURAL, GROUP)
CONFIGMAP_PREFIX = "aicr-stack-"


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

    def __init__(self, client):
        self.client = client
        client.register(API_VERSION, KIND, PLURAL, namespaced=False)  # the CRD's names are ours: no discovery

    def list(self):
        try:
            items = self.client.list(API_VERSION, KIND)
        except ClusterError as exc:
            if exc.status == 404:
                raise AicrError("backend: crd is not usable; the ClusterStack CRD %s is not installed (install it or use backend=configmap)"
                                % CRD_NAME, field="backend")
            raise
        return sorted(items, key=lambda o: o["metadata"]["name"])

    def read(self, name):
        obj = self.client.get(API_VERSION, KIND, name)
        if obj is None:
            raise AicrError("name: ClusterStack %r not found; allowed: an existing ClusterStack" % name, field="name", value=name)
        return obj

    def write_status(self, obj, status):
        body = {"apiVersion": API_VERSION, "kind": KIND,
                "metadata": {"name": obj["metadata"]["name"], "resourceVersion": obj["metadata"]["resourceVersion"]}, "status": status}
        return self.client.replace(body, subresource="status")


class ConfigMapStore:
    """Stacks declared in inventory; each one's spec, generation and status in a ConfigMap."""

    backend = "configmap"

    def __init__(self, client, namespace="default", field="namespace"):
        self.client = client
        self.namespace = namespace
        self.field = field  # the option that named the namespace, for the message of a refusal

    @contextlib.contextmanager
    def _granted(self):
        """A 403 as one line that says which role to bind where: the ConfigMaps are aicr-runtime:stack-configmap's,
        bound in this namespace only (the ClusterRoles of the collection grant none cluster-wide)."""
        try:
            yield
        except ClusterError as exc:
            advice, rbac = binding_advice(exc, STACK_CONFIGMAP_ROLE, self.namespace)
            if not advice:
                raise
            raise AicrError("%s: this identity may not keep stacks in ConfigMaps of namespace %s; %s - %s" % (self.field, self.namespace, advice, exc.msg),
                            field=self.field, value=self.namespace, status=403, **rbac)

    def path(self, name=None):
        path = "/api/v1/namespaces/%s/configmaps" % self.namespace
        return path + "/" + CONFIGMAP_PREFIX + name if name else path

    @staticmethod
    def to_stack(cm):
        meta = cm.get("metadata") or {}
        data = cm.get("data") or {}
        try:
            where = "stack ConfigMap %s/%s" % (meta.get("namespace"), meta.get("name"))
            spec = bounded.load_json(data.get("spec") or "{}", where + " spec")
            status = bounded.load_json(data.get("status") or "{}", where + " status")
            generation = int(data.get("generation") or 1)
        except ValueError as exc:
            raise AicrError("ConfigMap %s/%s: data is not valid JSON (%s); allowed: spec and status as JSON, generation as an integer"
                            % (meta.get("namespace"), meta.get("name"), exc), field="configmap")
        name = (meta.get("labels") or {}).get(STACK_STORE_LABEL) or meta["name"][len(CONFIGMAP_PREFIX):]
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": meta.get("namespace"), "generation": generation,
                             "annotations": dict(meta.get("annotations") or {}), "resourceVersion": meta.get("resourceVersion"),
                             "creationTimestamp": meta.get("creationTimestamp"), "configMap": meta.get("name")},
                "spec": spec, "status": status}

    def list(self):
        with self._granted():
            items = self.client.request("GET", self.path(), query={"labelSelector": STACK_STORE_LABEL}).get("items") or []
        return sorted((self.to_stack(cm) for cm in items), key=lambda o: o["metadata"]["name"])

    def read(self, name):
        with self._granted():
            cm = self.client.get_path(self.path(name))
        if cm is None:
            raise AicrError("name: stack %r has no ConfigMap %s%s in namespace %s; allowed: a stack whose spec was ensured"
                            % (name, CONFIGMAP_PREFIX, name, self.namespace), field="name", value=name)
        return self.to_stack(cm)

    def _body(self, name, spec, status, generation, resource_version=None, annotations=None):
        labels = managed_labels()
        labels[STACK_STORE_LABEL] = name
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
        with self._granted():
            return self.to_stack(self.client.request("PUT", self.path(meta["name"]), body=body))

    def ensure_spec(self, name, spec, check_mode=False, retries=5):
        """Create the stack's ConfigMap or update its spec; the generation goes up when the spec changes.

        Returns (changed, stack before or None, stack after)."""
        with self._granted():
            return self._ensure_spec(name, spec, check_mode, retries)

    def _ensure_spec(self, name, spec, check_mode, retries):
        for _attempt in range(retries + 1):
            cm = self.client.get_path(self.path(name))
            if cm is None:
                after = self.to_stack(self._body(name, spec, {}, 1))
                if not check_mode:
                    try:
                        after = self.to_stack(self.client.request("POST", self.path(), body=self._body(name, spec, {}, 1)))
                    except ClusterError as exc:
                        if exc.status == 409:
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
                return True, before, self.to_stack(self.client.request("PUT", self.path(name), body=body))
            except ClusterError as exc:
                if exc.status != 409:
                    raise
        raise AicrError("stack %s: spec update kept conflicting after %d retries; allowed: retry the run" % (name, retries), field="spec")


def make_store(client, backend="crd", namespace="default", namespace_field="namespace"):
    """The store of ``backend``; ``namespace_field`` is the option that named ``namespace`` (for its messages)."""
    if backend == "crd":
        return CrdStore(client)
    if backend == "configmap":
        return ConfigMapStore(client, namespace, namespace_field)
    raise AicrError("backend: %r is not allowed; allowed: crd, configmap" % backend, field="backend", value=backend)
