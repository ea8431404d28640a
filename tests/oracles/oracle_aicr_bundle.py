"""The AICR CLI v0.19.0's ``aicr bundle`` (helm deployer) as the oracle for node scheduling (``_recipe.scheduling``).

``generate(binary, golden_dir, log)`` resolves every leaf recipe of the catalog (``leaf_recipes``) with ``aicr recipe --format yaml``, bundles each with
``aicr bundle --recipe recipe.yaml --output bundle`` once without and once with every node-scheduling flag
(``FLAGS``), and writes each component's ``values.yaml`` and ``cluster-values.yaml`` and the objects of its manifest wrapper charts
(``manifests``: ``_bundle_manifests``; nothing else of the bundle) to
``golden_dir/aicr/bundle/values.json.gz`` (each case names its components' entries by digest in ``pool``: most
recipes share them), with its provenance (also in ``PROVENANCE.json`` beside it). Each case also
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


def leaf_recipes(catalog_dir):
    """[(overlay name, criteria)] of the catalog's leaf recipes: the overlays no other overlay names as its ``base``
    (45 of v0.19.0's 103), in name order. AICR's bundle has no enumeration of its own (it bundles one resolved recipe),
    so the leaves are those of the inheritance tree; their criteria are the overlay's ``criteria`` without the ``any``
    values. An overlay stating only ``any`` (v0.19.0: monitoring-hpa) cannot be asked for alone (AICR refuses a query
with no criteria, and ``--intent any`` is none): it is left out here, and applies within the recipes that match it."""
    overlays = {}
    for path in sorted((Path(catalog_dir) / "overlays").glob("*.yaml")):
        doc = oracle_aicr._load_yaml(path) or {}  # pylint: disable=protected-access
        overlays[doc["metadata"]["name"]] = doc.get("spec") or {}
    bases = set(spec.get("base") for spec in overlays.values())
    out = []
    for name in sorted(n for n in overlays if n not in bases):
        stated = dict((k, str(v)) for k, v in (overlays[name].get("criteria") or {}).items() if k in oracle_aicr.FLAGS)
        criteria = dict((k, v) for k, v in stated.items() if v != "any")
        if criteria:
            out.append((name, criteria))
    return out


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


def _run(binary, argv, cwd, refusable=False):
    """Run ``aicr argv`` in ``cwd``; a failure raises, unless ``refusable``: then it returns the refusal
    ({"exit", "error": the last ``command failed`` line}); None on success."""
    env = {"PATH": "/usr/bin:/bin", "HOME": str(cwd), "KUBECONFIG": os.devnull, "NO_COLOR": "1", "LANG": "C.UTF-8"}
    proc = subprocess.run([str(binary)] + argv, cwd=str(cwd), env=env, capture_output=True, check=False, timeout=300)
    if proc.returncode != 0 and refusable:
        lines = [l for l in proc.stderr.decode("utf-8", "replace").splitlines() if "command failed" in l]
        return {"exit": proc.returncode, "error": (lines[-1] if lines else "").split("error=", 1)[-1]}
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


def _bundle_manifests(directory, names):
    """{component: {"pre": [docs], "post": [docs]}} of a helm bundle's local wrapper charts: the ``NNN-<c>-pre`` and
    ``NNN-<c>-post`` folders beside a chart component, and the ``NNN-<c>`` folder of a manifest-only component (a
    ``Chart.yaml`` with ``templates/``). The bundler has already rendered their templates (its own template pass with
    the component's final values); ``helm upgrade --install ./`` applies them as they are, so their YAML documents
    (empty ones dropped; files in name order) are the objects the bundle applies. A file still holding ``{{`` is
    refused: it would need a helm pass here."""
    out = {}
    for folder in sorted(p for p in Path(directory).iterdir() if p.is_dir() and p.name[:3].isdigit()):
        rest = folder.name[4:]
        if rest in names:
            component, wave = rest, "post"
        elif rest.endswith(("-pre", "-post")) and rest.rsplit("-", 1)[0] in names:
            component, wave = rest.rsplit("-", 1)
        else:
            raise RuntimeError("bundle folder %s names no component of the recipe" % folder.name)
        if not (folder / "Chart.yaml").is_file() or not (folder / "templates").is_dir():
            continue
        docs = []
        for path in sorted((folder / "templates").rglob("*")):
            if not path.is_file():
                continue
            text = path.read_text(encoding="utf-8")
            if "{{" in text:
                raise RuntimeError("%s still holds a template" % path)
            docs += [d for d in yaml_all(text) if d]
        out.setdefault(component, {}).setdefault(wave, []).extend(docs)
    return out


def yaml_all(text):
    import yaml  # pylint: disable=import-outside-toplevel
    return list(yaml.safe_load_all(text))


def generate(binary, golden_dir, log):
    if not (oracle_aicr.CATALOG / "overlays" / "base.yaml").is_file():
        raise RuntimeError("the AICR catalog is not at %s (set make's SHARED to the shared data)" % oracle_aicr.CATALOG)
    root = Path(tempfile.mkdtemp(prefix="aicr-bundle-oracle-"))
    cases = []
    pool = {}
    for number, (leaf, criteria) in enumerate(leaf_recipes(oracle_aicr.CATALOG)):
        cwd = root / str(number)
        cwd.mkdir()
        argv = ["recipe"]
        for dim in oracle_aicr.FLAGS:
            if criteria.get(dim):
                argv += ["--" + dim, criteria[dim]]
        _run(binary, argv + ["--format", "yaml", "--output", "recipe.yaml"], cwd)
        recipe = oracle_aicr._load_yaml(cwd / "recipe.yaml")  # pylint: disable=protected-access
        names = recipe["deploymentOrder"]
        for flagged in (False, True):
            out = "bundle-flags" if flagged else "bundle"
            log("aicr bundle: %s %s" % (criteria, "with flags" if flagged else "no flags"))
            refused = _run(binary, ["bundle", "--recipe", "recipe.yaml", "--output", out] + (FLAGS if flagged else []), cwd, refusable=True)
            case = {"leaf": leaf, "criteria": criteria, "flags": FLAGS if flagged else [],
                    "node_scheduling": NODE_SCHEDULING if flagged else None, "components": {}}
            if refused:
                case["refusal"] = refused
                cases.append(case)
                continue
            components = case["components"]
            for name, entry in _bundle_values(cwd / out, names).items():
                key = oracle_aicr.digest(entry)
                pool[key] = entry
                components[name] = key
            for name, waves in _bundle_manifests(cwd / out, names).items():
                key = oracle_aicr.digest(waves)
                pool[key] = waves
                case.setdefault("manifests", {})[name] = key
            cases.append(case)
    provenance = dict(oracle_aicr.SOURCE, tool="aicr", binary_version=oracle_aicr.Runner(binary).version(),
                      date=datetime.date.today().isoformat(), command=COMMAND, deployer="helm (the default)",
                      catalog="../shared/aicr/catalog (the v0.19.0 recipes/, embedded in the binary)",
                      catalog_sha256=oracle_aicr.catalog_digest(oracle_aicr.CATALOG),
                      environment="HOME=<empty dir> KUBECONFIG=/dev/null, working directory = an empty dir per recipe")
    out = Path(golden_dir) / "aicr" / "bundle"
    oracle_aicr.write_golden(out / "values.json.gz", {"provenance": provenance, "cases": cases, "pool": pool})
    summary = {"cases": len(cases), "components": sum(len(c["components"]) for c in cases), "leaves": len(cases) // 2,
               "pooled": len(pool),
               "refused": sum(1 for c in cases if c.get("refusal")),
               "manifest_components": sum(len(c.get("manifests") or {}) for c in cases),
               "manifest_objects": sum(len(d) for c in cases for k in (c.get("manifests") or {}).values() for d in pool[k].values())}
    provenance["goldens"] = summary
    (out / "PROVENANCE.json").write_text(json.dumps(provenance, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return summary
