"""Event-driven controllers: woken by writes and by readiness timers; one wake-up settles the ownership chain.

The threaded tests run with a 30 s periodic tick, so anything they observe within a few seconds can only
come from a wake-up, not from the fallback tick: no tight wall-clock bounds are needed.
"""

import copy
import time
import uuid

import pytest
from kube_testlib import api_client, client, deployment, wait_until

from aicr_emulators.kube import controllers as controllers_module
from aicr_emulators.kube.pytest_fixture import start_emulator
from aicr_emulators.kube.server import Emulator
from aicr_emulators.kube.store import Context

SLOW_FALLBACK_TICK = 30.0


@pytest.fixture(scope="module")
def kube(tmp_path_factory):
    with start_emulator(tmp_path_factory.mktemp("kube-wakeups"), in_process=True,
                        tick_seconds=SLOW_FALLBACK_TICK) as handle:
        wait_until(lambda: handle.emulator.controllers.passes, lambda passes: passes > 0)  # bootstrap settled
        yield handle


@pytest.fixture
def ns(kube):
    name = "k-" + uuid.uuid4().hex[:8]
    client.CoreV1Api(api_client(kube)).create_namespace({"metadata": {"name": name}})
    return name


def _available(dep):
    return any(c.type == "Available" and c.status == "True" for c in (dep.status.conditions or []))


def test_an_api_write_wakes_the_controllers(kube, ns):
    controllers = kube.emulator.controllers
    time.sleep(0.2)  # let the wake-up of the namespace's creation pass: a write within its batch window joins its tick
    writes_before = controllers.wakeups["write"]
    apps = client.AppsV1Api(api_client(kube))
    apps.create_namespaced_deployment(ns, deployment("now"))
    dep = wait_until(lambda: apps.read_namespaced_deployment("now", ns), _available, timeout=SLOW_FALLBACK_TICK / 3)
    assert dep.status.available_replicas == 1 and dep.status.updated_replicas == 1
    assert controllers.wakeups["write"] > writes_before


def test_an_expiring_readiness_timer_wakes_the_controllers(kube, ns):
    controllers = kube.emulator.controllers
    timers_before = controllers.wakeups["timer"]
    apps = client.AppsV1Api(api_client(kube))
    created = time.monotonic()
    apps.create_namespaced_deployment(ns, deployment("timed", annotations={"emulator.aicr.io/ready-after-seconds": "1"}))
    pending = apps.read_namespaced_deployment("timed", ns)
    assert not _available(pending)
    dep = wait_until(lambda: apps.read_namespaced_deployment("timed", ns), _available, timeout=SLOW_FALLBACK_TICK / 3,
                     interval=0.01)
    elapsed = time.monotonic() - created
    assert elapsed >= 1.0  # never ready before its delay
    assert dep.status.ready_replicas == 1 and dep.status.available_replicas == 1
    assert controllers.wakeups["timer"] > timers_before
    pods = client.CoreV1Api(api_client(kube)).list_namespaced_pod(ns, label_selector="app=timed").items
    assert [p.status.phase for p in pods] == ["Running"]


def test_a_readiness_rule_change_wakes_the_controllers(kube, ns):
    apps = client.AppsV1Api(api_client(kube))
    kube.control.set_readiness(kind="Deployment", namespace=ns, never_ready=True)
    try:
        apps.create_namespaced_deployment(ns, deployment("ruled"))
        wait_until(lambda: apps.read_namespaced_deployment("ruled", ns), lambda d: d.status.replicas == 1)
        assert not _available(apps.read_namespaced_deployment("ruled", ns))
    finally:
        kube.control.clear_readiness()
    wait_until(lambda: apps.read_namespaced_deployment("ruled", ns), _available, timeout=SLOW_FALLBACK_TICK / 3)


# ---- one tick, driven by hand (no background thread) ---------------------------------------------------


def _create_deployment(emulator, name, annotations=None):
    rtype = emulator.registry.lookup("apps", "v1", "deployments")
    emulator.store.create(rtype, "default", copy.deepcopy(deployment(name, replicas=2, annotations=annotations)),
                          Context("test"))


