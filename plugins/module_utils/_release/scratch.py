# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""What a run creates only for itself, and takes away again when it installed nothing: the lease namespace and the
stack's inventory ConfigMap.

- **The lease namespace is created only for an identity that could use it.** A namespace this run creates has no
  RoleBinding yet, so the shipped Role ``aicr-runtime:lease`` cannot be bound in it: before creating a missing
  ``lease_namespace`` the API server is asked (a ``SelfSubjectAccessReview``, which every authenticated identity may
  send) whether this identity may create Leases there. If not, the run stops before creating anything, saying to create
  the namespace and bind the Role first; if the server cannot say, the namespace is created as before.
- **Taken away when the run installed nothing.** A run that made no change of its own (no helm operation, no object
  applied or deleted: ``lease.Guarded.changed``) removes the inventory ConfigMap if this run created it
  (``Inventory.discard``: its uid and resourceVersion as preconditions, only while ``aicr-runtime`` alone wrote it), then
  the lease namespace if this run created it and it holds nothing else (nothing of the kinds listed in
  :data:`CONTENT_KINDS` but what Kubernetes puts in every namespace); a Lease this run could not take leaves it at once.
  When something was installed the inventory stays: it is the record of what the stack owns. What cannot be removed
  (RBAC: the shipped release role has no ``delete`` on namespaces) is left, with a warning naming it.
- Nothing that existed before this run, or that another writer touched since, is ever deleted.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.deadline import bookkeeping
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import LEASE_ROLE, ClusterError, describe

# What a namespace may hold and still be "empty": what Kubernetes itself puts in every namespace
BUILT_IN = {("v1", "ConfigMap"): ("kube-root-ca.crt",), ("v1", "ServiceAccount"): ("default",)}
# The kinds read to decide that a namespace this run created holds nothing else (the collection's Leases and ConfigMaps,
# what an administrator adds to bind a role, and what any workload leaves)
CONTENT_KINDS = (("coordination.k8s.io/v1", "Lease"), ("v1", "ConfigMap"), ("v1", "Secret"), ("v1", "ServiceAccount"), ("v1", "Pod"),
                 ("rbac.authorization.k8s.io/v1", "RoleBinding"), ("rbac.authorization.k8s.io/v1", "Role"))


def may_create_leases(cluster, namespace):
    """Whether the API server lets this identity create Leases in ``namespace`` (True/False), None when it cannot say."""
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview", "metadata": {},
              "spec": {"resourceAttributes": {"namespace": namespace, "verb": "create", "group": "coordination.k8s.io", "resource": "leases"}}}
    try:
        answer = cluster.create(review)
    except ClusterError:
        return None
    allowed = ((answer or {}).get("status") or {}).get("allowed")
    return allowed if isinstance(allowed, bool) else None


class RunScratch(object):
    """The lease namespace and the inventory of one run, as far as this run created them. ``note(text)`` is told what is
    removed (the run's ``actions``), ``warn(text)`` what is left that the run created."""

    def __init__(self, cluster, inventory, namespace, field="lease_namespace", note=None, warn=None):
        self.cluster = cluster
        self.inventory = inventory
        self.namespace = namespace
        self.field = field
        self.note = note or (lambda text: None)
        self.warn = warn or (lambda text: None)
        self.created = None  # the Namespace this run created (its object), or None

    def prepare(self, present, create):
        """Make sure the lease namespace exists: ``present(namespace)`` reads it, ``create(namespace)`` creates it (True
        when it did); a missing one only when this identity could use Leases in it."""
        if present(self.namespace):
            return self
        if may_create_leases(self.cluster, self.namespace) is False:
            files = LEASE_ROLE[2]
            raise AicrError("%s: namespace %s does not exist, and this identity could not use the stack's Lease there once created (a namespace "
                            "it creates has no RoleBinding): create the namespace and bind the %s %s in it first (%s); nothing was changed"
                            % (self.field, self.namespace, LEASE_ROLE[0], LEASE_ROLE[1], files), field=self.field, namespace=self.namespace,
                            rbac={"kind": LEASE_ROLE[0], "name": LEASE_ROLE[1], "namespace": self.namespace, "files": files.split("; ")})
        if create(self.namespace):
            self.created = self.cluster.get("v1", "Namespace", self.namespace)
        return self

    def acquire(self, lease):
        """``lease.acquire()``; when it fails, the namespace this run created for it is removed before the error is raised
        (what could not be removed is named in the error)."""
        try:
            return lease.acquire()
        except BaseException as exc:  # SIGTERM's Cancelled too: the namespace was this run's alone
            left = self.clean(changed=False)
            if left and isinstance(exc, AicrError):
                exc.msg = exc.msg + " | " + "; ".join(left)
                exc.args = (exc.msg,)
            raise

    def clean(self, changed):
        """After the run (its Lease released): unless it ``changed`` something, remove the inventory and the lease namespace
        it created for itself. Never raises: returns what it had to leave (each also a warning)."""
        if changed:
            return []
        left = []
        with bookkeeping("removing what the run created for itself"):
            try:
                if self.inventory.discard():
                    self.note("remove inventory ConfigMap %s/%s: created by this run, which installed nothing"
                              % (self.inventory.namespace, self.inventory.name))
            except AicrError as exc:  # a ClusterError, or a 403 named as the inventory's
                left.append("inventory ConfigMap %s/%s, created by this run that installed nothing, was left: %s"
                            % (self.inventory.namespace, self.inventory.name, describe(exc)))
            left.extend(self._remove_namespace())
        for text in left:
            self.warn(text)
        return left

    def _remove_namespace(self):
        if self.created is None:
            return []
        meta, self.created = self.created.get("metadata") or {}, None
        try:
            others = self._contents()
            if others:
                return ["%s %s, created by this run, was left: it holds %s" % (self.field, self.namespace, ", ".join(others[:5]))]
            if self.cluster.delete("v1", "Namespace", self.namespace, uid=meta.get("uid")):
                self.note("remove namespace %s: created by this run for its Lease, which installed nothing" % self.namespace)
        except AicrError as exc:
            return ["%s %s, created by this run that installed nothing, was left (delete it if nothing uses it): %s"
                    % (self.field, self.namespace, describe(exc))]
        return []

    def _contents(self):
        """``Kind name`` of what the namespace holds besides what Kubernetes puts in every namespace."""
        found = []
        for api_version, kind in CONTENT_KINDS:
            built_in = BUILT_IN.get((api_version, kind), ())
            found.extend("%s %s" % (kind, (item.get("metadata") or {}).get("name")) for item in self.cluster.list(api_version, kind, self.namespace)
                         if (item.get("metadata") or {}).get("name") not in built_in)
        return found
