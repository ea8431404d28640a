"""ClusterStack reconcile end to end: ansible-playbook -> stack_reconcile role -> recipe_resolve, gated_release (real helm 4)
-> Kubernetes API emulator, status read back with kubectl.

* create a ClusterStack -> reconcile -> Ready, every component listed, conditions True, observedGeneration = generation,
  history with the rollout; a second run makes no mutating API call at all;
* edit the spec (skip a component, change an override) -> the next run converges and prunes, history records it;
  a newer catalog release -> CatalogCurrent False with the version; autoUpdate -> upgrade;
* a blocked rollout -> Degraded with blockedBy and a condition message; fixed -> Ready without redoing Ready components;
* live progress: while gated_release runs, ``kubectl get clusterstack -w`` sees components move one by one
  (some Ready while others are still Deploying or Pending), with few status writes;
* a run killed midway leaves a true status (Deploying, Ready False, each component as far as the run observed it)
  and the next run resumes;
* history stays at 50; status writes survive 409 conflicts; the ConfigMap backend from inventory variables;
* spec.componentOverrides chart/repository reach gated_release (values only through recipe_resolve);
* devices: attach, scale down, scale to none / remove the request (status.devices pruned, history), no-op re-run.
"""

import json
import os
import signal
import subprocess
import sys
import tarfile
import threading
import time
from pathlib import Path

import pytest

from aicr_emulators.kube.pytest_fixture import start_emulator

REPO = Path(__file__).resolve().parents[2]
COLLECTIONS = REPO / ".build" / "collections"
PLAYBOOKS = Path(__file__).resolve().parent / "playbooks"
RECONCILE_PLAYBOOK = str(REPO / "playbooks" / "reconcile.yml")
CLUSTERS_INVENTORY = "[clusters]\nlocalhost ansible_connection=local\n"
BIN = REPO / ".venv" / "bin"
EXAMPLE_CATALOG = REPO / "examples" / "catalog"
EXAMPLE_REPO = "https://charts.aicr.example/examples"
COMPONENTS = ["example-crds", "example-config", "example-monitoring", "example-operator", "example-agent", "example-jobs"]
CONDITIONS = ["Ready", "RecipeResolved", "DevicesReady", "ComponentsReady", "CatalogCurrent"]

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


@pytest.fixture
def kube(tmp_path):
    handle = start_emulator(tmp_path / "kube", default_ready_after=0.2, validate_builtins=False)
    yield handle
    handle.stop()


def add_release(directory, version):
    """A versioned catalog archive in a release directory (the catalog files at the archive root)."""
    directory.mkdir(parents=True, exist_ok=True)
    with tarfile.open(str(directory / ("aicr-catalog-%s.tar.gz" % version)), "w:gz") as tar:
        for path in sorted(EXAMPLE_CATALOG.rglob("*")):
            tar.add(str(path), arcname=str(path.relative_to(EXAMPLE_CATALOG)), recursive=False)


@pytest.fixture
def releases(tmp_path):
    directory = tmp_path / "releases"
    add_release(directory, "1.0.0")
    return directory


def role_vars(kube, example_repo, tmp_path, **extra):
    params = {"stack_reconcile_kubeconfig": kube.kubeconfig, "stack_reconcile_helm_binary": str(BIN / "helm4"),
              "stack_reconcile_repository_mirrors": {EXAMPLE_REPO: example_repo.url}, "stack_reconcile_poll_interval": 0.2,
              "stack_reconcile_timeout": 60, "stack_reconcile_cache_dir": str(tmp_path / "cache")}
    params.update(extra)
    return params


def kubectl(kube, *args, stdin=None):
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
    return [e for e in kube.control.audit(mutating=True, since=since) if "dryRun" not in json.dumps(e)]


def stack_spec(releases, **extra):
    spec = {"criteria": {"service": "kind", "accelerator": "h100", "intent": "training"}, "catalog": {"source": str(releases)}}
    spec.update(extra)
    return spec


