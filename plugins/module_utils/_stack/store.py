# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Where ClusterStacks live: two stores with one shape.

Both give a stack as ``{metadata: {name, generation, annotations, resourceVersion}, spec, status}``:

* :class:`CrdStore`: ``runtime.aicr.io/v1alpha1`` ``ClusterStack`` objects; status goes through the
  ``/status`` subresource, so a status write never touches the spec and bumps no generation.
* :class:`ConfigMapStore`: without the CRD, a ConfigMap ``aicr-stack-<name>`` per stack (namespace ``aicr-system`` unless
  given) holds the spec (from inventory), a generation that the store bumps when the spec changes, and the status as JSON.

Which ConfigMap is a stack (labels are data anyone who may write a ConfigMap there can set, so a label alone proves
nothing): the stack's name is the ConfigMap's name after ``aicr-stack-`` (a valid stack name), its
``runtime.aicr.io/stack`` label must say the same, and ``aicr-runtime`` must be among its field managers - the store
writes every one of them with that field manager (:data:`FIELD_MANAGER`), users declare stacks through it (inventory ->
stack_status ``spec``) rather than with kubectl. Any other labelled ConfigMap is a *foreign claim*: listed in
:attr:`ConfigMapStore.foreign_claims` (a warning starting ``foreign claim:``), never read as a stack. Two ConfigMaps with
the collection's field manager that both claim one stack (by name or by label) refuse that stack
(:attr:`ConfigMapStore.refused`): which one is the stack's cannot be told apart. The field manager is a check, not an
authentication (anyone may send ``fieldManager=aicr-runtime``): the store's namespace is the boundary - only the
reconciler's identity may write ConfigMaps in it (``aicr-system`` by default, never a tenant's namespace).

Requests go through the collection's one client (``_kube.client.KubeClient``); the status writer is
``status.StatusWriter``, live progress ``live.LiveStatus``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import copy
import json

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded
from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import (
    FIELD_MANAGER, STACK_NAME_ALLOWED, STACK_NAMESPACE, STACK_STORE_LABEL, check_stack_name, managed_labels, stack_name_problem,
)
from ansible_collections.aicr.runtime.plugins.module_utils._common.claims import foreign_claim, not_ours, written_by_us
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import STACK_CONFIGMAP_ROLE, ClusterError, binding_advice

GROUP = "runtime.aicr.io"
VERSION = "v1alpha1"
API_VERSION = "%s/%s" % (GROUP, VERSION)
PLURAL = "clusterstacks"
KIND = "ClusterStack"
CRD_NAME = "%s.%s" % (PLURAL, GROUP)
CONFIGMAP_PREFIX = "aicr-stack-"
WRITE_QUERY = {"fieldManager": FIELD_MANAGER}  # what makes a stack's ConfigMap the collection's (see the module docstring)


