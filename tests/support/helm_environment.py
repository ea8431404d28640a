"""helm's own environment variables, each set to something wrong: shared by the unit and integration helm tests."""

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
