#!/usr/bin/env python
"""Benchmark of recipe resolution (issue #2).

Figures:
* ``cold_45_leaves_s``: a fresh Python process imports the engine, loads the real AICR
  catalog once (no parsed-metadata cache) and resolves all 45 leaf recipes on it (target
  <= 0.35 s); ``cold_45_leaves_disk_cache_s`` is the same with the parsed metadata taken
  from the on-disk cache; ``cold_45_leaves_by_path_s`` calls ``resolve(path, ...)`` 45 times
  instead, re-checking the catalog directory (a stat of every file) on each call, as a
  lookup in a loop does; ``python_startup_s`` is a bare interpreter for reference.
* ``warm_resolve_ms``: one more resolution in a process that already holds the catalog.
* ``task_overhead_*``: the median duration of an ``aicr.runtime.recipe_resolve`` task minus
  the median duration of an ``ansible.builtin.ping`` task in the same playbook run
  (target <= 0.3 s), with the on-disk cache and without it.
* ``cluster_facts_*`` (issue #17 item 5): ``aicr.runtime.cluster_facts`` on the lab's real control plane with
  ``CLUSTER_FACTS_NODES`` GPU nodes (NFD and GPU feature discovery labels, 8 GPUs each), as the least-privilege
  ``facts`` identity: ``cluster_facts_engine_ms`` the median of in-process reads (connection, ``/version``, the node
  list, the Snapshot built), ``cluster_facts_task_s`` / ``cluster_facts_task_overhead_s`` the task's median duration and
  its difference to an ``ansible.builtin.ping`` task in the same playbook.
"""

import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SHARED = Path(os.environ["AICR_SHARED"]) if os.environ.get("AICR_SHARED") else REPO.parent / "shared"
CATALOG = SHARED / "aicr" / "catalog"
DEV_PATH = REPO / ".build" / "dev"
COLLECTIONS = REPO / ".build" / "collections"
VENV_BIN = Path(sys.executable).parent
TASK_REPEATS = 9
CLUSTER_FACTS_NODES = 50

_COLD = r"""
import sys, time, json
began = time.perf_counter()
sys.path.insert(0, %(dev)r)
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import catalog as catalog_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import criteria as crit
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod
imported = time.perf_counter()
cat = catalog_mod.load_catalog(%(catalog)r, cache_dir=%(cache)r, persist=%(persist)r)
loaded = time.perf_counter()
names = []
for leaf in cat.leaves():
    oc = cat.overlays[leaf]["spec"]["criteria"]
    query = dict((d, oc.get(d)) for d in crit.DIMENSIONS)
    if %(by_path)r:  # what a lookup in a loop does: re-check the directory (stat every file) each time
        out = resolve_mod.resolve(%(catalog)r, query, cache_dir=%(cache)r, persist_cache=%(persist)r)
    else:
        out = resolve_mod.resolve_loaded(cat, query)
    names.append(out["recipe_name"])
done = time.perf_counter()
print(json.dumps({"total": done - began, "import": imported - began, "load": loaded - imported, "resolve": done - loaded,
                  "leaves": len(names), "from_disk_cache": cat.from_disk_cache}))
"""


def _ensure_dev_path():
    link = DEV_PATH / "ansible_collections" / "aicr" / "runtime"
    if not link.exists():
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(REPO, target_is_directory=True)


def _cold(cache, persist, by_path=False):
    code = _COLD % {"dev": str(DEV_PATH), "catalog": str(CATALOG), "cache": cache, "persist": persist, "by_path": by_path}
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def _best_of(count, func):
    runs = [func() for _run in range(count)]
    return min(runs, key=lambda r: r["total"])


def cold_figures():
    _ensure_dev_path()
    startup = min(_timed([sys.executable, "-c", "pass"]) for _attempt in range(3))
    cache = tempfile.mkdtemp(prefix="aicr-bench-cache-")
    try:
        no_cache = _best_of(5, lambda: _cold(cache, False))
        _cold(cache, True)  # populate the parsed-metadata cache
        disk = _best_of(5, lambda: _cold(cache, True))
        by_path = _best_of(5, lambda: _cold(cache, False, by_path=True))
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    return {
        "python_startup_s": round(startup, 4),
        "cold_45_leaves_s": round(no_cache["total"], 4),
        "cold_breakdown_s": dict((k, round(no_cache[k], 4)) for k in ("import", "load", "resolve")),
        "cold_45_leaves_disk_cache_s": round(disk["total"], 4),
        "disk_cache_breakdown_s": dict((k, round(disk[k], 4)) for k in ("import", "load", "resolve")),
        "disk_cache_used": disk["from_disk_cache"],
        "cold_45_leaves_by_path_s": round(by_path["total"], 4),
        "leaves": no_cache["leaves"],
        "target_cold_s": 0.35,
    }


