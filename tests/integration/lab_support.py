"""Helpers of the integration suites for the lab's shared control plane (imported by the test modules).

A module of its own rather than conftest.py: several conftest.py files exist in the tree and ``from conftest
import ...`` gets whichever was imported first.
"""

import contextlib
import json
import os
import re
import shutil
import subprocess
import uuid
from pathlib import Path

from aicr_lab.controlplane.cluster import node_object
from aicr_lab.controlplane.rest import ApiError
# wait_until: the name modules imported from here
from waiting import wait_for, wait_until  # noqa: F401  pylint: disable=import-error,unused-import

REPO_ROOT = Path(__file__).resolve().parents[2]
EXAMPLE_CATALOG = REPO_ROOT / "examples" / "catalog"
KUBECTL = REPO_ROOT / ".venv" / "bin" / "kubectl"
CLUSTERSTACK_CRD_FILE = REPO_ROOT / "roles" / "stack_reconcile" / "files" / "clusterstack-crd.yml"


def dump(obj):
    """Pretty JSON for assertion messages."""
    return json.dumps(obj, indent=2, sort_keys=True, default=str)[:6000]


def example_catalog(directory, namespace):
    """A copy of the example catalog (in ``directory``) whose components install into ``namespace``.

    The example registry puts every component in ``aicr-demo``; on the shared cluster each test
    deploys into a namespace of its own instead (what the catalog says, not an override, so the
    overrides a test passes are exactly the ones it asserts on).
    """
    target = Path(directory) / "catalog"
    if target.exists():
        shutil.rmtree(str(target))
    shutil.copytree(str(EXAMPLE_CATALOG), str(target))
    for path in target.rglob("*.yaml"):
        text = path.read_text()
        changed = re.sub(r"^(\s*(?:defaultNamespace|namespace): )aicr-demo$", r"\g<1>" + namespace, text, flags=re.M)
        if changed != text:
            path.write_text(changed)
    return target


RBAC = "/apis/rbac.authorization.k8s.io/v1"
LEASE_NAMESPACE = "aicr-system"


@contextlib.contextmanager
def bound_to_shipped_roles(kube, namespace, account, cluster_role):
    """A ServiceAccount ``account`` in ``namespace`` bound to exactly one shipped ClusterRole (a ClusterRoleBinding) and
    the shipped Role aicr-runtime:lease in aicr-system (a RoleBinding), as a user sets up an identity: yields its token.
    ``namespace`` should have no lease Role of its own (``create_namespace(lease_role=False)``): a test namespace binds it
    to its ServiceAccounts. The bindings are deleted afterwards."""
    kube.require_lab("the lab CA")
    subject = {"kind": "ServiceAccount", "name": account, "namespace": namespace}
    kube.rest.create("/api/v1/namespaces/%s/serviceaccounts" % namespace, {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}})
    binding = "aicr-lab:%s-%s" % (account, namespace)
    kube.rest.create("%s/clusterrolebindings" % RBAC, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": binding},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": cluster_role}, "subjects": [subject]})
    kube.rest.create("%s/namespaces/%s/rolebindings" % (RBAC, LEASE_NAMESPACE), {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": binding},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "aicr-runtime:lease"}, "subjects": [subject]})
    token = kube.rest.create("/api/v1/namespaces/%s/serviceaccounts/%s/token" % (namespace, account),
                             {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 600}})["status"]["token"]
    try:
        yield token
    finally:
        kube.rest.delete("%s/clusterrolebindings/%s" % (RBAC, binding))
        kube.rest.delete("%s/namespaces/%s/rolebindings/%s" % (RBAC, LEASE_NAMESPACE, binding))


def request_status(call):
    """The HTTP status of one request to the lab's API server (the 200 family as 200): 403 when the identity is refused."""
    try:
        call()
    except ApiError as exc:
        return exc.status
    return 200


def token_kubeconfig(kube, token, path):
    """A kubeconfig file (0600) for the lab's API server with a bearer token; returns its path."""
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "token",
              "clusters": [{"name": "lab", "cluster": {"server": kube.server, "certificate-authority": str(kube.ca_file)}}],
              "users": [{"name": "token", "user": {"token": token}}],
              "contexts": [{"name": "token", "context": {"cluster": "lab", "user": "token"}}]}
    fd = os.open(str(path), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(config, handle)
    return str(path)


def audit_mutations(kube, since, identity):
    """Mutating API calls ``identity`` made after ``since`` (an audit mark), server-side dry runs left out."""
    return [e for e in kube.audit(since=since, mutating=True, user=kube.user(identity)) if "dryRun" not in (e.get("query") or "")]


def grant_secret_read(kube, identity, namespace):
    """What ``credentials_secret`` needs beyond the shipped cluster-wide roles: ``get`` on Secrets of that one namespace,
    the shipped ClusterRole aicr-runtime:fabric-credentials bound by a RoleBinding there (deleted with the namespace)."""
    kube.rest.create("/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings" % namespace, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "%s-fabric-credentials" % identity},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "aicr-runtime:fabric-credentials"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": kube.user(identity)}]})


def readiness_chart(root, name, annotations, image="registry.lab.example/app:1"):
    """A chart ``root/name`` (version 1.0.0) of one Deployment whose pod carries ``annotations``: the lab's readiness
    annotations (``lab.aicr.io/ready-after``, ``never-ready``) decide when kwok makes it Ready."""
    doc = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "{{ .Release.Name }}"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "{{ .Release.Name }}"}},
                    "template": {"metadata": {"labels": {"app": "{{ .Release.Name }}"}, "annotations": dict(annotations)},
                                 "spec": {"containers": [{"name": "main", "image": image}]}}}}
    (root / name / "templates").mkdir(parents=True)
    (root / name / "Chart.yaml").write_text("apiVersion: v2\nname: %s\nversion: 1.0.0\n" % name)
    (root / name / "templates" / "deployment.yaml").write_text(json.dumps(doc))


