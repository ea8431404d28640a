"""The cases the AICR oracle is asked about: the criteria space and the generated Snapshots.

Both are derived deterministically (no clock, no unseeded randomness), so a re-run of ``make oracles`` on the same
catalog asks the same questions and a diff of the goldens shows only changed answers.

* :func:`criteria_space`: every combination of the catalog's dimension values - for each of service, accelerator,
  intent, os and platform the values some overlay's ``spec.criteria`` names (``any`` included where the catalog
  writes it) plus "unstated" (the flag left out).
* :func:`snapshot_space`: Snapshots in AICR v0.19.0's own shape (``apiVersion: aicr.run/v1alpha2``; the
  measurements AICR's collectors write: ``K8s.server``/``node``/``aks-gpu-pools``, ``OS.release``/``sysctl``,
  ``GPU.hardware``, ``NodeTopology.summary``/``label``/``taint`` with or without the lossless ``items``), built
  from families that each sweep one factor over a plausible cluster, then seeded random combinations of all
  factors. Each is asked with each intent (:data:`SNAPSHOT_INTENTS`).
"""

import itertools
import random

DIMENSIONS = ("service", "accelerator", "intent", "os", "platform")
SNAPSHOT_API_VERSION = "aicr.run/v1alpha2"
SNAPSHOT_INTENTS = (None, "training", "inference")
SEED = 38

# K8s.node.provider as snapshots carry it: what AICR's collector writes (the normalised name), the raw
# spec.providerID forms hand-written or older snapshots carry, and names no recipe knows.
PROVIDERS = (
    None, "eks", "gke", "aks", "oke", "lke", "kind", "bcm", "ocp", "metal3",
    "aws", "gce", "azure", "EKS", "openstack", "",
    "ocid1.instance.oc1.iad.anuwcljt5vq2", "oci", "oci://ocid1.instance.oc1.phx.abyhqljt",
    "linode", "linode://58291", "oke-x",
)
PROVIDER_IDS = {
    "eks": "aws:///us-west-2a/i-0123456789abcdef0", "gke": "gce://proj/us-central1-a/gke-gpu-pool-1",
    "aks": "azure:///subscriptions/0000/resourceGroups/rg/providers/Microsoft.Compute/virtualMachineScaleSets/gpu/virtualMachines/0",
    "oke": "ocid1.instance.oc1.iad.anuwcljt5vq2", "lke": "linode://58291", "kind": "kind://docker/kind/kind-worker",
}
# K8s.server.version either side of the catalog's constraints (>= 1.25 ... >= 1.34, >= 1.32.4), with provider
# suffixes, and two that are not versions at all (AICR fails closed on those).
SERVER_VERSIONS = (
    None, "v1.24.17", "v1.28.15", "v1.30.14-eks-931bdca", "v1.31.6-gke.1020000", "v1.32.3", "v1.32.4",
    "v1.33.5+lke1", "v1.34.1", "v1.35.0", "1.34", "v1.34.2-aks.7", "latest",
)
# (ID, VERSION_ID) of OS.release: recipe OSes, aliases AICR folds (amzn, al2023, redhat), ones it does not know.
OS_RELEASES = (
    None, ("ubuntu", "24.04"), ("ubuntu", "22.04"), ("rhel", "9.4"), ("amzn", "2023"), ("al2023", "2023"),
    ("cos", "117"), ("talos", "1.10.4"), ("ol", "8.10"), ("debian", "12"), ("Ubuntu", "24.04"), ("redhat", "8.8"),
)
KERNELS = (None, "6.8.0-1015-aws", "5.15.0-1063-gke", "6.14.0-1010-azure")
# nvidia.com/gpu.product label values over the GPU nodes: one product, two products (heterogeneous), products
# AICR's SKU table does not know, and none.
GPU_LABELS = (
    None, ("NVIDIA-H100-80GB-HBM3",), ("NVIDIA-H200",), ("NVIDIA-GB200",), ("NVIDIA-B200",),
    ("NVIDIA-A100-SXM4-80GB",), ("NVIDIA-L40S",), ("NVIDIA-L40",), ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",),
    ("NVIDIA-GB300",), ("Tesla-T4",), ("NVIDIA-GH200-480GB",), ("NVIDIA-H100-80GB-HBM3", "NVIDIA-L40S"),
    ("NVIDIA-H100-80GB-HBM3", "NVIDIA-H100-NVL"), ("NVIDIA-A800-SXM4-80GB",),
)
# GPU.hardware (NFD PCI discovery): (model or None, driver-loaded True/False/None, gpu-count).
PCI = (
    None, ("h100", True, 8), ("h100", False, 8), ("h100", None, 8), ("l40s", True, 4), ("t4", False, 1),
    ("gb200", True, 4), ("a800", None, 8), (None, True, 8), (None, False, 0),
)
NODE_COUNTS = (None, 1, 2, 8, 64, 512)
AKS_GPU_DRIVER = (None, "Install", "None", "Mixed")
GKE_PLUGIN_LABEL = (None, "true", "absent")


