"""helm 3 and 4 install charts from a local OCI registry (``oci://`` recipe sources) into the emulator."""

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


def test_install_upgrade_uninstall_from_oci(helm, kubectl, registry):
    chart, version = registry.example_ref.rsplit(":", 1)
    assert chart.startswith("oci://127.0.0.1:")
    helm.run("install", "op", chart, "--version", version, "--plain-http", "-n", "oci-fid", "--create-namespace", "--wait", "--timeout", "120s")
    deploy = kubectl.json("get", "deployment", "op-example-operator", "-n", "oci-fid")
    assert deploy["status"]["availableReplicas"] == 1
    assert [(r["name"], r["chart"], r["status"]) for r in helm.json("list", "-n", "oci-fid")] == [("op", "example-operator-0.1.0", "deployed")]
    helm.run("upgrade", "op", chart, "--version", version, "--plain-http", "-n", "oci-fid", "--set", "replicaCount=3", "--wait", "--timeout", "120s")
    assert kubectl.json("get", "deployment", "op-example-operator", "-n", "oci-fid")["status"]["availableReplicas"] == 3
    helm.run("uninstall", "op", "-n", "oci-fid", "--wait", "--timeout", "120s")
    assert kubectl.run("get", "deployment", "op-example-operator", "-n", "oci-fid", check=False).returncode != 0


def test_real_oci_chart_with_its_recipe_namespace(helm, kubectl, registry):
    """kai-scheduler v0.14.1 from its upstream OCI path, default values, --wait."""
    local = registry.shared_refs["oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler:v0.14.1"]
    chart, version = local.rsplit(":", 1)
    helm.run("install", "kai-scheduler", chart, "--version", version, "--plain-http", "-n", "kai-scheduler", "--create-namespace",
             "--wait", "--wait-for-jobs", "--timeout", "300s", timeout=900)
    assert helm.json("status", "kai-scheduler", "-n", "kai-scheduler")["info"]["status"] == "deployed"
    deployments = kubectl.json("get", "deployments", "-n", "kai-scheduler")["items"]
    assert deployments
    for deploy in deployments:
        assert deploy["status"].get("readyReplicas", 0) == deploy["spec"].get("replicas", 1), deploy["metadata"]["name"]
