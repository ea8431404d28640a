"""Bad catalogs, cleanly (issue 15 item 7): symlinks leaving a directory catalog, symlink loops, archives past the size
caps (a gzip bomb generated here), and cache directories that are not this user's own."""

import gzip
import io
import os
import re
import stat
import tarfile
import tracemalloc

import pytest

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import catalog as catalog_mod
from ansible_collections.aicr.runtime.plugins.module_utils._recipe import files as files_mod

from recipe_helpers import make_catalog

MIB = 1024 * 1024
GIB = 1024 * MIB


@pytest.fixture(autouse=True)
def _fresh_process_cache():
    catalog_mod.clear_process_cache()
    yield
    catalog_mod.clear_process_cache()


def _one_line(exc):
    msg = str(exc.value)
    assert "\n" not in msg and "Errno" not in msg and "Traceback" not in msg, msg
    return msg


# --- symlinks in a directory catalog ---------------------------------------------------------------------------------

def test_a_symlink_to_a_file_outside_the_catalog_is_refused_naming_link_and_target(tmp_path):
    root = make_catalog(tmp_path / "cat")
    secret = tmp_path / "outside" / "id_rsa"
    secret.parent.mkdir()
    secret.write_text("PRIVATE KEY")
    os.symlink(str(secret), os.path.join(root, "components", "gamma", "manifests", "key.yaml"))
    with pytest.raises(AicrError) as exc:
        catalog_mod.load_catalog(root, persist=False)
    assert _one_line(exc) == ("catalog: symlink components/gamma/manifests/key.yaml -> %s points outside the catalog (to %s); "
                              "allowed: links to files and directories inside it" % (secret, secret))


def test_a_relative_symlink_to_a_directory_outside_is_refused(tmp_path):
    root = make_catalog(tmp_path / "cat")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "x.yaml").write_text("a: 1\n")
    os.symlink("../../elsewhere", os.path.join(root, "components", "leak"))
    with pytest.raises(AicrError, match=r"^catalog: symlink components/leak -> \.\./\.\./elsewhere points outside the catalog \(to .*elsewhere\)"):
        catalog_mod.load_catalog(root, persist=False)


def test_symlinks_inside_the_catalog_are_followed(tmp_path):
    root = make_catalog(tmp_path / "cat")
    os.symlink("values.yaml", os.path.join(root, "components", "beta", "values-alias.yaml"))
    os.symlink("../gamma", os.path.join(root, "components", "beta", "gamma-too"))
    cat = catalog_mod.load_catalog(root, persist=False)
    assert cat.values_doc("components/beta/values-alias.yaml") == {"mode": "standard"}
    assert cat.read_text("components/beta/gamma-too/manifests/cm.yaml").startswith("apiVersion: v1")


def test_a_symlink_to_a_directory_containing_it_is_reported_as_a_loop(tmp_path):
    root = make_catalog(tmp_path / "cat")
    os.symlink("..", os.path.join(root, "components", "up"))
    with pytest.raises(AicrError) as exc:
        catalog_mod.load_catalog(root, persist=False)
    assert _one_line(exc) == "catalog: symlink components/up -> .. is a loop (it points to the catalog's top, a directory that contains it)"


def test_a_chain_of_symlinks_that_never_ends_is_reported_as_a_loop(tmp_path):
    root = make_catalog(tmp_path / "cat")
    os.symlink("b.yaml", os.path.join(root, "a.yaml"))
    os.symlink("a.yaml", os.path.join(root, "b.yaml"))
    with pytest.raises(AicrError) as exc:
        catalog_mod.load_catalog(root, persist=False)
    assert _one_line(exc) == "catalog: symlink a.yaml -> b.yaml is a loop (a chain of links that never ends)"


def test_a_broken_symlink_is_refused(tmp_path):
    root = make_catalog(tmp_path / "cat")
    os.symlink("missing.yaml", os.path.join(root, "overlays", "gone.yaml"))
    with pytest.raises(AicrError) as exc:
        catalog_mod.load_catalog(root, persist=False)
    assert _one_line(exc) == "catalog: symlink overlays/gone.yaml -> missing.yaml is broken (No such file or directory)"


