"""The shipped RBAC keeps the stack's Lease and inventory in their namespace (issue 15 item 1).

``aicr-runtime:release`` grants neither ConfigMaps nor Leases; the Role ``aicr-runtime:lease``
(``meta/rbac/aicr-system.yaml``), bound in ``aicr-system``, grants exactly what the Lease and the inventory need there.
Against the lab's real API server (RBAC on):

* the lab's ``release`` identity reads and writes Leases in ``aicr-system`` and is refused (403) in a namespace without
  the Role's binding and in ``default``;
* an identity bound to exactly the shipped roles (``aicr-runtime:release`` cluster-wide, the lease Role in
  ``aicr-system``; no chart role) is refused ConfigMaps and Leases outside ``aicr-system`` and may use both inside;
* gated_release with a ``lease_namespace`` where the Role is not bound fails in one line naming what was refused, and
  writes nothing;
* ``aicr-runtime:stack`` reads ClusterStacks and writes their status only: their spec is their owner's.
"""

import json
import re
import uuid
from pathlib import Path

import pytest

from aicr_lab.controlplane.rest import Rest

from lab_support import bound_to_shipped_roles, create_owned_stack, example_catalog, namespace_without_lease_role, request_status, wait_until

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
EXAMPLE_REPO = "https://charts.aicr.example/examples"
LEASE_NS = "aicr-system"
STACK_CRD = "clusterstacks.runtime.aicr.io"
STACKS = "/apis/runtime.aicr.io/v1alpha1/clusterstacks"
CRDS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"


def _lease(namespace, name):
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": name, "namespace": namespace},
            "spec": {"holderIdentity": "rbac-scope-test", "leaseDurationSeconds": 30}}


def _configmap(namespace, name):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": {"inventory": "{}"}}


def _attempts(rest, kind, namespace, name):
    """get, create, update, delete of a Lease or ConfigMap ``name`` in ``namespace``: {verb: status}."""
    base = "/apis/coordination.k8s.io/v1/namespaces/%s/leases" % namespace if kind == "Lease" else "/api/v1/namespaces/%s/configmaps" % namespace
    body = _lease(namespace, name) if kind == "Lease" else _configmap(namespace, name)
    read = {}
    out = {"create": request_status(lambda: rest.create(base, body)), "get": request_status(lambda: read.update(rest.get("%s/%s" % (base, name))))}
    meta = dict(body["metadata"], labels={"x": "1"}, resourceVersion=(read.get("metadata") or {}).get("resourceVersion", "1"))
    out["update"] = request_status(lambda: rest.request("PUT", "%s/%s" % (base, name), body=dict(body, metadata=meta)))
    out["delete"] = request_status(lambda: rest.delete("%s/%s" % (base, name)))
    return out


@pytest.fixture
def unbound_namespace(kube):
    """A namespace where the lease Role is not bound (as any namespace but aicr-system on a user's cluster)."""
    with namespace_without_lease_role(kube, "rbac-unbound") as name:
        yield name


def test_the_release_identity_uses_leases_in_aicr_system_only(kube, unbound_namespace):
    kube.require_lab("the lab's identities")
    rest = Rest.from_kubeconfig(kube.kubeconfig_for("release"))
    name = "rbac-scope-%s" % uuid.uuid4().hex[:6]
    try:
        assert _attempts(rest, "Lease", LEASE_NS, name) == {"create": 200, "get": 200, "update": 200, "delete": 200}
        for namespace in (unbound_namespace, "default"):
            assert _attempts(rest, "Lease", namespace, name) == {"create": 403, "get": 403, "update": 403, "delete": 403}, namespace
    finally:
        rest.close()


@pytest.fixture
def release_only(kube, unbound_namespace):
    """A ServiceAccount bound to exactly the shipped roles of gated_release: ClusterRole aicr-runtime:release
    (ClusterRoleBinding) and Role aicr-runtime:lease in aicr-system (RoleBinding); no chart role, no stack role. It
    lives in the unbound namespace (a test namespace binds the lease Role to its own ServiceAccounts)."""
    with bound_to_shipped_roles(kube, unbound_namespace, "release-only", "aicr-runtime:release") as token:
        rest = Rest(kube.server, kube.ca_file, token=token)
        try:
            yield rest
        finally:
            rest.close()


