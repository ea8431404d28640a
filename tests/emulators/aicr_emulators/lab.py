"""``aicr-lab``: start or stop the whole local lab — Kubernetes API emulator, example chart
repository and fabric simulator — as background processes that outlive the command.

``make demo``, molecule's ``default`` scenario and anyone trying the collection by hand use it:

    aicr-lab up --dir .build/lab        # prints the lab description (JSON) when every server is ready
    aicr-lab status --dir .build/lab
    aicr-lab down --dir .build/lab

``<dir>/lab.json`` describes the running lab: the kubeconfig path, each server's URL, the fabric
simulator's endpoint, CA and credential file, and the process ids. Every server listens on
127.0.0.1 only, on a free port.
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

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
    deadline = time.monotonic() + READY_TIMEOUT
    while time.monotonic() < deadline:
        if ready_file is not None and ready_file.is_file():
            return process.pid, json.loads(ready_file.read_text(encoding="utf-8"))["url"]
        for line in out_path.read_text(encoding="utf-8").splitlines():
            if line.startswith("ready "):
                return process.pid, line.split(None, 1)[1].strip()
        if process.poll() is not None:
            break
        time.sleep(0.05)
    process.kill()
    raise LabError("%s did not become ready; see %s" % (name, err_path))


def up(lab_dir, nodes=2, machines=2, with_fabric=True):
    """Start the lab in ``lab_dir`` and return its description (also written to lab.json)."""
    lab_dir = Path(lab_dir).resolve()
    lab_dir.mkdir(parents=True, exist_ok=True)
    if (lab_dir / "lab.json").is_file():
        down(lab_dir)
    python = sys.executable
    kubeconfig = lab_dir / "kubeconfig"
    lab = {"dir": str(lab_dir), "kubeconfig": str(kubeconfig), "pids": {}}
    try:
        pid, lab["kube_url"] = _spawn("kube-emulator", [python, "-m", "aicr_emulators.kube.cli", "--port", "0", "--kubeconfig", str(kubeconfig),
                                                        "--nodes-file", str(_nodes_file(lab_dir, nodes, machines if with_fabric else 0))], lab_dir)
        lab["pids"]["kube-emulator"] = pid
        pid, lab["charts_url"] = _spawn("chart-repo", [python, "-m", "aicr_emulators.charts.cli", "--port", "0", "--charts", str(REPO / "examples" / "charts"),
                                                       "--url-prefix", "/examples"], lab_dir)
        lab["pids"]["chart-repo"] = pid
        lab["repository_mirrors"] = {EXAMPLE_REPOSITORY: lab["charts_url"]}
        if with_fabric:
            info = lab_dir / "fabric.json"
            pid, lab["fabric_url"] = _spawn("fabric-sim", [python, "-m", "aicr_emulators.fabric.cli", "--port", "0", "--state-dir", str(lab_dir / "fabric"),
                                                           "--machines", str(machines), "--kubeconfig", str(kubeconfig), "--info-file", str(info)],
                                            lab_dir, ready_file=info)
            lab["pids"]["fabric-sim"] = pid
            lab["fabric_info"] = str(info)
    except LabError:
        _terminate(lab["pids"])
        raise
    (lab_dir / "lab.json").write_text(json.dumps(lab, indent=2, sort_keys=True), encoding="utf-8")
    return lab


def _nodes_file(lab_dir, nodes, machines):
    """Nodes of the emulator: node-0 … node-N; the first ``machines`` are composable fabric machines.

    A fabric machine's node carries the ``fsas-cdi://<machine uuid>`` providerID its cloud provider
    would give it, with the uuid the simulator derives for machine ``m<index>``.
    """
    from aicr_emulators.fabric.state import _uid  # pylint: disable=import-outside-toplevel

    specs = []
    for index in range(nodes):
        name = "node-%d" % index
        spec = {
            "name": name,
            "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64", "nvidia.com/gpu.present": "true"},
            "capacity": {"cpu": "16", "memory": "65536Mi", "pods": "110", "ephemeral-storage": "100Gi", "nvidia.com/gpu": "0"},
            "providerID": "emulator://aicr/%s" % name,
        }
        if index < machines:
            spec["providerID"] = "fsas-cdi://%s" % _uid("machine", "m%d" % index)
        specs.append(spec)
    path = lab_dir / "nodes.json"
    path.write_text(json.dumps(specs, indent=2), encoding="utf-8")
    return path


def _terminate(pids):
    for pid in pids.values():
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            continue
    deadline = time.monotonic() + 10
    for pid in pids.values():
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.05)
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A terminated child of ours stays a zombie until reaped; reap it when it is ours.
    try:
        reaped, _status = os.waitpid(pid, os.WNOHANG)
        return reaped == 0
    except ChildProcessError:
        with open("/proc/%d/stat" % pid, "r", encoding="utf-8") as stat:
            return stat.read().split()[2] != "Z"


def load(lab_dir):
    path = Path(lab_dir) / "lab.json"
    if not path.is_file():
        raise LabError("no lab in %s (run: aicr-lab up --dir %s)" % (lab_dir, lab_dir))
    return json.loads(path.read_text(encoding="utf-8"))


def down(lab_dir):
    """Stop every server of the lab in ``lab_dir``; a lab already down is fine."""
    path = Path(lab_dir) / "lab.json"
    if not path.is_file():
        return False
    _terminate(json.loads(path.read_text(encoding="utf-8"))["pids"])
    path.unlink()
    return True


def main(argv=None):
    parser = argparse.ArgumentParser(prog="aicr-lab", description=__doc__.splitlines()[0])
    parser.add_argument("action", choices=["up", "down", "status"])
    parser.add_argument("--dir", default=str(REPO / ".build" / "lab"), help="lab directory (default: %(default)s)")
    parser.add_argument("--nodes", type=int, default=2, help="Kubernetes nodes of the emulator")
    parser.add_argument("--machines", type=int, default=2, help="fabric machines (one per node)")
    parser.add_argument("--no-fabric", action="store_true", help="do not start the fabric simulator")
    args = parser.parse_args(argv)
    try:
        if args.action == "up":
            lab = up(args.dir, nodes=args.nodes, machines=args.machines, with_fabric=not args.no_fabric)
        elif args.action == "status":
            lab = load(args.dir)
            lab["running"] = {name: _alive(pid) for name, pid in lab["pids"].items()}
        else:
            lab = {"stopped": down(args.dir)}
    except LabError as exc:
        sys.stderr.write("aicr-lab: %s\n" % exc)
        return 1
    print(json.dumps(lab, indent=2, sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