def criteria_values(catalog_dir, loader):
    """{dimension: sorted values the catalog's overlays name} (``loader``: a YAML loader for one file)."""
    import glob  # pylint: disable=import-outside-toplevel
    import os  # pylint: disable=import-outside-toplevel

    values = dict((dim, set()) for dim in DIMENSIONS)
    for path in sorted(glob.glob(os.path.join(str(catalog_dir), "overlays", "*.yaml"))):
        doc = loader(path) or {}
        for dim, value in ((doc.get("spec") or {}).get("criteria") or {}).items():
            if dim in values and value not in (None, ""):
                values[dim].add(str(value))
    return dict((dim, sorted(v)) for dim, v in values.items())


def criteria_space(values):
    """Every combination: a dict of the stated dimensions (unstated ones absent), in a stable order."""
    axes = [[None] + list(values[dim]) for dim in DIMENSIONS]
    for combo in itertools.product(*axes):
        yield dict((dim, v) for dim, v in zip(DIMENSIONS, combo) if v is not None)


def _nodes(count, gpu_share=1.0):
    count = count or 2
    gpu = max(1, int(round(count * gpu_share))) if count > 1 else 1
    names = ["gpu-%03d" % i for i in range(gpu)] + ["cpu-%03d" % i for i in range(count - gpu)]
    return sorted(names), sorted(names[:gpu])


def _label_data(labels):
    """AICR's topology encoding of ``{key: {value: [nodes]}}``: folded Data and lossless items."""
    data, items = {}, []
    for key in sorted(labels):
        by_value = labels[key]
        for value in sorted(by_value):
            nodes = sorted(by_value[value])
            map_key = key if len(by_value) == 1 else "%s.%s" % (key, value)
            data[map_key] = "%s|%s" % (value, ",".join(nodes))
            items.append({"context": {"key": key, "value": value},
                          "data": {"node-count": len(nodes), "node-list-ref": map_key, "truncated": False}})
    return data, items


