"""Issue 35: helm calls the API server did not answer (``Kubernetes cluster unreachable``, a TLS handshake timeout, a
refused connection...) are run again within the component's timeout - the deadline bounds the retries, not a count -,
a revision our own interrupted attempt left pending is cleared first, and nothing else is retried. helm is a scripted
runner, the cluster the unit double, time a fake clock."""

import datetime
import subprocess

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.constants import DIGEST_LABEL
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._helm import helm

from doubles import FakeCluster, encode_release  # pylint: disable=import-error

UNREACHABLE = ('Error: Kubernetes cluster unreachable: Get "https://127.0.0.1:6443/version": net/http: TLS handshake timeout\n')
LOST = 'Error: UPGRADE FAILED: failed to create resource: Post "https://127.0.0.1:6443/api/v1/namespaces/ns/services": http2: client connection lost\n'
PENDING = "Error: UPGRADE FAILED: another operation (install/upgrade/rollback) is in progress\n"
LABELS = {"aicr.io/stack": "s", DIGEST_LABEL: "d" * 48}


class Clock(object):
    def __init__(self):
        self.now = 50.0
        self.pauses = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.pauses.append(seconds)
        self.now += seconds


class Script(object):
    """helm as a list of answers (``(stdout, rc, stderr)`` or a callable of argv giving one); each call costs ``cost`` s."""

    def __init__(self, clock, answers, cost=0.0):
        self.clock, self.answers, self.cost = clock, list(answers), cost
        self.argv = []

    def __call__(self, argv, **_kwargs):
        self.argv.append(argv)
        self.clock.now += self.cost
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        out, rc, err = answer(argv) if callable(answer) else answer
        return subprocess.CompletedProcess(argv, rc, out.encode(), err.encode())


def runner(clock, answers, cost=0.0):
    script = Script(clock, list(answers), cost)
    run = helm.HelmRunner("helmX", runner=script)
    run.clock, run.sleep = clock, clock.sleep
    return run, script


def upgrade(run, tmp_path, timeout=180):
    return run.upgrade("web", "ns", "/charts/web", None, None, {"a": 1}, LABELS, timeout=timeout, workdir=str(tmp_path))


def upgrades(script):
    return [a for a in script.argv if a[1] == "upgrade"]


def test_an_upgrade_the_api_server_did_not_answer_is_run_again_until_it_succeeds(tmp_path):
    clock = Clock()
    run, script = runner(clock, [("", 1, UNREACHABLE), ("", 1, UNREACHABLE), ("", 1, UNREACHABLE), ('{"version": 1}', 0, "")], cost=10.0)
    assert upgrade(run, tmp_path) == 1
    assert len(upgrades(script)) == 4
    assert clock.pauses == [1.0, 2.0, 4.0]
    # each attempt's --timeout is what is left of the component's 180 s
    timeouts = [int(a[a.index("--timeout") + 1].rstrip("s")) for a in upgrades(script)]
    assert timeouts == [180, 169, 157, 143]
    assert run.warnings == ["helm upgrade --install web: the API server did not answer (kubernetes cluster unreachable); retried 3 time(s) "
                            "within the component's timeout"]


def test_the_components_deadline_bounds_the_retries(tmp_path):
    clock = Clock()
    run, script = runner(clock, [("", 1, UNREACHABLE)], cost=10.0)
    with pytest.raises(AicrError, match="^helm upgrade --install web failed: Error: Kubernetes cluster unreachable"):
        upgrade(run, tmp_path, timeout=60)
    assert clock() - 50.0 <= 60.0 + 10.0, "no attempt starts without the time for it"
    assert 3 <= len(upgrades(script)) <= 6


@pytest.mark.parametrize("stderr", [
    "Error: UPGRADE FAILED: cannot patch \"web\" with kind Deployment: Deployment.apps \"web\" is invalid\n",
    "Error: INSTALLATION FAILED: context deadline exceeded\n",  # helm's own --timeout
    'Error: looks like "http://127.0.0.1:1/charts" is not a valid chart repository or cannot be reached: Get "http://127.0.0.1:1/charts/index.yaml": '
    "dial tcp 127.0.0.1:1: connect: connection refused\n",  # the chart repository's outage, not the API server's
    PENDING,  # someone else's operation in progress
])
def test_other_failures_are_not_retried(tmp_path, stderr):
    clock = Clock()
    run, script = runner(clock, [("", 1, stderr), ('{"version": 1}', 0, "")])
    with pytest.raises(AicrError):
        upgrade(run, tmp_path)
    assert len(upgrades(script)) == 1 and run.warnings == []


