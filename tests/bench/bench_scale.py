#!/usr/bin/env python
"""Scale: one control node converging 1, 2, 5 and 10 inventory hosts with forks=10 (issues #8, #18).

Every host is a cluster to Ansible - its own kubeconfig **context** (all in one kubeconfig file, each
the least-privilege identity ``site`` with the host's namespace), its own stack, namespace and Lease (in ``aicr-system``, the role default, one per stack) -
on one real control plane of the lab (a fleet of real API servers would not fit a 2-core machine
beside the control node; the API server is not what this measures). All hosts take the example
recipe (6 components) from one chart repository. The headline is the wall time of
``ansible-playbook playbooks/site.yml`` for 10 hosts divided by that for 1 (target <= 2.5), and the
curve for 1, 2, 5, 10 hosts; every run starts from nothing installed, so each does the full rollout.
Each host count is run ``$AICR_BENCH_REPEAT`` (default 3) times: medians with min/max, the ratio
taken within each repeat. After each run its namespaces are deleted (and waited for), so every run
finds the same cluster.

The ratio depends on how long the cluster takes: while components become Ready the control node
is idle, and 10 hosts wait in parallel; the CPU work (Ansible, one module process per host, one helm
process per component, and here also the control plane and kwok) adds up. So it is measured at two
pod readiness delays (kwok's ``lab.aicr.io/ready-after`` on every component's pods):

* ``readiness_1s`` (the headline): pods Ready 1 s after they start - still far quicker than real
  pods (image pulls, start-up); 1, 2, 5 and 10 hosts;
* ``readiness_0.2s`` (stress): the control node's CPU is the bottleneck on a 2-core machine; 1 and 10 hosts.

For each, the CPU seconds per host on the controller (the ansible-playbook process tree: Ansible,
modules, helm - what sizes an AWX execution node) and of the control plane's processes (which on a
real fleet run elsewhere), and the floor that CPU puts on the wall time (CPU / cores) are reported,
so the ratio can be read against what the machine allows.
"""

import json
import os
import resource
import shutil
import statistics
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

sys.path.insert(0, str(REPO / "tests" / "integration"))
from lab_support import example_catalog  # noqa: E402  pylint: disable=wrong-import-position

EXAMPLE_REPOSITORY = "https://charts.aicr.example/examples"
TARGET_RATIO = 2.5
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
HOST_COUNTS = (1, 2, 5, 10)
STRESS_HOST_COUNTS = (1, 10)
NAMESPACE_GONE_TIMEOUT = 300


def _catalog(workdir, namespace, ready_after):
    """The example catalog for one host: its components in ``namespace``, their pods Ready ``ready_after`` s after start."""
    # every component and its health check in the host's namespace (what the tests do)
    target = example_catalog(workdir / ("catalog-%s" % namespace), namespace)
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


def _kubeconfig(kube, path, hosts):
    """One kubeconfig file with a context per host: the identity ``site``, the host's namespace as the context's default."""
    with open(kube.kubeconfig_for("site"), encoding="utf-8") as handle:
        config = yaml.safe_load(handle)
    current = next(c["context"] for c in config["contexts"] if c["name"] == config["current-context"])
    config["contexts"] = [{"name": name, "context": dict(current, namespace=namespace)} for name, _catalog, namespace in hosts]
    config["current-context"] = hosts[0][0]
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return path


def _inventory(kubeconfig, hosts, charts_url):
    inventory = {}
    for name, catalog, namespace in hosts:
        inventory[name] = {
            "ansible_connection": "local",
            "ansible_python_interpreter": sys.executable,
            "aicr_catalog": str(catalog),
            "aicr_criteria": {"service": "kind", "accelerator": "h100", "intent": "training"},
            "aicr_kubeconfig": str(kubeconfig),
            "aicr_context": name,
            "aicr_repository_mirrors": {EXAMPLE_REPOSITORY: charts_url},
            "cluster_runtime_helm_binary": str(BIN / "helm"),
            "cluster_runtime_stack": namespace,
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


def _delete_namespaces(kube, namespaces):
    """Delete the run's namespaces and wait until they are gone (a deadline; not a sleep)."""
    for namespace in namespaces:
        kube.rest.delete("/api/v1/namespaces/%s" % namespace, propagationPolicy="Background")
    deadline = time.monotonic() + NAMESPACE_GONE_TIMEOUT
    while any(kube.get("/api/v1/namespaces/%s" % namespace) is not None for namespace in namespaces):
        if time.monotonic() > deadline:
            raise RuntimeError("namespaces %s not deleted within %d s" % (", ".join(namespaces), NAMESPACE_GONE_TIMEOUT))
        time.sleep(0.2)


def _converge(kube, workdir, count, charts_url, ready_after, repeat):
    tag = "%d-%s-r%d" % (count, str(ready_after).replace(".", "-"), repeat)
    hosts = []
    for index in range(count):
        namespace = "scale-%s-%d" % (tag, index)
        kube.rest.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        hosts.append(("cluster-%02d" % index, _catalog(workdir, namespace, ready_after), namespace))
    kubeconfig = _kubeconfig(kube, workdir / ("kubeconfig-%s" % tag), hosts)
    inventory = workdir / ("inventory-%s.json" % tag)
    inventory.write_text(json.dumps(_inventory(kubeconfig, hosts, charts_url)), encoding="utf-8")
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
    # every host converged its own stack through its own context: the stack's release Secrets are in its namespace
    for name, _catalog_dir, namespace in hosts:
        deployed = kube.rest.get("/api/v1/namespaces/%s/secrets" % namespace, labelSelector="owner=helm,status=deployed")["items"]
        if not deployed:
            raise RuntimeError("host %s: no deployed release in its namespace %s" % (name, namespace))
    _delete_namespaces(kube, [namespace for _name, _catalog_dir, namespace in hosts])
    return {"wall_s": elapsed, "controller_cpu_s": playbook_cpu, "control_plane_cpu_s": plane_cpu}


def _stats(values):
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3),
            "runs": [round(v, 3) for v in values]}


