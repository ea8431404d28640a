"""A helm operation killed half-way leaves its release pending-install; gated_release refuses while it may still run, then
clears it when asked to (``clear_pending``), its age measured with the API server's clock.

Real helm against the lab's real kube-apiserver, as the least-privilege ``release`` identity: a post-install
hook Job whose pod never becomes Ready (kwok's ``never-ready`` stage) holds helm inside the install, the test
kills helm (as a lost control node would), and gated_release runs on the release it left behind.
"""

import datetime
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from aicr_lab.controlplane import stages

from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release import execute
from ansible_collections.aicr.runtime.plugins.module_utils._release.inventory import Inventory
from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan

from waiting import wait_for  # pylint: disable=import-error

REPO = Path(__file__).resolve().parents[4]
HELM = REPO / ".venv" / "bin" / "helm"
CHARTS = REPO / "examples" / "charts"
OLD_ENOUGH = 8  # the timeout of the second run, so also the time the reinstall and its hook get


def recipe(namespace):
    return {"recipe_name": "interrupted", "components": [
        {"name": "hooks", "type": "Helm", "chart": "example-hooks", "repository": "https://charts.example/interrupted",
         "version": "0.1.0", "namespace": namespace, "values": {"hook": {"activeDeadlineSeconds": 60}}, "dependencies": []}]}


def pending_revision_age(kube, namespace):
    """Seconds since helm recorded the pending revision 1 (its Secret's creationTimestamp, whole seconds)."""
    secret = kube.get("/api/v1/namespaces/%s/secrets/sh.helm.release.v1.hooks.v1" % namespace)
    assert secret is not None and secret["metadata"]["labels"]["status"] == "pending-install"
    created = datetime.datetime.strptime(secret["metadata"]["creationTimestamp"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    return time.time() - created.timestamp()


@pytest.mark.skipif(not HELM.exists(), reason="needs the project's helm (make helm)")
def test_interrupted_install_is_refused_while_young_then_cleared(tmp_path, kube, client):
    ns = kube.namespace
    kubeconfig = kube.kubeconfig_for("release")
    # the killed helm is a run of this stack's: before it ran helm, that run wrote into the stack's inventory what it was
    # about to install (what makes the release this stack's, not its labels), and gave helm the labels it gives
    hooks = build_plan(recipe(ns)).by_name["hooks"]
    Inventory(client("release"), "interrupted", ns).write_ahead(hooks, next_digest=hooks.digest())
    env = dict(os.environ, HELM_CACHE_HOME=str(tmp_path / "hc"), HELM_CONFIG_HOME=str(tmp_path / "hcfg"), HELM_DATA_HOME=str(tmp_path / "hd"))
    helm = subprocess.Popen([str(HELM), "upgrade", "hooks", str(CHARTS / "example-hooks"), "--install", "--namespace", ns,
                             "--timeout", "300s", "--kubeconfig", kubeconfig, "--labels", "aicr.io/stack=interrupted,aicr.io/digest=%s" % hooks.digest(),
                             "--set-string", "hook.podAnnotations.lab\\.aicr\\.io/never-ready=true"],
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    jobs = "/apis/batch/v1/namespaces/%s/jobs" % ns
    try:
        wait_for(lambda: kube.rest.get(jobs)["items"] or helm.poll() is not None, 60, "helm never reached its post-install hook")
        assert helm.poll() is None, "helm ended before its hook: %s" % helm.stderr.read()[-2000:]
    finally:
        helm.send_signal(signal.SIGKILL)
        helm.wait()
        helm.stderr.close()
    hook = kube.rest.get(jobs)["items"][0]
    assert hook["spec"]["template"]["metadata"]["annotations"][stages.NEVER_READY] == "true", "the hook that held helm never completes"
    assert not any(c.get("type") == "Complete" for c in (hook.get("status") or {}).get("conditions") or [])
    params = {"recipe": recipe(ns), "kubeconfig": kubeconfig, "helm_binary": str(HELM), "lease_namespace": ns,
              "repository_mirrors": {"https://charts.example/interrupted": str(CHARTS)}, "cache_dir": str(tmp_path / "cache"),
              "poll_interval": 0.1}

    young = execute(dict(params, timeout=600, clear_pending=True))
    component = young["components"][0]
    assert component["phase"] == "Failed"
    assert "revision 1 is pending-install since" in component["message"] and "another helm operation may still be running" in component["message"]
    assert not any(a.startswith("clear the interrupted") for a in young["actions"])

    # creationTimestamp has whole seconds: wait until the pending revision is surely older than the next run's timeout
    wait_for(lambda: pending_revision_age(kube, ns) > OLD_ENOUGH + 1, OLD_ENOUGH + 30, "the pending revision never aged")
    # clearing is opt-in: without clear_pending an old pending revision is left alone too (it may be someone else's helm)
    kept = execute(dict(params, timeout=OLD_ENOUGH, overall_timeout=120))
    component = kept["components"][0]
    assert component["phase"] == "Failed" and "set clear_pending: true to clear it" in component["message"], component
    assert not any(a.startswith("clear the interrupted") for a in kept["actions"])
    assert kube.get("/api/v1/namespaces/%s/secrets/sh.helm.release.v1.hooks.v1" % ns)["metadata"]["labels"]["status"] == "pending-install"

    old = execute(dict(params, timeout=OLD_ENOUGH, overall_timeout=120, clear_pending=True))
    assert not old.get("failed_message"), old.get("failed_message")
    component = old["components"][0]
    assert component["phase"] == "Ready" and component["revision"] == 1
    assert any(a.startswith("clear the interrupted helm operation on hooks (revision 1, pending-install since") for a in old["actions"])
    assert kube.get("/api/v1/namespaces/%s/secrets/sh.helm.release.v1.hooks.v1" % ns)["metadata"]["labels"]["status"] == "deployed"

    again = execute(dict(params, timeout=600))
    assert again["changed"] is False and again["components"][0]["phase"] == "Unchanged"
