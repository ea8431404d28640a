"""An adversarial tenant against the collection (issue 35 item 5): authority only from what the stack alone can write.

The lab's ``tenant`` identity holds what an ordinary team holds on a shared cluster: admin of ``tenant-a`` and
ConfigMaps and Secrets in ``default``, nothing cluster-wide (``aicr_lab.controlplane.identities``). Each test performs
one attack as that identity (its own kubeconfig), then runs the collection as users do (ansible-playbook, the roles,
``prune``, ``state: absent``, the reconciler) as the collection's own least-privilege identity, and asserts

* from the API server's audit log: the collection's identity made **zero** writes or deletes (create, update, patch,
  delete) to objects outside its stack;
* every victim object is unchanged (same uid and resourceVersion), and so is the forgery itself;
* the run names the forgery: a warning starting with ``foreign claim:`` and the result key ``foreign_claims``, each
  naming the forged object.

Attacks: (a) a forged helm release record whose manifest names the victims, then prune / ``state: absent``; (b) a
forged labelled object (the stack's label, the collection's managed-by label and field manager); (c) a forged
ClusterStack ConfigMap in ``default`` (the ConfigMap store) with the forger's spec; (d) a stack name that folds onto
another stack's labels and names (refused up front); (e) a forged fabric device-record ConfigMap; (f) the trust model's
precondition: the tenant cannot write where a stack keeps its authority (aicr-system, the stack's namespace).

Every failure message lists each way the attack worked (``the tenant's attack worked: ...``).
"""

import base64
import gzip
import json
import subprocess
import uuid
from pathlib import Path

import pytest
import yaml

from aicr_lab.controlplane import identities
from aicr_lab.controlplane.rest import Rest
from aicr_lab.fabric.pytest_fixture import start_simulator

from lab_support import audit_mutations, dump, example_catalog, namespace_without_lease_role, request_status

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
HELM = BIN / "helm4"
# helm 3 deletes every object a release's manifest names; helm 4 skips those without its ownership annotations for
# that release (a warning), but still rewrites and deletes the forged record itself: both are attacked
HELMS = ["helm3", "helm4"]
EXAMPLE_REPO = "https://charts.aicr.example/examples"
CRITERIA = {"service": "kind", "accelerator": "h100", "intent": "training"}
# The one component every stack here deploys (a chart of ConfigMaps, no dependency): a cheap real release.
KEPT = "example-monitoring"
SKIPPED = ["example-crds", "example-operator", "example-agent", "example-config", "example-jobs"]
ROLLOUT_TASK = "Resolve the cluster's recipe and deploy its components in dependency order"
STACK_INFO_TASK = "Decide which stacks need a run"
FABRIC_TASK = "Converge fabric devices"
FOREIGN_CLAIM = "foreign claim:"
TENANT = identities.TENANT
TENANT_NS = identities.TENANT_NAMESPACE
LEASE_NS = identities.LEASE_NAMESPACE

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not HELM.exists(), reason="helm not installed (make helm)")]


# --- the tenant ---------------------------------------------------------------------------------------------------

class Tenant:
    """The tenant's client (its own kubeconfig) and what it forged, removed afterwards by the lab's admin."""

    def __init__(self, kube):
        self.kube = kube
        self.namespace = TENANT_NS
        self.rest = Rest.from_kubeconfig(kube.kubeconfig_for(TENANT))
        self.forged = []

    def create(self, path, body):
        obj = self.rest.create(path, body)
        self.forged.append("%s/%s" % (path, obj["metadata"]["name"]))
        return obj

    def apply(self, path, body, manager):
        """Server-side apply as ``manager``: a field manager is a name the writer chooses, the collection's too."""
        obj = self.rest.apply(path, body, manager=manager)
        self.forged.append(path)
        return obj

    def close(self):
        for path in self.forged:
            self.kube.rest.delete(path)
        self.rest.close()


