"""What a test holds of its cluster: kubeconfigs per identity, the audit log, namespaces, faults.

    kube = Kube.start(tmp_dir)              # a fresh lab control plane (or Kube.external(kubeconfig))
    ns = kube.create_namespace("gr")        # a fresh namespace, deleted by delete_namespaces()
    kube.kubeconfig_for("release")          # the least-privilege identity gated_release runs as
    mark = kube.audit_mark()
    ...
    assert kube.audit(since=mark, mutating=True, user=kube.user("release")) == []
    with kube.fault_proxy() as proxy:       # the real API server behind a fault-injecting proxy
        proxy.add_fault(code=503, count=2, verbs=["get"])
        kubeconfig = proxy.kubeconfig_for(kube.kubeconfig_for("release"))

``Kube.external(kubeconfig)`` is someone's own cluster (``AICR_TEST_KUBECONFIG``): what needs the
lab (the audit log, kwok's stages, restarts, the proxy's identities) is then unavailable and the
tests that need it skip, saying why.
"""

import os
import uuid

from aicr_lab.controlplane import identities, processes
from aicr_lab.controlplane.audit import AuditLog
from aicr_lab.controlplane.cluster import ControlPlane, default_nodes
from aicr_lab.controlplane.rest import ApiError, Rest


class LabFeatureMissing(RuntimeError):
    """The cluster is not the lab's, and the test needs something only the lab has."""


