"""Real upstream charts from ../shared/charts-repo, default values, CRDs and hooks included, helm --wait.

helm runs as the lab's admin: these third-party charts bring ClusterRoles, webhooks, CRDs and
cluster-scoped hook objects that no role of this collection grants (whoever deploys such a chart
with gated_release composes its RBAC, as examples/rbac/example-charts.yaml does for the example
charts). Each install goes to a fresh namespace; what the chart leaves cluster-wide is removed.
"""

import json

import pytest
import yaml

pytestmark = [pytest.mark.helm, pytest.mark.slow]

TIMEOUT = "300s"
REAL_CHARTS = {
    # chart: (repository prefix on the shared server, version, namespace)
    "gpu-operator": ("/helm.ngc.nvidia.com_nvidia", "v26.3.3", "gpu-operator"),
    "kube-prometheus-stack": ("/prometheus-community.github.io_helm-charts", "84.4.0", "monitoring"),
}


class ManifestLoader(yaml.SafeLoader):  # pylint: disable=too-many-ancestors
    """SafeLoader that reads a plain ``=`` as the string it is (YAML 1.1's "value" tag; Go's YAML does the same)."""


ManifestLoader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def rendered_objects(manifest):
    """(kind, name, namespace or None) of every document."""
    return [(d["kind"], d["metadata"]["name"], d["metadata"].get("namespace")) for d in yaml.load_all(manifest, Loader=ManifestLoader) if d]


@pytest.mark.parametrize("chart", sorted(REAL_CHARTS))
@pytest.mark.usefixtures("cluster_scoped_cleanup")
def test_real_chart_installs_with_default_values_and_uninstalls(admin_helm, admin_kubectl, shared_repo, new_namespace, chart):
    helm, kubectl = admin_helm, admin_kubectl
    prefix, version, ns = REAL_CHARTS[chart]
    ns = new_namespace(ns)
    repo = shared_repo.repository(prefix)
    source = [chart, "--repo", repo.url, "--version", version, "-n", ns]
    crds = [name for kind, name, _ns in rendered_objects(helm.run("show", "crds", *source[:5]).stdout) if kind == "CustomResourceDefinition"]
    assert crds, "the chart ships CRDs"

    helm.run("install", chart, *(source + ["--create-namespace", "--wait", "--wait-for-jobs", "--timeout", TIMEOUT]), timeout=900)

    status = helm.json("status", chart, "-n", ns)
    assert status["info"]["status"] == "deployed"
    for name in crds:
        conditions = kubectl.json("get", "crd", name)["status"].get("conditions", [])
        assert [c["status"] for c in conditions if c["type"] == "Established"] == ["True"], name
    manifest = rendered_objects(helm.run("get", "manifest", chart, "-n", ns).stdout)
    workloads = [obj for obj in manifest if obj[0] in ("Deployment", "DaemonSet", "StatefulSet")]
    assert workloads
    for kind, name, namespace in workloads:
        obj = kubectl.json("get", kind.lower(), name, "-n", namespace or ns)
        if kind == "DaemonSet":
            assert obj["status"]["numberReady"] == obj["status"]["desiredNumberScheduled"] >= 1, (name, obj["status"])
        else:
            assert obj["status"].get("readyReplicas", 0) == obj["spec"].get("replicas", 1), (name, obj["status"])
    # every object of the release manifest exists (custom resources of the chart's own CRDs included)
    for kind, name, namespace in manifest:
        found = kubectl.run("get", kind, name, "-n", namespace or ns, "-o", "name", check=False)
        assert found.returncode == 0, "%s %s missing: %s" % (kind, name, found.stderr)
    hooks = rendered_objects(helm.run("get", "hooks", chart, "-n", ns).stdout)
    assert "Job" in [kind for kind, _name, _ns in hooks], "the chart has hook Jobs"

    # an upgrade with the same values runs the pre/post-upgrade hooks (gpu-operator: the CRD upgrade Job)
    helm.run("upgrade", chart, *(source + ["--reuse-values", "--wait", "--wait-for-jobs", "--timeout", TIMEOUT]), timeout=900)
    assert [(h["revision"], h["status"]) for h in helm.json("history", chart, "-n", ns)] == [(1, "superseded"), (2, "deployed")]

    helm.run("uninstall", chart, "-n", ns, "--wait", "--timeout", TIMEOUT, timeout=900)
    assert helm.json("list", "-n", ns) == []
    assert kubectl.json("get", "secrets", "-n", ns, "-l", "owner=helm")["items"] == [], "release records left behind"
    left = json.loads(kubectl.run("get", "deployments,daemonsets,statefulsets,services,configmaps,secrets", "-n", ns, "-l",
                                  "app.kubernetes.io/managed-by=Helm", "-o", "json").stdout)["items"]
    assert [(i["kind"], i["metadata"]["name"]) for i in left] == []
    for name in crds:
        assert kubectl.run("get", "crd", name, check=False).returncode == 0, "helm keeps what it installed from crds/"