def pending_secret(cluster, digest, created):
    record = {"name": "web", "namespace": "ns", "version": 2, "info": {"status": "pending-upgrade"}, "manifest": ""}
    return cluster.create({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                           "metadata": {"name": "sh.helm.release.v1.web.v2", "namespace": "ns", "creationTimestamp": created,
                                        "labels": dict(LABELS, owner="helm", name="web", status="pending-upgrade", version="2", **{DIGEST_LABEL: digest})},
                           "data": {"release": encode_release(record)}})


def test_a_revision_our_interrupted_attempt_left_pending_is_cleared_and_the_upgrade_converges(tmp_path):
    """The connection was cut mid-upgrade: helm recorded revision 2 pending-upgrade and could not mark it failed. The
    retry finds helm refusing ('another operation is in progress'), clears that revision (this upgrade's digest, recorded
    since the call began) and runs again."""
    clock = Clock()
    cluster = FakeCluster()
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})

    def cut(_argv):
        pending_secret(cluster, LABELS[DIGEST_LABEL], server_now(cluster, 0))
        return "", 1, LOST

    def refuses_while_pending(_argv):
        pending = cluster.get("v1", "Secret", "sh.helm.release.v1.web.v2", "ns")
        return ("", 1, PENDING) if pending is not None else ('{"version": 2}', 0, "")

    run, script = runner(clock, [cut, refuses_while_pending, refuses_while_pending])
    run.release_client = cluster
    assert upgrade(run, tmp_path) == 2
    assert cluster.get("v1", "Secret", "sh.helm.release.v1.web.v2", "ns") is None
    assert len(upgrades(script)) == 3
    assert ("delete", "Secret", "ns", "sh.helm.release.v1.web.v2") in cluster.audit


def server_now(cluster, ago):
    """A creationTimestamp ``ago`` seconds before now by the API server's clock."""
    return datetime.datetime.fromtimestamp(cluster.server_time() - ago, datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.mark.parametrize("digest, age", [("e" * 48, 0), ("d" * 48, 3600)])
def test_a_pending_revision_that_is_not_ours_is_left_alone(tmp_path, digest, age):
    """Another digest (someone else's upgrade), or recorded before this call began: helm's refusal stands."""
    clock = Clock()
    cluster = FakeCluster()
    cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ns"}})
    created = server_now(cluster, age)

    def cut(_argv):
        pending_secret(cluster, digest, created)
        return "", 1, LOST

    run, script = runner(clock, [cut, ("", 1, PENDING)])
    run.release_client = cluster
    with pytest.raises(AicrError, match="another operation"):
        upgrade(run, tmp_path)
    assert cluster.get("v1", "Secret", "sh.helm.release.v1.web.v2", "ns") is not None
    assert len(upgrades(script)) == 2


def test_an_uninstall_whose_answer_was_lost_is_done_when_the_retry_finds_no_release():
    clock = Clock()
    run, script = runner(clock, [("", 1, 'Error: uninstall: Get "https://127.0.0.1:6443/api/v1/namespaces/ns/secrets": dial tcp 127.0.0.1:6443: '
                                         "connect: connection refused\n"),
                                 ("", 1, "Error: uninstall: Release not loaded: web: release: not found\n")])
    run.uninstall("web", "ns", timeout=120)
    assert [a[1] for a in script.argv] == ["uninstall", "uninstall"]
    with pytest.raises(AicrError, match="not found"):
        runner(clock, [("", 1, "Error: uninstall: Release not loaded: web: release: not found\n")])[0].uninstall("web", "ns", timeout=120)


class Proc(object):
    """An early helm that failed at its gate (the API server stopped answering)."""

    returncode = 1

    def communicate(self, timeout=None):
        return b"", UNREACHABLE.encode()

    def kill(self):
        pass


class Gates(object):
    def __init__(self):
        self.opened = []

    def open(self, gate):
        self.opened.append(gate)


def test_an_early_helm_that_failed_at_its_gate_is_run_again_without_a_gate(tmp_path):
    clock = Clock()
    run, script = runner(clock, [('{"version": 1}', 0, "")])
    gates = Gates()

    def plain(remaining):
        return run.upgrade_argv("web", "ns", "/charts/web", None, None, str(tmp_path / "v.json"), LABELS, [], False, remaining)
    early = helm.EarlyUpgrade("web", Proc(), gates, "g1", "helm upgrade --install web", plain=plain, labels=LABELS, namespace="ns")
    assert run.finish_upgrade(early, timeout=150) == 1
    assert gates.opened == ["g1"]
    again = upgrades(script)
    assert len(again) == 1 and "--post-renderer" not in again[0] and again[0][again[0].index("--timeout") + 1] == "119s"
