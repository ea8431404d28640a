#!/usr/bin/env python
"""Scale: one control node converging 10 inventory hosts with forks=10, against one host (issue #8).

Every host is a cluster to Ansible — its own kubeconfig (the least-privilege identity ``site``),
its own stack, Lease and namespace — on one real control plane of the lab (a fleet of real API
servers would not fit a 2-core machine beside the control node; the API server is not what this
measures). All hosts take the example recipe (6 components) from one chart repository. The figure is
the wall time of ``ansible-playbook playbooks/site.yml`` for 10 hosts divided by that for 1 (target
<= 2.5). Both runs start from nothing installed, so both do the full rollout.

The ratio depends on how long the cluster takes: while components become Ready the control node
is idle, and 10 hosts wait in parallel; the CPU work (Ansible, one module process per host, one helm
process per component, and here also the control plane and kwok) adds up. So it is measured at two
pod readiness delays (kwok's ``lab.aicr.io/ready-after`` on every component's pods):

* ``readiness_1s`` (the headline): pods Ready 1 s after they start — still far quicker than real
  pods (image pulls, start-up);
* ``readiness_0.2s`` (stress): the control node's CPU is the bottleneck on a 2-core machine.

For each, the CPU seconds per host (the ansible-playbook process tree: Ansible, modules, helm; plus
the control plane's processes, which on a real fleet run elsewhere) and the floor that CPU puts on the
10-host wall time (CPU / cores) are reported, so the ratio can be read against what the machine allows.
"""

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

from aicr_lab.charts.pytest_fixture import start_chart_repo  # noqa: E402  pylint: disable=wrong-import-position
from aicr_lab.controlplane.stages import READY_AFTER  # noqa: E402  pylint: disable=wrong-import-position
from aicr_lab.kube import Kube  # noqa: E402  pylint: disable=wrong-import-position

EXAMPLE_REPOSITORY = "https://charts.aicr.example/examples"
TARGET_RATIO = 2.5
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _catalog(workdir, namespace, ready_after):
    """The example catalog for one host: its components in ``namespace``, their pods Ready ``ready_after`` s after start."""
    target = workdir / ("catalog-%s" % namespace)
    shutil.copytree(str(REPO / "examples" / "catalog"), str(target))
    registry = target / "registry.yaml"
    registry.write_text(registry.read_text(encoding="utf-8").replace("defaultNamespace: aicr-demo", "defaultNamespace: %s" % namespace),
                        encoding="utf-8")
    annotation = {READY_AFTER: "%sms" % int(ready_after * 1000)}
    pods = {"example-operator": {"podAnnotations": annotation}, "example-agent": {"podAnnotations": annotation},
            "example-monitoring": {"example-exporter": {"podAnnotations": annotation}},
            "example-jobs": {"hook": {"podAnnotations": annotation}}}
    for component, values in pods.items():
        path = target / "components" / component / "values.yaml"
        merged = _merge(yaml.safe_load(path.read_text(encoding="utf-8")) or {}, values)
        path.write_text(yaml.safe_dump(merged, sort_keys=False), encoding="utf-8")
    return target


def _merge(base, extra):
    for key, value in extra.items():
        base[key] = _merge(dict(base.get(key) or {}), value) if isinstance(value, dict) else value
    return base


def _inventory(kube, hosts, charts_url):
    inventory = {}
    for name, catalog, namespace in hosts:
        inventory[name] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "aicr_catalog": str(catalog),
            "aicr_criteria": {"service": "kind", "accelerator": "h100", "intent": "training"},
            "aicr_kubeconfig": kube.kubeconfig_for("site"),
            "aicr_repository_mirrors": {EXAMPLE_REPOSITORY: charts_url},
            "cluster_runtime_helm_binary": str(BIN / "helm"),
            "cluster_runtime_stack": namespace,
            "cluster_runtime_lease_namespace": namespace,
        }
    return {"clusters": {"hosts": inventory}}


def _process_cpu(pid):
    """User + system CPU seconds of a live process (from /proc)."""
    with open("/proc/%d/stat" % pid, encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS  # utime, stime (fields 14, 15 of stat)


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _converge(kube, workdir, count, charts_url, ready_after):
    tag = "%d-%s" % (count, str(ready_after).replace(".", "-"))
    hosts = []
    for index in range(count):
        namespace = "scale-%s-%d" % (tag, index)
        kube.rest.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        hosts.append(("cluster-%02d" % index, _catalog(workdir, namespace, ready_after), namespace))
    inventory = workdir / ("inventory-%s.json" % tag)
    inventory.write_text(json.dumps(_inventory(kube, hosts, charts_url)), encoding="utf-8")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "collections"), PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
    plane_before = sum(_process_cpu(pid) for pid in kube.plane.pids.values())
    cpu_before = _children_cpu()
    began = time.perf_counter()
    result = subprocess.run(
        [str(BIN / "ansible-playbook"), "-i", str(inventory), "--forks", "10", str(REPO / "playbooks" / "site.yml")],
        env=env, capture_output=True, text=True, check=False,
    )
    elapsed = time.perf_counter() - began
    playbook_cpu = _children_cpu() - cpu_before
    plane_cpu = sum(_process_cpu(pid) for pid in kube.plane.pids.values()) - plane_before
    if result.returncode != 0:
        raise RuntimeError("site.yml failed for %d hosts:\n%s" % (count, result.stdout[-3000:]))
    return elapsed, playbook_cpu, plane_cpu


def _measure(kube, workdir, charts_url, ready_after):
    one, _cpu_one, _plane_one = _converge(kube, workdir, 1, charts_url, ready_after)
    ten, playbook_cpu, plane_cpu = _converge(kube, workdir, 10, charts_url, ready_after)
    cores = os.cpu_count() or 1
    return {
        "workload_ready_after_s": ready_after,
        "one_cluster_seconds": round(one, 2),
        "ten_clusters_forks10_seconds": round(ten, 2),
        "ratio": round(ten / one, 2),
        "within_target": ten / one <= TARGET_RATIO,
        "ten_clusters_cpu_seconds": {"ansible_modules_helm": round(playbook_cpu, 2), "control_plane": round(plane_cpu, 2)},
        "cpu_seconds_per_cluster": round((playbook_cpu + plane_cpu) / 10, 2),
        "controller_cpu_seconds_per_cluster": round(playbook_cpu / 10, 2),
        "ten_clusters_cpu_floor_seconds": round((playbook_cpu + plane_cpu) / cores, 2),
    }


def run():
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    charts = start_chart_repo(workdir)
    kube = Kube.start(workdir / "controlplane")
    try:
        headline = _measure(kube, workdir, charts.url, 1.0)
        stress = _measure(kube, workdir, charts.url, 0.2)
    finally:
        kube.stop()
        charts.stop()
        shutil.rmtree(str(workdir), ignore_errors=True)
    return {
        "cores": os.cpu_count(),
        "cluster": "one lab control plane, a namespace, stack and Lease per inventory host, identity site",
        "target_ratio": TARGET_RATIO,
        "readiness_1s": headline,
        "readiness_0.2s": stress,
        "ratio": headline["ratio"],
        "within_target": headline["within_target"],
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
