"""Early start end to end (gated_release ``early_start``): ansible-playbook -> installed collection -> real helm 3/4 ->
the lab's real control plane, as the least-privilege identity ``release``, three charts in a chain x -> y -> z.

* y's and z's helms start while what they depend on becomes Ready (their helm's first requests, in the API
  server's audit log, come before the dependency is Ready), yet each writes its release only once its gate opened
  (its first release Secret comes after the dependency's Deployment was available, which takes its pod's 2 s);
* when x never becomes Ready, y's helm - started early and waiting at its gate - writes nothing: no mutating
  request in y's name, no release Secret, and no helm or post-renderer process is left behind;
* ``early_start: false`` starts nothing early.
"""

import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest

from aicr_lab.controlplane.stages import NEVER_READY, READY_AFTER

from lab_support import audit_mutations, readiness_chart

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
IDENTITY = "release"
REPOSITORY = "https://charts.early.example/local"
READY_DELAY = 2.0  # seconds x's and y's pods take to become Ready
SECRET_PREFIX = "sh.helm.release.v1."

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


def chart(root, name, annotations):
    readiness_chart(root, name, annotations, image="registry.early.example/app:1")


def rollout(run_playbook, kube, tmp_path, helm, x_ready=True, envvars=None, **extra):
    charts = tmp_path / "charts"
    chart(charts, "x", {READY_AFTER: "%ds" % READY_DELAY} if x_ready else {NEVER_READY: "true"})
    chart(charts, "y", {READY_AFTER: "%ds" % READY_DELAY})
    chart(charts, "z", {})
    components = [{"name": name, "type": "Helm", "chart": name, "repository": REPOSITORY, "version": "1.0.0", "namespace": kube.namespace,
                   "dependencies": deps} for name, deps in (("x", []), ("y", ["x"]), ("z", ["y"]))]
    extravars = dict({"components": components, "mirrors": {REPOSITORY: str(charts)}, "kubeconfig": kube.kubeconfig_for(IDENTITY),
                      "helm_binary": str(BIN / helm), "stack": kube.namespace, "lease_namespace": kube.namespace}, **extra)
    mark = kube.audit_mark()
    run = run_playbook("release_early.yml", extravars=extravars, envvars=envvars)
    return run, run.result("Roll out"), mark


def first(entries, **match):
    times = [e["time"] for e in entries if all(e.get(k) == v for k, v in match.items())]
    return min(times) if times else None


def release_secret_created(entries, namespace, name):
    return first([e for e in entries if e["name"].startswith(SECRET_PREFIX + name + ".v")], verb="create", resource="secrets", namespace=namespace)


def helm_requests(entries, release):
    """Requests of the helm whose values file names ``release`` cannot be told apart by user agent: those reading the
    release's own history (``name=<release>`` label selector) are its first ones."""
    return [e for e in entries if e["userAgent"].lower().startswith("helm") and e["resource"] == "secrets" and e["verb"] == "list"
            and "name%3D" + release in (e.get("query") or "").replace("=", "%3D")]


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_dependents_start_early_and_write_only_once_their_gate_opens(run_playbook, kube, tmp_path, helm):
    run, result, mark = rollout(run_playbook, kube, tmp_path, helm)
    assert run.rc == 0, run.stdout[-3000:]
    comps = dict((c["name"], c) for c in result["components"])
    assert [comps[n]["phase"] for n in "xyz"] == ["Ready"] * 3
    assert comps["y"].get("early_start") and comps["z"].get("early_start"), comps
    entries = kube.audit(since=mark, user=kube.user(IDENTITY))
    for dep, name in (("x", "y"), ("y", "z")):
        dep_written = release_secret_created(entries, kube.namespace, dep)
        written = release_secret_created(entries, kube.namespace, name)
        started = min(e["time"] for e in helm_requests(entries, name))
        # its helm asked for its release history before the dependency could be Ready (its pod takes 2 s) ...
        assert started < dep_written + READY_DELAY, (name, started - dep_written)
        # ... and wrote the release only after it was (the gate: dependency available, 2 s after its release at best)
        assert written >= dep_written + READY_DELAY, (name, written - dep_written)
    deployed = kube.rest.get("/api/v1/namespaces/%s/secrets" % kube.namespace, labelSelector="owner=helm,status=deployed")["items"]
    assert sorted(s["metadata"]["labels"]["name"] for s in deployed) == ["x", "y", "z"]


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_a_helm_waiting_at_a_gate_that_never_opens_writes_nothing(run_playbook, kube, tmp_path, helm):
    # the run's temporary directory (its gate's socket and post-renderer) in a directory of this test alone, so the
    # processes left behind are told apart from another run's on the same machine (xdist workers, other checkouts)
    run_tmp = tempfile.mkdtemp(prefix="aicr-es-")
    try:
        run, result, mark = rollout(run_playbook, kube, tmp_path, helm, x_ready=False, envvars={"TMPDIR": run_tmp}, timeout=6)
        ours = subprocess.run(["pgrep", "-f", run_tmp], capture_output=True, text=True, check=False).stdout.split()
    finally:
        shutil.rmtree(run_tmp, ignore_errors=True)
    assert run.rc != 0
    comps = dict((c["name"], c) for c in result["components"])
    assert [comps[n]["phase"] for n in "xyz"] == ["Failed", "Blocked", "Blocked"], comps
    entries = kube.audit(since=mark, user=kube.user(IDENTITY))
    assert helm_requests(entries, "y"), "y's helm was started early"
    assert release_secret_created(entries, kube.namespace, "y") is None
    dependents = [(e["verb"], e["resource"], e["name"]) for e in audit_mutations(kube, mark, IDENTITY)
                  if e["name"] in ("y", "z") or e["name"].startswith((SECRET_PREFIX + "y.", SECRET_PREFIX + "z."))]
    assert dependents == []
    assert kube.get("/apis/apps/v1/namespaces/%s/deployments/y" % kube.namespace) is None
    assert ours == [], "no helm or post-renderer of this run is left running"


def test_off_starts_nothing_early(run_playbook, kube, tmp_path):
    run, result, _mark = rollout(run_playbook, kube, tmp_path, "helm3", early_start=False)
    assert run.rc == 0, run.stdout[-3000:]
    assert not any(c.get("early_start") for c in result["components"])
