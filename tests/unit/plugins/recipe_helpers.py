"""Build small AICR-format catalogs on disk for engine tests."""

import os

import yaml

REGISTRY = {
    "apiVersion": "aicr.run/v1alpha2",
    "kind": "ComponentRegistry",
    "components": [
        {"name": "alpha", "helm": {"defaultRepository": "https://charts.example/a", "defaultChart": "repo/alpha-chart",
                                   "defaultVersion": "1.0.0", "defaultNamespace": "alpha-ns"},
         "healthCheck": {"assertFile": "checks/alpha/health-check.yaml"}},
        {"name": "beta", "helm": {"defaultRepository": "oci://registry.example/charts", "defaultChart": "beta",
                                  "defaultVersion": "2.0.0", "defaultNamespace": "beta-ns"}},
        {"name": "gamma", "helm": {"defaultRepository": "", "defaultNamespace": "gamma-ns"}},
    ],
}


def overlay(name, criteria=None, base=None, refs=None, constraints=None, mixins=None, **spec_extra):
    spec = {}
    if base:
        spec["base"] = base
    if criteria is not None:
        spec["criteria"] = criteria
    if mixins:
        spec["mixins"] = mixins
    if constraints:
        spec["constraints"] = constraints
    spec["componentRefs"] = refs or []
    spec.update(spec_extra)
    return {"kind": "RecipeMetadata", "apiVersion": "aicr.run/v1alpha2", "metadata": {"name": name}, "spec": spec}


def base_doc(refs=None, constraints=None):
    doc = overlay("base", refs=refs if refs is not None else [
        {"name": "alpha", "type": "Helm", "valuesFile": "components/alpha/values.yaml"},
        {"name": "beta", "type": "Helm", "valuesFile": "components/beta/values.yaml", "dependencyRefs": ["alpha"]},
    ], constraints=constraints or [{"name": "K8s.server.version", "value": ">= 1.25"}])
    return doc


def write(root, relpath, content):
    path = os.path.join(str(root), *relpath.split("/"))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        if isinstance(content, str):
            handle.write(content)
        else:
            yaml.safe_dump(content, handle, sort_keys=False)
    return path


def make_catalog(root, overlays=(), mixins=(), base=None, registry=None, files=None):
    """Write a catalog: base + overlays (list of docs) + mixins (list of docs) + extra files."""
    write(root, "registry.yaml", registry or REGISTRY)
    write(root, "overlays/base.yaml", base or base_doc())
    for doc in overlays:
        write(root, "overlays/%s.yaml" % doc["metadata"]["name"], doc)
    for doc in mixins:
        write(root, "mixins/%s.yaml" % doc["metadata"]["name"], doc)
    defaults = {
        "components/alpha/values.yaml": {"replicas": 1, "image": {"tag": "v1", "pullPolicy": "IfNotPresent"}, "drop": "me"},
        "components/alpha/values-big.yaml": {"replicas": 3, "image": {"tag": "v2"}},
        "components/beta/values.yaml": {"mode": "standard"},
        "components/gamma/manifests/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.name }}\n",
        "checks/alpha/health-check.yaml": "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\n",
    }
    defaults.update(files or {})
    for relpath, content in defaults.items():
        write(root, relpath, content)
    return str(root)


def mixin(name, constraints=None, refs=None):
    spec = {}
    if constraints:
        spec["constraints"] = constraints
    if refs:
        spec["componentRefs"] = refs
    return {"kind": "RecipeMixin", "apiVersion": "aicr.run/v1alpha2", "metadata": {"name": name}, "spec": spec}


def snapshot(readings, node_labels=None):
    """An AICR Snapshot holding the given ``Type.subtype.key`` readings (and NodeTopology labels of the GPU nodes)."""
    measurements = {}
    for name, value in readings.items():
        mtype, sub, key = name.split(".", 2)
        measurements.setdefault(mtype, {}).setdefault(sub, {})[key] = value
    if node_labels is not None:
        measurements.setdefault("NodeTopology", {}).setdefault("label", {}).update(node_labels)
    return {"kind": "Snapshot", "apiVersion": "aicr.run/v1alpha2",
            "measurements": [{"type": t, "subtypes": [{"subtype": s, "data": d} for s, d in sorted(subs.items())]}
                             for t, subs in sorted(measurements.items())]}