def _timed(argv):
    began = time.perf_counter()
    subprocess.run(argv, check=True, capture_output=True)
    return time.perf_counter() - began


def warm_figures():
    _ensure_dev_path()
    if str(DEV_PATH) not in sys.path:
        sys.path.insert(0, str(DEV_PATH))
    from ansible_collections.aicr.runtime.plugins.module_utils._recipe import resolve as resolve_mod
    query = {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"}
    resolve_mod.resolve(str(CATALOG), query, persist_cache=False)
    samples = []
    for _iteration in range(20):
        began = time.perf_counter()
        resolve_mod.resolve(str(CATALOG), query, persist_cache=False)
        samples.append(time.perf_counter() - began)
    snapshot = {"kind": "Snapshot", "apiVersion": "aicr.run/v1alpha2", "measurements": [
        {"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1.35.1-eks-113cf36"}},
                                     {"subtype": "node", "data": {"provider": "eks"}}]},
        {"type": "OS", "subtypes": [{"subtype": "release", "data": {"ID": "ubuntu", "VERSION_ID": "24.04"}},
                                    {"subtype": "sysctl", "data": {"/proc/sys/kernel/osrelease": "6.8.0-1028-aws"}}]},
        {"type": "NodeTopology", "subtypes": [{"subtype": "summary", "data": {"node-count": 4}},
                                              {"subtype": "label", "data": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3|gpu-0,gpu-1"}}]}]}
    snap_samples = []
    for _iteration in range(20):
        began = time.perf_counter()
        resolve_mod.resolve(str(CATALOG), {"intent": "training"}, persist_cache=False, snapshot=snapshot)
        snap_samples.append(time.perf_counter() - began)
    return {"warm_resolve_ms": round(statistics.median(samples) * 1000, 2),
            "warm_snapshot_resolve_ms": round(statistics.median(snap_samples) * 1000, 2)}


PLAYBOOK = """---
- name: an aicr.runtime task vs ping
  hosts: localhost
  gather_facts: false
  tasks:
%s
"""


def _install_collection():
    if (COLLECTIONS / "ansible_collections" / "aicr" / "runtime" / "MANIFEST.json").is_file():
        return
    dist = REPO / ".build" / "dist"
    dist.mkdir(parents=True, exist_ok=True)
    galaxy = str(VENV_BIN / "ansible-galaxy")
    subprocess.run([galaxy, "collection", "build", "--force", "--output-path", str(dist), str(REPO)], check=True, capture_output=True)
    tarball = sorted(dist.glob("aicr-runtime-*.tar.gz"))[-1]
    subprocess.run([galaxy, "collection", "install", "--force", "-p", str(COLLECTIONS), str(tarball)], check=True, capture_output=True)


def _task_durations(use_cache, cache):
    tasks = []
    for index in range(TASK_REPEATS):
        tasks.append("    - name: ping %d\n      ansible.builtin.ping:\n" % index)
        tasks.append(
            "    - name: resolve %d\n      aicr.runtime.recipe_resolve:\n        catalog: %s\n        cache_dir: %s\n        use_cache: %s\n"
            "        criteria: {service: eks, accelerator: h100, os: ubuntu, intent: training}\n"
            % (index, CATALOG, cache, "true" if use_cache else "false"))
    return _playbook_durations(tasks, ("ping", "resolve"))


def _playbook_durations(tasks, kinds):
    """{kind: [duration, ...]} of the ``runner_on_ok`` events of a localhost playbook whose task names start with a kind."""
    import ansible_runner  # pylint: disable=import-outside-toplevel

    private = tempfile.mkdtemp(prefix="aicr-bench-runner-")
    try:
        playbook = os.path.join(private, "bench.yml")
        with open(playbook, "w") as handle:
            handle.write(PLAYBOOK % "".join(tasks))
        runner = ansible_runner.run(
            private_data_dir=private, playbook=playbook, inventory="localhost ansible_connection=local", quiet=True,
            envvars={"ANSIBLE_COLLECTIONS_PATH": str(COLLECTIONS), "ANSIBLE_PYTHON_INTERPRETER": sys.executable,
                     "PATH": "%s:%s" % (VENV_BIN, os.environ.get("PATH", ""))},
        )
        if runner.rc != 0:
            raise RuntimeError("benchmark playbook failed: %s" % runner.stdout.read()[-2000:])
        durations = dict((kind, []) for kind in kinds)
        for event in runner.events:
            if event.get("event") == "runner_on_ok":
                data = event["event_data"]
                durations[data["task"].split(" ")[0]].append(float(data["duration"]))
        return durations
    finally:
        shutil.rmtree(private, ignore_errors=True)


def _gpu_nodes(count):
    from aicr_lab.controlplane.cluster import default_nodes  # pylint: disable=import-outside-toplevel

    nodes = default_nodes(count=count, gpus=8)
    for spec in nodes:
        spec["labels"].update({"feature.node.kubernetes.io/system-os_release.ID": "ubuntu",
                               "feature.node.kubernetes.io/system-os_release.VERSION_ID": "24.04",
                               "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
                               "nvidia.com/cuda.driver-version.full": "570.133.20"})
    return nodes


def cluster_facts_figures():
    """cluster_facts on the lab: in-process reads and the task through ansible-playbook, as the ``facts`` identity."""
    _install_collection()
    _ensure_dev_path()
    for path in (str(DEV_PATH), str(REPO / "tests" / "lab")):
        if path not in sys.path:
            sys.path.insert(0, path)
    from aicr_lab.kube import Kube  # pylint: disable=import-outside-toplevel
    from ansible_collections.aicr.runtime.plugins.module_utils._recipe import facts  # pylint: disable=import-outside-toplevel

    workdir = tempfile.mkdtemp(prefix="aicr-bench-facts-")
    kube = Kube.start(Path(workdir) / "controlplane", nodes=_gpu_nodes(CLUSTER_FACTS_NODES))
    try:
        kubeconfig = kube.kubeconfig_for("facts")
        params = {"kubeconfig": kubeconfig, "context": None, "from_file": None, "from_configmap": None, "nodes": None, "node_selector": None}
        reads = []
        for _round in range(TASK_REPEATS):
            began = time.perf_counter()
            result = facts.collect(params)
            reads.append(time.perf_counter() - began)
        if len(result["nodes"]) != CLUSTER_FACTS_NODES or result["conflicts"]:
            raise RuntimeError("cluster_facts saw %d of %d nodes, conflicts %s" % (len(result["nodes"]), CLUSTER_FACTS_NODES, result["conflicts"]))
        tasks = []
        for index in range(TASK_REPEATS):
            tasks.append("    - name: ping %d\n      ansible.builtin.ping:\n" % index)
            tasks.append("    - name: facts %d\n      aicr.runtime.cluster_facts:\n        kubeconfig: %s\n" % (index, kubeconfig))
        durations = _playbook_durations(tasks, ("ping", "facts"))
        ping = statistics.median(durations["ping"][1:])
        task = statistics.median(durations["facts"][1:])
        return {"cluster_facts_nodes": CLUSTER_FACTS_NODES, "cluster_facts_criteria": result["criteria"],
                "cluster_facts_engine_ms": round(statistics.median(reads[1:]) * 1000, 1),
                "cluster_facts_task_s": round(task, 4), "cluster_facts_task_overhead_s": round(task - ping, 4)}
    finally:
        kube.stop()
        shutil.rmtree(workdir, ignore_errors=True)


def task_figures():
    _install_collection()
    cache = tempfile.mkdtemp(prefix="aicr-bench-cache-")
    try:
        out = {}
        for label, use_cache in (("disk_cache", True), ("no_cache", False)):
            durations = _task_durations(use_cache, cache)
            ping = statistics.median(durations["ping"][1:])
            resolve = statistics.median(durations["resolve"][1:])
            out["task_ping_s_%s" % label] = round(ping, 4)
            out["task_recipe_resolve_s_%s" % label] = round(resolve, 4)
            out["task_overhead_s_%s" % label] = round(resolve - ping, 4)
        out["target_task_overhead_s"] = 0.3
        return out
    finally:
        shutil.rmtree(cache, ignore_errors=True)


def run():
    figures = {}
    figures.update(cold_figures())
    figures.update(warm_figures())
    figures.update(task_figures())
    figures.update(cluster_facts_figures())
    figures["meets_targets"] = (figures["cold_45_leaves_s"] <= figures["target_cold_s"]
                                and figures["task_overhead_s_disk_cache"] <= figures["target_task_overhead_s"])
    return figures


if __name__ == "__main__":
    print(json.dumps(run(), indent=2, sort_keys=True))
