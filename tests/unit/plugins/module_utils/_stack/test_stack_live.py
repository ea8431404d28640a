"""LiveStatus: gated_release's on_transition hook writing per-component progress to a stack's status, coalesced."""

import copy
import threading


from ansible_collections.aicr.runtime.plugins.module_utils._kube.errors import ClusterError
from ansible_collections.aicr.runtime.plugins.module_utils._stack import live as live_mod
from ansible_collections.aicr.runtime.plugins.module_utils._stack import model, status


class MemoryStore:
    """A one-stack store in memory: counts writes, can fail writes or answer 409 first."""

    backend = "memory"

    def __init__(self, status=None, fail_writes=0, conflicts=0, error=None):
        self.obj = {"metadata": {"name": "s", "generation": 1, "resourceVersion": "1"}, "spec": {}, "status": status or {}}
        self.fail_writes = fail_writes
        self.conflicts = conflicts
        self.error = error or ClusterError("PUT /status returned 503: unavailable", status=503)
        self.writes = []
        self.lock = threading.Lock()

    def read(self, name):
        with self.lock:
            return copy.deepcopy(self.obj)

    def write_status(self, obj, status):
        with self.lock:
            if self.fail_writes:
                self.fail_writes -= 1
                raise self.error
            if self.conflicts:
                self.conflicts -= 1
                self.obj["metadata"]["resourceVersion"] = str(int(self.obj["metadata"]["resourceVersion"]) + 1)
                raise ClusterError("conflict", status=409)
            self.obj["status"] = copy.deepcopy(status)
            self.obj["metadata"]["resourceVersion"] = str(int(self.obj["metadata"]["resourceVersion"]) + 1)
            self.writes.append(copy.deepcopy(status))
            return copy.deepcopy(self.obj)


def result(name, phase, action="install", blocked_by=(), revision=None):
    return {"name": name, "kind": "release", "phase": phase, "blocked_by": list(blocked_by), "chart": name, "version": "1.0.0",
            "revision": revision, "namespace": "apps", "message": "", "action": action}


def live(memory, interval=30.0, **kwargs):
    return live_mod.LiveStatus(status.StatusWriter(memory, "s", sleep=lambda _s: None), interval=interval, **kwargs)


def test_a_burst_of_transitions_is_coalesced_into_few_writes_with_the_latest_phases():
    memory = MemoryStore({"phase": "Deploying", "components": [result("c%02d" % i, "Pending") for i in range(20)]})
    memory.obj["status"]["components"] = [model.component_entry(c) for c in memory.obj["status"]["components"]]
    writer = live(memory)
    names = ["c%02d" % i for i in range(20)]
    for name in names:
        writer.on_transition(result(name, "Deploying"))
    for name in names:
        writer.on_transition(result(name, "Ready", revision=1))
    summary = writer.close()
    assert summary["transitions"] == 40 and summary["warnings"] == []
    assert 1 <= len(memory.writes) <= 2, "the first transition at once, the rest in the final flush"
    final = dict((c["name"], c) for c in memory.obj["status"]["components"])
    assert all(final[n]["phase"] == "Ready" and final[n]["ready"] and final[n]["revision"] == 1 for n in names)
    assert memory.obj["status"]["readyComponents"] == "20/20"
    assert len([h for h in memory.obj["status"]["history"] if h["type"] == "ComponentReady"]) == 20


def test_writes_follow_the_interval_while_transitions_keep_coming():
    memory = MemoryStore({"components": []})
    writer = live(memory, interval=0.05)
    writer.on_transition(result("a", "Deploying"))
    deadline = threading.Event()
    for _attempt in range(200):
        if memory.writes:
            break
        deadline.wait(0.01)
    assert memory.writes and memory.writes[0]["components"][0]["phase"] == "Deploying", "the first transition is written at once"
    writer.on_transition(result("a", "Ready", revision=1))
    writer.on_transition(result("b", "Blocked", blocked_by=["x"]))
    summary = writer.close()
    comps = dict((c["name"], c) for c in memory.obj["status"]["components"])
    assert comps["a"]["phase"] == "Ready" and comps["b"]["phase"] == "Blocked" and comps["b"]["blockedBy"] == ["x"]
    assert summary["writes"] == len(memory.writes) <= 3