def test_create_reconcile_edit_prune_and_noop(run_playbook, kube, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    first = run_playbook("stack_reconcile.yml", extravars=params)
    assert first.rc == 0, first.stdout[-5000:]
    assert first.result("Install the ClusterStack CRD")["changed"] is True
    apply_stack(kube, "gpu", stack_spec(releases, componentOverrides={"example-agent": {"values": {"env": {"LOG_LEVEL": "info"}}}}))

    run = run_playbook("stack_reconcile.yml", extravars=params)
    assert run.rc == 0, run.stdout[-5000:]
    obj = get_stack(kube, "gpu")
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
    # The emulator's Tables have only Name/Age (docs/emulator.md); evaluate the printer columns' JSONPaths with kubectl instead.
    columns = kubectl(kube, "get", "clusterstacks", "-o",
                      "custom-columns=NAME:.metadata.name,PHASE:.status.phase,RECIPE:.status.recipe.name,READY:.status.readyComponents")
    assert columns.split("\n")[1].split() == ["gpu", "Ready", "h100-kind-training", "6/6"]

    mark = kube.control.audit_mark()
    again = run_playbook("stack_reconcile.yml", extravars=params)
    assert again.rc == 0, again.stdout[-5000:]
    assert again.changed_tasks == [] and mutations(kube, mark) == [], "an up-to-date stack: no mutating call, not even a timestamp"
    assert "up to date" in json.dumps(again.result("Show the decisions"))

    # Edit the spec: skip a component (pruned) and change an override.
    apply_stack(kube, "gpu", stack_spec(releases, skipComponents=["example-jobs"],
                                        componentOverrides={"example-agent": {"values": {"env": {"LOG_LEVEL": "debug"}}}}))
    edited = run_playbook("stack_reconcile.yml", extravars=params)
    assert edited.rc == 0, edited.stdout[-5000:]
    obj = get_stack(kube, "gpu")
    status = obj["status"]
    assert obj["metadata"]["generation"] == 2 and status["observedGeneration"] == 2 and status["phase"] == "Ready"
    assert sorted(c["name"] for c in status["components"]) == sorted(n for n in COMPONENTS if n != "example-jobs")
    agent = [c for c in status["components"] if c["name"] == "example-agent"][0]
    assert agent["revision"] == 2, "the override change upgraded the agent"
    rollout = edited.result("Roll out the stack's recipe")
    assert "uninstall example-jobs (namespace aicr-demo)" in rollout["actions"], rollout["actions"]
    helm = subprocess.run([str(BIN / "helm4"), "--kubeconfig", kube.kubeconfig, "list", "-A", "-o", "json"], capture_output=True, text=True, check=True)
    assert "example-jobs" not in [r["name"] for r in json.loads(helm.stdout)]
    last = status["history"][-1]
    assert last["type"] == "Reconciled" and "generation 2 converged (generation 2 != observedGeneration 1)" in last["message"]
    assert "example-jobs" in last["message"]

    mark = kube.control.audit_mark()
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    assert mutations(kube, mark) == []

    # A newer catalog release: CatalogCurrent goes False with the version, nothing is upgraded (autoUpdate off by default).
    add_release(releases, "1.1.0")
    newer = run_playbook("stack_reconcile.yml", extravars=params)
    assert newer.rc == 0, newer.stdout[-5000:]
    obj = get_stack(kube, "gpu")
    cond = conditions(obj)["CatalogCurrent"]
    assert cond["status"] == "False" and cond["reason"] == "NewerAvailable" and "catalog 1.1.0 is available (using 1.0.0" in cond["message"]
    assert obj["status"]["recipe"]["catalogVersion"] == "1.0.0" and obj["status"]["catalog"]["latestVersion"] == "1.1.0"
    assert obj["status"]["history"][-1]["type"] == "CatalogOutdated"
    # autoUpdate on in the spec (overrides the operator default): the next run moves to 1.1.0.
    apply_stack(kube, "gpu", stack_spec(releases, skipComponents=["example-jobs"], autoUpdate=True,
                                        componentOverrides={"example-agent": {"values": {"env": {"LOG_LEVEL": "debug"}}}}))
    upgraded = run_playbook("stack_reconcile.yml", extravars=params)
    assert upgraded.rc == 0, upgraded.stdout[-5000:]
    obj = get_stack(kube, "gpu")
    assert obj["status"]["recipe"]["catalogVersion"] == "1.1.0" and conditions(obj)["CatalogCurrent"]["status"] == "True"
    assert obj["status"]["catalog"]["autoUpdate"] is True and obj["status"]["catalog"]["autoUpdateSource"] == "spec"

    # The reconcile-requested annotation forces a run; handled once.
    kubectl(kube, "annotate", "clusterstack", "gpu", "runtime.aicr.io/reconcile-requested=2026-11-29T15:00:00Z")
    requested = run_playbook("stack_reconcile.yml", extravars=params)
    assert requested.rc == 0
    obj = get_stack(kube, "gpu")
    assert obj["status"]["reconcile"]["lastHandledReconcileRequest"] == "2026-11-29T15:00:00Z"
    assert "reconcile requested" in obj["status"]["history"][-1]["message"]
    mark = kube.control.audit_mark()
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    assert mutations(kube, mark) == []


def test_chart_and_repository_overrides_reach_the_rollout(run_playbook, kube, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    apply_stack(kube, "gpu", stack_spec(releases))
    first = run_playbook("stack_reconcile.yml", extravars=params)
    assert first.rc == 0, first.stdout[-5000:]
    assert first.result("Roll out the stack's recipe")["invocation"]["module_args"]["component_overrides"] == {}

    # A repository nobody serves: only gated_release can have used it (recipe_resolve takes no repository), so the agent fails.
    dead = "http://127.0.0.1:9/nowhere"
    apply_stack(kube, "gpu", stack_spec(releases, componentOverrides={"example-agent": {"repository": dead, "values": {"env": {"LOG_LEVEL": "debug"}}}}))
    broken = run_playbook("stack_reconcile.yml", extravars=params)
    assert broken.rc != 0
    resolve_args = broken.result("Resolve the stack's recipe")["invocation"]["module_args"]
    assert resolve_args["component_overrides"] == {"example-agent": {"values": {"env": {"LOG_LEVEL": "debug"}}}}
    rollout_args = broken.result("Roll out the stack's recipe")["invocation"]["module_args"]
    assert rollout_args["component_overrides"] == {"example-agent": {"repository": dead}}, "values are applied once, by recipe_resolve"
    comps = dict((c["name"], c) for c in get_stack(kube, "gpu")["status"]["components"])
    assert comps["example-agent"]["phase"] == "Failed" and comps["example-crds"]["ready"] is True

    # The repository the mirror points at, a chart override, and an override of a skipped component (not passed on): Ready.
    apply_stack(kube, "gpu", stack_spec(releases, skipComponents=["example-jobs"], componentOverrides={
        "example-agent": {"repository": example_repo.url, "chart": "example-agent", "values": {"env": {"LOG_LEVEL": "debug"}}},
        "example-jobs": {"chart": "no-such-chart"}}))
    fixed = run_playbook("stack_reconcile.yml", extravars=params)
    assert fixed.rc == 0, fixed.stdout[-5000:]
    rollout = fixed.result("Roll out the stack's recipe")
    assert rollout["invocation"]["module_args"]["component_overrides"] == {"example-agent": {"repository": example_repo.url, "chart": "example-agent"}}
    obj = get_stack(kube, "gpu")
    assert obj["status"]["phase"] == "Ready"
    agent = [c for c in obj["status"]["components"] if c["name"] == "example-agent"][0]
    assert agent["ready"] is True and agent["revision"] == 2
    mark = kube.control.audit_mark()
    again = run_playbook("stack_reconcile.yml", extravars=params)
    assert again.rc == 0, again.stdout[-5000:]
    assert mutations(kube, mark) == []


def test_blocked_rollout_is_degraded_then_fixed(run_playbook, kube, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path, stack_reconcile_timeout=4)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    apply_stack(kube, "gpu", stack_spec(releases))
    kube.control.set_readiness(kind="Deployment", name="example-operator*", never_ready=True)
    run = run_playbook("stack_reconcile.yml", extravars=params)
    assert run.rc != 0
    assert "gpu: gated_release" in run.result("Fail when a stack did not converge")["msg"]
    obj = get_stack(kube, "gpu")
    status = obj["status"]
    assert status["phase"] == "Degraded" and status["observedGeneration"] == 1
    comps = dict((c["name"], c) for c in status["components"])
    assert comps["example-operator"]["phase"] == "Failed" and "Deployment aicr-demo/example-operator not ready" in comps["example-operator"]["message"]
    assert comps["example-agent"]["phase"] == "Blocked" and comps["example-agent"]["blockedBy"] == ["example-operator"]
    assert comps["example-crds"]["ready"] is True
    conds = conditions(obj)
    assert conds["ComponentsReady"]["status"] == "False" and conds["ComponentsReady"]["reason"] == "RolloutFailed"
    assert "failed: example-operator" in conds["ComponentsReady"]["message"]
    assert conds["Ready"]["status"] == "False" and conds["Ready"]["reason"] == "Degraded"
    assert conds["RecipeResolved"]["status"] == "True"
    assert status["history"][-1]["type"] == "ReconcileFailed"
    crds_revision = comps["example-crds"]["revision"]

    kube.control.clear_readiness()
    fixed = run_playbook("stack_reconcile.yml", extravars=params)
    assert fixed.rc == 0, fixed.stdout[-5000:]
    obj = get_stack(kube, "gpu")
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


def test_live_component_progress_is_visible_while_the_rollout_runs(run_playbook, kube, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    apply_stack(kube, "gpu", stack_spec(releases))
    kube.control.set_readiness(kind="Deployment", name="example-operator*", ready_after_seconds=4)
    watch = StackWatch(kube, "gpu")
    try:
        mark = kube.control.audit_mark()
        run = run_playbook("stack_reconcile.yml", extravars=params)
        assert run.rc == 0, run.stdout[-5000:]
        time.sleep(1)
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
    obj = get_stack(kube, "gpu")
    assert obj["status"]["phase"] == "Ready" and all(c["phase"] == "Ready" for c in obj["status"]["components"])
    types = [h["type"] for h in obj["status"]["history"]]
    assert types.count("ComponentDeploying") >= 3 and types.count("ComponentReady") == len(COMPONENTS)
    live = run.result("Roll out the stack's recipe")["live_status"]
    assert live["transitions"] == 2 * len(COMPONENTS) and live["stack"] == "gpu" and live["backend"] == "crd"
    status_writes = [e for e in mutations(kube, mark) if e.get("resource") == "clusterstacks" and e.get("subresource") == "status"]
    assert live["writes"] <= live["transitions"] and len(status_writes) <= live["writes"] + 6, "coalesced, not one write per transition"


def test_interrupted_run_leaves_a_true_status_and_resumes(installed_collection, run_playbook, kube, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    apply_stack(kube, "gpu", stack_spec(releases))
    kube.control.set_readiness(kind="DaemonSet", name="example-agent*", never_ready=True)
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
    assert installed_collection
    log = open(str(tmp_path / "killed-run.log"), "w")  # pylint: disable=consider-using-with
    proc = subprocess.Popen([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", "-e", json.dumps(params),
                             str(PLAYBOOKS / "stack_reconcile.yml")], env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        deadline = time.time() + 120
        seen = None
        while time.time() < deadline:
            # Live status: wait until the stack itself says the agent is being deployed (its DaemonSet never gets Ready).
            phases = component_phases(get_stack(kube, "gpu"))
            if phases.get("example-agent") == "Deploying":
                seen = phases
                break
            time.sleep(0.3)
        assert seen is not None, "the status never showed example-agent Deploying: " + (tmp_path / "killed-run.log").read_text()[-3000:]
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()
    obj = get_stack(kube, "gpu")
    status = obj["status"]
    assert status["phase"] == "Deploying" and conditions(obj)["Ready"]["status"] == "False"
    assert conditions(obj)["Ready"]["reason"] == "Reconciling" and conditions(obj)["RecipeResolved"]["status"] == "True"
    assert "observedGeneration" not in status, "the interrupted run never claimed the generation"
    assert sorted(c["name"] for c in status["components"]) == sorted(COMPONENTS)
    phases = component_phases(obj)
    assert phases["example-agent"] == "Deploying", "the component the run was waiting for"
    assert phases["example-crds"] == phases["example-operator"] == "Ready", "what the run observed Ready (the agent's gate was open)"
    assert set(phases.values()) <= {"Ready", "Deploying", "Pending"}
    helm = subprocess.run([str(BIN / "helm4"), "--kubeconfig", kube.kubeconfig, "list", "-A", "-o", "json"], capture_output=True, text=True, check=True)
    deployed = set(r["name"] for r in json.loads(helm.stdout) if r["status"] == "deployed")
    for comp in status["components"]:
        if comp["phase"] == "Ready" and comp["kind"] == "release":
            assert comp["name"] in deployed and comp["revision"] >= 1, "nothing claims to be Ready that is not deployed: %s" % comp
    assert status["readyComponents"] == "%d/%d" % (list(phases.values()).count("Ready"), len(COMPONENTS))

    kube.control.clear_readiness()
    resumed = run_playbook("stack_reconcile.yml", extravars=params)
    assert resumed.rc == 0, resumed.stdout[-5000:]
    phases = dict((c["name"], c["phase"]) for c in resumed.result("Roll out the stack's recipe")["components"])
    assert phases["example-crds"] == "Unchanged" and phases["example-operator"] == "Unchanged", phases
    obj = get_stack(kube, "gpu")
    assert obj["status"]["phase"] == "Ready" and obj["status"]["observedGeneration"] == 1
    assert "never reconciled" in obj["status"]["reconcile"]["reason"], "the killed run never claimed the generation"


def test_history_cap_and_status_survives_a_concurrent_spec_edit(run_playbook, kube, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    apply_stack(kube, "gpu", stack_spec(releases))
    filler = run_playbook("stack_status_events.yml", extravars={"kubeconfig": kube.kubeconfig, "count": 48})
    assert filler.rc == 0, filler.stdout[-3000:]
    assert len(get_stack(kube, "gpu")["status"]["history"]) == 48

    # Hold the run's first status write for 3 s; meanwhile edit the spec: the write gets a real 409, re-reads, re-applies.
    kube.control.add_delay(3, count=1, verbs=["update"], path="clusterstacks/gpu/status$")
    mark = kube.control.audit_mark()
    outcome = {}
    worker = threading.Thread(target=lambda: outcome.update(run=run_playbook("stack_reconcile.yml", extravars=params)))
    worker.start()
    deadline = time.time() + 60
    while time.time() < deadline and not [e for e in kube.control.audit(since=mark, verb="get", path="clusterstacks/gpu$")
                                          if "kubectl" not in str(e.get("userAgent"))]:
        time.sleep(0.1)
    time.sleep(0.5)
    apply_stack(kube, "gpu", stack_spec(releases, resyncInterval="10m"))
    worker.join(300)
    run = outcome["run"]
    assert run.rc == 0, run.stdout[-5000:]
    assert run.result("Mark the stack as resolving")["conflicts"] == 1
    obj = get_stack(kube, "gpu")
    assert obj["spec"]["resyncInterval"] == "10m" and obj["metadata"]["generation"] == 2, "the spec edit survived"
    assert obj["status"]["phase"] == "Ready" and obj["status"]["observedGeneration"] == 1, "the status describes the spec the run started from"
    history = obj["status"]["history"]
    assert len(history) == 50 and history[0]["message"] != "filler 0" and history[-1]["type"] == "Reconciled", "oldest evicted first"

    again = run_playbook("stack_reconcile.yml", extravars=params)
    assert again.rc == 0, again.stdout[-5000:]
    obj = get_stack(kube, "gpu")
    assert obj["status"]["observedGeneration"] == 2 and len(obj["status"]["history"]) == 50
    assert "generation 2 != observedGeneration 1" in obj["status"]["history"][-1]["message"]


def test_configmap_backend_from_inventory(run_playbook, kube, example_repo, releases, tmp_path):
    """Through playbooks/reconcile.yml (hosts: clusters), stacks from inventory variables, status in ConfigMaps."""
    stacks = {"lab": stack_spec(releases, skipComponents=["example-jobs"])}
    params = role_vars(kube, example_repo, tmp_path, stack_reconcile_backend="configmap", stack_reconcile_stacks=stacks)
    run = run_playbook(RECONCILE_PLAYBOOK, extravars=params, inventory=CLUSTERS_INVENTORY)
    assert run.rc == 0, run.stdout[-5000:]
    assert "clusterstacks.runtime.aicr.io" not in kubectl(kube, "get", "crd", "-o", "name"), "no CRD needed without ClusterStacks"
    cm = json.loads(kubectl(kube, "get", "configmap", "aicr-stack-lab", "-n", "default", "-o", "json"))
    status = json.loads(cm["data"]["status"])
    assert status["phase"] == "Ready" and status["observedGeneration"] == 1 and cm["data"]["generation"] == "1"
    assert sorted(c["name"] for c in status["components"]) == sorted(n for n in COMPONENTS if n != "example-jobs")
    live = run.result("Roll out the stack's recipe")["live_status"]
    assert live["backend"] == "configmap" and live["transitions"] == 2 * (len(COMPONENTS) - 1) and live["writes"] >= 1
    assert any(h["type"] == "ComponentDeploying" for h in status["history"]), "live transitions reached the ConfigMap"
    mark = kube.control.audit_mark()
    setup = run_playbook(RECONCILE_PLAYBOOK, extravars=params, inventory=CLUSTERS_INVENTORY)
    assert setup.rc == 0, setup.stdout[-5000:]
    assert mutations(kube, mark) == []
    stacks["lab"]["skipComponents"] = []
    again = run_playbook(RECONCILE_PLAYBOOK, extravars=params, inventory=CLUSTERS_INVENTORY)
    assert again.rc == 0, again.stdout[-5000:]
    cm = json.loads(kubectl(kube, "get", "configmap", "aicr-stack-lab", "-n", "default", "-o", "json"))
    status = json.loads(cm["data"]["status"])
    assert cm["data"]["generation"] == "2" and status["observedGeneration"] == 2 and len(status["components"]) == 6


@pytest.fixture
def wired(tmp_path):
    """A Kubernetes emulator whose nodes carry fsas-cdi:// providerIDs, and a fabric simulator updating their GPU count."""
    from aicr_lab.fabric.pytest_fixture import start_simulator  # pylint: disable=import-outside-toplevel
    from aicr_lab.fabric.state import Fabric  # pylint: disable=import-outside-toplevel

    machines = list(Fabric(machines=2).machines)
    nodes = [{"name": "node-%d" % i, "providerID": "fsas-cdi://%s" % m, "capacity": {"cpu": "8", "memory": "8Gi", "pods": "110", "nvidia.com/gpu": "0"}}
             for i, m in enumerate(machines)]
    handle = start_emulator(tmp_path / "kube", nodes=nodes, default_ready_after=0.2, validate_builtins=False)
    sim = start_simulator(tmp_path / "sim", machines=2, kubeconfig=handle.kubeconfig)
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "fti-credentials", "namespace": "default"}, "stringData": sim.credentials}
    kubectl(handle, "apply", "-f", "-", stdin=json.dumps(secret))
    yield handle, sim
    sim.stop()
    handle.stop()


def test_devices_attach_scale_down_and_status(run_playbook, wired, example_repo, releases, tmp_path):
    kube, sim = wired
    state = sim.control.state()
    fabric = {"provider": "fti_fm", "endpoint": sim.endpoint, "tenant_id": state["tenant_id"], "ca_path": sim.ca_path,
              "credentials_secret": {"name": "fti-credentials", "namespace": "default"}, "poll_interval": 1, "force_detach": True}
    params = role_vars(kube, example_repo, tmp_path, stack_reconcile_fabric=fabric, stack_reconcile_fabric_nodes=["node-0", "node-1"])
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    devices = [{"type": "gpu", "model": "A100", "size": 2, "allocationPolicy": "samenode", "targetNode": "node-1"}]
    apply_stack(kube, "gpu", stack_spec(releases, devices=devices))
    run = run_playbook("stack_reconcile.yml", extravars=params)
    assert run.rc == 0, run.stdout[-5000:]
    obj = get_stack(kube, "gpu")
    status = obj["status"]
    assert status["phase"] == "Ready" and len(sim.control.devices("node-1")) == 2
    assert [(d["node"], d["model"], d["type"]) for d in status["devices"]] == [("node-1", "A100", "gpu")] * 2
    assert sorted(d["resUUID"] for d in status["devices"]) == sorted(d["res_uuid"] for d in sim.control.devices("node-1"))
    assert all(d["serial"].startswith("GPU-") for d in status["devices"])
    conds = conditions(obj)
    assert conds["DevicesReady"]["status"] == "True" and conds["DevicesReady"]["message"] == "2 devices attached"
    types = [h["type"] for h in status["history"]]
    assert types.index("PhaseAttaching") < types.index("DevicesChanged") < types.index("PhaseDeploying")
    # Each attach reached the status while the devices step ran (fabric_device status_stack), before the step's summary.
    attached = [i for i, t in enumerate(types) if t == "DeviceAttached"]
    assert len(attached) == 2 and types.index("PhaseAttaching") < attached[0] and attached[-1] < types.index("DevicesChanged")
    live = run.result("Converge the fabric devices of every node")["live_status"]
    assert live["stack"] == "gpu" and live["transitions"] == 2 and 1 <= live["writes"] <= 2

    devices[0]["size"] = 1
    apply_stack(kube, "gpu", stack_spec(releases, devices=devices))
    down = run_playbook("stack_reconcile.yml", extravars=params)
    assert down.rc == 0, down.stdout[-5000:]
    obj = get_stack(kube, "gpu")
    assert len(sim.control.devices("node-1")) == 1 and len(obj["status"]["devices"]) == 1
    assert obj["status"]["observedGeneration"] == 2 and obj["status"]["phase"] == "Ready"
    changed = [h for h in obj["status"]["history"] if h["type"] == "DevicesChanged"][-1]
    assert changed["message"].startswith("attached: none; detached: GPU-")

    mark = kube.control.audit_mark()
    sim.control.clear_requests()
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    assert mutations(kube, mark) == [] and sim.control.requests(mutating=True) == []

    # Scale to none: what status.devices recorded and the spec no longer requests is detached.
    serial = obj["status"]["devices"][0]["serial"]
    apply_stack(kube, "gpu", stack_spec(releases, devices=[]))
    none = run_playbook("stack_reconcile.yml", extravars=params)
    assert none.rc == 0, none.stdout[-5000:]
    obj = get_stack(kube, "gpu")
    assert sim.control.devices("node-1") == [] and sim.control.devices("node-0") == []
    assert obj["status"]["devices"] == [] and obj["status"]["phase"] == "Ready" and obj["status"]["observedGeneration"] == 3
    conds = conditions(obj)
    assert conds["DevicesReady"]["status"] == "True" and conds["DevicesReady"]["reason"] == "NoDevicesRequested"
    assert conds["DevicesReady"]["message"] == "0 devices attached"
    changed = [h for h in obj["status"]["history"] if h["type"] == "DevicesChanged"][-1]
    assert changed["message"] == "attached: none; detached: %s" % serial
    assert [h for h in obj["status"]["history"] if h["type"] == "DeviceDetached"][-1]["message"].startswith("detached node-1 gpu A100 %s" % serial)
    # Second run: nothing to do, nothing sent to the cluster or the fabric.
    mark = kube.control.audit_mark()
    sim.control.clear_requests()
    again = run_playbook("stack_reconcile.yml", extravars=params)
    assert again.rc == 0, again.stdout[-5000:]
    assert mutations(kube, mark) == [] and sim.control.requests(mutating=True) == []
    # A resync with nothing recorded does not touch the fabric either (no devices step at all).
    forced = run_playbook("stack_reconcile.yml", extravars=dict(params, stack_reconcile_force=True))
    assert forced.rc == 0, forced.stdout[-5000:]
    assert sim.control.requests(mutating=True) == []

    # Removing the request (no devices key at all) detaches as well.
    apply_stack(kube, "gpu", stack_spec(releases, devices=[{"type": "gpu", "model": "A100", "size": 1, "targetNode": "node-0"}]))
    back = run_playbook("stack_reconcile.yml", extravars=params)
    assert back.rc == 0, back.stdout[-5000:]
    assert len(sim.control.devices("node-0")) == 1 and len(get_stack(kube, "gpu")["status"]["devices"]) == 1
    apply_stack(kube, "gpu", stack_spec(releases))
    removed = run_playbook("stack_reconcile.yml", extravars=params)
    assert removed.rc == 0, removed.stdout[-5000:]
    assert sim.control.devices("node-0") == [] and get_stack(kube, "gpu")["status"]["devices"] == []


def test_resync_of_a_ready_stack_writes_only_the_timestamp(run_playbook, kube, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    apply_stack(kube, "gpu", stack_spec(releases, resyncInterval="1s"))
    first = run_playbook("stack_reconcile.yml", extravars=params)
    assert first.rc == 0, first.stdout[-5000:]
    before = get_stack(kube, "gpu")["status"]
    time.sleep(1.2)
    mark = kube.control.audit_mark()
    resync = run_playbook("stack_reconcile.yml", extravars=params)
    assert resync.rc == 0, resync.stdout[-5000:]
    assert "resync interval 1s elapsed" in json.dumps(resync.result("Show the decisions"))
    writes = mutations(kube, mark)
    assert [(e["verb"], e.get("resource"), e.get("subresource")) for e in writes] == [("update", "clusterstacks", "status")], writes
    after = get_stack(kube, "gpu")["status"]
    assert after["history"] == before["history"] and after["conditions"] == before["conditions"]
    assert after["reconcile"]["lastReconcileTime"] >= before["reconcile"]["lastReconcileTime"]
    assert "resync interval" in after["reconcile"]["reason"]


def test_check_mode_reports_and_mutates_nothing(run_playbook, kube, example_repo, releases, tmp_path):
    params = role_vars(kube, example_repo, tmp_path)
    setup = run_playbook("stack_reconcile.yml", extravars=params)
    assert setup.rc == 0, setup.stdout[-5000:]
    apply_stack(kube, "gpu", stack_spec(releases))
    assert run_playbook("stack_reconcile.yml", extravars=params).rc == 0
    apply_stack(kube, "gpu", stack_spec(releases, skipComponents=["example-jobs"]))
    before = get_stack(kube, "gpu")
    mark = kube.control.audit_mark()
    check = run_playbook("stack_reconcile.yml", extravars=params, check=True, diff=True)
    assert check.rc == 0, check.stdout[-5000:]
    assert mutations(kube, mark) == []
    assert get_stack(kube, "gpu")["status"] == before["status"]
    planned = check.result("Roll out the stack's recipe")
    assert any(a.startswith("would uninstall example-jobs") or "example-jobs" in a for a in planned["actions"]), planned["actions"]
    record = check.result("Record the converged stack")
    assert record["changed"] is True and record["status"]["observedGeneration"] == 2
