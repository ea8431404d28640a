"""Helm argv, mirrors, release digest and helm's Secret storage decoding."""

import shutil
from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._helm import helm
from helm_environment import WRONG_HELM_ENVIRONMENT  # pylint: disable=import-error

REPO = Path(__file__).resolve().parents[4]


needs_helm = pytest.mark.skipif(not (REPO / ".venv" / "bin" / "helm4").exists() and not shutil.which("helm"), reason="helm not installed (make helm)")


@pytest.mark.helm
@needs_helm
def test_real_helm_reaches_the_python_clients_cluster_whatever_the_environment_says(tmp_path, kube, monkeypatch):
    """Real helm, the lab's real API server: with every HELM_* variable (and KUBECONFIG) set wrong, helm installs into the
    namespace it is given, as the identity of the given kubeconfig, and stores the release as a Secret."""
    binary = REPO / ".venv" / "bin" / "helm"
    for key, value in WRONG_HELM_ENVIRONMENT.items():
        monkeypatch.setenv(key, value)
    monkeypatch.setenv("KUBECONFIG", kube.kubeconfig_for("nobody"))
    runner = helm.HelmRunner(str(binary), kubeconfig_path=kube.kubeconfig_for("release"), home=str(tmp_path / "home"))
    mark = kube.audit_mark()
    revision = runner.upgrade("plain", kube.namespace, str(REPO / "examples" / "charts" / "example-agent"), None, None, {}, {"aicr.io/stack": "env"},
                              timeout=60, workdir=str(tmp_path))
    assert revision == 1
    secret = kube.get("/api/v1/namespaces/%s/secrets/sh.helm.release.v1.plain.v1" % kube.namespace)
    assert secret is not None and secret["metadata"]["labels"]["owner"] == "helm"
    helm_users = set(e["user"] for e in kube.audit(since=mark) if e["userAgent"].lower().startswith("helm"))
    assert helm_users == {kube.user("release")}, helm_users


@pytest.mark.helm
@needs_helm
@pytest.mark.parametrize("binary", ["helm3", "helm4"])
def test_real_helm_version(binary):
    path = REPO / ".venv" / "bin" / binary
    if not path.exists():
        pytest.skip("%s not installed" % binary)
    runner = helm.HelmRunner(str(path))
    assert runner.major == int(binary[-1])
