# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A catalog's files: a ``recipes/`` directory or a ``.tar.gz`` of one, read once, digested, unpacked once.

- :func:`content_digest`: sha256 over the sorted relative paths and their bytes (length-prefixed), so the same content
  always has the same digest, whatever the layout on disk;
- :func:`scan_directory`/:func:`read_directory`: a directory's regular files (dot entries skipped). Symlinks are
  followed inside the catalog only: one pointing outside it, a loop and a broken one are refused in one line;
- :func:`read_tarball`: an archive's regular files (a single top folder stripped; unsafe member paths refused; links,
  devices and directories not read), streamed one member at a time;
- :class:`Limits`: the size caps of both (``MAX_CATALOG_BYTES`` in all, ``MAX_FILE_BYTES`` per file, ``MAX_ENTRIES``,
  ``MAX_ARCHIVE_BYTES`` for the compressed archive), checked before content is read: a gzip bomb is refused unread;
- ``jsoncache.private_dir_problem`` (imported): the one rule for directories the caches use (the unpack fallback, a given
  ``cache_dir``): created 0700, else a real directory of this user's that group and others cannot write;
- :func:`unpack`: an archive's files under ``<cache_dir>/catalogs/<digest>/``, once per digest, so every manifest has
  a stable absolute path.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import gzip
import hashlib
import os
import posixpath
import stat
import struct
import tarfile
import tempfile
import zlib

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError
from ansible_collections.aicr.runtime.plugins.module_utils._common.jsoncache import private_dir

# Size caps of a catalog (directory or archive), far above the real AICR catalog's (about 2 MB in 270 files, the
# largest 600 KB): what is read is held in memory once, so these bound the memory a catalog can take.
MAX_CATALOG_BYTES = 256 * 1024 * 1024  # all files together (uncompressed)
MAX_FILE_BYTES = 64 * 1024 * 1024  # one file
MAX_ENTRIES = 50000  # files of a directory, members of an archive (directories and links included)
MAX_ARCHIVE_BYTES = 256 * 1024 * 1024  # the .tar.gz file itself


def content_digest(entries):
    """sha256 over sorted (relative path, bytes) pairs, length-prefixed so no two layouts collide."""
    digest = hashlib.sha256()
    for relpath in sorted(entries):
        name = relpath.encode("utf-8")
        data = entries[relpath]
        digest.update(struct.pack(">Q", len(name)))
        digest.update(name)
        digest.update(struct.pack(">Q", len(data)))
        digest.update(data)
    return "sha256:" + digest.hexdigest()


class Limits(object):
    """How big a catalog may be: bytes of all its files, bytes of one file, how many entries (members of an archive,
    files of a directory), and the size of the archive file itself. The defaults are far above the real AICR catalog's
    (about 2 MB in 270 files, the largest 600 KB)."""

    def __init__(self, total_bytes=MAX_CATALOG_BYTES, file_bytes=MAX_FILE_BYTES, entries=MAX_ENTRIES, archive_bytes=MAX_ARCHIVE_BYTES):
        self.total_bytes = total_bytes
        self.file_bytes = file_bytes
        self.entries = entries
        self.archive_bytes = archive_bytes

    @property
    def stream_bytes(self):
        """Bytes of the decompressed tar stream: the files, plus headers and padding (at most 1.5 KiB per entry), plus
        one file's worth of extended headers."""
        return self.total_bytes + self.entries * 1536 + self.file_bytes


DEFAULT_LIMITS = Limits()


