"""gated_release's gates end to end: ansible-playbook -> installed collection -> real helm -> the lab's real control plane
(kube-apiserver with RBAC, controllers, kwok nodes), the collection running as a least-privilege identity.

* health checks: the example catalog's ``checks/example-operator/health-check.yaml`` (a Chainsaw Test: the Widget CRD
  Established, the operator Deployment with a ready replica) passes once kwok's pods are Ready; the same check made
  to ask for what the cluster does not have fails after its timeout, naming the step, the resource and the expression,
  and its dependent is never installed; the ClusterStack's status says why (HealthChecksPassed False, the component's
  healthCheck entry);
* two of AICR's own catalog checks as shipped (``kai-scheduler``, ``nvidia-dra-driver-gpu``) on the workloads they
  assert on: passing on healthy ones, failing on vacuously ready ones (scaled to 0, scheduled nowhere), gating dependents;
* the readiness pre-flight: a snapshot failing the recipe's constraints stops the run before any change (no mutating
  request in the audit log, no Lease), listing each constraint with expected and actual, in check mode too; the
  ClusterStack's PreflightPassed condition says which. With ``preflight: live`` the facts are read from the cluster (its
  version, its nodes): a server older than the recipe asks stops the run the same way; an identity that may not list
  nodes is refused, naming the permission, before any change.
"""

import datetime
import json
import subprocess
from pathlib import Path

import pytest

from lab_support import audit_mutations, create_owned_stack, example_catalog, wait_until

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
EXAMPLE_REPO = "https://charts.aicr.example/examples"
H100_KIND_TRAINING = {"service": "kind", "accelerator": "h100", "intent": "training"}
IDENTITY = "reconciler"  # gated_release's roles plus the ClusterStack status (status_stack)
STACK_API = "/apis/runtime.aicr.io/v1alpha1/clusterstacks/"

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


def snapshot(server_version, driver):
    return {"kind": "Snapshot", "apiVersion": "aicr.run/v1alpha2", "measurements": [
        {"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": server_version}}]},
        {"type": "GPU", "subtypes": [{"subtype": "smi", "data": {"driver-version": driver, "gpu.model": "NVIDIA H100 80GB HBM3"}}]}]}


PASSING = snapshot("v1.37.2", "560.35.03")
FAILING = snapshot("v1.29.3", "535.104.05")


def _parse(ts):
    return datetime.datetime.strptime(ts, "%Y-%m-%dT%H:%M:%S.%fZ")


def kubectl(kube, *args, stdin=None):
    """kubectl as the lab's admin: the test's set-up and inspection only."""
    return subprocess.run([str(BIN / "kubectl"), "--kubeconfig", kube.kubeconfig] + list(args), input=stdin, capture_output=True, text=True,
                          check=True, timeout=60).stdout


@pytest.fixture
def catalog(kube, tmp_path):
    return example_catalog(tmp_path, kube.namespace)


@pytest.fixture
def stack(kube):
    """A ClusterStack named after the test's namespace, created by the lab's admin; deleted afterwards."""
    create_owned_stack(kube, kube.namespace, {"criteria": H100_KIND_TRAINING, "catalog": {"source": "/nowhere"}})
    yield kube.namespace
    if kube.get(STACK_API + kube.namespace):
        kube.rest.delete(STACK_API + kube.namespace)


def params(kube, catalog, example_repo, **extra):
    out = {"catalog": str(catalog), "criteria": H100_KIND_TRAINING, "kubeconfig": kube.kubeconfig_for(IDENTITY), "helm_binary": str(BIN / "helm4"),
           "mirrors": {EXAMPLE_REPO: example_repo.url}, "lease_namespace": kube.namespace, "stack": kube.namespace}
    out.update(extra)
    return out


def stack_status(kube, name):
    return json.loads(kubectl(kube, "get", "clusterstack", name, "-o", "json"))["status"]


def conditions(status):
    return dict((c["type"], c) for c in status.get("conditions") or [])


