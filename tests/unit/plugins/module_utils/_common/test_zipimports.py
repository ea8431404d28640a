# -*- coding: utf-8 -*-
"""_common.zipimports: the collection's modules imported from a module payload (a zip archive, as AnsiballZ runs them)
compile once, their code kept in a private cache and read back by the next process.

Each case builds a payload like Ansible's - the collection's real ``zipimports``, ``jsoncache`` and ``errors`` sources
plus two module_utils of its own - and imports it in a fresh ``python -I -S`` (nothing but the standard library and
the archive), counting the ``compile`` calls per source file."""

import json
import os
import stat
import subprocess
import sys
import time
import zipfile
from pathlib import Path

from ansible_collections.aicr.runtime.plugins.module_utils._common import zipimports

REPO = Path(__file__).resolve().parents[5]
COMMON = REPO / "plugins" / "module_utils" / "_common"
PACKAGE = "ansible_collections/aicr/runtime/plugins/module_utils"

GREETING = '''
from ansible_collections.aicr.runtime.plugins.module_utils._demo.words import WORD


def greet(name):
    return "%s, %s" % (WORD, name)


def fail():
    raise ValueError("failing on purpose")
'''
WORDS = 'WORD = "hello"\n'

# What the test's module does: install first, then import the rest of "the collection"; prints what happened.
PROBE = r'''
import builtins, json, sys, traceback
compiled = []
real_compile = builtins.compile
def counting_compile(source, filename, *args, **kwargs):
    compiled.append(str(filename).split(".zip/", 1)[-1])
    return real_compile(source, filename, *args, **kwargs)
builtins.compile = counting_compile
sys.path.insert(0, sys.argv[1])
from ansible_collections.aicr.runtime.plugins.module_utils._common import zipimports
finder = zipimports.install()
from ansible_collections.aicr.runtime.plugins.module_utils._demo import greeting
try:
    greeting.fail()
except ValueError:
    failure = traceback.format_exc()
print(json.dumps({"installed": finder is not None, "cached": bool(finder and finder.cache), "greeting": greeting.greet("world"),
                  "file": greeting.__file__, "loader": type(greeting.__loader__).__name__, "compiled": compiled,
                  "again": zipimports.install() is finder, "traceback": failure}))
'''


def payload(path, greeting=GREETING):
    """A module payload holding the collection's import machinery and the two demo module_utils."""
    with zipfile.ZipFile(str(path), "w") as archive:
        for package in ("ansible_collections", "ansible_collections/aicr", "ansible_collections/aicr/runtime",
                        "ansible_collections/aicr/runtime/plugins", PACKAGE, PACKAGE + "/_common", PACKAGE + "/_demo"):
            archive.writestr(package + "/__init__.py", "")
        for name in ("zipimports.py", "jsoncache.py", "bounded.py", "errors.py"):  # jsoncache reads through bounded
            archive.writestr(PACKAGE + "/_common/" + name, (COMMON / name).read_text())
        archive.writestr(PACKAGE + "/_demo/greeting.py", greeting)
        archive.writestr(PACKAGE + "/_demo/words.py", WORDS)
    return path


def probe(tmp_path, archive, cache):
    script = tmp_path / "probe.py"
    script.write_text(PROBE)
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "AICR_RUNTIME_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-I", "-S", str(script), str(archive)], capture_output=True, text=True, env=env, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def demo_compiles(report):
    return sorted(name for name in report["compiled"] if "/_demo/" in name)


def entries(cache):
    directory = cache / "bytecode" / zipimports.interpreter_tag()
    return sorted(p.name for p in directory.iterdir()) if directory.is_dir() else []


def test_each_source_of_the_payload_compiles_once_and_its_code_is_cached(tmp_path):
    cache = tmp_path / "cache"
    report = probe(tmp_path, payload(tmp_path / "one.zip"), cache)
    assert report["greeting"] == "hello, world" and report["installed"] and report["cached"] and report["again"]
    assert report["loader"] == "CompileOnceLoader"
    assert report["file"] == str(tmp_path / "one.zip" / PACKAGE / "_demo" / "greeting.py")
    # Python's zipimport compiles a source twice (gh-141276); through the finder each is compiled once
    assert demo_compiles(report) == [PACKAGE + "/_demo/__init__.py", PACKAGE + "/_demo/greeting.py", PACKAGE + "/_demo/words.py"]
    assert len(entries(cache)) == 3
    for level in (cache, cache / "bytecode", cache / "bytecode" / zipimports.interpreter_tag()):
        assert stat.S_IMODE(level.stat().st_mode) == 0o700


