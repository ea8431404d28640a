"""Catalog loading: directory and tarball, digest, caches, and bad-catalog errors."""

import json
import os
import stat
import tarfile

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import catalog as catalog_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import files as files_mod

from recipe_helpers import base_doc, make_catalog, mixin, overlay, write


@pytest.fixture(autouse=True)
def _fresh_process_cache():
    catalog_mod.clear_process_cache()
    yield
    catalog_mod.clear_process_cache()


def _tar(src, dest, top=None):
    with tarfile.open(str(dest), "w:gz") as archive:
        for dirpath, _dirnames, filenames in os.walk(src):
            for filename in filenames:
                path = os.path.join(dirpath, filename)
                rel = os.path.relpath(path, src)
                archive.add(path, arcname=os.path.join(top, rel) if top else rel)
    return str(dest)


def test_directory_loads(tmp_path):
    root = make_catalog(tmp_path / "cat", overlays=[overlay("svc", {"service": "eks"})])
    cat = catalog_mod.load_catalog(root, cache_dir=str(tmp_path / "cache"))
    assert cat.base["metadata"]["name"] == "base"
    assert sorted(cat.overlays) == ["svc"]
    assert cat.registered["service"] == {"eks"}
    assert cat.digest.startswith("sha256:") and len(cat.digest) == 71
    assert set(cat.registry) == {"alpha", "beta", "gamma"}


def test_digest_depends_on_content_not_location(tmp_path):
    a = make_catalog(tmp_path / "a")
    b = make_catalog(tmp_path / "b")
    da = catalog_mod.load_catalog(a, persist=False).digest
    db = catalog_mod.load_catalog(b, persist=False).digest
    assert da == db
    write(b, "components/beta/values.yaml", {"mode": "changed"})
    catalog_mod.clear_process_cache()
    assert catalog_mod.load_catalog(b, persist=False).digest != da


@pytest.mark.parametrize("top", [None, "recipes"])
def test_tarball_with_and_without_top_folder(tmp_path, top):
    src = make_catalog(tmp_path / "src")
    tarball = _tar(src, tmp_path / "catalog.tar.gz", top)
    cache = tmp_path / "cache"
    cat = catalog_mod.load_catalog(tarball, cache_dir=str(cache))
    assert cat.digest == catalog_mod.load_catalog(src, persist=False).digest
    assert cat.root.startswith(str(cache / "catalogs"))
    assert os.path.isfile(cat.abspath("components/gamma/manifests/cm.yaml"))
    assert cat.read_text("components/gamma/manifests/cm.yaml").startswith("apiVersion: v1")


def test_process_cache_returns_same_object(tmp_path):
    root = make_catalog(tmp_path / "cat")
    assert catalog_mod.load_catalog(root, persist=False) is catalog_mod.load_catalog(root, persist=False)


def test_disk_cache_is_written_and_used(tmp_path):
    root = make_catalog(tmp_path / "cat", overlays=[overlay("svc", {"service": "eks"})])
    cache = tmp_path / "cache"
    first = catalog_mod.load_catalog(root, cache_dir=str(cache))
    assert first.from_disk_cache is False
    files = list((cache / "parsed").glob("*.json"))
    assert len(files) == 1
    payload = json.loads(files[0].read_text())
    assert payload["digest"] == first.digest
    catalog_mod.clear_process_cache()
    second = catalog_mod.load_catalog(root, cache_dir=str(cache))
    assert second.from_disk_cache is True
    assert second.overlays == first.overlays


def test_corrupt_disk_cache_is_ignored(tmp_path):
    root = make_catalog(tmp_path / "cat")
    cache = tmp_path / "cache"
    digest = catalog_mod.load_catalog(root, cache_dir=str(cache)).digest
    (cache / "parsed" / (digest.split(":")[1] + ".json")).write_text("{not json")
    catalog_mod.clear_process_cache()
    cat = catalog_mod.load_catalog(root, cache_dir=str(cache))
    assert cat.from_disk_cache is False and cat.base is not None


def test_missing_catalog_path(tmp_path):
    with pytest.raises(AicrError) as err:
        catalog_mod.load_catalog(str(tmp_path / "nope"))
    assert err.value.msg == "catalog: %s does not exist (give a recipes/ directory or a .tar.gz of one)" % (tmp_path / "nope")


def test_plain_file_is_not_a_catalog(tmp_path):
    path = write(tmp_path, "catalog.txt", "hello")
    with pytest.raises(AicrError) as err:
        catalog_mod.load_catalog(path)
    assert "not a .tar.gz" in err.value.msg


def test_broken_tarball(tmp_path):
    path = write(tmp_path, "catalog.tar.gz", "not gzip")
    with pytest.raises(AicrError) as err:
        catalog_mod.load_catalog(path, cache_dir=str(tmp_path / "cache"))
    assert err.value.msg.startswith("catalog: cannot open")