def test_a_passing_health_check_gates_its_dependent_and_a_failing_one_blocks_it(run_playbook, kube, catalog, example_repo, stack):
    # 1. the catalog's check as shipped: passes once the operator's pod is Ready (kwok), then example-agent starts
    run = run_playbook("release_gates.yml", extravars=params(kube, catalog, example_repo, snapshot=PASSING, status_stack=stack))
    assert run.rc == 0, run.stdout[-4000:]
    res = run.result("Roll out")
    comps = dict((c["name"], c) for c in res["components"])
    op = comps["example-operator"]
    assert op["phase"] == "Ready" and op["health"]["status"] == "Passed" and op["health"]["operations"] == 2, op
    assert op["health"]["check"] == "example-operator-health-check" and "health check passed (2 operations)" in op["message"]
    agent = comps["example-agent"]
    assert agent["phase"] == "Ready" and agent["health"] == {"status": "Skipped", "message": "no health check"}
    # the agent's gate opened only after the operator was Ready and its check had passed (both inside its duration)
    assert _parse(agent["started"]) >= _parse(op["started"]) + datetime.timedelta(seconds=op["duration"]) - datetime.timedelta(milliseconds=20)
    assert res["preflight"]["passed"] and [c["outcome"] for c in res["preflight"]["constraints"]] == ["passed", "passed"]
    assert res["summary"]["health_checks"] == {"Passed": 1, "Skipped": 5}
    status = stack_status(kube, stack)
    cond = conditions(status)
    assert (cond["PreflightPassed"]["status"], cond["HealthChecksPassed"]["status"]) == ("True", "True"), cond
    entries = dict((c["name"], c) for c in status["components"])
    assert entries["example-operator"]["healthCheck"] == {"status": "Passed", "check": "example-operator-health-check",
                                                          "message": "2 operation(s) passed"}
    # the timeline: the agent waited for the operator, whose health check is a phase of its own; the critical path ends with
    # the component that ended last and goes back through dependencies; the
    # status keeps each component's timing, so the same chart is drawn from the cluster alone
    timing = entries["example-operator"]["timing"]
    assert timing["start"] == op["started"] and timing["seconds"] == op["duration"] and timing["checkSeconds"] == op["health"]["duration"]
    path = res["timeline"].split("%% critical path: ", 1)[1].splitlines()[0].rsplit(" (", 1)[0].split(" -> ")
    ends = dict((c["name"], _parse(c["started"]) + datetime.timedelta(seconds=c["duration"])) for c in res["components"])
    assert path[-1] == max(ends, key=ends.get) and all(path[i] in comps[path[i + 1]]["dependencies"] for i in range(len(path) - 1)), path
    assert any(line.strip().startswith("health check :") and "active" in line for line in res["timeline"].splitlines())
    assert any(line.strip().startswith("wait for example-operator :done,") for line in res["timeline"].splitlines())

    # 2. the check asks for more ready replicas than the operator has: it fails after its timeout (3 s), the agent is
    #    blocked and not installed (uninstalled first, so that the re-run has to install it)
    subprocess.run([str(BIN / "helm4"), "--kubeconfig", kube.kubeconfig, "uninstall", "example-agent", "-n", kube.namespace, "--wait"],
                   check=True, capture_output=True, timeout=120)
    check_file = catalog / "checks" / "example-operator" / "health-check.yaml"
    check_file.write_text(check_file.read_text().replace("(readyReplicas > `0`)", "(readyReplicas > `5`)").replace("assert: 2m", "assert: 3s"))
    mark = kube.audit_mark()
    run = run_playbook("release_gates.yml", extravars=params(kube, catalog, example_repo, snapshot=PASSING, status_stack=stack))
    assert run.rc != 0
    res = run.result("Roll out")
    comps = dict((c["name"], c) for c in res["components"])
    op = comps["example-operator"]
    assert op["phase"] == "Failed" and comps["example-agent"]["phase"] == "Blocked" and comps["example-agent"]["blocked_by"] == ["example-operator"]
    health = op["health"]
    assert (health["status"], health["step"], health["resource"], health["expression"], health["expected"], health["actual"]) == (
        "Failed", "validate-operator-deployment", "Deployment %s/example-operator" % kube.namespace, "status.(readyReplicas > `5`)", "true", "false")
    assert "step validate-operator-deployment: assert Deployment %s/example-operator" % kube.namespace in op["message"]
    assert "failed: example-operator (component example-operator: health check example-operator-health-check failed after" in res["msg"]
    assert "blocked: example-agent (by example-operator)" in res["msg"]
    assert kubectl(kube, "get", "daemonsets", "-n", kube.namespace, "-o", "name").strip() == "", "the blocked agent was not installed"
    assert [e for e in audit_mutations(kube, mark, IDENTITY) if "example-agent" in e.get("path", "")] == []
    status = stack_status(kube, stack)
    cond = conditions(status)["HealthChecksPassed"]
    assert (cond["status"], cond["reason"]) == ("False", "HealthCheckFailed") and "example-operator: health check" in cond["message"]
    entry = dict((c["name"], c) for c in status["components"])["example-operator"]
    assert entry["phase"] == "Failed" and entry["healthCheck"]["expression"] == "status.(readyReplicas > `5`)"
    assert entry["healthCheck"]["resource"] == "Deployment %s/example-operator" % kube.namespace


