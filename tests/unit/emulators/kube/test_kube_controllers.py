"""Simulated controllers: workloads, readiness timing and faults, garbage collection, namespace cascade."""

import time
import uuid

import pytest
from kube_testlib import api_client, client, deployment, wait_for, wait_until

from aicr_emulators.kube.pytest_fixture import start_emulator


@pytest.fixture(scope="module")
def kube(tmp_path_factory):
    nodes = [
        {"name": "gpu-1", "labels": {"nvidia.com/gpu.present": "true", "kubernetes.io/hostname": "gpu-1"},
         "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110", "nvidia.com/gpu": "8"},
         "providerID": "aws:///us-east-1a/i-0001"},
        {"name": "cpu-1", "labels": {"kubernetes.io/hostname": "cpu-1"}},
        {"name": "tainted", "labels": {"nvidia.com/gpu.present": "true"},
         "taints": [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]},
    ]
    with start_emulator(tmp_path_factory.mktemp("kube-ctrl"), in_process=True, nodes=nodes) as handle:
        yield handle


@pytest.fixture
def ns(kube):
    name = "c-" + uuid.uuid4().hex[:8]
    client.CoreV1Api(api_client(kube)).create_namespace({"metadata": {"name": name}})
    return name


@pytest.fixture
def apis(kube):
    api = api_client(kube)
    return client.CoreV1Api(api), client.AppsV1Api(api), client.BatchV1Api(api)


def _cond(obj, ctype):
    for cond in obj.status.conditions or []:
        if cond.type == ctype:
            return cond
    return None


def test_nodes_have_capacity_labels_and_provider_id(apis):
    core, _apps, _batch = apis
    node = core.read_node("gpu-1")
    assert node.spec.provider_id == "aws:///us-east-1a/i-0001"
    assert node.status.capacity["nvidia.com/gpu"] == "8" and node.status.allocatable["cpu"] == "32"
    assert _cond(node, "Ready").status == "True" and node.status.node_info.kubelet_version
    # a node created through the normal API gets a ready status from the emulated kubelet
    core.create_node({"metadata": {"name": "api-node", "labels": {"pool": "extra"}}})
    made = wait_until(lambda: core.read_node("api-node"), lambda n: n.status and n.status.conditions)
    assert _cond(made, "Ready").status == "True"
    core.delete_node("api-node")


def test_deployment_rolls_out_replicasets_and_pods(apis, ns):
    core, apps, _batch = apis
    apps.create_namespaced_deployment(ns, deployment("web", replicas=2))
    dep = wait_until(lambda: apps.read_namespaced_deployment("web", ns), lambda d: d.status.available_replicas == 2)
    assert dep.status.observed_generation == 1 and dep.status.updated_replicas == 2 and dep.status.ready_replicas == 2
    assert _cond(dep, "Available").status == "True"
    assert _cond(dep, "Progressing").reason == "NewReplicaSetAvailable"
    assert dep.metadata.annotations["deployment.kubernetes.io/revision"] == "1"
    rs_list = apps.list_namespaced_replica_set(ns, label_selector="app=web").items
    assert len(rs_list) == 1
    rs = rs_list[0]
    thash = rs.metadata.labels["pod-template-hash"]
    assert rs.metadata.name == "web-" + thash and rs.metadata.owner_references[0].kind == "Deployment"
    assert rs.spec.selector.match_labels == {"app": "web", "pod-template-hash": thash}
    assert rs.metadata.annotations["deployment.kubernetes.io/revision"] == "1" and rs.status.ready_replicas == 2
    pods = core.list_namespaced_pod(ns, label_selector="app=web").items
    assert len(pods) == 2 and all(p.status.phase == "Running" for p in pods)
    assert all(_cond(p, "Ready").status == "True" and p.spec.node_name for p in pods)
    # a template change makes a new ReplicaSet with the next revision; the old one is scaled down
    apps.patch_namespaced_deployment("web", ns, {"spec": {"template": {"spec": {"containers": [
        {"name": "main", "image": "nginx:1.27"}]}}}})

    def rolled():
        sets = apps.list_namespaced_replica_set(ns, label_selector="app=web").items
        revs = {r.metadata.annotations["deployment.kubernetes.io/revision"]: r.spec.replicas for r in sets}
        return revs == {"1": 0, "2": 2} and revs
    wait_for(rolled)
    dep = apps.read_namespaced_deployment("web", ns)
    assert dep.metadata.annotations["deployment.kubernetes.io/revision"] == "2" and dep.status.observed_generation == 2
    wait_for(lambda: len(core.list_namespaced_pod(ns, label_selector="app=web").items) == 2)


