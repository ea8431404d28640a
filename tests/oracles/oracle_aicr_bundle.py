"""The AICR CLI v0.19.0's ``aicr bundle`` (helm deployer) as the oracle for node scheduling (``_recipe.scheduling``).

``generate(binary, golden_dir, log)`` resolves a few leaf recipes with ``aicr recipe --format yaml``, bundles each with
``aicr bundle --recipe recipe.yaml --output bundle`` once without and once with every node-scheduling flag
(``FLAGS``), and writes each component's ``values.yaml`` and ``cluster-values.yaml`` (nothing else of the bundle) to
``golden_dir/aicr/bundle/values.json.gz``, with its provenance (also in ``PROVENANCE.json`` beside it). Each case also
records ``node_scheduling``: the same flags as recipe_resolve's option, which the unit test
(tests/unit/plugins/module_utils/_recipe/test_recipe_scheduling_oracle.py) passes to ``resolve``.
Same environment as ``oracle_aicr``: an empty HOME, ``KUBECONFIG=/dev/null``, the v0.19.0 catalog embedded in the binary.
"""

import datetime
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import oracle_aicr  # noqa: E402  pylint: disable=wrong-import-position

# leaf recipes: the eks/h100 training, kind (its overlay's opt-out `daemonsets.tolerations: []`), bcm (its
# overlay's DRA tolerations: the append case), gke inference
RECIPES = (
    {"service": "eks", "accelerator": "h100", "os": "ubuntu", "intent": "training"},
    {"service": "kind", "accelerator": "h100", "intent": "training"},
    {"service": "bcm", "accelerator": "h100", "os": "ubuntu", "intent": "training"},
    {"service": "gke", "accelerator": "h100", "os": "cos", "intent": "inference"},
)
FLAGS = ["--system-node-selector", "nodeGroup=system", "--system-node-toleration", "dedicated=system:NoSchedule",
         "--accelerated-node-selector", "nodeGroup=gpu", "--accelerated-node-toleration", "nvidia.com/gpu=present:NoSchedule",
         "--accelerated-node-toleration", "gpu-only:NoExecute", "--nodes", "8",
         "--workload-gate", "skyhook.nvidia.com=runtime-required:NoSchedule", "--workload-selector", "app=training"]
NODE_SCHEDULING = {
    "system": {"node_selector": {"nodeGroup": "system"}, "tolerations": ["dedicated=system:NoSchedule"]},
    "accelerated": {"node_selector": {"nodeGroup": "gpu"},
                    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},
                                    "gpu-only:NoExecute"]},
    "nodes": 8, "workload_gate": "skyhook.nvidia.com=runtime-required:NoSchedule", "workload_selector": {"app": "training"},
}
COMMAND = ("aicr recipe <criteria flags> --format yaml --output recipe.yaml; "
           "aicr bundle --recipe recipe.yaml --output bundle [%s]" % " ".join(FLAGS))


def _run(binary, argv, cwd):
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "KUBECONFIG": os.devnull, "NO_COLOR": "1", "LANG": "C.UTF-8"}
    proc = subprocess.run([str(binary)] + argv, cwd=str(cwd), env=env, capture_output=True, check=False, timeout=300)
    if proc.returncode != 0:
        raise RuntimeError("aicr %s failed (%d): %s" % (" ".join(argv), proc.returncode, proc.stderr.decode("utf-8", "replace")[-800:]))


def _bundle_values(directory, names):
    """{component: {"values": ..., "cluster_values": ...}} of a helm bundle's ``NNN-<component>/`` folders of the
    recipe's components ``names`` (not the ``-pre``/``-post`` manifest folders the bundler adds beside some)."""
    out = {}
    for folder in sorted(p for p in Path(directory).iterdir() if p.is_dir() and p.name[:3].isdigit() and p.name[4:] in names):
        entry = {}
        for name, key in (("values.yaml", "values"), ("cluster-values.yaml", "cluster_values")):
            path = folder / name
            entry[key] = (oracle_aicr._load_yaml(path) or {}) if path.is_file() else {}  # pylint: disable=protected-access
        out[folder.name[4:]] = entry
    return out


def generate(binary, golden_dir, log):
    root = Path(tempfile.mkdtemp(prefix="aicr-bundle-oracle-"))
    cases = []
    for number, criteria in enumerate(RECIPES):
        cwd = root / str(number)
        cwd.mkdir()
        argv = ["recipe"]
        for dim in oracle_aicr.FLAGS:
            if criteria.get(dim):
                argv += ["--" + dim, criteria[dim]]
        _run(binary, argv + ["--format", "yaml", "--output", "recipe.yaml"], cwd)
        names = oracle_aicr._load_yaml(cwd / "recipe.yaml")["deploymentOrder"]  # pylint: disable=protected-access
        for flagged in (False, True):
            out = "bundle-flags" if flagged else "bundle"
            log("aicr bundle: %s %s" % (criteria, "with flags" if flagged else "no flags"))
            _run(binary, ["bundle", "--recipe", "recipe.yaml", "--output", out] + (FLAGS if flagged else []), cwd)
            cases.append({"criteria": criteria, "flags": FLAGS if flagged else [], "node_scheduling": NODE_SCHEDULING if flagged else None,
                          "components": _bundle_values(cwd / out, names)})
    provenance = dict(oracle_aicr.SOURCE, tool="aicr", binary_version=oracle_aicr.Runner(binary).version(),
                      date=datetime.date.today().isoformat(), command=COMMAND, deployer="helm (the default)",
                      catalog="../shared/aicr/catalog (the v0.19.0 recipes/, embedded in the binary)",
                      catalog_sha256=oracle_aicr.catalog_digest(oracle_aicr.CATALOG),
                      environment="HOME=<empty dir> KUBECONFIG=/dev/null, working directory = an empty dir per recipe")
    out = Path(golden_dir) / "aicr" / "bundle"
    oracle_aicr.write_golden(out / "values.json.gz", {"provenance": provenance, "cases": cases})
    summary = {"cases": len(cases), "components": sum(len(c["components"]) for c in cases)}
    provenance["goldens"] = summary
    (out / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return summary
