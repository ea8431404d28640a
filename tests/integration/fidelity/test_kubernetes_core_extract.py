"""kubernetes_core.py: extraction from the ansible wheel, checked against the pins and the collection's FILES.json."""

import hashlib
import json
import sys
import zipfile
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kubernetes_core  # noqa: E402  pylint: disable=wrong-import-position

PREFIX = kubernetes_core.PREFIX


def sha(data):
    return hashlib.sha256(data).hexdigest()


def build_wheel(path, files, version="9.9.9", listed=None, files_json_digest=None, extra=None):
    """A wheel holding kubernetes.core with FILES.json/MANIFEST.json describing ``files`` (or ``listed``)."""
    listed = files if listed is None else listed
    files_json = json.dumps({"files": [{"name": ".", "ftype": "dir", "chksum_type": None, "chksum_sha256": None, "format": 1}] + [
        {"name": name, "ftype": "file", "chksum_type": "sha256", "chksum_sha256": sha(data), "format": 1} for name, data in listed.items()],
        "format": 1}).encode()
    manifest = json.dumps({"collection_info": {"namespace": "kubernetes", "name": "core", "version": version},
                           "file_manifest_file": {"name": "FILES.json", "chksum_sha256": files_json_digest or sha(files_json)}}).encode()
    with zipfile.ZipFile(str(path), "w") as wheel:
        wheel.writestr("ansible_collections/other/thing/README.md", "not extracted")
        wheel.writestr(PREFIX + "FILES.json", files_json)
        wheel.writestr(PREFIX + "MANIFEST.json", manifest)
        for name, data in files.items():
            wheel.writestr(PREFIX + name, data)
        for name, data in (extra or {}).items():
            wheel.writestr(name, data)
    return sha(path.read_bytes())


@pytest.fixture
def pinned(tmp_path, monkeypatch):
    """Pins pointed at a synthetic wheel in a cache; returns (cache, files)."""
    files = {"plugins/modules/k8s.py": b"# module\n", "meta/runtime.yml": b"requires_ansible: '>=2.16.0'\n"}
    cache = tmp_path / "cache"
    cache.mkdir()
    digest = build_wheel(cache / "ansible-0-py3-none-any.whl", files)
    monkeypatch.setattr(kubernetes_core, "WHEEL", "ansible-0-py3-none-any.whl")
    monkeypatch.setattr(kubernetes_core, "WHEEL_SHA256", digest)
    monkeypatch.setattr(kubernetes_core, "COLLECTION_VERSION", "9.9.9")
    return cache, files


def test_extracts_only_kubernetes_core_and_is_idempotent(tmp_path, pinned):
    cache, files = pinned
    root = kubernetes_core.ensure(tmp_path / "collections", cache)
    core = kubernetes_core.collection_dir(root)
    for name, data in files.items():
        assert (core / name).read_bytes() == data
    assert not (root / "ansible_collections" / "other").exists()
    marker = core / kubernetes_core.MARKER
    stamp = marker.stat().st_mtime_ns
    (cache / kubernetes_core.WHEEL).unlink()  # a current extraction needs no wheel
    kubernetes_core.ensure(tmp_path / "collections", cache)
    assert marker.stat().st_mtime_ns == stamp
    assert [p.name for p in core.parent.iterdir()] == ["core"], "no staging directory left behind"


@pytest.mark.parametrize("case,message", [
    ("tampered", "checksum mismatch for kubernetes.core plugins/modules/k8s.py"),
    ("unlisted", "is not listed in the collection's FILES.json"),
    ("files_json", "FILES.json does not match the checksum in MANIFEST.json"),
    ("version", "bundles kubernetes.core 1.0.0, expected 9.9.9"),
    ("traversal", "unsafe member"),
])
def test_a_bad_wheel_is_refused_and_nothing_is_installed(tmp_path, pinned, monkeypatch, case, message):
    cache, files = pinned
    wheel = cache / kubernetes_core.WHEEL
    if case == "tampered":
        digest = build_wheel(wheel, dict(files, **{"plugins/modules/k8s.py": b"# evil\n"}), listed=files)
    elif case == "unlisted":
        digest = build_wheel(wheel, dict(files, **{"plugins/modules/extra.py": b""}), listed=files)
    elif case == "files_json":
        digest = build_wheel(wheel, files, files_json_digest="0" * 64)
    elif case == "version":
        digest = build_wheel(wheel, files, version="1.0.0")
    else:
        digest = build_wheel(wheel, files, extra={PREFIX + "../../escape.py": b""})
    monkeypatch.setattr(kubernetes_core, "WHEEL_SHA256", digest)
    with pytest.raises(kubernetes_core.ExtractError, match=message):
        kubernetes_core.ensure(tmp_path / "collections", cache)
    assert not kubernetes_core.collection_dir(tmp_path / "collections").exists()
    assert not list((tmp_path / "collections").rglob("*.py"))


def test_wheel_checksum_is_pinned(tmp_path, pinned, monkeypatch, capsys):
    cache, _files = pinned
    monkeypatch.setattr(kubernetes_core, "WHEEL_SHA256", "1" * 64)
    # the cached wheel does not match, so a download is attempted: pretend pip succeeded without changing it
    monkeypatch.setattr(kubernetes_core.subprocess, "run", lambda *a, **k: kubernetes_core.subprocess.CompletedProcess(a, 0, stdout=""))
    assert kubernetes_core.main(["--dest", str(tmp_path / "collections"), "--cache", str(cache)]) == 2
    assert "checksum mismatch for" in capsys.readouterr().err
