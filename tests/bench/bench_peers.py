#!/usr/bin/env python
"""gated_release beside the tools users would pick instead (issue #18): same charts, DAG, cluster.

One lab control plane (kube-apiserver over TLS with RBAC, controllers, kwok nodes); the 20-component,
5-level DAG of ``bench_release`` (its synthetic charts and recipe, imported), every pod Ready 1 s after
it started (kwok's ``lab.aicr.io/ready-after``); every tool runs as the least-privilege identity
``release`` with the same helm binary (``.venv/bin/helm``, v3.17.3; ``$AICR_BENCH_HELM=helm4`` for
helm 4), from the same local chart directories, each run in namespaces of its own, created beforehand
by the admin (as an administrator hands a least-privilege identity its namespaces: ``release`` may
create a namespace but not patch one, and helm 4's ``--create-namespace`` server-side-applies it):

* ``helmfile``: helmfile built from its Go module (``tests/peers/helmfile``, the ``peers`` build group),
  a generated helmfile.yaml with ``needs:`` for the DAG, ``helmDefaults.wait: true`` (a release is
  installed with ``helm --wait``, so a dependent starts after its needs are Ready),
  ``helmfile sync --concurrency 4 --skip-deps``; the no-op re-run is ``helmfile sync`` again.
  ``helmfile apply`` (diff first) needs the helm-diff plugin; it is tried and reported.
* ``kubernetes_core_helm``: a playbook of 20 ``kubernetes.core.helm`` tasks (``wait: true``) in
  deployment order (kubernetes.core 6.6.0, from PyPI's ``ansible`` wheel, as the fidelity suite gets it).
* ``gated_release_playbook``: the recipe through ``ansible-playbook`` (one ``aicr.runtime.gated_release``
  task, concurrency 4), so both Ansible-based tools pay Ansible's start-up;
  ``gated_release_engine``: the engine called directly (``bench_release.converge``: a Python process of its own,
  imports done before its clock starts; no Ansible).

Each is run ``$AICR_BENCH_REPEAT`` (default 3) times, in a rotated order; figures are medians with
min/max. For every run the result is verified before it is counted: 20 releases ``deployed`` (their
helm Secrets), 20 Deployments available, and every dependent's install started after each of its
dependencies was Ready (its first release Secret, from the API server's audit log, was created after
the dependency's Deployment was seen available by a watch of this bench - within
``ORDER_TOLERANCE_S`` - and at least the readiness delay after the dependency's own release Secret).

Figures per tool: ``converge_wall_s`` and its ratios to the nominal critical path (5 x 1 s), to the
measured critical path (the longest chain of gate-open -> Ready durations of the engine-direct run,
i.e. this helm on this cluster with no scheduling gaps) and to the fastest peer; ``noop_rerun_wall_s``
and ``noop_mutating_calls`` (the re-run's mutating requests as ``release``, server-side dry-runs
excluded); where the time goes: ``startup_s`` (process start -> first release Secret),
``reaction_s`` (median, over dependents, of dependency Ready -> dependent's release Secret: scheduling,
helm process start, discovery and a poll's lag) and ``tail_s`` (last Ready -> the tool exits);
``cpu_s`` (the tool's process tree: CPU seconds on the controller).
``noop_task_vs_ping`` (issue item 4): in one playbook, an ``ansible.builtin.ping`` task and the
gated_release task re-run on the converged stack; both task times and the difference (target <= 0.5 s).
"""

import datetime
import json
import os
import resource
import shutil
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import http.client

import yaml

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parents[1]
sys.path.insert(0, str(BENCH_DIR))
sys.path.insert(0, str(REPO / "tests" / "integration" / "fidelity"))
import bench_release  # noqa: E402  pylint: disable=wrong-import-position
import kubernetes_core  # noqa: E402  pylint: disable=wrong-import-position

from aicr_lab.controlplane import build  # noqa: E402  pylint: disable=wrong-import-position
from aicr_lab.controlplane.cluster import default_nodes  # noqa: E402  pylint: disable=wrong-import-position
from aicr_lab.kube import Kube  # noqa: E402  pylint: disable=wrong-import-position

