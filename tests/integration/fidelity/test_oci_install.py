"""helm 3 and 4 install charts from a local OCI registry (``oci://`` recipe sources) into the lab.

The example operator is installed as the least-privilege ``release`` identity (what gated_release
does with an ``oci://`` source); kai-scheduler, a third-party chart with ClusterRoles, webhooks and
CRDs of its own, as admin.
"""

import pytest

from aicr_lab.charts.helm import isolated_env, run_helm
from aicr_lab.charts.oci import push_chart, push_shared_oci, start_registry
from aicr_lab.charts.pytest_fixture import example_charts_dir

pytestmark = [pytest.mark.helm, pytest.mark.slow]


@pytest.fixture(scope="module")
def registry(tmp_path_factory, shared_dir):
    """A registry holding the example operator and every chart of charts-repo/oci."""
    workdir = tmp_path_factory.mktemp("oci")
    started = start_registry(workdir / "registry")
    run_helm(["package", str(example_charts_dir() / "example-operator"), "--destination", str(workdir / "pkg")], env=isolated_env(workdir / "home"))
    started.example_ref = push_chart(started, workdir / "pkg" / "example-operator-0.1.0.tgz", "charts.aicr.example/examples")
    started.shared_refs = push_shared_oci(started, shared_dir / "charts-repo" / "oci")
    yield started
    started.stop()


def test_install_upgrade_uninstall_from_oci(helm, kubectl, registry, ns):
    chart, version = registry.example_ref.rsplit(":", 1)
    assert chart.startswith("oci://127.0.0.1:")
    helm.run("install", "op", chart, "--version", version, "--plain-http", "-n", ns, "--wait", "--timeout", "120s")
    deploy = kubectl.json("get", "deployment", "op-example-operator", "-n", ns)
    assert deploy["status"]["availableReplicas"] == 1
    assert [(r["name"], r["chart"], r["status"]) for r in helm.json("list", "-n", ns)] == [("op", "example-operator-0.1.0", "deployed")]
    helm.run("upgrade", "op", chart, "--version", version, "--plain-http", "-n", ns, "--set", "replicaCount=3", "--wait", "--timeout", "120s")
    assert kubectl.json("get", "deployment", "op-example-operator", "-n", ns)["status"]["availableReplicas"] == 3
    helm.run("uninstall", "op", "-n", ns, "--wait", "--timeout", "120s")
    assert kubectl.run("get", "deployment", "op-example-operator", "-n", ns, check=False).returncode != 0


@pytest.mark.usefixtures("cluster_scoped_cleanup")
def test_real_oci_chart_with_its_recipe_namespace(admin_helm, admin_kubectl, registry, new_namespace):
    """kai-scheduler v0.14.1 from its upstream OCI path, default values, --wait (as admin: a third-party chart)."""
    helm, kubectl = admin_helm, admin_kubectl
    local = registry.shared_refs["oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler:v0.14.1"]
    chart, version = local.rsplit(":", 1)
    ns = new_namespace("kai-scheduler")
    helm.run("install", "kai-scheduler", chart, "--version", version, "--plain-http", "-n", ns, "--create-namespace",
             "--wait", "--wait-for-jobs", "--timeout", "300s", timeout=900)
    assert helm.json("status", "kai-scheduler", "-n", ns)["info"]["status"] == "deployed"
    deployments = kubectl.json("get", "deployments", "-n", ns)["items"]
    assert deployments
    for deploy in deployments:
        assert deploy["status"].get("readyReplicas", 0) == deploy["spec"].get("replicas", 1), deploy["metadata"]["name"]
    # the cluster is shared: the release goes (its cluster-scoped objects with it; its CRDs by the fixture)
    helm.run("uninstall", "kai-scheduler", "-n", ns, "--wait", "--timeout", "300s", timeout=900)
    assert helm.json("list", "-n", ns) == []