@pytest.mark.parametrize("check", [False, True], ids=["run", "check-mode"])
def test_the_preflight_refuses_a_snapshot_that_fails_the_constraints(run_playbook, kube, catalog, example_repo, stack, check):
    mark = kube.audit_mark()
    run = run_playbook("release_gates.yml", extravars=params(kube, catalog, example_repo, snapshot=FAILING, status_stack=stack), check=check)
    assert run.rc != 0
    res = run.result("Roll out")
    assert res["msg"] == ("preflight: 2 of 2 constraint(s) not met on the given snapshot; nothing was changed: "
                          "GPU.smi.driver-version expected >= 550.0, got 535.104.05; K8s.server.version expected >= 1.30, got v1.29.3")
    assert res["preflight"]["failed"] == ["GPU.smi.driver-version", "K8s.server.version"] and res["components"] == []
    # nothing changed: no helm, no Lease, no namespace, no inventory - the one write is the stack's status (none in check mode)
    writes = audit_mutations(kube, mark, IDENTITY)
    assert [(e["verb"], e["resource"]) for e in writes] == ([] if check else [("update", "clusterstacks")]), writes
    names = kubectl(kube, "get", "leases,configmaps,secrets", "-n", kube.namespace, "-o", "name").split()
    assert [n for n in names if "aicr-runtime" in n or "sh.helm" in n] == [], names
    status = stack_status_or_empty(kube, stack)
    if check:
        assert "PreflightPassed" not in conditions(status)
    else:
        cond = conditions(status)["PreflightPassed"]
        assert (cond["status"], cond["reason"]) == ("False", "ConstraintsNotMet")
        assert cond["message"] == "GPU.smi.driver-version expected >= 550.0, got 535.104.05; K8s.server.version expected >= 1.30, got v1.29.3"