BIN = REPO / ".venv" / "bin"
CALLBACKS = REPO / "tests" / "peers" / "callbacks"
CONCURRENCY = 4
ORDER_TOLERANCE_S = 0.25
TARGET_OVER_CRITICAL_PATH = 1.15
TARGET_NOOP_OVER_PING_S = 0.5
PEERS = ("helmfile", "kubernetes_core_helm")
TOOLS = ("gated_release_engine", "gated_release_playbook") + PEERS
SECRET_PREFIX = "sh.helm.release.v1."


def _helm():
    return str(BIN / os.environ.get("AICR_BENCH_HELM", "helm"))


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class _Watch:
    """One watch (as admin) on a resource in every namespace, feeding each object seen to ``see``; re-listed on 410."""

    def __init__(self, rest, path, see):
        self.rest, self.path, self.see = rest, path, see
        self._stopping = threading.Event()
        self._conn = None
        self._thread = None

    def start(self):
        listing = self.rest.get(self.path)
        for item in listing.get("items", []):
            self.see(item)
        self._thread = threading.Thread(target=self._run, args=(listing["metadata"]["resourceVersion"],), daemon=True)
        self._thread.start()

    def _run(self, version):
        while not self._stopping.is_set():
            try:
                self._conn = http.client.HTTPSConnection(self.rest.host, self.rest.port, context=self.rest.context, timeout=120)
                self._conn.request("GET", "%s?watch=1&allowWatchBookmarks=true&timeoutSeconds=60&resourceVersion=%s" % (self.path, version),
                                   headers={"Accept": "application/json", "User-Agent": "aicr-bench-watch"})
                response = self._conn.getresponse()
                if response.status != 200:
                    raise RuntimeError("watch of %s answered %s" % (self.path, response.status))
                for line in response:
                    event = json.loads(line)
                    obj = event.get("object") or {}
                    if event.get("type") == "ERROR":  # 410 Gone: list again
                        listing = self.rest.get(self.path)
                        for item in listing.get("items", []):
                            self.see(item)
                        version = listing["metadata"]["resourceVersion"]
                        break
                    version = (obj.get("metadata") or {}).get("resourceVersion", version)
                    if event.get("type") in ("ADDED", "MODIFIED"):
                        self.see(obj)
            except (OSError, http.client.HTTPException, ValueError):
                if self._stopping.is_set():
                    return
                time.sleep(0.05)
            finally:
                if self._conn is not None:
                    self._conn.close()

    def stop(self):
        self._stopping.set()
        conn = self._conn
        if conn is not None and conn.sock is not None:
            try:
                conn.sock.shutdown(socket.SHUT_RDWR)
            except (OSError, ssl.SSLError):
                pass
        if self._thread is not None:
            self._thread.join(10)


class ReadyWatch:
    """When each Deployment was first seen available, and its pod created and Ready (watches as admin, every namespace).

    Keys are ``(namespace, name)``; a pod is keyed by its ``app`` label (the release name, in the synthetic charts).
    """

    def __init__(self, kube):
        self.ready = {}
        self.pod_created = {}
        self.pod_ready = {}
        self._lock = threading.Lock()
        self._watches = [_Watch(kube.rest, "/apis/apps/v1/deployments", self._see_deployment), _Watch(kube.rest, "/api/v1/pods", self._see_pod)]

    def _see_deployment(self, obj):
        status, meta = obj.get("status") or {}, obj.get("metadata") or {}
        if (status.get("availableReplicas") or 0) >= 1 and (status.get("observedGeneration") or 0) >= (meta.get("generation") or 0):
            with self._lock:
                self.ready.setdefault((meta.get("namespace"), meta.get("name")), time.time())

    def _see_pod(self, obj):
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace"), (meta.get("labels") or {}).get("app"))
        conditions = (obj.get("status") or {}).get("conditions") or []
        now = time.time()
        with self._lock:
            self.pod_created.setdefault(key, now)
            if any(c.get("type") == "Ready" and c.get("status") == "True" for c in conditions):
                self.pod_ready.setdefault(key, now)

    def start(self):
        for watch in self._watches:
            watch.start()
        return self

    def stop(self):
        for watch in self._watches:
            watch.stop()

    def wait_for(self, keys, timeout=60):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            with self._lock:
                if all(k in self.ready for k in keys):
                    return dict(self.ready)
            time.sleep(0.05)
        with self._lock:
            missing = sorted(k for k in keys if k not in self.ready)
        raise RuntimeError("Deployments never seen available: %s" % missing[:5])

    def pods(self):
        with self._lock:
            return dict(self.pod_created), dict(self.pod_ready)


