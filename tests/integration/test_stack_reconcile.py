"""ClusterStack reconcile end to end: ansible-playbook -> stack_reconcile role -> recipe_resolve, gated_release (real helm 4)
-> the lab's real control plane, the role running as the least-privilege identity ``reconciler`` (the shipped
aicr-runtime:release, :example-charts, :stack, :stack-crd and :fabric ClusterRoles); status read back with kubectl.

Each test has its own ClusterStack (named after its namespace, deleted afterwards; the role is limited to it with
stack_reconcile_names) and installs the example catalog into its namespace.

* create a ClusterStack -> reconcile -> Ready, every component listed, conditions True, observedGeneration = generation,
  history with the rollout; a second run makes no mutating API call at all;
* edit the spec (skip a component, change an override) -> the next run converges and prunes, history records it;
  a newer catalog release -> CatalogCurrent False with the version; autoUpdate -> upgrade;
* a blocked rollout (the operator's pods never Ready) -> Degraded with blockedBy and a condition message; the cause
  fixed in the cluster -> Ready without redoing Ready components;
* live progress: while gated_release runs, ``kubectl get clusterstack -w`` sees components move one by one
  (some Ready while others are still Deploying or Pending), with few status writes;
* a run killed midway leaves a true status (Deploying, Ready False, each component as far as the run observed it)
  and the next run resumes;
* history stays at 50; status writes survive real 409 conflicts (a status update held by a fault proxy while the
  spec is edited); the ConfigMap backend from inventory variables;
* spec.componentOverrides chart/repository reach gated_release (values only through recipe_resolve);
* devices: attach, scale down, scale to none / remove the request (status.devices pruned, history), no-op re-run.
"""

import datetime
import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from aicr_lab.controlplane.stages import NEVER_READY, READY_AFTER

from lab_support import audit_mutations, clear_pod_annotation, create_owned_stack, example_catalog, grant_secret_read, wait_until

REPO = Path(__file__).resolve().parents[2]
COLLECTIONS = REPO / ".build" / "collections"
PLAYBOOKS = Path(__file__).resolve().parent / "playbooks"
RECONCILE_PLAYBOOK = str(REPO / "playbooks" / "reconcile.yml")
CLUSTERS_INVENTORY = "[clusters]\nlocalhost ansible_connection=local\n"
BIN = REPO / ".venv" / "bin"
EXAMPLE_REPO = "https://charts.aicr.example/examples"
COMPONENTS = ["example-crds", "example-config", "example-monitoring", "example-operator", "example-agent", "example-jobs"]
CONDITIONS = ["Ready", "RecipeResolved", "DevicesReady", "ComponentsReady", "HealthChecksPassed", "CatalogCurrent"]
IDENTITY = "reconciler"
STACK_CRD = "clusterstacks.runtime.aicr.io"

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


@pytest.fixture
def stack(kube):
    """This test's ClusterStack name (cluster-scoped: unique, and deleted afterwards)."""
    yield kube.namespace
    path = "/apis/runtime.aicr.io/v1alpha1/clusterstacks/%s" % kube.namespace
    if kube.get(path):
        kube.rest.delete(path)


def add_release(directory, version, catalog):
    """A versioned catalog archive in a release directory (the catalog files at the archive root)."""
    directory.mkdir(parents=True, exist_ok=True)
    with tarfile.open(str(directory / ("aicr-catalog-%s.tar.gz" % version)), "w:gz") as tar:
        for path in sorted(catalog.rglob("*")):
            tar.add(str(path), arcname=str(path.relative_to(catalog)), recursive=False)


@pytest.fixture
def catalog(kube, tmp_path):
    """The example catalog, every component in this test's namespace."""
    return example_catalog(tmp_path, kube.namespace)


@pytest.fixture
def releases(tmp_path, catalog):
    directory = tmp_path / "releases"
    add_release(directory, "1.0.0", catalog)
    return directory


def role_vars(kube, example_repo, tmp_path, **extra):
    params = {"stack_reconcile_kubeconfig": kube.kubeconfig_for(IDENTITY), "stack_reconcile_helm_binary": str(BIN / "helm4"),
              "stack_reconcile_repository_mirrors": {EXAMPLE_REPO: example_repo.url}, "stack_reconcile_poll_interval": 0.2,
              "stack_reconcile_timeout": 60, "stack_reconcile_cache_dir": str(tmp_path / "cache"),
              # the shared cluster: only this test's stack; its Lease and inventory in its namespace
              "stack_reconcile_names": [kube.namespace], "stack_reconcile_lease_namespace": kube.namespace,
              "stack_reconcile_namespace": kube.namespace}
    params.update(extra)
    return params


def kubectl(kube, *args, stdin=None):
    """kubectl as the lab's admin (the person editing the spec, and inspection)."""
    out = subprocess.run([str(BIN / "kubectl"), "--kubeconfig", kube.kubeconfig] + list(args), input=stdin, capture_output=True, text=True,
                         check=True, timeout=60)
    return out.stdout


def apply_stack(kube, name, spec):
    doc = {"apiVersion": "runtime.aicr.io/v1alpha1", "kind": "ClusterStack", "metadata": {"name": name}, "spec": spec}
    kubectl(kube, "apply", "-f", "-", stdin=json.dumps(doc))


def get_stack(kube, name):
    return json.loads(kubectl(kube, "get", "clusterstack", name, "-o", "json"))


