"""The lab's least-privilege identities, bound to the ClusterRoles the collection ships.

The suites run the collection as these users, never as cluster-admin: a module that needs a
permission the shipped RBAC lacks fails its test with the API server's own 403. Each identity is
a client certificate of the lab's CA (user ``aicr-lab:<name>``, group ``aicr-lab:users``) with a
kubeconfig of its own, bound with ClusterRoleBindings to the roles listed here. One identity is no
entry point but an attacker: ``tenant``, admin of ``tenant-a`` only (RoleBindings, nothing cluster-wide).

The ClusterRoles themselves are read from the collection's files (``meta/rbac/*.yaml`` and, for
the example charts, ``examples/rbac/*.yaml``), so what is tested is what is shipped.
"""

import copy
import functools
import glob
import os
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[4]
RBAC_FILES = ("meta/rbac/*.yaml", "examples/rbac/*.yaml")
USER_PREFIX = "aicr-lab:"
USERS_GROUP = "aicr-lab:users"

# identity -> the shipped ClusterRoles it is bound to (cluster-wide)
IDENTITIES = {
    # gated_release, cluster_runtime (and their values checks) installing the example charts
    "release": ["aicr-runtime:release", "aicr-runtime:example-charts", "aicr-runtime:stack"],
    # fabric_device, composable_gpu
    "fabric": ["aicr-runtime:fabric", "aicr-runtime:stack"],
    # playbooks/site.yml (make demo): composable_gpu, then cluster_runtime
    "site": ["aicr-runtime:release", "aicr-runtime:example-charts", "aicr-runtime:stack", "aicr-runtime:fabric"],
    # stack_status, stack_info
    "stack": ["aicr-runtime:stack"],
    # crd_publish, chart_api
    "crd-publisher": ["aicr-runtime:crd-publisher"],
    # stack_reconcile: all of it (resolve, devices, rollout, status), plus installing the ClusterStack CRD
    "reconciler": ["aicr-runtime:release", "aicr-runtime:example-charts", "aicr-runtime:stack", "aicr-runtime:stack-crd",
                   "aicr-runtime:fabric"],
    "facts": ["aicr-runtime:facts"],  # cluster_facts (and recipe_resolve with its snapshot)
    # a user with no role at all: what a denied call looks like
    "nobody": [],
    # an adversarial tenant of a shared cluster (no ClusterRole: its rights are TENANT_GRANTS, RoleBindings only)
    "tenant": [],
}
# The tenant: what an ordinary team holds on a cluster the collection also serves. Admin (the built-in ClusterRole
# ``admin``) of its own namespace, and ConfigMaps and Secrets in ``default`` (where many clusters let teams drop
# configuration): nothing cluster-wide, nothing in aicr-system. tests/integration/test_adversarial_tenant.py attacks
# the collection with exactly these rights, so the trust model is tested against what a tenant really has.
TENANT = "tenant"
TENANT_NAMESPACE = "tenant-a"
TENANT_WRITER_ROLE = "aicr-lab:tenant-writer"  # the Role of the tenant's extra rights in ``default``
TENANT_WRITES = ("configmaps", "secrets")
TENANT_WRITE_NAMESPACES = ("default",)
# The identities that run gated_release, or fabric_device with a stack: bound to the Role aicr-runtime:lease
# (meta/rbac/aicr-system.yaml) in the lease namespace aicr-system (and, as a user with a custom lease_namespace or
# stack_namespace does, in each test namespace: bind_lease_role)
LEASE_NAMESPACE = "aicr-system"
LEASE_IDENTITIES = ("release", "fabric", "site", "reconciler")
# The shipped ClusterRoles a user binds by a RoleBinding in one namespace, never cluster-wide (a ClusterRoleBinding would
# reach every ConfigMap of the cluster), and the identities the lab binds each to in every test namespace, as a user
# binds it in the namespace it serves:
NAMESPACED_CLUSTER_ROLES = {
    # the ConfigMap status backend (status_backend / backend: configmap) keeps its stacks there
    "aicr-runtime:stack-configmap": ("release", "fabric", "site", "stack", "reconciler"),
    # cluster_facts from_configmap reads a Snapshot ConfigMap there
    "aicr-runtime:facts-configmap": ("facts",),
}


@functools.lru_cache(maxsize=None)
def _documents(path):
    """The documents of one shipped RBAC file, parsed once per process: every test namespace binds roles from them.
    Callers copy what they hand out (a binder sets a copy's namespace)."""
    with open(path, "r", encoding="utf-8") as handle:
        return tuple(doc for doc in yaml.safe_load_all(handle) if doc)


def _cluster_roles():
    for pattern in RBAC_FILES:
        for path in sorted(glob.glob(str(REPO / pattern))):
            yield from (doc for doc in _documents(path) if doc.get("kind") == "ClusterRole")


def shipped_cluster_roles():
    """The ClusterRole documents of the collection's RBAC files."""
    return [copy.deepcopy(role) for role in _cluster_roles()]


def shipped_lease_role():
    """The Role of ``meta/rbac/aicr-system.yaml`` (the stack's Lease and inventory ConfigMap, in aicr-system)."""
    return copy.deepcopy(next(doc for doc in _documents(str(REPO / "meta" / "rbac" / "aicr-system.yaml")) if doc.get("kind") == "Role"))


