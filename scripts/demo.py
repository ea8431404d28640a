#!/usr/bin/env python
"""`make demo`: the main job, end to end, on the embedded defaults.

Starts the local lab on 127.0.0.1 — a real Kubernetes control plane (etcd,
kube-apiserver over TLS with RBAC, controller-manager, scheduler, kwok nodes; built
from Go modules on first use), a Helm chart repository serving examples/charts, and
the composable fabric simulator — then runs playbooks/site.yml against
examples/inventory exactly as a user would, as the least-privilege identity `site`
(the shipped ClusterRoles, meta/rbac): hardware first, then the example recipe,
gated on readiness. It runs the playbook a second time to show that a
converged cluster reports no change, writes the first run's rollout timeline (a Mermaid
gantt) to .build/demo/timeline.md, prints what the cluster now holds, and
stops everything it started.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from aicr_lab import lab as aicr_lab

REPO = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent
EXAMPLE_REPOSITORY = "https://charts.aicr.example/examples"


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

    lab = aicr_lab.up(workdir / "lab", log=lambda line: print("aicr-lab: %s" % line, flush=True))
    try:
        plane = lab["controlplane"]
        print("Kubernetes %s:     %s (started in %.1f s; kubeconfig %s)" % (
            plane["kubernetes_version"], lab["kube_url"], plane["started_seconds"], lab["kubeconfigs"]["site"]))
        print("Chart repository:        %s (mirrors %s)" % (lab["charts_url"], EXAMPLE_REPOSITORY))
        print("Fabric simulator:        %s" % lab["fabric_url"])

        fabric = json.loads(Path(lab["fabric_info"]).read_text(encoding="utf-8"))
        extra_vars = {
            "aicr_kubeconfig": lab["kubeconfigs"]["site"],
            "aicr_repository_mirrors": lab["repository_mirrors"],
            "cluster_runtime_helm_binary": args.helm,
            # The simulator's endpoint and credentials; a real site keeps these in a vault.
            "composable_gpu_provider": "fti_fm",
            "composable_gpu_endpoint": fabric["endpoint"],
            "composable_gpu_ca_path": fabric["ca_path"],
            "composable_gpu_tenant_id": fabric["tenant_id"],
            "composable_gpu_username": fabric["username"],
            "composable_gpu_password": fabric["password"],
            "composable_gpu_client_id": fabric["client_id"],
            "composable_gpu_client_secret": fabric["client_secret"],
            "composable_gpu_realm": fabric["realm"],
        }
        vars_file = workdir / "extra-vars.json"
        vars_file.write_text(json.dumps(extra_vars, indent=2), encoding="utf-8")

        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "collections"), PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
        playbook = [str(BIN / "ansible-playbook"), "-i", str(REPO / "examples" / "inventory" / "hosts.yml"), str(REPO / "playbooks" / "site.yml"),
                    "-e", "@%s" % vars_file]
        timeline = workdir / "timeline.md"
        first = run(playbook + ["-e", "cluster_runtime_timeline_file=%s" % timeline], env=env)
        if first.returncode != 0:
            return first.returncode
        print("\nThe rollout's timeline (a Mermaid gantt, critical path marked crit): %s" % timeline, flush=True)
        print("\nSecond run: a converged cluster reports no change.", flush=True)
        second = run(playbook, env=env, capture_output=True, text=True)
        print(second.stdout[second.stdout.find("PLAY RECAP"):])
        if second.returncode != 0:
            print(second.stderr[-3000:], file=sys.stderr)
            return second.returncode
        kubectl = [str(BIN / "kubectl"), "--kubeconfig", lab["kubeconfig"]]
        run(kubectl + ["get", "nodes", "-o", "custom-columns=NODE:.metadata.name,PROVIDER:.spec.providerID,GPUS:.status.allocatable.nvidia\\.com/gpu"])
        run(kubectl + ["get", "deployments,daemonsets,jobs,widgets,configmaps", "-n", "aicr-demo"])
        run([args.helm, "--kubeconfig", lab["kubeconfig"], "list", "-A"])
        return 0
    finally:
        aicr_lab.down(workdir / "lab")


if __name__ == "__main__":
    sys.exit(main())