def test_ready_after_annotation_delays_readiness(apis, ns):
    _core, apps, _batch = apis
    apps.create_namespaced_deployment(ns, deployment("slow", annotations={"emulator.aicr.io/ready-after-seconds": "1"}))
    time.sleep(0.3)
    dep = apps.read_namespaced_deployment("slow", ns)
    assert not dep.status.available_replicas and _cond(dep, "Available").status == "False"
    assert _cond(dep, "Progressing").reason == "ReplicaSetUpdated"
    wait_for(lambda: apps.read_namespaced_deployment("slow", ns).status.available_replicas == 1)


def test_never_ready_and_fail_annotations(apis, ns):
    core, apps, batch = apis
    apps.create_namespaced_deployment(ns, deployment("stuck", annotations={"emulator.aicr.io/never-ready": "true"}))
    apps.create_namespaced_deployment(ns, deployment("broken", annotations={"emulator.aicr.io/fail": "true"}))
    dep = wait_until(lambda: apps.read_namespaced_deployment("broken", ns),
                     lambda d: _cond(d, "Progressing") and _cond(d, "Progressing").reason == "ProgressDeadlineExceeded")
    assert _cond(dep, "Progressing").status == "False"
    stuck = apps.read_namespaced_deployment("stuck", ns)
    assert not stuck.status.ready_replicas and _cond(stuck, "Progressing").reason == "ReplicaSetUpdated"
    job = {"metadata": {"name": "bad-job", "annotations": {"emulator.aicr.io/fail": "true"}},
           "spec": {"backoffLimit": 2, "template": {"spec": {"restartPolicy": "Never",
                                                             "containers": [{"name": "c", "image": "busybox"}]}}}}
    batch.create_namespaced_job(ns, job)
    failed = wait_until(lambda: batch.read_namespaced_job("bad-job", ns), lambda j: _cond(j, "Failed"))
    assert _cond(failed, "Failed").reason == "BackoffLimitExceeded" and failed.status.failed == 3
    pods = core.list_namespaced_pod(ns, label_selector="job-name=bad-job").items
    assert [p.status.phase for p in pods] == ["Failed"]
    events = core.list_namespaced_event(ns, field_selector="involvedObject.name=bad-job").items
    assert [(e.type, e.reason, e.involved_object.kind) for e in events] == [("Warning", "BackoffLimitExceeded", "Job")]
    broken_pods = core.list_namespaced_pod(ns, label_selector="app=broken").items
    backoff = core.list_namespaced_event(ns, field_selector="involvedObject.name=%s,reason=BackOff" % broken_pods[0].metadata.name)
    assert backoff.items and backoff.items[0].type == "Warning"
    scaled = core.list_namespaced_event(ns, field_selector="involvedObject.name=broken,reason=ScalingReplicaSet").items
    assert len(scaled) == 1 and scaled[0].message.startswith("Scaled up replica set broken-")