def test_the_shipped_release_roles_grant_configmaps_and_leases_in_aicr_system_only(kube, release_only, unbound_namespace):
    name = "rbac-scope-%s" % uuid.uuid4().hex[:6]
    everything = {"create": 200, "get": 200, "update": 200, "delete": 200}
    # the bindings are new: wait until the authorizer has them (allowed inside aicr-system) before asserting refusals
    wait_until(lambda: request_status(lambda: release_only.get("/apis/coordination.k8s.io/v1/namespaces/%s/leases/%s" % (LEASE_NS, name))) == 404,
               30, "the new RoleBinding in aicr-system")
    assert _attempts(release_only, "Lease", LEASE_NS, name) == everything
    # the inventory needs get, create, patch (server-side apply) and delete; update is not granted
    assert _attempts(release_only, "ConfigMap", LEASE_NS, name) == {"create": 200, "get": 200, "update": 403, "delete": 200}
    refused = {"create": 403, "get": 403, "update": 403, "delete": 403}
    for namespace in (unbound_namespace, kube.namespace, "default", "kube-system"):
        assert _attempts(release_only, "Lease", namespace, name) == refused, namespace
        assert _attempts(release_only, "ConfigMap", namespace, name) == refused, namespace


def test_the_configmap_status_backend_is_granted_in_its_namespace_only(kube, unbound_namespace):
    """aicr-runtime:stack grants no ConfigMaps; aicr-runtime:stack-configmap, bound by a RoleBinding in the test
    namespace, lets the stack and fabric identities keep a stack's status ConfigMap there and nowhere else."""
    kube.require_lab("the lab's identities")
    name = "rbac-status-%s" % uuid.uuid4().hex[:6]
    refused = {"create": 403, "get": 403, "update": 403, "delete": 403}
    # the fabric identity also has the lease Role in a test namespace (its device records), which grants delete
    in_its_namespace = {"stack": {"create": 200, "get": 200, "update": 200, "delete": 403},
                        "fabric": {"create": 200, "get": 200, "update": 200, "delete": 200}}
    path = "/api/v1/namespaces/%s/configmaps/%s" % (kube.namespace, name)
    for identity, expected in in_its_namespace.items():
        rest = Rest.from_kubeconfig(kube.kubeconfig_for(identity))
        try:
            assert _attempts(rest, "ConfigMap", kube.namespace, name) == expected, identity
            if expected["delete"] == 403:
                kube.rest.delete(path)  # what the identity could not delete
            for namespace in (unbound_namespace, "default", "kube-system"):
                assert _attempts(rest, "ConfigMap", namespace, name) == refused, (identity, namespace)
        finally:
            rest.close()


@pytest.fixture
def owned_stack(kube):
    """A ClusterStack created by the lab's admin, as its owner would; deleted afterwards."""
    doc = create_owned_stack(kube, "rbac-stack-%s" % uuid.uuid4().hex[:6],
                             {"criteria": {"service": "kind", "accelerator": "h100", "intent": "training"}, "catalog": {"source": "/nowhere"}})
    yield doc
    kube.rest.delete("%s/%s" % (STACKS, doc["metadata"]["name"]))


