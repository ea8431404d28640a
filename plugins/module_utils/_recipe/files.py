# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""A catalog's files: a ``recipes/`` directory or a ``.tar.gz`` of one, read once, digested, unpacked once.

- :func:`content_digest`: sha256 over the sorted relative paths and their bytes (length-prefixed), so the same content
  always has the same digest, whatever the layout on disk;
- :func:`scan_directory`/:func:`read_directory`: a directory's regular files (dot entries skipped);
- :func:`read_tarball`: an archive's regular files (a single top folder stripped; unsafe member paths refused);
- :func:`unpack`: an archive's files under ``<cache_dir>/catalogs/<digest>/``, once per digest, so every manifest has
  a stable absolute path.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import posixpath
import stat
import struct
import tarfile
import tempfile

from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError


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


def scan_directory(root):
    """(relative path, absolute path, size, mtime_ns) of every regular file; dot entries skipped."""
    out = []
    stack = [("", root)]
    while stack:
        prefix, path = stack.pop()
        with os.scandir(path) as entries:
            for entry in entries:
                if entry.name.startswith("."):
                    continue
                rel = prefix + entry.name
                if entry.is_dir():
                    stack.append((rel + "/", entry.path))
                elif entry.is_file():
                    info = entry.stat()
                    out.append((rel, entry.path, info.st_size, info.st_mtime_ns))
    out.sort()
    return out


def read_directory(scan):
    entries = {}
    for item in scan:
        relpath, path = item[0], item[1]
        with open(path, "rb") as handle:
            entries[relpath] = handle.read()
    return entries


def read_tarball(path):
    """Regular files of a tarball, keyed by path; a single top folder is stripped."""
    try:
        archive = tarfile.open(path, "r:gz")
    except (tarfile.TarError, OSError) as exc:
        raise AicrError("catalog: cannot open %s as a .tar.gz archive: %s" % (path, exc), field="catalog", value=path)
    entries = {}
    with archive:
        for member in archive.getmembers():
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
    tops = set(name.split("/", 1)[0] for name in entries)
    if len(tops) == 1 and all("/" in name for name in entries):
        top = tops.pop()
        entries = dict((name[len(top) + 1:], data) for name, data in entries.items())
    return entries


def private_dir(path):
    """``path`` as a directory only this user can write: created 0700 when missing; an existing one must be a real
    directory (not a symlink) owned by this user and not writable by group or others - in a shared ``/tmp`` anyone can
    create ``aicr-runtime-<uid>`` first and plant a catalog there. Returns False when it is not."""
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        info = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(info.st_mode) and info.st_uid == os.getuid() and not info.st_mode & 0o022


def unpack(entries, cache_dir, digest):
    """Write tarball contents to ``<cache_dir>/catalogs/<hex>``, once per digest (else to a private dir under the temp dir)."""
    hexdigest = digest.split(":", 1)[1]
    candidates = [(os.path.join(cache_dir, "catalogs"), None)] if cache_dir else []
    fallback = os.path.join(tempfile.gettempdir(), "aicr-runtime-%d" % os.getuid())
    candidates.append((os.path.join(fallback, "catalogs"), fallback))
    for parent, private in candidates:
        if private is not None and not private_dir(private):
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
