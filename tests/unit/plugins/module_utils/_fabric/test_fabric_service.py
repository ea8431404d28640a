"""FabricService decisions with an in-memory backend and a fake cluster (no HTTP)."""

import threading

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.base import (
    FabricBackend, Device, CRITICAL, UNKNOWN, WARNING, FAILED, PENDING,
)
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.exclusive import GatedClient, LeaseNeeded, StackGate
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.service import FabricService
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target
from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import AmbiguousOutcome

from doubles import FakeCluster  # pylint: disable=import-error

from ansible_collections.aicr.runtime.plugins.module_utils._fabric.nodes import KubernetesClusterView


def cluster_of(nodes=None):
    """(the fabric service's cluster view, the in-memory cluster it reads) with ``nodes`` ({node: machine})."""
    fake = FakeCluster()
    for node, machine in (nodes or {}).items():
        fake.add_node(node, machine)
    return KubernetesClusterView(fake), fake


class FakeTransport:
    counts = {}


class MemoryBackend(FabricBackend):
    """Machines and a pool in memory; records calls; optionally holds attaches at a barrier."""

    name = "memory"

    def __init__(self, machines, pool=None, barrier=None):
        super(MemoryBackend, self).__init__(FakeTransport())
        self.machines = dict((m, []) for m in machines)
        self.pool = dict(pool or {"A100": 16, "H100": 4, "CXL": 4})
        self.calls = []
        self.lock = threading.Lock()
        self.barrier = barrier
        self.in_flight = {}
        self.max_in_flight = 0
        self.max_per_machine = 0
        self.serial = 0
        self.fail_next = None

    def add(self, machine, model="A100", dtype="gpu", health="ok", phase="ready", warnings=None):
        with self.lock:
            self.serial += 1
            device = Device("r-%d" % self.serial, "GPU-%d" % self.serial, dtype, model, health=health, phase=phase, warnings=warnings)
            self.machines[machine].append(device)
            return device

    def read_machine(self, machine_id):
        with self.lock:
            self.calls.append(("read", machine_id))
            return [Device(d.res_uuid, d.serial, d.type, d.model, d.health, d.phase, d.raw_status, d.warnings) for d in self.machines[machine_id]]

    def free_count(self, machine_id, dtype, model):
        return self.pool.get(model, 0)

    def _enter(self, machine_id):
        with self.lock:
            self.in_flight[machine_id] = self.in_flight.get(machine_id, 0) + 1
            self.max_per_machine = max(self.max_per_machine, self.in_flight[machine_id])
            self.max_in_flight = max(self.max_in_flight, sum(self.in_flight.values()))

    def _leave(self, machine_id):
        with self.lock:
            self.in_flight[machine_id] -= 1

    def attach(self, machine_id, dtype, model, devices):
        self._enter(machine_id)
        try:
            self.calls.append(("attach", machine_id, model))
            if self.barrier is not None:
                self.barrier.wait(timeout=10)
            if self.fail_next:
                error, self.fail_next = self.fail_next, None
                raise error
            self.pool[model] -= 1
            self.add(machine_id, model, dtype)
        finally:
            self._leave(machine_id)

    def detach(self, machine_id, device, devices):
        with self.lock:
            self.calls.append(("detach", machine_id, device.res_uuid))
            self.machines[machine_id] = [d for d in self.machines[machine_id] if d.res_uuid != device.res_uuid]

    def mutations(self):
        return [c for c in self.calls if c[0] != "read"]


def service(backend, cluster=None, **options):
    settings = dict(poll_interval=0.0, settle_timeout=0.0, wait_timeout=1, sleep=lambda s: None)
    settings.update(options)
    return FabricService(backend, cluster=cluster, **settings)


def test_check_mode_plans_without_mutating():
    backend = MemoryBackend(["m0"])
    backend.add("m0", "A100")
    result = service(backend, check_mode=True).run([Target(machine_id="m0", model="A100", count=3)])
    assert result["changed"] is True
    assert [(a["action"], a["res_uuid"]) for a in result["actions"]] == [("attach", None), ("attach", None)]
    assert backend.mutations() == []
    assert [d["status"] for d in result["diff"]["after"]["machines"]["m0"]] == ["ok", "planned", "planned"]
    assert len(result["diff"]["before"]["machines"]["m0"]) == 1


