"""kstatus-like readiness predicates."""

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._kube.readiness import FAILED, PENDING, READY, assess


def dep(status, replicas=2, generation=3):
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "generation": generation},
            "spec": {"replicas": replicas}, "status": status}


def cond(ctype, status, **extra):
    item = {"type": ctype, "status": status}
    item.update(extra)
    return item


@pytest.mark.parametrize("obj,state", [
    (None, PENDING),
    (dep({"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}), READY),
    (dep({"observedGeneration": 2, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}), PENDING),
    (dep({"observedGeneration": 3, "replicas": 3, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 2}), PENDING),
    (dep({"observedGeneration": 3, "replicas": 2, "updatedReplicas": 1, "readyReplicas": 2, "availableReplicas": 2}), PENDING),
    (dep({"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 2, "availableReplicas": 1}), PENDING),
    (dep({"observedGeneration": 3, "conditions": [cond("Progressing", "False", reason="ProgressDeadlineExceeded")]}), FAILED),
    (dep({"observedGeneration": 3}, replicas=0), READY),
    # scaled down to 0 (the template unchanged): the controller has seen it, the pod it removes still counts (and reads
    # ready) - a health check run now would pass on it (the CI run of stop 46: on_failure's lab test)
    (dep({"observedGeneration": 3, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}, replicas=0), PENDING),
    (dep({"observedGeneration": 3, "replicas": 3, "updatedReplicas": 3, "readyReplicas": 3, "availableReplicas": 3}, replicas=2), PENDING),
    ({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"}, "spec": {"replicas": 1},
      "status": {"replicas": 2, "readyReplicas": 2, "updatedReplicas": 2, "currentRevision": "b", "updateRevision": "b"}}, PENDING),
    ({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r"}, "spec": {"replicas": 0},
      "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}}, PENDING),
    ({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "r"}, "spec": {"replicas": 1},
      "status": {"replicas": 1, "readyReplicas": 1, "availableReplicas": 1}}, READY),
    ({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"}, "spec": {"replicas": 1},
      "status": {"readyReplicas": 1, "updatedReplicas": 1, "currentRevision": "a", "updateRevision": "b"}}, PENDING),
    ({"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"}, "spec": {"replicas": 1},
      "status": {"readyReplicas": 1, "updatedReplicas": 1, "currentRevision": "b", "updateRevision": "b"}}, READY),
    ({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "x"}, "status": {}}, PENDING),
    ({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "x"},
      "status": {"desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberAvailable": 2, "numberReady": 3}}, PENDING),
    ({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "x"},
      "status": {"observedGeneration": 1, "desiredNumberScheduled": 3, "updatedNumberScheduled": 3, "numberAvailable": 3, "numberReady": 3}}, READY),
    # what kube-apiserver stores for a DaemonSet just created, before its controller has seen it
    ({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "x", "generation": 1},
      "status": {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0, "numberReady": 0}}, PENDING),
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "status": {"active": 1}}, PENDING),
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "status": {"conditions": [cond("Complete", "True")]}}, READY),
    ({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "status": {"conditions": [cond("Failed", "True")]}}, FAILED),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": {"phase": "Running", "conditions": [cond("Ready", "True")]}}, READY),
    ({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "status": {"phase": "Failed"}}, FAILED),
    ({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "c"}, "status": {"phase": "Pending"}}, PENDING),
    ({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "w"}, "status": {}}, PENDING),
    ({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "w"},
      "status": {"conditions": [cond("NamesAccepted", "True"), cond("Established", "True")]}}, READY),
    ({"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "w"},
      "status": {"conditions": [cond("NamesAccepted", "False")]}}, FAILED),
    ({"apiVersion": "example.aicr.io/v1", "kind": "Widget", "metadata": {"name": "w"}}, READY),
    ({"apiVersion": "example.aicr.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "status": {"conditions": [cond("Ready", "False")]}}, PENDING),
    ({"apiVersion": "example.aicr.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "status": {"conditions": [cond("Ready", "True")]}}, READY),
    ({"apiVersion": "example.aicr.io/v1", "kind": "Widget", "metadata": {"name": "w", "generation": 2},
      "status": {"observedGeneration": 1, "conditions": [cond("Ready", "True")]}}, PENDING),
    ({"apiVersion": "example.aicr.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "status": {"conditions": [cond("Stalled", "True")]}}, FAILED),
    ({"apiVersion": "example.aicr.io/v1", "kind": "Widget", "metadata": {"name": "w"}, "status": {"conditions": [cond("Reconciling", "True")]}}, PENDING),
    ({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"}, "status": {"loadBalancer": {}}}, READY),
    ({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "deletionTimestamp": "2026-01-01T00:00:00Z"}}, PENDING),
])
def test_assess(obj, state):
    got, reason = assess(obj)
    assert got == state, reason
    assert reason


def test_a_scale_down_in_progress_says_so():
    state, reason = assess(dep({"observedGeneration": 3, "replicas": 1, "updatedReplicas": 1, "readyReplicas": 1, "availableReplicas": 1}, replicas=0))
    assert (state, reason) == (PENDING, "1 old replicas pending termination")


def test_reason_names_the_shortfall():
    state, reason = assess(dep({"observedGeneration": 3, "replicas": 2, "updatedReplicas": 2, "readyReplicas": 1, "availableReplicas": 1}))
    assert state == PENDING
    assert reason == "1 of 2 replicas ready"
