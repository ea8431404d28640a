"""The stack Lease really excludes (issue 15, item 3), against the lab's real API server as the ``release`` identity:
two concurrent runs, renewals refused mid-run (the lab's fault proxy), a crashed run's Lease taken over, staleness by
the server's clock, release deleting only its own Lease. Waits are on observed conditions with deadlines."""

import datetime
import threading

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import timeutil
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._release.engine import GatedRelease, Options
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import StackLease, default_identity, lease_name
from ansible_collections.aicr.runtime.plugins.module_utils._release.plan import build_plan

from waiting import wait_for  # pylint: disable=import-error

LEASES = "/apis/coordination.k8s.io/v1/namespaces/%s/leases"


def configmap(namespace, name):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": {"a": "1"}}


def test_holder_identities_are_unique_per_run():
    assert default_identity() != default_identity()


def test_a_fresh_lease_by_the_servers_clock_is_not_stale_whatever_this_hosts_clock_says(fakes):
    cluster = fakes.FakeCluster()
    StackLease(cluster, "skew", identity="other@host/1-x", duration=30).acquire()._stop.set()
    cluster.server_skew = -3600.0  # the server's clock is an hour behind this host's: by this host's clock the Lease is old
    lease = cluster.get("coordination.k8s.io/v1", "Lease", lease_name("skew"), "default")
    lease["spec"]["renewTime"] = timeutil.microtime(datetime.datetime.fromtimestamp(cluster.server_time(), datetime.timezone.utc).replace(tzinfo=None))
    cluster.replace(lease)
    with pytest.raises(AicrError, match="being rolled out by other@host/1-x"):
        StackLease(cluster, "skew", identity="me@host/2-y", duration=30).acquire()


def test_release_deletes_only_its_own_lease(fakes):
    cluster = fakes.FakeCluster()
    mine = StackLease(cluster, "own", identity="me@h/1-a", duration=30).acquire()
    mine._stop.set()  # pylint: disable=protected-access
    mine._thread.join()  # pylint: disable=protected-access
    # another run took the Lease over meanwhile (it thought ours stale): ours is no longer the object we renewed
    live = cluster.get("coordination.k8s.io/v1", "Lease", lease_name("own"), "default")
    live["spec"]["holderIdentity"] = "other@h/2-b"
    cluster.replace(live)
    mine.release()
    assert cluster.get("coordination.k8s.io/v1", "Lease", lease_name("own"), "default")["spec"]["holderIdentity"] == "other@h/2-b"


def test_a_lease_stolen_mid_rollout_stops_the_rollout_before_its_next_change(fakes):
    """Engine level: after the first component, another run overwrites the Lease; the next scheduled renewal finds it,
    and no later component is installed."""
    cluster = fakes.FakeCluster()
    helm = fakes.FakeHelm(cluster, {n: (lambda values, release, namespace: [fakes.deployment(release)]) for n in ("a", "b")})
    recipe = {"recipe_name": "x", "components": [
        {"name": "a", "chart": "a", "repository": "https://r", "version": "1", "namespace": "apps", "values": {}, "dependencies": []},
        {"name": "b", "chart": "b", "repository": "https://r", "version": "1", "namespace": "apps", "values": {}, "dependencies": ["a"]}]}
    options = Options(stack="stolen", poll_interval=0.01, timeout=10, concurrency=1)
    options.lease_duration = 0.3  # renew every 0.1 s for the test (the module bounds it to 10..3600)
    stolen = threading.Event()

    def steal(result):
        if result["name"] == "a" and result["phase"] == "Ready" and not stolen.is_set():
            live = cluster.get("coordination.k8s.io/v1", "Lease", lease_name("stolen"), "aicr-system")  # the default lease_namespace
            live["spec"]["holderIdentity"] = "thief@elsewhere/9-z"
            cluster.replace(live)
            stolen.set()
            wait_for(lambda: run.lease.lost is not None, 5, "the renewal after the theft never ran")

    run = GatedRelease(cluster, helm, build_plan(recipe), options, on_transition=steal)
    result = run.run()
    failed = result["failed_message"]
    assert failed.startswith("lease: this run lost the Lease of stack stolen after its last change: ") and "held by thief@elsewhere/9-z" in failed, failed
    assert [u[1] for u in helm.upgrades()] == ["a"], "b was not installed after the Lease was lost"
    # the failure reports what the run did: a rolled out, b stopped before its change
    phases = dict((c["name"], (c["phase"], c["changed"])) for c in result["components"])
    assert phases == {"a": ("Ready", True), "b": ("Failed", False)}, phases
    assert result["changed"] is True and "stopped before its next change" in failed
    assert any("inventory ConfigMap aicr-system/aicr-runtime-stolen-inventory was not updated: the Lease was lost" in w for w in result["warnings"]), result