def test_a_catalog_path_that_is_a_symlink_loop_is_reported(tmp_path):
    os.symlink(str(tmp_path / "b"), str(tmp_path / "a"))
    os.symlink(str(tmp_path / "a"), str(tmp_path / "b"))
    with pytest.raises(AicrError) as exc:
        catalog_mod.load_catalog(str(tmp_path / "a"), persist=False)
    assert _one_line(exc) == "catalog: %s is a broken symlink or a symlink loop (give a recipes/ directory or a .tar.gz of one)" % (tmp_path / "a")


def test_a_catalog_given_through_a_symlink_is_read(tmp_path):
    root = make_catalog(tmp_path / "cat")
    os.symlink(root, str(tmp_path / "current"))
    assert catalog_mod.load_catalog(str(tmp_path / "current"), persist=False).digest == catalog_mod.load_catalog(root, persist=False).digest


def test_a_directory_past_the_caps_is_refused(tmp_path, monkeypatch):
    root = make_catalog(tmp_path / "cat")
    (tmp_path / "cat" / "components" / "big.bin").write_bytes(b"x" * 2048)
    monkeypatch.setattr(files_mod, "DEFAULT_LIMITS", files_mod.Limits(file_bytes=1024))
    with pytest.raises(AicrError, match=r"^catalog: .*/cat is too big: components/big.bin has 2048 bytes \(allowed: at most 1024 bytes per file"):
        catalog_mod.load_catalog(root, persist=False)
    monkeypatch.setattr(files_mod, "DEFAULT_LIMITS", files_mod.Limits(entries=3))
    with pytest.raises(AicrError, match=r"is too big: more than 3 entries \(allowed: at most 3 entries"):
        catalog_mod.load_catalog(root, persist=False)


# --- archives: size caps, read as a stream ----------------------------------------------------------------------------

ZEROS_MIB = gzip.compress(b"\0" * MIB)  # one gzip member: 1 MiB of zeros in about 1 KiB


def _bomb(path, headers_and_sizes):
    """A .tar.gz of concatenated gzip members (valid gzip): for each (tar header bytes, MiB of zeros) the header, then
    that many MiB of zeros, each MiB 1 KiB on disk; a 10 GiB member costs 10 MB."""
    with open(str(path), "wb") as out:
        for header, mib in headers_and_sizes:
            out.write(gzip.compress(header))
            out.write(ZEROS_MIB * mib)
    return str(path)


def _header(name, size, kind=tarfile.REGTYPE):
    info = tarfile.TarInfo(name)
    info.size, info.type = size, kind
    return info.tobuf(format=tarfile.PAX_FORMAT)


def _peak(call):
    """Peak Python memory while ``call`` runs (and the AicrError it raised)."""
    tracemalloc.start()
    try:
        with pytest.raises(AicrError) as exc:
            call()
        return tracemalloc.get_traced_memory()[1], exc
    finally:
        tracemalloc.stop()


