"""A rollout survives the control plane not answering for 20 s in the middle (issue 35): ansible-playbook -> installed
collection -> real helm -> a control plane of the test's own (``private_kube``), as the least-privilege identity
``release``, three charts in a chain x -> y -> z (early start on, as by default).

Once x's release is observed deployed (its release Secret, polled: a condition) and before y's is, kube-apiserver - or
etcd - is stopped with SIGSTOP for 20 s and continued with SIGCONT: a process that hangs, its sockets open. helm started
meanwhile meets ``Kubernetes cluster unreachable ... TLS handshake timeout`` (the API server paused) and the Python
client's requests wait or fail; each is retried within the component's timeout (180 s: the pause is well inside it) and
the same run converges: all three Ready, every release deployed, none left pending. The 20 s is the fault's duration (a
deliberate choice, not a guess at how long something takes); nothing waits on a sleep.

The unpaused run is the control: the same chain converging with no fault, for the figures beside the paused ones.
"""

import threading
import time
from pathlib import Path

import pytest

from aicr_lab.controlplane.rest import Rest
from aicr_lab.controlplane.stages import READY_AFTER

from lab_support import readiness_chart, wait_until

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
IDENTITY = "release"
REPOSITORY = "https://charts.pause.example/local"
PAUSE_SECONDS = 20.0  # the fault: how long the process does not answer
TIMEOUT = 180  # each component's: the pause and the recovery fit well inside it
READY_DELAY = "2s"  # x's and y's pods: the chain takes a few seconds, so the pause falls in its middle

pytestmark = [pytest.mark.helm, pytest.mark.slow, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


def chart(root, name, annotations):
    readiness_chart(root, name, annotations, image="registry.pause.example/app:1")


def releases(rest, namespace):
    """``{release: status}`` of the latest revision of each helm release in ``namespace``."""
    latest = {}
    for secret in rest.get("/api/v1/namespaces/%s/secrets" % namespace, labelSelector="owner=helm")["items"]:
        labels = secret["metadata"]["labels"]
        if int(labels["version"]) >= latest.get(labels["name"], (0, None))[0]:
            latest[labels["name"]] = (int(labels["version"]), labels["status"])
    return dict((name, status) for name, (_version, status) in latest.items())


class Pauser(threading.Thread):
    """Beside the rollout: once x's release is deployed (and y's is not), stop ``component`` for the pause."""

    def __init__(self, kube, namespace, component):
        super(Pauser, self).__init__(name="pauser", daemon=True)
        self.kube, self.namespace, self.component = kube, namespace, component
        # a client of its own: the fixture's admin client is not shared across threads
        self.rest = Rest.from_kubeconfig(kube.kubeconfig)
        self.seen = None  # releases when the pause began
        self.paused_at = self.resumed_at = None
        self.error = None

    def run(self):
        try:
            self.seen = wait_until(self._x_deployed, TIMEOUT, "x's release to be deployed", interval=0.02)
            with self.kube.paused(self.component) as began:
                self.paused_at = began
                time.sleep(PAUSE_SECONDS)  # the fault's duration (deliberate), not a wait for something to happen
            self.resumed_at = time.monotonic()
        except BaseException as exc:  # pylint: disable=broad-except  # reported by the test
            self.error = exc

    def _x_deployed(self):
        seen = releases(self.rest, self.namespace)
        return seen if seen.get("x") == "deployed" else None


@pytest.mark.parametrize("component", [None, "kube-apiserver", "etcd"])
def test_a_rollout_survives_the_control_plane_pausing_for_20s_in_its_middle(run_playbook, private_kube, tmp_path, component):
    kube = private_kube
    namespace = kube.create_namespace("pause")
    charts = tmp_path / "charts"
    chart(charts, "x", {READY_AFTER: READY_DELAY})
    chart(charts, "y", {READY_AFTER: READY_DELAY})
    chart(charts, "z", {})
    components = [{"name": name, "type": "Helm", "chart": name, "repository": REPOSITORY, "version": "1.0.0", "namespace": namespace,
                   "dependencies": deps} for name, deps in (("x", []), ("y", ["x"]), ("z", ["y"]))]
    extravars = {"components": components, "mirrors": {REPOSITORY: str(charts)}, "kubeconfig": kube.kubeconfig_for(IDENTITY),
                 "helm_binary": str(BIN / "helm4"), "stack": namespace, "lease_namespace": namespace, "timeout": TIMEOUT}
    pauser = Pauser(kube, namespace, component) if component else None
    if pauser is not None:
        pauser.start()
    began = time.monotonic()
    run = run_playbook("release_early.yml", extravars=extravars)
    took = time.monotonic() - began
    if pauser is not None:
        pauser.join(PAUSE_SECONDS + TIMEOUT)
        assert pauser.error is None, repr(pauser.error)
        assert pauser.paused_at is not None and pauser.resumed_at is not None, "the pause never happened"
        # the pause fell in the middle: x deployed, y and z not yet; the run went on past it
        assert pauser.seen.get("x") == "deployed" and pauser.seen.get("y") != "deployed" and "z" not in pauser.seen, pauser.seen
        assert pauser.resumed_at <= began + took
    assert run.rc == 0, run.stdout[-5000:]
    result = run.result("Roll out")
    comps = dict((c["name"], c) for c in result["components"])
    assert [comps[n]["phase"] for n in "xyz"] == ["Ready"] * 3, [(n, comps[n]["phase"], comps[n]["message"]) for n in "xyz"]
    assert releases(kube.rest, namespace) == {"x": "deployed", "y": "deployed", "z": "deployed"}, "every release deployed, none pending"
    warnings = [w for w in result.get("warnings") or [] if "did not answer" in w]
    # the figures of the note (issue 35): how long the run took, and what was retried
    print("\n%s: run %.1f s (paused for %.1f s); components %s; retries: %s" % (
        component or "no pause", took, (pauser.resumed_at - pauser.paused_at) if pauser else 0,
        dict((n, comps[n]["duration"]) for n in "xyz"), warnings or "none"))
