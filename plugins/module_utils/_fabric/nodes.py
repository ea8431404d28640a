# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The Kubernetes side of fabric_device, behind one small interface (``ClusterView``).

- node → fabric machine: ``spec.providerID`` ``fsas-cdi://<uuid>``, else the OpenShift chain
  Node ``machine.openshift.io/machine`` → Machine ``metal3.io/BareMetalHost`` → BareMetalHost
  ``cluster-manager.cdi.io/machine``;
- GPU users on a node: pods requesting ``nvidia.com/gpu`` and DRA ResourceClaims allocated there;
- visibility: allocatable ``nvidia.com/gpu`` and ResourceSlice devices (with their ``uuid``);
- every node's machine (the orphan sweep's machines);
- whether the composable-resource-operator (``cro.hpsys.ibm.ie.com``) is installed;
- credentials from a Secret (a 403 names the ClusterRole ``aicr-runtime:fabric-credentials`` to bind in its namespace).

``KubernetesClusterView`` implements it with the collection's one client (``_kube.client.KubeClient``);
engine tests also run it against the unit tests' in-memory cluster double.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError, binding_advice, describe

PROVIDER_PREFIX = "fsas-cdi://"
NODE_MACHINE_ANNOTATION = "machine.openshift.io/machine"
MACHINE_BMH_ANNOTATION = "metal3.io/BareMetalHost"
BMH_CDI_ANNOTATION = "cluster-manager.cdi.io/machine"
GPU_RESOURCE = "nvidia.com/gpu"
CRO_GROUP = "cro.hpsys.ibm.ie.com"
DRA_VERSIONS = ("v1", "v1beta2", "v1beta1")
CREDENTIAL_KEYS = ("username", "password", "client_id", "client_secret", "realm")
# the shipped role that grants ``get`` on the credentials Secret, bound by a RoleBinding in its namespace only (docs/rbac.md):
# (kind, name, the file that ships it), as ``_kube.errors.binding_advice`` takes it
FABRIC_CREDENTIALS_ROLE = ("ClusterRole", "aicr-runtime:fabric-credentials", "meta/rbac/fabric-credentials.yaml")


class ClusterView:
    """What the fabric service asks the cluster. Every method may raise AicrError."""

    def machine_for_node(self, node):
        raise NotImplementedError

    def gpu_pods(self, node):
        """Running/pending pods on the node requesting nvidia.com/gpu: [{namespace, name, gpus}]."""
        raise NotImplementedError

    def device_claims(self, node):
        """DRA claims allocated on the node: [{namespace, name, devices: [names and uuids], pods: [..]}]."""
        raise NotImplementedError

    def gpu_allocatable(self, node):
        raise NotImplementedError

    def slice_device_ids(self, node):
        """Names and ``uuid`` attributes of the ResourceSlice devices published for the node."""
        raise NotImplementedError

    def operator_present(self):
        raise NotImplementedError

    def fabric_machines(self):
        """[(node, machine)] of every node that resolves to a fabric machine (the others are skipped)."""
        raise NotImplementedError

    def read_secret(self, namespace, name):
        raise NotImplementedError


def parse_quantity(value):
    """Integer of a simple Kubernetes count quantity (``"2"``, ``2``, ``"2k"`` is not expected for GPUs)."""
    if value is None:
        return 0
    try:
        return int(str(value).strip())
    except ValueError:
        try:
            return int(float(str(value).strip()))
        except ValueError:
            return 0


def split_ref(value, what, owner):
    parts = (value or "").split("/")
    if len(parts) != 2 or not all(parts):
        raise AicrError("%s: annotation %s is %r; expected <namespace>/<name>" % (owner, what, value or ""), annotation=what)
    return parts[0], parts[1]