def test_verifying_a_ready_component_writes_nothing():
    status, _events = model.apply_update({}, {"phase": "Ready", "components": [result(n, "Ready", revision=1) for n in ("a", "b")]})
    memory = MemoryStore(status)
    writer = live(memory, interval=0.0)
    for name in ("a", "b"):
        writer.on_transition(result(name, "Deploying", action="unchanged", revision=1))
        unchanged = result(name, "Unchanged", action="unchanged", revision=1)
        unchanged["message"] = "already deployed and Ready (3 resources)"
        writer.on_transition(unchanged)
    assert writer.close()["writes"] == 0 and memory.writes == []
    # An upgrade of a Ready component is a real transition.
    writer = live(memory, interval=0.0)
    writer.on_transition(result("a", "Deploying", action="upgrade", revision=1))
    writer.close()
    assert [c["phase"] for c in memory.obj["status"]["components"]] == ["Deploying", "Ready"]


def test_removed_drops_the_entry_and_failed_keeps_the_message():
    memory = MemoryStore({"components": [model.component_entry(result(n, "Ready", revision=1)) for n in ("a", "b")]})
    writer = live(memory)
    writer.on_transition(result("a", "Removed", action="unchanged"))
    failed = result("b", "Failed", action="upgrade")
    failed["message"] = "component b: timed out waiting for release b"
    writer.on_transition(failed)
    writer.close()
    comps = memory.obj["status"]["components"]
    assert [c["name"] for c in comps] == ["b"] and comps[0]["phase"] == "Failed" and "timed out" in comps[0]["message"]
    assert any(h["type"] == "ComponentFailed" and "timed out" in h["message"] for h in memory.obj["status"]["history"])


def test_a_failed_write_is_retried_and_409_conflicts_are_re_applied():
    memory = MemoryStore({"components": []}, fail_writes=1, conflicts=2)
    writer = live(memory, interval=0.0)
    writer.on_transition(result("a", "Ready", revision=1))
    summary = writer.close()
    assert memory.obj["status"]["components"][0]["phase"] == "Ready"
    assert summary["conflicts"] == 2 and len(summary["warnings"]) == 1 and "write failed (retried)" in summary["warnings"][0]


def test_a_store_that_keeps_failing_gives_up_without_raising():
    memory = MemoryStore({"components": []}, fail_writes=100)
    writer = live(memory, interval=0.0)
    for i in range(10):
        writer.on_transition(result("a", "Deploying" if i % 2 else "Ready"))
    summary = writer.close()
    assert memory.writes == [] and any("given up after 3 failed writes" in w and "503" in w for w in summary["warnings"])
    writer.on_transition(result("a", "Ready"))  # after close: ignored, never raises


def device(event, res_uuid, node="node-1", serial=None):
    return {"event": event, "machine": "m-" + node, "node": node, "type": "gpu", "model": "A100", "res_uuid": res_uuid,
            "serial": serial or "GPU-" + res_uuid, "status": "ok", "warnings": []}


def test_device_transitions_add_and_remove_status_devices_with_history():
    memory = MemoryStore({"phase": "Attaching", "devices": [model.device_entry(device("attached", "r1"))]})
    writer = status.StatusWriter(memory, "s")
    _before, after, changed, events = writer.apply_device_transitions([device("attached", "r2"), device("detached", "r1")])
    assert changed is True and len(memory.writes) == 1
    assert [(d["resUUID"], d["serial"], d["node"], d["model"]) for d in after["status"]["devices"]] == [("r2", "GPU-r2", "node-1", "A100")]
    assert [e["type"] for e in events] == ["DeviceAttached", "DeviceDetached"]
    assert events[0]["message"] == "attached node-1 gpu A100 GPU-r2 (r2)"
    assert [h["type"] for h in after["status"]["history"]] == ["DeviceAttached", "DeviceDetached"]
    # Replays change nothing: an attach already listed, a detach of a device not listed.
    _before, _after, changed, events = writer.apply_device_transitions([device("attached", "r2"), device("detached", "r1")])
    assert changed is False and events == [] and len(memory.writes) == 1


def test_live_device_status_coalesces_by_device_and_flushes_on_close():
    memory = MemoryStore({"phase": "Attaching"})
    status_writer = status.StatusWriter(memory, "s", sleep=lambda _s: None)
    writer = live_mod.LiveStatus(status_writer, interval=30.0, apply=status_writer.apply_device_transitions, key="res_uuid")
    writer.on_transition(device("attached", "r1"))
    writer.on_transition({"event": "attached"})  # no fabric id: ignored
    for uuid in ("r2", "r3"):
        writer.on_transition(device("attached", uuid))
    writer.on_transition(device("detached", "r3"))  # rolled back before the next write: only the latest counts
    summary = writer.close()
    assert summary["transitions"] == 4 and summary["warnings"] == []
    assert [d["resUUID"] for d in memory.obj["status"]["devices"]] == ["r1", "r2"]
    assert 1 <= len(memory.writes) <= 2