def test_readiness_rules_from_control_api(kube, apis, ns):
    _core, apps, _batch = apis
    kube.control.set_readiness(kind="Deployment", namespace=ns, name="gated-*", never_ready=True)
    try:
        apps.create_namespaced_deployment(ns, deployment("gated-a"))
        apps.create_namespaced_deployment(ns, deployment("free"))
        wait_for(lambda: apps.read_namespaced_deployment("free", ns).status.available_replicas == 1)
        time.sleep(0.2)
        assert not apps.read_namespaced_deployment("gated-a", ns).status.available_replicas
    finally:
        kube.control.clear_readiness()
    wait_for(lambda: apps.read_namespaced_deployment("gated-a", ns).status.available_replicas == 1)


def test_job_completes_with_conditions(apis, ns):
    core, _apps, batch = apis
    batch.create_namespaced_job(ns, {"metadata": {"name": "once"}, "spec": {"completions": 2, "template": {"spec": {
        "restartPolicy": "OnFailure", "containers": [{"name": "c", "image": "busybox"}]}}}})
    job = wait_until(lambda: batch.read_namespaced_job("once", ns), lambda j: _cond(j, "Complete"))
    assert job.status.succeeded == 2 and job.status.completion_time and job.status.start_time
    assert _cond(job, "Complete").status == "True"
    assert job.spec.selector.match_labels["batch.kubernetes.io/controller-uid"] == job.metadata.uid
    pods = core.list_namespaced_pod(ns, label_selector="job-name=once").items
    assert pods and pods[0].status.phase == "Succeeded"


def test_statefulset_and_daemonset_status(apis, ns):
    core, apps, _batch = apis
    sts = deployment("db", replicas=3)
    sts["kind"] = "StatefulSet"
    sts["spec"]["serviceName"] = "db"
    apps.create_namespaced_stateful_set(ns, sts)
    got = wait_until(lambda: apps.read_namespaced_stateful_set("db", ns), lambda s: s.status.ready_replicas == 3)
    assert got.status.current_revision == got.status.update_revision and got.status.observed_generation == 1
    assert sorted(p.metadata.name for p in core.list_namespaced_pod(ns, label_selector="app=db").items) == ["db-0", "db-1", "db-2"]
    ds = deployment("agent")
    ds["kind"] = "DaemonSet"
    del ds["spec"]["replicas"]
    ds["spec"]["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.present": "true"}
    apps.create_namespaced_daemon_set(ns, ds)
    got = wait_until(lambda: apps.read_namespaced_daemon_set("agent", ns), lambda d: d.status.number_ready == 1)
    # the tainted GPU node is not tolerated, the CPU node does not match the selector
    assert got.status.desired_number_scheduled == 1 and got.status.observed_generation == 1
    pods = core.list_namespaced_pod(ns, label_selector="app=agent").items
    assert [p.spec.node_name for p in pods] == ["gpu-1"]
    apps.patch_namespaced_daemon_set("agent", ns, {"spec": {"template": {"spec": {"tolerations": [
        {"key": "dedicated", "operator": "Exists"}]}}}})
    wait_for(lambda: apps.read_namespaced_daemon_set("agent", ns).status.desired_number_scheduled == 2)


def test_pvc_binds_and_load_balancer_gets_ingress(apis, ns):
    core, _apps, _batch = apis
    core.create_namespaced_persistent_volume_claim(ns, {"metadata": {"name": "data"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "5Gi"}}}})
    pvc = wait_until(lambda: core.read_namespaced_persistent_volume_claim("data", ns), lambda p: p.status.phase == "Bound")
    assert pvc.status.capacity["storage"] == "5Gi"
    svc = core.create_namespaced_service(ns, {"metadata": {"name": "lb"}, "spec": {"type": "LoadBalancer", "ports": [
        {"port": 80}], "selector": {"app": "x"}}})
    assert svc.spec.cluster_ip and svc.spec.ports[0].target_port == 80 and svc.spec.ports[0].protocol == "TCP"
    wait_for(lambda: core.read_namespaced_service("lb", ns).status.load_balancer.ingress)