def test_malformed_yaml_names_file_and_line(tmp_path):
    root = make_catalog(tmp_path / "cat")
    write(root, "overlays/bad.yaml", "kind: RecipeMetadata\nmetadata:\n  name: bad\nspec:\n  criteria: [unclosed\n")
    with pytest.raises(AicrError) as err:
        catalog_mod.load_catalog(root, persist=False)
    assert err.value.details["file"] == "overlays/bad.yaml"
    assert err.value.details["line"] == 6
    assert err.value.msg.startswith("catalog file overlays/bad.yaml: malformed YAML at line 6")
    assert "\n" not in err.value.msg


def test_missing_base(tmp_path):
    root = make_catalog(tmp_path / "cat")
    os.remove(os.path.join(root, "overlays", "base.yaml"))
    with pytest.raises(AicrError) as err:
        catalog_mod.load_catalog(root, persist=False)
    assert "overlays/base.yaml (kind RecipeMetadata) not found" in err.value.msg


def test_missing_registry(tmp_path):
    root = make_catalog(tmp_path / "cat")
    os.remove(os.path.join(root, "registry.yaml"))
    with pytest.raises(AicrError) as err:
        catalog_mod.load_catalog(root, persist=False)
    assert "registry.yaml not found" in err.value.msg


def test_unknown_base(tmp_path):
    root = make_catalog(tmp_path / "cat", overlays=[overlay("child", {"service": "eks"}, base="ghost")])
    with pytest.raises(AicrError) as err:
        catalog_mod.load_catalog(root, persist=False)
    assert err.value.msg == ("catalog file overlays/child.yaml: spec.base 'ghost' not found "
                             "(overlay 'child'; a base must name another overlay or 'base')")


def test_inheritance_cycle(tmp_path):
    root = make_catalog(tmp_path / "cat", overlays=[overlay("a", {"service": "eks"}, base="b"), overlay("b", {"service": "eks"}, base="a")])
    with pytest.raises(AicrError) as err:
        catalog_mod.load_catalog(root, persist=False)
    assert err.value.msg == "catalog file overlays/a.yaml: circular inheritance detected: a -> b -> a"


def test_duplicate_mixin(tmp_path):
    root = make_catalog(tmp_path / "cat", mixins=[mixin("os-x", constraints=[{"name": "OS.release.ID", "value": "x"}])])
    write(root, "mixins/os-x-copy.yaml", mixin("os-x"))
    with pytest.raises(AicrError) as err:
        catalog_mod.load_catalog(root, persist=False)
    assert err.value.msg == "duplicate mixin name 'os-x' in mixins/os-x.yaml (first defined in mixins/os-x-copy.yaml)"


def test_mixin_unknown_field(tmp_path):
    doc = mixin("m")
    doc["spec"]["criteria"] = {"service": "eks"}
    root = make_catalog(tmp_path / "cat", mixins=[doc])
    with pytest.raises(AicrError) as err:
        catalog_mod.load_catalog(root, persist=False)
    assert "unknown fields are not allowed" in err.value.msg and "spec.criteria" in err.value.msg


def test_mixin_wrong_kind(tmp_path):
    doc = mixin("m")
    doc["kind"] = "RecipeMetadata"
    root = make_catalog(tmp_path / "cat", mixins=[doc])
    with pytest.raises(AicrError) as err:
        catalog_mod.load_catalog(root, persist=False)
    assert err.value.msg == "mixin file mixins/m.yaml has kind 'RecipeMetadata', expected 'RecipeMixin'"


def test_base_dependency_cycle_is_a_load_error(tmp_path):
    base = base_doc(refs=[{"name": "alpha", "dependencyRefs": ["beta"]}, {"name": "beta", "dependencyRefs": ["alpha"]}])
    root = make_catalog(tmp_path / "cat", base=base)
    with pytest.raises(AicrError) as err:
        catalog_mod.load_catalog(root, persist=False)
    assert err.value.msg == "overlays/base.yaml spec.componentRefs: circular dependency detected: alpha -> beta -> alpha"
    assert err.value.details["cycle"] == ["alpha", "beta", "alpha"]


def test_duplicate_overlay_name(tmp_path):
    root = make_catalog(tmp_path / "cat", overlays=[overlay("svc", {"service": "eks"})])
    write(root, "overlays/svc-again.yaml", overlay("svc", {"service": "gke"}))
    with pytest.raises(AicrError) as err:
        catalog_mod.load_catalog(root, persist=False)
    assert "duplicate overlay name 'svc'" in err.value.msg