@pytest.fixture
def tenant(kube):
    kube.require_lab("the adversarial tenant identity")
    # ``admin`` is an aggregated ClusterRole (the controller-manager fills it in): wait until the tenant has it
    kube.wait_authorized(TENANT, TENANT_NS, "", "secrets", "create")
    handle = Tenant(kube)
    yield handle
    handle.close()


@pytest.fixture
def victim_ns(kube):
    """A namespace of the test's own that the tenant cannot write (the victims live there)."""
    with namespace_without_lease_role(kube, "victim") as name:
        yield name


@pytest.fixture
def catalog(kube, tmp_path):
    return example_catalog(tmp_path, kube.namespace)


def suffix_of(kube):
    return kube.namespace.rsplit("-", 1)[-1]


# --- what the assertions read ----------------------------------------------------------------------------------

def snapshot(kube, *paths):
    """{path: (uid, resourceVersion)} of live objects (read as the lab's admin)."""
    found = {}
    for path in paths:
        obj = kube.get(path)
        assert obj is not None, "set-up: %s does not exist" % path
        found[path] = (obj["metadata"]["uid"], obj["metadata"]["resourceVersion"])
    return found


def changed_victims(kube, victims):
    problems = []
    for path, (uid, version) in sorted(victims.items()):
        live = kube.get(path)
        if live is None:
            problems.append("victim %s was deleted" % path)
        elif (live["metadata"]["uid"], live["metadata"]["resourceVersion"]) != (uid, version):
            problems.append("victim %s changed (uid %s -> %s, resourceVersion %s -> %s)"
                            % (path, uid, live["metadata"]["uid"], version, live["metadata"]["resourceVersion"]))
    return problems


def foreign_writes(kube, mark, identity, own):
    """Each create/update/patch/delete (dry runs left out) ``identity`` sent after ``mark`` to an object ``own(entry)``
    does not accept as the stack's, as text."""
    return ["%s wrote outside its stack: %s %s %s/%s (HTTP %s)"
            % (kube.user(identity), e["verb"], e["resource"], e["namespace"] or "-", e["name"] or "*", e["code"])
            for e in audit_mutations(kube, mark, identity) if not own(e)]


def unnamed_forgery(res, *needles):
    """What is missing for the run to name the forgery: a non-empty ``foreign_claims`` (its shape is the engine's: only
    its text is read) and a warning starting with ``foreign claim:``, each naming every one of ``needles`` (the forged
    object's namespace, name ...)."""
    problems = []
    claims = res.get("foreign_claims")
    if not claims or not all(n in json.dumps(claims, default=str) for n in needles):
        problems.append("the result's foreign_claims does not name the forgery %s (foreign_claims: %s)" % ("/".join(needles), json.dumps(claims)))
    warnings = [str(w) for w in list(res.get("warnings") or []) + list(res.get("fabric_warnings") or [])]
    if not any(w.startswith(FOREIGN_CLAIM) and all(n in w for n in needles) for w in warnings):
        problems.append("no warning starting with %r names the forgery %s (warnings: %s)" % (FOREIGN_CLAIM, "/".join(needles), json.dumps(warnings)))
    return problems


def assert_no_problem(problems, run):
    res_text = run.stdout[-3000:] if run is not None else ""
    assert not problems, "the tenant's attack worked:\n- %s\n(ansible-playbook rc %s; output tail:\n%s)" % (
        "\n- ".join(problems), getattr(run, "rc", None), res_text)


def not_a_crash(res):
    """No module crash: no stderr of a dying module, no Python traceback, no ``unexpected <Exception>`` message (ansible-core
    2.19 puts an ``exception`` key - "(traceback unavailable)" below -vvv - on every failed result, a clean one too)."""
    text = json.dumps(res, default=str)
    assert "module_stderr" not in res and "Traceback (most recent call last)" not in text, dump(res)
    assert " unexpected " not in str(res.get("msg") or ""), dump(res)


# --- runs -------------------------------------------------------------------------------------------------------

