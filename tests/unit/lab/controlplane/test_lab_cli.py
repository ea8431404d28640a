"""aicr-lab: the control plane, chart repository and fabric simulator start detached, describe themselves, stop;
the control plane survives restarts of its own processes; binaries are built once and reused."""

import subprocess
import sys


def test_cli_status_without_a_lab_fails_cleanly(tmp_path):
    result = subprocess.run([sys.executable, "-m", "aicr_lab.cli", "status", "--dir", str(tmp_path)], capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert "no lab in" in result.stderr and "Traceback" not in result.stderr


def _configmap(rest, namespace, name):
    return rest.create("/api/v1/namespaces/%s/configmaps" % namespace, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}})