def build_snapshot(spec):
    """A Snapshot from one case spec (a dict of factor -> value; see :func:`snapshot_space`)."""
    measurements = []
    k8s = []
    server = {"platform": "linux/amd64", "goVersion": "go1.24.6"}
    if spec.get("version") is not None:
        server["version"] = spec["version"]
    k8s.append({"subtype": "server", "data": server})
    node = {"source-node": "gpu-000", "container-runtime-id": "containerd://2.0.5", "container-runtime-name": "containerd",
            "container-runtime-version": "2.0.5", "kubelet-version": spec.get("version") or "v1.34.1", "operating-system": "linux"}
    provider = spec.get("provider")
    if provider is not None:
        node["provider"] = provider
        node["provider-id"] = PROVIDER_IDS.get(provider, provider)
    k8s.append({"subtype": "node", "data": node})
    if spec.get("aks_gpu_driver"):
        k8s.append({"subtype": "aks-gpu-pools", "data": {"gpu-driver": spec["aks_gpu_driver"], "gpu-pool-count": 2}})
    measurements.append({"type": "K8s", "subtypes": k8s})

    os_subtypes = []
    if spec.get("os") is not None:
        os_id, version_id = spec["os"]
        os_subtypes.append({"subtype": "release", "data": {"ID": os_id, "VERSION_ID": version_id, "NAME": os_id.capitalize()}})
    if spec.get("kernel") is not None:
        os_subtypes.append({"subtype": "sysctl", "data": {"/proc/sys/kernel/osrelease": spec["kernel"]}})
    if os_subtypes:
        measurements.append({"type": "OS", "subtypes": os_subtypes})

    if spec.get("pci") is not None:
        model, loaded, count = spec["pci"]
        hw = {"gpu-present": count > 0, "gpu-count": count, "detection-source": "nfd"}
        if model is not None:
            hw["model"] = model
        if loaded is not None:
            hw["driver-loaded"] = loaded
        measurements.append({"type": "GPU", "subtypes": [{"subtype": "hardware", "data": hw}]})

    all_nodes, gpu_nodes = _nodes(spec.get("nodes"), 0.75)
    labels = {"kubernetes.io/os": {"linux": all_nodes}}
    products = spec.get("gpu_labels") or ()
    if products:
        split = [gpu_nodes[i::len(products)] for i in range(len(products))]
        labels["nvidia.com/gpu.product"] = dict((p, n) for p, n in zip(products, split) if n)
        labels["nvidia.com/gpu.present"] = {"true": gpu_nodes}
    if spec.get("gke_accelerator"):
        labels["cloud.google.com/gke-accelerator"] = {spec["gke_accelerator"]: gpu_nodes}
        if spec.get("gke_plugin") == "true":
            labels["cloud.google.com/gke-no-default-nvidia-gpu-device-plugin"] = {"true": gpu_nodes}
    label_data, label_items = _label_data(labels)
    taint_data = {"nvidia.com/gpu": "NoSchedule||%s" % ",".join(gpu_nodes)}
    topo = [{"subtype": "summary", "data": {"taint-count": 1, "label-count": len(label_items)}},
            {"subtype": "taint", "data": taint_data},
            {"subtype": "label", "data": label_data}]
    if spec.get("nodes") is not None:
        topo[0]["data"]["node-count"] = spec["nodes"]
    if spec.get("items"):
        topo[1]["items"] = [{"context": {"key": "nvidia.com/gpu", "value": "", "effect": "NoSchedule"},
                             "data": {"node-count": len(gpu_nodes), "node-list-ref": "nvidia.com/gpu", "truncated": False}}]
        topo[2]["items"] = label_items
    measurements.append({"type": "NodeTopology", "subtypes": topo})
    return {"kind": "Snapshot", "apiVersion": SNAPSHOT_API_VERSION, "metadata": {"source": "aicr.runtime oracle generator"},
            "measurements": measurements}


