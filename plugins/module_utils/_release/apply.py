# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""Manifest objects: identity, labels, comparison by server-side dry-run apply, apply.

Identity of a rendered document (issue #6): ``<component>-<pre|post>-<kind>-<slug of
name>``, or ``<component>-<wave>-<index>`` when the document has no kind or name;
the slug is lowercase with runs of non-alphanumerics turned into ``-``, trimmed.
Every object carries the labels ``aicr.io/stack``, ``aicr.io/component`` and
``aicr.io/object-id``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import (
    COMPONENT_LABEL, MANAGED_BY, MANAGED_BY_LABEL, OBJECT_ID_LABEL, STACK_LABEL, label_value, slug,
)
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.client import comparable
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError, NotServed


def object_identity(component, wave, index, doc):
    """The stable identity of the ``index``-th document of a component's wave."""
    kind = doc.get("kind") if isinstance(doc, dict) else None
    name = ((doc.get("metadata") or {}).get("name")) if isinstance(doc, dict) else None
    if kind and name and slug(kind) and slug(name):
        return "%s-%s-%s-%s" % (component, wave, slug(kind), slug(name))
    return "%s-%s-%d" % (component, wave, index)


class ManifestObject(object):
    """One rendered document of a component's pre or post wave."""

    def __init__(self, component, wave, index, doc, stack):
        self.component = component
        self.wave = wave
        self.index = index
        self.identity = object_identity(component, wave, index, doc)
        if not isinstance(doc, dict) or not doc.get("apiVersion") or not doc.get("kind") or not (doc.get("metadata") or {}).get("name"):
            raise AicrError(
                "manifest: document %s of component %s (%s wave) has no apiVersion/kind/metadata.name; every manifest document must be a Kubernetes object"
                % (index, component, wave),
                component=component, object=self.identity,
            )
        self.body = copy.deepcopy(doc)
        labels = self.body.setdefault("metadata", {}).setdefault("labels", None) or {}
        labels.update({
            STACK_LABEL: label_value(stack),
            COMPONENT_LABEL: label_value(component),
            OBJECT_ID_LABEL: label_value(self.identity),
            MANAGED_BY_LABEL: MANAGED_BY,
        })
        self.body["metadata"]["labels"] = labels

    @property
    def api_version(self):
        return self.body["apiVersion"]

    @property
    def kind(self):
        return self.body["kind"]

    @property
    def name(self):
        return self.body["metadata"]["name"]

    @property
    def namespace(self):
        return self.body["metadata"].get("namespace")

    def place(self, cluster, default_namespace):
        """Give namespaced objects the component namespace; strip it from cluster-scoped ones.

        Returns False when the kind is not served yet (e.g. its CRD comes with a dependency).
        """
        try:
            namespaced = cluster.is_namespaced(self.api_version, self.kind)
        except NotServed:
            if not self.body["metadata"].get("namespace"):
                self.body["metadata"]["namespace"] = default_namespace
            return False
        if namespaced:
            self.body["metadata"].setdefault("namespace", default_namespace)
        else:
            self.body["metadata"].pop("namespace", None)
        return True

    def ref(self):
        return {"id": self.identity, "apiVersion": self.api_version, "kind": self.kind, "name": self.name, "namespace": self.namespace}


def plan_object(cluster, mobj, default_namespace):
    """Decide create/update/unchanged for one object, read-only.

    The live object is compared with the result of a server-side *dry-run* apply, so
    defaults and other managers' fields are accounted for exactly as the apiserver would.
    Returns ``(action, reason)``.
    """
    served = mobj.place(cluster, default_namespace)
    if not served:
        return "create", "kind %s (%s) is not served yet" % (mobj.kind, mobj.api_version)
    live = cluster.get(mobj.api_version, mobj.kind, mobj.name, mobj.namespace)
    if live is None:
        return "create", "does not exist"
    try:
        dry = cluster.apply(mobj.body, dry_run=True)
    except ClusterError as exc:
        return "update", "dry-run apply failed (%s)" % exc.msg
    if comparable(dry) == comparable(live):
        return "unchanged", "dry-run apply changes nothing"
    return "update", "dry-run apply differs from the live object"


def apply_object(cluster, mobj, default_namespace):
    """Server-side apply for real (field manager aicr-runtime); returns the applied object."""
    if not mobj.place(cluster, default_namespace):
        forget = getattr(cluster, "forget", None)
        if forget:
            forget(mobj.api_version, mobj.kind)
        if not mobj.place(cluster, default_namespace):
            raise AicrError(
                "manifest: object %s: kind %s (%s) is not served by the cluster; is the CRD installed by a dependency?"
                % (mobj.identity, mobj.kind, mobj.api_version),
                object=mobj.identity,
            )
    return cluster.apply(mobj.body)
