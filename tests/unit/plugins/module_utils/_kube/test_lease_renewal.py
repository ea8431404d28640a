"""Issue 35 "Lease lost falsely": a renewal the server applied but whose answer was lost is still this run's renewal
(its retry's 409 is not a loss), and a renewal counts from when it was sent, not from its answer. On the unit doubles,
and once on the lab's real API server behind its fault proxy."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import StackLease, lease_name

from doubles import FakeCluster  # pylint: disable=import-error


class LossyCluster(FakeCluster):
    """Applies a Lease update and then loses its answer (``lose_answers`` times), as a cut connection does; ``took``:
    seconds each Lease write takes (advances ``tick``, the lease's monotonic clock)."""

    def __init__(self):
        super(LossyCluster, self).__init__()
        self.lose_answers = 0
        self.took = 0.0
        self.now = 1000.0

    def tick(self):
        return self.now

    def replace(self, obj):
        result = super(LossyCluster, self).replace(obj)
        if obj.get("kind") == "Lease":
            self.now += self.took
            if self.lose_answers:
                self.lose_answers -= 1
                raise ClusterError("cluster: PUT lease failed: timed out", status=0, reason="timed out")
        return result

    def create(self, obj):
        result = super(LossyCluster, self).create(obj)
        if obj.get("kind") == "Lease":
            self.now += self.took
        return result


def held(cluster, stack, duration=30, identity="me@h/1-a"):
    lease = StackLease(cluster, stack, identity=identity, duration=duration, monotonic=cluster.tick).acquire()
    lease._stop.set()  # pylint: disable=protected-access  # renewals driven by the test, not the background thread
    lease._thread.join()  # pylint: disable=protected-access
    return lease


def live_lease(cluster, stack):
    return cluster.get("coordination.k8s.io/v1", "Lease", lease_name(stack), "default")


def test_a_renewal_applied_with_its_answer_lost_is_still_this_runs_lease():
    cluster = LossyCluster()
    lease = held(cluster, "lost-answer")
    cluster.lose_answers = 1
    with pytest.raises(ClusterError):
        lease.renew()  # the server applied it; this run never heard back (the background loop retries soon)
    applied = live_lease(cluster, "lost-answer")
    assert applied["spec"]["holderIdentity"] == "me@h/1-a"
    # the retry carries the resourceVersion from before the lost renewal: 409, and the re-read Lease is that renewal
    assert lease.renew() is True
    assert lease.lost is None and lease.loss() is None
    lease.check()  # no AicrError: the run goes on
    assert lease.renewals == 1
    assert lease.renew() is True and lease.renewals == 2, "the next renewal starts from the re-read Lease's resourceVersion"
    assert live_lease(cluster, "lost-answer")["metadata"]["resourceVersion"] != applied["metadata"]["resourceVersion"]
    lease.release()
    assert live_lease(cluster, "lost-answer") is None, "release deletes the Lease it renewed through the re-read"


def test_a_409_after_another_runs_renewal_under_the_same_holder_is_still_a_loss():
    """Only a renewTime this run sent makes the re-read Lease ours: one changed otherwise (by hand, by a run that reuses
    the identity) is lost as before."""
    cluster = LossyCluster()
    lease = held(cluster, "changed")
    other = live_lease(cluster, "changed")
    other["spec"]["renewTime"] = "2026-01-01T00:00:00.000000Z"
    cluster.replace(other)
    assert lease.renew() is False
    assert "changed under this run" in lease.lost


def test_a_takeover_after_a_lost_answer_is_a_loss():
    cluster = LossyCluster()
    lease = held(cluster, "taken")
    cluster.lose_answers = 1
    with pytest.raises(ClusterError):
        lease.renew()
    taken = live_lease(cluster, "taken")
    taken["spec"].update(holderIdentity="other@h/2-b", leaseTransitions=taken["spec"]["leaseTransitions"] + 1)
    cluster.replace(taken)
    assert lease.renew() is False
    assert "held by other@h/2-b" in lease.lost


def test_a_renewal_counts_from_when_it_was_sent_not_from_its_answer():
    """A renewal whose request took 4 s of a 10 s Lease: another run reads the renewTime written before the request
    and takes the Lease over 10 s after it, so this run's Lease ends 6 s after the answer, not 10 s."""
    cluster = LossyCluster()
    cluster.took = 4.0
    lease = held(cluster, "slow", duration=10)
    cluster.now += 5.0  # 9 s after the acquire was sent: still held
    assert lease.loss() is None
    cluster.now += 1.5  # 10.5 s after it was sent, 6.5 s after its answer
    assert lease.loss() is not None, "the acquire counted from its answer"
    cluster.now -= 6.5
    assert lease.renew() is True  # sent at 4.0 after the acquire's answer, answered 4 s later
    cluster.now += 6.5  # 10.5 s after the renewal was sent
    assert "not renewed within 10s" in lease.loss(), "the renewal counted from its answer"


def test_a_lost_answer_counts_from_the_renewal_that_landed():
    """The re-read Lease is the renewal whose answer was lost: it counts from when that one was sent."""
    cluster = LossyCluster()
    lease = held(cluster, "landed", duration=10)
    cluster.now += 3.0
    cluster.lose_answers = 1
    with pytest.raises(ClusterError):
        lease.renew()  # sent at +3
    cluster.now += 2.0
    assert lease.renew() is True  # the 409 at +5 finds the +3 renewal
    cluster.now += 7.5  # 9.5 s after the landed renewal was sent: held
    assert lease.loss() is None
    cluster.now += 1.0  # 10.5 s after it
    assert lease.loss() is not None
