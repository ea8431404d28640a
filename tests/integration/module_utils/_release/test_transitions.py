"""The release engine's ``on_transition`` hook: every phase change, in order, serialised, never fatal."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._entry.gated_release import execute
from transitions_example import example  # noqa: F401  pylint: disable=import-error,unused-import


@pytest.fixture
def status_client(kube, clusterstack_crd):  # pylint: disable=unused-argument
    """gated_release's identity (``release``, which holds aicr-runtime:stack) on the lab's real kube-apiserver."""
    from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import client_for  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils._stack import store  # pylint: disable=import-outside-toplevel

    return client_for(kube.kubeconfig_for("release"))


def test_execute_writes_live_status_through_the_stack_store(example, status_client, stacks):
    from ansible_collections.aicr.runtime.plugins.module_utils._stack import store  # pylint: disable=import-outside-toplevel

    cluster, helm, recipe = example
    gpu = stacks.create("gpu", {"catalog": {"source": "/c"}})
    params = {"recipe": recipe, "stack": "gpu", "poll_interval": 0.01, "timeout": 10, "render_cache": False, "status_stack": gpu}
    plan = execute(dict(params), check_mode=True, cluster=cluster, helm=helm, status_client=status_client)
    assert "live_status" not in plan and "status" not in store.CrdStore(status_client).read(gpu), "never in check mode"

    result = execute(dict(params), cluster=cluster, helm=helm, status_client=status_client)
    assert "failed_message" not in result and "warnings" not in result
    assert result["live_status"]["transitions"] == 10 and 1 <= result["live_status"]["writes"] <= 10
    assert result["live_status"]["stack"] == gpu and result["live_status"]["backend"] == "crd"
    status = store.CrdStore(status_client).read(gpu)["status"]
    assert sorted(c["name"] for c in status["components"]) == sorted(c["name"] for c in recipe["components"])
    assert all(c["phase"] == "Ready" for c in status["components"]) and status["readyComponents"] == "5/5"
    before = store.CrdStore(status_client).read(gpu)

    again = execute(dict(params), cluster=cluster, helm=helm, status_client=status_client)
    assert again["changed"] is False and again["live_status"]["writes"] == 0
    assert store.CrdStore(status_client).read(gpu)["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"], "a no-op writes nothing"

    nope = stacks.name("nope")
    missing = execute(dict(params, status_stack=nope), cluster=cluster, helm=helm, status_client=status_client)
    assert "live_status" not in missing and missing["changed"] is False
    assert missing["warnings"] == ["status_stack: live status disabled: name: ClusterStack '%s' not found; allowed: an existing ClusterStack" % nope]