@contextlib.contextmanager
def namespace_without_lease_role(kube, prefix):
    """A namespace of the test's own where the lease Role is not bound (as any namespace but aicr-system on a user's
    cluster), deleted afterwards."""
    name = kube.create_namespace(prefix, lease_role=False)
    try:
        yield name
    finally:
        kube.rest.delete("/api/v1/namespaces/%s" % name, propagationPolicy="Background")
        kube.namespaces.remove(name)


def create_owned_stack(kube, name, spec):
    """The ClusterStack ``name`` with ``spec``, created by the lab's admin as its owner would (a stack's spec is not the
    roles' identities' to write), after the CRD as this tree ships it is applied and Established; its document."""
    def admin_kubectl(*args, stdin=None):
        return subprocess.run([str(KUBECTL), "--kubeconfig", kube.kubeconfig] + list(args), input=stdin, capture_output=True, text=True,
                              check=False, timeout=60)

    applied = admin_kubectl("apply", "--server-side", "--force-conflicts", "-f", str(CLUSTERSTACK_CRD_FILE))
    assert applied.returncode == 0, applied.stderr
    established = admin_kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd/clusterstacks.runtime.aicr.io")
    assert established.returncode == 0, established.stderr
    doc = {"apiVersion": "runtime.aicr.io/v1alpha1", "kind": "ClusterStack", "metadata": {"name": name}, "spec": spec}
    # an Established CRD can still be a moment from serving its resource: the apply is retried until it is accepted
    wait_until(lambda: admin_kubectl("apply", "-f", "-", stdin=json.dumps(doc)).returncode == 0, 60, "the ClusterStack %s to be created" % name)
    return doc


def wait_for_default_service_account(kube, namespace):
    """Pods need the namespace's ``default`` ServiceAccount (admission), which the controller creates shortly after it."""
    wait_until(lambda: kube.get("/api/v1/namespaces/%s/serviceaccounts/default" % namespace), 60,
               "the default ServiceAccount of %s" % namespace)