def release_starts(kube, since, namespaces):
    """(namespace, release) -> when its first release Secret was created (the API server's receive time)."""
    starts = {}
    for entry in kube.audit(since=since, verb="create", resource="secrets", user=kube.user("release")):
        name = entry["name"]
        if entry["namespace"] in namespaces and name.startswith(SECRET_PREFIX) and name.endswith(".v1") and entry["code"] in (200, 201):
            starts.setdefault((entry["namespace"], name[len(SECRET_PREFIX):-len(".v1")]), entry["time"])
    return starts


def mutating_calls(kube, since):
    return [e for e in kube.audit(since=since, mutating=True, user=kube.user("release")) if "dryRun" not in (e.get("query") or "")]


def verify(kube, recipe, watch, since, began, ended, label, gates=None):  # pylint: disable=too-many-arguments,too-many-locals
    """Check the run really converged in dependency order; return where its time went.

    ``gates``: ``{component: (gate open, Ready seen)}`` epochs, where the tool reports them (the engine's result)."""
    comps = recipe["components"]
    namespace_of = {c["name"]: c["namespace"] for c in comps}
    namespaces = set(namespace_of.values())
    keys = [(c["namespace"], c["name"]) for c in comps]
    ready = watch.wait_for(keys)
    starts = release_starts(kube, since, namespaces)
    problems = []
    for comp in comps:
        key = (comp["namespace"], comp["name"])
        deployed = kube.rest.get("/api/v1/namespaces/%s/secrets" % comp["namespace"],
                                 labelSelector="owner=helm,name=%s,status=deployed" % comp["name"])["items"]
        if len(deployed) != 1:
            problems.append("%s: %d deployed release revisions" % (comp["name"], len(deployed)))
        if key not in starts:
            problems.append("%s: no release Secret created in this run" % comp["name"])
            continue
        for dep in comp["dependencies"]:
            dep_key = (namespace_of[dep], dep)
            if dep_key not in starts:
                continue  # reported above
            if starts[key] < ready[dep_key] - ORDER_TOLERANCE_S or starts[key] < starts[dep_key] + bench_release.READY_AFTER:
                problems.append("%s started %.2f s before its dependency %s was Ready" % (comp["name"], ready[dep_key] - starts[key], dep))
    if problems:
        raise RuntimeError("%s did not converge correctly: %s" % (label, "; ".join(problems[:5])))
    reactions = []
    for comp in comps:
        if comp["dependencies"]:
            deps_ready = max(ready[(namespace_of[d], d)] for d in comp["dependencies"])
            reactions.append(starts[(comp["namespace"], comp["name"])] - deps_ready)
    requests = [e for e in kube.audit(since=since, user=kube.user("release")) if e["time"] <= ended]
    return {
        "phases": _phases(comps, requests, starts, ready, watch, gates or {}),
        "critical_path_cluster_s": cluster_critical_path(comps, requests, ready),
        "api_requests": len(requests),
        "api_requests_helm": sum(1 for e in requests if e["userAgent"].lower().startswith("helm/")),
        # discovery and other non-resource requests (/api, /apis, /apis/<group>/<version>, /version, /openapi)
        "api_discovery_requests": sum(1 for e in requests if not e["resource"]),
        "startup_s": round(min(starts.values()) - began, 3),
        "reaction_s": round(statistics.median(reactions), 3),
        "reaction_max_s": round(max(reactions), 3),
        "tail_s": round(ended - max(ready[k] for k in keys), 3),
    }


