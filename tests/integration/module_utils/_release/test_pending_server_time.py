"""Clearing a pending helm revision is opt-in, and its age is measured with the API server's clock, not this host's."""

import time


from ansible_collections.aicr.runtime.plugins.module_utils._common import timeutil
from ansible_collections.aicr.runtime.plugins.module_utils._helm.storage import DeployedRelease


def pending(created_epoch):
    created = timeutil.millis_from_epoch(created_epoch)[:19] + "Z"
    return DeployedRelease({"metadata": {"name": "sh.helm.release.v1.r.v3", "namespace": "ns", "creationTimestamp": created,
                                         "labels": {"name": "r", "version": "3", "status": "pending-upgrade", "owner": "helm"}}}, None)


def test_the_real_api_servers_clock(kube):
    from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import client_for
    client = client_for(kube.kubeconfig_for("nobody"))
    # the lab's API server runs on this host: its Date header (whole seconds) is this host's clock
    assert abs(client.server_time() - time.time()) < 5