# A plausible cluster per service: the factors a family does not sweep.
_BASES = {
    "eks": {"provider": "eks", "version": "v1.34.1", "os": ("ubuntu", "24.04"), "kernel": "6.8.0-1015-aws",
            "gpu_labels": ("NVIDIA-H100-80GB-HBM3",), "pci": ("h100", False, 8), "nodes": 8},
    "gke": {"provider": "gke", "version": "v1.34.1", "os": ("cos", "117"), "kernel": "6.6.87+", "gpu_labels": ("NVIDIA-H100-80GB-HBM3",),
            "gke_accelerator": "nvidia-h100-80gb", "gke_plugin": "absent", "pci": ("h100", True, 8), "nodes": 8},
    "aks": {"provider": "aks", "version": "v1.34.2-aks.7", "os": ("ubuntu", "24.04"), "kernel": "6.14.0-1010-azure",
            "gpu_labels": ("NVIDIA-H100-80GB-HBM3",), "aks_gpu_driver": "Install", "pci": ("h100", True, 8), "nodes": 8},
    "oke": {"provider": "ocid1.instance.oc1.iad.anuwcljt5vq2", "version": "v1.34.1", "os": ("ol", "8.10"), "gpu_labels": ("NVIDIA-H100-80GB-HBM3",),
            "pci": ("h100", True, 8), "nodes": 8},
    "kind": {"provider": "kind", "version": "v1.34.0", "os": ("ubuntu", "24.04"), "gpu_labels": ("NVIDIA-H100-80GB-HBM3",), "nodes": 2},
    "lke": {"provider": "linode://58291", "version": "v1.33.5+lke1", "os": ("ubuntu", "24.04"), "gpu_labels": ("NVIDIA-RTX-PRO-6000-Blackwell-Server-Edition",),
            "nodes": 4},
}
FAMILIES = (
    ("provider", PROVIDERS, ("eks", "kind")),
    ("version", SERVER_VERSIONS, ("eks", "gke", "aks", "oke", "kind", "lke")),
    ("os", OS_RELEASES, ("eks", "gke", "aks", "oke", "kind")),
    ("kernel", KERNELS, ("eks", "aks")),
    ("gpu_labels", GPU_LABELS, ("eks", "gke", "aks", "oke")),
    ("pci", PCI, ("eks", "gke", "aks")),
    ("nodes", NODE_COUNTS, ("eks", "gke", "kind")),
    ("aks_gpu_driver", AKS_GPU_DRIVER, ("aks",)),
    ("gke_plugin", GKE_PLUGIN_LABEL, ("gke",)),
)
_RANDOM_FACTORS = (
    ("provider", PROVIDERS), ("version", SERVER_VERSIONS), ("os", OS_RELEASES), ("kernel", KERNELS),
    ("gpu_labels", GPU_LABELS), ("pci", PCI), ("nodes", NODE_COUNTS), ("aks_gpu_driver", AKS_GPU_DRIVER),
)
RANDOM_CASES = 260


def _freeze(spec):
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in spec.items()))


def snapshot_space():
    """[(case id, spec)] - the families (each factor swept over each service's base), then seeded random ones."""
    seen, out = set(), []

    def add(case_id, spec):
        key = _freeze(spec)
        if key in seen:
            return
        seen.add(key)
        out.append((case_id, spec))

    for service in sorted(_BASES):
        add("base-%s" % service, dict(_BASES[service]))
    for factor, values, services in FAMILIES:
        for service in services:
            for index, value in enumerate(values):
                spec = dict(_BASES[service])
                if value is None:
                    spec.pop(factor, None)
                else:
                    spec[factor] = value
                add("%s-%s-%02d" % (factor, service, index), spec)
    # items (the lossless topology encoding v0.19.0's collector writes beside the folded data) on every base
    for service in sorted(_BASES):
        spec = dict(_BASES[service], items=True)
        add("items-%s" % service, spec)
        for index, labels in enumerate(GPU_LABELS[12:14]):
            add("items-%s-multi-%d" % (service, index), dict(spec, gpu_labels=labels))
    rng = random.Random(SEED)
    index = 0
    while index < RANDOM_CASES:
        spec = {}
        for factor, values in _RANDOM_FACTORS:
            value = values[rng.randrange(len(values))]
            if value is not None:
                spec[factor] = value
        if spec.get("provider") in ("gke",) or rng.random() < 0.15:
            spec["gke_accelerator"] = "nvidia-h100-80gb"
            spec["gke_plugin"] = rng.choice(GKE_PLUGIN_LABEL[1:])
        if rng.random() < 0.3:
            spec["items"] = True
        before = len(out)
        add("random-%03d" % index, spec)
        if len(out) > before:
            index += 1
    return out