class Kube:
    """One cluster under test."""

    def __init__(self, plane=None, kubeconfig=None):
        self.plane = plane
        self.kubeconfig = plane.kubeconfig if plane is not None else str(kubeconfig)
        self.rest = plane.admin if plane is not None else Rest.from_kubeconfig(self.kubeconfig)
        self._audit = AuditLog(plane.audit_log, self.rest) if plane is not None else None
        self.namespaces = []

    @classmethod
    def start(cls, directory, nodes=None, log=None):
        return cls(ControlPlane(directory, nodes=default_nodes() if nodes is None else nodes, log=log).start())

    @classmethod
    def attach(cls, description):
        """The control plane of a running lab (``lab.json``'s ``controlplane``)."""
        return cls(ControlPlane.attach(description))

    @classmethod
    def external(cls, kubeconfig):
        return cls(kubeconfig=kubeconfig)

    @property
    def is_lab(self):
        return self.plane is not None

    def require_lab(self, what):
        if not self.is_lab:
            raise LabFeatureMissing("%s needs the lab's own control plane (not AICR_TEST_KUBECONFIG's cluster)" % what)
        return self.plane

    @property
    def server(self):
        return self.plane.server if self.plane is not None else Rest.from_kubeconfig(self.kubeconfig).host

    @property
    def ca_file(self):
        return self.require_lab("the lab CA").ca_file

    def stop(self):
        if self.plane is not None:
            self.plane.stop()
        else:
            self.rest.close()

    # --- identities --------------------------------------------------------------------------

    def kubeconfig_for(self, identity="admin"):
        """A kubeconfig for a least-privilege identity (``release``, ``fabric``, ``stack``, ``crd-publisher``,
        ``reconciler``, ``nobody``), the adversarial ``tenant`` (admin of ``tenant-a``) or ``admin``. On an external
        cluster every identity is the given kubeconfig."""
        if self.plane is None:
            return self.kubeconfig
        return self.plane.identity_kubeconfig(identity)

    @staticmethod
    def user(identity):
        """The user name the API server sees for a lab identity."""
        return identities.user_name(identity) if identity != "admin" else "aicr-lab:admin"

    def env(self, identity="admin"):
        env = dict(os.environ)
        env["KUBECONFIG"] = self.kubeconfig_for(identity)
        return env

    # --- namespaces --------------------------------------------------------------------------

    def create_namespace(self, prefix="t", labels=None, lease_role=True):
        """A fresh namespace. ``lease_role``: usable as a custom ``lease_namespace`` (the tests give their own namespace):
        the shipped Role ``aicr-runtime:lease`` is bound there to the release identities and to the namespace's own
        ServiceAccounts (the tests' service-account identities), as a user binds it in theirs; and as the namespace of
        the ConfigMap status backend and of a Snapshot ConfigMap (each ClusterRole of
        ``identities.NAMESPACED_CLUSTER_ROLES``, bound there only)."""
        name = "%s-%s" % (prefix[:40].rstrip("-"), uuid.uuid4().hex[:6])
        self.rest.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                "metadata": {"name": name, "labels": dict(labels or {}, **{"aicr-lab/test": "true"})}})
        self.namespaces.append(name)
        if lease_role and self.is_lab:
            identities.bind_lease_role(self.rest, name, service_accounts=True)
            granted = {role: identities.bind_cluster_role_in_namespace(self.rest, name, role)
                       for role in identities.NAMESPACED_CLUSTER_ROLES}
            # the authorizer learns of new RoleBindings from a watch: a test's first request may not wait for it
            self.wait_authorized("release", name, "coordination.k8s.io", "leases")
            for role, (group, resource, verb) in granted.items():
                self.wait_authorized(identities.NAMESPACED_CLUSTER_ROLES[role][0], name, group, resource, verb)
        return name

    def create_tenant_namespace(self, prefix="tenant"):
        """A fresh namespace the ``tenant`` identity is admin of (as of ``tenant-a``), deleted by delete_namespaces();
        returned once the authorizer lets the tenant write Secrets there."""
        name = self.create_namespace(prefix, lease_role=False)
        if self.is_lab:
            identities.bind_tenant_admin(self.rest, name)
            self.wait_authorized(identities.TENANT, name, "", "secrets", "create")
        return name

    def wait_authorized(self, identity, namespace, group, resource, verb="get", timeout=30):
        """Until the API server's authorizer allows ``identity`` ``verb`` on ``resource`` in ``namespace`` (a
        SubjectAccessReview: the same authorizer a request meets)."""
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                  "spec": {"user": identities.user_name(identity),
                           "resourceAttributes": {"namespace": namespace, "verb": verb, "group": group, "resource": resource}}}
        processes.wait_for(lambda: self.rest.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", review).get("status", {}).get("allowed"),
                           timeout, "the authorizer to allow %s to %s %s in %s" % (identity, verb, resource, namespace), interval=0.02)

    def delete_namespaces(self):
        """Delete the namespaces this handle created (the namespace controller finishes in the background)."""
        while self.namespaces:
            self.rest.delete("/api/v1/namespaces/%s" % self.namespaces.pop(), propagationPolicy="Background")

    # --- audit -------------------------------------------------------------------------------

    def audit_mark(self):
        return self._require_audit().mark()

    def audit(self, **filters):
        """Audit entries (see ``controlplane.audit``): since, mutating, verb, resource, namespace, user, user_agent, path, code."""
        return self._require_audit().entries(**filters)

    def _require_audit(self):
        self.require_lab("reading the API server's audit log")
        return self._audit

    # --- faults and restarts -----------------------------------------------------------------

    def fault_proxy(self):
        from aicr_lab.controlplane.faultproxy import FaultProxy  # pylint: disable=import-outside-toplevel

        return FaultProxy(self.require_lab("the fault proxy")).start()

    def restart(self, component, down=None):
        """Restart a control-plane process (``kube-apiserver``, ``etcd``, …) and wait until ready again."""
        self.require_lab("restarting the control plane").restart(component, down=down)
        self._audit.rest = self.rest = self.plane.admin

    def paused(self, component):
        """A context in which a control-plane process (``kube-apiserver``, ``etcd``, …) is stopped (SIGSTOP), continued
        (SIGCONT) when it ends (``ControlPlane.paused``)."""
        return self.require_lab("pausing the control plane").paused(component)

    # --- convenience -------------------------------------------------------------------------

    def get(self, path):
        try:
            return self.rest.get(path)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