def runtime_vars(kube, catalog, example_repo, stack, helm="helm4", **extra):
    """The cluster_runtime role as the ``release`` identity, one cheap component, the stack's Lease and inventory in
    the test's namespace (where the tenant cannot write, as it cannot in aicr-system)."""
    params = {"cluster_runtime_catalog": str(catalog), "cluster_runtime_criteria": CRITERIA, "cluster_runtime_skip_components": SKIPPED,
              "cluster_runtime_kubeconfig": kube.kubeconfig_for("release"), "cluster_runtime_helm_binary": str(BIN / helm),
              "cluster_runtime_repository_mirrors": {EXAMPLE_REPO: example_repo.url}, "cluster_runtime_poll_interval": 0.2,
              "cluster_runtime_timeout": 120, "cluster_runtime_lease_namespace": kube.namespace, "cluster_runtime_stack": stack,
              "cluster_runtime_print_table": False}
    params.update(extra)
    return params


def install_stack(run_playbook, kube, catalog, example_repo, stack, helm="helm4"):
    """The stack deployed (its release of KEPT in the test's namespace); returns the path of that release's Secret."""
    run = run_playbook("adversarial_runtime.yml", extravars=runtime_vars(kube, catalog, example_repo, stack, helm))
    assert run.rc == 0, "set-up: the stack did not deploy: %s" % run.stdout[-4000:]
    return "/api/v1/namespaces/%s/secrets/sh.helm.release.v1.%s.v1" % (kube.namespace, KEPT)


def in_namespace(namespace):
    return lambda entry: entry["namespace"] == namespace


# --- the forgeries ----------------------------------------------------------------------------------------------

def release_payload(name, namespace, manifest):
    """What helm stores in a release Secret's ``release`` key: base64 of the gzipped release JSON (``_helm/storage.py``
    decodes the same)."""
    now = "2026-01-01T00:00:00Z"
    record = {"name": name, "namespace": namespace, "version": 1, "manifest": manifest, "config": {}, "hooks": [],
              "info": {"first_deployed": now, "last_deployed": now, "deleted": "", "description": "Install complete", "status": "deployed"},
              "chart": {"metadata": {"apiVersion": "v2", "name": name, "version": "0.1.0", "type": "application"},
                        "lock": None, "templates": [], "values": {}, "schema": None, "files": []}}
    return base64.b64encode(gzip.compress(json.dumps(record).encode("utf-8"))).decode("ascii")


def victims_in(kube, namespace):
    """A ConfigMap and a ServiceAccount in ``namespace``, created by the lab's admin (kinds the release identity may
    delete; objects no controller rewrites, so their resourceVersion stays put); (manifest naming them, {path: snapshot})."""
    docs = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "victim", "namespace": namespace}, "data": {"precious": "yes"}},
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "victim", "namespace": namespace}}]
    paths = []
    for doc in docs:
        plural = doc["kind"].lower() + "s"
        kube.rest.create("/api/v1/namespaces/%s/%s" % (namespace, plural), doc)
        paths.append("/api/v1/namespaces/%s/%s/victim" % (namespace, plural))
    manifest = "".join("---\n# Source: evil/templates/%s.yaml\n%s" % (doc["kind"].lower(), yaml.safe_dump(doc)) for doc in docs)
    return manifest, snapshot(kube, *paths)


def forge_release(tenant, stack, manifest, name="evil"):
    """``sh.helm.release.v1.<name>.v1`` in the tenant's namespace, labelled as a deployed release of ``stack``."""
    secret = {"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
              "metadata": {"name": "sh.helm.release.v1.%s.v1" % name,
                           "labels": {"owner": "helm", "name": name, "status": "deployed", "version": "1", "aicr.io/stack": stack}},
              "stringData": {"release": release_payload(name, tenant.namespace, manifest)}}
    tenant.create("/api/v1/namespaces/%s/secrets" % tenant.namespace, secret)
    return "/api/v1/namespaces/%s/secrets/%s" % (tenant.namespace, secret["metadata"]["name"])