def test_the_next_process_reads_the_code_back_and_tracebacks_name_its_own_archive(tmp_path):
    cache = tmp_path / "cache"
    probe(tmp_path, payload(tmp_path / "first.zip"), cache)
    report = probe(tmp_path, payload(tmp_path / "second.zip"), cache)  # each run's payload has a path of its own
    assert demo_compiles(report) == []
    assert report["greeting"] == "hello, world"
    second = str(tmp_path / "second.zip" / PACKAGE / "_demo" / "greeting.py")
    assert 'File "%s", line 10, in fail' % second in report["traceback"]
    assert 'raise ValueError("failing on purpose")' in report["traceback"], "the source line, through the loader"
    assert "first.zip" not in report["traceback"]


def test_a_changed_source_is_compiled_again_never_the_stale_code(tmp_path):
    cache = tmp_path / "cache"
    probe(tmp_path, payload(tmp_path / "old.zip"), cache)
    report = probe(tmp_path, payload(tmp_path / "new.zip", GREETING.replace('"%s, %s"', '"%s to %s"')), cache)
    assert report["greeting"] == "hello to world"
    assert demo_compiles(report) == [PACKAGE + "/_demo/greeting.py"]
    assert len(entries(cache)) == 4


def test_an_unreadable_entry_is_a_miss(tmp_path):
    cache = tmp_path / "cache"
    probe(tmp_path, payload(tmp_path / "one.zip"), cache)
    directory = cache / "bytecode" / zipimports.interpreter_tag()
    for name in entries(cache):
        (directory / name).write_bytes(b"\x00not marshalled code")
    report = probe(tmp_path, payload(tmp_path / "two.zip"), cache)
    assert report["greeting"] == "hello, world" and len(demo_compiles(report)) == 3


def test_a_cache_directory_others_can_write_is_not_used(tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir()
    cache.chmod(0o777)
    report = probe(tmp_path, payload(tmp_path / "one.zip"), cache)
    assert report["installed"] and not report["cached"]
    assert len(demo_compiles(report)) == 3, "still compiled once each"
    assert not (cache / "bytecode").exists()


def test_a_planted_bytecode_directory_is_not_used(tmp_path):
    cache = tmp_path / "cache"
    (cache / "bytecode" / zipimports.interpreter_tag()).mkdir(parents=True, mode=0o700)
    cache.chmod(0o700)
    (cache / "bytecode").chmod(0o775)
    report = probe(tmp_path, payload(tmp_path / "one.zip"), cache)
    assert not report["cached"] and entries(cache) == []


def test_entries_not_written_for_a_month_are_pruned_when_a_new_one_is_written(tmp_path):
    cache = tmp_path / "cache"
    directory = cache / "bytecode" / zipimports.interpreter_tag()
    directory.mkdir(parents=True)
    for level in (cache, cache / "bytecode", directory):
        level.chmod(0o700)
    old, recent = directory / ("a" * 64), directory / ("b" * 64)
    old.write_bytes(b"")
    recent.write_bytes(b"")
    month_ago = time.time() - zipimports.PRUNE_AFTER_SECONDS - 60
    os.utime(str(old), (month_ago, month_ago))
    probe(tmp_path, payload(tmp_path / "one.zip"), cache)
    assert not old.exists() and recent.exists()
    assert len(entries(cache)) == 4


def test_code_compiled_under_another_optimisation_level_is_not_shared(tmp_path):
    cache = tmp_path / "cache"
    probe(tmp_path, payload(tmp_path / "one.zip"), cache)
    script = tmp_path / "probe.py"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "AICR_RUNTIME_CACHE_DIR": str(cache)}
    done = subprocess.run([sys.executable, "-I", "-S", "-O", str(script), str(tmp_path / "one.zip")], capture_output=True, text=True, env=env,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert len(demo_compiles(json.loads(done.stdout))) == 3, "compiled again for -O"
    tag = zipimports.interpreter_tag()
    assert sorted(p.name for p in (cache / "bytecode").iterdir()) == sorted([tag, tag.replace("-opt0", "-opt1")])


def test_outside_a_zip_archive_nothing_is_installed():
    before = list(sys.meta_path)
    assert zipimports.install() is None
    assert sys.meta_path == before