def test_check_mode_plans_named_detaches():
    backend = MemoryBackend(["m0"])
    first = backend.add("m0")
    backend.add("m0")
    result = service(backend, check_mode=True, force_detach=True).run([Target(machine_id="m0", state="absent", devices=[first.serial])])
    assert [(a["action"], a["res_uuid"]) for a in result["actions"]] == [("detach", first.res_uuid)]
    assert backend.mutations() == []
    assert len(result["diff"]["after"]["machines"]["m0"]) == 1


def test_surplus_detaches_failed_first_then_newest():
    backend = MemoryBackend(["m0"])
    oldest = backend.add("m0")
    warned = backend.add("m0", health=WARNING, warnings=["w"])
    backend.add("m0")
    newest = backend.add("m0")
    result = service(backend, force_detach=True).run([Target(machine_id="m0", model="A100", count=2)])
    assert [d["res_uuid"] for d in result["detached"]] == [warned.res_uuid, newest.res_uuid]
    assert oldest.res_uuid in [d.res_uuid for d in backend.machines["m0"]]


@pytest.mark.parametrize("health, phase, text", [
    (CRITICAL, "ready", "is critical"),
    (UNKNOWN, "ready", "unknown status"),
    ("ok", FAILED, "is in a failed state"),
])
def test_present_refuses_to_count_broken_devices(health, phase, text):
    backend = MemoryBackend(["m0"])
    broken = backend.add("m0", health=health, phase=phase)
    with pytest.raises(AicrError) as info:
        service(backend).run([Target(machine_id="m0", model="A100", count=1)])
    assert text in info.value.msg and broken.res_uuid in info.value.msg
    assert backend.mutations() == []


def test_pending_devices_count_when_not_waiting():
    backend = MemoryBackend(["m0"])
    backend.asynchronous = True
    backend.add("m0", phase=PENDING)
    result = service(backend, wait=False).run([Target(machine_id="m0", model="A100", count=1)])
    assert result["changed"] is False and backend.mutations() == []


class SettlesAfterTheGateTrips(MemoryBackend):
    """An asynchronous fabric whose machine ``m0`` keeps a pending device: its reads after the first (the waits) are held
    until the gate has tripped, then counted."""

    asynchronous = True

    def __init__(self, machines):
        super(SettlesAfterTheGateTrips, self).__init__(machines)
        self.tripped = threading.Event()
        self.m0_reads = 0
        self.m0_reads_after_trip = 0

    def read_machine(self, machine_id):
        if machine_id == "m0":
            self.m0_reads += 1
            if self.m0_reads > 1:
                assert self.tripped.wait(10), "the other machine's worker never reached its attach"
                self.m0_reads_after_trip += 1
        return super(SettlesAfterTheGateTrips, self).read_machine(machine_id)


class TellingGate(StackGate):
    backend = None

    def __call__(self, what):
        try:
            StackGate.__call__(self, what)
        finally:
            self.backend.tripped.set()


def test_a_worker_waiting_for_devices_to_settle_stops_once_another_worker_needs_the_lease():
    """Attempt 1 of a stack's run (no Lease yet): m1's attach trips the gate while m0 waits for a pending device; m0 stops
    at its next poll instead of waiting out wait_timeout before the attempt starts again under the Lease."""
    gate = TellingGate()
    backend = gate.backend = SettlesAfterTheGateTrips(["m0", "m1"])
    backend.add("m0", phase=PENDING)
    ticks = iter(range(10 ** 6))
    with pytest.raises(LeaseNeeded):
        service(backend, gate=gate, max_workers=2, wait_timeout=1000, poll_interval=1, clock=lambda: next(ticks)).run(
            [Target(machine_id="m0", model="A100", count=1), Target(machine_id="m1", model="A100", count=1)])
    assert gate.needed.startswith("attach of a gpu A100 to machine m1"), gate.needed
    assert backend.m0_reads_after_trip <= 1, "m0 kept waiting for its devices after the attempt was to restart: %d reads" % backend.m0_reads_after_trip
    assert backend.mutations() == []


def test_other_models_and_types_are_left_alone():
    backend = MemoryBackend(["m0"])
    h100 = backend.add("m0", "H100")
    cxl = backend.add("m0", "CXL", dtype="cxlmemory")
    result = service(backend, force_detach=True).run([Target(machine_id="m0", model="A100", count=0), Target(machine_id="m0", model="A100", count=1)])
    assert len(result["attached"]) == 1
    ids = [d.res_uuid for d in backend.machines["m0"]]
    assert h100.res_uuid in ids and cxl.res_uuid in ids