def test_the_live_preflight_reads_the_cluster_and_refuses_a_too_old_server_before_any_change(run_playbook, kube, catalog, example_repo,
                                                                                             stack):
    server = kube.get("/version")["gitVersion"]  # e.g. v1.37.2
    minor = int(server.lstrip("v").split(".")[1])
    # the test's own copy of the example catalog: the kind overlay asks for the next minor version of the lab's server
    overlay = catalog / "overlays" / "kind.yaml"
    overlay.write_text(overlay.read_text().replace('value: ">= 1.30"', 'value: ">= 1.%d"' % (minor + 1)))
    mark = kube.audit_mark()
    run = run_playbook("release_gates.yml", extravars=params(kube, catalog, example_repo, preflight="live", status_stack=stack))
    assert run.rc != 0
    res = run.result("Roll out")
    assert res["msg"] == ("preflight: 1 of 2 constraint(s) not met on the cluster's facts; nothing was changed: "
                          "K8s.server.version expected >= 1.%d, got %s" % (minor + 1, server)), res["msg"]
    pre = res["preflight"]
    assert (pre["source"], pre["passed"], pre["failed"]) == ("cluster", False, ["K8s.server.version"])
    # nvidia-smi's driver version is a reading of AICR's agent, not of node labels: skipped with a note, as AICR does
    by_name = dict((c["name"], c) for c in pre["constraints"])
    assert (pre["skipped"], by_name["GPU.smi.driver-version"]["outcome"]) == (["GPU.smi.driver-version"], "skipped"), by_name
    assert res["components"] == []
    # the facts were read (the nodes listed), and the one write is the stack's status; no Lease, no release
    assert kube.audit(since=mark, verb="list", resource="nodes", user=kube.user(IDENTITY)), "the nodes were not listed"
    writes = audit_mutations(kube, mark, IDENTITY)
    assert [(e["verb"], e["resource"]) for e in writes] == [("update", "clusterstacks")], writes
    names = kubectl(kube, "get", "leases,configmaps,secrets", "-n", kube.namespace, "-o", "name").split()
    assert [n for n in names if "aicr-runtime" in n or "sh.helm" in n] == [], names
    cond = conditions(stack_status(kube, stack))["PreflightPassed"]
    assert (cond["status"], cond["reason"]) == ("False", "ConstraintsNotMet"), cond


def test_the_live_preflight_needs_to_list_nodes_and_says_so_before_any_change(run_playbook, kube, catalog, example_repo):
    mark = kube.audit_mark()
    # the release identity installs charts but may not read nodes (meta/rbac/release.yaml)
    run = run_playbook("release_gates.yml", extravars=params(kube, catalog, example_repo, preflight="live",
                                                             kubeconfig=kube.kubeconfig_for("release")))
    assert run.rc != 0
    res = run.result("Roll out")
    assert res["msg"].startswith(
        "preflight: live: the cluster's facts could not be read (this mode needs get/list on nodes; give a snapshot or use preflight: never "
        'otherwise): cluster: GET /api/v1/nodes returned 403: nodes is forbidden: User "%s" cannot list resource "nodes"' % kube.user("release")
    ), res["msg"]
    assert (res["field"], res["value"], res["status"]) == ("preflight", "live", 403)
    assert "Traceback" not in run.stdout
    assert audit_mutations(kube, mark, "release") == []


def stack_status_or_empty(kube, name):
    return json.loads(kubectl(kube, "get", "clusterstack", name, "-o", "json")).get("status") or {}


# Real AICR catalog checks (../shared/aicr/catalog/checks) on the lab: the workload each one asserts on, as its chart
# would create it (kwok makes the pods Ready), in the namespace the check names.
REAL_CHECKS = {
    "kai-scheduler": {"namespace": "kai-scheduler", "step": "validate-deployment-exists", "kind": "Deployment", "name": "kai-operator",
                      "expression": "status.(availableReplicas > `0`)"},
    "nvidia-dra-driver-gpu": {"namespace": "nvidia-dra-driver", "step": "validate-kubelet-plugin-daemonset-fully-rolled-out",
                              "kind": "DaemonSet", "name": "nvidia-dra-driver-gpu-kubelet-plugin",
                              "expression": "status.(desiredNumberScheduled > `0`)"},
}


