"""Every timeout bounds the whole wait, connection included (issue 36): an API server that accepts the connection and never
answers held a gated_release task 154 s (five attempts of 30 s, outside any window) whatever its ``overall_timeout``.

Against ``silent_server`` (a socket on 127.0.0.1 that accepts and never answers): each call returns with an error that
names the deadline that ran out; the generous pytest timeouts only stop a test that would otherwise hang. No elapsed time
is measured here."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._kube.deadline import Deadline, bookkeeping, labelled, retry_window
from ansible_collections.aicr.runtime.plugins.module_utils._kube.connection import resolve
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError, transient
from ansible_collections.aicr.runtime.plugins.module_utils._kube.lease import StackLease

HANG = pytest.mark.timeout(60)


def silent_client(server, tmp_path, **options):
    return resolve(server.kubeconfig(tmp_path / "kubeconfig")).client(**options)


@HANG
def test_the_clients_own_deadline_bounds_a_request_the_server_never_answers(silent_server, tmp_path):
    client = silent_client(silent_server, tmp_path, deadline=Deadline(0.5, labelled("overall_timeout", 0.5)))
    with pytest.raises(ClusterError) as failed:
        client.get("v1", "ConfigMap", "inventory", "aicr-system")
    assert failed.value.msg == "cluster: GET %s/api/v1 failed: no answer within overall_timeout (0.5s)" % silent_server.url
    assert failed.value.status == 0 and transient(failed.value)  # no answer: a readiness wait counts it as "not yet"
    assert failed.value.details["deadline"] == "overall_timeout (0.5s)"


@HANG
def test_outside_any_deadline_one_call_retries_included_is_given_the_request_timeout(silent_server, tmp_path):
    client = silent_client(silent_server, tmp_path, request_timeout=0.5)
    with pytest.raises(ClusterError, match=r"failed: no answer within the API request timeout \(0\.5s\)$"):
        client.get_path("/version")
    assert silent_server.accepted == 1, "a request that got no answer is not sent four more times, 30 s each"


@HANG
def test_a_window_bounds_each_attempt_not_only_the_retries(silent_server, tmp_path):
    client = silent_client(silent_server, tmp_path)  # request_timeout 30 s: the window is what ends the attempt
    with retry_window(0.5, labelled("timeout", 600)):
        with pytest.raises(ClusterError, match=r"no answer within timeout \(600s\)$"):
            client.list("v1", "Pod", "apps")


@HANG
def test_the_earlier_of_the_window_and_the_clients_deadline_governs(silent_server, tmp_path):
    client = silent_client(silent_server, tmp_path, deadline=Deadline(0.3, labelled("overall_timeout", 0.3)))
    with retry_window(600, labelled("timeout", 600)):
        with pytest.raises(ClusterError, match=r"no answer within overall_timeout \(0\.3s\)$"):
            client.get("v1", "ConfigMap", "c", "ns")


def test_nothing_is_sent_once_the_deadline_has_passed(silent_server, tmp_path):
    client = silent_client(silent_server, tmp_path, deadline=Deadline(0, labelled("overall_timeout", 30)))
    with pytest.raises(ClusterError, match=r"^cluster: GET %s/api/v1 not sent: overall_timeout \(30s\) has passed$" % silent_server.url):
        client.get("v1", "ConfigMap", "c", "ns")
    assert client.watch_until("v1", "ConfigMap", "c", "ns", "1", 10, lambda obj: True) is False
    assert silent_server.accepted == 0


@HANG
def test_a_detached_window_has_its_own_deadline_after_the_runs(silent_server, tmp_path):
    client = silent_client(silent_server, tmp_path, deadline=Deadline(0, labelled("overall_timeout", 30)))
    with retry_window(0.3, "the release of the Lease (0.3s)", detached=True):
        with pytest.raises(ClusterError, match=r"no answer within the release of the Lease \(0\.3s\)$"):
            client.delete("coordination.k8s.io/v1", "Lease", "l", "ns")
    assert silent_server.accepted == 1, "sent although the run's deadline had passed"
    with bookkeeping("the inventory's record"):
        with retry_window(0.3):  # a nested window without a name is the enclosing one's
            with pytest.raises(ClusterError, match=r"no answer within the inventory's record \(15s\)$"):
                client.get("v1", "ConfigMap", "c", "ns")


@HANG
def test_a_lease_renewal_waits_only_while_the_lease_it_renews_is_valid(silent_server, tmp_path):
    client = silent_client(silent_server, tmp_path)
    now = [1000.0]
    lease = StackLease(client, "s", namespace="aicr-system", duration=10, identity="me", monotonic=lambda: now[0],
                       clock=lambda: __import__("datetime").datetime(2026, 1, 1))
    lease._current = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",  # pylint: disable=protected-access
                      "metadata": {"name": lease.name, "namespace": "aicr-system", "resourceVersion": "1", "uid": "u"}, "spec": {}}
    lease._renewed_at = now[0] - 9.5  # pylint: disable=protected-access  # half a second of the Lease left
    with pytest.raises(ClusterError, match=r"no answer within lease_duration \(10s\)$"):
        lease.renew()
