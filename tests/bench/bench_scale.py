#!/usr/bin/env python
"""Scale: one control node converging 10 clusters with forks=10, against one cluster (issue #8).

Each cluster is its own Kubernetes API emulator (a separate process); all of them take the
example recipe (6 components) from one chart repository. The figure is the wall time of
`ansible-playbook playbooks/site.yml` for 10 clusters divided by that for 1 (target <= 2.5).
Both runs start from empty clusters, so both do the full rollout.

The ratio depends on how long the cluster itself takes: while components become Ready the
control node is idle, and 10 clusters wait in parallel; the CPU work (Ansible, one module
process per cluster since gated_release resolves the recipe itself, one helm process per
component, and here also the emulators) adds up across clusters. So it is measured at two
workload readiness delays:

* ``readiness_1s`` (the headline): every workload becomes Ready 1 s after it is created, as in
  the gated_release benchmark - still far quicker than real pods (image pulls, start-up);
* ``readiness_0.2s`` (stress): the control node's CPU is the bottleneck on a 2-core machine.

For each, the CPU seconds spent per cluster (the ansible-playbook process tree: Ansible,
modules, helm; plus the emulators, which on a real fleet run elsewhere) and the floor that CPU
puts on the 10-cluster wall time (CPU / cores) are reported, so the ratio can be read against
what the machine allows.
"""

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(REPO / "tests" / "emulators"))

from aicr_lab.charts.pytest_fixture import start_chart_repo  # noqa: E402  pylint: disable=wrong-import-position
from aicr_emulators.kube.pytest_fixture import start_emulator  # noqa: E402  pylint: disable=wrong-import-position

EXAMPLE_REPOSITORY = "https://charts.aicr.example/examples"
TARGET_RATIO = 2.5
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _inventory(clusters, charts_url):
    hosts = {}
    for index, kube in enumerate(clusters):
        hosts["cluster-%02d" % index] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "aicr_catalog": str(REPO / "examples" / "catalog"),
            "aicr_criteria": {"service": "kind", "accelerator": "h100", "intent": "training"},
            "aicr_kubeconfig": str(kube.kubeconfig),
            "aicr_repository_mirrors": {EXAMPLE_REPOSITORY: charts_url},
            "cluster_runtime_helm_binary": str(BIN / "helm"),
        }
    return {"clusters": {"hosts": hosts}}


def _process_cpu(pid):
    """User + system CPU seconds of a live process (from /proc)."""
    with open("/proc/%d/stat" % pid, encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14, 15 of stat)


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _converge(workdir, count, charts_url, ready_after):
    tag = "%d-%s" % (count, ready_after)
    clusters = [start_emulator(workdir / ("kube-%s-%d" % (tag, index)), default_ready_after=ready_after) for index in range(count)]
    try:
        inventory = workdir / ("inventory-%s.json" % tag)
        inventory.write_text(json.dumps(_inventory(clusters, charts_url)), encoding="utf-8")
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "collections"), PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
        emulators_before = sum(_process_cpu(kube.process.pid) for kube in clusters)
        cpu_before = _children_cpu()
        began = time.perf_counter()
        result = subprocess.run(
            [str(BIN / "ansible-playbook"), "-i", str(inventory), "--forks", "10", str(REPO / "playbooks" / "site.yml")],
            env=env, capture_output=True, text=True, check=False,
        )
        elapsed = time.perf_counter() - began
        playbook_cpu = _children_cpu() - cpu_before
        emulators_cpu = sum(_process_cpu(kube.process.pid) for kube in clusters) - emulators_before
        if result.returncode != 0:
            raise RuntimeError("site.yml failed for %d clusters:\n%s" % (count, result.stdout[-3000:]))
        return elapsed, playbook_cpu, emulators_cpu
    finally:
        for kube in clusters:
            kube.stop()


def _measure(workdir, charts_url, ready_after):
    one, _cpu_one, _emu_one = _converge(workdir, 1, charts_url, ready_after)
    ten, playbook_cpu, emulators_cpu = _converge(workdir, 10, charts_url, ready_after)
    cores = os.cpu_count() or 1
    return {
        "workload_ready_after_s": ready_after,
        "one_cluster_seconds": round(one, 2),
        "ten_clusters_forks10_seconds": round(ten, 2),
        "ratio": round(ten / one, 2),
        "within_target": ten / one <= TARGET_RATIO,
        "ten_clusters_cpu_seconds": {"ansible_modules_helm": round(playbook_cpu, 2), "emulators": round(emulators_cpu, 2)},
        "cpu_seconds_per_cluster": round((playbook_cpu + emulators_cpu) / 10, 2),
        "ten_clusters_cpu_floor_seconds": round((playbook_cpu + emulators_cpu) / cores, 2),
    }


def run():
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    charts = start_chart_repo(workdir)
    try:
        headline = _measure(workdir, charts.url, 1.0)
        stress = _measure(workdir, charts.url, 0.2)
    finally:
        charts.stop()
    return {
        "cores": os.cpu_count(),
        "target_ratio": TARGET_RATIO,
        "readiness_1s": headline,
        "readiness_0.2s": stress,
        "ratio": headline["ratio"],
        "within_target": headline["within_target"],
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
