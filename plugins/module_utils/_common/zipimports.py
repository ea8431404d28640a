# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""This collection's module_utils, imported from an Ansible module's payload, compiled once and the code kept.

An Ansible module runs from a zip archive (AnsiballZ) holding the source of every module_utils file it imports.
Python's ``zipimport`` compiles each source twice (once to name the module's file, again to run it: cpython
gh-141276, open) and keeps nothing, so every task compiled the 50-odd files gated_release imports twice (its no-op
module process: 2.86 G instructions, 2.28 G with this finder and a warm cache; docs/modules/gated_release.md).
:func:`install`, called by each module before it imports the rest of the collection, puts :class:`CompileOnceFinder`
first on ``sys.meta_path`` for this collection's modules in that archive:

- each source is compiled at most once per process;
- its code object is kept in ``<cache dir>/bytecode/<interpreter tag>/<sha256 of the source>`` and read back by the
  next module process. As with Python's own ``__pycache__``, whoever can write there can run code here, so the cache
  is used only when the cache directory and its ``bytecode`` directories are private to this user (the one rule,
  ``jsoncache.private_dir_problem``); files are written atomically; an entry that cannot be read or loaded is a miss.
  A changed source has another digest, so a stale entry is never used; entries not written for
  :data:`PRUNE_AFTER_SECONDS` are removed when a new one is written (rewritten on their next use).