def test_standalone_pod_runs_and_run_to_completion_pod_succeeds(apis, ns):
    core, _apps, _batch = apis
    core.create_namespaced_pod(ns, {"metadata": {"name": "p1"}, "spec": {"containers": [{"name": "c", "image": "x:1"}]}})
    core.create_namespaced_pod(ns, {"metadata": {"name": "t1"}, "spec": {"restartPolicy": "Never", "containers": [
        {"name": "c", "image": "x:1"}]}})
    wait_for(lambda: core.read_namespaced_pod("p1", ns).status.phase == "Running")
    wait_for(lambda: core.read_namespaced_pod("t1", ns).status.phase == "Succeeded")
    pod = core.read_namespaced_pod("p1", ns)
    assert pod.status.container_statuses[0].ready and pod.status.pod_ip


def test_garbage_collection_background_foreground_orphan(apis, ns):
    core, apps, _batch = apis
    owner = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner"}})

    def dependent(name, owner_obj):
        return core.create_namespaced_config_map(ns, {"metadata": {"name": name, "ownerReferences": [{
            "apiVersion": "v1", "kind": "ConfigMap", "name": owner_obj.metadata.name, "uid": owner_obj.metadata.uid}]}})

    dependent("dep1", owner)
    core.delete_namespaced_config_map("owner", ns)  # background (default)
    wait_for(lambda: not core.list_namespaced_config_map(ns, field_selector="metadata.name=dep1").items)
    # orphan: dependents stay and lose their ownerReference
    owner = core.create_namespaced_config_map(ns, {"metadata": {"name": "owner2"}})
    dependent("dep2", owner)
    core.delete_namespaced_config_map("owner2", ns, propagation_policy="Orphan")
    time.sleep(0.3)
    assert core.read_namespaced_config_map("dep2", ns).metadata.owner_references is None
    # foreground: the owner waits (finalizer) until its dependents are gone
    apps.create_namespaced_deployment(ns, deployment("fg", replicas=2))
    wait_for(lambda: apps.read_namespaced_deployment("fg", ns).status.available_replicas == 2)
    time.sleep(0.3)  # settled: nothing else wakes the garbage collector up
    apps.delete_namespaced_deployment("fg", ns, propagation_policy="Foreground")
    wait_for(lambda: not apps.list_namespaced_deployment(ns, field_selector="metadata.name=fg").items)
    assert not apps.list_namespaced_replica_set(ns, label_selector="app=fg").items
    assert not core.list_namespaced_pod(ns, label_selector="app=fg").items