def _measure(kube, workdir, charts_url, ready_after, counts, repeats):
    cores = os.cpu_count() or 1
    runs = []
    for repeat in range(repeats):
        runs.append({count: _converge(kube, workdir, count, charts_url, ready_after, repeat) for count in counts})
    curve = {}
    for count in counts:
        rows = [r[count] for r in runs]
        curve["%02d" % count] = {
            "wall_s": _stats([row["wall_s"] for row in rows]),
            "ratio_to_one_host": _stats([r[count]["wall_s"] / r[1]["wall_s"] for r in runs]),
            "controller_cpu_seconds_per_host": _stats([row["controller_cpu_s"] / count for row in rows]),
            "control_plane_cpu_seconds_per_host": _stats([row["control_plane_cpu_s"] / count for row in rows]),
            "cpu_floor_seconds": _stats([(row["controller_cpu_s"] + row["control_plane_cpu_s"]) / cores for row in rows]),
        }
    top = "%02d" % max(counts)
    ratio = curve[top]["ratio_to_one_host"]["median"]
    return {
        "workload_ready_after_s": ready_after,
        "repeats": repeats,
        "hosts": curve,
        "one_cluster_seconds": curve["01"]["wall_s"]["median"],
        "ten_clusters_forks10_seconds": curve[top]["wall_s"]["median"],
        "ratio": ratio,
        "within_target": ratio <= TARGET_RATIO,
        "controller_cpu_seconds_per_cluster": curve[top]["controller_cpu_seconds_per_host"]["median"],
        "cpu_seconds_per_cluster": round(curve[top]["controller_cpu_seconds_per_host"]["median"]
                                         + curve[top]["control_plane_cpu_seconds_per_host"]["median"], 3),
        "ten_clusters_cpu_floor_seconds": curve[top]["cpu_floor_seconds"]["median"],
    }


def _ansible_settings():
    """The ansible.cfg the runs read (``$ANSIBLE_CONFIG``, else ./ansible.cfg, ~/.ansible.cfg, /etc/ansible) and its
    ``internal_poll_interval`` (ini only: it has no environment variable), which moves the controller's CPU: while the
    hosts run, ansible-playbook's main process checks its workers that often (1 ms by default; see "Fleet" in
    docs/modules/gated_release.md). Recorded so that runs under different settings are told apart."""
    from ansible import constants  # pylint: disable=import-outside-toplevel

    return {"config_file": constants.CONFIG_FILE, "internal_poll_interval_s": constants.DEFAULT_INTERNAL_POLL_INTERVAL}


def run(repeats=None):
    repeats = repeats or int(os.environ.get("AICR_BENCH_REPEAT", "3"))
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    charts = start_chart_repo(workdir)
    kube = Kube.start(workdir / "controlplane")
    try:
        headline = _measure(kube, workdir, charts.url, 1.0, HOST_COUNTS, repeats)
        stress = _measure(kube, workdir, charts.url, 0.2, STRESS_HOST_COUNTS, repeats)
    finally:
        kube.stop()
        charts.stop()
        shutil.rmtree(str(workdir), ignore_errors=True)
    return {
        "cores": os.cpu_count(),
        "cluster": "one lab control plane; per inventory host a kubeconfig context (one file), namespace, stack and Lease; identity site",
        "forks": 10,
        "ansible": _ansible_settings(),
        "target_ratio": TARGET_RATIO,
        "readiness_1s": headline,
        "readiness_0.2s": stress,
        "ratio": headline["ratio"],
        "within_target": headline["within_target"],
    }


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else None), indent=2))
