#!/usr/bin/env python
"""`make demo`: the main job, end to end, on the embedded defaults.

Starts the local stand-ins a real site would already have — the Kubernetes API
emulator, a Helm chart repository serving examples/charts, and the composable
fabric simulator — on 127.0.0.1, then runs playbooks/site.yml against
examples/inventory exactly as a user would: hardware first, then the example
recipe, gated on readiness. It runs the playbook a second time to show that a
converged cluster reports no change, prints what the cluster now holds, and
stops everything it started.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
EXAMPLE_REPOSITORY = "https://charts.aicr.example/examples"


def start(name, argv, log_dir):
    """Start a helper server; return (process, url) once it prints `ready <url>`."""
    log = open(log_dir / ("%s.log" % name), "w", encoding="utf-8")  # pylint: disable=consider-using-with
    process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)  # pylint: disable=consider-using-with
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if line.startswith("ready "):
            return process, line.split(None, 1)[1].strip()
        if not line and process.poll() is not None:
            break
    process.kill()
    raise SystemExit("demo: %s did not become ready; see %s" % (name, log_dir / ("%s.log" % name)))


def run(argv, **kwargs):
    print("\n$ %s" % " ".join(str(arg) for arg in argv), flush=True)
    return subprocess.run(argv, check=False, **kwargs)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workdir", default=str(REPO / ".build" / "demo"))
    parser.add_argument("--helm", default=str(BIN / "helm"), help="helm binary (e.g. .venv/bin/helm4)")
    args = parser.parse_args()
    workdir = Path(args.workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    kubeconfig = workdir / "kubeconfig"

    processes = []
    try:
        kube, kube_url = start("kube-emulator", [str(BIN / "aicr-kube-emulator"), "--port", "0", "--kubeconfig", str(kubeconfig), "--nodes", "2"], workdir)
        processes.append(kube)
        charts, charts_url = start(
            "chart-repo", [str(BIN / "aicr-chart-repo"), "--port", "0", "--charts", str(REPO / "examples" / "charts"), "--url-prefix", "/examples"], workdir
        )
        processes.append(charts)
        print("Kubernetes API emulator: %s (kubeconfig %s)" % (kube_url, kubeconfig))
        print("Chart repository:        %s (mirrors %s)" % (charts_url, EXAMPLE_REPOSITORY))

        extra_vars = {
            "aicr_kubeconfig": str(kubeconfig),
            "aicr_repository_mirrors": {EXAMPLE_REPOSITORY: charts_url},
            "cluster_runtime_helm_binary": args.helm,
        }
        vars_file = workdir / "extra-vars.json"
        vars_file.write_text(json.dumps(extra_vars, indent=2), encoding="utf-8")

        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "collections"), PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
        playbook = [str(BIN / "ansible-playbook"), "-i", str(REPO / "examples" / "inventory" / "hosts.yml"), str(REPO / "playbooks" / "site.yml"),
                    "-e", "@%s" % vars_file]
        first = run(playbook, env=env)
        if first.returncode != 0:
            return first.returncode
        print("\nSecond run: a converged cluster reports no change.", flush=True)
        second = run(playbook, env=env, capture_output=True, text=True)
        print(second.stdout[-1500:])
        if second.returncode != 0:
            print(second.stderr[-3000:], file=sys.stderr)
            return second.returncode
        run([str(BIN / "kubectl"), "--kubeconfig", str(kubeconfig), "get", "deployments,daemonsets,jobs,widgets,configmaps", "-n", "aicr-demo"])
        run([args.helm, "--kubeconfig", str(kubeconfig), "list", "-A"])
        return 0
    finally:
        for process in processes:
            process.terminate()
        for process in processes:
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()


if __name__ == "__main__":
    sys.exit(main())
