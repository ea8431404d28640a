"""The stack Lease really excludes (issue 15, item 3), against the lab's real API server as the ``release`` identity:
two concurrent runs, renewals refused mid-run (the lab's fault proxy), a crashed run's Lease taken over, staleness by
the server's clock, release deleting only its own Lease. Waits are on observed conditions with deadlines."""

import datetime
import threading

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common import timeutil
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import client_for
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import Guarded, StackLease, lease_name

from waiting import wait_for  # pylint: disable=import-error

LEASES = "/apis/coordination.k8s.io/v1/namespaces/%s/leases"


def configmap(namespace, name):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": namespace}, "data": {"a": "1"}}


def test_two_concurrent_runs_on_one_stack_exactly_one_holds_it(kube):
    clients = [client_for(kube.kubeconfig_for("release")), client_for(kube.kubeconfig_for("release"))]
    barrier = threading.Barrier(2)
    outcomes = [None, None]

    def run(index):
        lease = StackLease(clients[index], "shared", namespace=kube.namespace, duration=30)
        barrier.wait()
        try:
            outcomes[index] = lease.acquire()
        except AicrError as exc:
            outcomes[index] = exc

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    held = [o for o in outcomes if isinstance(o, StackLease)]
    refused = [o for o in outcomes if isinstance(o, AicrError)]
    assert len(held) == 1 and len(refused) == 1, outcomes
    assert "being rolled out by %s" % held[0].identity in refused[0].msg or "at the same moment" in refused[0].msg, refused[0].msg
    live = kube.get(LEASES % kube.namespace + "/" + lease_name("shared"))
    assert live["spec"]["holderIdentity"] == held[0].identity
    held[0].release()
    assert kube.get(LEASES % kube.namespace + "/" + lease_name("shared")) is None


def test_refused_renewals_stop_the_run_before_its_next_mutation(kube):
    """The fault proxy answers every Lease update with 409: the first scheduled renewal marks the Lease lost; the next
    mutation is refused before it reaches the server, and release leaves the Lease alone."""
    with kube.fault_proxy() as proxy:
        client = client_for(proxy.kubeconfig_for(kube.kubeconfig_for("release")))
        lease = StackLease(client, "renewals", namespace=kube.namespace, duration=10).acquire()
        guarded = Guarded(client, lease)
        guarded.create(configmap(kube.namespace, "before"))  # held: mutations go through
        proxy.add_fault(code=409, count=None, verbs=["update"], path=r"/leases/", message="the object has been modified")
        wait_for(lambda: lease.lost is not None, 15, "the scheduled renewal never ran")
        assert "refused (409)" in lease.lost, lease.lost
        mark = kube.audit_mark()
        with pytest.raises(AicrError) as err:
            guarded.create(configmap(kube.namespace, "after"))
        assert err.value.msg.startswith("lease: this run lost the Lease of stack renewals:") and "stopped before its next change" in err.value.msg
        assert "\n" not in err.value.msg
        assert [e for e in kube.audit(since=mark, mutating=True) if e.get("resource") == "configmaps"] == []
        lease.release()
    assert kube.get(LEASES % kube.namespace + "/" + lease_name("renewals")) is not None, "a lost Lease is not deleted by the run that lost it"
    assert kube.get("/api/v1/namespaces/%s/configmaps/after" % kube.namespace) is None


def test_renewals_failing_until_the_duration_passes_lose_the_lease(kube):
    with kube.fault_proxy() as proxy:
        client = client_for(proxy.kubeconfig_for(kube.kubeconfig_for("release")))
        lease = StackLease(client, "unreachable", namespace=kube.namespace, duration=10).acquire()
        proxy.add_fault(code=503, count=None, verbs=["update"], path=r"/leases/")
        wait_for(lambda: lease.lost is not None, 25, "renewals failing for the whole duration never lost the Lease")
        assert "could not be renewed for 10s" in lease.lost, lease.lost
        with pytest.raises(AicrError, match="lost the Lease"):
            lease.check()
        lease.release()


def test_a_crashed_runs_lease_is_taken_over_by_server_time(kube):
    client = client_for(kube.kubeconfig_for("release"))
    server_now = datetime.datetime.fromtimestamp(client.server_time(), datetime.timezone.utc).replace(tzinfo=None)
    crashed = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": {"name": lease_name("crashed"), "namespace": kube.namespace},
               "spec": {"holderIdentity": "ci@runner-1/77-deadbeef", "leaseDurationSeconds": 10, "leaseTransitions": 0,
                        "acquireTime": timeutil.microtime(server_now - datetime.timedelta(seconds=300)),
                        "renewTime": timeutil.microtime(server_now - datetime.timedelta(seconds=60))}}
    kube.rest.create(LEASES % kube.namespace, crashed)
    lease = StackLease(client, "crashed", namespace=kube.namespace, duration=10).acquire()
    try:
        assert lease.taken_over == {"holder": "ci@runner-1/77-deadbeef", "message": ""}
        live = kube.get(LEASES % kube.namespace + "/" + lease_name("crashed"))
        assert live["spec"]["holderIdentity"] == lease.identity and live["spec"]["leaseTransitions"] == 1
    finally:
        lease.release()


def test_release_deletes_its_lease_even_after_a_late_renewal_changed_it(kube):
    """A renewal still in flight when the renewer is stopped changes the Lease's resourceVersion after the one release
    holds: the Lease is still this run's, so release deletes it as it is now (it used to stay held for a whole duration,
    refusing the next run)."""
    lease = StackLease(client_for(kube.kubeconfig_for("release")), "late-renewal", namespace=kube.namespace, duration=30).acquire()
    path = LEASES % kube.namespace + "/" + lease_name("late-renewal")
    before = kube.get(path)
    lease._stop.set()  # pylint: disable=protected-access
    lease._thread.join(10)  # pylint: disable=protected-access
    renewed = dict(before, spec=dict(before["spec"], renewTime=timeutil.microtime(timeutil.utcnow())))
    kube.rest.request("PUT", path, body=renewed)  # the late renewal: same holder, new resourceVersion
    assert kube.get(path)["metadata"]["resourceVersion"] != before["metadata"]["resourceVersion"]
    lease.release()
    assert kube.get(path) is None