def _workload(kind, name, namespace, ready):
    """The workload a check asserts on. Not ready means *vacuously* ready - what the real checks guard against: a
    Deployment scaled to 0, a DaemonSet whose selector matches no node; both are Ready to gated_release's readiness
    gate (0 of 0), so it is the health check that must catch them."""
    labels = {"app.kubernetes.io/name": name}
    template = {"metadata": {"labels": labels}, "spec": {"containers": [{"name": "main", "image": "registry.example/%s:1.0" % name}]}}
    spec = {"selector": {"matchLabels": labels}, "template": template}
    if kind == "Deployment":
        spec["replicas"] = 1 if ready else 0
    if kind == "DaemonSet" and not ready:
        spec["template"]["spec"]["nodeSelector"] = {"aicr.example/no-such-node": "true"}
    return {"apiVersion": "apps/v1", "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": spec}


@pytest.fixture
def real_check_namespaces(kube):
    """The fixed namespaces the real checks name: removed before and after (admin), so each run starts empty."""
    names = sorted(set(c["namespace"] for c in REAL_CHECKS.values()))

    def remove():
        for name in names:
            if kube.get("/api/v1/namespaces/%s" % name):
                kube.rest.delete("/api/v1/namespaces/%s" % name)
        wait_until(lambda: not any(kube.get("/api/v1/namespaces/%s" % n) for n in names), 120, "the real checks' namespaces to be gone")

    remove()
    yield names
    remove()


@pytest.mark.parametrize("ready", [True, False], ids=["healthy", "unhealthy"])
def test_real_catalog_checks_gate_on_the_lab(run_playbook, kube, shared_dir, tmp_path, real_check_namespaces, ready):
    """Two of the AICR catalog's own checks, as shipped, run read-only against the real control plane: they pass on healthy
    workloads (and only then open their dependents' gates); on workloads that are only vacuously ready they fail naming
    the step, the resource and the expression, and the dependents are never applied."""
    components = []
    for name, spec in sorted(REAL_CHECKS.items()):
        manifest = tmp_path / ("%s.yaml" % name)
        manifest.write_text(json.dumps(_workload(spec["kind"], spec["name"], spec["namespace"], ready)))
        marker = tmp_path / ("%s-after.yaml" % name)
        marker.write_text(json.dumps({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "after-%s" % name, "namespace": spec["namespace"]},
                                      "data": {"gate": "opened"}}))
        check = (shared_dir / "aicr" / "catalog" / "checks" / name / "health-check.yaml").read_text()
        components.append({"name": name, "namespace": spec["namespace"], "manifest_paths": [str(manifest)], "manifest_only": True,
                           "health_check_asserts": check})
        components.append({"name": "after-%s" % name, "namespace": spec["namespace"], "manifest_paths": [str(marker)], "manifest_only": True,
                           "dependencies": [name]})
    extravars = {"components": components, "kubeconfig": kube.kubeconfig_for(IDENTITY), "helm_binary": str(BIN / "helm4"),
                 "stack": kube.namespace, "lease_namespace": kube.namespace, "health_check_timeout": 60 if ready else 4}
    run = run_playbook("release_components.yml", extravars=extravars)
    res = run.result("Roll out")
    comps = dict((c["name"], c) for c in res["components"])
    for name, spec in REAL_CHECKS.items():
        health = comps[name]["health"]
        after = kube.get("/api/v1/namespaces/%s/configmaps/after-%s" % (spec["namespace"], name))
        if ready:
            assert run.rc == 0, run.stdout[-4000:]
            assert comps[name]["phase"] == "Ready" and health["status"] == "Passed", comps[name]
            assert health["check"] == "%s-health-check" % name and health["operations"] >= 5, health
            assert comps["after-%s" % name]["phase"] == "Ready" and after is not None
        else:
            assert run.rc != 0
            assert comps[name]["phase"] == "Failed" and comps["after-%s" % name]["phase"] == "Blocked", comps
            assert (health["status"], health["step"], health["resource"], health["expression"]) == (
                "Failed", spec["step"], "%s %s/%s" % (spec["kind"], spec["namespace"], spec["name"]), spec["expression"]), health
            assert after is None, "a blocked dependent was applied"