def test_a_gzip_bomb_is_refused_unread_with_the_default_caps(tmp_path):
    # 10 GiB of zeros in a 10 MB file: one member whose header says so
    bomb = _bomb(tmp_path / "bomb.tar.gz", [(_header("recipes/registry.yaml", 10 * GIB), 10 * 1024)])
    assert os.path.getsize(bomb) < 16 * MIB
    peak, exc = _peak(lambda: catalog_mod.load_catalog(bomb, cache_dir=str(tmp_path / "cache")))
    assert _one_line(exc) == ("catalog: %s is too big: recipes/registry.yaml has %d bytes (allowed: at most %d MiB per file; a recipes/ catalog is a "
                              "few MB)" % (bomb, 10 * GIB, files_mod.MAX_FILE_BYTES // MIB))
    assert peak < 4 * MIB, "read %d bytes into memory" % peak
    assert not (tmp_path / "cache" / "catalogs").exists()


def test_an_extended_header_too_big_is_never_read_into_memory(tmp_path):
    # a pax header tarfile would read whole: 2 GiB of it
    bomb = _bomb(tmp_path / "pax.tar.gz", [(_header("././@PaxHeader", 2 * GIB, tarfile.XHDTYPE)[:512], 2 * 1024)])
    peak, exc = _peak(lambda: files_mod.read_tarball(bomb))
    assert _one_line(exc) == "catalog: %s is too big: an entry of %d bytes (allowed: at most %d MiB per file; a recipes/ catalog is a few MB)" % (
        bomb, 2 * GIB, files_mod.MAX_FILE_BYTES // MIB)
    assert peak < 4 * MIB, "read %d bytes into memory" % peak


def test_many_files_each_under_the_file_cap_stop_at_the_total_cap(tmp_path):
    limits = files_mod.Limits(total_bytes=4 * MIB, file_bytes=MIB)
    bomb = _bomb(tmp_path / "many.tar.gz", [(_header("f%d.yaml" % i, MIB), 1) for i in range(64)])
    peak, exc = _peak(lambda: files_mod.read_tarball(bomb, limits))
    assert _one_line(exc) == "catalog: %s is too big: its files have more than 4 MiB (allowed: at most 4 MiB in all; a recipes/ catalog is a few MB)" % bomb
    assert peak < 8 * MIB, "read %d bytes into memory" % peak


def test_too_many_members_are_refused(tmp_path):
    path = tmp_path / "members.tar.gz"
    with tarfile.open(str(path), "w:gz") as archive:
        for index in range(101):
            archive.addfile(tarfile.TarInfo("d%d/" % index if index % 2 else "f%d" % index), io.BytesIO(b""))
    with pytest.raises(AicrError) as exc:
        files_mod.read_tarball(str(path), files_mod.Limits(entries=100))
    assert _one_line(exc) == "catalog: %s is too big: more than 100 entries (allowed: at most 100 entries; a recipes/ catalog is a few MB)" % path


def test_an_archive_file_past_its_cap_is_refused_before_it_is_opened(tmp_path):
    path = tmp_path / "big.tar.gz"
    path.write_bytes(b"\0" * 4096)  # not even gzip: never opened
    with pytest.raises(AicrError) as exc:
        files_mod.read_tarball(str(path), files_mod.Limits(archive_bytes=1024))
    assert _one_line(exc) == ("catalog: %s is too big: the archive has 4096 bytes (allowed: at most 1024 bytes compressed; a recipes/ catalog is a "
                              "few MB)" % path)


# mtime=0 and ids: a gzip header carries its time, and xdist workers must collect the same test ids
@pytest.mark.parametrize("content", [b"\x1f\x8b\x08\x00garbage", gzip.compress(b"not a tar archive" * 40, mtime=0),
                                     gzip.compress(b"x" * 600, mtime=0)[:40]], ids=["bad-deflate", "gzip-not-tar", "truncated-gzip"])
def test_a_corrupt_archive_is_one_line(tmp_path, content):
    path = tmp_path / "bad.tar.gz"
    path.write_bytes(content)
    with pytest.raises(AicrError) as exc:
        files_mod.read_tarball(str(path))
    assert _one_line(exc).startswith("catalog: cannot open %s as a .tar.gz archive: " % path)


def test_a_real_tarball_within_the_caps_reads_as_before(tmp_path):
    src = make_catalog(tmp_path / "src")
    path = tmp_path / "cat.tar.gz"
    with tarfile.open(str(path), "w:gz") as archive:
        archive.add(src, arcname="recipes")
        link = tarfile.TarInfo("recipes/link.yaml")
        link.type, link.linkname = tarfile.SYMTYPE, "/etc/passwd"
        archive.addfile(link)  # links in an archive are never extracted nor read
    entries = files_mod.read_tarball(str(path))
    assert entries == files_mod.read_directory(files_mod.scan_directory(src))


# --- cache directories ------------------------------------------------------------------------------------------------

def _tarball(tmp_path):
    src = make_catalog(tmp_path / "src")
    path = tmp_path / "cat.tar.gz"
    with tarfile.open(str(path), "w:gz") as archive:
        archive.add(src, arcname="recipes")
    return str(path)


def test_a_given_cache_dir_is_created_0700(tmp_path):
    cache = tmp_path / "new" / "cache"
    cat = catalog_mod.load_catalog(_tarball(tmp_path), cache_dir=str(cache))
    assert stat.S_IMODE(os.stat(str(cache)).st_mode) == 0o700
    assert cat.root.startswith(str(cache / "catalogs"))


@pytest.mark.parametrize("kind, problem", [
    ("group-writable", r"is writable by group or others \(mode 0775\)"),
    ("world-writable", r"is writable by group or others \(mode 0777\)"),
    ("symlink", r"is a symlink \(to .*/real\), not a directory of its own"),
    ("file", r"is not a directory"),
])
def test_a_given_cache_dir_that_is_not_private_is_refused(tmp_path, kind, problem):
    cache = tmp_path / "cache"
    if kind == "symlink":
        (tmp_path / "real").mkdir(mode=0o700)
        os.symlink(str(tmp_path / "real"), str(cache))
    elif kind == "file":
        cache.write_text("")
    else:
        cache.mkdir()
        os.chmod(str(cache), 0o775 if kind == "group-writable" else 0o777)
    root = make_catalog(tmp_path / "cat")
    for catalog in (root, _tarball(tmp_path)):
        with pytest.raises(AicrError) as exc:
            catalog_mod.load_catalog(catalog, cache_dir=str(cache))
        assert exc.value.details["field"] == "cache_dir"
        assert re.match(r"^cache_dir: %s %s; allowed: a directory owned by this user that group and others cannot write "
                        r"\(created 0700 when missing\)$" % (re.escape(str(cache)), problem), _one_line(exc)), str(exc.value)


@pytest.mark.skipif(os.getuid() != 0, reason="giving a directory to another user needs root")
def test_a_given_cache_dir_of_another_user_is_refused(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    os.chown(str(cache), 65534, 65534)
    with pytest.raises(AicrError) as exc:
        catalog_mod.load_catalog(_tarball(tmp_path), cache_dir=str(cache))
    assert _one_line(exc) == ("cache_dir: %s is owned by uid 65534, not by this user (uid 0); allowed: a directory owned by this user that group "
                              "and others cannot write (created 0700 when missing)" % cache)


def test_the_environment_cache_dir_counts_as_given(tmp_path, monkeypatch):
    cache = tmp_path / "env-cache"
    cache.mkdir()
    os.chmod(str(cache), 0o777)
    monkeypatch.setenv("AICR_RUNTIME_CACHE_DIR", str(cache))
    with pytest.raises(AicrError, match=r"^cache_dir: .*/env-cache is writable by group or others \(mode 0777\)"):
        catalog_mod.load_catalog(make_catalog(tmp_path / "cat"))


def test_a_default_cache_dir_that_is_not_private_is_not_used(tmp_path, monkeypatch):
    monkeypatch.delenv("AICR_RUNTIME_CACHE_DIR", raising=False)
    xdg = tmp_path / "xdg"
    (xdg / "aicr-runtime").mkdir(parents=True)
    os.chmod(str(xdg / "aicr-runtime"), 0o777)
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg))
    monkeypatch.setattr(files_mod.tempfile, "gettempdir", lambda: str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    cat = catalog_mod.load_catalog(_tarball(tmp_path))
    assert cat.root.startswith(str(tmp_path / "tmp" / ("aicr-runtime-%d" % os.getuid()))), "unpacked into the private fallback"
    assert os.listdir(str(xdg / "aicr-runtime")) == [], "nothing read from or written to a directory others can write"
    assert cat.cache_written is False


def test_check_mode_never_creates_a_missing_cache_dir_for_a_directory_catalog(tmp_path):
    cache = tmp_path / "cache"
    catalog_mod.load_catalog(make_catalog(tmp_path / "cat"), cache_dir=str(cache), write_cache=False)
    assert not cache.exists()
