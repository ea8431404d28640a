"""Helm argv, mirrors, release digest and helm's Secret storage decoding."""

import shutil
from pathlib import Path

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._helm import helm

REPO = Path(__file__).resolve().parents[4]


needs_helm = pytest.mark.skipif(not (REPO / ".venv" / "bin" / "helm4").exists() and not shutil.which("helm"), reason="helm not installed (make helm)")


# Each variable helm itself reads that would send it elsewhere than the Python client (another API server, identity,
# CA, namespace, context, release store or home), set to something wrong.
WRONG_HELM_ENVIRONMENT = {
    "HELM_KUBEAPISERVER": "https://127.0.0.1:1", "HELM_KUBETOKEN": "not-a-token", "HELM_KUBECAFILE": "/nonexistent/ca.crt",
    "HELM_KUBEASUSER": "system:admin", "HELM_KUBEASGROUPS": "system:masters", "HELM_KUBEINSECURE_SKIP_TLS_VERIFY": "true",
    "HELM_KUBETLS_SERVER_NAME": "wrong.example", "HELM_KUBECONTEXT": "no-such-context", "HELM_NAMESPACE": "kube-system",
    "HELM_DRIVER": "configmap", "HELM_DRIVER_SQL_CONNECTION_STRING": "postgres://nowhere", "HELM_CONFIG_HOME": "/nonexistent/config",
    "HELM_CACHE_HOME": "/nonexistent/cache", "HELM_DATA_HOME": "/nonexistent/data", "HELM_PLUGINS": "/nonexistent/plugins",
    "HELM_REGISTRY_CONFIG": "/nonexistent/registry.json", "HELM_REPOSITORY_CONFIG": "/nonexistent/repositories.yaml",
    "HELM_REPOSITORY_CACHE": "/nonexistent/repository", "HELM_MAX_HISTORY": "1", "KUBECONFIG": "/nonexistent/kubeconfig",
}


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