def _deployments_created(requests):
    """When each Deployment was first written (helm 3 creates it - POST; helm 4 server-side-applies it - PATCH)."""
    created = {}
    for entry in requests:
        if entry["verb"] in ("create", "patch") and entry["resource"] == "deployments" and not entry["subresource"]:
            created.setdefault((entry["namespace"], entry["name"]), entry["time"])
    return created


def cluster_critical_path(comps, requests, ready):
    """The longest dependency chain of the cluster's own time per component - its Deployment written -> seen available
    (controllers, scheduler, kwok's 1 s readiness) - what no tool can go below on this cluster."""
    created = _deployments_created(requests)
    by_name = dict((c["name"], c) for c in comps)
    memo = {}

    def longest(name):
        if name not in memo:
            key = (by_name[name]["namespace"], name)
            memo[name] = (ready[key] - created[key]) + max([longest(d) for d in by_name[name]["dependencies"]] or [0.0])
        return memo[name]

    return round(max(longest(c["name"]) for c in comps), 3)


def _phases(comps, requests, starts, ready, watch, gates):  # pylint: disable=too-many-arguments,too-many-locals
    """Per component, from its release Secret to its Deployment seen available (medians over the 20 components)."""
    created, pod_ready = watch.pods()
    deployment_created, secret_deployed = _deployments_created(requests), {}
    for entry in requests:
        if entry["verb"] in ("update", "patch") and entry["resource"] == "secrets" and entry["name"].startswith(SECRET_PREFIX):
            secret_deployed.setdefault((entry["namespace"], entry["name"][len(SECRET_PREFIX):].rsplit(".v", 1)[0]), entry["time"])
    spans = {"release_secret_to_deployment_created": [], "deployment_created_to_pod_created": [], "pod_created_to_pod_ready": [],
             "pod_ready_to_deployment_available": [], "release_secret_to_helm_done": [],
             "gate_open_to_release_secret": [], "deployment_available_to_seen_ready": []}
    for comp in comps:
        key = (comp["namespace"], comp["name"])
        if comp["name"] in gates:
            spans["gate_open_to_release_secret"].append(starts[key] - gates[comp["name"]][0])
            spans["deployment_available_to_seen_ready"].append(gates[comp["name"]][1] - ready[key])
        if key in deployment_created:
            spans["release_secret_to_deployment_created"].append(deployment_created[key] - starts[key])
            if key in created:
                spans["deployment_created_to_pod_created"].append(created[key] - deployment_created[key])
        if key in created and key in pod_ready:
            spans["pod_created_to_pod_ready"].append(pod_ready[key] - created[key])
        if key in pod_ready:
            spans["pod_ready_to_deployment_available"].append(ready[key] - pod_ready[key])
        if key in secret_deployed:
            spans["release_secret_to_helm_done"].append(secret_deployed[key] - starts[key])
    return {name: round(statistics.median(values), 3) for name, values in spans.items() if values}


# --- the tools ---------------------------------------------------------------------------------


