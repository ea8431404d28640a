# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""The Kubernetes side of fabric_device, behind one small interface (``ClusterView``).

- node → fabric machine: ``spec.providerID`` ``fsas-cdi://<uuid>``, else the OpenShift chain
  Node ``machine.openshift.io/machine`` → Machine ``metal3.io/BareMetalHost`` → BareMetalHost
  ``cluster-manager.cdi.io/machine``;
- GPU users on a node: pods requesting ``nvidia.com/gpu`` and DRA ResourceClaims allocated there;
- visibility: allocatable ``nvidia.com/gpu`` and ResourceSlice devices (with their ``uuid``);
- whether the composable-resource-operator (``cro.hpsys.ibm.ie.com``) is installed;
- credentials from a Secret.

``KubernetesClusterView`` implements it with the kubernetes client built by ``kube.build_api_client``;
engine tests use a fake with the same methods.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import traceback

from ansible_collections.aicr.runtime.plugins.module_utils.common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils.kube import api_exception_message

try:
    from kubernetes import client as k8s_client
    from kubernetes.client.rest import ApiException

    HAS_KUBERNETES = True
    KUBERNETES_IMPORT_ERROR = None
except ImportError:
    HAS_KUBERNETES = False
    KUBERNETES_IMPORT_ERROR = traceback.format_exc()

    class ApiException(Exception):
        status = None