def _deployment_status(emulator, name):
    return emulator.store.raw_get("apps", "deployments", "default", name).get("status") or {}


def test_one_tick_propagates_readiness_up_the_ownership_chain():
    emulator = Emulator(default_ready_after=0)
    emulator.controllers.tick()
    _create_deployment(emulator, "chain")
    passes = emulator.controllers.tick()
    # ReplicaSet created, pods created, bound and Ready, ReplicaSet and Deployment status updated: all in one tick
    assert passes > 1
    status = _deployment_status(emulator, "chain")
    assert status["availableReplicas"] == 2 and status["readyReplicas"] == 2 and status["updatedReplicas"] == 2
    conditions = {c["type"]: c["status"] for c in status["conditions"]}
    assert conditions == {"Available": "True", "Progressing": "True"}
    replica_sets = emulator.store.iter_objects("apps", "replicasets")
    assert [rs["status"].get("readyReplicas") for rs in replica_sets] == [2]
    assert emulator.controllers.tick() == 0  # settled: the next tick has nothing to do


def test_a_running_timer_costs_no_reconcile_until_it_expires():
    emulator = Emulator(default_ready_after=0)
    controllers = emulator.controllers
    controllers.tick()
    _create_deployment(emulator, "later", {"emulator.aicr.io/ready-after-seconds": "600"})
    controllers.tick()
    assert not _deployment_status(emulator, "later").get("availableReplicas")
    assert controllers.next_deadline == pytest.approx(time.monotonic() + 600, abs=30)
    passes = controllers.passes
    for _attempt in range(5):
        assert controllers.tick() == 0
    assert controllers.passes == passes
    controllers.next_deadline = time.monotonic() - 1  # as if the timer had expired: the tick reconciles again
    assert controllers.tick() > 0


def test_work_left_by_the_pass_bound_is_taken_up_by_the_next_tick(monkeypatch):
    emulator = Emulator(default_ready_after=0)
    controllers = emulator.controllers
    controllers.tick()
    assert controllers.tick() == 0
    configmaps = emulator.registry.lookup("", "v1", "configmaps")

    def count_to_three():
        """A controller that writes once per pass until a counter (an unowned ConfigMap) reaches 3."""
        old = emulator.store.raw_get("", "configmaps", "default", "counter")
        value = int(old["data"]["n"]) if old else 0
        if value < 3:
            new = copy.deepcopy(old) if old else {"metadata": {"name": "counter", "namespace": "default"}}
            new["data"] = {"n": str(value + 1)}
            emulator.store.system_write(configmaps, new, old)

    monkeypatch.setattr(controllers, "_simple_status", count_to_three)
    monkeypatch.setattr(controllers_module, "MAX_PASSES_PER_TICK", 1)
    assert controllers.tick(force=True) == 1
    assert emulator.store.raw_get("", "configmaps", "default", "counter")["data"]["n"] == "1"
    # the bound stopped the tick while it was still writing: the next ticks are not idle until it settles
    while controllers.tick():
        pass
    assert emulator.store.raw_get("", "configmaps", "default", "counter")["data"]["n"] == "3"


def test_a_crd_write_is_answered_once_the_crd_is_established(kube, monkeypatch):
    # Clients check a new CRD right after creating it (helm: once, then every 2 s). Even when the controller
    # thread is slow to get the CPU (here: 0.3 s late to every tick), the create answers after establishment.
    controllers = kube.emulator.controllers
    on_time_tick = controllers.tick

    def late_tick(force=False):
        time.sleep(0.3)
        return on_time_tick(force=force)

    monkeypatch.setattr(controllers, "tick", late_tick)
    extensions = client.ApiextensionsV1Api(api_client(kube))
    plural = "gadgets" + uuid.uuid4().hex[:6]
    extensions.create_custom_resource_definition({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": plural + ".example.aicr.io"},
        "spec": {"group": "example.aicr.io", "scope": "Namespaced",
                 "names": {"plural": plural, "singular": plural[:-1], "kind": plural.capitalize()},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}})
    conditions = extensions.read_custom_resource_definition(plural + ".example.aicr.io").status.conditions or []
    assert {c.type: c.status for c in conditions} == {"NamesAccepted": "True", "Established": "True"}