def test_the_stack_role_reads_clusterstacks_and_writes_their_status_only(kube, owned_stack):
    """The identities that run the roles keep a stack's status; what the stack asks for (spec), and whether it exists,
    stay its owner's. Every verb the shipped role does not grant is refused by the lab's RBAC authorizer."""
    kube.require_lab("the lab's identities")
    name = owned_stack["metadata"]["name"]
    path = "%s/%s" % (STACKS, name)
    rest = Rest.from_kubeconfig(kube.kubeconfig_for("stack"))
    try:
        live = rest.get(path)
        edited = dict(live, spec=dict(live["spec"], suspend=True))
        other = dict(owned_stack, metadata={"name": name + "-other"})
        merge = "application/merge-patch+json"
        attempts = {
            "get": request_status(lambda: rest.get(path)),
            "list": request_status(lambda: rest.get(STACKS)),
            "create": request_status(lambda: rest.create(STACKS, other)),
            "update spec": request_status(lambda: rest.request("PUT", path, body=edited)),
            "patch spec": request_status(lambda: rest.request("PATCH", path, body={"spec": {"suspend": True}}, content_type=merge)),
            "delete": request_status(lambda: rest.delete(path)),
            "patch status": request_status(lambda: rest.request("PATCH", path + "/status", body={"status": {"phase": "Ready"}},
                                                                content_type=merge)),
            "update status": request_status(lambda: rest.request("PUT", path + "/status", body=dict(live, status={"phase": "Pending"}))),
            "get its CRD": request_status(lambda: rest.get("%s/%s" % (CRDS, STACK_CRD))),
            "get another CRD": request_status(lambda: rest.get("%s/%s" % (CRDS, "widgets.example.com"))),
            "list CRDs": request_status(lambda: rest.get(CRDS)),
        }
        assert attempts == {"get": 200, "list": 200, "create": 403, "update spec": 403, "patch spec": 403, "delete": 403,
                            "patch status": 403, "update status": 200, "get its CRD": 200, "get another CRD": 403, "list CRDs": 403}
        after = kube.get(path)
        assert after["spec"] == owned_stack["spec"] and after["status"] == {"phase": "Pending"}, after
    finally:
        rest.close()


def refused_rollout(run_playbook, kube, tmp_path, example_repo, lease_namespace):
    """The example rollout as the lab's ``release`` identity with ``lease_namespace``, which must fail: (run, its msg, the
    release identity's successful writes meanwhile but its SelfSubjectAccessReviews - questions, nothing written)."""
    mark = kube.audit_mark()
    catalog = example_catalog(tmp_path, kube.namespace)
    extravars = {"catalog": str(catalog), "criteria": {"service": "kind", "accelerator": "h100", "intent": "training"},
                 "kubeconfig": kube.kubeconfig_for("release"), "helm_binary": str(BIN / "helm4"), "mirrors": {EXAMPLE_REPO: example_repo.url},
                 "lease_namespace": lease_namespace, "stack": kube.namespace}
    run = run_playbook("release_converge.yml", extravars=extravars)
    assert run.rc != 0 and run.failed_tasks == ["Roll out"], run.stdout[-4000:]
    writes = [e for e in kube.audit(since=mark, mutating=True, user=kube.user("release")) if e["code"] < 300 and e["resource"] != "selfsubjectaccessreviews"]
    return run, run.result("Roll out")["msg"], writes


@pytest.mark.helm
@pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")
def test_a_lease_namespace_without_the_lease_role_fails_in_one_line(run_playbook, kube, tmp_path, example_repo, unbound_namespace):
    run, msg, writes = refused_rollout(run_playbook, kube, tmp_path, example_repo, unbound_namespace)
    assert "\n" not in msg and "Traceback" not in run.stdout, msg
    # the verb, resource and namespace refused and the Role to bind there (issue 36)
    assert msg.startswith("lease: this identity may not get leases (coordination.k8s.io) in namespace %s (lease_namespace); bind the Role "
                          "aicr-runtime:lease in namespace %s with a RoleBinding (meta/rbac/aicr-system.yaml; examples/rbac/lease-rolebinding.yaml) - "
                          % (unbound_namespace, unbound_namespace)), msg
    assert run.result("Roll out")["rbac"] == {"kind": "Role", "name": "aicr-runtime:lease", "namespace": unbound_namespace,
                                              "files": ["meta/rbac/aicr-system.yaml", "examples/rbac/lease-rolebinding.yaml"]}
    assert run.result("Roll out")["request"]["verb"] == "get" and run.result("Roll out")["request"]["resource"] == "leases"
    assert re.search(r'returned 403: .*User "%s" cannot \w+ resource "leases" in API group "coordination.k8s.io" in the namespace "%s"'
                     % (re.escape(kube.user("release")), unbound_namespace), msg), msg
    # refused before anything was written: no Lease, no inventory, no release
    assert writes == [], json.dumps(writes)[:2000]


