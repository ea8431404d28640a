#!/usr/bin/env python
"""Scale: one control node converging 10 clusters with forks=10, against one cluster.

Each cluster is its own Kubernetes API emulator; all of them take the example
recipe from one chart repository. The figure is the wall time of
`ansible-playbook playbooks/site.yml` for 10 clusters divided by that for 1
(target <= 2.5). Both runs start from empty clusters, so both do the full rollout.
"""

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
sys.path.insert(0, str(REPO / "tests" / "emulators"))

from aicr_emulators.charts.pytest_fixture import start_chart_repo  # noqa: E402  pylint: disable=wrong-import-position
from aicr_emulators.kube.pytest_fixture import start_emulator  # noqa: E402  pylint: disable=wrong-import-position

EXAMPLE_REPOSITORY = "https://charts.aicr.example/examples"
TARGET_RATIO = 2.5


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


def _converge(workdir, count, charts_url):
    clusters = [start_emulator(workdir / ("kube-%d-%d" % (count, index)), default_ready_after=0.2) for index in range(count)]
    try:
        inventory = workdir / ("inventory-%d.json" % count)
        inventory.write_text(json.dumps(_inventory(clusters, charts_url)), encoding="utf-8")
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=str(REPO / ".build" / "collections"), PATH="%s:%s" % (BIN, os.environ.get("PATH", "")))
        began = time.perf_counter()
        result = subprocess.run(
            [str(BIN / "ansible-playbook"), "-i", str(inventory), "--forks", "10", str(REPO / "playbooks" / "site.yml")],
            env=env, capture_output=True, text=True, check=False,
        )
        elapsed = time.perf_counter() - began
        if result.returncode != 0:
            raise RuntimeError("site.yml failed for %d clusters:\n%s" % (count, result.stdout[-3000:]))
        return elapsed
    finally:
        for kube in clusters:
            kube.stop()


def run():
    workdir = Path(tempfile.mkdtemp(prefix="bench-scale-"))
    charts = start_chart_repo(workdir)
    try:
        one = _converge(workdir, 1, charts.url)
        ten = _converge(workdir, 10, charts.url)
    finally:
        charts.stop()
    ratio = ten / one
    return {
        "one_cluster_seconds": round(one, 2),
        "ten_clusters_forks10_seconds": round(ten, 2),
        "ratio": round(ratio, 2),
        "target_ratio": TARGET_RATIO,
        "within_target": ratio <= TARGET_RATIO,
    }


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