def conditions(obj):
    return dict((c["type"], c) for c in obj["status"].get("conditions", []))


def mutations(kube, since):
    """Mutating API calls of the role (the reconciler identity) after ``since``, server-side dry runs left out."""
    return audit_mutations(kube, since, IDENTITY)


def helm_releases(kube):
    helm = subprocess.run([str(BIN / "helm4"), "--kubeconfig", kube.kubeconfig, "list", "-n", kube.namespace, "-o", "json"],
                          capture_output=True, text=True, check=True)
    return json.loads(helm.stdout)


def stack_spec(releases, **extra):
    spec = {"criteria": {"service": "kind", "accelerator": "h100", "intent": "training"}, "catalog": {"source": str(releases)}}
    spec.update(extra)
    return spec


def pod_annotations(component, annotations):
    """spec.componentOverrides giving a component's pods lab annotations (kwok stages: never Ready, Ready after …)."""
    return {component: {"values": {"podAnnotations": dict(annotations)}}}


def remove_stack_crd(kube):
    """The ClusterStack CRD gone (the cluster is shared: an earlier test may have installed it), so a run must install it."""
    path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/" + STACK_CRD
    if kube.get(path):
        kube.rest.delete(path)
        wait_until(lambda: kube.get(path) is None, 60, "the ClusterStack CRD to be deleted")


