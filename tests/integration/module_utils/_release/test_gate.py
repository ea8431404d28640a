"""The gate: a post-renderer that hands helm's manifests back only on "go", and what a chart reads before it."""

import os
import subprocess
from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._release import gate as gates

BIN = Path(__file__).resolve().parents[4] / ".venv" / "bin"


@pytest.fixture
def server(tmp_path):
    gate_server = gates.GateServer(str(tmp_path), 3)
    yield gate_server
    gate_server.close()


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_real_helm_renders_through_the_gate_only_once_it_opens(tmp_path, helm):
    """helm 3 runs the executable, helm 4 the postrenderer/v1 plugin; `helm template` runs the same post-render step."""
    binary = BIN / helm
    if not binary.exists():
        pytest.skip("helm not installed (make helm)")
    chart = tmp_path / "c"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: c\nversion: 1.0.0\n")
    (chart / "templates" / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\n")
    version = subprocess.run([str(binary), "version", "--template", "{{.Version}}"], capture_output=True, text=True, check=True).stdout
    server = gates.GateServer(str(tmp_path), int(version.lstrip("v").split(".")[0]))
    try:
        home = tmp_path / "home"
        env = server.helm_env(dict(os.environ, HELM_DATA_HOME=str(home / "data"), HELM_CONFIG_HOME=str(home / "config"),
                                   HELM_CACHE_HOME=str(home / "cache")))
        stopped, opened = server.new_gate("stopped"), server.new_gate("opened")
        server.stop(stopped, "dependency failed")
        refused = subprocess.run([str(binary), "template", "r", str(chart)] + server.helm_flags(stopped), env=env, capture_output=True, text=True,
                                 check=False, timeout=60)
        assert refused.returncode != 0 and "name: r" not in refused.stdout
        # helm 3 shows the post-renderer's stderr; helm 4 only that the plugin failed
        assert ("aicr.runtime gate closed: dependency failed" if helm == "helm3" else 'plugin "%s" exited with error' % gates.PLUGIN_NAME) in refused.stderr
        proc = subprocess.Popen([str(binary), "template", "r", str(chart)] + server.helm_flags(opened), env=env, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        server.open(opened)
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "kind: ConfigMap" in out and "name: r" in out
    finally:
        server.close()