def helm_uninstall_all(kube, namespace):
    """Every helm release in ``namespace`` uninstalled as the lab's admin (what a successful attack installed there)."""
    listed = subprocess.run([str(HELM), "--kubeconfig", kube.kubeconfig, "list", "-a", "-q", "-n", namespace], capture_output=True, text=True,
                            check=False, timeout=60)
    for release in listed.stdout.split():
        subprocess.run([str(HELM), "--kubeconfig", kube.kubeconfig, "uninstall", release, "-n", namespace, "--wait"], capture_output=True,
                       check=False, timeout=120)


# --- (a) a forged release record -------------------------------------------------------------------------------

@pytest.mark.parametrize("helm", HELMS)
@pytest.mark.parametrize("mode", ["prune", "absent"])
def test_a_forged_release_record_steers_neither_prune_nor_absent(run_playbook, kube, tenant, victim_ns, catalog, example_repo, mode, helm):
    stack = "adv-%s" % suffix_of(kube)
    own_release = install_stack(run_playbook, kube, catalog, example_repo, stack, helm)
    manifest, victims = victims_in(kube, victim_ns)
    forged = forge_release(tenant, stack, manifest)
    victims.update(snapshot(kube, forged))
    if mode == "prune":
        victims.update(snapshot(kube, own_release))  # the stack's own release: pruning leftovers leaves it as it is
    extra = {"cluster_runtime_prune": True} if mode == "prune" else {"cluster_runtime_state": "absent"}
    mark = kube.audit_mark()
    run = run_playbook("adversarial_runtime.yml", extravars=runtime_vars(kube, catalog, example_repo, stack, helm, **extra))
    res = run.result(ROLLOUT_TASK)
    not_a_crash(res)
    problems = foreign_writes(kube, mark, "release", in_namespace(kube.namespace))
    problems += changed_victims(kube, victims)
    problems += unnamed_forgery(res, TENANT_NS, "evil")
    assert_no_problem(problems, run)
    if mode == "absent":  # and the stack's own release did go
        assert kube.get(own_release) is None, dump(res)


# --- (b) a forged labelled object ------------------------------------------------------------------------------

def test_b_a_forged_labelled_object_is_left_alone_by_prune_and_absent(run_playbook, kube, tenant, catalog, example_repo):
    stack = "adv-%s" % suffix_of(kube)
    own_release = install_stack(run_playbook, kube, catalog, example_repo, stack, "helm3")
    name = "forged-%s" % suffix_of(kube)
    path = "/api/v1/namespaces/%s/configmaps/%s" % (TENANT_NS, name)
    # every mark of ownership a writer can set: the stack label, the managed-by label, the component, the field manager
    tenant.apply(path, {"apiVersion": "v1", "kind": "ConfigMap",
                        "metadata": {"name": name, "namespace": TENANT_NS,
                                     "labels": {"aicr.io/stack": stack, "app.kubernetes.io/managed-by": "aicr-runtime", "aicr.io/component": KEPT}},
                        "data": {"claimed": "by the tenant"}}, manager="aicr-runtime")
    victims = snapshot(kube, path)
    problems = []
    for extra in ({"cluster_runtime_prune": True}, {"cluster_runtime_state": "absent"}):
        mark = kube.audit_mark()
        run = run_playbook("adversarial_runtime.yml", extravars=runtime_vars(kube, catalog, example_repo, stack, "helm3", **extra))
        res = run.result(ROLLOUT_TASK)
        not_a_crash(res)
        what = "prune" if "cluster_runtime_prune" in extra else "absent"
        problems += ["%s: %s" % (what, p) for p in foreign_writes(kube, mark, "release", in_namespace(kube.namespace))]
        problems += ["%s: %s" % (what, p) for p in changed_victims(kube, victims)]
        # not named: the run never meets it (the stack deploys no ConfigMap of its own here, and the collection does not
        # sweep the cluster for labelled objects of every kind - a label gives no authority, so an object the inventory
        # does not list cannot steer a prune or an absent; what a run does meet is named, see the unit tests)
    assert_no_problem(problems, run)
    assert kube.get(own_release) is None, "state: absent removed the stack's own release"


