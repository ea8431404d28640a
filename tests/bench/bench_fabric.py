"""Benchmark of fabric_device's engine (issue #5).

16 A100s over 8 machines (2 each) through the FTI Fabric Manager simulator, every attach taking
300 ms (simulated fabric latency on mutating calls):

* ``concurrent_wall_s``: machines handled concurrently (8 workers) - target <= 1.5 s;
* ``sequential_wall_s``: the same with one worker (about 16 x 0.3 = 4.8 s);
* ``*_token_requests``: access tokens requested in the run (target: 1), counted by the client and
  by the simulator;
* ``rerun_*``: the second run (already converged): wall, mutating requests (target: 0);
* ``detach_concurrent_wall_s``: detaching the 16 again, concurrently.
"""

import json
import os
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DEV_ROOT = REPO / ".build" / "dev"
LATENCY = 0.3
MACHINES = 8
PER_MACHINE = 2


def _expose_collection():
    link = DEV_ROOT / "ansible_collections" / "aicr" / "runtime"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        try:
            link.symlink_to(REPO, target_is_directory=True)
        except FileExistsError:
            pass
    if str(DEV_ROOT) not in sys.path:
        sys.path.insert(0, str(DEV_ROOT))


def _one_run(sim, workers, state="present"):
    # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils._fabric.factory import build_backend
    from ansible_collections.aicr.runtime.plugins.module_utils._fabric.service import FabricService
    from ansible_collections.aicr.runtime.plugins.module_utils._fabric.targets import Target

    state_view = sim.control.state()
    backend = build_backend("fti_fm", sim.endpoint, sim.credentials, tenant_id=state_view["tenant_id"], ca_path=sim.ca_path, timeout=10)
    service = FabricService(backend, max_workers=workers, poll_interval=0.05, force_detach=True)
    if state == "present":
        targets = [Target(machine_id=m, model="A100", count=PER_MACHINE) for m in sorted(state_view["machines"])]
    else:
        targets = [Target(machine_id=m, model="A100", state="absent") for m in sorted(state_view["machines"])]
    sim.control.clear_requests()
    began = time.perf_counter()
    result = service.run(targets)
    wall = time.perf_counter() - began
    backend.transport.close()
    after = sim.control.state()
    return {
        "wall_s": round(wall, 3),
        "token_requests": result["token_requests"],
        "token_requests_seen_by_fabric": after["tokens_issued"],
        "mutating_requests": len(sim.control.requests(mutating=True)),
        "attached": len(result["attached"]),
        "detached": len(result["detached"]),
        "devices_on_fabric": sum(len(m["devices"]) for m in after["machines"].values()),
    }


def run():
    _expose_collection()
    from aicr_lab.fabric.pytest_fixture import start_simulator  # pylint: disable=import-outside-toplevel

    with tempfile.TemporaryDirectory(prefix="bench-fabric-") as tmp:
        sim = start_simulator(tmp, machines=MACHINES, latency=LATENCY)
        try:
            sequential = _one_run(sim, workers=1)
            sim.control.reset(machines=MACHINES, latency=LATENCY)
            concurrent = _one_run(sim, workers=MACHINES)
            rerun = _one_run(sim, workers=MACHINES)
            detach = _one_run(sim, workers=MACHINES, state="absent")
        finally:
            sim.stop()
    return {
        "devices": MACHINES * PER_MACHINE,
        "machines": MACHINES,
        "simulated_mutation_latency_s": LATENCY,
        "concurrent_wall_s": concurrent["wall_s"],
        "concurrent_target_s": 1.5,
        "concurrent_within_target": concurrent["wall_s"] <= 1.5,
        "sequential_wall_s": sequential["wall_s"],
        "speedup": round(sequential["wall_s"] / concurrent["wall_s"], 2) if concurrent["wall_s"] else None,
        "concurrent_token_requests": concurrent["token_requests"],
        "concurrent_token_requests_seen_by_fabric": concurrent["token_requests_seen_by_fabric"],
        "sequential_token_requests": sequential["token_requests"],
        "concurrent_attached": concurrent["attached"],
        "concurrent_devices_on_fabric": concurrent["devices_on_fabric"],
        "rerun_wall_s": rerun["wall_s"],
        "rerun_mutating_requests": rerun["mutating_requests"],
        "detach_concurrent_wall_s": detach["wall_s"],
        "detach_devices_left": detach["devices_on_fabric"],
        "cpus": os.cpu_count(),
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, sort_keys=True))