PROVIDER_PREFIX = "fsas-cdi://"
NODE_MACHINE_ANNOTATION = "machine.openshift.io/machine"
MACHINE_BMH_ANNOTATION = "metal3.io/BareMetalHost"
BMH_CDI_ANNOTATION = "cluster-manager.cdi.io/machine"
GPU_RESOURCE = "nvidia.com/gpu"
CRO_GROUP = "cro.hpsys.ibm.ie.com"
DRA_VERSIONS = ("v1", "v1beta2", "v1beta1")
CREDENTIAL_KEYS = ("username", "password", "client_id", "client_secret", "realm")


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
    def __init__(self, api_client):
        if not HAS_KUBERNETES:
            raise AicrError("the Python package 'kubernetes' is required for node, pod and visibility checks", exception=KUBERNETES_IMPORT_ERROR)
        self.core = k8s_client.CoreV1Api(api_client)
        self.custom = k8s_client.CustomObjectsApi(api_client)
        self.apis = k8s_client.ApisApi(api_client)

    @staticmethod
    def _fail(exc, what):
        raise AicrError("%s: Kubernetes API answered %s" % (what, api_exception_message(exc)), status=getattr(exc, "status", None))

    def _node(self, node):
        try:
            return self.core.read_node(node)
        except ApiException as exc:
            if exc.status == 404:
                raise AicrError("node: %s does not exist in the cluster" % node, field="node", node=node)
            self._fail(exc, "read node %s" % node)

    def machine_for_node(self, node):
        obj = self._node(node)
        provider_id = (obj.spec.provider_id if obj.spec else None) or ""
        if provider_id.startswith(PROVIDER_PREFIX) and provider_id[len(PROVIDER_PREFIX):].strip("/"):
            return provider_id[len(PROVIDER_PREFIX):].strip("/")
        annotations = (obj.metadata.annotations or {}) if obj.metadata else {}
        if NODE_MACHINE_ANNOTATION not in annotations:
            raise AicrError("node: %s does not resolve to a fabric machine (spec.providerID %r is not fsas-cdi://<uuid> and annotation %s is absent)"
                            % (node, provider_id, NODE_MACHINE_ANNOTATION), field="node", node=node)
        namespace, name = split_ref(annotations[NODE_MACHINE_ANNOTATION], NODE_MACHINE_ANNOTATION, "node %s" % node)
        machine = self._custom_get("machine.openshift.io", "v1beta1", namespace, "machines", name, "Machine %s/%s (from node %s)" % (namespace, name, node))
        bmh_ref = ((machine.get("metadata") or {}).get("annotations") or {}).get(MACHINE_BMH_ANNOTATION)
        namespace, name = split_ref(bmh_ref, MACHINE_BMH_ANNOTATION, "node %s: Machine %s/%s" % (node, namespace, name))
        bmh = self._custom_get("metal3.io", "v1alpha1", namespace, "baremetalhosts", name, "BareMetalHost %s/%s (from node %s)" % (namespace, name, node))
        machine_id = ((bmh.get("metadata") or {}).get("annotations") or {}).get(BMH_CDI_ANNOTATION)
        if not machine_id:
            raise AicrError("node: %s: BareMetalHost %s/%s has no annotation %s" % (node, namespace, name, BMH_CDI_ANNOTATION), field="node", node=node)
        return machine_id

    def _custom_get(self, group, version, namespace, plural, name, what):
        try:
            return self.custom.get_namespaced_custom_object(group, version, namespace, plural, name)
        except ApiException as exc:
            if exc.status == 404:
                raise AicrError("node resolution: %s does not exist" % what, field="node")
            self._fail(exc, "read %s" % what)

    def _pods_on(self, node):
        try:
            pods = self.core.list_pod_for_all_namespaces(field_selector="spec.nodeName=%s" % node).items
        except ApiException as exc:
            self._fail(exc, "list pods on node %s" % node)
        return [p for p in pods if p.spec and p.spec.node_name == node and (p.status is None or p.status.phase not in ("Succeeded", "Failed"))]

    def gpu_pods(self, node):
        found = []
        for pod in self._pods_on(node):
            gpus = 0
            for container in list(pod.spec.containers or []) + list(pod.spec.init_containers or []):
                resources = container.resources
                if resources is None:
                    continue
                wanted = max(parse_quantity((resources.limits or {}).get(GPU_RESOURCE)), parse_quantity((resources.requests or {}).get(GPU_RESOURCE)))
                gpus = max(gpus, wanted) if container in (pod.spec.init_containers or []) else gpus + wanted
            if gpus > 0:
                found.append({"namespace": pod.metadata.namespace, "name": pod.metadata.name, "gpus": gpus})
        return found

    def _dra_list(self, plural):
        for version in DRA_VERSIONS:
            try:
                return self.custom.list_cluster_custom_object("resource.k8s.io", version, plural).get("items", [])
            except ApiException as exc:
                if exc.status == 404:
                    continue
                self._fail(exc, "list %s" % plural)
        return []

    def _slice_map(self, node):
        """{device name: uuid or None} for the node's ResourceSlices."""
        devices = {}
        for item in self._dra_list("resourceslices"):
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
        pods = set("%s/%s" % (p.metadata.namespace, p.metadata.name) for p in self._pods_on(node))
        slices = self._slice_map(node)
        claims = []
        for item in self._dra_list("resourceclaims"):
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
        allocatable = (obj.status.allocatable or {}) if obj.status else {}
        return parse_quantity(allocatable.get(GPU_RESOURCE))

    def operator_present(self):
        try:
            groups = self.apis.get_api_versions().groups or []
        except ApiException as exc:
            self._fail(exc, "list API groups")
        return any(g.name == CRO_GROUP for g in groups)

    def read_secret(self, namespace, name):
        try:
            secret = self.core.read_namespaced_secret(name, namespace)
        except ApiException as exc:
            if exc.status == 404:
                raise AicrError("credentials_secret: Secret %s/%s does not exist" % (namespace, name), field="credentials_secret")
            self._fail(exc, "read Secret %s/%s" % (namespace, name))
        values = {}
        for key, value in (secret.data or {}).items():
            try:
                values[key] = base64.b64decode(value).decode("utf-8")
            except (ValueError, UnicodeDecodeError):
                raise AicrError("credentials_secret: key %s of Secret %s/%s is not base64 UTF-8 text" % (key, namespace, name), field="credentials_secret")
        values.update(secret.string_data or {})
        return {k: v for k, v in values.items() if k in CREDENTIAL_KEYS}
