"""A helm operation killed half-way leaves its release pending-install; gated_release refuses while it may still run, then clears it.

Real helm against the emulator: a post-install hook Job that never completes holds helm inside the install, the
test kills helm (as a lost control node would), and gated_release runs on the release it left behind.
"""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from aicr_emulators.kube.pytest_fixture import start_emulator

from ansible_collections.aicr.runtime.plugins.module_utils.release.engine import execute

REPO = Path(__file__).resolve().parents[5]
HELM = REPO / ".venv" / "bin" / "helm"
CHARTS = REPO / "examples" / "charts"
NAMESPACE = "interrupted"
OLD_ENOUGH = 4  # the timeout of the second run, so also the time the reinstall and its hook get


def recipe():
    return {"recipe_name": "interrupted", "components": [
        {"name": "hooks", "type": "Helm", "chart": "example-hooks", "repository": "https://charts.example/interrupted",
         "version": "0.1.0", "namespace": NAMESPACE, "values": {"hook": {"activeDeadlineSeconds": 60}}, "dependencies": []}]}


@pytest.mark.skipif(not HELM.exists(), reason="needs the project's helm (make helm)")
def test_interrupted_install_is_refused_while_young_then_cleared(tmp_path):
    kube = start_emulator(tmp_path / "kube")
    try:
        kube.control.set_readiness(kind="Job", name="hooks-*", never_ready=True)
        env = dict(os.environ, HELM_CACHE_HOME=str(tmp_path / "hc"), HELM_CONFIG_HOME=str(tmp_path / "hcfg"), HELM_DATA_HOME=str(tmp_path / "hd"))
        helm = subprocess.Popen([str(HELM), "upgrade", "hooks", str(CHARTS / "example-hooks"), "--install", "--namespace", NAMESPACE,
                                 "--create-namespace", "--timeout", "300s", "--kubeconfig", kube.kubeconfig],
                                env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            deadline = time.monotonic() + 30
            while not any(e.get("resource") == "jobs" and e["verb"] == "create" for e in kube.control.audit()):
                assert time.monotonic() < deadline, "helm never reached its post-install hook"
                time.sleep(0.05)
        finally:
            helm.send_signal(signal.SIGKILL)
            helm.wait()
        kube.control.clear_readiness()
        params = {"recipe": recipe(), "kubeconfig": kube.kubeconfig, "helm_binary": str(HELM),
                  "repository_mirrors": {"https://charts.example/interrupted": str(CHARTS)}, "cache_dir": str(tmp_path / "cache"),
                  "poll_interval": 0.1}

        young = execute(dict(params, timeout=600))
        component = young["components"][0]
        assert component["phase"] == "Failed"
        assert "revision 1 is pending-install since" in component["message"] and "another helm operation may still be running" in component["message"]
        assert not any(a.startswith("clear the interrupted") for a in young["actions"])

        time.sleep(OLD_ENOUGH + 1.2)  # creationTimestamp has whole seconds; the pending revision is now older than the timeout
        old = execute(dict(params, timeout=OLD_ENOUGH, overall_timeout=120))
        assert not old.get("failed_message"), old.get("failed_message")
        component = old["components"][0]
        assert component["phase"] == "Ready" and component["revision"] == 1
        assert any(a.startswith("clear the interrupted helm operation on hooks (revision 1, pending-install since") for a in old["actions"])

        again = execute(dict(params, timeout=600))
        assert again["changed"] is False and again["components"][0]["phase"] == "Unchanged"
    finally:
        kube.stop()