# --- (c) a forged ClusterStack ConfigMap -----------------------------------------------------------------------

STORE_NS = "default"  # the ConfigMap store's namespace a user may keep (the tenant writes ConfigMaps there)


def delete_named_in(kube, namespace, marker, kinds=(("configmaps", "/api/v1"),)):
    """Delete (as the lab's admin) every object of ``kinds`` in ``namespace`` whose name holds ``marker`` (a test's
    suffix): what a test left in a namespace other tests share."""
    for plural, group in kinds:
        for item in kube.rest.get("%s/namespaces/%s/%s" % (group, namespace, plural))["items"]:
            if marker in item["metadata"]["name"]:
                kube.rest.delete("%s/namespaces/%s/%s/%s" % (group, namespace, plural, item["metadata"]["name"]))


@pytest.fixture
def store_in_default(kube):
    """The reconciler may keep ConfigMap stacks in ``default`` (the shipped aicr-runtime:stack-configmap bound there, as
    a user keeping them there binds it); the binding and the test's stacks removed afterwards."""
    kube.require_lab("the lab's identities")
    group, resource, verb = identities.bind_cluster_role_in_namespace(kube.rest, STORE_NS, "aicr-runtime:stack-configmap", identities=("reconciler",))
    kube.wait_authorized("reconciler", STORE_NS, group, resource, verb)
    yield suffix_of(kube)
    delete_named_in(kube, STORE_NS, suffix_of(kube))
    kube.rest.delete("/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings/aicr-runtime:stack-configmap" % STORE_NS)


def test_c_a_forged_configmap_stack_is_not_converged(run_playbook, kube, tenant, store_in_default, catalog, example_repo, tmp_path):
    suffix = store_in_default
    name = "gpu-%s" % suffix
    spec = {"criteria": CRITERIA, "catalog": {"source": str(catalog)}, "skipComponents": SKIPPED}
    # the forger's spec: the chart installed into the forger's namespace (any chart, repository or namespace would do)
    forged_spec = dict(spec, componentOverrides={KEPT: {"namespace": TENANT_NS}})
    forged_name = "aicr-stack-forged-%s" % suffix
    tenant.create("/api/v1/namespaces/%s/configmaps" % STORE_NS, {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": forged_name, "labels": {"runtime.aicr.io/stack": name, "app.kubernetes.io/managed-by": "aicr-runtime"}},
        "data": {"spec": json.dumps(forged_spec, sort_keys=True), "status": "{}", "generation": "1"}})
    forged = "/api/v1/namespaces/%s/configmaps/%s" % (STORE_NS, forged_name)
    victims = snapshot(kube, forged)
    params = {"stack_reconcile_kubeconfig": kube.kubeconfig_for("reconciler"), "stack_reconcile_helm_binary": str(HELM),
              "stack_reconcile_repository_mirrors": {EXAMPLE_REPO: example_repo.url}, "stack_reconcile_poll_interval": 0.2,
              "stack_reconcile_timeout": 120, "stack_reconcile_cache_dir": str(tmp_path / "cache"),
              "stack_reconcile_backend": "configmap", "stack_reconcile_namespace": STORE_NS, "stack_reconcile_stacks": {name: spec},
              "stack_reconcile_lease_namespace": kube.namespace, "stack_reconcile_fail_on_error": False}
    mark = kube.audit_mark()
    try:
        run = run_playbook("adversarial_reconcile.yml", extravars=params)
        info = run.result(STACK_INFO_TASK)
        not_a_crash(info)

        def own(entry):  # the stack's namespace, and its own ConfigMap record in the store (named after the stack)
            return entry["namespace"] == kube.namespace or (entry["namespace"] == STORE_NS and entry["resource"] == "configmaps"
                                                            and name in entry["name"])

        problems = foreign_writes(kube, mark, "reconciler", own)
        problems += changed_victims(kube, victims)
        releases = kube.rest.get("/api/v1/namespaces/%s/secrets" % TENANT_NS, labelSelector="owner=helm")["items"]
        problems += ["the forger's spec was converged: helm release %s in %s" % (s["metadata"]["labels"].get("name"), TENANT_NS) for s in releases]
        problems += unnamed_forgery(info, forged_name)
        assert_no_problem(problems, run)
    finally:
        helm_uninstall_all(kube, TENANT_NS)


