"""on_failure: rollback end to end: ansible-playbook -> installed collection -> helm 4 -> the lab's control plane, as the
least-privilege ``reconciler`` identity.

example-operator is upgraded to values its health check fails on (no replica: the Deployment is Ready with 0 replicas, the
check asks for a ready one); with ``on_failure: rollback`` the release is back at the revision that passed its gate
(``helm history``: the rollback is a new revision "Rollback to 1"), its dependent example-agent is never touched.
"""

import json
import subprocess

import pytest

from test_chart_crds import crd_chart_repo, revisions, spec_fields
from test_gates import BIN, IDENTITY, catalog, kubectl, params, stack, stack_status  # noqa: F401  pylint: disable=unused-import

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


def history(kube, release):
    out = subprocess.run([str(BIN / "helm4"), "--kubeconfig", kube.kubeconfig, "history", release, "-n", kube.namespace, "-o", "json"],
                         check=True, capture_output=True, text=True, timeout=60).stdout
    return [(int(r["revision"]), r["status"], r["description"]) for r in json.loads(out)]


def test_a_failed_health_check_rolls_the_upgrade_back_and_leaves_its_dependent(run_playbook, kube, catalog, example_repo):  # noqa: F811
    run = run_playbook("release_gates.yml", extravars=params(kube, catalog, example_repo, preflight="never", on_failure="rollback"))
    assert run.rc == 0, run.stdout[-4000:]
    first = dict((c["name"], c) for c in run.result("Roll out")["components"])
    assert first["example-operator"]["last_known_good"] == 1
    overlay = catalog / "overlays" / "h100-kind-training.yaml"
    overlay.write_text(overlay.read_text().replace("replicaCount: 1", "replicaCount: 0"))
    run = run_playbook("release_gates.yml", extravars=params(kube, catalog, example_repo, preflight="never", on_failure="rollback",
                                                             health_check_timeout=2))
    assert run.rc != 0
    res = run.result("Roll out")
    comps = dict((c["name"], c) for c in res["components"])
    op = comps["example-operator"]
    assert op["phase"] == "Failed" and op["health"]["status"] == "Failed", op
    assert (op["rollback"]["status"], op["rollback"]["from"], op["rollback"]["to"], op["rollback"]["revision"]) == ("rolled_back", 2, 1, 3), op
    assert op["rollback"]["reason"].startswith("its gate failed: component example-operator: health check example-operator-health-check failed")
    assert res["rollbacks"] == [op["rollback"]]
    assert history(kube, "example-operator") == [(1, "superseded", "Install complete"), (2, "superseded", "Upgrade complete"),
                                                 (3, "deployed", "Rollback to 1")]
    deployment = json.loads(kubectl(kube, "get", "deployment", "example-operator", "-n", kube.namespace, "-o", "json"))
    assert deployment["spec"]["replicas"] == 1
    # the rollback's revision carries revision 1's labels (its digest): the stack's inventory still vouches for it
    labels = dict((v, json.loads(kubectl(kube, "get", "secret", "sh.helm.release.v1.example-operator.v%d" % v, "-n", kube.namespace, "-o", "json"))
                   ["metadata"]["labels"]) for v in (1, 3))
    assert labels[3]["aicr.io/digest"] == labels[1]["aicr.io/digest"], labels
    # its dependent: blocked, never upgraded nor rolled back
    assert comps["example-agent"]["phase"] == "Blocked" and "rollback" not in comps["example-agent"]
    assert [r[0] for r in history(kube, "example-agent")] == [1]


ABSENT_CHECK = {"apiVersion": "chainsaw.kyverno.io/v1alpha1", "kind": "Test", "metadata": {"name": "crd-demo-health-check"},
                "spec": {"steps": [{"name": "never-there", "try": [{"assert": {"resource": {
                    "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "crd-demo-never-there"}}}}]}]}}


def test_a_rollback_across_a_breaking_chart_crd_change_is_refused_and_changes_nothing(run_playbook, kube, stack, tmp_path):  # noqa: F811
    """example-crds 0.1.0 passes its gate; 0.2.0 (its CRD adds spec.shape, applied by chart_crds: managed) fails its health
    check: rolling back to 0.1.0 would take spec.shape away from the live CRD - crdify's existingFieldRemoval -, so it is
    refused, reported (result, ClusterStack status and history), and neither the release nor the CRD changes."""
    with crd_chart_repo(kube, tmp_path, identity=IDENTITY) as (server, name):
        def rollout(version, **extra):
            component = {"name": "crd-demo", "type": "Helm", "chart": "example-crds", "repository": server.url, "version": version,
                         "namespace": kube.namespace, "values": {"widget": {"create": False}}}
            component.update(extra)
            return run_playbook("release_chart_crds.yml", extravars={
                "components": [component], "kubeconfig": kube.kubeconfig_for(IDENTITY), "helm_binary": str(BIN / "helm4"),
                "stack": stack, "lease_namespace": kube.namespace, "status_stack": stack, "on_failure": "rollback", "health_check_timeout": 2})

        first = rollout("0.1.0")
        assert first.rc == 0, first.stdout[-3000:]
        second = rollout("0.2.0", health_check_asserts=json.dumps(ABSENT_CHECK))
        assert second.rc != 0
        res = second.result("Roll out")
        comp = res["components"][0]
        assert comp["phase"] == "Failed" and comp["health"]["status"] == "Failed", comp
        entry = comp["rollback"]
        assert (entry["status"], entry["from"], entry["to"], entry["revision"]) == ("refused", 2, 1, None), entry
        assert entry["message"].startswith("rollback from revision 2 to 1 refused: it would be a breaking CRD change: CRD %s: " % name), entry
        assert "existingFieldRemoval" in entry["message"] and "shape" in entry["message"], entry
        assert res["rollbacks"] == [entry]
        assert not any(a.startswith("roll back") for a in res["actions"]), res["actions"]
        # nothing changed by the refusal: revision 2 stays deployed, the live CRD keeps spec.shape
        assert revisions(kube) == [1, 2] and "shape" in spec_fields(kube, name)
        status = stack_status(kube, stack)
        listed = dict((c["name"], c) for c in status["components"])["crd-demo"]
        assert listed["rolledBack"]["status"] == "refused" and listed["lastKnownGood"] == 1, listed
        assert "RollbackRefused" in [h["type"] for h in status["history"]], status["history"]
