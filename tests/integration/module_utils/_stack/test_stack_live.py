"""LiveStatus: gated_release's on_transition hook writing per-component progress to a stack's status, coalesced."""

import threading

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import client_for
from ansible_collections.aicr.runtime.plugins.module_utils._stack import live as live_mod
from ansible_collections.aicr.runtime.plugins.module_utils._stack import status, store


def result(name, phase, action="install", blocked_by=(), revision=None):
    return {"name": name, "kind": "release", "phase": phase, "blocked_by": list(blocked_by), "chart": name, "version": "1.0.0",
            "revision": revision, "namespace": "apps", "message": "", "action": action}


def live(memory, interval=30.0, **kwargs):
    return live_mod.LiveStatus(status.StatusWriter(memory, "s", sleep=lambda _s: None), interval=interval, **kwargs)


@pytest.fixture
def api(stack_client):
    """The status writer's identity (``stack``) on the shared cluster, where the ClusterStack CRD is installed."""
    return stack_client


def test_against_the_api_server_from_many_threads(api, stacks, kube):
    name = stacks.create("live", {"catalog": {"source": "/c"}})
    mark = kube.audit_mark()
    writer, warning = live_mod.live_status(api, name, interval=0.02)
    assert warning is None

    def component(i):
        name = "c%d" % i
        writer.on_transition(result(name, "Deploying"))
        writer.on_transition(result(name, "Ready", revision=1))

    threads = [threading.Thread(target=component, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    summary = writer.close()
    status = store.CrdStore(api).read(name)["status"]
    assert sorted(c["name"] for c in status["components"]) == ["c%d" % i for i in range(8)]
    assert all(c["phase"] == "Ready" for c in status["components"]) and status["readyComponents"] == "8/8"
    assert summary["transitions"] == 16 and 1 <= summary["writes"] <= 16 and summary["warnings"] == []
    written = kube.audit(since=mark, mutating=True, user=kube.user("stack"))
    assert written and all(e["resource"] == "clusterstacks" and e["subresource"] == "status" and e["name"] == name for e in written), \
        "every write goes through the status subresource"
    assert len([e for e in written if e["code"] < 300]) == summary["writes"] and \
        len([e for e in written if e["code"] == 409]) == summary["conflicts"]

    nope = stacks.name("nope")
    missing, warning = live_mod.live_status(api, nope)
    assert missing is None and warning.startswith("status_stack: live status disabled: name: ClusterStack '%s' not found" % nope)
    cm_missing, warning = live_mod.live_status(api, "nope", backend="configmap", namespace=kube.namespace)
    assert cm_missing is None and "no ConfigMap aicr-stack-nope" in warning


def device(event, res_uuid, node="node-1", serial=None):
    return {"event": event, "machine": "m-" + node, "node": node, "type": "gpu", "model": "A100", "res_uuid": res_uuid,
            "serial": serial or "GPU-" + res_uuid, "status": "ok", "warnings": []}


def test_live_status_for_devices_against_the_api_server(stacks, kube, clusterstack_crd):  # pylint: disable=unused-argument
    # fabric_device writes the device status: its identity (aicr-runtime:fabric + aicr-runtime:stack)
    api = client_for(kube.kubeconfig_for("fabric"))
    name = stacks.create("gpu", {"catalog": {"source": "/x"}})
    live_writer, warning = live_mod.live_status(api, name, interval=0.01, devices=True)
    assert warning is None
    live_writer.on_transition(device("attached", "r1"))
    live_writer.on_transition(device("attached", "r2"))
    summary = live_writer.close()
    assert summary["writes"] >= 1 and summary["warnings"] == []
    obj = api.get_path("/apis/runtime.aicr.io/v1alpha1/clusterstacks/%s" % name)
    assert sorted(d["resUUID"] for d in obj["status"]["devices"]) == ["r1", "r2"]
    missing, warning = live_mod.live_status(api, stacks.name("nope"), devices=True)
    assert missing is None and "live status disabled" in warning