def test_absent_by_serial_and_unknown_ids_are_ignored():
    backend = MemoryBackend(["m0"])
    keep = backend.add("m0")
    drop = backend.add("m0")
    result = service(backend, force_detach=True).run([Target(machine_id="m0", state="absent", devices=[drop.serial, "not-there"])])
    assert [d["res_uuid"] for d in result["detached"]] == [drop.res_uuid]
    assert [d.res_uuid for d in backend.machines["m0"]] == [keep.res_uuid]
    again = service(backend, force_detach=True).run([Target(machine_id="m0", state="absent", devices=[drop.serial])])
    assert again["changed"] is False


def test_detach_refused_while_pods_use_gpus_on_the_node():
    backend = MemoryBackend(["m0"])
    backend.add("m0")
    cluster, fake = cluster_of({"node-0": "m0"})
    fake.add_gpu_pod("node-0", "ml", "trainer-0", 1)
    fake.add_gpu_pod("node-0", "ml", "trainer-1", 2)
    with pytest.raises(AicrError) as info:
        service(backend, cluster).run([Target(node="node-0", model="A100", count=0)])
    assert "ml/trainer-0, ml/trainer-1" in info.value.msg and "force_detach=true" in info.value.msg
    assert info.value.details["pods"] == ["ml/trainer-0", "ml/trainer-1"]
    assert backend.mutations() == []
    result = service(backend, cluster, force_detach=True).run([Target(node="node-0", model="A100", count=0)])
    assert len(result["detached"]) == 1


def test_detach_refused_when_a_dra_claim_names_the_device():
    backend = MemoryBackend(["m0"])
    used = backend.add("m0")
    free = backend.add("m0")
    cluster, fake = cluster_of({"node-0": "m0"})
    fake.add_claim("node-0", "ml", "gpu-claim", {"gpu-0": used.serial}, pods=["ml/p"])
    result = service(backend, cluster).run([Target(node="node-0", state="absent", devices=[free.res_uuid])])
    assert [d["res_uuid"] for d in result["detached"]] == [free.res_uuid]
    with pytest.raises(AicrError) as info:
        service(backend, cluster).run([Target(node="node-0", state="absent", devices=[used.res_uuid])])
    assert "DRA claims ml/gpu-claim name it" in info.value.msg


def test_cxl_memory_is_not_blocked_by_gpu_pods():
    backend = MemoryBackend(["m0"])
    backend.add("m0", "CXL", dtype="cxlmemory")
    cluster, fake = cluster_of({"node-0": "m0"})
    fake.add_gpu_pod("node-0", "ml", "p", 1)
    result = service(backend, cluster).run([Target(node="node-0", dtype="cxlmemory", state="absent")])
    assert len(result["detached"]) == 1


def test_detach_without_node_needs_force():
    backend = MemoryBackend(["m0"])
    backend.add("m0")
    with pytest.raises(AicrError) as info:
        service(backend).run([Target(machine_id="m0", state="absent")])
    assert "give node or force_detach=true" in info.value.msg
    assert backend.mutations() == []


def test_operator_presence_refuses_unless_allowed():
    backend = MemoryBackend(["m0"])
    cluster, fake = cluster_of({"node-0": "m0"})
    fake.serve("cro.hpsys.ibm.ie.com/v1alpha1", "ComposableResource", namespaced=False)
    with pytest.raises(AicrError) as info:
        service(backend, cluster).run([Target(node="node-0", model="A100", count=1)])
    assert "composable-resource-operator" in info.value.msg and "operator_coexistence=allow" in info.value.msg
    assert backend.mutations() == []
    result = service(backend, cluster, operator_coexistence="allow").run([Target(node="node-0", model="A100", count=1)])
    assert result["changed"] is True
    assert any("10 minutes" in w for w in result["warnings"])


def test_node_resolution_errors_are_clear():
    backend = MemoryBackend(["m0"])
    with pytest.raises(AicrError) as info:
        service(backend, cluster_of()[0]).run([Target(node="ghost", model="A100", count=1)])
    assert "node: ghost does not exist" in info.value.msg
    with pytest.raises(AicrError) as info:
        service(backend).run([Target(node="node-0", model="A100", count=1)])
    assert "no Kubernetes access" in info.value.msg


