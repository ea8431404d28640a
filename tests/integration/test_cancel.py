"""Issue 15, item 7 (part): SIGTERM — AWX's cancel, ansible-playbook stopped — runs the same cleanup as an error.

A gated_release run through ansible-playbook rolls out two independent components on the lab's control plane:
``hooks`` (example-hooks: its post-install hook Job completes only after 600 s, so its ``helm upgrade`` child is
still running) and ``slow`` (example-operator: its pods become Ready only after 600 s, so a scheduler worker is
waiting for readiness). Once the Lease, ``slow``'s release and ``hooks``' helm child are all observed, the module's
python process (or ansible-playbook itself) gets SIGTERM. Then: the process tree exits, no helm child is left, the
Lease is deleted, no temporary directory is left, and the output says ``cancelled (SIGTERM)``.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lab_support import alive, descendants, processes
from waiting import wait_for  # pylint: disable=import-error

REPO = Path(__file__).resolve().parents[2]
BIN = REPO / ".venv" / "bin"
COLLECTIONS = REPO / ".build" / "collections"
PLAYBOOK = Path(__file__).resolve().parent / "playbooks" / "repository_credentials.yml"
IDENTITY = "release"
SLOW = "600s"

pytestmark = [pytest.mark.helm, pytest.mark.skipif(not (BIN / "helm4").exists(), reason="helm not installed (make helm)")]


def helm_children_of_this_test(helm):
    return [pid for pid, (_ppid, argv) in processes().items() if argv and argv[0] == str(helm) and alive(pid)]


@pytest.fixture
def slow_rollout(kube, tmp_path, example_repo, installed_collection):
    """Start ansible-playbook rolling out the two slow components; yields a handle; kills what is left at the end."""
    helm = tmp_path / "bin" / "helm"
    helm.parent.mkdir()
    helm.symlink_to(BIN / "helm4")  # a path of this test's own: its helm children are told apart from everyone else's
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    components = [
        {"name": "hooks", "chart": "example-hooks", "repository": example_repo.url, "version": "0.1.0", "namespace": kube.namespace,
         "values": {"hook": {"podAnnotations": {"lab.aicr.io/complete-after": SLOW}, "activeDeadlineSeconds": 900}}},
        {"name": "slow", "chart": "example-operator", "repository": example_repo.url, "version": "0.1.0", "namespace": kube.namespace,
         "values": {"podAnnotations": {"lab.aicr.io/ready-after": SLOW}}},
    ]
    extravars = {"components": components, "kubeconfig": kube.kubeconfig_for(IDENTITY), "helm_binary": str(helm), "stack": kube.namespace,
                 "lease_namespace": kube.namespace, "rollout_timeout": 900, "validate_values": False}
    (tmp_path / "vars.json").write_text(json.dumps(extravars))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(COLLECTIONS), ANSIBLE_PYTHON_INTERPRETER=sys.executable, ANSIBLE_NOCOLOR="1",
               ANSIBLE_RETRY_FILES_ENABLED="0", TMPDIR=str(tmpdir), ANSIBLE_REMOTE_TMP=str(tmpdir / "ansible"),
               ANSIBLE_LOCAL_TEMP=str(tmpdir / "ansible-local"), PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
    output = tmp_path / "output.txt"
    with output.open("wb") as out:
        proc = subprocess.Popen([str(BIN / "ansible-playbook"), "-i", "localhost,", "-c", "local", "-e", "@%s" % (tmp_path / "vars.json"), str(PLAYBOOK)],
                                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env, start_new_session=True)

    class Rollout:
        pass

    rollout = Rollout()
    rollout.proc, rollout.helm, rollout.tmpdir, rollout.output, rollout.kube = proc, helm, tmpdir, output, kube
    yield rollout
    if proc.poll() is None:  # the test failed before the run ended: stop what this test started, by its process group
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
    for pid in helm_children_of_this_test(helm):
        os.kill(pid, signal.SIGKILL)


def lease_path(kube):
    return "/apis/coordination.k8s.io/v1/namespaces/%s/leases/aicr-runtime-%s" % (kube.namespace, kube.namespace)


def wait_until_busy(rollout):
    """The Lease held, ``slow`` installed and waiting for readiness, ``hooks``' helm upgrade running; returns the module's pid."""
    kube = rollout.kube
    wait_for(lambda: kube.rest.exists(lease_path(kube)), 120, "the Lease")
    wait_for(lambda: kube.rest.get("/api/v1/namespaces/%s/secrets" % kube.namespace, labelSelector="owner=helm,name=slow,status=deployed")["items"], 120,
             "slow deployed")
    wait_for(lambda: [p for p in helm_children_of_this_test(rollout.helm) if "upgrade" in processes().get(p, (0, []))[1]], 120, "hooks' helm upgrade")
    # slow's Secret says deployed a moment before its helm prints its answer and exits: only then is slow done
    wait_for(lambda: not [p for p in helm_children_of_this_test(rollout.helm) if processes().get(p, (0, []))[1][1:3] == ["upgrade", "slow"]], 120,
             "slow's helm upgrade to exit")
    modules = wait_for(lambda: [pid for pid, argv in descendants(rollout.proc.pid).items()
                                if any("AnsiballZ_gated_release" in a for a in argv) and alive(pid)], 120, "the module's process")
    # the deepest one is the module itself (a wrapper shell may start it)
    table = processes()
    return [pid for pid in modules if not any(table.get(other, (None,))[0] == pid for other in modules)][0]


def assert_cleaned_up(rollout):
    kube = rollout.kube
    wait_for(lambda: not helm_children_of_this_test(rollout.helm), 30, "no helm child left")
    assert not kube.rest.exists(lease_path(kube)), "the Lease was not released"
    left = [p.name for p in rollout.tmpdir.iterdir() if p.name.startswith("aicr-")]
    assert left == [], left


def test_sigterm_to_the_module_stops_helm_releases_the_lease_and_says_cancelled(slow_rollout):
    module = wait_until_busy(slow_rollout)
    hooks_helm = helm_children_of_this_test(slow_rollout.helm)
    started = time.monotonic()
    os.kill(module, signal.SIGTERM)
    rc = slow_rollout.proc.wait(timeout=90)
    took = time.monotonic() - started
    output = slow_rollout.output.read_text()
    assert rc != 0, output[-3000:]
    assert "gated_release: cancelled (SIGTERM)" in output, output[-3000:]
    assert "done before: helm upgrade --install slow done - stopped: helm upgrade --install hooks - cleaned up: " in output, output[-3000:]
    assert "Lease %s/aicr-runtime-%s released" % (slow_rollout.kube.namespace, slow_rollout.kube.namespace) in output, output[-3000:]
    assert "Traceback" not in output
    assert not any(alive(pid) for pid in hooks_helm)
    assert_cleaned_up(slow_rollout)
    assert took < 60, took  # a worker waiting for readiness stops at its next read (watches are cut to 2 s slices)


def test_sigterm_to_ansible_playbook_reaches_the_module_and_cleans_up(slow_rollout):
    """ansible-playbook forwards SIGTERM to its workers, each of which signals its whole process group (the module and
    its helm children): the module's cleanup runs even though ansible-playbook itself exits at once."""
    module = wait_until_busy(slow_rollout)
    os.kill(slow_rollout.proc.pid, signal.SIGTERM)
    slow_rollout.proc.wait(timeout=90)
    # the module is in its worker's process group, not ansible-playbook's: it may finish its cleanup a moment later
    wait_for(lambda: not alive(module), 90, "the module's exit")
    assert_cleaned_up(slow_rollout)