class Runner:
    """What the tools share: one cluster, a work directory, the environments of helm and Ansible."""

    def __init__(self, kube, workdir, helmfile):
        self.kube = kube
        self.workdir = Path(workdir)
        self.helmfile = helmfile
        self.kubeconfig = kube.kubeconfig_for("release")
        self.deps_collections = kubernetes_core.ensure()
        inventory = self.workdir / "inventory.yml"
        inventory.write_text(yaml.safe_dump({"all": {"hosts": {"localhost": {
            "ansible_connection": "local", "ansible_python_interpreter": sys.executable}}}}), encoding="utf-8")
        self.inventory = inventory
        self.last_helmfile = None

    def helm_env(self, tag):
        home = self.workdir / ("helm-home-%s" % tag)
        env = dict(os.environ, KUBECONFIG=self.kubeconfig, PATH="%s:%s" % (BIN, os.environ.get("PATH", "")),
                   HELM_CACHE_HOME=str(home / "cache"), HELM_CONFIG_HOME=str(home / "config"), HELM_DATA_HOME=str(home / "data"))
        return env

    def ansible_env(self, tag, times_file):
        return dict(self.helm_env(tag), ANSIBLE_COLLECTIONS_PATH=os.pathsep.join([str(REPO / ".build" / "collections"), str(self.deps_collections)]),
                    ANSIBLE_CALLBACK_PLUGINS=str(CALLBACKS), ANSIBLE_CALLBACKS_ENABLED="aicr_task_times", AICR_TASK_TIMES=str(times_file),
                    ANSIBLE_NOCOLOR="1", ANSIBLE_RETRY_FILES_ENABLED="0", ANSIBLE_LOCAL_TEMP=str(self.workdir / "ansible-tmp"))

    def timed(self, argv, env, label):
        """Run a tool; return (began epoch, wall seconds, CPU seconds of its process tree)."""
        cpu = _children_cpu()
        began, started = time.time(), time.perf_counter()
        result = subprocess.run(argv, env=env, cwd=str(self.workdir), capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        if result.returncode != 0:
            raise RuntimeError("%s failed (exit %d):\n%s\n%s" % (label, result.returncode, result.stdout[-3000:], result.stderr[-3000:]))
        return began, wall, _children_cpu() - cpu, result

    def playbook(self, tag, name, plays, times_name):
        book = self.workdir / ("%s-%s.yml" % (name, tag))
        book.write_text(yaml.safe_dump(plays, sort_keys=False), encoding="utf-8")
        times = self.workdir / ("%s-%s.json" % (times_name, tag))
        return book, times

    def run_playbook(self, tag, book, times, label):
        began, wall, cpu, _result = self.timed([str(BIN / "ansible-playbook"), "-i", str(self.inventory), str(book)],
                                               self.ansible_env(tag, times), label)
        report = json.loads(times.read_text(encoding="utf-8"))
        return began, wall, cpu, report

    # helmfile ---------------------------------------------------------------------------------

    def helmfile_yaml(self, recipe, charts_dir, tag):
        releases = []
        by_name = {c["name"]: c for c in recipe["components"]}
        for comp in recipe["components"]:
            release = {"name": comp["name"], "namespace": comp["namespace"], "chart": str(Path(charts_dir) / comp["chart"]),
                       "values": [comp["values"]]}
            if comp["dependencies"]:
                release["needs"] = ["%s/%s" % (by_name[d]["namespace"], d) for d in comp["dependencies"]]
            releases.append(release)
        doc = {"helmDefaults": {"wait": True, "timeout": 120, "createNamespace": False}, "releases": releases}
        path = self.workdir / ("helmfile-%s.yaml" % tag)
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
        return path

    def helmfile_argv(self, path, command):
        argv = [self.helmfile, "--file", str(path), "--helm-binary", _helm(), command, "--concurrency", str(CONCURRENCY)]
        return argv + (["--skip-deps"] if command == "sync" else [])

    def run_helmfile(self, recipe, charts_dir, tag, watch):
        self.last_helmfile = (recipe, charts_dir, tag)
        path = self.helmfile_yaml(recipe, charts_dir, tag)
        env = self.helm_env(tag)
        mark = self.kube.audit_mark()
        began, wall, cpu, _r = self.timed(self.helmfile_argv(path, "sync"), env, "helmfile sync")
        where = verify(self.kube, recipe, watch, mark, began, began + wall, "helmfile sync")
        mark = self.kube.audit_mark()
        _b, noop, _cpu, _r = self.timed(self.helmfile_argv(path, "sync"), env, "helmfile sync (re-run)")
        writes = mutating_calls(self.kube, mark)
        return dict(where, converge_wall_s=wall, cpu_s=cpu, noop_rerun_wall_s=noop, noop_mutating_calls=len(writes),
                    noop_mutating_kinds=sorted({"%s %s" % (e["verb"], e["resource"]) for e in writes}))

    def try_helmfile_apply(self, recipe, charts_dir, tag):
        """``helmfile apply`` (diff first, then sync what differs) on a converged stack; it needs the helm-diff plugin."""
        path = self.helmfile_yaml(recipe, charts_dir, tag)
        mark = self.kube.audit_mark()
        started = time.perf_counter()
        result = subprocess.run(self.helmfile_argv(path, "apply"), env=self.helm_env(tag), cwd=str(self.workdir),
                                capture_output=True, text=True, check=False)
        wall = time.perf_counter() - started
        if result.returncode != 0:
            lines = (result.stderr + result.stdout).splitlines()
            errors = sorted({line.strip() for line in lines if line.strip().startswith("Error:")}) or [line for line in lines if line.strip()][-2:]
            return {"ran": False, "exit": result.returncode, "wall_s": round(wall, 2), "message": " / ".join(errors)[:400]}
        return {"ran": True, "noop_rerun_wall_s": round(wall, 2), "noop_mutating_calls": len(mutating_calls(self.kube, mark))}

    # kubernetes.core.helm -------------------------------------------------------------------

    def run_kubernetes_core(self, recipe, charts_dir, tag, watch):
        tasks = []
        for comp in recipe["components"]:  # the recipe lists components in deployment order (level by level)
            tasks.append({"name": comp["name"], "kubernetes.core.helm": {
                "kubeconfig": self.kubeconfig, "binary_path": _helm(), "name": comp["name"],
                "chart_ref": str(Path(charts_dir) / comp["chart"]), "release_namespace": comp["namespace"], "create_namespace": False,
                "values": comp["values"], "wait": True, "wait_timeout": "120s"}})
        play = {"name": "kubernetes.core.helm, in deployment order", "hosts": "localhost", "gather_facts": False, "tasks": tasks}
        book, times = self.playbook(tag, "kcore", [play], "kcore-times")
        mark = self.kube.audit_mark()
        began, wall, cpu, report = self.run_playbook(tag, book, times, "kubernetes.core.helm playbook")
        where = verify(self.kube, recipe, watch, mark, began, began + wall, "kubernetes.core.helm playbook")
        durations = [t["end"] - t["start"] for t in report["tasks"] if t["end"]]
        mark = self.kube.audit_mark()
        _b, noop, _cpu, again = self.run_playbook(tag, book, times, "kubernetes.core.helm playbook (re-run)")
        writes = mutating_calls(self.kube, mark)
        return dict(where, converge_wall_s=wall, cpu_s=cpu, task_median_s=round(statistics.median(durations), 3),
                    noop_rerun_wall_s=noop, noop_mutating_calls=len(writes), noop_changed_tasks=sum(1 for t in again["tasks"] if t["changed"]))

    # gated_release ----------------------------------------------------------------------------

    def gated_release_task(self, recipe, charts_dir, tag):
        return {"name": "Roll out the recipe, gated on readiness", "aicr.runtime.gated_release": {
            "recipe": recipe, "kubeconfig": self.kubeconfig, "helm_binary": _helm(),
            "repository_mirrors": {bench_release.REPOSITORY: str(charts_dir)}, "concurrency": CONCURRENCY, "timeout": 120,
            "overall_timeout": 600, "state": "present", "stack": "peers-%s" % tag, "lease_namespace": "aicr-system",
            "cache_dir": str(self.workdir / ("gr-cache-%s" % tag))}}

    def run_gated_release(self, recipe, charts_dir, tag, watch):
        task = self.gated_release_task(recipe, charts_dir, tag)
        book, times = self.playbook(tag, "gr", [{"name": "gated_release", "hosts": "localhost", "gather_facts": False, "tasks": [task]}], "gr-times")
        mark = self.kube.audit_mark()
        began, wall, cpu, report = self.run_playbook(tag, book, times, "gated_release playbook")
        where = verify(self.kube, recipe, watch, mark, began, began + wall, "gated_release playbook")
        mark = self.kube.audit_mark()
        _b, noop, _cpu, again = self.run_playbook(tag, book, times, "gated_release playbook (re-run)")
        writes = mutating_calls(self.kube, mark)
        # issue item 4: the same task re-run beside an ansible.builtin.ping task, in one playbook
        ping = {"name": "Ping", "ansible.builtin.ping": {}}
        book, times = self.playbook(tag, "gr-ping", [{"name": "ping, then the no-op rollout", "hosts": "localhost", "gather_facts": False,
                                                      "tasks": [ping, task]}], "gr-ping-times")
        mark = self.kube.audit_mark()
        _b, _wall, _cpu, side = self.run_playbook(tag, book, times, "ping + gated_release playbook")
        side_writes = mutating_calls(self.kube, mark)
        ping_s, task_s = [t["end"] - t["start"] for t in side["tasks"]]
        task_time = [t["end"] - t["start"] for t in report["tasks"]][0]
        return dict(where, converge_wall_s=wall, cpu_s=cpu, task_s=round(task_time, 3), ansible_overhead_s=round(wall - task_time, 3),
                    noop_rerun_wall_s=noop, noop_mutating_calls=len(writes) + len(side_writes),
                    noop_changed_tasks=sum(1 for t in again["tasks"] + side["tasks"] if t["changed"]),
                    noop_ping_task_s=round(ping_s, 3), noop_gated_release_task_s=round(task_s, 3))

    def run_engine(self, recipe, charts_dir, tag, watch):
        mark = self.kube.audit_mark()
        # the engine in a process of its own, imports done before its clock starts (bench_release.converge)
        wall, noop, result = bench_release.converge(self.kube, str(self.workdir / ("engine-%s" % tag)), CONCURRENCY, recipe, charts_dir, tag)
        began = result["bench_began"]
        gates = {}
        for comp in result["components"]:
            opened = datetime.datetime.strptime(comp["started"], "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=datetime.timezone.utc).timestamp()
            gates[comp["name"]] = (opened, opened + comp["duration"])
        where = verify(self.kube, recipe, watch, mark, began, began + wall, "gated_release engine", gates)
        return dict(where, converge_wall_s=wall, cpu_s=result["bench_cpu_s"], noop_rerun_wall_s=noop,
                    noop_mutating_calls=0, critical_path_measured_s=bench_release.critical_path(result),
                    helm_install_overhead_s=statistics.median([c["duration"] for c in result["components"]]) - bench_release.READY_AFTER)


# --- figures -----------------------------------------------------------------------------------


def _stats(values):
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3), "max": round(max(values), 3),
            "runs": [round(v, 3) for v in values]}


