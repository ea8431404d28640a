"""aicr_lab.charts.oci: the Debian distribution registry with helm push/pull --plain-http."""

import sys
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml

from aicr_lab.charts.helm import HelmError, isolated_env, run_helm
from aicr_lab.charts.oci import RegistryError, chart_metadata, push_chart, push_shared_oci, start_registry
from aicr_lab.charts.pytest_fixture import example_charts_dir

pytestmark = pytest.mark.helm


@pytest.fixture
def registry(tmp_path):
    started = start_registry(tmp_path / "registry")
    yield started
    started.stop()


def packaged(tmp_path, chart):
    run_helm(["package", str(example_charts_dir() / chart), "--destination", str(tmp_path / "pkg")], env=isolated_env(tmp_path / "home"))
    return tmp_path / "pkg" / ("%s-0.1.0.tgz" % chart)


def test_registry_answers_v2_and_stops(tmp_path):
    started = start_registry(tmp_path / "r")
    with urllib.request.urlopen(started.http_url + "/v2/", timeout=5) as response:
        assert response.status == 200
        assert response.headers["Docker-Distribution-Api-Version"] == "registry/2.0"
    assert started.catalog() == []
    started.stop()
    assert started.process.poll() is not None
    with pytest.raises(urllib.error.URLError):
        urllib.request.urlopen(started.http_url + "/v2/", timeout=2)


def test_a_busy_fixed_port_is_an_error(tmp_path, registry):
    port = int(registry.host.rsplit(":", 1)[1])
    with pytest.raises(RegistryError, match="registry exited at start"):
        start_registry(tmp_path / "second", port=port, timeout=5)


@pytest.mark.parametrize("binary", ["helm3", "helm4"])
def test_push_then_pull_and_template_with_real_helm(tmp_path, registry, binary):
    helm = str(Path(sys.executable).parent / binary)
    tgz = packaged(tmp_path, "example-operator")
    ref = push_chart(registry, tgz, "charts.example/aicr", helm=helm)
    assert ref == "%s/charts.example/aicr/example-operator:0.1.0" % registry.url
    assert registry.tags("charts.example/aicr/example-operator") == ["0.1.0"]
    env = isolated_env(tmp_path / "client")
    base = ref.rsplit(":", 1)[0]
    (tmp_path / "pulled").mkdir()
    run_helm(["pull", base, "--version", "0.1.0", "--plain-http", "--destination", str(tmp_path / "pulled")], helm=helm, env=env)
    assert chart_metadata(tmp_path / "pulled" / "example-operator-0.1.0.tgz") == ("example-operator", "0.1.0")
    rendered = run_helm(["template", "op", base, "--version", "0.1.0", "--plain-http", "--set", "replicaCount=4"], helm=helm, env=env)
    deploy = [d for d in yaml.safe_load_all(rendered) if d and d["kind"] == "Deployment"][0]
    assert deploy["spec"]["replicas"] == 4
    with pytest.raises(HelmError, match="not found"):
        run_helm(["pull", base, "--version", "9.9.9", "--plain-http", "--destination", str(tmp_path / "pulled")], helm=helm, env=env)


def test_push_shared_oci_charts_at_their_upstream_paths(tmp_path, registry, shared_dir):
    oci_dir = shared_dir / "charts-repo" / "oci"
    refs = push_shared_oci(registry, oci_dir)
    expected = {}
    for tgz in oci_dir.rglob("*.tgz"):
        name, version = chart_metadata(tgz)
        path = tgz.parent.relative_to(oci_dir).as_posix()
        expected["oci://%s/%s:%s" % (path, name, version)] = "%s/%s/%s:%s" % (registry.url, path, name, version)
    assert refs == expected
    assert "oci://registry.k8s.io/dra-driver-nvidia/charts/dra-driver-nvidia-gpu:0.4.1" in refs
    assert sorted(registry.catalog()) == sorted(r[len(registry.url) + 1:].rsplit(":", 1)[0] for r in refs.values())
    local = refs["oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler:v0.14.1"]
    shown = run_helm(["show", "chart", local.rsplit(":", 1)[0], "--version", "v0.14.1", "--plain-http"], env=isolated_env(tmp_path / "client"))
    assert yaml.safe_load(shown)["name"] == "kai-scheduler"


def test_push_shared_oci_refuses_an_empty_directory(tmp_path, registry):
    (tmp_path / "empty").mkdir()
    with pytest.raises(RegistryError, match="no .tgz under"):
        push_shared_oci(registry, tmp_path / "empty")
