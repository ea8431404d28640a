"""The kubeconfig's secrets (only those become no_log values) and AWX's K8S_AUTH_* credential variables."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import kubeconfig_secrets


def test_kubeconfig_secrets_are_only_the_secret_fields():
    provider = {"name": "oidc", "config": {"id-token": "idt", "refresh-token": "rt", "client-secret": "cs", "client-id": "cid"}}
    user = {"token": "tok", "password": "pw", "username": "alice", "client-key-data": "S0VZ", "client-certificate-data": "Q0VSVA==",
            "auth-provider": provider, "exec": {"command": "plugin", "env": [{"name": "TOKEN", "value": "envtok"}]}}
    config = {"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "c", "cluster": {"server": "https://s", "certificate-authority-data": "Q0E="}}],
              "users": [{"name": "u", "user": user}, "not-a-user", {"name": "v"}]}
    assert kubeconfig_secrets(config) == {"tok", "pw", "S0VZ", "idt", "rt", "cs", "envtok"}
    assert kubeconfig_secrets("/path/to/kubeconfig") == set()


def test_k8s_auth_variables_as_kubernetes_core_reads_them():
    from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
    from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import from_k8s_auth
    env = {"K8S_AUTH_HOST": "https://api:6443", "K8S_AUTH_API_KEY": "tok", "K8S_AUTH_SSL_CA_CERT": "/ca.crt", "K8S_AUTH_CONTEXT": "ctx"}
    # the module's own options come first
    assert from_k8s_auth("/k", None, env) == ("/k", "ctx")
    assert from_k8s_auth("/k", "mine", env) == ("/k", "mine")
    assert from_k8s_auth(None, None, dict(env, K8S_AUTH_KUBECONFIG="/awx")) == ("/awx", "ctx")
    config, context = from_k8s_auth(None, None, env)
    assert context is None and config["clusters"][0]["cluster"] == {"server": "https://api:6443", "certificate-authority": "/ca.crt"}
    assert config["users"][0]["user"] == {"token": "tok"}
    insecure = from_k8s_auth(None, None, dict(env, K8S_AUTH_VERIFY_SSL="false"))[0]
    assert insecure["clusters"][0]["cluster"] == {"server": "https://api:6443", "insecure-skip-tls-verify": True}
    assert from_k8s_auth(None, None, {}) == (None, None)
    with pytest.raises(AicrError, match="K8S_AUTH_API_KEY is set without K8S_AUTH_HOST"):
        from_k8s_auth(None, None, {"K8S_AUTH_API_KEY": "tok"})