def summarise(runs, nominal):
    measured = statistics.median(r["gated_release_engine"]["critical_path_measured_s"] for r in runs)
    medians = {tool: statistics.median(r[tool]["converge_wall_s"] for r in runs) for tool in TOOLS}
    fastest = min(PEERS, key=lambda p: medians[p])
    tools = {}
    for tool in TOOLS:
        rows = [r[tool] for r in runs]
        figures = {key: _stats([row.get(key) for row in rows])
                   for key in sorted(set().union(*rows)) if all(isinstance(row.get(key), (int, float)) for row in rows)}
        figures["wall_over_nominal_critical_path"] = round(medians[tool] / nominal, 3)
        figures["wall_over_measured_critical_path"] = round(medians[tool] / measured, 3)
        figures["wall_over_fastest_peer"] = round(medians[tool] / medians[fastest], 3)
        figures["noop_mutating_kinds"] = sorted({k for row in rows for k in row.get("noop_mutating_kinds", [])})
        figures["phases_median_s"] = {phase: _stats([row["phases"][phase] for row in rows if phase in row["phases"]])["median"]
                                      for phase in sorted(set().union(*[row["phases"] for row in rows]))}
        tools[tool] = figures
    noop_task = tools["gated_release_playbook"]["noop_gated_release_task_s"]["median"]
    ping = tools["gated_release_playbook"]["noop_ping_task_s"]["median"]
    diffs = [r["gated_release_playbook"]["noop_gated_release_task_s"] - r["gated_release_playbook"]["noop_ping_task_s"] for r in runs]
    cluster = statistics.median(r[tool]["critical_path_cluster_s"] for r in runs for tool in TOOLS)
    for tool in TOOLS:
        tools[tool]["wall_over_cluster_critical_path"] = round(medians[tool] / cluster, 3)
        # the cluster's path in this tool's own runs: on one machine a tool's own CPU slows the control plane beside it
        own = statistics.median(r[tool]["critical_path_cluster_s"] for r in runs)
        tools[tool]["wall_over_own_runs_cluster_critical_path"] = round(medians[tool] / own, 3)
    return {
        "critical_path_measured_s": _stats([r["gated_release_engine"]["critical_path_measured_s"] for r in runs]),
        # the cluster's own chain (Deployment written -> available), over every tool's runs
        "critical_path_cluster_s": _stats([r[tool]["critical_path_cluster_s"] for r in runs for tool in TOOLS]),
        "fastest_peer": fastest,
        "tools": tools,
        "noop_task_vs_ping": {"gated_release_task_s": noop_task, "ping_task_s": ping, "difference_s": _stats(diffs),
                              "target_difference_s": TARGET_NOOP_OVER_PING_S,
                              "within_target": statistics.median(diffs) <= TARGET_NOOP_OVER_PING_S},
        "gated_release_faster_than_every_peer": all(medians["gated_release_playbook"] < medians[p] for p in PEERS),
    }