def test_create_reconcile_edit_prune_and_noop(run_playbook, kube, stack, example_repo, catalog, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    remove_stack_crd(kube)
    first = run_playbook("stack_reconcile.yml", extravars=params)
    assert first.rc == 0, first.stdout[-5000:]
    assert first.result("Install the ClusterStack CRD")["changed"] is True
    apply_stack(kube, stack, stack_spec(releases, componentOverrides={"example-agent": {"values": {"env": {"LOG_LEVEL": "info"}}}}))

    run = run_playbook("stack_reconcile.yml", extravars=params)
    assert run.rc == 0, run.stdout[-5000:]
    obj = get_stack(kube, stack)
    status = obj["status"]
    assert status["phase"] == "Ready" and status["observedGeneration"] == obj["metadata"]["generation"] == 1
    assert sorted(c["name"] for c in status["components"]) == sorted(COMPONENTS)
    assert all(c["ready"] and c["phase"] == "Ready" for c in status["components"]) and status["readyComponents"] == "6/6"
    conds = conditions(obj)
    assert sorted(conds) == sorted(CONDITIONS) and all(c["status"] == "True" for c in conds.values()), conds
    assert all(c["observedGeneration"] == 1 for c in conds.values())
    assert "1.0.0 is the newest release" in conds["CatalogCurrent"]["message"] and "operator default" in conds["CatalogCurrent"]["message"]
    assert status["recipe"]["name"] == "h100-kind-training" and status["recipe"]["catalogVersion"] == "1.0.0"
    assert status["recipe"]["catalogDigest"].startswith("sha256:") and "base" in status["recipe"]["appliedOverlays"]
    types = [h["type"] for h in status["history"]]
    assert types[:2] == ["PhaseResolving", "RecipeResolved"] and "PhaseDeploying" in types and types[-2:] == ["PhaseReady", "Reconciled"]
    assert len([t for t in types if t == "ComponentReady"]) == 6
    assert "never reconciled" in status["reconcile"]["reason"]
    # The printer columns, as the API server itself renders them (a Table) for kubectl get.
    table = kubectl(kube, "get", "clusterstack", stack).split("\n")
    assert table[0].split() == ["NAME", "PHASE", "RECIPE", "READY", "AGE"]
    assert table[1].split()[:4] == [stack, "Ready", "h100-kind-training", "6/6"]

    mark = kube.audit_mark()
    again = run_playbook("stack_reconcile.yml", extravars=params)
    assert again.rc == 0, again.stdout[-5000:]
    assert again.changed_tasks == [] and mutations(kube, mark) == [], "an up-to-date stack: no mutating call, not even a timestamp"
    assert "up to date" in json.dumps(again.result("Show the decisions"))

    # Edit the spec: skip a component (pruned) and change an override.
    apply_stack(kube, stack, stack_spec(releases, skipComponents=["example-jobs"],
                                        componentOverrides={"example-agent": {"values": {"env": {"LOG_LEVEL": "debug"}}}}))
    edited = run_playbook("stack_reconcile.yml", extravars=params)
    assert edited.rc == 0, edited.stdout[-5000:]
    obj = get_stack(kube, stack)
    status = obj["status"]
    assert obj["metadata"]["generation"] == 2 and status["observedGeneration"] == 2 and status["phase"] == "Ready"
    assert sorted(c["name"] for c in status["components"]) == sorted(n for n in COMPONENTS if n != "example-jobs")
    agent = [c for c in status["components"] if c["name"] == "example-agent"][0]
    assert agent["revision"] == 2, "the override change upgraded the agent"
    rollout = edited.result("Roll out the stack's recipe")
    assert "uninstall example-jobs (namespace %s)" % kube.namespace in rollout["actions"], rollout["actions"]
    assert "example-jobs" not in [r["name"] for r in helm_releases(kube)]
    last = status["history"][-1]
    assert last["type"] == "Reconciled" and "generation 2 converged (generation 2 != observedGeneration 1)" in last["message"]
    assert "example-jobs" in last["message"]

    mark = kube.audit_mark()
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    assert mutations(kube, mark) == []

    # A newer catalog release: CatalogCurrent goes False with the version, nothing is upgraded (autoUpdate off by default).
    add_release(releases, "1.1.0", catalog)
    newer = run_playbook("stack_reconcile.yml", extravars=params)
    assert newer.rc == 0, newer.stdout[-5000:]
    obj = get_stack(kube, stack)
    cond = conditions(obj)["CatalogCurrent"]
    assert cond["status"] == "False" and cond["reason"] == "NewerAvailable" and "catalog 1.1.0 is available (using 1.0.0" in cond["message"]
    assert obj["status"]["recipe"]["catalogVersion"] == "1.0.0" and obj["status"]["catalog"]["latestVersion"] == "1.1.0"
    assert obj["status"]["history"][-1]["type"] == "CatalogOutdated"
    # autoUpdate on in the spec (overrides the operator default): the next run moves to 1.1.0.
    apply_stack(kube, stack, stack_spec(releases, skipComponents=["example-jobs"], autoUpdate=True,
                                        componentOverrides={"example-agent": {"values": {"env": {"LOG_LEVEL": "debug"}}}}))
    upgraded = run_playbook("stack_reconcile.yml", extravars=params)
    assert upgraded.rc == 0, upgraded.stdout[-5000:]
    obj = get_stack(kube, stack)
    assert obj["status"]["recipe"]["catalogVersion"] == "1.1.0" and conditions(obj)["CatalogCurrent"]["status"] == "True"
    assert obj["status"]["catalog"]["autoUpdate"] is True and obj["status"]["catalog"]["autoUpdateSource"] == "spec"

    # The reconcile-requested annotation forces a run; handled once.
    kubectl(kube, "annotate", "clusterstack", stack, "runtime.aicr.io/reconcile-requested=2026-11-29T15:00:00Z")
    requested = run_playbook("stack_reconcile.yml", extravars=params)
    assert requested.rc == 0
    obj = get_stack(kube, stack)
    assert obj["status"]["reconcile"]["lastHandledReconcileRequest"] == "2026-11-29T15:00:00Z"
    assert "reconcile requested" in obj["status"]["history"][-1]["message"]
    mark = kube.audit_mark()
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    assert mutations(kube, mark) == []


def test_chart_and_repository_overrides_reach_the_rollout(run_playbook, kube, stack, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    apply_stack(kube, stack, stack_spec(releases))
    first = run_playbook("stack_reconcile.yml", extravars=params)
    assert first.rc == 0, first.stdout[-5000:]
    assert first.result("Roll out the stack's recipe")["invocation"]["module_args"]["component_overrides"] == {}

    # A repository nobody serves: only gated_release can have used it (recipe_resolve takes no repository), so the agent fails.
    dead = "http://127.0.0.1:9/nowhere"
    apply_stack(kube, stack, stack_spec(releases, componentOverrides={"example-agent": {"repository": dead, "values": {"env": {"LOG_LEVEL": "debug"}}}}))
    broken = run_playbook("stack_reconcile.yml", extravars=params)
    assert broken.rc != 0
    resolve_args = broken.result("Resolve the stack's recipe")["invocation"]["module_args"]
    assert resolve_args["component_overrides"] == {"example-agent": {"values": {"env": {"LOG_LEVEL": "debug"}}}}
    rollout_args = broken.result("Roll out the stack's recipe")["invocation"]["module_args"]
    assert rollout_args["component_overrides"] == {"example-agent": {"repository": dead}}, "values are applied once, in the resolution"
    comps = dict((c["name"], c) for c in get_stack(kube, stack)["status"]["components"])
    assert comps["example-agent"]["phase"] == "Failed" and comps["example-crds"]["ready"] is True

    # The repository the mirror points at, a chart override, and an override of a skipped component (not passed on): Ready.
    apply_stack(kube, stack, stack_spec(releases, skipComponents=["example-jobs"], componentOverrides={
        "example-agent": {"repository": example_repo.url, "chart": "example-agent", "values": {"env": {"LOG_LEVEL": "debug"}}},
        "example-jobs": {"chart": "no-such-chart"}}))
    fixed = run_playbook("stack_reconcile.yml", extravars=params)
    assert fixed.rc == 0, fixed.stdout[-5000:]
    rollout = fixed.result("Roll out the stack's recipe")
    assert rollout["invocation"]["module_args"]["component_overrides"] == {"example-agent": {"repository": example_repo.url, "chart": "example-agent"}}
    obj = get_stack(kube, stack)
    assert obj["status"]["phase"] == "Ready"
    agent = [c for c in obj["status"]["components"] if c["name"] == "example-agent"][0]
    assert agent["ready"] is True and agent["revision"] == 2
    mark = kube.audit_mark()
    again = run_playbook("stack_reconcile.yml", extravars=params)
    assert again.rc == 0, again.stdout[-5000:]
    assert mutations(kube, mark) == []


def test_blocked_rollout_is_degraded_then_fixed(run_playbook, kube, stack, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path, stack_reconcile_timeout=15)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    # The operator's pods run but never become Ready (a kwok stage their annotation selects).
    apply_stack(kube, stack, stack_spec(releases, componentOverrides=pod_annotations("example-operator", {NEVER_READY: "true"})))
    run = run_playbook("stack_reconcile.yml", extravars=params)
    assert run.rc != 0
    assert "%s: gated_release" % stack in run.result("Fail when a stack did not converge")["msg"]
    obj = get_stack(kube, stack)
    status = obj["status"]
    assert status["phase"] == "Degraded" and status["observedGeneration"] == 1
    comps = dict((c["name"], c) for c in status["components"])
    assert comps["example-operator"]["phase"] == "Failed"
    assert "Deployment %s/example-operator not ready" % kube.namespace in comps["example-operator"]["message"]
    assert comps["example-agent"]["phase"] == "Blocked" and comps["example-agent"]["blockedBy"] == ["example-operator"]
    assert comps["example-crds"]["ready"] is True
    conds = conditions(obj)
    assert conds["ComponentsReady"]["status"] == "False" and conds["ComponentsReady"]["reason"] == "RolloutFailed"
    assert "failed: example-operator" in conds["ComponentsReady"]["message"]
    assert conds["Ready"]["status"] == "False" and conds["Ready"]["reason"] == "Degraded"
    assert conds["RecipeResolved"]["status"] == "True"
    assert status["history"][-1]["type"] == "ReconcileFailed"
    crds_revision = comps["example-crds"]["revision"]

    # The cause fixed in the cluster, not in the spec (the pods become Ready): the same generation converges.
    assert clear_pod_annotation(kube, kube.namespace, NEVER_READY, "app.kubernetes.io/name=example-operator")
    fixed = run_playbook("stack_reconcile.yml", extravars=params)
    assert fixed.rc == 0, fixed.stdout[-5000:]
    obj = get_stack(kube, stack)
    assert obj["status"]["phase"] == "Ready" and all(c["status"] == "True" for c in conditions(obj).values())
    assert "last run ended in phase Degraded" in obj["status"]["reconcile"]["reason"]
    phases = dict((c["name"], c["phase"]) for c in fixed.result("Roll out the stack's recipe")["components"])
    assert phases["example-crds"] == phases["example-monitoring"] == "Unchanged", "Ready components are not redone"
    assert dict((c["name"], c["revision"]) for c in obj["status"]["components"])["example-crds"] == crds_revision


def component_phases(obj):
    return dict((c["name"], c["phase"]) for c in (obj.get("status") or {}).get("components") or [])


class StackWatch:
    """``kubectl get clusterstack <name> -w -o json`` in the background: every version of the object it streams."""

    def __init__(self, kube, name):
        self.seen = []
        self.proc = subprocess.Popen([str(BIN / "kubectl"), "--kubeconfig", kube.kubeconfig, "get", "clusterstack", name, "-w", "-o", "json"],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)  # pylint: disable=consider-using-with
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        decoder = json.JSONDecoder()
        buffered = ""
        for line in self.proc.stdout:
            buffered += line
            while buffered.strip():
                try:
                    obj, end = decoder.raw_decode(buffered.lstrip())
                except ValueError:
                    break
                self.seen.append(obj)
                buffered = buffered.lstrip()[end:]

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.thread.join(10)
        return self.seen


def test_live_component_progress_is_visible_while_the_rollout_runs(run_playbook, kube, stack, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    # The operator's pods become Ready 4 s after they start (a kwok stage their annotation selects).
    apply_stack(kube, stack, stack_spec(releases, componentOverrides=pod_annotations("example-operator", {READY_AFTER: "4s"})))
    watch = StackWatch(kube, stack)
    try:
        mark = kube.audit_mark()
        run = run_playbook("stack_reconcile.yml", extravars=params)
        assert run.rc == 0, run.stdout[-5000:]
        # the watch has streamed the final status (the run's last write) before it is stopped
        wait_until(lambda: any((o.get("status") or {}).get("phase") == "Ready" and (o.get("status") or {}).get("observedGeneration") == 1
                               for o in list(watch.seen)), 30, "the watch to stream the converged stack")
    finally:
        seen = watch.stop()
    snapshots = [component_phases(o) for o in seen if (o.get("status") or {}).get("phase") == "Deploying"]
    assert snapshots, "the watch saw the stack while it was deploying: %s" % [o.get("status", {}).get("phase") for o in seen]
    mixed = [p for p in snapshots if "Ready" in p.values() and set(p.values()) & {"Deploying", "Pending"}]
    assert mixed, "an intermediate status with some components Ready and others still Deploying/Pending: %s" % snapshots
    assert any(p.get("example-crds") == "Ready" and p.get("example-operator") == "Deploying" and p.get("example-agent") == "Pending"
               for p in snapshots), snapshots
    operator = []
    for phases in snapshots + [component_phases(seen[-1])]:
        if phases.get("example-operator") and (not operator or operator[-1] != phases["example-operator"]):
            operator.append(phases["example-operator"])
    assert operator == ["Pending", "Deploying", "Ready"], operator
    obj = get_stack(kube, stack)
    assert obj["status"]["phase"] == "Ready" and all(c["phase"] == "Ready" for c in obj["status"]["components"])
    types = [h["type"] for h in obj["status"]["history"]]
    assert types.count("ComponentDeploying") >= 3 and types.count("ComponentReady") == len(COMPONENTS)
    live = run.result("Roll out the stack's recipe")["live_status"]
    assert live["transitions"] == 2 * len(COMPONENTS) and live["stack"] == stack and live["backend"] == "crd"
    status_writes = [e for e in mutations(kube, mark) if e.get("resource") == "clusterstacks" and e.get("subresource") == "status"]
    assert live["writes"] <= live["transitions"] and len(status_writes) <= live["writes"] + 6, "coalesced, not one write per transition"


def agent_daemonset(kube):
    """What the agent's DaemonSet and pods look like (for failure messages)."""
    daemonsets = kube.rest.get("/apis/apps/v1/namespaces/%s/daemonsets" % kube.namespace)["items"]
    pods = kube.rest.get("/api/v1/namespaces/%s/pods" % kube.namespace, labelSelector="app.kubernetes.io/name=example-agent")["items"]
    return json.dumps({"daemonsets": [(d["metadata"]["generation"], d.get("status")) for d in daemonsets],
                       "pods": [(p["metadata"]["name"], p["metadata"].get("annotations"), (p.get("status") or {}).get("conditions")) for p in pods]})


def test_interrupted_run_leaves_a_true_status_and_resumes(installed_collection, run_playbook, kube, stack, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    # The agent's pods never become Ready: the run waits on its DaemonSet until it is killed.
    apply_stack(kube, stack, stack_spec(releases, componentOverrides=pod_annotations("example-agent", {NEVER_READY: "true"})))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
    assert installed_collection
    log = open(str(tmp_path / "killed-run.log"), "w")  # pylint: disable=consider-using-with
    proc = subprocess.Popen([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", "-e", json.dumps(params),
                             str(PLAYBOOKS / "stack_reconcile.yml")], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        # Live status: wait until the stack itself says the agent is being deployed, and helm has recorded its release
        # (the run is then waiting for the DaemonSet, which never gets Ready: killing it there interrupts no helm).
        def agent_waiting():
            if proc.poll() is not None:
                raise AssertionError("the run ended before it was killed: %s\nDaemonSets: %s" % (
                    (tmp_path / "killed-run.log").read_text()[-3000:], agent_daemonset(kube)))
            return (component_phases(get_stack(kube, stack)).get("example-agent") == "Deploying"
                    and "example-agent" in [r["name"] for r in helm_releases(kube) if r["status"] == "deployed"])
        wait_until(agent_waiting, 120, "the status to show example-agent Deploying", interval=0.3)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()
    obj = get_stack(kube, stack)
    status = obj["status"]
    assert status["phase"] == "Deploying" and conditions(obj)["Ready"]["status"] == "False"
    assert conditions(obj)["Ready"]["reason"] == "Reconciling" and conditions(obj)["RecipeResolved"]["status"] == "True"
    assert "observedGeneration" not in status, "the interrupted run never claimed the generation"
    assert sorted(c["name"] for c in status["components"]) == sorted(COMPONENTS)
    phases = component_phases(obj)
    assert phases["example-agent"] == "Deploying", "the component the run was waiting for: %s" % agent_daemonset(kube)
    assert phases["example-crds"] == phases["example-operator"] == "Ready", "what the run observed Ready (the agent's gate was open)"
    assert set(phases.values()) <= {"Ready", "Deploying", "Pending"}
    deployed = set(r["name"] for r in helm_releases(kube) if r["status"] == "deployed")
    for comp in status["components"]:
        if comp["phase"] == "Ready" and comp["kind"] == "release":
            assert comp["name"] in deployed and comp["revision"] >= 1, "nothing claims to be Ready that is not deployed: %s" % comp
    assert status["readyComponents"] == "%d/%d" % (list(phases.values()).count("Ready"), len(COMPONENTS))

    # The cause fixed in the cluster (the agent's pods become Ready); the same generation resumes.
    assert clear_pod_annotation(kube, kube.namespace, NEVER_READY, "app.kubernetes.io/name=example-agent")
    resumed = run_playbook("stack_reconcile.yml", extravars=params)
    assert resumed.rc == 0, resumed.stdout[-5000:]
    phases = dict((c["name"], c["phase"]) for c in resumed.result("Roll out the stack's recipe")["components"])
    assert phases["example-crds"] == "Unchanged" and phases["example-operator"] == "Unchanged", phases
    obj = get_stack(kube, stack)
    assert obj["status"]["phase"] == "Ready" and obj["status"]["observedGeneration"] == 1
    assert "never reconciled" in obj["status"]["reconcile"]["reason"], "the killed run never claimed the generation"


def test_history_cap_and_status_survives_a_concurrent_spec_edit(run_playbook, kube, stack, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    apply_stack(kube, stack, stack_spec(releases))
    # the filler events as the stack identity (stack_status's least-privilege role)
    filler = run_playbook("stack_status_events.yml", extravars={"kubeconfig": kube.kubeconfig_for("stack"), "name": stack, "count": 48})
    assert filler.rc == 0, filler.stdout[-3000:]
    assert len(get_stack(kube, stack)["status"]["history"]) == 48

    # A fault proxy holds the run's first status write 5 s; meanwhile the spec is edited: the held write then reaches
    # the API server with the old resourceVersion and gets a real 409; the module re-reads and re-applies.
    with kube.fault_proxy() as proxy:
        proxy.add_delay(5, count=1, verbs=["update"], path="clusterstacks/%s/status$" % stack)
        proxied = dict(params, stack_reconcile_kubeconfig=proxy.kubeconfig_for(kube.kubeconfig_for(IDENTITY)))
        outcome = {}
        worker = threading.Thread(target=lambda: outcome.update(run=run_playbook("stack_reconcile.yml", extravars=proxied)))
        worker.start()
        try:
            wait_until(lambda: [r for r in list(proxy.requests) if r["fault"] == "delay"], 120, "the status write to be held")
            apply_stack(kube, stack, stack_spec(releases, resyncInterval="10m"))
        finally:
            worker.join(300)
    run = outcome["run"]
    assert run.rc == 0, run.stdout[-5000:]
    assert run.result("Mark the stack as resolving")["conflicts"] == 1
    obj = get_stack(kube, stack)
    assert obj["spec"]["resyncInterval"] == "10m" and obj["metadata"]["generation"] == 2, "the spec edit survived"
    assert obj["status"]["phase"] == "Ready" and obj["status"]["observedGeneration"] == 1, "the status describes the spec the run started from"
    history = obj["status"]["history"]
    assert len(history) == 50 and history[0]["message"] != "filler 0" and history[-1]["type"] == "Reconciled", "oldest evicted first"

    again = run_playbook("stack_reconcile.yml", extravars=params)
    assert again.rc == 0, again.stdout[-5000:]
    obj = get_stack(kube, stack)
    assert obj["status"]["observedGeneration"] == 2 and len(obj["status"]["history"]) == 50
    assert "generation 2 != observedGeneration 1" in obj["status"]["history"][-1]["message"]


def test_configmap_backend_from_inventory(run_playbook, kube, example_repo, releases, tmp_path):
    """Through playbooks/reconcile.yml (hosts: clusters), stacks from inventory variables, status in ConfigMaps."""
    name = "lab-" + kube.namespace.rsplit("-", 1)[-1]
    configmap = "aicr-stack-" + name
    stacks = {name: stack_spec(releases, skipComponents=["example-jobs"])}
    params = role_vars(kube, example_repo, tmp_path, stack_reconcile_backend="configmap", stack_reconcile_stacks=stacks, stack_reconcile_names=[])
    mark = kube.audit_mark()
    run = run_playbook(RECONCILE_PLAYBOOK, extravars=params, inventory=CLUSTERS_INVENTORY)
    assert run.rc == 0, run.stdout[-5000:]
    # no CRD needed without ClusterStacks (the shared cluster may have it from another test: the run never asked)
    asked = [(e["verb"], e["resource"], e["name"]) for e in kube.audit(since=mark, user=kube.user(IDENTITY))
             if e["resource"] == "clusterstacks" or (e["resource"] == "customresourcedefinitions" and e["name"] == STACK_CRD)]
    assert asked == [], "no CRD needed without ClusterStacks: %s" % asked
    cm = json.loads(kubectl(kube, "get", "configmap", configmap, "-n", kube.namespace, "-o", "json"))
    status = json.loads(cm["data"]["status"])
    assert status["phase"] == "Ready" and status["observedGeneration"] == 1 and cm["data"]["generation"] == "1"
    assert sorted(c["name"] for c in status["components"]) == sorted(n for n in COMPONENTS if n != "example-jobs")
    live = run.result("Roll out the stack's recipe")["live_status"]
    assert live["backend"] == "configmap" and live["transitions"] == 2 * (len(COMPONENTS) - 1) and live["writes"] >= 1
    assert any(h["type"] == "ComponentDeploying" for h in status["history"]), "live transitions reached the ConfigMap"
    mark = kube.audit_mark()
    setup = run_playbook(RECONCILE_PLAYBOOK, extravars=params, inventory=CLUSTERS_INVENTORY)
    assert setup.rc == 0, setup.stdout[-5000:]
    assert mutations(kube, mark) == []
    stacks[name]["skipComponents"] = []
    again = run_playbook(RECONCILE_PLAYBOOK, extravars=params, inventory=CLUSTERS_INVENTORY)
    assert again.rc == 0, again.stdout[-5000:]
    cm = json.loads(kubectl(kube, "get", "configmap", configmap, "-n", kube.namespace, "-o", "json"))
    status = json.loads(cm["data"]["status"])
    assert cm["data"]["generation"] == "2" and status["observedGeneration"] == 2 and len(status["components"]) == 6


def test_devices_attach_scale_down_and_status(run_playbook, kube, stack, fabric_nodes, example_repo, releases, tmp_path):
    """Fake nodes of the test's own whose providerIDs name the fabric simulator's machines; the simulator patches their
    nvidia.com/gpu capacity. The reconciler reads the fabric credentials' Secret through the shipped
    aicr-runtime:fabric-credentials ClusterRole, bound by a RoleBinding in the Secret's namespace only."""
    sim = fabric_nodes.simulator(tmp_path / "sim")
    node0, node1 = fabric_nodes.names
    kube.rest.create("/api/v1/namespaces/%s/secrets" % kube.namespace,
                     {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "fti-credentials"}, "stringData": sim.credentials})
    grant_secret_read(kube, IDENTITY, kube.namespace)
    state = sim.control.state()
    fabric = {"provider": "fti_fm", "endpoint": sim.endpoint, "tenant_id": state["tenant_id"], "ca_path": sim.ca_path,
              "credentials_secret": {"name": "fti-credentials", "namespace": kube.namespace}, "poll_interval": 1, "force_detach": True}
    params = role_vars(kube, example_repo, tmp_path, stack_reconcile_fabric=fabric, stack_reconcile_fabric_nodes=[node0, node1])
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    devices = [{"type": "gpu", "model": "A100", "size": 2, "allocationPolicy": "samenode", "targetNode": node1}]
    apply_stack(kube, stack, stack_spec(releases, devices=devices))
    run = run_playbook("stack_reconcile.yml", extravars=params)
    assert run.rc == 0, run.stdout[-5000:]
    obj = get_stack(kube, stack)
    status = obj["status"]
    assert status["phase"] == "Ready" and len(sim.control.devices(node1)) == 2
    assert [(d["node"], d["model"], d["type"]) for d in status["devices"]] == [(node1, "A100", "gpu")] * 2
    assert sorted(d["resUUID"] for d in status["devices"]) == sorted(d["res_uuid"] for d in sim.control.devices(node1))
    assert all(d["serial"].startswith("GPU-") for d in status["devices"])
    conds = conditions(obj)
    assert conds["DevicesReady"]["status"] == "True" and conds["DevicesReady"]["message"] == "2 devices attached"
    types = [h["type"] for h in status["history"]]
    assert types.index("PhaseAttaching") < types.index("DevicesChanged") < types.index("PhaseDeploying")
    # Each attach reached the status while the devices step ran (fabric_device status_stack), before the step's summary.
    attached = [i for i, t in enumerate(types) if t == "DeviceAttached"]
    assert len(attached) == 2 and types.index("PhaseAttaching") < attached[0] and attached[-1] < types.index("DevicesChanged")
    live = run.result("Converge the fabric devices of every node")["live_status"]
    assert live["stack"] == stack and live["transitions"] == 2 and 1 <= live["writes"] <= 2

    devices[0]["size"] = 1
    apply_stack(kube, stack, stack_spec(releases, devices=devices))
    down = run_playbook("stack_reconcile.yml", extravars=params)
    assert down.rc == 0, down.stdout[-5000:]
    obj = get_stack(kube, stack)
    assert len(sim.control.devices(node1)) == 1 and len(obj["status"]["devices"]) == 1
    assert obj["status"]["observedGeneration"] == 2 and obj["status"]["phase"] == "Ready"
    changed = [h for h in obj["status"]["history"] if h["type"] == "DevicesChanged"][-1]
    assert changed["message"].startswith("attached: none; detached: GPU-")

    mark = kube.audit_mark()
    sim.control.clear_requests()
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    assert mutations(kube, mark) == [] and sim.control.requests(mutating=True) == []

    # Scale to none: what status.devices recorded and the spec no longer requests is detached.
    serial = obj["status"]["devices"][0]["serial"]
    apply_stack(kube, stack, stack_spec(releases, devices=[]))
    none = run_playbook("stack_reconcile.yml", extravars=params)
    assert none.rc == 0, none.stdout[-5000:]
    obj = get_stack(kube, stack)
    assert sim.control.devices(node1) == [] and sim.control.devices(node0) == []
    assert obj["status"]["devices"] == [] and obj["status"]["phase"] == "Ready" and obj["status"]["observedGeneration"] == 3
    conds = conditions(obj)
    assert conds["DevicesReady"]["status"] == "True" and conds["DevicesReady"]["reason"] == "NoDevicesRequested"
    assert conds["DevicesReady"]["message"] == "0 devices attached"
    changed = [h for h in obj["status"]["history"] if h["type"] == "DevicesChanged"][-1]
    assert changed["message"] == "attached: none; detached: %s" % serial
    assert [h for h in obj["status"]["history"] if h["type"] == "DeviceDetached"][-1]["message"].startswith("detached %s gpu A100 %s" % (node1, serial))
    # Second run: nothing to do, nothing sent to the cluster or the fabric.
    mark = kube.audit_mark()
    sim.control.clear_requests()
    again = run_playbook("stack_reconcile.yml", extravars=params)
    assert again.rc == 0, again.stdout[-5000:]
    assert mutations(kube, mark) == [] and sim.control.requests(mutating=True) == []
    # A resync with nothing recorded does not touch the fabric either (no devices step at all).
    forced = run_playbook("stack_reconcile.yml", extravars=dict(params, stack_reconcile_force=True))
    assert forced.rc == 0, forced.stdout[-5000:]
    assert sim.control.requests(mutating=True) == []

    # Removing the request (no devices key at all) detaches as well.
    apply_stack(kube, stack, stack_spec(releases, devices=[{"type": "gpu", "model": "A100", "size": 1, "targetNode": node0}]))
    back = run_playbook("stack_reconcile.yml", extravars=params)
    assert back.rc == 0, back.stdout[-5000:]
    assert len(sim.control.devices(node0)) == 1 and len(get_stack(kube, stack)["status"]["devices"]) == 1
    apply_stack(kube, stack, stack_spec(releases))
    removed = run_playbook("stack_reconcile.yml", extravars=params)
    assert removed.rc == 0, removed.stdout[-5000:]
    assert sim.control.devices(node0) == [] and get_stack(kube, stack)["status"]["devices"] == []


def test_resync_of_a_ready_stack_writes_only_the_timestamp(run_playbook, kube, stack, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    apply_stack(kube, stack, stack_spec(releases, resyncInterval="1s"))
    first = run_playbook("stack_reconcile.yml", extravars=params)
    assert first.rc == 0, first.stdout[-5000:]
    before = get_stack(kube, stack)["status"]
    # the interval elapsed: a second past lastReconcileTime (which has whole seconds, so one more)
    last = datetime.datetime.strptime(before["reconcile"]["lastReconcileTime"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    wait_until(lambda: datetime.datetime.now(datetime.timezone.utc) >= last + datetime.timedelta(seconds=2), 10, "the 1s resync interval to elapse")
    mark = kube.audit_mark()
    resync = run_playbook("stack_reconcile.yml", extravars=params)
    assert resync.rc == 0, resync.stdout[-5000:]
    assert "resync interval 1s elapsed" in json.dumps(resync.result("Show the decisions"))
    writes = mutations(kube, mark)
    assert [(e["verb"], e.get("resource"), e.get("subresource")) for e in writes] == [("update", "clusterstacks", "status")], writes
    after = get_stack(kube, stack)["status"]
    assert after["history"] == before["history"] and after["conditions"] == before["conditions"]
    assert after["reconcile"]["lastReconcileTime"] >= before["reconcile"]["lastReconcileTime"]
    assert "resync interval" in after["reconcile"]["reason"]


def test_check_mode_reports_and_mutates_nothing(run_playbook, kube, stack, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    apply_stack(kube, stack, stack_spec(releases))
    assert run_playbook("stack_reconcile.yml", extravars=params).rc == 0
    apply_stack(kube, stack, stack_spec(releases, skipComponents=["example-jobs"]))
    before = get_stack(kube, stack)
    mark = kube.audit_mark()
    check = run_playbook("stack_reconcile.yml", extravars=params, check=True, diff=True)
    assert check.rc == 0, check.stdout[-5000:]
    assert mutations(kube, mark) == []
    assert get_stack(kube, stack)["status"] == before["status"]
    planned = check.result("Roll out the stack's recipe")
    assert any(a.startswith("would uninstall example-jobs") or "example-jobs" in a for a in planned["actions"]), planned["actions"]
    record = check.result("Record the converged stack")
    assert record["changed"] is True and record["status"]["observedGeneration"] == 2


SECRETS = ("stack-pw-0f9e8d7c", "dsn-pw-1a2b3c4d")


def test_a_specs_secrets_never_reach_the_job_events_and_clear_pending_reaches_the_rollout(run_playbook, kube, stack, example_repo, releases,
                                                                                          tmp_path):
    """issue 35: stack_info returned the spec, recipe_resolve the effective values, both registered without no_log - AWX
    keeps every event. The values still reach helm as they are; no event (nor the ClusterStack status) holds them."""
    params = role_vars(kube, example_repo, tmp_path, stack_reconcile_clear_pending=True)
    setup = run_playbook("stack_reconcile.yml", extravars=params)  # installs the CRD
    assert setup.rc == 0, setup.stdout[-5000:]
    apply_stack(kube, stack, stack_spec(releases, componentOverrides={"example-agent": {"values": {
        "auth": {"password": SECRETS[0]}, "database_url": "postgres://app:%s@db.internal:5432/app" % SECRETS[1]}}}))
    run = run_playbook("stack_reconcile.yml", extravars=params)
    assert run.rc == 0, run.stdout[-5000:]
    leaks = [(e.get("event"), (e.get("event_data") or {}).get("task"), k) for e in run.events for k, v in ((e.get("event_data") or {}).get("res") or {}).items()
             if any(s in json.dumps(v) for s in SECRETS)]
    events = json.dumps(run.events)
    assert all(s not in events and s not in run.stdout for s in SECRETS), (leaks, [s for s in SECRETS if s in events])
    assert all(s not in json.dumps(get_stack(kube, stack)["status"]) for s in SECRETS), "nor the status"
    assert run.result("Read the stack's component overrides as they are (not shown)").get("censored"), "the one raw read is no_log"
    rollout = run.result("Roll out the stack's recipe")
    assert rollout["invocation"]["module_args"]["clear_pending"] is True
    resolved = run.result("Resolve the stack's recipe")
    agent = [c for c in resolved["components"] if c["name"] == "example-agent"][0]
    assert agent["values"]["auth"] == {"password": "<hidden>"} and resolved["values_hidden"] is True
    assert agent["values"]["database_url"] == "postgres://app:<hidden>@db.internal:5432/app"
    deployed = subprocess.run([str(BIN / "helm4"), "--kubeconfig", kube.kubeconfig, "get", "values", "example-agent", "-n", kube.namespace, "-o", "json"],
                              capture_output=True, text=True, check=True)
    assert json.loads(deployed.stdout)["auth"] == {"password": SECRETS[0]}, "helm got the value as it is"


def test_spec_on_failure_rollback_reaches_the_rollout(run_playbook, kube, stack, example_repo, releases, tmp_path):
    """A ClusterStack's ``spec.onFailure: rollback`` reaches gated_release through the role: the operator, installed in this
    run and never Ready, is reported ``left`` (a first install is not rolled back) in the result, the status and the history
    (with ``hold`` there would be no rollback decision at all)."""
    skipped = ["example-agent", "example-config", "example-jobs", "example-monitoring"]
    create_owned_stack(kube, stack, stack_spec(releases, onFailure="rollback", skipComponents=skipped,
                                               componentOverrides=pod_annotations("example-operator", {NEVER_READY: "true"})))
    run = run_playbook("stack_reconcile.yml", extravars=role_vars(kube, example_repo, tmp_path, stack_reconcile_timeout=3))
    assert run.rc != 0
    res = run.result("Roll out the stack's recipe")
    entry = dict((c["name"], c) for c in res["components"])["example-operator"]["rollback"]
    assert entry["status"] == "left" and "installed in this run" in entry["message"], entry
    assert res["rollbacks"] == [entry]
    status = get_stack(kube, stack)["status"]
    assert dict((c["name"], c) for c in status["components"])["example-operator"]["rolledBack"]["status"] == "left"
    assert "RollbackNotDone" in [h["type"] for h in status["history"]]
