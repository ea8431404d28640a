"""aicr-lab: the three local servers start detached, describe themselves, and stop."""

import json
import os
import subprocess
import sys

from kubernetes import client, config

from aicr_emulators import lab as aicr_lab


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid, "r", encoding="utf-8") as stat:
        return stat.read().split()[2] != "Z"


def test_up_binds_nodes_to_fabric_machines_and_down_stops_everything(tmp_path):
    lab = aicr_lab.up(tmp_path, nodes=3, machines=2)
    try:
        assert set(lab["pids"]) == {"kube-emulator", "chart-repo", "fabric-sim"}
        assert all(url.startswith(("http://127.0.0.1:", "https://127.0.0.1:")) for url in (lab["kube_url"], lab["charts_url"], lab["fabric_url"]))
        machines = json.loads((tmp_path / "fabric.json").read_text())["machines"]
        api = client.CoreV1Api(config.new_client_from_config(config_file=lab["kubeconfig"]))
        provider_ids = {node.metadata.name: node.spec.provider_id for node in api.list_node().items}
        assert provider_ids == {
            "node-0": "fsas-cdi://%s" % machines["node-0"],
            "node-1": "fsas-cdi://%s" % machines["node-1"],
            "node-2": "emulator://aicr/node-2",
        }
        assert aicr_lab.load(tmp_path)["pids"] == lab["pids"]
    finally:
        assert aicr_lab.down(tmp_path) is True
    assert not any(_alive(pid) for pid in lab["pids"].values())
    assert aicr_lab.down(tmp_path) is False


def test_cli_status_without_a_lab_fails_cleanly(tmp_path):
    result = subprocess.run([sys.executable, "-m", "aicr_lab.lab", "status", "--dir", str(tmp_path)], capture_output=True, text=True, check=False)
    assert result.returncode == 1
    assert "no lab in" in result.stderr and "Traceback" not in result.stderr