class KubernetesClusterView(ClusterView):
    """The fabric service's questions, answered through a ``KubeClient`` (or anything with its ``get``/``list``)."""

    def __init__(self, client):
        self.client = client

    @staticmethod
    def _fail(exc, what):
        # no answer at all (status 0: refused, TLS, a deadline passed) is no answer: said so, not "answered"
        said = ("Kubernetes API answered %s" if getattr(exc, "status", 0) else "Kubernetes API request failed: %s") % describe(exc)
        raise AicrError("%s: %s" % (what, said), status=getattr(exc, "status", None))

    def _get(self, api_version, kind, name, namespace, what):
        """The object (None when it does not exist or its kind is not served); other failures name ``what``."""
        try:
            return self.client.get(api_version, kind, name, namespace)
        except ClusterError as exc:
            self._fail(exc, what)

    def _list(self, api_version, kind, what, **selectors):
        try:
            return self.client.list(api_version, kind, **selectors)
        except ClusterError as exc:
            self._fail(exc, what)

    def _node(self, node):
        obj = self._get("v1", "Node", node, None, "read node %s" % node)
        if obj is None:
            raise AicrError("node: %s does not exist in the cluster" % node, field="node", node=node)
        return obj

    def fabric_machines(self):
        found = []
        for obj in self._list("v1", "Node", "list nodes"):
            name = (obj.get("metadata") or {}).get("name")
            try:
                found.append((name, self._machine_of(name, obj)))
            except AicrError:
                continue
        return sorted(found)

    def machine_for_node(self, node):
        return self._machine_of(node, self._node(node))

    def _machine_of(self, node, obj):
        provider_id = (obj.get("spec") or {}).get("providerID") or ""
        if provider_id.startswith(PROVIDER_PREFIX) and provider_id[len(PROVIDER_PREFIX):].strip("/"):
            return provider_id[len(PROVIDER_PREFIX):].strip("/")
        annotations = (obj.get("metadata") or {}).get("annotations") or {}
        if NODE_MACHINE_ANNOTATION not in annotations:
            raise AicrError("node: %s does not resolve to a fabric machine (spec.providerID %r is not fsas-cdi://<uuid> and annotation %s is absent)"
                            % (node, provider_id, NODE_MACHINE_ANNOTATION), field="node", node=node)
        namespace, name = split_ref(annotations[NODE_MACHINE_ANNOTATION], NODE_MACHINE_ANNOTATION, "node %s" % node)
        machine = self._custom_get("machine.openshift.io/v1beta1", "Machine", namespace, name, "Machine %s/%s (from node %s)" % (namespace, name, node))
        bmh_ref = ((machine.get("metadata") or {}).get("annotations") or {}).get(MACHINE_BMH_ANNOTATION)
        namespace, name = split_ref(bmh_ref, MACHINE_BMH_ANNOTATION, "node %s: Machine %s/%s" % (node, namespace, name))
        bmh = self._custom_get("metal3.io/v1alpha1", "BareMetalHost", namespace, name, "BareMetalHost %s/%s (from node %s)" % (namespace, name, node))
        machine_id = ((bmh.get("metadata") or {}).get("annotations") or {}).get(BMH_CDI_ANNOTATION)
        if not machine_id:
            raise AicrError("node: %s: BareMetalHost %s/%s has no annotation %s" % (node, namespace, name, BMH_CDI_ANNOTATION), field="node", node=node)
        return machine_id

    def _custom_get(self, api_version, kind, namespace, name, what):
        obj = self._get(api_version, kind, name, namespace, "read %s" % what)
        if obj is None:
            raise AicrError("node resolution: %s does not exist" % what, field="node")
        return obj

    def _pods_on(self, node):
        pods = self._list("v1", "Pod", "list pods on node %s" % node, field_selector="spec.nodeName=%s" % node)
        return [p for p in pods if (p.get("spec") or {}).get("nodeName") == node
                and ((p.get("status") or {}).get("phase") not in ("Succeeded", "Failed"))]

    def gpu_pods(self, node):
        found = []
        for pod in self._pods_on(node):
            spec = pod.get("spec") or {}
            init = spec.get("initContainers") or []
            gpus = 0
            for container in list(spec.get("containers") or []) + list(init):
                resources = container.get("resources")
                if resources is None:
                    continue
                wanted = max(parse_quantity((resources.get("limits") or {}).get(GPU_RESOURCE)),
                             parse_quantity((resources.get("requests") or {}).get(GPU_RESOURCE)))
                gpus = max(gpus, wanted) if container in init else gpus + wanted
            if gpus > 0:
                found.append({"namespace": pod["metadata"].get("namespace"), "name": pod["metadata"].get("name"), "gpus": gpus})
        return found

    def _dra_list(self, kind):
        for version in DRA_VERSIONS:
            api_version = "resource.k8s.io/%s" % version
            if self.client.is_served(api_version, kind):
                return self._list(api_version, kind, "list %ss" % kind.lower())
        return []

    def _slice_map(self, node):
        """{device name: uuid or None} for the node's ResourceSlices."""
        devices = {}
        for item in self._dra_list("ResourceSlice"):
            spec = item.get("spec") or {}
            if spec.get("nodeName") != node and (spec.get("pool") or {}).get("name") != node:
                continue
            for dev in spec.get("devices") or []:
                attrs = dev.get("attributes") or (dev.get("basic") or {}).get("attributes") or {}
                uuid = None
                for key, value in attrs.items():
                    if key.split("/")[-1] == "uuid" and isinstance(value, dict):
                        uuid = value.get("string") or value.get("stringValue")
                devices[dev.get("name")] = uuid
        return devices

    def slice_device_ids(self, node):
        ids = set()
        for name, uuid in self._slice_map(node).items():
            ids.add(name)
            if uuid:
                ids.add(uuid)
        return ids

    def device_claims(self, node):
        pods = set("%s/%s" % (p["metadata"].get("namespace"), p["metadata"].get("name")) for p in self._pods_on(node))
        slices = self._slice_map(node)
        claims = []
        for item in self._dra_list("ResourceClaim"):
            meta = item.get("metadata") or {}
            status = item.get("status") or {}
            results = ((status.get("allocation") or {}).get("devices") or {}).get("results") or []
            users = ["%s/%s" % (meta.get("namespace"), r.get("name")) for r in status.get("reservedFor") or [] if r.get("resource", "pods") == "pods"]
            on_node = any(r.get("pool") == node for r in results) or any(u in pods for u in users)
            if not results or not on_node:
                continue
            devices = []
            for result in results:
                name = result.get("device")
                devices.append(name)
                if slices.get(name):
                    devices.append(slices[name])
            claims.append({"namespace": meta.get("namespace"), "name": meta.get("name"), "devices": devices, "pods": users})
        return claims

    def gpu_allocatable(self, node):
        obj = self._node(node)
        return parse_quantity(((obj.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE))

    def operator_present(self):
        try:
            groups = self.client.request("GET", "/apis").get("groups") or []
        except ClusterError as exc:
            self._fail(exc, "list API groups")
        return any(g.get("name") == CRO_GROUP for g in groups)

    def read_secret(self, namespace, name):
        """The credential keys of Secret ``namespace/name`` (``credentials_secret``). A 403 names the role to bind there."""
        try:
            secret = self.client.get("v1", "Secret", name, namespace)
        except ClusterError as exc:
            advice, rbac = binding_advice(exc, FABRIC_CREDENTIALS_ROLE, namespace)
            if not advice:
                self._fail(exc, "read Secret %s/%s" % (namespace, name))
            raise AicrError("credentials_secret: this identity may not read Secret %s/%s; %s - %s" % (namespace, name, advice, describe(exc)),
                            field="credentials_secret", value={"name": name, "namespace": namespace}, status=403, **rbac)
        if secret is None:
            raise AicrError("credentials_secret: Secret %s/%s does not exist" % (namespace, name), field="credentials_secret")
        values = {}
        for key, value in (secret.get("data") or {}).items():
            try:
                values[key] = base64.b64decode(value).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                raise AicrError("credentials_secret: key %s of Secret %s/%s is not base64 UTF-8 text" % (key, namespace, name), field="credentials_secret")
        values.update(secret.get("stringData") or {})
        return {k: v for k, v in values.items() if k in CREDENTIAL_KEYS}