# --- (d) a stack name that folds onto another ------------------------------------------------------------------

@pytest.mark.parametrize("alias", ["probe/f", "probe f"])
def test_d_a_stack_name_folding_onto_another_stack_is_refused(run_playbook, kube, catalog, example_repo, alias):
    """Who may name a stack (an inventory, a ClusterStack) reaches another stack's releases, Lease and inventory when
    the names derived from it collide: ``probe/f`` and ``probe f`` both become ``probe-f``. Refused up front."""
    suffix = suffix_of(kube)
    stack, alias = "probe-f-%s" % suffix, "%s-%s" % (alias, suffix)
    own_release = install_stack(run_playbook, kube, catalog, example_repo, stack)
    victims = snapshot(kube, own_release)
    mark = kube.audit_mark()
    run = run_playbook("adversarial_runtime.yml", extravars=runtime_vars(kube, catalog, example_repo, alias, cluster_runtime_state="absent"))
    problems = ["%s (stack %r)" % (p, alias) for p in foreign_writes(kube, mark, "release", lambda entry: False)]
    problems += changed_victims(kube, victims)
    # refused by whichever task checks it first (the role's argument spec or gated_release itself)
    failed = [e["event_data"].get("res") or {} for e in run.events if e.get("event") == "runner_on_failed"]
    if run.rc == 0 or not failed:
        problems.append("stack %r was accepted (rc %s), not refused up front" % (alias, run.rc))
    else:
        not_a_crash(failed[0])
        msg = str(failed[0].get("msg") or "")
        if "\n" in msg.strip() or "stack" not in msg or alias not in msg:
            problems.append("the refusal is not one line naming the field stack and the value %r: %r" % (alias, msg))
    assert_no_problem(problems, run)


# --- (e) a forged fabric device record -------------------------------------------------------------------------

@pytest.fixture
def records_in_default(kube):
    """fabric_device may keep its records and Lease in ``default`` (the shipped lease Role bound there to the fabric
    identity, as a user choosing stack_namespace: default binds it); the Role, its binding and the test's records
    and Leases removed afterwards."""
    kube.require_lab("the lab's identities")
    identities.bind_lease_role(kube.rest, STORE_NS, identities=("fabric",))
    kube.wait_authorized("fabric", STORE_NS, "coordination.k8s.io", "leases", "create")
    yield suffix_of(kube)
    delete_named_in(kube, STORE_NS, suffix_of(kube), (("configmaps", "/api/v1"), ("leases", "/apis/coordination.k8s.io/v1")))
    rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/%s" % STORE_NS
    kube.rest.delete("%s/rolebindings/aicr-runtime:lease" % rbac)
    kube.rest.delete("%s/roles/aicr-runtime:lease" % rbac)


