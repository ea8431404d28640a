"""Readiness is observed through watches: KubeCluster.watch_until against the lab's real kube-apiserver, and wait_ready's use of it."""

import os
import signal
import threading
import time

import pytest

from aicr_lab.controlplane import stages

from ansible_collections.aicr.runtime.plugins.module_utils._common import cancel
from ansible_collections.aicr.runtime.plugins.module_utils._kube import readiness


def deployment(name, namespace, ready_after):
    """A Deployment whose pod becomes Ready ``ready_after`` (a Go duration) after it runs (kwok's stage)."""
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}, "annotations": {stages.READY_AFTER: ready_after}},
                                  "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


@pytest.fixture
def cluster(client):
    """The engine's client as gated_release runs it: the least-privilege ``release`` identity."""
    return client("release")


def not_pending(obj):
    return readiness.assess(obj)[0] != readiness.PENDING


def test_watch_returns_when_the_object_becomes_ready(cluster, kube):
    ns = kube.namespace
    created = cluster.apply(deployment("watched", ns, "400ms"))
    assert readiness.assess(created)[0] == readiness.PENDING, "just created: the controllers have not made it Ready yet"
    began = time.monotonic()
    seen = cluster.watch_until("apps/v1", "Deployment", "watched", ns, created["metadata"]["resourceVersion"], 60, not_pending)
    elapsed = time.monotonic() - began
    assert elapsed < 40, "the watch must end on the Ready event, not at its timeout"
    # it returns the object of that event: Ready, newer than what was read before
    assert readiness.assess(seen)[0] == readiness.READY and seen["metadata"]["name"] == "watched"
    assert int(seen["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    assert readiness.assess(cluster.get("apps/v1", "Deployment", "watched", ns))[0] == readiness.READY


def test_watch_ends_at_its_timeout_when_nothing_changes(cluster, kube):
    ns = kube.namespace
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "still", "namespace": ns}, "data": {"a": "1"}})
    current = cluster.get("v1", "ConfigMap", "still", ns)
    began = time.monotonic()
    assert cluster.watch_until("v1", "ConfigMap", "still", ns, current["metadata"]["resourceVersion"], 1, lambda _o: False) is True
    assert time.monotonic() - began >= 0.9


def test_sigterm_ends_a_watch_at_once(cluster, kube):
    """SIGTERM (AWX's cancel) shuts the watch's stream down: the worker thread waiting on it returns at once - it used
    to wait for the watch's end, so Guarded cut every watch into 2 s slices (a GET more each)."""
    assert cluster.watches_interruptible, "urllib3 >= 2.3 in the test environment"
    ns = kube.namespace
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "quiet", "namespace": ns}, "data": {"a": "1"}})
    current = cluster.get("v1", "ConfigMap", "quiet", ns)
    outcome = {}

    def watch():
        began = time.monotonic()
        outcome["returned"] = cluster.watch_until("v1", "ConfigMap", "quiet", ns, current["metadata"]["resourceVersion"], 120, lambda _o: False)
        outcome["seconds"] = time.monotonic() - began

    cancel.reset()
    worker = threading.Thread(target=watch)
    try:
        with pytest.raises(cancel.Cancelled):
            with cancel.sigterm_cancels():
                worker.start()
                deadline = time.monotonic() + 30
                while not cancel._hooks:  # pylint: disable=protected-access  # the watch's stream is open
                    assert time.monotonic() < deadline and worker.is_alive(), "the watch never opened: %s" % outcome
                    time.sleep(0.01)
                os.kill(os.getpid(), signal.SIGTERM)
                while True:  # the handler raises Cancelled here, in the main thread
                    time.sleep(0.01)
        worker.join(30)
        assert not worker.is_alive(), "the watch did not end on SIGTERM"
        assert outcome["returned"] is True and outcome["seconds"] < 60, outcome
    finally:
        cancel.reset()


def test_watch_sees_deletion(cluster, kube):
    ns = kube.namespace
    cluster.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "doomed", "namespace": ns}})
    current = cluster.get("v1", "ConfigMap", "doomed", ns)
    # the watch starts at the object's resourceVersion, so it sees the deletion whether it happens
    # before or after the watch is open: no timing involved
    deleter = threading.Thread(target=cluster.delete, args=("v1", "ConfigMap", "doomed", ns))
    deleter.start()
    began = time.monotonic()
    assert cluster.watch_until("v1", "ConfigMap", "doomed", ns, current["metadata"]["resourceVersion"], 60, lambda _o: False) is True
    assert time.monotonic() - began < 40, "the watch must end on the DELETED event, not at its timeout"
    deleter.join()
    assert cluster.get("v1", "ConfigMap", "doomed", ns) is None


def test_watch_of_an_unserved_kind_reports_that_it_could_not_watch(cluster, kube):
    assert cluster.watch_until("example.com/v1", "Widget", "w", kube.namespace, "1", 5, not_pending) is False


def test_a_daemonset_just_created_is_not_ready_before_its_controller_reports(cluster, kube):
    # kube-apiserver stores a new DaemonSet with zero counts (desiredNumberScheduled 0 ...) before its controller has
    # seen it; read at once it must be pending, never "0 of 0 pods ready" (found when a never-ready agent passed its gate).
    ns = kube.namespace
    daemonset = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": ns},
                 "spec": {"selector": {"matchLabels": {"app": "agent"}},
                          "template": {"metadata": {"labels": {"app": "agent"}, "annotations": {stages.NEVER_READY: "true"}},
                                       "spec": {"containers": [{"name": "agent", "image": "registry.invalid/agent:1"}]}}}}
    created = cluster.apply(daemonset)
    assert "observedGeneration" not in (created.get("status") or {}), "the API server's answer precedes the controller"
    assert readiness.assess(created)[0] == readiness.PENDING, created.get("status")
    observed = []
    deadline = time.monotonic() + 60
    while True:
        obj = cluster.get("apps/v1", "DaemonSet", "agent", ns)
        observed.append(readiness.assess(obj))
        status = obj.get("status") or {}
        if status.get("desiredNumberScheduled") and status.get("updatedNumberScheduled") == status["desiredNumberScheduled"]:
            break
        assert time.monotonic() < deadline, "the DaemonSet controller never scheduled the agent's pods: %s" % status
    assert all(state == readiness.PENDING for state, _reason in observed), observed
