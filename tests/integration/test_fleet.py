"""playbooks/fleet.yml end to end: six "clusters" (inventory hosts, each its own namespace and stack on the lab) converged
in canary waves [1, 2, 3]; the canary's health check fails, so the fleet stops after wave 1 and the API server's audit
log shows no request at all in any other cluster's namespace.

Lean on purpose (issue 40): the canary runs the smallest slice of the example recipe (example-crds, example-config,
example-operator) with example-operator's health check asking for what the lab never has (5 ready replicas, 3 s).
"""

from pathlib import Path

import pytest

from lab_support import example_catalog

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
EXAMPLE_REPO = "https://charts.aicr.example/examples"
H100_KIND_TRAINING = {"service": "kind", "accelerator": "h100", "intent": "training"}
IDENTITY = "release"

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


@pytest.fixture
def fleet_namespaces(lab_kube, kube):
    """The canary's namespace (the test's) and five more, each usable as a cluster of its own; deleted afterwards."""
    others = [lab_kube.create_namespace("fleet") for _index in range(5)]
    yield [kube.namespace] + others
    for name in others:
        lab_kube.rest.delete("/api/v1/namespaces/%s" % name, propagationPolicy="Background")
        lab_kube.namespaces.remove(name)


def test_a_failing_canary_stops_the_fleet_before_any_other_cluster_is_touched(run_playbook, installed_collection, kube, lab_kube,
                                                                              fleet_namespaces, example_repo, tmp_path):
    hosts = {}
    for index, namespace in enumerate(fleet_namespaces):
        catalog = example_catalog(tmp_path / ("cluster-%d" % index), namespace)
        if index == 0:  # the canary: its operator's health check cannot pass
            check = catalog / "checks" / "example-operator" / "health-check.yaml"
            check.write_text(check.read_text().replace("(readyReplicas > `0`)", "(readyReplicas > `5`)").replace("assert: 2m", "assert: 3s"))
        hosts["cluster-%d" % (index + 1)] = {
            "ansible_connection": "local", "cluster_runtime_catalog": str(catalog), "cluster_runtime_stack": namespace,
            "cluster_runtime_lease_namespace": namespace, "cluster_runtime_kubeconfig": kube.kubeconfig_for(IDENTITY),
            "cluster_runtime_timeline_file": str(tmp_path / ("cluster-%d.md" % (index + 1)))}
    inventory = {"all": {"children": {"clusters": {"hosts": hosts}}}}
    extravars = {"fleet_waves": [1, 2, 3], "cluster_runtime_criteria": H100_KIND_TRAINING, "cluster_runtime_helm_binary": str(BIN / "helm4"),
                 "cluster_runtime_repository_mirrors": {EXAMPLE_REPO: example_repo.url}, "cluster_runtime_poll_interval": 0.2,
                 "cluster_runtime_skip_components": ["example-monitoring", "example-jobs", "example-agent"]}

    mark = lab_kube.audit_mark()
    run = run_playbook(str(installed_collection / "playbooks" / "fleet.yml"), extravars=extravars, inventory=inventory)
    assert run.rc != 0, run.stdout[-4000:]

    # wave 1 (the canary) failed its gate: the fleet stopped there
    rollouts = run.results("Resolve the cluster's recipe and deploy its components in dependency order")
    assert len(rollouts) == 1, "only the canary converged"
    operator = dict((c["name"], c) for c in rollouts[0]["components"])["example-operator"]
    assert operator["phase"] == "Failed" and operator["health"]["status"] == "Failed"
    assert run.result("Show the wave")["msg"].startswith("wave 1 of 3: 1 cluster(s); ready: none; failed: cluster-1")
    hosts_seen = set(e["event_data"].get("host") for e in run.events if e.get("event", "").startswith("runner_on_"))
    assert hosts_seen == {"cluster-1"}, hosts_seen
    stats = [e["event_data"].get("artifact_data") for e in run.events if e.get("event") == "playbook_on_stats"][0]
    assert stats["fleet_waves"] == {"wave 1": {"clusters": ["cluster-1"], "ready": [],
                                               "failed": {"cluster-1": stats["fleet_waves"]["wave 1"]["failed"]["cluster-1"]}}}
    assert "did not converge" in stats["fleet_waves"]["wave 1"]["failed"]["cluster-1"] or "health check" in \
        stats["fleet_waves"]["wave 1"]["failed"]["cluster-1"]

    # the canary's timeline, written by the role: its operator's health check failed, the critical path ends there
    timeline = (tmp_path / "cluster-1.md").read_text()
    assert timeline.startswith("```mermaid\ngantt\n") and timeline.endswith("```\n")
    assert "health check (failed) :crit, active," in timeline and "-> example-operator (" in timeline
    assert not any((tmp_path / ("cluster-%d.md" % n)).exists() for n in range(2, 7))

    # the audit log: the canary's namespace was written to; no request at all reached any other cluster's namespace
    assert lab_kube.audit(since=mark, mutating=True, namespace=fleet_namespaces[0])
    for namespace in fleet_namespaces[1:]:
        assert lab_kube.audit(since=mark, namespace=namespace) == [], namespace


