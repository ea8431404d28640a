"""playbooks/site.yml run the way an AWX job template runs it: through ansible-runner.

A private data directory holds the inventory and the job's extra vars (survey answers
included: AWX sends an optional question left blank as ""); the run is non-interactive
and the assertions read the job events and artifacts ansible-runner writes, as AWX
does: status successful, each task's result, and no secret anywhere in the events or
the artifacts.

The cluster is the lab's real control plane; the job's credential is what an AWX
"Kubernetes Bearer Token" credential gives: a ServiceAccount token, the ServiceAccount
bound to the ClusterRoles the site identity has (the shipped aicr-runtime:release,
:example-charts, :stack and :fabric), nothing more.
"""

import json
from pathlib import Path

import pytest

import ansible_runner

from aicr_lab.charts.pytest_fixture import start_chart_repo
from aicr_lab.controlplane import identities
from aicr_lab.controlplane.cluster import write_kubeconfig

from lab_support import example_catalog

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
EXAMPLE_REPOSITORY = "https://charts.aicr.example/examples"

pytestmark = [pytest.mark.helm]


class TokenCluster:  # pylint: disable=too-few-public-methods
    """The session's cluster as a bearer-token identity: ``kubeconfig``, ``token``, ``namespace``, ``catalog``."""

    def __init__(self, kube, directory):
        self.kube = kube
        self.namespace = kube.namespace
        account = "awx-job"
        rest = kube.rest
        rest.create("/api/v1/namespaces/%s/serviceaccounts" % self.namespace,
                    {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account}})
        self.user = "system:serviceaccount:%s:%s" % (self.namespace, account)
        self.bindings = []
        for role in identities.IDENTITIES["site"]:
            name = "aicr-lab:awx:%s:%s" % (self.namespace, role.split(":", 1)[-1])
            rest.create("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
                "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                "metadata": {"name": name, "labels": {"app.kubernetes.io/part-of": "aicr-lab"}},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
                "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": self.namespace}]})
            self.bindings.append(name)
        request = {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}}
        self.token = rest.create("/api/v1/namespaces/%s/serviceaccounts/%s/token" % (self.namespace, account), request)["status"]["token"]
        self.kubeconfig = write_kubeconfig(Path(directory) / "awx.kubeconfig", kube.server, kube.ca_file, {"token": self.token},
                                           namespace=self.namespace)
        self.catalog = example_catalog(directory, self.namespace)

    def close(self):
        for name in self.bindings:
            self.kube.rest.delete("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/%s" % name)


@pytest.fixture
def cluster(kube, tmp_path):
    token_cluster = TokenCluster(kube, tmp_path)
    charts = start_chart_repo(tmp_path)
    yield token_cluster, charts
    charts.stop()
    token_cluster.close()


def _job(private_dir, kube, charts, extravars):
    private_dir.mkdir(parents=True, exist_ok=True)
    inventory = {
        "clusters": {
            "hosts": {
                "awx-cluster": {
                    "ansible_connection": "local",
                    "ansible_python_interpreter": str(BIN / "python"),
                    "aicr_catalog": str(kube.catalog),
                    "aicr_criteria": {"service": "kind", "accelerator": "h100", "intent": "training"},
                    "aicr_kubeconfig": str(kube.kubeconfig),
                    "aicr_repository_mirrors": {EXAMPLE_REPOSITORY: charts.url},
                }
            }
        }
    }
    return ansible_runner.run(
        private_data_dir=str(private_dir),
        playbook=str(REPO / "playbooks" / "site.yml"),
        inventory=inventory,
        extravars=extravars,
        envvars={
            "ANSIBLE_COLLECTIONS_PATH": str(REPO / ".build" / "collections"),
            "PATH": "%s:/usr/bin:/bin" % BIN,
        },
        quiet=True,
    )


def _task_results(runner, task):
    return [e["event_data"]["res"] for e in runner.events if e["event"] == "runner_on_ok" and e["event_data"].get("task") == task]


def test_site_playbook_as_an_awx_job(installed_collection, cluster, tmp_path):
    kube, charts = cluster
    token = kube.token
    assert token and len(token) >= 16
    survey_answers = {
        # Blank optional answers must count as unset, not as a value.
        "cluster_runtime_context": "",
        "cluster_runtime_profile": "",
        "cluster_runtime_stack": "",
        # Survey integers arrive as text.
        "cluster_runtime_concurrency": "3",
        "cluster_runtime_helm_binary": str(BIN / "helm"),
        # the shared cluster: the stack's Lease and inventory in the job's namespace
        "cluster_runtime_lease_namespace": kube.namespace,
    }
    mark = kube.kube.audit_mark()
    first = _job(tmp_path / "job1", kube, charts, survey_answers)
    assert first.status == "successful", first.stdout.read()[-4000:]
    assert first.rc == 0
    deploy = _task_results(first, "Resolve the cluster's recipe and deploy its components in dependency order")
    assert len(deploy) == 1 and deploy[0]["changed"] is True
    assert {c["phase"] for c in deploy[0]["components"]} == {"Ready"}
    assert kube.kube.audit(since=mark, user=kube.user, mutating=True, namespace=kube.namespace), "the job deployed as the token's ServiceAccount"

    # The same job again: a converged cluster reports no change (what AWX shows as a green, unchanged job).
    second = _job(tmp_path / "job2", kube, charts, survey_answers)
    assert second.status == "successful"
    assert second.stats["changed"] == {}, second.stats

    # No secret in any job event nor in any artifact file AWX would store.
    for runner, private_dir in ((first, tmp_path / "job1"), (second, tmp_path / "job2")):
        for event in runner.events:
            assert token not in json.dumps(event), "bearer token leaked in a %s event" % event["event"]
        for artifact in (private_dir / "artifacts").rglob("*"):
            if artifact.is_file():
                assert token not in artifact.read_text(errors="replace"), "bearer token leaked in %s" % artifact


def test_bad_survey_answer_fails_with_a_clear_message(installed_collection, cluster, tmp_path):
    kube, charts = cluster
    runner = _job(tmp_path / "job", kube, charts, {"cluster_runtime_state": "sideways", "cluster_runtime_lease_namespace": kube.namespace})
    assert runner.status == "failed"
    failures = [e["event_data"]["res"] for e in runner.events if e["event"] == "runner_on_failed"]
    assert failures, "the job should fail on an invalid choice"
    message = failures[0].get("msg", "")
    assert "cluster_runtime_state" in message and "sideways" in message
    assert "Traceback" not in runner.stdout.read()
