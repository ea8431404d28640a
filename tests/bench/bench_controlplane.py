#!/usr/bin/env python
"""The lab's real control plane (issue #13): start-to-ready, request rates, memory, idle CPU, build reuse.

* ``start_to_ready_s``: ``ControlPlane.start()`` from nothing (fresh data dir and PKI) until
  ``/readyz``, the ``default`` ServiceAccount and every node Ready, with the shipped RBAC and the lab's
  identities installed: median and max of 3 (target <= 10 s warm).
* ``get_per_s``, ``configmap_ssa_per_s``, ``noop_ssa_per_s``: GETs and server-side applies over one
  keep-alive TLS connection as a least-privilege identity (RBAC and the audit log on, as in every test).
* ``peak_rss_mib``: the peak resident memory (VmHWM) of etcd, kube-apiserver, kube-controller-manager,
  kube-scheduler and kwok, summed, after a burst of 50 Deployments; ``idle_cpu_percent``: their CPU
  over 5 s with nothing to do, in % of one core.
* ``binaries_cached_check_s``: what ``make controlplane`` costs once the binaries are built (the stamp
  check). The cold build is not run here (it takes minutes and empties Go's caches); measure it with
  ``GOMODCACHE=$(mktemp -d) GOCACHE=$(mktemp -d) AICR_CACHE_DIR=$(mktemp -d) .venv/bin/aicr-lab build``.
"""

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

from aicr_lab.controlplane import build  # noqa: E402  pylint: disable=wrong-import-position
from aicr_lab.controlplane.cluster import ControlPlane, default_nodes  # noqa: E402  pylint: disable=wrong-import-position
from aicr_lab.controlplane.rest import Rest  # noqa: E402  pylint: disable=wrong-import-position

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def _cpu(pid):
    with open("/proc/%d/stat" % pid, encoding="ascii") as handle:
        fields = handle.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def _peak_rss_mib(pid):
    """The process's high-water mark of resident memory (VmHWM)."""
    with open("/proc/%d/status" % pid, encoding="ascii") as handle:
        for line in handle:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def _rate(action, seconds=2.0):
    count, began = 0, time.perf_counter()
    while time.perf_counter() - began < seconds:
        action(count)
        count += 1
    return round(count / (time.perf_counter() - began), 1)


def run():
    began = time.perf_counter()
    build.ensure_binaries(log=lambda line: None)
    cached_check = time.perf_counter() - began
    workdir = tempfile.mkdtemp(prefix="bench-controlplane-")
    starts = []
    for attempt in range(3):
        plane = ControlPlane(os.path.join(workdir, "cp-%d" % attempt), nodes=default_nodes(3)).start()
        starts.append(plane.started_seconds)
        if attempt < 2:
            plane.stop()
    try:
        rest = Rest.from_kubeconfig(plane.identity_kubeconfig("release"))
        admin = plane.admin
        namespace = "bench"
        admin.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        path = "/api/v1/namespaces/%s/configmaps" % namespace
        rest.create(path, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "read-me"}, "data": {"a": "1"}})
        gets = _rate(lambda i: rest.get(path + "/read-me"))
        ssa = _rate(lambda i: rest.apply(path + "/applied", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"},
                                                             "data": {"n": str(i)}}, manager="bench"))
        noop = _rate(lambda i: rest.apply(path + "/applied", {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"},
                                                              "data": {"n": "0"}}, manager="bench"))
        for index in range(50):
            rest.create("/apis/apps/v1/namespaces/%s/deployments" % namespace, {
                "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d%d" % index},
                "spec": {"selector": {"matchLabels": {"app": "d%d" % index}},
                         "template": {"metadata": {"labels": {"app": "d%d" % index}},
                                      "spec": {"containers": [{"name": "c", "image": "registry.bench.example/c:1"}]}}}})
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:  # the burst has settled: every Deployment available
            items = admin.get("/apis/apps/v1/namespaces/%s/deployments" % namespace)["items"]
            if len(items) == 50 and all((d.get("status") or {}).get("availableReplicas") == 1 for d in items):
                break
            time.sleep(0.2)
        settled = time.monotonic() - (deadline - 120)
        rss = {name: round(_peak_rss_mib(pid), 1) for name, pid in plane.pids.items()}
        cpu_before = {name: _cpu(pid) for name, pid in plane.pids.items()}
        time.sleep(5)  # the measurement window itself: CPU used while nothing happens
        idle = {name: round(100 * (_cpu(pid) - cpu_before[name]) / 5, 2) for name, pid in plane.pids.items()}
        return {
            "kubernetes": build.kubernetes_version(), "etcd": build.versions()["etcd"], "kwok": build.versions()["kwok"],
            "start_to_ready_s": {"median": round(statistics.median(starts), 2), "max": round(max(starts), 2), "runs": [round(s, 2) for s in starts]},
            "target_start_to_ready_s": 10,
            "get_per_s": gets, "configmap_ssa_per_s": ssa, "noop_ssa_per_s": noop,
            "fifty_deployments_available_s": round(settled, 2),
            "peak_rss_mib": {"total": round(sum(rss.values()), 1), **rss},
            "idle_cpu_percent": {"total": round(sum(idle.values()), 2), **idle},
            "binaries_cached_check_s": round(cached_check, 3),
        }
    finally:
        plane.stop()


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
    sys.exit(0)