def _mib(count):
    return "%d MiB" % (count // (1024 * 1024)) if count >= 1024 * 1024 else "%d bytes" % count


def _too_big(source, what, limit):
    return AicrError("catalog: %s is too big: %s (allowed: at most %s; a recipes/ catalog is a few MB)" % (source, what, limit),
                     field="catalog", value=source)


class _Budget(object):
    """Running totals of one catalog against its :class:`Limits` (refused in one line naming what is too big)."""

    def __init__(self, source, limits):
        self.source, self.limits = source, limits
        self.count = self.total = 0

    def add(self, name, size):
        limits = self.limits
        self.count += 1
        if self.count > limits.entries:
            raise _too_big(self.source, "more than %d entries" % limits.entries, "%d entries" % limits.entries)
        if size > limits.file_bytes:
            raise _too_big(self.source, "%s has %d bytes" % (name, size), "%s per file" % _mib(limits.file_bytes))
        self.total += size
        if self.total > limits.total_bytes:
            raise _too_big(self.source, "its files have more than %s" % _mib(limits.total_bytes), "%s in all" % _mib(limits.total_bytes))


def _inside(root, path):
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def scan_directory(root, limits=None):
    """(relative path, absolute path, size, mtime_ns) of every regular file; dot entries skipped.

    Symlinks are followed only inside the catalog: a link whose target (resolved) lies outside ``root`` is refused,
    naming the link and its target; a link to a directory that contains it (a loop) and a chain of links that never
    ends are refused as loops; a broken link is refused. ``limits`` (:class:`Limits`) caps the files' sizes and count."""
    budget = _Budget(root, limits or DEFAULT_LIMITS)
    real_root = os.path.realpath(root)
    out = []
    stack = [("", root, (real_root,))]  # (relative prefix, path, the real paths of the directories down to it)
    while stack:
        prefix, path, chain = stack.pop()
        try:
            with os.scandir(path) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            raise AicrError("catalog: cannot read directory %s: %s" % (prefix.rstrip("/") or root, exc.strerror or exc),
                            field="catalog", value=root)
        for entry in entries:
            if entry.name.startswith("."):
                continue
            rel = prefix + entry.name
            if entry.is_symlink():
                info, real = _follow(root, real_root, rel, entry.path)
                if stat.S_ISDIR(info.st_mode):
                    if real in chain:
                        raise AicrError("catalog: symlink %s -> %s is a loop (it points to %s, a directory that contains it)"
                                        % (rel, os.readlink(entry.path), _relative(real_root, real)), field="catalog", value=root)
                    stack.append((rel + "/", entry.path, chain + (real,)))
                elif stat.S_ISREG(info.st_mode):
                    budget.add(rel, info.st_size)
                    out.append((rel, entry.path, info.st_size, info.st_mtime_ns))
            elif entry.is_dir(follow_symlinks=False):
                stack.append((rel + "/", entry.path, chain + (os.path.join(chain[-1], entry.name),)))
            elif entry.is_file(follow_symlinks=False):
                info = entry.stat(follow_symlinks=False)
                budget.add(rel, info.st_size)
                out.append((rel, entry.path, info.st_size, info.st_mtime_ns))
    out.sort()
    return out


def _relative(real_root, real):
    rel = os.path.relpath(real, real_root)
    return "the catalog's top" if rel == "." else rel


def _follow(root, real_root, rel, path):
    """(stat, real path) of a symlink's target, refused when it is broken, a loop, or outside the catalog."""
    target = os.readlink(path)
    try:
        info = os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise AicrError("catalog: symlink %s -> %s is a loop (a chain of links that never ends)" % (rel, target), field="catalog", value=root)
        raise AicrError("catalog: symlink %s -> %s is broken (%s)" % (rel, target, exc.strerror or exc), field="catalog", value=root)
    real = os.path.realpath(path)
    if not _inside(real_root, real):
        raise AicrError("catalog: symlink %s -> %s points outside the catalog (to %s); allowed: links to files and directories inside it"
                        % (rel, target, real), field="catalog", value=root)
    return info, real


def read_directory(scan):
    entries = {}
    for item in scan:
        relpath, path = item[0], item[1]
        try:
            with open(path, "rb") as handle:
                entries[relpath] = handle.read()
        except OSError as exc:
            raise AicrError("catalog: cannot read %s: %s" % (relpath, exc.strerror or exc), field="catalog", value=path)
    return entries


class _BoundedStream(object):
    """The decompressed stream of a ``.tar.gz``, refused once it would go past ``limit`` bytes or when one read asks for
    more than ``chunk`` bytes (tarfile reads an extended header whole): a gzip bomb is never decompressed whole nor
    read into memory."""

    def __init__(self, raw, source, limits):
        self.raw, self.source, self.limits = raw, source, limits
        self.position = 0

    def _admit(self, end):
        if end > self.limits.stream_bytes:
            raise _too_big(self.source, "its decompressed stream goes past %s" % _mib(self.limits.stream_bytes),
                           "%s in all" % _mib(self.limits.total_bytes))

    def read(self, size=-1):
        if size is None or size < 0 or size > self.limits.file_bytes:
            if size is not None and size >= 0:
                raise _too_big(self.source, "an entry of %d bytes" % size, "%s per file" % _mib(self.limits.file_bytes))
            size = self.limits.file_bytes
        self._admit(self.position + size if size else self.position)
        data = self.raw.read(size)
        self.position += len(data)
        return data

    def seek(self, offset, whence=0):
        target = offset if whence == 0 else self.position + offset if whence == 1 else None
        if target is None:
            raise OSError("cannot seek from the end of a compressed stream")
        self._admit(target)
        self.position = self.raw.seek(target)
        return self.position

    def tell(self):
        return self.position


def read_tarball(path, limits=None):
    """Regular files of a tarball, keyed by path; a single top folder is stripped.

    Read as a stream, one member at a time, against ``limits`` (:class:`Limits`): the archive's size, the number of
    members, each file's size and the total are checked from the headers before any content is read, and the
    decompressed stream is bounded, so a huge archive or a gzip bomb is refused in one line."""
    limits = limits or DEFAULT_LIMITS
    try:
        size = os.path.getsize(path)
    except OSError as exc:
        raise AicrError("catalog: cannot read %s: %s" % (path, exc.strerror or exc), field="catalog", value=path)
    if size > limits.archive_bytes:
        raise _too_big(path, "the archive has %d bytes" % size, "%s compressed" % _mib(limits.archive_bytes))
    budget = _Budget(path, limits)
    entries = {}
    try:
        with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as unzipped:
            archive = tarfile.open(fileobj=_BoundedStream(unzipped, path, limits), mode="r:")
            with archive:
                while True:
                    member = archive.next()
                    if member is None:
                        break
                    budget.add(member.name, member.size if member.isfile() else 0)
                    if not member.isfile():
                        continue
                    name = posixpath.normpath(member.name)
                    if name.startswith("/") or name == ".." or name.startswith("../"):
                        raise AicrError("catalog: archive %s has an unsafe member path %r (absolute or outside the archive)" % (path, member.name),
                                        field="catalog", value=path)
                    parts = name.split("/")
                    if any(part.startswith(".") for part in parts):
                        continue
                    handle = archive.extractfile(member)
                    entries[name] = handle.read() if handle is not None else b""
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise AicrError("catalog: cannot open %s as a .tar.gz archive: %s" % (path, str(exc).splitlines()[0] if str(exc) else type(exc).__name__),
                        field="catalog", value=path)
    tops = set(name.split("/", 1)[0] for name in entries)
    if len(tops) == 1 and all("/" in name for name in entries):
        top = tops.pop()
        entries = dict((name[len(top) + 1:], data) for name, data in entries.items())
    return entries


def unpack(entries, cache_dir, digest):
    """Write tarball contents to ``<cache_dir>/catalogs/<hex>``, once per digest (else to a private dir under the temp dir)."""
    hexdigest = digest.split(":", 1)[1]
    candidates = [(os.path.join(cache_dir, "catalogs"), None)] if cache_dir else []
    fallback = os.path.join(tempfile.gettempdir(), "aicr-runtime-%d" % os.getuid())
    candidates.append((os.path.join(fallback, "catalogs"), fallback))
    for parent, private in candidates:
        if not private_dir(private or cache_dir):
            continue  # another user's (or a symlink): never read from it, never write into it
        target = os.path.join(parent, hexdigest)
        if os.path.isfile(os.path.join(target, ".complete")):
            return target
        try:
            os.makedirs(parent, mode=0o700, exist_ok=True)
            staging = tempfile.mkdtemp(prefix=".unpack-", dir=parent)
            for relpath, data in entries.items():
                dest = os.path.join(staging, *relpath.split("/"))
                os.makedirs(os.path.dirname(dest), exist_ok=True)
                with open(dest, "wb") as handle:
                    handle.write(data)
            with open(os.path.join(staging, ".complete"), "w") as handle:
                handle.write(digest + "\n")
            try:
                os.rename(staging, target)
            except OSError:  # another process won the race
                if not os.path.isfile(os.path.join(target, ".complete")):
                    raise
            return target
        except OSError:
            continue
    raise AicrError("catalog: cannot unpack the archive into %s (not writable, or not private to this user)" % (" or ".join(c[0] for c in candidates)),
                    field="cache_dir")