def test_non_recipe_yaml_is_ignored(tmp_path):
    root = make_catalog(tmp_path / "cat")
    write(root, "validators/catalog.yaml", {"kind": "ValidatorCatalog", "validators": []})
    write(root, "evidence/x/attest.yaml", {"recipe": "x"})
    cat = catalog_mod.load_catalog(root, persist=False)
    assert cat.overlays == {}


def test_real_catalog_is_cached_on_disk(aicr_catalog_dir, tmp_path):
    first = catalog_mod.load_catalog(str(aicr_catalog_dir), cache_dir=str(tmp_path))
    assert first.cache_written is True
    catalog_mod.clear_process_cache()
    second = catalog_mod.load_catalog(str(aicr_catalog_dir), cache_dir=str(tmp_path))
    assert second.from_disk_cache is True
    assert second.overlays == first.overlays and second.mixins == first.mixins and second.registry == first.registry


def test_real_catalog_loads(aicr_catalog):
    assert len(aicr_catalog.overlays) == 102
    assert len(aicr_catalog.mixins) == 4
    assert "l40s" in aicr_catalog.registered["accelerator"]
    assert "ol" in aicr_catalog.registered["os"]


def test_changed_directory_is_reloaded_without_clearing_the_cache(tmp_path):
    root = make_catalog(tmp_path / "cat")
    first = catalog_mod.load_catalog(root, persist=False)
    assert catalog_mod.load_catalog(root, persist=False) is first
    write(root, "components/beta/values.yaml", {"mode": "a-much-longer-value"})
    second = catalog_mod.load_catalog(root, persist=False)
    assert second is not first and second.digest != first.digest
    assert second.values_doc("components/beta/values.yaml") == {"mode": "a-much-longer-value"}


def test_write_cache_false_reads_but_never_writes(tmp_path):
    root = make_catalog(tmp_path / "cat")
    cache = tmp_path / "cache"
    cat = catalog_mod.load_catalog(root, cache_dir=str(cache), write_cache=False)
    assert cat.cache_written is False and not (cache / "parsed").exists()
    catalog_mod.clear_process_cache()
    catalog_mod.load_catalog(root, cache_dir=str(cache))
    catalog_mod.clear_process_cache()
    assert catalog_mod.load_catalog(root, cache_dir=str(cache), write_cache=False).from_disk_cache is True


@pytest.fixture
def shared_tmp(tmp_path, monkeypatch):
    """The temp dir of the unpack fallback (``<tmp>/aicr-runtime-<uid>``, used when the cache dir is not writable), as a
    shared /tmp would be."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    monkeypatch.setattr(files_mod.tempfile, "gettempdir", lambda: str(shared))
    return shared / ("aicr-runtime-%d" % os.getuid())


ENTRIES = {"overlays/base.yaml": b"kind: RecipeMetadata\n"}
DIGEST = "sha256:" + "ab" * 32


def test_unpack_fallback_is_created_private(shared_tmp):
    root = files_mod.unpack(ENTRIES, None, DIGEST)
    assert root == str(shared_tmp / "catalogs" / ("ab" * 32))
    assert stat.S_IMODE(os.stat(str(shared_tmp)).st_mode) == 0o700
    assert files_mod.unpack(ENTRIES, None, DIGEST) == root, "unpacked once, then reused"


def _plant(where):
    """A catalog someone else prepared where this run would look for the unpacked tarball."""
    planted = where / "catalogs" / ("ab" * 32)
    planted.mkdir(parents=True)
    (planted / ".complete").write_text(DIGEST + "\n")


def test_a_world_writable_fallback_is_never_used(shared_tmp):
    shared_tmp.mkdir()
    os.chmod(str(shared_tmp), 0o777)
    _plant(shared_tmp)
    with pytest.raises(AicrError, match=r"^catalog: cannot unpack the archive into .* \(not writable, or not private to this user\)$"):
        files_mod.unpack(ENTRIES, None, DIGEST)


def test_a_symlinked_fallback_is_never_used(tmp_path, shared_tmp):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    os.symlink(str(elsewhere), str(shared_tmp))
    _plant(elsewhere)
    with pytest.raises(AicrError, match="not private to this user"):
        files_mod.unpack(ENTRIES, None, DIGEST)


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
def test_another_users_fallback_is_never_used(shared_tmp):
    shared_tmp.mkdir(mode=0o700)
    _plant(shared_tmp)
    os.chown(str(shared_tmp), 65534, 65534)
    with pytest.raises(AicrError, match="not private to this user"):
        files_mod.unpack(ENTRIES, None, DIGEST)


def test_the_cache_dir_is_tried_first(tmp_path, shared_tmp):
    root = files_mod.unpack(ENTRIES, str(tmp_path / "cache"), DIGEST)
    assert root == str(tmp_path / "cache" / "catalogs" / ("ab" * 32)) and not shared_tmp.exists()