Anything else (Ansible's own module_utils, third-party packages) is imported by Python as before. Outside a zip
archive (unit tests, controller-side plugins, a payload exploded with ``ANSIBLE_KEEP_REMOTE_FILES``) :func:`install`
does nothing.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import marshal
import os
import sys
import tempfile
import time
import zipimport
from importlib.util import MAGIC_NUMBER, spec_from_loader

from ansible_collections.aicr.runtime.plugins.module_utils._common import jsoncache

# "ansible_collections.aicr.runtime." - the modules this finder answers for, and no others
COLLECTION_PREFIX = __name__.split(".plugins.", 1)[0] + "."
PRUNE_AFTER_SECONDS = 30 * 24 * 3600


def interpreter_tag():
    """The directory of this interpreter's entries: its implementation, version, bytecode magic and optimisation level
    (the same source compiles to different code on another Python, or under ``-O``)."""
    return "%s-%d%d-%s-opt%d" % (sys.implementation.name, sys.version_info[0], sys.version_info[1], MAGIC_NUMBER.hex(), sys.flags.optimize)


def bytecode_dir():
    """``<default cache dir>/bytecode/<interpreter tag>`` when it and the directories above it that this module creates
    are private to this user (created 0700 when missing), else None: no cache, each source still compiled once.

    The default cache directory, not a module's ``cache_dir`` option: the imports run before the options are read."""
    base = jsoncache.default_cache_dir()
    for path in (base, os.path.join(base, "bytecode"), os.path.join(base, "bytecode", interpreter_tag())):
        if jsoncache.private_dir_problem(path) is not None:
            return None
    return os.path.join(base, "bytecode", interpreter_tag())


class CodeCache:
    """Code objects in files named by the digest of their source (:meth:`key`), in a directory private to this user."""

    def __init__(self, directory):
        self.directory = directory
        self._pruned = False

    @staticmethod
    def key(source):
        """The name of the entry for ``source`` (bytes)."""
        return hashlib.sha256(source).hexdigest()

    def load(self, key):
        """The code stored under ``key`` earlier, or None."""
        try:
            with open(os.path.join(self.directory, key), "rb") as handle:
                code = marshal.loads(handle.read())
        except (OSError, EOFError, ValueError, TypeError):
            return None
        return code if hasattr(code, "co_code") else None

    def store(self, key, code):
        """Keep ``code`` under ``key`` (written to a temporary file, then renamed: a reader never sees half of it)."""
        staging = None
        try:
            handle, staging = tempfile.mkstemp(dir=self.directory, prefix=".code-")
            with os.fdopen(handle, "wb") as out:
                out.write(marshal.dumps(code))
            os.replace(staging, os.path.join(self.directory, key))
        except (OSError, ValueError):
            if staging is not None:
                try:
                    os.unlink(staging)
                except OSError:
                    pass
            return
        self._prune()

    def _prune(self):
        """Remove entries not written for PRUNE_AFTER_SECONDS (once per process, when something new was written: only
        a changed collection or interpreter writes)."""
        if self._pruned:
            return
        self._pruned = True
        oldest = time.time() - PRUNE_AFTER_SECONDS
        try:
            names = os.listdir(self.directory)
        except OSError:
            return
        for name in names:
            path = os.path.join(self.directory, name)
            try:
                if os.lstat(path).st_mtime < oldest:
                    os.unlink(path)
            except OSError:
                pass


class CompileOnceLoader:
    """Runs one module of the archive from its source, compiled once (or its cached code)."""

    def __init__(self, source, origin, is_package, cache):
        self.source, self.origin, self._is_package, self.cache = source, origin, is_package, cache

    def create_module(self, spec):  # pylint: disable=unused-argument
        return None  # Python's default module object

    def get_code(self, fullname):  # pylint: disable=unused-argument
        key = self.cache.key(self.source) if self.cache else None
        code = self.cache.load(key) if key else None
        if code is None:
            code = compile(self.source, self.origin, "exec", dont_inherit=True)
            if key:
                self.cache.store(key, code)
        elif code.co_filename != self.origin:
            code = _with_filename(code, self.origin)
        return code

    def exec_module(self, module):
        exec(self.get_code(module.__name__), module.__dict__)  # pylint: disable=exec-used

    def get_source(self, fullname):  # pylint: disable=unused-argument
        """For tracebacks (``linecache`` asks the module's loader)."""
        return self.source.decode("utf-8")

    def is_package(self, fullname):  # pylint: disable=unused-argument
        return self._is_package


def _with_filename(code, filename):
    """``code`` and the code objects nested in it (functions, classes) naming ``filename``: a cached entry was
    compiled from the same source at another path (each run's archive has its own temporary name)."""
    consts = tuple(_with_filename(const, filename) if hasattr(const, "co_code") else const for const in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


class CompileOnceFinder:
    """Finds this collection's modules in one AnsiballZ archive, for :class:`CompileOnceLoader`."""

    def __init__(self, archive, cache):
        self.archive = archive
        self.cache = cache
        # the archive is on sys.path already, so zipimport has read its directory once: this reader shares it
        self._reader = zipimport.zipimporter(archive)

    def _member(self, base):
        """``(source, member, is_package)`` of the package or module ``base`` (a path in the archive), or None."""
        for member, is_package in ((base + "/__init__.py", True), (base + ".py", False)):
            try:
                return self._reader.get_data(member), member, is_package
            except OSError:
                continue  # not in the archive
        return None

    def find_spec(self, fullname, path=None, target=None):  # pylint: disable=unused-argument
        if not fullname.startswith(COLLECTION_PREFIX):
            return None
        base = fullname.replace(".", "/")
        found = self._member(base)
        if found is None:
            return None  # not in the payload: Python's other finders say what is missing
        source, member, is_package = found
        origin = os.path.join(self.archive, member)
        spec = spec_from_loader(fullname, CompileOnceLoader(source, origin, is_package, self.cache), origin=origin,
                                is_package=is_package)
        spec.has_location = True  # __file__ is the member's path in the archive, as zipimport sets it
        if is_package:
            spec.submodule_search_locations = [os.path.join(self.archive, base)]
        return spec


def install():
    """Put a :class:`CompileOnceFinder` for the archive this module was imported from first on ``sys.meta_path``; the
    finder, or None outside a zip archive. Once per archive (a second call returns the first finder)."""
    loader = globals().get("__loader__")
    if not isinstance(loader, zipimport.zipimporter):
        return None
    for finder in sys.meta_path:
        if isinstance(finder, CompileOnceFinder) and finder.archive == loader.archive:
            return finder
    directory = bytecode_dir()
    try:
        finder = CompileOnceFinder(loader.archive, CodeCache(directory) if directory else None)
    except zipimport.ZipImportError:
        return None  # Python's zipimport goes on importing as before
    sys.meta_path.insert(0, finder)
    return finder