def test_verify_visible_waits_for_allocatable():
    backend = MemoryBackend(["m0"])
    cluster, fake = cluster_of({"node-0": "m0"})
    reads = []

    def allocatable():
        reads.append(1)
        return 0 if len(reads) < 3 else 2

    fake.set_allocatable("node-0", allocatable)
    result = service(backend, cluster, verify_visible=True).run([Target(node="node-0", model="A100", count=2)])
    assert result["changed"] is True and len(reads) == 3


def test_verify_visible_accepts_resource_slices_and_times_out_clearly():
    backend = MemoryBackend(["m0", "m1"])
    cluster, fake = cluster_of({"node-0": "m0", "node-1": "m1"})
    fake.set_slice_devices("node-0", lambda: set(d.serial for d in backend.machines["m0"]))
    result = service(backend, cluster, verify_visible=True).run([Target(node="node-0", model="A100", count=1)])
    assert len(result["attached"]) == 1
    clock = iter(range(0, 1000, 10))
    with pytest.raises(AicrError) as info:
        service(backend, cluster, verify_visible=True, clock=lambda: next(clock)).run([Target(node="node-1", model="A100", count=1)])
    assert "verify_visible: node node-1 does not show" in info.value.msg and "allocatable nvidia.com/gpu=0, expected >= 1" in info.value.msg


def test_machines_run_concurrently_but_one_attach_per_machine_at_a_time():
    machines = ["m%d" % i for i in range(4)]
    backend = MemoryBackend(machines, barrier=threading.Barrier(4))
    result = service(backend, max_workers=4).run([Target(machine_id=m, model="A100", count=2) for m in machines])
    assert len(result["attached"]) == 8
    assert backend.max_in_flight == 4  # all four machines were inside attach together (the barrier needs 4)
    assert backend.max_per_machine == 1


def test_worker_bound_is_respected():
    machines = ["m%d" % i for i in range(6)]
    backend = MemoryBackend(machines)
    service(backend, max_workers=2).run([Target(machine_id=m, model="A100", count=1) for m in machines])
    assert backend.max_in_flight <= 2


def test_one_failing_machine_does_not_stop_the_others():
    backend = MemoryBackend(["m0", "m1", "m2"])
    backend.add("m1", health=CRITICAL)
    with pytest.raises(AicrError) as info:
        service(backend, max_workers=3).run([Target(machine_id=m, model="A100", count=1) for m in ("m0", "m1", "m2")])
    assert info.value.msg.startswith("1 of 3 machines failed: machine m1: device")
    assert len(info.value.details["attached"]) == 2
    assert info.value.details["changed"] is True


def test_ambiguous_attach_without_effect_is_sent_again_once():
    backend = MemoryBackend(["m0"])
    backend.fail_next = AmbiguousOutcome("attach: timed out", kind="transport")
    result = service(backend).run([Target(machine_id="m0", model="A100", count=1)])
    assert len(result["attached"]) == 1 and len(backend.machines["m0"]) == 1
    assert [c[0] for c in backend.mutations()] == ["attach", "attach"]
    assert any("sending it once more" in w for w in result["warnings"])


def test_accepted_attach_that_never_shows_is_not_resent():
    class Liar(MemoryBackend):
        def attach(self, machine_id, dtype, model, devices):
            self.calls.append(("attach", machine_id, model))

    backend = Liar(["m0"])
    with pytest.raises(AicrError) as info:
        service(backend).run([Target(machine_id="m0", model="A100", count=1)])
    assert "no new gpu device appeared" in info.value.msg
    assert len(backend.mutations()) == 1


def test_async_attach_without_wait_returns_pending_device(fab):
    result = fab.service("fti_cm", wait=False).run([Target(machine_id=fab.machines[0], model="A100", count=1)])
    assert [d["status"] for d in result["attached"]] == ["pending"]
    again = fab.service("fti_cm", wait=False).run([Target(machine_id=fab.machines[0], model="A100", count=1)])
    assert again["changed"] is False


