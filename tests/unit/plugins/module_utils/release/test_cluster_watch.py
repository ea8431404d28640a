"""Readiness is observed through watches: KubeCluster.watch_until against the emulator, and wait_ready's use of it."""

import threading
import time

import pytest

from aicr_emulators.kube.pytest_fixture import start_emulator

from ansible_collections.aicr.runtime.plugins.module_utils.kube import build_api_client
from ansible_collections.aicr.runtime.plugins.module_utils.release import readiness
from ansible_collections.aicr.runtime.plugins.module_utils.release.cluster import KubeCluster
from ansible_collections.aicr.runtime.plugins.module_utils.release.engine import GatedRelease, Options


def deployment(name, ready_after):
    return {"apiVersion": "apps/v1", "kind": "Deployment",
            "metadata": {"name": name, "namespace": "default", "annotations": {"emulator.aicr.io/ready-after-seconds": str(ready_after)}},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}}, "spec": {"containers": [{"name": "c", "image": "i"}]}}}}


@pytest.fixture(scope="module")
def kube(tmp_path_factory):
    handle = start_emulator(tmp_path_factory.mktemp("kube-watch"), in_process=True)
    yield KubeCluster(build_api_client(handle.kubeconfig))
    handle.stop()


def not_pending(obj):
    return readiness.assess(obj)[0] != readiness.PENDING


def test_watch_returns_when_the_object_becomes_ready(kube):
    created = kube.apply(deployment("watched", 0.4))
    began = time.monotonic()
    assert kube.watch_until("apps/v1", "Deployment", "watched", "default", created["metadata"]["resourceVersion"], 20, not_pending) is True
    elapsed = time.monotonic() - began
    assert elapsed < 10, "the watch must end on the Ready event, not at its timeout"
    assert readiness.assess(kube.get("apps/v1", "Deployment", "watched", "default"))[0] == readiness.READY


def test_watch_ends_at_its_timeout_when_nothing_changes(kube):
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "still", "namespace": "default"}, "data": {"a": "1"}})
    current = kube.get("v1", "ConfigMap", "still", "default")
    began = time.monotonic()
    assert kube.watch_until("v1", "ConfigMap", "still", "default", current["metadata"]["resourceVersion"], 1, lambda _o: False) is True
    assert time.monotonic() - began >= 0.9


def test_watch_sees_deletion(kube):
    kube.apply({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "doomed", "namespace": "default"}})
    current = kube.get("v1", "ConfigMap", "doomed", "default")
    timer = threading.Timer(0.2, kube.delete, args=("v1", "ConfigMap", "doomed", "default"))
    timer.start()
    began = time.monotonic()
    assert kube.watch_until("v1", "ConfigMap", "doomed", "default", current["metadata"]["resourceVersion"], 20, lambda _o: False) is True
    assert time.monotonic() - began < 10
    timer.join()


def test_watch_of_an_unserved_kind_reports_that_it_could_not_watch(kube):
    assert kube.watch_until("example.com/v1", "Widget", "w", "default", "1", 5, not_pending) is False


def test_wait_ready_watches_instead_of_sleeping(fakes):
    class WatchingFakeCluster(fakes.FakeCluster):
        """The unit tests' fake cluster plus a watch that advances the fake clock until the object is Ready."""

        def __init__(self):
            super(WatchingFakeCluster, self).__init__()
            self.watches = []

        def watch_until(self, api_version, kind, name, namespace, resource_version, timeout, done):
            self.watches.append((kind, name, resource_version, timeout))
            for _step in range(100):
                if done(self.get(api_version, kind, name, namespace) or {}):
                    return True
                self.clock.advance(0.5)
            return True

    fake = WatchingFakeCluster()
    fake.apply(deployment("web", 3))
    slept = []
    engine = GatedRelease(fake, None, None, Options(poll_interval=5), clock=fake.clock, sleep=slept.append)
    comp = type("Comp", (), {"name": "web"})()
    engine.wait_ready(comp, [("apps/v1", "Deployment", "web", "default")], fake.clock() + 60, "release web")
    assert fake.watches and fake.watches[0][:2] == ("Deployment", "web")
    assert not slept, "with a watch there is no polling sleep"