@pytest.mark.helm
@pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")
def test_a_missing_lease_namespace_the_identity_could_not_use_is_not_created(run_playbook, kube, tmp_path, example_repo):
    """Issue 36: gated_release created a missing lease_namespace, then met the 403 of a namespace without the Role's
    binding, and left the namespace behind. Asked first (a SelfSubjectAccessReview), it now stops before creating it."""
    missing = "rbac-missing-%s" % uuid.uuid4().hex[:6]
    _run, msg, writes = refused_rollout(run_playbook, kube, tmp_path, example_repo, missing)
    assert msg.startswith("lease_namespace: namespace %s does not exist, and this identity could not use the stack's Lease there once created "
                          "(a namespace it creates has no RoleBinding): create the namespace and bind the Role aicr-runtime:lease in it first" % missing), msg
    assert kube.get("/api/v1/namespaces/%s" % missing) is None
    assert writes == [], json.dumps(writes)[:2000]


SECRET_VERBS = ("get", "list", "watch", "create", "update", "patch", "delete", "deletecollection")


def _allowed(kube, user, verb, resource, namespace=None, group="", name=None):
    """What the API server's authorizer answers for ``user`` (a SubjectAccessReview: the authorizer a request meets)."""
    attributes = {"verb": verb, "group": group, "resource": resource}
    if namespace:
        attributes["namespace"] = namespace
    if name:
        attributes["name"] = name
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {"user": user, "resourceAttributes": attributes}}
    return bool(kube.rest.create("/apis/authorization.k8s.io/v1/subjectaccessreviews", review).get("status", {}).get("allowed"))


def test_the_release_role_grants_on_secrets_only_the_verbs_helms_secret_driver_uses(kube):
    """Helm's Secret driver gets, lists, creates, updates and deletes release records; nothing patches or watches them."""
    kube.require_lab("the lab's identities")
    role = kube.rest.get("/apis/rbac.authorization.k8s.io/v1/clusterroles/aicr-runtime:release")
    secrets = [r for r in role["rules"] if "secrets" in r.get("resources", [])]
    assert len(secrets) == 1 and sorted(secrets[0]["verbs"]) == ["create", "delete", "get", "list", "update"], secrets
    user = "aicr-lab:release"
    granted = dict((verb, _allowed(kube, user, verb, "secrets", kube.namespace)) for verb in SECRET_VERBS)
    assert granted == {"get": True, "list": True, "watch": False, "create": True, "update": True, "patch": False, "delete": True,
                       "deletecollection": False}


def test_the_release_role_bound_per_namespace_reaches_that_namespace_only(kube, unbound_namespace):
    """docs/rbac.md's namespaced alternative: a RoleBinding of aicr-runtime:release in each release namespace (no
    ClusterRoleBinding) grants helm's Secrets and the readiness reads there, the namespace itself, and nothing elsewhere."""
    kube.require_lab("the lab's identities")
    user = "aicr-lab:release-ns-%s" % uuid.uuid4().hex[:6]
    path = "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings/aicr-runtime-release" % unbound_namespace
    kube.rest.create("/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings" % unbound_namespace, {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "aicr-runtime-release"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "aicr-runtime:release"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    try:
        wait_until(lambda: _allowed(kube, user, "create", "secrets", unbound_namespace), 30, "the new RoleBinding")
        for verb in ("get", "list", "create", "update", "delete"):
            assert _allowed(kube, user, verb, "secrets", unbound_namespace), verb
        assert _allowed(kube, user, "list", "deployments", unbound_namespace, group="apps")
        # gated_release reads the namespace of a component by name: granted by the binding in that namespace
        assert _allowed(kube, user, "get", "namespaces", unbound_namespace, name=unbound_namespace)
        # nothing outside it: no Secret of another namespace, no cluster-wide list, no namespace created, no CRD read
        for namespace in (kube.namespace, "default", "kube-system"):
            assert not _allowed(kube, user, "list", "secrets", namespace), namespace
        assert not _allowed(kube, user, "list", "secrets")
        assert not _allowed(kube, user, "create", "namespaces")
        assert not _allowed(kube, user, "get", "customresourcedefinitions", group="apiextensions.k8s.io")
    finally:
        kube.rest.delete(path)
