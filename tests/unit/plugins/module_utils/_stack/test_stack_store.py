"""Status stores against the lab's real kube-apiserver, as the least-privilege identities: CRD install, CRD subresource,
ConfigMap backend, 409 retry, the transition hook."""


from ansible_collections.aicr.runtime.plugins.module_utils._stack import store


# --- issue #35, item 2: which ConfigMap is a stack ------------------------------------------------------------------


def test_the_stack_store_defaults_to_aicr_system():
    from ansible_collections.aicr.runtime.plugins.module_utils._stack.options import LIVE_STATUS_ARG_SPEC, STACK_STORE_ARG_SPEC

    assert STACK_STORE_ARG_SPEC["namespace"]["default"] == "aicr-system" and LIVE_STATUS_ARG_SPEC["status_namespace"]["default"] == "aicr-system"

    class Client:
        def register(self, *args, **kwargs):
            pass

    assert store.make_store(Client(), "configmap").namespace == "aicr-system" and store.ConfigMapStore(Client()).namespace == "aicr-system"