def configmap_name(stack):
    """``aicr-stack-<stack>``: at most 74 characters (a ConfigMap name may have 253), so never cut - the stack's name is
    the rest of the ConfigMap's name, and two stacks never share one."""
    return CONFIGMAP_PREFIX + stack


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
        self.foreign_claims = []  # a ClusterStack is only ever its own: none
        self.refused = {}  # of the last list(): stack name -> one-line message (a ClusterStack whose name is no stack name)
        client.register(API_VERSION, KIND, PLURAL, namespaced=False)  # the CRD's names are ours: no discovery

    def list(self):
        try:
            items = self.client.list(API_VERSION, KIND)
        except ClusterError as exc:
            if exc.status == 404:
                raise AicrError("backend: crd is not usable; the ClusterStack CRD %s is not installed (install it or use backend=configmap)"
                                % CRD_NAME, field="backend")
            raise
        # an object name may have dots (a DNS subdomain), a stack name may not: such a ClusterStack is refused, not folded
        self.refused = {}
        for obj in items:
            name = obj["metadata"]["name"]
            problem = stack_name_problem(name)
            if problem is not None:
                self.refused[name] = "stack %s: refused, ClusterStack name %r %s; allowed: %s" % (name, name, problem, STACK_NAME_ALLOWED)
        return sorted((o for o in items if o["metadata"]["name"] not in self.refused), key=lambda o: o["metadata"]["name"])

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
    """Stacks declared in inventory; each one's spec, generation and status in a ConfigMap (which one: the module docstring)."""

    backend = "configmap"

    def __init__(self, client, namespace=STACK_NAMESPACE, field="namespace"):
        self.client = client
        self.namespace = namespace
        self.field = field  # the option that named the namespace, for the message of a refusal
        self.foreign_claims = []  # of the last list(): foreign_claim() dicts
        self.refused = {}  # of the last list(): stack name -> one-line message

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
        return path + "/" + configmap_name(name) if name else path

    @staticmethod
    def problem(cm):
        """Why ``cm`` is not a stack's ConfigMap (None when it is): its name, its label, its field managers."""
        meta = cm.get("metadata") or {}
        name = meta.get("name") or ""
        label = (meta.get("labels") or {}).get(STACK_STORE_LABEL)
        stack = name[len(CONFIGMAP_PREFIX):] if name.startswith(CONFIGMAP_PREFIX) else None
        if stack is None or stack_name_problem(stack) is not None:
            return "is not named %s<stack name> (a DNS-1123 label)" % CONFIGMAP_PREFIX
        if label != stack:
            return "has the label %s=%s, which is not its name's stack %s" % (STACK_STORE_LABEL, label, stack)
        return not_ours(cm)

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
        # the stack is the ConfigMap's name, never its label (a label is anyone's to set)
        name = meta["name"][len(CONFIGMAP_PREFIX):]
        return {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": name, "namespace": meta.get("namespace"), "generation": generation,
                             "annotations": dict(meta.get("annotations") or {}), "resourceVersion": meta.get("resourceVersion"),
                             "creationTimestamp": meta.get("creationTimestamp"), "configMap": meta.get("name")},
                "spec": spec, "status": status}

    def list(self):
        """The stacks of the namespace, by name; foreign claims (``foreign_claims``) and refused stacks (``refused``) left out."""
        with self._granted():
            items = self.client.request("GET", self.path(), query={"labelSelector": STACK_STORE_LABEL}).get("items") or []
        trusted, claimed, foreign = {}, {}, []
        for cm in sorted(items, key=lambda o: (o.get("metadata") or {}).get("name") or ""):
            meta = cm.get("metadata") or {}
            label = (meta.get("labels") or {}).get(STACK_STORE_LABEL) or ""
            problem = self.problem(cm)
            if problem is None:
                trusted[meta["name"][len(CONFIGMAP_PREFIX):]] = cm
            else:
                foreign.append(foreign_claim("ConfigMap", cm, label, problem))
            if written_by_us(cm):
                named = meta["name"][len(CONFIGMAP_PREFIX):] if meta["name"].startswith(CONFIGMAP_PREFIX) else None
                for stack in set(s for s in (named, label) if s):
                    claimed.setdefault(stack, []).append(meta["name"])
        refused = {}
        for stack, names in claimed.items():
            if len(names) > 1:
                trusted.pop(stack, None)
                refused[stack] = ("stack %s: refused, %d ConfigMaps of namespace %s claim it with field manager %s: %s; allowed: one, %s - "
                                  "delete the other" % (stack, len(names), self.namespace, FIELD_MANAGER, ", ".join(sorted(names)),
                                                        configmap_name(stack)))
        self.foreign_claims, self.refused = foreign, refused
        return [self.to_stack(trusted[name]) for name in sorted(trusted)]

    def _trusted(self, name, cm):
        """``cm`` as the stack ``name`` (None stays None); a foreign claim at the stack's own name is refused, never used."""
        if cm is not None:
            problem = self.problem(cm)
            if problem is not None:
                claim = foreign_claim("ConfigMap", cm, name, problem)
                raise AicrError("name: stack %s: %s; allowed: a ConfigMap the collection wrote (stack_status spec=...) - delete this one"
                                % (name, claim["message"]), field="name", value=name, foreign_claims=[claim])
        return cm

    def read(self, name):
        check_stack_name("name", name)
        with self._granted():
            cm = self._trusted(name, self.client.get_path(self.path(name)))
        if cm is None:
            raise AicrError("name: stack %r has no ConfigMap %s in namespace %s; allowed: a stack whose spec was ensured"
                            % (name, configmap_name(name), self.namespace), field="name", value=name)
        return self.to_stack(cm)

    def _body(self, name, spec, status, generation, resource_version=None, annotations=None):
        labels = managed_labels()
        labels[STACK_STORE_LABEL] = name
        meta = {"name": configmap_name(name), "namespace": self.namespace, "labels": labels}
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
            return self.to_stack(self.client.request("PUT", self.path(meta["name"]), query=WRITE_QUERY, body=body))

    def ensure_spec(self, name, spec, check_mode=False, retries=5):
        """Create the stack's ConfigMap or update its spec; the generation goes up when the spec changes.

        Returns (changed, stack before or None, stack after)."""
        check_stack_name("name", name)
        with self._granted():
            return self._ensure_spec(name, spec, check_mode, retries)

    def _ensure_spec(self, name, spec, check_mode, retries):
        for _attempt in range(retries + 1):
            cm = self._trusted(name, self.client.get_path(self.path(name)))
            if cm is None:
                after = self.to_stack(self._body(name, spec, {}, 1))
                if not check_mode:
                    try:
                        after = self.to_stack(self.client.request("POST", self.path(), query=WRITE_QUERY, body=self._body(name, spec, {}, 1)))
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
                return True, before, self.to_stack(self.client.request("PUT", self.path(name), query=WRITE_QUERY, body=body))
            except ClusterError as exc:
                if exc.status != 409:
                    raise
        raise AicrError("stack %s: spec update kept conflicting after %d retries; allowed: retry the run" % (name, retries), field="spec")


def make_store(client, backend="crd", namespace=STACK_NAMESPACE, namespace_field="namespace"):
    """The store of ``backend``; ``namespace_field`` is the option that named ``namespace`` (for its messages)."""
    if backend == "crd":
        return CrdStore(client)
    if backend == "configmap":
        return ConfigMapStore(client, namespace, namespace_field)
    raise AicrError("backend: %r is not allowed; allowed: crd, configmap" % backend, field="backend", value=backend)