def test_transport_close_closes_every_thread_session(fab):
    backend = fab.backend()
    service(backend, max_workers=4, force_detach=True).run([Target(machine_id=m, model="A100", count=1) for m in fab.machines])
    assert len(backend.transport._sessions) >= 2  # pylint: disable=protected-access
    backend.transport.close()
    assert backend.transport._sessions == []  # pylint: disable=protected-access


def test_verify_visible_counts_local_gpus_from_before_the_run():
    backend = MemoryBackend(["m0"])
    cluster, fake = cluster_of({"node-0": "m0"})
    fake.set_allocatable("node-0", 4)  # four local GPUs; the fabric ones never show up
    clock = iter(range(0, 1000, 10))
    with pytest.raises(AicrError) as info:
        service(backend, cluster, verify_visible=True, clock=lambda: next(clock)).run([Target(node="node-0", model="A100", count=2)])
    assert "allocatable nvidia.com/gpu=4, expected >= 6" in info.value.msg
    backend.machines["m0"] = []
    fake.set_allocatable("node-0", lambda: 4 + len(backend.machines["m0"]))  # the device plugin catches up
    result = service(backend, cluster, verify_visible=True).run([Target(node="node-0", model="A100", count=2)])
    assert len(result["attached"]) == 2


def test_on_transition_reports_each_attach_and_detach_as_it_happens():
    backend = MemoryBackend(["m0", "m1"])
    old = backend.add("m1")
    seen = []

    def hook(record):
        # The device is already attached (or gone) on the fabric when the hook hears of it.
        present = [d.res_uuid for d in backend.machines[record["machine"]]]
        seen.append((record["event"], record["machine"], record["node"], record["res_uuid"] in present))

    result = service(backend, force_detach=True, on_transition=hook).run(
        [Target(machine_id="m0", model="A100", count=2), Target(machine_id="m1", model="A100", count=0)])
    assert sorted(seen) == [("attached", "m0", None, True), ("attached", "m0", None, True), ("detached", "m1", None, False)]
    assert [a["res_uuid"] for a in result["attached"]] == [d.res_uuid for d in backend.machines["m0"]]
    assert result["detached"][0]["res_uuid"] == old.res_uuid


def test_on_transition_is_silent_in_check_mode_and_without_changes():
    backend = MemoryBackend(["m0"])
    backend.add("m0")
    seen = []
    service(backend, check_mode=True, force_detach=True, on_transition=seen.append).run([Target(machine_id="m0", model="A100", count=3)])
    service(backend, on_transition=seen.append).run([Target(machine_id="m0", model="A100", count=1)])
    assert seen == []


def test_a_failing_on_transition_is_a_warning_and_the_run_goes_on():
    backend = MemoryBackend(["m0"])

    def hook(record):
        raise RuntimeError("status store down")

    result = service(backend, on_transition=hook).run([Target(machine_id="m0", model="A100", count=2)])
    assert len(backend.machines["m0"]) == 2 and result["changed"] is True
    assert len(result["warnings"]) == 2 and all("on_transition: the status callback failed for attached" in w for w in result["warnings"])
    assert "RuntimeError: status store down" in result["warnings"][0]


class FailsOnAttach(MemoryBackend):
    """Fails the ``nth`` attach (1-based) with a definite error."""

    def __init__(self, machines, nth, **kw):
        super(FailsOnAttach, self).__init__(machines, **kw)
        self.nth = nth
        self.attaches = 0

    def attach(self, machine_id, dtype, model, devices):
        self.attaches += 1
        if self.attaches == self.nth:
            from ansible_collections.aicr.runtime.plugins.module_utils._fabric.transport import FabricHTTPError  # pylint: disable=import-outside-toplevel

            self.calls.append(("attach", machine_id, model))
            raise FabricHTTPError("attach: HTTP 409: insufficient_resources", status=409, code="insufficient_resources")
        return super(FailsOnAttach, self).attach(machine_id, dtype, model, devices)


