"""Status stores against the lab's real kube-apiserver, as the least-privilege identities: CRD install, CRD subresource,
ConfigMap backend, 409 retry, the transition hook."""

import json

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._stack import engine as stack_engine
from ansible_collections.aicr.runtime.plugins.module_utils._stack import store


@pytest.fixture
def api(stack_client):
    """The status writer's identity (``stack``) on the shared cluster, where the ClusterStack CRD is installed."""
    return stack_client


# --- issue #35, item 2: which ConfigMap is a stack ------------------------------------------------------------------

def forge(kube, name, stack, spec, manager=None):
    """A ConfigMap labelled for ``stack`` written by someone else than the store (the lab's admin, field manager
    ``aicr-lab``; ``manager``: the one it claims with ``?fieldManager=``)."""
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": kube.namespace,
                         "labels": {"app.kubernetes.io/managed-by": "aicr-runtime", "runtime.aicr.io/stack": stack}},
            "data": {"spec": json.dumps(spec), "status": "{}", "generation": "1"}}
    return kube.rest.request("POST", "/api/v1/namespaces/%s/configmaps" % kube.namespace, body=body,
                             query={"fieldManager": manager} if manager else None)


def info_of(kube, **params):
    """stack_info's engine as the ``stack`` identity on the test's namespace."""
    return stack_engine.info(dict({"backend": "configmap", "namespace": kube.namespace, "kubeconfig": kube.kubeconfig_for("stack")}, **params))


REAL = {"catalog": {"source": "/real"}, "criteria": {"service": "kind"}}
FORGED = {"catalog": {"source": "https://evil.example/catalog"}, "criteria": {"service": "kind"}}


def test_the_stack_store_defaults_to_aicr_system():
    from ansible_collections.aicr.runtime.plugins.module_utils._stack.options import LIVE_STATUS_ARG_SPEC, STACK_STORE_ARG_SPEC

    assert STACK_STORE_ARG_SPEC["namespace"]["default"] == "aicr-system" and LIVE_STATUS_ARG_SPEC["status_namespace"]["default"] == "aicr-system"

    class Client:
        def register(self, *args, **kwargs):
            pass

    assert store.make_store(Client(), "configmap").namespace == "aicr-system" and store.ConfigMapStore(Client()).namespace == "aicr-system"
