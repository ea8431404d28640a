# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Kubernetes well-known keys: a documented list of values keys that carry a Kubernetes API field as it is.

A chart that writes ``runtimeClassName: null`` or ``resources: {limits: null}`` passes the value to the pod spec
unchanged, so a leaf with one of these names and no type of its own (a ``null`` default, no annotation) takes the
type the pinned Kubernetes definitions (``refs.k8s_definitions``, option ``k8s_schema_version``) give that field:
``hostUsers`` a boolean, ``terminationGracePeriodSeconds`` an integer, ``minAvailable`` an int-or-string,
``affinity`` an object, ``tolerations`` an array. Only the field's type is taken (the node stays nullable, so the
null default still validates); a concrete inferred or annotated type is never changed, and no other name is guessed.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._schema import nodes, refs

_CORE = "io.k8s.api.core.v1."

# values key (or (parent key, key)) → (Kubernetes definition, its property)
WELL_KNOWN = {
    "affinity": (_CORE + "PodSpec", "affinity"),
    "nodeSelector": (_CORE + "PodSpec", "nodeSelector"),
    "tolerations": (_CORE + "PodSpec", "tolerations"),
    "topologySpreadConstraints": (_CORE + "PodSpec", "topologySpreadConstraints"),
    "imagePullSecrets": (_CORE + "PodSpec", "imagePullSecrets"),
    "initContainers": (_CORE + "PodSpec", "initContainers"),
    "volumes": (_CORE + "PodSpec", "volumes"),
    "hostAliases": (_CORE + "PodSpec", "hostAliases"),
    "dnsConfig": (_CORE + "PodSpec", "dnsConfig"),
    "dnsPolicy": (_CORE + "PodSpec", "dnsPolicy"),
    "hostNetwork": (_CORE + "PodSpec", "hostNetwork"),
    "hostPID": (_CORE + "PodSpec", "hostPID"),
    "hostIPC": (_CORE + "PodSpec", "hostIPC"),
    "hostUsers": (_CORE + "PodSpec", "hostUsers"),
    "enableServiceLinks": (_CORE + "PodSpec", "enableServiceLinks"),
    "shareProcessNamespace": (_CORE + "PodSpec", "shareProcessNamespace"),
    "automountServiceAccountToken": (_CORE + "PodSpec", "automountServiceAccountToken"),
    "serviceAccountName": (_CORE + "PodSpec", "serviceAccountName"),
    "priorityClassName": (_CORE + "PodSpec", "priorityClassName"),
    "runtimeClassName": (_CORE + "PodSpec", "runtimeClassName"),
    "schedulerName": (_CORE + "PodSpec", "schedulerName"),
    "terminationGracePeriodSeconds": (_CORE + "PodSpec", "terminationGracePeriodSeconds"),
    "securityContext": (_CORE + "PodSpec", "securityContext"),
    "podSecurityContext": (_CORE + "PodSpec", "securityContext"),
    "containerSecurityContext": (_CORE + "Container", "securityContext"),
    "resources": (_CORE + "Container", "resources"),
    "imagePullPolicy": (_CORE + "Container", "imagePullPolicy"),
    "env": (_CORE + "Container", "env"),
    "envFrom": (_CORE + "Container", "envFrom"),
    "volumeMounts": (_CORE + "Container", "volumeMounts"),
    "livenessProbe": (_CORE + "Container", "livenessProbe"),
    "readinessProbe": (_CORE + "Container", "readinessProbe"),
    "startupProbe": (_CORE + "Container", "startupProbe"),
    "lifecycle": (_CORE + "Container", "lifecycle"),
    "hostPort": (_CORE + "ContainerPort", "hostPort"),
    "containerPort": (_CORE + "ContainerPort", "containerPort"),
    "nodePort": (_CORE + "ServicePort", "nodePort"),
    "targetPort": (_CORE + "ServicePort", "targetPort"),
    "revisionHistoryLimit": ("io.k8s.api.apps.v1.DeploymentSpec", "revisionHistoryLimit"),
    "minReadySeconds": ("io.k8s.api.apps.v1.DeploymentSpec", "minReadySeconds"),
    "progressDeadlineSeconds": ("io.k8s.api.apps.v1.DeploymentSpec", "progressDeadlineSeconds"),
    "ttlSecondsAfterFinished": ("io.k8s.api.batch.v1.JobSpec", "ttlSecondsAfterFinished"),
    "backoffLimit": ("io.k8s.api.batch.v1.JobSpec", "backoffLimit"),
    "activeDeadlineSeconds": ("io.k8s.api.batch.v1.JobSpec", "activeDeadlineSeconds"),
    "minAvailable": ("io.k8s.api.policy.v1.PodDisruptionBudgetSpec", "minAvailable"),
    "maxUnavailable": ("io.k8s.api.policy.v1.PodDisruptionBudgetSpec", "maxUnavailable"),
    "unhealthyPodEvictionPolicy": ("io.k8s.api.policy.v1.PodDisruptionBudgetSpec", "unhealthyPodEvictionPolicy"),
    ("resources", "limits"): (_CORE + "ResourceRequirements", "limits"),
    ("resources", "requests"): (_CORE + "ResourceRequirements", "requests"),
}


def field_type(key, parent=None, version=None):
    """The type the pinned Kubernetes definitions give a well-known key: a JSON type name, ``int-or-string``, or None."""
    entry = WELL_KNOWN.get((parent, key)) or WELL_KNOWN.get(key)
    if entry is None:
        return None
    definitions = refs.k8s_definitions(version)
    schema = ((definitions.get(entry[0]) or {}).get("properties") or {}).get(entry[1])
    for _depth in range(8):
        if not isinstance(schema, dict):
            return None
        ref = schema.get("$ref")
        if not isinstance(ref, str):
            break
        name = ref.rsplit("/", 1)[-1]
        if name in refs.INT_OR_STRING_DEFS:
            return "int-or-string"
        schema = definitions.get(name)
    types = schema.get("type") if isinstance(schema, dict) else None
    types = [types] if isinstance(types, str) else [t for t in types or () if t != "null"]
    return types[0] if len(types) == 1 else None


def type_leaves(node, version=None, parent=None, key=None):
    """Type the untyped null leaves of a tree whose key is well known (in place); returns the tree."""
    if not isinstance(node, dict):
        return node
    if key is not None and nodes.is_null_leaf(node) and not (node.get("extra") or {}).get("$ref"):
        name = field_type(key, parent, version)
        if name is not None:
            nodes.set_type(node, [name, "null"])
            node.setdefault("x-annotated", {})["kubernetes well-known key"] = key
    for name, child in (node.get("properties") or {}).items():
        type_leaves(child, version, key, name)
    if isinstance(node.get("items"), dict):
        type_leaves(node["items"], version, key, None)
    if isinstance(node.get("additionalProperties"), dict):
        type_leaves(node["additionalProperties"], version, key, None)
    return node
