"""Issue 35 "Lease lost falsely": a renewal the server applied but whose answer was lost is still this run's renewal
(its retry's 409 is not a loss), and a renewal counts from when it was sent, not from its answer. On the unit doubles,
and once on the lab's real API server behind its fault proxy."""


from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import client_for
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import StackLease, lease_name

from waiting import wait_for  # pylint: disable=import-error

LEASES = "/apis/coordination.k8s.io/v1/namespaces/%s/leases"


def test_on_the_lab_a_renewal_whose_answer_is_cut_keeps_the_lease(kube):
    """The real API server applies a renewal whose answer the lab's fault proxy cuts (after the status line, before the
    body): the background renewer's retry gets 409, re-reads the Lease, finds its own renewal there, and goes on."""
    with kube.fault_proxy() as proxy:
        client = client_for(proxy.kubeconfig_for(kube.kubeconfig_for("release")))
        lease = StackLease(client, "cut-answer", namespace=kube.namespace, duration=10).acquire()
        try:
            proxy.add_cut(count=1, verbs=["update"], path=r"/leases/", after_bytes=0)
            wait_for(lambda: any(r["fault"] == "cut" for r in proxy.requests), 15, "no renewal was cut")
            wait_for(lambda: lease.renewals >= 2 or lease.lost is not None, 20, "the renewals after the cut one never ran")
            assert lease.lost is None, lease.lost
            lease.check()
            updates = [r for r in proxy.requests if r["verb"] == "update" and "/leases/" in r["target"]]
            assert len(updates) >= 3, updates  # the cut one, its 409 retry, a renewal after
        finally:
            lease.release()
    assert kube.get(LEASES % kube.namespace + "/" + lease_name("cut-answer")) is None, "the Lease was still this run's to delete"
