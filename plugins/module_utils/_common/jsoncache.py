# -*- coding: utf-8 -*-
# Copyright (c) 2026, aicr.runtime contributors
# Apache License 2.0 (see LICENSE or https://www.apache.org/licenses/LICENSE-2.0)
"""JSON files of the on-disk caches (parsed catalogs, rendered manifests, helm versions), and where they live.

:func:`default_cache_dir` is ``$AICR_RUNTIME_CACHE_DIR``, else ``$XDG_CACHE_HOME/aicr-runtime``, else
``~/.cache/aicr-runtime`` (the default of every module's ``cache_dir``).

A cache only saves work: a file that is missing, unreadable or half-written reads as a miss, and a
failed write is ignored. Writes go to a temporary file in the same directory, then ``os.replace``,
so concurrent runs (forks, several clusters at once) never read half a file.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import stat
import tempfile

from ansible_collections.aicr.runtime.plugins.module_utils._common import bounded
from ansible_collections.aicr.runtime.plugins.module_utils._common.errors import AicrError

CACHE_ENV = "AICR_RUNTIME_CACHE_DIR"


def chosen_cache_dir(option):
    """``(path, given)``: the ``cache_dir`` option, else :func:`default_cache_dir`; ``given`` when the user chose it
    (the option or ``$AICR_RUNTIME_CACHE_DIR``), so that :func:`checked_cache_dir` refuses it rather than skip it."""
    return (option or default_cache_dir()), (bool(option) or bool(os.environ.get(CACHE_ENV)))


def default_cache_dir():
    """``$AICR_RUNTIME_CACHE_DIR``, else ``$XDG_CACHE_HOME/aicr-runtime``, else ``~/.cache/aicr-runtime``."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return configured
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "aicr-runtime")


def load(path):
    """The JSON document at ``path``, or None when there is none (or it cannot be read)."""
    try:
        with open(path, "rb") as handle:
            return bounded.load_json(bounded.read_bounded(handle, path).decode("utf-8"), path)
    except (OSError, ValueError, AicrError):
        return None  # unreadable, or past a limit: a miss (what it caches is read again, bounded too)


def store(path, document):
    """Write ``document`` (JSON-serialisable, or already serialised text) to ``path`` atomically; True on success."""
    staging = None
    try:
        text = document if isinstance(document, str) else json.dumps(document)
        parent = os.path.dirname(path)
        os.makedirs(parent, exist_ok=True)
        handle, staging = tempfile.mkstemp(dir=parent, prefix=".cache-")
        with os.fdopen(handle, "w") as out:
            out.write(text)
        os.replace(staging, path)
        return True
    except (OSError, TypeError, ValueError):
        if staging is not None:
            try:
                os.unlink(staging)
            except OSError:
                pass
        return False


def private_dir_problem(path, create=True):
    """Why ``path`` is not a directory only this user can write, or None when it is. Created 0700 when missing
    (``create``); an existing one must be a real directory (not a symlink) owned by this user and not writable by group
    or others - in a shared ``/tmp`` anyone can create ``aicr-runtime-<uid>`` first and plant a catalog there. The one
    rule for the unpack fallback and a given ``cache_dir``."""
    if create:
        try:
            os.makedirs(path, mode=0o700, exist_ok=True)
        except FileExistsError:
            pass  # a file or a dangling link: said below
        except OSError as exc:
            return "cannot be created (%s)" % (exc.strerror or exc)
    try:
        info = os.lstat(path)
    except OSError as exc:
        return "cannot be read (%s)" % (exc.strerror or exc)
    if stat.S_ISLNK(info.st_mode):
        return "is a symlink (to %s), not a directory of its own" % os.readlink(path)
    if not stat.S_ISDIR(info.st_mode):
        return "is not a directory"
    if info.st_uid != os.getuid():
        return "is owned by uid %d, not by this user (uid %d)" % (info.st_uid, os.getuid())
    if info.st_mode & 0o022:
        return "is writable by group or others (mode %04o)" % stat.S_IMODE(info.st_mode)
    return None


def private_dir(path):
    """True when ``path`` is (or was just created as) a directory only this user can write (:func:`private_dir_problem`)."""
    return private_dir_problem(path) is None


def checked_cache_dir(path, given, create=True):
    """``path`` when it is private to this user (:func:`private_dir_problem`; created 0700 when missing and ``create``).

    A ``cache_dir`` the user gave (``given``) that is not is refused in one line naming it and why; the default one is
    then not used (None: no parsed-catalog cache, archives unpacked into the private temp fallback). Without ``create``
    a missing directory is None (nothing to read)."""
    if not path:
        return None
    if not create and not os.path.lexists(path):
        return None
    problem = private_dir_problem(path, create=create)
    if problem is None:
        return path
    if given:
        raise AicrError("cache_dir: %s %s; allowed: a directory owned by this user that group and others cannot write (created 0700 when missing)"
                        % (path, problem), field="cache_dir", value=path)
    return None
