"""Issue 35: an API server that stops answering for a while (a restart, a pause) is waited for within the deadline of
the work the request is part of - a component's timeout - not given up after ~1.5 s; readiness waits go on through
unanswered reads until their deadline. Against a stub transport and a fake clock (no real waiting)."""

import json

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._kube import client as cluster_mod
from ansible_collections.aicr.runtime.plugins.module_utils._kube import wait
from ansible_collections.aicr.runtime.plugins.module_utils._kube.client import KubeClient
from ansible_collections.aicr.runtime.plugins.module_utils._kube.deadline import retry_window
from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError

DISCOVERY = {"resources": [{"name": "configmaps", "kind": "ConfigMap", "namespaced": True}]}
CM = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "ns"}}


class Clock(object):
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class Response(object):
    def __init__(self, status, body):
        self.status = status
        self.data = json.dumps(body).encode()


class Down(object):
    """The API server: discovery answered; then ``outage`` seconds (of ``clock``) of refused connections (``error``) or
    of a status (``status``), each attempt also costing ``cost`` seconds; answers after that."""

    def __init__(self, clock, outage, error=None, status=None, cost=0.0):
        self.clock, self.until, self.error, self.status, self.cost = clock, clock() + outage, error, status, cost
        self.calls = []

    def request(self, method, url, **_kwargs):
        path = url.split("http://kube", 1)[1].split("?", 1)[0]
        if path == "/api/v1":
            return Response(200, DISCOVERY)
        self.calls.append((method, path))
        self.clock.now += self.cost
        if self.clock() < self.until:
            if self.status:
                return Response(self.status, {"message": "the server is currently unable to handle the request"})
            raise self.error or ConnectionRefusedError("[Errno 111] Connection refused")
        return Response(200, dict(CM, metadata=dict(CM["metadata"], resourceVersion="7")))


class ApiClient(object):
    def __init__(self, transport):
        self.configuration = type("Config", (), {"host": "http://kube", "auth_settings": staticmethod(lambda: {})})()
        self.rest_client = type("Rest", (), {"pool_manager": transport})()


@pytest.fixture
def clock(monkeypatch):
    fake = Clock()
    monkeypatch.setattr(cluster_mod.time, "monotonic", fake)
    monkeypatch.setattr(cluster_mod.cancel, "pause", fake.sleep)
    return fake


def test_reads_are_retried_until_the_windows_deadline_not_a_count(clock):
    transport = Down(clock, outage=20.0)
    kube = KubeClient(ApiClient(transport))
    with retry_window(180):
        assert kube.get("v1", "ConfigMap", "c", "ns")["metadata"]["resourceVersion"] == "7"
    assert len(transport.calls) > 10 and kube.retried == len(transport.calls) - 1
    assert clock() - 100.0 < 23.0, "backoff at most 2 s: answered within 2 s of the server's return"


def test_the_window_bounds_the_retries(clock):
    transport = Down(clock, outage=1000.0, status=503)
    kube = KubeClient(ApiClient(transport))
    with retry_window(30):
        with pytest.raises(ClusterError, match="returned 503") as err:
            kube.get("v1", "ConfigMap", "c", "ns")
    assert err.value.status == 503
    assert 28.0 <= clock() - 100.0 <= 30.0


def test_outside_a_window_reads_are_retried_about_one_and_a_half_seconds(clock):
    transport = Down(clock, outage=20.0)
    kube = KubeClient(ApiClient(transport))
    with pytest.raises(ClusterError, match="connection refused"):
        kube.get("v1", "ConfigMap", "c", "ns")
    assert len(transport.calls) == 5 and clock() - 100.0 == pytest.approx(1.5)


def test_writes_are_retried_only_when_the_server_certainly_did_not_act(clock):
    for outage, error, status, retried in ((20.0, None, None, True),  # refused: never sent
                                           (20.0, TimeoutError("timed out"), None, False),  # sent, maybe applied: not again
                                           (20.0, None, 503, False)):
        transport = Down(clock, outage=outage, error=error, status=status)
        kube = KubeClient(ApiClient(transport))
        with retry_window(180):
            if retried:
                kube.create(CM)
            else:
                with pytest.raises(ClusterError):
                    kube.create(CM)
        assert (len(transport.calls) > 1) is retried, (error, status, transport.calls)


class Flaky(object):
    """A client double whose reads fail (``error``) until ``clock`` passes ``until``."""

    def __init__(self, clock, until, error):
        self.clock, self.until, self.error, self.reads = clock, until, error, 0

    def get(self, api_version, kind, name, namespace=None):
        self.reads += 1
        if self.clock() < self.until:
            raise self.error
        return dict(CM)


def test_a_readiness_wait_goes_on_through_unanswered_reads_until_its_deadline():
    clock = Clock()
    client = Flaky(clock, clock() + 20.0, ClusterError("cluster: GET failed: connection refused", status=0, reason="connection refused"))
    wait.until_current(client, [("v1", "ConfigMap", "c", "ns")], clock() + 180, "component a", "its objects", poll_interval=0.5,
                       clock=clock, sleep=clock.sleep)
    assert client.reads > 1 and clock() >= 120.0


def test_a_wait_that_never_gets_an_answer_times_out_saying_so():
    clock = Clock()
    client = Flaky(clock, clock() + 1000.0, ClusterError("cluster: GET returned 503", status=503, reason="unavailable"))
    with pytest.raises(AicrError, match=r"timed out waiting for its objects: ConfigMap ns/c not ready: the API server did not answer \(503 unavailable\)"):
        wait.until_current(client, [("v1", "ConfigMap", "c", "ns")], clock() + 30, "component a", "its objects", poll_interval=0.5,
                           clock=clock, sleep=clock.sleep)


def test_an_answer_that_is_an_error_still_ends_the_wait_at_once():
    clock = Clock()
    client = Flaky(clock, clock() + 1000.0, ClusterError("cluster: GET returned 403: forbidden", status=403, reason="forbidden"))
    with pytest.raises(ClusterError, match="403"):
        wait.until_current(client, [("v1", "ConfigMap", "c", "ns")], clock() + 30, "component a", "its objects", clock=clock, sleep=clock.sleep)
    assert client.reads == 1


def test_until_counts_an_unanswered_check_as_not_yet():
    clock = Clock()
    client = Flaky(clock, clock() + 10.0, ClusterError("cluster: GET failed: timed out", status=0, reason="timed out"))
    assert wait.until(lambda: client.get("v1", "ConfigMap", "c", "ns"), clock() + 60, 0.5, lambda: AicrError("timed out"),
                      clock=clock, sleep=clock.sleep) == CM
