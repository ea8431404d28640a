"""Catalog releases: versioned archives, index files, selection and CatalogCurrent."""

import json

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._stack import releases


@pytest.fixture
def release_dir(tmp_path):
    for name in ("aicr-catalog-1.0.0.tar.gz", "aicr-catalog-v1.10.0.tgz", "aicr-catalog-1.2.0.tar.gz", "aicr-catalog-1.10.0-rc.1.tar.gz",
                 "notes.txt", "aicr-catalog-latest.tar.gz"):
        (tmp_path / name).write_bytes(b"x")
    return tmp_path


def test_archives_are_sorted_by_version(release_dir):
    found = releases.list_releases(str(release_dir))
    assert [r["version"] for r in found] == ["1.0.0", "1.2.0", "1.10.0-rc.1", "1.10.0"]
    assert found[-1]["path"].endswith("aicr-catalog-v1.10.0.tgz")


def test_index_file_wins(tmp_path):
    (tmp_path / "aicr-catalog-9.9.9.tar.gz").write_bytes(b"x")
    (tmp_path / "index.json").write_text(json.dumps({"releases": [{"version": "2.0.0", "path": "b.tgz", "digest": "sha256:b"},
                                                                  {"version": "1.0.0", "path": "a.tgz"}]}))
    found = releases.list_releases(str(tmp_path))
    assert [(r["version"], r["digest"]) for r in found] == [("1.0.0", ""), ("2.0.0", "sha256:b")]
    (tmp_path / "index.json").write_text(json.dumps({"releases": [{"version": "2.0.0"}]}))
    with pytest.raises(AicrError, match="entry .* is not allowed; allowed: {version, path, digest}"):
        releases.list_releases(str(tmp_path))


def test_yaml_index(tmp_path):
    (tmp_path / "index.yaml").write_text("releases:\n  - {version: 0.1.0, path: a.tar.gz}\n")
    assert releases.list_releases(str(tmp_path))[0]["version"] == "0.1.0"
    (tmp_path / "index.yaml").write_text("releases: nope\n")
    with pytest.raises(AicrError, match="releases is 'str'"):
        releases.list_releases(str(tmp_path))


def test_unversioned_sources(tmp_path):
    (tmp_path / "registry.yaml").write_text("x")
    assert releases.list_releases(str(tmp_path)) is None
    assert releases.list_releases(str(tmp_path / "catalog.tar.gz")) is None
    sel = releases.select({"source": str(tmp_path)})
    assert sel["versioned"] is False and sel["current"] is None and sel["path"] == str(tmp_path)
    with pytest.raises(AicrError, match="spec.catalog.source: empty"):
        releases.select({})


def test_selection_keeps_the_resolved_release_unless_auto_update(release_dir):
    spec = {"source": str(release_dir)}
    first = releases.select(spec)
    assert first["version"] == "1.10.0" and first["current"] is True and first["upgrade"] is False
    kept = releases.select(spec, resolved_version="1.2.0")
    assert kept["version"] == "1.2.0" and kept["current"] is False and kept["upgrade"] is False
    assert kept["message"] == "catalog 1.10.0 is available (using 1.2.0, autoUpdate is off)"
    auto = releases.select(spec, resolved_version="1.2.0", auto_update=True)
    assert auto["version"] == "1.10.0" and auto["upgrade"] is True and auto["current"] is True
    pinned = releases.select(dict(spec, version="v1.0.0"), resolved_version="1.2.0", auto_update=True)
    assert pinned["version"] == "1.0.0" and pinned["upgrade"] is True and "pinned by spec.catalog.version" in pinned["message"]
    with pytest.raises(AicrError, match=r"spec.catalog.version: '3.0.0' is not allowed; allowed: 1.0.0, 1.2.0, 1.10.0-rc.1, 1.10.0"):
        releases.select(dict(spec, version="3.0.0"))


def test_version_key_rejects_garbage():
    assert releases.version_key("1.2.3") > releases.version_key("1.2.3-rc.1")
    with pytest.raises(AicrError, match="MAJOR.MINOR.PATCH"):
        releases.version_key("one.two")
