"""The whole local lab — a real Kubernetes control plane, the example chart repository and the fabric
simulator — as background processes that outlive the command that started them.

``make demo``, molecule's ``default`` scenario, the tutorials and anyone trying the collection by
hand use it through ``aicr-lab`` (see ``cli.py``):

    aicr-lab up --dir .build/lab        # builds or reuses the binaries, prints lab.json when ready
    aicr-lab status --dir .build/lab
    aicr-lab down --dir .build/lab      # nothing is left running

``<dir>/lab.json`` describes the running lab: ``kubeconfig`` (admin, a client certificate; also
``<dir>/kubeconfig``), ``kubeconfigs`` (least-privilege identity -> kubeconfig; also
``<dir>/identities/<identity>.kubeconfig``), ``controlplane`` (server, CA, ports,
pids, audit log), the chart repository's URL and mirrors, the fabric simulator's endpoint, CA
and credential file, and every process id. Every server listens on 127.0.0.1 only, on a free port.
"""

import json
import subprocess
import sys
import time
from pathlib import Path

from aicr_lab.controlplane import processes
from aicr_lab.controlplane.cluster import ControlPlane, default_nodes

REPO = Path(__file__).resolve().parents[3]
EXAMPLE_REPOSITORY = "https://charts.aicr.example/examples"
READY_TIMEOUT = 60


class LabError(RuntimeError):
    """A server did not start, or the lab directory is not a lab."""


def _spawn(name, argv, lab_dir, ready_file=None):
    """Start a server detached from this process; return (pid, url) once it is ready.

    Ready is the line ``ready <url>`` on its output or, with ``ready_file``, that JSON file
    appearing (its ``url``).
    """
    out_path = lab_dir / ("%s.out" % name)
    err_path = lab_dir / ("%s.log" % name)
    if ready_file is not None and ready_file.exists():
        ready_file.unlink()  # left by an earlier lab: only this server's own file means ready
    with open(out_path, "w", encoding="utf-8") as out, open(err_path, "w", encoding="utf-8") as err:
        process = subprocess.Popen(argv, stdout=out, stderr=err, stdin=subprocess.DEVNULL, start_new_session=True)  # pylint: disable=consider-using-with
    found = {}

    def ready():
        if ready_file is not None and ready_file.is_file():
            found["url"] = json.loads(ready_file.read_text(encoding="utf-8"))["url"]
            return True
        for line in out_path.read_text(encoding="utf-8").splitlines():
            if line.startswith("ready "):
                found["url"] = line.split(None, 1)[1].strip()
                return True
        return False

    try:
        processes.wait_for(ready, READY_TIMEOUT, "%s to be ready" % name, process, str(err_path))
    except processes.ProcessError as exc:
        process.kill()
        raise LabError(str(exc))
    return process.pid, found["url"]


def up(lab_dir, nodes=2, machines=2, with_fabric=True, log=None):
    """Start the lab in ``lab_dir`` and return its description (also written to lab.json)."""
    lab_dir = Path(lab_dir).resolve()
    lab_dir.mkdir(parents=True, exist_ok=True)
    if (lab_dir / "lab.json").is_file():
        down(lab_dir)
    python = sys.executable
    started = time.monotonic()
    plane = ControlPlane(lab_dir / "controlplane", nodes=default_nodes(nodes, machines if with_fabric else 0), log=log)
    try:
        plane.start()
    except processes.ProcessError as exc:
        raise LabError("the control plane did not start: %s" % exc)
    lab = {"dir": str(lab_dir), "kubeconfig": plane.kubeconfig, "kubeconfigs": dict(plane.kubeconfigs), "pids": {}}
    try:
        pid, lab["charts_url"] = _spawn("chart-repo", [python, "-m", "aicr_lab.charts.cli", "--port", "0", "--charts", str(REPO / "examples" / "charts"),
                                                       "--url-prefix", "/examples"], lab_dir)
        lab["pids"]["chart-repo"] = pid
        lab["repository_mirrors"] = {EXAMPLE_REPOSITORY: lab["charts_url"]}
        if with_fabric:
            info = lab_dir / "fabric.json"
            # the simulator stands in for the device plugin too: it patches the nodes' GPU capacity
            pid, lab["fabric_url"] = _spawn("fabric-sim", [python, "-m", "aicr_lab.fabric.cli", "--port", "0", "--state-dir", str(lab_dir / "fabric"),
                                                           "--machines", str(machines), "--kubeconfig", plane.kubeconfig, "--info-file", str(info)],
                                            lab_dir, ready_file=info)
            lab["pids"]["fabric-sim"] = pid
            lab["fabric_info"] = str(info)
    except LabError:
        processes.terminate(list(lab["pids"].values()))
        plane.stop()
        raise
    # short paths for people and tutorials: $LAB/kubeconfig (admin), $LAB/identities/<identity>.kubeconfig
    for link, target in ((lab_dir / "kubeconfig", plane.kubeconfig), (lab_dir / "identities", str(plane.dir / "identities"))):
        if link.is_symlink() or link.exists():
            link.unlink()
        link.symlink_to(target)
    lab["controlplane"] = plane.describe()
    lab["kube_url"] = plane.server
    lab["started_seconds"] = round(time.monotonic() - started, 2)
    (lab_dir / "lab.json").write_text(json.dumps(lab, indent=2, sort_keys=True), encoding="utf-8")
    return lab


def load(lab_dir):
    path = Path(lab_dir) / "lab.json"
    if not path.is_file():
        raise LabError("no lab in %s (run: aicr-lab up --dir %s)" % (lab_dir, lab_dir))
    return json.loads(path.read_text(encoding="utf-8"))


def all_pids(lab):
    """Every process of a lab description: its servers and the control plane's."""
    pids = dict(lab["pids"])
    pids.update({"controlplane/%s" % name: pid for name, pid in lab["controlplane"]["pids"].items()})
    return pids


def status(lab_dir):
    lab = load(lab_dir)
    lab["running"] = {name: processes.alive(pid) for name, pid in all_pids(lab).items()}
    return lab


def down(lab_dir):
    """Stop every process of the lab in ``lab_dir``; a lab already down is fine."""
    path = Path(lab_dir) / "lab.json"
    if not path.is_file():
        return False
    lab = json.loads(path.read_text(encoding="utf-8"))
    processes.terminate(list(lab["pids"].values()))
    plane = lab.get("controlplane") or {}
    # controllers first, etcd last (as ControlPlane.stop)
    order = ["kwok", "kube-scheduler", "kube-controller-manager", "kube-apiserver", "etcd"]
    for name in order:  # one at a time (see ControlPlane.stop)
        processes.terminate([plane.get("pids", {}).get(name)])
    path.unlink()
    return True
