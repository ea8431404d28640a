"""execute() reads the helm version in the background, but a missing helm still fails before any change."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release import execute


def recipe(namespace):
    return {"recipe_name": "probe", "components": [
        {"name": "a", "type": "Helm", "chart": "a", "repository": "https://charts.example/r", "version": "1.0.0",
         "namespace": namespace, "values": {}, "dependencies": []}]}


def test_missing_helm_fails_before_any_write(tmp_path, kube):
    # the component's namespace does not exist yet: creating it would be the first write
    namespace = "%s-probe" % kube.namespace
    mark = kube.audit_mark()
    with pytest.raises(AicrError, match="helm_binary: cannot run .*no-such-helm"):
        execute({"recipe": recipe(namespace), "kubeconfig": kube.kubeconfig_for("release"), "helm_binary": str(tmp_path / "no-such-helm"),
                 "cache_dir": str(tmp_path / "cache")})
    assert kube.audit(since=mark, mutating=True, user=kube.user("release")) == []
    assert kube.get("/api/v1/namespaces/%s" % namespace) is None