def test_rollback_runs_the_drain_check_and_reports_what_stays():
    backend = FailsOnAttach(["m0"], nth=3)
    cluster, fake = cluster_of({"node-0": "m0"})
    seen = []

    def hook(record):
        if record["event"] == "attached" and len(seen) == 1:
            fake.add_gpu_pod("node-0", "ml", "eager", 1)  # a workload grabs a GPU between the attaches
        seen.append(record["event"])

    with pytest.raises(AicrError) as info:
        service(backend, cluster, on_transition=hook).run([Target(node="node-0", model="A100", count=3)])
    msg = info.value.msg
    assert msg.startswith("node node-0 (machine m0): attach 3 of 3 failed: attach: HTTP 409: insufficient_resources; rolling back stopped: ")
    assert "pods on node node-0 request nvidia.com/gpu: ml/eager" in msg
    kept = [d.res_uuid for d in backend.machines["m0"]]
    assert len(kept) == 2 and "still attached by this run: %s" % ", ".join(kept) in msg and msg.endswith("rolled back: none")
    assert [c[0] for c in backend.mutations()] == ["attach", "attach", "attach"]
    assert sorted(d["res_uuid"] for d in info.value.details["attached"]) == sorted(kept)
    assert info.value.details["kept"] == kept and info.value.details["rolled_back"] == []


def test_rollback_detaches_newest_first_and_tells_the_status_hook():
    backend = FailsOnAttach(["m0"], nth=3)
    seen = []
    with pytest.raises(AicrError) as info:
        service(backend, force_detach=True, on_transition=lambda r: seen.append((r["event"], r["res_uuid"]))).run(
            [Target(machine_id="m0", model="A100", count=3)])
    assert backend.machines["m0"] == []
    assert [c[0] for c in backend.mutations()] == ["attach", "attach", "attach", "detach", "detach"]
    assert [c[2] for c in backend.mutations()[3:]] == ["r-2", "r-1"]
    assert seen == [("attached", "r-1"), ("attached", "r-2"), ("detached", "r-2"), ("detached", "r-1")]
    assert "rolled back the 2 this run attached (r-1, r-2), nothing attached" in info.value.msg
    assert [d["res_uuid"] for d in info.value.details["rolled_back"]] == ["r-2", "r-1"]


def test_first_attach_failing_leaves_nothing_to_roll_back():
    backend = FailsOnAttach(["m0"], nth=1)
    with pytest.raises(AicrError) as info:
        service(backend, force_detach=True).run([Target(machine_id="m0", model="A100", count=3)])
    assert info.value.msg == "m0: attach: HTTP 409: insufficient_resources"
    assert [c[0] for c in backend.mutations()] == ["attach"] and backend.machines["m0"] == []


def test_two_spellings_of_one_fabric_model_on_a_machine_are_refused():
    backend = MemoryBackend(["m0"])
    backend.add("m0", "a100")
    with pytest.raises(AicrError) as info:
        service(backend, force_detach=True).run([Target(machine_id="m0", model="A100", count=2), Target(machine_id="m0", model="a100", count=0)])
    assert "machine m0: models A100 and a100 name the same fabric model a100; give it once" in info.value.msg
    assert backend.mutations() == []


class RecordingClient:
    """A cluster client double: records each call."""

    def __init__(self):
        self.calls = []

    def __getattr__(self, name):
        return lambda *args, **kwargs: self.calls.append(name)


def test_the_gated_client_passes_reads_and_dry_runs_and_gates_every_write():
    gate = StackGate()
    raw = RecordingClient()
    gated = GatedClient(raw, gate)
    configmap = {"kind": "ConfigMap", "metadata": {"name": "aicr-devices-a", "namespace": "aicr-system"}}
    gated.get("v1", "ConfigMap", "aicr-devices-a", "aicr-system")
    gated.list("v1", "ConfigMap", "aicr-system")
    gated.apply(configmap, dry_run=True)
    gated.request("GET", "/api/v1/namespaces")
    assert raw.calls == ["get", "list", "apply", "request"]
    writes = [lambda: gated.apply(configmap), lambda: gated.create(configmap), lambda: gated.replace(configmap),
              lambda: gated.delete("v1", "ConfigMap", "aicr-devices-a", "aicr-system"),
              lambda: gated.request("PATCH", "/api/v1/namespaces/aicr-system/configmaps/x"), lambda: gated.request_once("DELETE", "/x")]
    for write in writes:
        with pytest.raises(LeaseNeeded):
            write()
    assert raw.calls == ["get", "list", "apply", "request"], "no write reached the cluster without the Lease"
    assert gate.needed == "DELETE /x"
    with pytest.raises(LeaseNeeded) as needed:
        gated.delete("v1", "ConfigMap", "aicr-devices-a", "aicr-system")
    assert str(needed.value) == "delete of ConfigMap aicr-system/aicr-devices-a"