def bind_lease_role(rest, namespace, identities=LEASE_IDENTITIES, service_accounts=False):
    """The shipped lease Role in ``namespace`` (a copy there) and one RoleBinding of it to ``identities`` (and, with
    ``service_accounts``, to the namespace's own ServiceAccounts: the tests' service-account identities live there)."""
    role = shipped_lease_role()
    role["metadata"]["namespace"] = namespace
    name = role["metadata"]["name"]
    rest.apply("/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles/%s" % (namespace, name), role)
    groups = ["system:serviceaccounts:%s" % namespace] if service_accounts else []
    _bind_in_namespace(rest, namespace, "Role", name, identities, groups)


def _bind_in_namespace(rest, namespace, kind, role, identities, groups=()):  # pylint: disable=too-many-arguments
    """A RoleBinding named after ``role`` (a ``kind``: Role or ClusterRole) in ``namespace``, to the lab users
    ``identities`` and to ``groups``."""
    rest.apply("/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings/%s" % (namespace, role), {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
        "metadata": {"name": role, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "aicr-lab"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": USER_PREFIX + identity} for identity in identities]
        + [{"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": group} for group in groups],
    })


def bind_cluster_role_in_namespace(rest, namespace, role, identities=None):
    """A RoleBinding of the shipped ClusterRole ``role`` (one of NAMESPACED_CLUSTER_ROLES) in ``namespace``, to
    ``identities`` (by default the table's); return the request its first rule grants, as ``(group, resource, verb)``,
    for a caller that waits until the authorizer allows it."""
    _bind_in_namespace(rest, namespace, "ClusterRole", role, NAMESPACED_CLUSTER_ROLES[role] if identities is None else identities)
    rule = next(found for found in _cluster_roles() if found["metadata"]["name"] == role)["rules"][0]
    return rule["apiGroups"][0], rule["resources"][0], rule["verbs"][0]


def bind_tenant_admin(rest, namespace, identity=TENANT):
    """The built-in ClusterRole ``admin`` bound to ``identity`` in ``namespace`` by a RoleBinding (a tenant's own
    namespace; the namespace must exist)."""
    _bind_in_namespace(rest, namespace, "ClusterRole", "admin", (identity,))


def bind_tenant_writer(rest, namespace, identity=TENANT):
    """A Role ``aicr-lab:tenant-writer`` in ``namespace`` (every verb on ConfigMaps and Secrets there, nothing else)
    and its RoleBinding to ``identity``."""
    rest.apply("/apis/rbac.authorization.k8s.io/v1/namespaces/%s/roles/%s" % (namespace, TENANT_WRITER_ROLE), {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
        "metadata": {"name": TENANT_WRITER_ROLE, "namespace": namespace, "labels": {"app.kubernetes.io/part-of": "aicr-lab"}},
        "rules": [{"apiGroups": [""], "resources": list(TENANT_WRITES),
                   "verbs": ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]}],
    })
    _bind_in_namespace(rest, namespace, "Role", TENANT_WRITER_ROLE, (identity,))


def install_tenant(rest, namespace=TENANT_NAMESPACE):
    """The tenant's namespace (created) with ``admin`` bound there, and its writer Role in TENANT_WRITE_NAMESPACES."""
    rest.apply("/api/v1/namespaces/%s" % namespace, {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": namespace, "labels": {"app.kubernetes.io/part-of": "aicr-lab"}}})
    bind_tenant_admin(rest, namespace)
    for other in TENANT_WRITE_NAMESPACES:
        bind_tenant_writer(rest, other)


def install(plane):
    """Apply the shipped ClusterRoles and create every identity; return ``{name: kubeconfig path}``."""
    from aicr_lab.controlplane.cluster import write_kubeconfig  # pylint: disable=import-outside-toplevel

    rest = plane.admin
    for role in shipped_cluster_roles():
        rest.apply("/apis/rbac.authorization.k8s.io/v1/clusterroles/%s" % role["metadata"]["name"], role)
    # aicr-system, created as a cluster admin does before applying meta/rbac/, with its Role bound to the release identities
    rest.apply("/api/v1/namespaces/%s" % LEASE_NAMESPACE, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": LEASE_NAMESPACE}})
    bind_lease_role(rest, LEASE_NAMESPACE)
    install_tenant(rest)
    directory = plane.dir / "identities"
    directory.mkdir(mode=0o700, exist_ok=True)
    kubeconfigs = {}
    for name, roles in IDENTITIES.items():
        user = USER_PREFIX + name
        cert, key = plane.authority.issue("user-%s" % name, user, organizations=(USERS_GROUP,), client=True)
        for role in roles:
            binding = "%s%s:%s" % (USER_PREFIX, name, role.split(":", 1)[-1])
            rest.apply("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/%s" % binding, {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": binding, "labels": {"app.kubernetes.io/part-of": "aicr-lab"}},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}],
            })
        kubeconfigs[name] = write_kubeconfig(directory / ("%s.kubeconfig" % name), plane.server, plane.ca_file,
                                             {"client-certificate": cert, "client-key": key})
    return kubeconfigs


def user_name(identity):
    return USER_PREFIX + identity


def kubeconfig_paths(directory):
    """The identities' kubeconfigs of a lab written earlier (``{name: path}``)."""
    directory = os.path.join(str(directory), "identities")
    return {name: os.path.join(directory, "%s.kubeconfig" % name) for name in IDENTITIES
            if os.path.isfile(os.path.join(directory, "%s.kubeconfig" % name))}
