"""execute() reads the helm version in the background, but a missing helm still fails before any change."""

import pytest

from aicr_emulators.kube.pytest_fixture import start_emulator

from ansible_collections.aicr.runtime.plugins.module_utils.common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils.release.engine import execute

RECIPE = {"recipe_name": "probe", "components": [
    {"name": "a", "type": "Helm", "chart": "a", "repository": "https://charts.example/r", "version": "1.0.0",
     "namespace": "probe-ns", "values": {}, "dependencies": []}]}


def test_missing_helm_fails_before_any_write(tmp_path):
    kube = start_emulator(tmp_path / "kube", in_process=True)
    try:
        mark = kube.control.audit_mark()
        with pytest.raises(AicrError, match="helm_binary: cannot run .*no-such-helm"):
            execute({"recipe": RECIPE, "kubeconfig": kube.kubeconfig, "helm_binary": str(tmp_path / "no-such-helm"),
                     "cache_dir": str(tmp_path / "cache")})
        assert kube.control.audit(mutating=True, since=mark) == []
    finally:
        kube.stop()