def test_e_a_forged_device_record_is_not_acted_on(run_playbook, kube, tenant, records_in_default, tmp_path):
    suffix = records_in_default
    sim = start_simulator(tmp_path / "sim", machines=2)
    try:
        state = sim.control.state()
        machine = sorted(state["machines"], key=lambda m: state["machines"][m]["name"])[0]
        base = dict(sim.credentials, provider="fti_fm", endpoint=sim.endpoint, tenant_id=state["tenant_id"], cluster_id=state["cluster_id"],
                    ca_path=sim.ca_path, timeout=5, poll_interval=0.05, settle_timeout=2, force_detach=True, machine_id=machine, model="A100",
                    kubeconfig=kube.kubeconfig_for("fabric"), stack_namespace=STORE_NS)
        victim_stack, stack = "victim-%s" % suffix, "beta-%s" % suffix
        setup = run_playbook("adversarial_fabric.yml", extravars={"fabric": dict(base, stack=victim_stack, count=1)})
        attached = setup.result(FABRIC_TASK)
        assert not attached.get("failed") and len(attached.get("attached") or []) == 1, "set-up: %s" % dump(attached)
        victim_records = "/api/v1/namespaces/%s/configmaps/aicr-devices-%s" % (STORE_NS, victim_stack)
        record = dict(json.loads(kube.get(victim_records)["data"]["records"])[0], stack=stack)
        # the victim stack's device, claimed for stack beta: a record ConfigMap of the forger's naming
        forged_name = "aicr-devices-forged-%s" % suffix
        tenant.create("/api/v1/namespaces/%s/configmaps" % STORE_NS, {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": forged_name, "labels": {"app.kubernetes.io/managed-by": "aicr-runtime", "aicr.io/stack": stack,
                                                         "app.kubernetes.io/component": "fabric-devices"}},
            "data": {"stack": stack, "records": json.dumps([record])}})
        victims = snapshot(kube, victim_records, "/api/v1/namespaces/%s/configmaps/%s" % (STORE_NS, forged_name))
        devices = sorted(d["res_uuid"] for d in sim.control.devices(machine))
        sim.control.clear_requests()
        mark = kube.audit_mark()
        run = run_playbook("adversarial_fabric.yml", extravars={"fabric": dict(base, stack=stack, count=0)})
        res = run.result(FABRIC_TASK)
        not_a_crash(res)

        def own(entry):  # stack beta's own records and Lease, in its stack namespace
            return entry["namespace"] == STORE_NS and stack in entry["name"]

        problems = foreign_writes(kube, mark, "fabric", own)
        problems += changed_victims(kube, victims)
        problems += ["the fabric was asked to %s %s" % (r["op"], r.get("path") or "") for r in sim.control.requests(mutating=True)]
        after = sorted(d["res_uuid"] for d in sim.control.devices(machine))
        if after != devices:
            problems.append("the victim stack's devices on %s changed: %s -> %s" % (machine, devices, after))
        problems += unnamed_forgery(res, forged_name)
        assert_no_problem(problems, run)
    finally:
        sim.stop()


# --- (f) the trust model's precondition ------------------------------------------------------------------------

def test_f_the_tenant_cannot_write_where_a_stack_keeps_its_authority(kube, tenant):
    """The inventory, Lease and release records a stack trusts live where the tenant cannot write (aicr-system, the
    stack's own namespace); it can write in its namespace and ConfigMaps/Secrets in ``default`` (the other tests' attack
    surface). If this fails, every other test here proves nothing."""
    stack = "adv-%s" % suffix_of(kube)
    inventory = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "aicr-runtime-%s-inventory" % stack},
                 "data": {"inventory": json.dumps({"components": {}, "order": []})}}
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": "aicr-runtime-%s" % stack},
             "spec": {"holderIdentity": "tenant", "leaseDurationSeconds": 3600}}
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "sh.helm.release.v1.evil.v1"}, "stringData": {"release": ""}}
    refused = {}
    for namespace in (LEASE_NS, kube.namespace):
        refused[(namespace, "inventory ConfigMap")] = request_status(lambda: tenant.rest.create("/api/v1/namespaces/%s/configmaps" % namespace, inventory))
        refused[(namespace, "Lease")] = request_status(
            lambda: tenant.rest.create("/apis/coordination.k8s.io/v1/namespaces/%s/leases" % namespace, lease))
        refused[(namespace, "release Secret")] = request_status(lambda: tenant.rest.create("/api/v1/namespaces/%s/secrets" % namespace, secret))
    assert refused == dict((key, 403) for key in refused), refused
    name = "probe-%s" % uuid.uuid4().hex[:6]
    for namespace in (TENANT_NS, "default"):
        tenant.create("/api/v1/namespaces/%s/configmaps" % namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
        tenant.create("/api/v1/namespaces/%s/secrets" % namespace, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name}})