def test_namespace_delete_cascades_and_finalizers_hold_objects(apis):
    core, apps, _batch = apis
    name = "gone-" + uuid.uuid4().hex[:6]
    core.create_namespace({"metadata": {"name": name}})
    apps.create_namespaced_deployment(name, deployment("web"))
    core.create_namespaced_config_map(name, {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    core.delete_namespace(name)
    assert core.read_namespace(name).status.phase == "Terminating"
    with pytest.raises(client.ApiException) as err:
        core.create_namespaced_config_map(name, {"metadata": {"name": "late"}})
    assert err.value.status == 403
    wait_for(lambda: core.read_namespaced_config_map("held", name).metadata.deletion_timestamp)
    wait_for(lambda: [c.metadata.name for c in core.list_namespaced_config_map(name).items] == ["held"])
    assert core.read_namespace(name).status.phase == "Terminating"
    core.patch_namespaced_config_map("held", name, {"metadata": {"finalizers": None}})
    wait_for(lambda: name not in [n.metadata.name for n in core.list_namespace().items])
    assert not apps.list_namespaced_deployment(name).items


def test_settled_cluster_makes_no_writes(kube, apis, ns):
    core, apps, batch = apis
    apps.create_namespaced_deployment(ns, deployment("quiet", replicas=2))
    batch.create_namespaced_job(ns, {"metadata": {"name": "quiet-job"}, "spec": {"template": {"spec": {
        "restartPolicy": "Never", "containers": [{"name": "c", "image": "x"}]}}}})
    core.create_namespaced_persistent_volume_claim(ns, {"metadata": {"name": "quiet-pvc"}, "spec": {
        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}})
    wait_for(lambda: apps.read_namespaced_deployment("quiet", ns).status.available_replicas == 2)
    wait_for(lambda: batch.read_namespaced_job("quiet-job", ns).status.succeeded == 1)
    wait_for(lambda: core.read_namespaced_persistent_volume_claim("quiet-pvc", ns).status.phase == "Bound")
    time.sleep(0.3)
    before = kube.emulator.store.rv
    time.sleep(0.5)  # ten controller ticks
    assert kube.emulator.store.rv == before


def test_opt_in_scheduling_honours_selectors_taints_cordon_and_gpus(tmp_path):
    nodes = [{"name": "gpu-a", "labels": {"gpu": "yes"}, "capacity": {"cpu": "8", "memory": "8Gi", "pods": "110",
                                                                      "nvidia.com/gpu": "2"}},
             {"name": "cpu-a", "labels": {}}]
    with start_emulator(tmp_path, in_process=True, nodes=nodes, schedule=True) as handle:
        api = api_client(handle)
        core, apps = client.CoreV1Api(api), client.AppsV1Api(api)
        gpu = deployment("trainer", replicas=3)
        gpu["spec"]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "1"}}
        apps.create_namespaced_deployment("default", gpu)
        # two GPUs: two pods run, the third stays Pending and the Deployment is not available
        dep = wait_until(lambda: apps.read_namespaced_deployment("trainer", "default"), lambda d: d.status.ready_replicas == 2)
        time.sleep(0.3)
        dep = apps.read_namespaced_deployment("trainer", "default")
        assert dep.status.ready_replicas == 2 and _cond(dep, "Available").status == "False"
        pods = core.list_namespaced_pod("default", label_selector="app=trainer").items
        pending = [p for p in pods if not p.spec.node_name]
        assert sorted(p.spec.node_name for p in pods if p.spec.node_name) == ["gpu-a", "gpu-a"] and len(pending) == 1
        scheduled = _cond(pending[0], "PodScheduled")
        assert scheduled.status == "False" and scheduled.reason == "Unschedulable"
        assert "Insufficient nvidia.com/gpu" in scheduled.message
        failed = core.list_namespaced_event("default", field_selector="involvedObject.name=%s" % pending[0].metadata.name).items
        assert [(e.reason, e.message) for e in failed] == [("FailedScheduling", scheduled.message)]
        # more GPUs appear on the node (e.g. after a fabric attach): the pod schedules and the rollout completes
        core.patch_node_status("gpu-a", {"status": {"allocatable": {"nvidia.com/gpu": "4"}}})
        wait_until(lambda: apps.read_namespaced_deployment("trainer", "default"), lambda d: d.status.available_replicas == 3)
        # node selectors and cordons are honoured
        picky = deployment("picky")
        picky["spec"]["template"]["spec"]["nodeSelector"] = {"gpu": "yes"}
        core.patch_node("gpu-a", {"spec": {"unschedulable": True}})
        apps.create_namespaced_deployment("default", picky)
        pod = wait_until(lambda: core.list_namespaced_pod("default", label_selector="app=picky").items,
                         lambda items: items and _cond(items[0], "PodScheduled"))[0]
        assert "node(s) were unschedulable" in _cond(pod, "PodScheduled").message
        core.patch_node("gpu-a", {"spec": {"unschedulable": False}})
        wait_until(lambda: apps.read_namespaced_deployment("picky", "default"), lambda d: d.status.available_replicas == 1)
        assert core.list_namespaced_pod("default", label_selector="app=picky").items[0].spec.node_name == "gpu-a"