def clear_pod_annotation(kube, namespace, annotation, label_selector=None):
    """Remove ``annotation`` from the namespace's pods (as admin): the cause a kwok stage stood for is fixed in the
    cluster, no spec or values change. Returns the pods changed."""
    query = {"labelSelector": label_selector} if label_selector else {}
    changed = []
    for pod in kube.rest.get("/api/v1/namespaces/%s/pods" % namespace, **query)["items"]:
        if annotation in (pod["metadata"].get("annotations") or {}):
            kube.rest.request("PATCH", "/api/v1/namespaces/%s/pods/%s" % (namespace, pod["metadata"]["name"]),
                              body={"metadata": {"annotations": {annotation: None}}}, content_type="application/merge-patch+json")
            changed.append(pod["metadata"]["name"])
    return changed


class FabricNodes:
    """Fake nodes of a test's own whose providerIDs name fabric machines (``fsas-cdi://<machine uuid>``).

    The session's nodes carry ``kwok://`` providerIDs, and a providerID cannot be changed once set: a fabric test
    adds nodes instead (unique names and machines, so nothing collides with another test), kwok keeps them Ready,
    and they are deleted afterwards. ``simulator(directory)`` starts the fabric simulator over exactly these
    machines, patching the nodes' ``nvidia.com/gpu`` as the device plugin would (with the admin kubeconfig).
    """

    def __init__(self, kube, count=2):
        from aicr_lab.fabric.state import _uid  # pylint: disable=import-outside-toplevel

        self.kube = kube
        tag = uuid.uuid4().hex[:6]
        self.prefix = "fab-%s-" % tag
        self.machine_names = ["fab-%s-m%d" % (tag, i) for i in range(count)]
        self.names = ["%s%d" % (self.prefix, i) for i in range(count)]
        self.machine_ids = [_uid("machine", m) for m in self.machine_names]
        for index, (name, machine) in enumerate(zip(self.names, self.machine_ids)):
            spec = {"name": name, "providerID": "fsas-cdi://%s" % machine,
                    "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "aicr-lab/fabric-test": tag},
                    "capacity": {"cpu": "8", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": "0"}}
            kube.rest.create("/api/v1/nodes", node_object(spec, 100 + index))
        wait_until(self._ready, 60, "nodes %s Ready" % ", ".join(self.names))
        self.sims = []

    def _ready(self):
        for name in self.names:
            node = self.kube.get("/api/v1/nodes/%s" % name) or {}
            if not any(c["type"] == "Ready" and c["status"] == "True" for c in (node.get("status") or {}).get("conditions") or []):
                return False
        return True

    def simulator(self, directory, **options):
        from aicr_lab.fabric.pytest_fixture import start_simulator  # pylint: disable=import-outside-toplevel

        sim = start_simulator(directory, machines=list(self.machine_names), node_prefix=self.prefix, kubeconfig=self.kube.kubeconfig, **options)
        self.sims.append(sim)
        return sim

    def reset(self, sim):
        """The simulator back to its seeded fabric over these machines (``control.reset``, machines kept)."""
        return sim.control.reset(machines=list(self.machine_names), node_prefix=self.prefix)

    def close(self):
        for sim in self.sims:
            sim.stop()
        for name in self.names:
            self.kube.rest.delete("/api/v1/nodes/%s" % name)


# --- processes (the SIGTERM tests find the module's process among ansible-playbook's descendants) -----------------

def processes():
    """{pid: (ppid, argv)} of every process (from /proc)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % entry) as handle:
                ppid = int(handle.read().rsplit(")", 1)[1].split()[1])
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                argv = [a.decode("utf-8", "replace") for a in handle.read().split(b"\0") if a]
        except (OSError, IndexError, ValueError):
            continue
        table[int(entry)] = (ppid, argv)
    return table


def descendants(root):
    table = processes()
    found, frontier = {}, [root]
    while frontier:
        parent = frontier.pop()
        for pid, (ppid, argv) in table.items():
            if ppid == parent and pid not in found:
                found[pid] = argv
                frontier.append(pid)
    return found


def alive(pid):
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def module_process(root, module):
    """The pid of the running module ``module`` (``AnsiballZ_<module>``) under ``root``, or None: the deepest such
    process (a wrapper shell may start it)."""
    found = [pid for pid, argv in descendants(root).items() if any("AnsiballZ_" + module in a for a in argv) and alive(pid)]
    table = processes()
    deepest = [pid for pid in found if not any(table.get(other, (None,))[0] == pid for other in found)]
    return deepest[0] if deepest else None