@pytest.mark.parametrize("bad", [["cluster-2"], ["cluster-1", "cluster-2"]], ids=["one-failed-goes-on", "two-failed-stop"])
def test_stack_reconcile_fleet_with_a_failure_budget_of_half_a_wave(run_playbook, installed_collection, kube, example_repo, tmp_path, bad):
    """fleet_role=stack_reconcile, waves [2, 4] and fleet_max_fail_percentage 50: one failed cluster of the first wave's two
    is within the budget (50% is not more than 50%) and the second wave runs; two failed stop the fleet before it.

    A cluster fails cheaply (a misspelled stack_reconcile_* variable: the role refuses it before contacting the cluster);
    cluster-1, when it is not one of those, converges a real stack (configmap backend, example-crds and example-config) and
    passes the gate on its status read back; cluster-3 and cluster-4 reconcile no stack of their own.
    """
    catalog = example_catalog(tmp_path / "catalog", kube.namespace)
    stack = "fleet-" + kube.namespace.rsplit("-", 1)[-1]
    spec = {"criteria": H100_KIND_TRAINING, "catalog": {"source": str(catalog)},
            "skipComponents": ["example-operator", "example-monitoring", "example-jobs", "example-agent"]}
    hosts = {}
    for index in range(1, 5):
        name = "cluster-%d" % index
        hosts[name] = {"ansible_connection": "local", "stack_reconcile_stacks": {stack: spec} if index == 1 else {},
                       "stack_reconcile_names": [stack] if index == 1 else ["none-%d" % index]}
        if name in bad:
            hosts[name]["stack_reconcile_misspelt"] = True
    inventory = {"all": {"children": {"clusters": {"hosts": hosts}}}}
    extravars = {"fleet_role": "stack_reconcile", "fleet_waves": [2, 4], "fleet_max_fail_percentage": 50,
                 "stack_reconcile_backend": "configmap", "stack_reconcile_namespace": kube.namespace,
                 "stack_reconcile_lease_namespace": kube.namespace, "stack_reconcile_kubeconfig": kube.kubeconfig_for("reconciler"),
                 "stack_reconcile_helm_binary": str(BIN / "helm4"), "stack_reconcile_repository_mirrors": {EXAMPLE_REPO: example_repo.url},
                 "stack_reconcile_poll_interval": 0.2, "stack_reconcile_timeout": 60, "stack_reconcile_cache_dir": str(tmp_path / "cache")}

    run = run_playbook(str(installed_collection / "playbooks" / "fleet.yml"), extravars=extravars, inventory=inventory)
    assert run.rc != 0, run.stdout[-4000:]
    waves = [r["msg"] for r in run.results("Show the wave")]
    hosts_seen = set(e["event_data"].get("host") for e in run.events if e.get("event", "").startswith("runner_on_"))
    if len(bad) == 1:
        assert waves == ["wave 1 of 2: 2 cluster(s); ready: cluster-1; failed: cluster-2", "wave 2 of 2: 2 cluster(s); ready: cluster-3, cluster-4"], waves
        gate = [r for r in run.results("Read the stacks' status back for the gate") if r.get("stacks")]
        assert [(s["name"], s["status"]["phase"]) for r in gate for s in r["stacks"]] == [(stack, "Ready")]
        assert hosts_seen == {"cluster-1", "cluster-2", "cluster-3", "cluster-4"}
    else:
        assert waves == ["wave 1 of 2: 2 cluster(s); ready: none; failed: cluster-1, cluster-2"], waves
        assert hosts_seen == {"cluster-1", "cluster-2"}, "the second wave is never touched: %s" % hosts_seen
    stats = [e["event_data"].get("artifact_data") for e in run.events if e.get("event") == "playbook_on_stats"][0]
    assert "stack_reconcile_misspelt" in stats["fleet_waves"]["wave 1"]["failed"]["cluster-2"]