def run(repeats=None):
    repeats = repeats or int(os.environ.get("AICR_BENCH_REPEAT", "3"))
    helmfile = build.ensure_binaries(groups=["peers"])["helmfile"]
    workdir = Path(tempfile.mkdtemp(prefix="bench-peers-"))
    # 4 tools x 20 pods per repeat stay on the nodes (nothing is deleted while others are measured)
    kube = Kube.start(workdir / "controlplane", nodes=default_nodes(count=3 + repeats))
    watch = ReadyWatch(kube).start()
    try:
        runner = Runner(kube, workdir, helmfile)
        runners = {"gated_release_engine": runner.run_engine, "gated_release_playbook": runner.run_gated_release,
                   "helmfile": runner.run_helmfile, "kubernetes_core_helm": runner.run_kubernetes_core}
        runs = []
        for index in range(repeats):
            row = {}
            order = TOOLS[index % len(TOOLS):] + TOOLS[:index % len(TOOLS)]
            for tool in order:
                tag = "%s%d" % ({"gated_release_engine": "ge", "gated_release_playbook": "gp", "helmfile": "hf",
                                 "kubernetes_core_helm": "kc"}[tool], index)
                charts_dir = workdir / ("charts-%s" % tag)
                recipe = bench_release.synthetic_recipe(charts_dir, tag=tag)
                for namespace in sorted({c["namespace"] for c in recipe["components"]}):
                    kube.rest.create("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
                row[tool] = runners[tool](recipe, charts_dir, tag, watch)
            runs.append(row)
        nominal = bench_release.LEVELS * bench_release.READY_AFTER
        figures = {
            "cluster": "lab control plane %s (kwok nodes), identity release" % kube.rest.get("/version")["gitVersion"],
            "helm": subprocess.run([_helm(), "version", "--short"], capture_output=True, text=True, check=False).stdout.strip(),
            "helmfile": build.versions("peers")["helmfile"],
            "kubernetes_core": kubernetes_core.COLLECTION_VERSION,
            "components": 20, "levels": bench_release.LEVELS, "readiness_s": bench_release.READY_AFTER, "concurrency": CONCURRENCY,
            "repeats": repeats, "critical_path_nominal_s": nominal, "target_wall_over_critical_path": TARGET_OVER_CRITICAL_PATH,
        }
        figures.update(summarise(runs, nominal))
        figures["helmfile_apply"] = runner.try_helmfile_apply(*runner.last_helmfile)  # on the last converged helmfile stack
        return figures
    finally:
        watch.stop()
        kube.stop()
        shutil.rmtree(str(workdir), ignore_errors=True)


if __name__ == "__main__":
    print(json.dumps(run(int(sys.argv[1]) if len(sys.argv) > 1 else None), indent=2))
